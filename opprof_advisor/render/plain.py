"""The terminal renderers' Text and Table as the lines Rich would print when it prints no escape code.

Writing to a pipe or a file, Rich styles nothing: what it prints is the text of each segment. For
the two shapes our renderers build (``render.text.styled``: a line of text, a fitted table whose
cells are wrapped already) those lines follow a few rules, copied here from rich 13–15 (``Text.wrap``
and ``rich._wrap.divide_line`` for text, ``Table._render`` for tables, with the HEAVY_HEAD box or
none). Anything outside them — a tab, a control character, a title, another box, a table wider
than the console, a cell that would need Rich's ellipsis — makes ``plain_lines`` return None, and
Rich prints that item. tests/test_plain_render.py holds every rendering of the bundled examples,
at several widths and in both languages, to Rich's bytes.

``prints_plain`` and ``console_width`` answer, without importing Rich, what a
``rich.console.Console`` writing to ``sys.stdout`` would decide (no colour system, the width).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from opprof_advisor.core.terminal import CONTROLS
from opprof_advisor.render.text.styled import Table, Text
import builtins
from rich.cells import cell_len as rich_cell_len

#: rich.box.HEAVY_HEAD, the default box of rich.table.Table, one row of four characters per line.
_HEAVY_HEAD = ("┏━┳┓", "┃ ┃┃", "┡━╇┩", "│ ││", "├─┼┤", "├─┼┤", "│ ││", "└─┴┘")
#: The table options the plain rendering knows; any other (a title, another box ...) goes to Rich.
_TABLE_OPTIONS = {"box", "show_lines", "show_edge", "pad_edge", "header_style"}
_COLUMN_OPTIONS = {"justify", "no_wrap", "width"}
#: Characters Rich measures as one cell each: rich.cells._SINGLE_CELL_UNICODE_RANGES, plus the dashes,
#: quotes and ellipsis (U+2010-2027), arrows and mathematical operators (U+2190-22FF) our texts use, one
#: cell in every Unicode table Rich ships (tests/test_plain_render.py checks). Ranges, not a regex class:
#: compiling a class this wide costs ~5 ms.
SINGLE_CELL_RANGES = ((0xA0, 0xAC), (0xAE, 0x2FF), (0x370, 0x482), (0x2010, 0x2027), (0x2190, 0x22FF),
                      (0x2500, 0x25FC), (0x2800, 0x28FF))
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")


def prints_plain(stream: Any) -> bool:
    """True when a Rich console writing to ``stream`` would use no colour system, ASCII-safe boxes aside.

    The same tests as ``rich.console.Console`` (``is_terminal``, ``_detect_color_system``, ``encoding``,
    Jupyter, legacy Windows), in the same order.
    """
    if sys.platform == "win32" or _in_ipython():
        return False
    stream = getattr(stream, "rich_proxied_file", stream)
    if stream is None:
        return False
    encoding = (getattr(stream, "encoding", "utf-8") or "utf-8").lower()
    return encoding.startswith("utf") and not _is_terminal(stream)


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
    """The width a Rich console created now fixes for itself: $COLUMNS when it is a number."""
    columns = os.environ.get("COLUMNS")
    return int(columns) if columns is not None and columns.isdigit() else None


def console_width(fixed: int | None) -> int:
    """The width of a non-terminal Rich console created with ``fixed`` (``columns_at_start`` then)."""
    if fixed is not None:
        return fixed
    width = None
    for descriptor in (0, 1, 2):
        try:
            width, _height = os.get_terminal_size(descriptor)
        except (AttributeError, ValueError, OSError):
            continue
        break
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    return width or 80


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


def plain_lines(item: Any, width: int) -> list[str] | None:
    """The lines Rich prints for ``item`` (a styled Text or Table) on a console ``width`` wide, or None."""
    if width < 1:
        return None
    if isinstance(item, Text):
        return _text_lines(item.plain, width)
    if isinstance(item, Table):
        return _table_lines(item, width)
    return None


def _unsafe(text: str) -> bool:
    return "\t" in text or bool(CONTROLS.search(text))


def _text_lines(text: str, width: int) -> list[str] | None:
    """rich.text.Text.wrap with justify "default" and overflow "fold", then the console's crop."""
    if _unsafe(text):
        return None
    out = []
    for line in text.split("\n"):
        offsets = _divide_line(line, width)
        if offsets is None:
            return None
        bounds = [0, *offsets, len(line)]
        for start, end in zip(bounds, bounds[1:]):
            piece = line[start:end]
            if len(piece) > width:  # Text.rstrip_end: trailing spaces beyond the width go
                match = _TRAILING_SPACE.search(piece)
                if match is not None:
                    piece = piece[:len(piece) - min(len(match.group()), len(piece) - width)]
            if cell_len(piece) > width:
                return None  # Rich would cut it by cells
            out.append(piece)
    return out


