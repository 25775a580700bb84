"""What the CLI prints through: the two consoles, JSON on stdout, rendered documents, the delayed progress bar.

No Typer here. Rich is imported when a console first prints through Rich, not with this module; the
renderers' tables and lines go to a pipe or a file whole and without box drawing (render/plain.py:
one block per finding), so a piped `advisor suggest` or `search` never imports Rich's console.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional

from opprof_advisor.render.console import safe_console
from opprof_advisor.render.plain import columns_at_start, lines_at_start, pipe_lines, prints_plain
from opprof_advisor.render.text.styled import rich_item
from opprof_advisor.core.terminal import ascii_json, can_carry, dumps_json, printable
from opprof_advisor.cluster.executors import ExecutorChoice
from opprof_advisor.render import render as render_document
from opprof_advisor.render.html.page import write_report
from opprof_advisor.render.sheets import write_xlsx


class LazyConsole:
    """A ``render.console.safe_console`` made when first used; until then it costs no Rich import.

    It is made as it would have been when this object was: the width and height a Rich console fixes
    from $COLUMNS / $LINES at creation are read now and given to it then.
    """

    def __init__(self, **options: Any):
        self._options = options
        self.columns = columns_at_start()
        self._lines = lines_at_start()
        self._console = None

    def rich(self):
        """The Rich console itself."""
        if self._console is None:
            made = safe_console(**self._options)
            made.width = self.columns
            made.height = self._lines
            self._console = made
        return self._console

    @property
    def width(self) -> int:
        """The terminal's width; on a pipe or a file, PIPE_WIDTH (nothing is wrapped, cut or left out there)."""
        if not self._options.get("stderr") and prints_plain(sys.stdout):
            return PIPE_WIDTH
        return self.rich().width

    def print(self, *objects: Any, **options: Any) -> None:
        """Rich's print; on a pipe or a file a line is never wrapped (Rich's soft wrap)."""
        if not self._options.get("stderr") and prints_plain(sys.stdout):
            options.setdefault("soft_wrap", True)
        self.rich().print(*objects, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich(), name)


#: The width renderers are given for a pipe or a file: wider than any line, so tables keep every column and
#: no cell is wrapped (render/plain.py lays them out without a box).
PIPE_WIDTH = 1_000_000

# Both consoles drop the control characters of whatever text they print (profile, KB and file-name
# text is not trusted).
console = LazyConsole(highlight=False, soft_wrap=False)
err_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True)

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
                                TimeElapsedColumn(), console=err_console.rich(), transient=True)
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
    return ExecutorChoice(name=executor, scheduler=scheduler or None)


def emit_json(document: Any) -> None:
    """Print a JSON document on stdout, unwrapped and unstyled (for scripts).

    What stdout's encoding cannot carry (Chinese on an ASCII or Latin-1 stream, a path that is not UTF-8) is written
    as ``\\uXXXX`` escapes: the same document for any JSON parser."""
    text = dumps_json(document)
    if not can_carry(sys.stdout, text):
        text = ascii_json(text)
    sys.stdout.write(text)
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

    if fmt == "table":
        print_items(render(document, "table", width=console.width, **options))
    else:
        echo(render(document, fmt, **options))


def print_items(items: list[Any], *, to_stderr: bool = False) -> None:
    """Print what a table renderer returned: a ``str`` as the line it is, the rest as Rich prints it.

    On a pipe or a file a styled Text or Table is written whole, without box drawing (``render.plain``);
    on a terminal, and for anything ``pipe_lines`` does not lay out, through Rich.
    """
    target = err_console if to_stderr else console
    piped = not to_stderr and prints_plain(sys.stdout)
    for item in items:
        if isinstance(item, str):
            echo(item, err=to_stderr)
            continue
        lines = pipe_lines(item) if piped else None
        if lines is None:
            target.print(rich_item(item))
        else:
            sys.stdout.write("".join(line + "\n" for line in lines))
            sys.stdout.flush()


def write_sheet_formats(document: dict[str, Any], fmt: str, output: Optional[Path], *, force: bool,
                        inputs: Any = ()) -> bool:
    """Print ``document``'s main table as CSV, or write its tables into an xlsx workbook; False for other formats.

    (--format csv with --output is refused before any work: options.sheets_problem.)
    """
    if fmt == "csv":
        echo(render(document, "csv").rstrip("\n"))
        return True
    if fmt == "xlsx":
        echo(f"wrote {write_xlsx(document, output, force=force, inputs=inputs)}")
        return True
    return False


def render(document: dict[str, Any], fmt: str, **options: Any) -> Any:
    """``document`` rendered as ``fmt`` (opprof_advisor.render, imported when first needed)."""
    return render_document(document, fmt, **options)


def write_html(document: dict[str, Any], output: Optional[Path], *, force: bool, inputs: Any = ()) -> None:
    """Render ``document`` as an HTML report, write it (default: advisor-report-<time>.html here), say where."""
    echo(f"wrote {write_report(render(document, 'html'), output, force=force, inputs=inputs)}")
