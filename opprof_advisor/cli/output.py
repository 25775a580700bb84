"""What the CLI prints through: the two consoles, JSON on stdout, rendered documents, the delayed progress bar.

No Typer here: the fast path (cli/fast_path.py) prints through these too, so both paths print the
same bytes. Rich is imported when a console first prints, not with this module.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional

from opprof_advisor.render.console import safe_console
from opprof_advisor.terminal import dumps_json, printable

# A wide default keeps Rich from wrapping table cells in tests and pipes. Both consoles drop the
# control characters of whatever text they print (profile, KB and file-name text is not trusted).
console = safe_console(highlight=False, soft_wrap=False)
err_console = safe_console(stderr=True, highlight=False, soft_wrap=True)

#: Show a progress bar only when reading takes longer than this (seconds).
PROGRESS_DELAY_S = 1.0


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


def executor_choice(executor: str, scheduler: Optional[str]):
    """The core's ExecutorChoice for --executor / --scheduler (their conflict is options.usage_problem's)."""
    from opprof_advisor.cluster.executors import ExecutorChoice

    return ExecutorChoice(name=executor, scheduler=scheduler or None)


def emit_json(document: Any) -> None:
    """Print a JSON document on stdout, unwrapped and unstyled (for scripts)."""
    sys.stdout.write(dumps_json(document))
    sys.stdout.write("\n")
    sys.stdout.flush()


def echo(text: str, *, err: bool = False) -> None:
    """Print plain text (markdown, a path) and a newline on stdout (or stderr), without its control characters."""
    stream = sys.stderr if err else sys.stdout
    stream.write(printable(text) + "\n")
    stream.flush()


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
            echo(item, err=to_stderr)
        else:
            target.print(item)


def write_sheet_formats(document: dict[str, Any], fmt: str, output: Optional[Path], *, force: bool,
                        inputs: Any = ()) -> bool:
    """Print ``document``'s main table as CSV, or write its tables into an xlsx workbook; False for other formats.

    (--format csv with --output is refused before any work: options.sheets_problem.)
    """
    if fmt == "csv":
        echo(render(document, "csv").rstrip("\n"))
        return True
    if fmt == "xlsx":
        from opprof_advisor.render.sheets import write_xlsx

        echo(f"wrote {write_xlsx(document, output, force=force, inputs=inputs)}")
        return True
    return False


def render(document: dict[str, Any], fmt: str, **options: Any) -> Any:
    """``document`` rendered as ``fmt`` (opprof_advisor.render, imported when first needed)."""
    from opprof_advisor.render import render as render_document

    return render_document(document, fmt, **options)


def write_html(document: dict[str, Any], output: Optional[Path], *, force: bool, inputs: Any = ()) -> None:
    """Render ``document`` as an HTML report, write it (default: advisor-report-<time>.html here), say where."""
    from opprof_advisor.render import render
    from opprof_advisor.render.html.page import write_report

    echo(f"wrote {write_report(render(document, 'html'), output, force=force, inputs=inputs)}")