def _divide_line(text: str, width: int) -> list[int] | None:
    """rich._wrap.divide_line(text, width, fold=True); None where folding would need Rich's grapheme rules."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = cell_len(word.rstrip())
        if width - offset >= length:
            offset += cell_len(word)
        elif length > width:
            if not single_cells(word):
                return None
            folded = [word[i:i + width] for i in range(0, len(word), width)]
            for number, piece in enumerate(folded):
                if start:
                    breaks.append(start)
                if number == len(folded) - 1:
                    offset = cell_len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
    return breaks


def _table_lines(table: Any, width: int) -> list[str] | None:
    """rich.table.Table rendered with padding (0, 1), its header shown, no title, no footer."""
    options = table.options
    if set(options) - _TABLE_OPTIONS or any(set(opts) - _COLUMN_OPTIONS for _h, opts in table.columns):
        return None
    box = _HEAVY_HEAD if "box" not in options else None
    if options.get("box", _HEAVY_HEAD) is not None and box is None:
        return None
    show_edge, pad_edge, show_lines = options.get("show_edge", True), options.get("pad_edge", True), \
        options.get("show_lines", False)
    count = len(table.columns)
    if not count:
        return None
    pads = [(0 if (i == 0 and not pad_edge) else 1, 0 if (i == count - 1 and not pad_edge) else 1) for i in range(count)]
    inner = [opts.get("width") for _h, opts in table.columns]
    if any(w is None or w < 1 or not opts.get("no_wrap") for w, (_h, opts) in zip(inner, table.columns)):
        return None
    widths = [w + left + right for w, (left, right) in zip(inner, pads)]
    extra = (2 if box and show_edge else 0) + (count - 1 if box else 0)
    if sum(widths) > width - extra:
        return None
    rows = [tuple(header for header, _o in table.columns), *table.rows]
    if any(len(row) != count for row in rows):
        return None
    rendered = []
    for number, row in enumerate(rows):
        cells = []
        for cell, w, (left, right), (_h, opts) in zip(row, inner, pads, table.columns):
            lines = _cell_lines(cell, w, opts.get("justify", "left"))
            if lines is None:
                return None
            cells.append([" " * left + line + " " * right for line in lines])
        height = max(len(cell) for cell in cells)
        for cell, w in zip(cells, widths):
            blank = [" " * w] * (height - len(cell))
            cell[:] = blank + cell if number == 0 else cell + blank  # the header row sits at the bottom
        rendered.append(cells)
    return _assemble(rendered, widths, box, show_edge, show_lines)


def _cell_lines(cell: Any, width: int, justify: str) -> list[str] | None:
    """One cell's lines at ``width`` (no_wrap: Text.wrap keeps each line, justify pads it)."""
    text = getattr(cell, "plain", None)  # a str cell would be read as markup by Rich: ours are all Text
    if not isinstance(text, str) or _unsafe(text) or justify not in ("left", "right"):
        return None
    out = []
    for line in text.split("\n"):
        if justify == "right":
            line = line.rstrip()
        size = cell_len(line)
        if size > width:
            return None  # Rich would end it with an ellipsis
        out.append(line + " " * (width - size) if justify == "left" else " " * (width - size) + line)
    return out


def _assemble(rows: list[list[list[str]]], widths: list[int], box: tuple[str, ...] | None, show_edge: bool,
              show_lines: bool) -> list[str]:
    out: list[str] = []
    if box is None:
        for cells in rows:
            out += ["".join(parts) for parts in zip(*cells)]
        return out

    def rule(chars: str, edge: bool) -> str:
        left, horizontal, cross, right = chars
        middle = cross.join(horizontal * w for w in widths)
        return left + middle + right if edge else middle

    if show_edge:
        out.append(rule(box[0], True))
    for number, cells in enumerate(rows):
        last = number == len(rows) - 1
        left, _space, divider, right = box[1] if number == 0 else (box[6] if last else box[3])
        for parts in zip(*cells):
            line = divider.join(parts)
            out.append(left + line + right if show_edge else line)
        if number == 0:
            out.append(rule(box[2], show_edge))
        elif show_lines and not last:
            out.append(rule(box[4], show_edge))
    if show_edge:
        out.append(rule(box[7], True))
    return out
