"""Shared pieces of the CLI layer: consoles, output formats, JSON printing.

Only the CLI package imports typer and prints; the core raises named errors.
"""

from __future__ import annotations

import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from opprof_advisor.render.console import safe_console
from opprof_advisor.terminal import dumps_json, printable
from opprof_advisor.vocabulary import KINDS

# A wide default keeps Rich from wrapping table cells in tests and pipes. Both consoles drop the
# control characters of whatever text they print (profile, KB and file-name text is not trusted).
console = safe_console(highlight=False, soft_wrap=False)
err_console = safe_console(stderr=True, highlight=False, soft_wrap=True)


#: The knowledge-base entry kinds as a --kind choice.
Kind = Enum("Kind", {kind: kind for kind in KINDS}, type=str)


class TableOrJson(str, Enum):
    table = "table"
    json = "json"


class TableJsonHtml(str, Enum):
    table = "table"
    json = "json"
    html = "html"


class ReportFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"


class TableJsonHtmlSheets(str, Enum):
    """profile and compare: the terminal table, JSON, HTML, or the tables as CSV / an xlsx workbook."""

    table = "table"
    json = "json"
    html = "html"
    csv = "csv"
    xlsx = "xlsx"


class SuggestFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"
    csv = "csv"
    xlsx = "xlsx"


#: Show a progress bar only when reading takes longer than this (seconds).
PROGRESS_DELAY_S = 1.0

#: The `--db` option of every command that uses the knowledge-base index.
DbOption = Annotated[
    Optional[Path],
    typer.Option("--db", help="Index database file (default: $ADVISOR_DB, else advisor.db in the advisor home folder).",
                 dir_okay=False, show_default=False),
]


def _choose_lang(ctx: typer.Context, value: Optional[str]) -> Optional[str]:
    from opprof_advisor.i18n import LANGS, normalise_lang, set_lang

    if value is not None:
        if normalise_lang(value) is None:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(LANGS)}", param_hint="--lang")
        ctx.meta["advisor.lang"] = value  # shared by the whole command line: `advisor --lang zh suggest` holds
    set_lang(ctx.meta.get("advisor.lang"))  # None: from the environment, afresh for every command run
    return value


#: `--lang` of every command (and of `advisor` itself): the language of what it prints.
LangOption = Annotated[Optional[str], typer.Option(
    "--lang", metavar="zh|en", callback=_choose_lang, expose_value=False, is_eager=True, show_default=False,
    help="Language of the output: zh (中文) or en (default: $ADVISOR_LANG, else zh for a zh_* locale, else en).")]


#: `--force` of the commands that write a report or an export.
ForceOption = Annotated[bool, typer.Option(
    "--force", help="Replace an --output / --export file that advisor did not write (a file inside the profile read "
                    "is never written).")]


class ExecutorName(str, Enum):
    auto = "auto"
    serial = "serial"
    processes = "processes"
    dask = "dask"


#: `--executor` and `--scheduler` of the commands that read a profile (used by a folder of ranks).
ExecutorOption = Annotated[
    ExecutorName,
    typer.Option("--executor", help="Where a folder of ranks is summarised rank by rank: auto (worker processes "
                                    "when the ranks are big enough), serial, processes, or dask (a local Dask "
                                    "cluster, or --scheduler; pip install 'opprof-advisor[cluster]')."),
]
SchedulerOption = Annotated[
    Optional[str],
    typer.Option("--scheduler", metavar="ADDRESS", help="Run the per-rank map on this Dask scheduler (e.g. "
                                                        "tcp://host:8786; its workers must see the rank folders at "
                                                        "the same paths). Implies --executor dask.",
                 show_default=False),
]


def executor_choice(executor: ExecutorName, scheduler: Optional[str]):
    """The core's ExecutorChoice for the two options (a --scheduler with a non-Dask executor is a usage error)."""
    from opprof_advisor.cluster.executors import ExecutorChoice

    if scheduler and executor not in (ExecutorName.auto, ExecutorName.dask):
        raise typer.BadParameter(f"runs the map on Dask, not with --executor {executor.value}",
                                 param_hint="--scheduler")
    return ExecutorChoice(name=executor.value, scheduler=scheduler or None)


class DelayedProgress:
    """A Rich progress bar on stderr that appears only once reading has taken PROGRESS_DELAY_S."""

    def __init__(self, label: str):
        self.label = label
        self.start = time.monotonic()
        self.bar = None
        self.task = None

    def __enter__(self) -> "DelayedProgress":
        self.start = time.monotonic()
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if time.monotonic() - self.start < PROGRESS_DELAY_S or not _can_show_progress():
                return
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), TaskProgressColumn(),
                                TimeElapsedColumn(), console=err_console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total)
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def _can_show_progress() -> bool:
    # A bar on a pipe or a CI log is noise: only on an interactive stderr.
    return err_console.is_terminal


def emit_json(document: Any) -> None:
    """Print a JSON document on stdout, unwrapped and unstyled (for scripts)."""
    sys.stdout.write(dumps_json(document))
    sys.stdout.write("\n")
    sys.stdout.flush()


def echo(text: str) -> None:
    """Print plain text (markdown, a path) on stdout, without its control characters."""
    typer.echo(printable(text))


def show(document: dict[str, Any], fmt: str, **options: Any) -> None:
    """Print ``document`` on stdout as ``fmt`` (``json``, ``table`` or ``markdown``; see opprof_advisor.render)."""
    if fmt == "json":
        emit_json(document)
        return
    from opprof_advisor.render import render

    if fmt == "table":
        print_items(render(document, "table", width=console.width, **options))
    else:
        echo(render(document, fmt, **options))


def print_items(items: list[Any], *, to_stderr: bool = False) -> None:
    """Print what a table renderer returned: a ``str`` as the line it is, anything else through Rich."""
    target = err_console if to_stderr else console
    for item in items:
        if isinstance(item, str):
            typer.echo(printable(item), err=to_stderr)
        else:
            target.print(item)


def write_sheets(document: dict[str, Any], fmt: str, output: Optional[Path], *, force: bool, inputs: Any = ()) -> bool:
    """Print ``document``'s main table as CSV, or write its tables into an xlsx workbook; False for other formats."""
    if fmt == "csv":
        if output is not None:
            raise typer.BadParameter("--format csv prints to stdout; --output is for html and xlsx",
                                     param_hint="--output")
        echo(render(document, "csv").rstrip("\n"))
        return True
    if fmt == "xlsx":
        from opprof_advisor.render.sheets import write_xlsx

        echo(f"wrote {write_xlsx(document, output, force=force, inputs=inputs)}")
        return True
    return False


def render(document: dict[str, Any], fmt: str, **options: Any) -> Any:
    from opprof_advisor.render import render as render_document

    return render_document(document, fmt, **options)


def write_html(document: dict[str, Any], output: Optional[Path], *, force: bool, inputs: Any = ()) -> None:
    """Render ``document`` as an HTML report, write it (default: advisor-report-<time>.html here), say where."""
    from opprof_advisor.render import render
    from opprof_advisor.render.html.page import write_report

    echo(f"wrote {write_report(render(document, 'html'), output, force=force, inputs=inputs)}")
