"""A Typer-free path for the hottest command, `advisor search`, so it starts in about half the time.

Typer 0.2x builds a pydantic TypeAdapter for every non-flag parameter it coerces, which imports
pydantic (~55 ms), on top of Typer and Click themselves (~50 ms). `advisor search` is the command
people type most; this module answers the plain forms of it —
``search WORDS... [--kind K] [--operator OP] [--top N] [--format table|json] [--db PATH]`` — and
returns None for anything else (``--help``, ``--debug``, a bad value, an unknown option), so the
caller hands the arguments to the Typer app, which prints the proper usage message.

Output is rendered by render/text/kb.py, as the Typer command's is, and is byte-for-byte the same (tested).
It imports nothing of Typer (``opprof_advisor.cli`` itself imports nothing): the Typer app is
loaded from ``cli/app.py`` only when the arguments are not a plain search.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from opprof_advisor.vocabulary import KINDS

# `-o` is --output in every command, so --operator has no short form (search writes no file).
_OPTIONS = {"--kind": "kind", "-k": "kind", "--operator": "operator", "--top": "top", "-n": "top",
            "--format": "format", "-f": "format", "--db": "db", "--lang": "lang"}


def parse_search_args(argv: list[str]) -> dict[str, Any] | None:
    """Options of a plain `search` invocation, or None when Typer should handle ``argv``."""
    if not argv or argv[0] != "search":
        return None
    options: dict[str, Any] = {"words": [], "kind": None, "operator": None, "top": "10", "format": "table", "db": None,
                               "lang": None}
    position = 1
    while position < len(argv):
        arg = argv[position]
        if arg == "--":
            options["words"] += argv[position + 1:]
            break
        if arg.startswith("-") and arg != "-":
            name, has_value, value = arg.partition("=")
            key = _OPTIONS.get(name)
            if key is None:
                return None
            if not has_value:
                position += 1
                if position >= len(argv):
                    return None
                value = argv[position]
            options[key] = value
        else:
            options["words"].append(arg)
        position += 1
    return options if _valid(options) else None


def _valid(options: dict[str, Any]) -> bool:
    if not options["words"] or options["format"] not in ("table", "json"):
        return False
    if options["kind"] is not None and options["kind"] not in KINDS:
        return False
    if options["lang"] is not None and options["lang"] not in ("zh", "en"):
        return False
    if not options["top"].isdigit() or int(options["top"]) < 1:
        return False
    options["top"] = int(options["top"])
    return True


def run(argv: list[str]) -> int | None:
    """Run `advisor search` for ``argv`` (without the program name) and return the exit code.

    Returns None, having printed nothing, when ``argv`` is not a plain search.
    """
    options = parse_search_args(argv)
    if options is None or os.environ.get("ADVISOR_DEBUG"):
        return None
    from opprof_advisor.errors import error_lines
    from opprof_advisor.terminal import detach_closed_stdout

    # The same last line of defence as the Typer app's (cli.app.AdvisorGroup): one line, never a traceback.
    from opprof_advisor.i18n import set_lang

    set_lang(options["lang"])  # None: from ADVISOR_LANG / the locale, as the Typer path does
    try:
        search_and_print(options)
        sys.stdout.flush()
    except BrokenPipeError:
        detach_closed_stdout()
        return 0  # `advisor search x | head`: the reader has what it wanted
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - no traceback for users (--debug takes the Typer path)
        sys.stderr.write("".join(line + "\n" for line in error_lines(exc)))
        return 1
    return 0


def search_and_print(options: dict[str, Any]) -> None:
    """Search and print, exactly as the Typer command `advisor search` does."""
    from opprof_advisor.render.text.kb import no_hits_line, problems_warning, search_table
    from opprof_advisor.kb_search import run_search, search_to_json
    from opprof_advisor.store import open_index
    from opprof_advisor.render.console import safe_console
    from opprof_advisor.terminal import dumps_json

    console = safe_console(highlight=False, soft_wrap=False)
    err_console = safe_console(stderr=True, highlight=False, soft_wrap=True)
    index = open_index(Path(options["db"]) if options["db"] else None)
    warning = problems_warning(index.problems)
    if warning:
        err_console.print(warning, markup=False)
    result = run_search(index, " ".join(options["words"]), kind=options["kind"], operator=options["operator"],
                        top=options["top"])
    document = search_to_json(result)
    if options["format"] == "json":
        sys.stdout.write(dumps_json(document) + "\n")
        sys.stdout.flush()
        if not result.hits:
            err_console.print(no_hits_line(document), markup=False)
        return
    for item in search_table(document, width=console.width):
        console.print(item)


def main() -> None:
    """Console-script entry: the fast path for plain searches, the Typer app for everything else."""
    import warnings

    from opprof_advisor.errors import format_warning

    warnings.formatwarning = format_warning
    code = run(sys.argv[1:])
    if code is None:
        from opprof_advisor.cli.app import main as typer_main

        typer_main()
        return
    sys.exit(code)
