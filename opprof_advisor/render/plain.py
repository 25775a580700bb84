"""The renderers' Text and Table on a pipe or a file, and what a Rich console would decide about stdout.

On a terminal Rich prints the renderers' items (``render.text.styled``), fitted to its width. On a pipe
or a file there is no width to fit: ``pipe_lines`` writes every line whole (a path, a first step in code,
an id is never cut), tables without box drawing — aligned columns when each cell is one line, one block
per row when cells have several (``advisor suggest | less`` reads as a list of findings).

``prints_plain`` and ``columns_at_start`` answer, without importing Rich, what a ``rich.console.Console``
writing to ``sys.stdout`` would decide (no colour system, the width).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from opprof_advisor.core.terminal import CONTROLS, MAX_COLUMNS, MAX_LINES, MIN_COLUMNS, MIN_LINES, sane_size
from opprof_advisor.render.text.styled import Table
import builtins
from rich.cells import cell_len as rich_cell_len

#: Characters Rich measures as one cell each: rich.cells._SINGLE_CELL_UNICODE_RANGES, plus the dashes,
#: quotes and ellipsis (U+2010-2027), arrows and mathematical operators (U+2190-22FF) our texts use, one
#: cell in every Unicode table Rich ships (tests/test_plain_render.py checks). Ranges, not a regex class:
#: compiling a class this wide costs ~5 ms.
SINGLE_CELL_RANGES = ((0xA0, 0xAC), (0xAE, 0x2FF), (0x370, 0x482), (0x2010, 0x2027), (0x2190, 0x22FF),
                      (0x2500, 0x25FC), (0x2800, 0x28FF))


def prints_plain(stream: Any) -> bool:
    """True when a Rich console writing to ``stream`` would use no colour system: a pipe or a file.

    The same tests as ``rich.console.Console`` (``is_terminal``, ``_detect_color_system``, Jupyter, legacy
    Windows), in the same order. The stream's encoding does not matter: plain lines draw no box, and a character
    an ASCII or Latin-1 stream lacks is the stream's to replace (core.terminal.guard_standard_streams).
    """
    if sys.platform == "win32" or _in_ipython():
        return False
    stream = getattr(stream, "rich_proxied_file", stream)
    if stream is None:
        return False
    return not _is_terminal(stream)


def _in_ipython() -> bool:
    return hasattr(builtins, "get_ipython")  # Rich asks IPython which shell it is: leave it to Rich


def _is_terminal(stream: Any) -> bool:
    if hasattr(sys.stdin, "__module__") and sys.stdin.__module__.startswith("idlelib"):
        return False
    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if tty_compatible == "0":
        return False
    if tty_compatible == "1":
        return True
    force_color = os.environ.get("FORCE_COLOR")
    if force_color is not None:
        return force_color != ""
    isatty = getattr(stream, "isatty", None)
    try:
        return False if isatty is None else isatty()
    except ValueError:
        return False


def columns_at_start() -> int | None:
    """The width a Rich console created now fixes for itself: $COLUMNS when it is a number, within
    MIN_COLUMNS..MAX_COLUMNS (``COLUMNS=0`` printed nothing, a huge one ran for minutes); None otherwise."""
    return sane_size(os.environ.get("COLUMNS"), MIN_COLUMNS, MAX_COLUMNS)


def lines_at_start() -> int | None:
    """The height, as ``columns_at_start`` reads $LINES."""
    return sane_size(os.environ.get("LINES"), MIN_LINES, MAX_LINES)


def single_cells(text: str) -> bool:
    """True when every character of ``text`` takes one terminal cell (without asking Rich)."""
    if text.isascii():
        return text.isprintable()
    for char in text:
        if not " " <= char <= "~" and not any(low <= ord(char) <= high for low, high in SINGLE_CELL_RANGES):
            return False
    return True


def cell_len(text: str) -> int:
    """Terminal cells ``text`` takes, as rich.cells.cell_len counts them (Rich is imported for rare characters)."""
    if (text.isascii() and text.isprintable()) or single_cells(text):
        return len(text)
    return rich_cell_len(text)


def pipe_lines(item: Any) -> list[str] | None:
    """The lines of a renderer's item on a pipe or a file: nothing wrapped or cut, no box drawing; else None.

    Our styled Text and Table and Rich's Text, Table and Markdown (read through their public attributes,
    without importing Rich). A text is its lines as they are; markdown its source. A table whose cells are
    one line each, or a table drawn without a box, is aligned columns under its headers; a boxed table with
    cells of several lines (a finding, its first step, its gain) is one block per row: the row's number,
    its main cell's lines, then each other column as ``Header: line · line``.
    """
    if isinstance(getattr(item, "plain", None), str):
        return _cell_text(item).split("\n")
    if isinstance(getattr(item, "markup", None), str):  # rich.markdown.Markdown
        return CONTROLS.sub("", item.markup).rstrip("\n").split("\n")
    if isinstance(item, Table):
        title, boxed, shown = item.options.get("title"), item.options.get("box", True) is not None, \
            item.options.get("show_header", True)
        columns = [(header, options.get("justify", "left")) for header, options in item.columns]
        rows = item.rows
    elif hasattr(item, "columns") and hasattr(item, "show_header") and hasattr(item, "row_count"):  # rich Table
        title, boxed, shown = item.title, item.box is not None, item.show_header
        columns = [(column.header, column.justify) for column in item.columns]
        rows = list(zip(*(list(column.cells) for column in item.columns))) if item.columns else []
    else:
        return None
    lines = [_cell_text(title)] if title else []
    headers = [_cell_text(header) for header, _justify in columns] if shown else None
    cells = [[_cell_text(cell) for cell in row] for row in rows]
    if boxed and headers and any("\n" in cell for row in cells for cell in row):
        return lines + _blocks(headers, cells)
    return lines + _columns(headers, [justify for _header, justify in columns], cells)


def _cell_text(cell: Any) -> str:
    """A cell's text without control characters; a tab (from a file's names) shown as ``\\t``, never expanded."""
    return CONTROLS.sub("", str(getattr(cell, "plain", cell) or "")).replace("\t", "\\t").rstrip()


def _columns(headers: list[str] | None, justify: list[str], rows: list[list[str]]) -> list[str]:
    """Aligned columns two spaces apart, a cell of several lines continuing under itself."""
    table = ([headers] if headers else []) + rows
    if not table:
        return []
    widths = [max(cell_len(line) for cell in column for line in cell.split("\n")) for column in zip(*table)]
    out = []
    for row in table:
        split = [cell.split("\n") for cell in row]
        for depth in range(max(len(cell) for cell in split)):
            parts = [cell[depth] if depth < len(cell) else "" for cell in split]
            out.append("  ".join(" " * (w - cell_len(p)) + p if j == "right" else p + " " * (w - cell_len(p))
                                 for p, w, j in zip(parts, widths, justify)).rstrip())
    return out


def _label(header: str) -> str:
    """``Header: `` (a Chinese header takes the full-width colon)."""
    if not header:
        return ""
    return header + ("：" if ord(header[-1]) >= 0x2E80 else ": ")


def _blocks(headers: list[str], rows: list[list[str]]) -> list[str]:
    """One block per row, each followed by a blank line."""
    numbered = bool(rows) and all(len(row[0]) <= 4 and "\n" not in row[0] for row in rows) and len(headers) > 1
    out: list[str] = []
    for row in rows:
        prefix, body, rest = (row[0] + "  ", row[1], list(zip(headers[2:], row[2:]))) if numbered \
            else ("", row[0], list(zip(headers[1:], row[1:])))
        indent = " " * cell_len(prefix)
        lines = body.split("\n")
        block = [prefix + lines[0], *(indent + line for line in lines[1:])]
        block += [indent + _label(header) + " · ".join(cell.split("\n")) for header, cell in rest if cell]
        out += [line.rstrip() for line in block] + [""]
    return out
