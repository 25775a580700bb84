"""The console entry `advisor`: the plain forms of `suggest`, `profile`, `show`, `search`, `add` and `remove` without Typer.

Typer 0.2x imports pydantic to convert parameters (~90 ms here) and builds every command module's
tree (~25 ms) before it runs one command; together that was most of a 0.45 s `advisor suggest`.
This entry point reads the command line with cli/options.py's table (from which the Typer
commands are built too) and runs the command's body from cli/fast_commands.py, printing through
cli/output.py as the Typer app does, so the output is byte-for-byte the same (tested). Anything
the table cannot read exactly as Typer does — ``--help``, ``--debug`` or ``$ADVISOR_DEBUG``, a bad
value, an unknown option, a combination the command refuses — returns None having printed
nothing, and the Typer app (cli/app.py) takes the arguments and prints its proper message.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

from opprof_advisor.cli.options import COMMANDS, parse_args, usage_problem


def parse(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The command name and its option values for ``argv`` (without the program name), or None for Typer."""
    if not argv or argv[0] not in COMMANDS:
        return None
    values = parse_args(argv[0], argv[1:])
    if values is None or usage_problem(argv[0], values) is not None:
        return None
    return argv[0], values


def body_of(name: str) -> Callable[[dict[str, Any]], None]:
    """The function that runs command ``name`` (cli/fast_commands.run_<name>)."""
    from opprof_advisor.cli import fast_commands

    return getattr(fast_commands, f"run_{name}")


def run(argv: list[str]) -> int | None:
    """Run ``argv`` (without the program name) and return the exit code; None, having printed nothing,
    when the Typer app must handle it."""
    parsed = parse(argv)
    if parsed is None or os.environ.get("ADVISOR_DEBUG"):
        return None
    from opprof_advisor.core.errors import error_lines
    from opprof_advisor.core.terminal import detach_closed_stdout

    name, values = parsed
    from opprof_advisor.core.i18n import set_lang

    set_lang(values.pop("lang", None))  # None: from ADVISOR_LANG / the locale, as the Typer path does
    # The same last line of defence as the Typer app's (cli.app.AdvisorGroup): one line, never a traceback.
    try:
        body_of(name)(values)
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


def main() -> None:
    """Console-script entry: the fast path for the plain forms, the Typer app for everything else."""
    import warnings

    from opprof_advisor.core.errors import format_warning

    warnings.formatwarning = format_warning
    code = run(sys.argv[1:])
    if code is None:
        from opprof_advisor.cli.app import main as typer_main

        typer_main()
        return
    sys.exit(code)
