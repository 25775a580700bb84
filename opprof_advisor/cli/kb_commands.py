"""Knowledge-base commands: `advisor search`, `show`, `add`, `remove` and the `advisor kb` group.

Parses options, calls opprof_advisor.kb / store / search (imported inside the commands, so that a
command pays only for what it uses) and renders their documents. No logic that a test of the core would miss lives here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import (
    DbOption, Kind, LangOption, TableOrJson, console, err_console, show, typer_command,
)
from opprof_advisor.cli.fast_commands import open_index, run_add, run_remove, run_search, run_show, warn_problems
from opprof_advisor.core.terminal import one_line
from opprof_advisor.kb.load import check_installed
import time
from opprof_advisor.kb.store import build_index
from opprof_advisor.kb.stats import entries_to_json
from opprof_advisor.kb.stats import stats_to_json
from opprof_advisor.render.text.kb import check_summary, problem_line


FormatOption = Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")]

kb_app = typer.Typer(
    name="kb",
    help="Check, build, list and count the knowledge base.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def register(app: typer.Typer) -> None:
    """Add search, show, add and the kb group to the `advisor` app."""
    app.command("search", no_args_is_help=True)(search_command)
    app.command("show", no_args_is_help=True)(show_command)
    app.command("add", no_args_is_help=True)(add_command)
    app.command("remove", no_args_is_help=True)(remove_command)
    app.add_typer(kb_app, name="kb")


# ---------------------------------------------------------------------------------------------
# advisor search / show / add
# ---------------------------------------------------------------------------------------------

#: `advisor search` and `advisor show`: options from cli/options.py, bodies in cli/fast_commands.py.
search_command = typer_command("search", run_search)
show_command = typer_command("show", run_show)


#: `advisor add` and `advisor remove`: options from cli/options.py, bodies in cli/fast_commands.py.
add_command = typer_command("add", run_add)
remove_command = typer_command("remove", run_remove)


# ---------------------------------------------------------------------------------------------
# advisor kb check
# ---------------------------------------------------------------------------------------------


@kb_app.command("check")
def check_command(
    dirs: Annotated[
        Optional[list[Path]],
        typer.Argument(metavar="PATH", help="KB folders or files to check (default: the built-in KB and your own).",
                       show_default=False),
    ] = None,
    fmt: FormatOption = TableOrJson.table,
    lang: LangOption = None,
) -> None:
    """Lint KB markdown files: schema, YAML, vocabulary, ids, sections, sources, unsourced figures.

    Every problem is printed as `path:line: message`; exit code 1 when there is any. A source must be one a
    user can open (an http(s) URL, owner/repo@COMMIT:PATH, package==version:PATH, or the KB sources
    page); a link that follows a moving branch (blob/master ...) is a warning, not a failure.
    """
    if dirs:
        missing = [path for path in dirs if not os.path.lexists(path)]  # (a name too long is not there either)
        for path in missing:
            err_console.print(f"error: {path}: no such file or folder", markup=False)
        if missing:
            raise typer.Exit(1)
    document = check_installed(dirs)
    show(document, fmt.value)
    if fmt is TableOrJson.table:
        for warning in document["warnings"]:
            err_console.print(one_line(problem_line(warning)), markup=False)
        err_console.print(check_summary(document), markup=False)
    if document["problems"]:
        raise typer.Exit(1)


# ---------------------------------------------------------------------------------------------
# advisor kb build / list / stats
# ---------------------------------------------------------------------------------------------


@kb_app.command("build")
def build_command(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Start from an empty index instead of updating.")] = False,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """Build or update the index from the built-in and your own KB (done automatically when needed)."""

    started = time.perf_counter()
    index = build_index(db, rebuild=rebuild)
    warn_problems(index)
    count = len(index.ids())
    console.print(f"indexed {count} entries from {index.file_count} files in {time.perf_counter() - started:.2f} s "
                  f"→ {index.db_path}", markup=False)


@kb_app.command("list")
def list_command(
    kind: Annotated[Optional[Kind], typer.Option("--kind", "-k", help="Only entries of this kind.")] = None,
    fmt: FormatOption = TableOrJson.table,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """List the entries of the knowledge base."""
    show(entries_to_json(open_index(db).entries(kind.value if kind else None)), fmt.value)


@kb_app.command("stats")
def stats_command(
    fmt: FormatOption = TableOrJson.table,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """Count entries by kind, evidence and origin; print the coverage table (symptom and family -> entries).

    A symptom is answered by a recipe, pattern or tip that lists it and whose `requires:` can hold when it
    fires; every symptom needs at least two.
    """
    show(stats_to_json(open_index(db).entries()), fmt.value)
