"""Tables that fit the terminal: text folds between words, numbers and ids stay whole, columns give way.

Rich wraps a cell at spaces, but when the columns together are wider than the terminal it narrows
them below their longest word and then cuts words (``NonMaxSuppress / ionV3``) and numbers. Here
every column says what it holds and how much it matters; ``fitted_table`` works out widths itself:

* a ``whole`` column (numbers, ids, grades) is as wide as its widest line and never wraps;
* a text column is at least as wide as its longest unbreakable piece: a word, a number or a range
  with its unit (``21.9 %``, ``1.15 ms``, ``10.8–16.2 %``), an id (in brackets too: ``(nms-on-npu,``);
  a long code token breaks only after ``( , . / =``;
  Chinese breaks between characters;
* when even those minimum widths do not fit, the columns with the highest ``drop`` rank are left
  out first (``drop=0``: never), and the note line from ``dropped_note`` says which.

Spare width goes to the text columns in proportion to what they would still use, and each cell is
wrapped here (styles kept), so Rich never has to fold anything. The table is a ``styled.Table``:
printed as plain lines on a pipe (``render.plain``), handed to Rich for a terminal.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Sequence

from opprof_advisor.core.i18n import _
from opprof_advisor.render.plain import cell_len
from opprof_advisor.render.text.styled import Table, Text, from_rich
from rich.console import Console
from rich.table import Table as RichTable

#: No text column narrower than this (unless its text is): Chinese could otherwise break to one character a line.
TEXT_FLOOR = 8
#: A word longer than this may break after code punctuation (``torch_npu.`` / ``npu_batch_nms(``).
LONG_WORD = 14
_WORD = re.compile(r"\S+")
# Break after ( , / = and after a dot followed by a name (``torch.where``; never ``1.15`` or ``block.py``).
_CODE_BREAK = re.compile(r"(?<=[\w)\]`'][(,/=])(?=[^)\],])|(?<=\w\.)(?=[A-Za-z_]\w\w)")
# a number, or a range of two ("10.8–16.2"): either keeps its unit ("10.8–16.2 %")
_NUMBER = re.compile(r"^[(\[]?[<>~+\-−]?\d[\d.,]*(?:[–-]\d[\d.,]*)?$")
_UNIT = re.compile(r"^(%|µs|us|ms|s|GB/s|TFLOP/s|MHz|x)\W*$")
# Chinese line breaking: closing punctuation never starts a line, an opening bracket never ends one.
_NO_LINE_START = set("）)]》」』，。、：；！？%")
_NO_LINE_END = set("（([《「『")
#: CJK ideographs, punctuation and full-width forms (ranges, not a regex class: compiling that costs ~10 ms).
_HAN_RANGES = ((0x2E80, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF))


def _is_han(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _HAN_RANGES)


class Column(NamedTuple):  # a NamedTuple: cheaper to define at import than a dataclass (suggest's budget)
    """One column: its header (an English message id, shown translated), how it is aligned, whether it is kept whole, its drop rank (higher: sooner)."""

    header: str
    justify: str = "left"
    whole: bool = False
    drop: int = 0
    #: a text column's comfortable minimum: other columns are dropped before this one gets narrower
    least: int = 0
    #: what the note calls the column when its header is empty
    label: str = ""


def pieces(line: str) -> list[tuple[int, int, bool]]:
    """The unbreakable pieces of one line as (start, end, glued): ``glued`` joins a piece to the one before."""
    out: list[tuple[int, int, bool]] = []
    words = [(m.start(), m.end()) for m in _WORD.finditer(line)]
    i = 0
    while i < len(words):
        start, end = words[i]
        # a number and its unit are one piece: "21.9 %" never splits
        if i + 1 < len(words) and _NUMBER.match(line[start:end]) and _UNIT.match(line[words[i + 1][0]:words[i + 1][1]]):
            end = words[i + 1][1]
            i += 1
        out += _split_word(line, start, end)
        i += 1
    return out


def _split_word(line: str, start: int, end: int) -> list[tuple[int, int, bool]]:
    word = line[start:end]
    if not word.isascii() and any(map(_is_han, word)):
        cuts = [k for k in range(1, len(word)) if (_is_han(word[k]) or _is_han(word[k - 1]))
                and word[k] not in _NO_LINE_START and word[k - 1] not in _NO_LINE_END]
    elif len(word) > LONG_WORD:
        cuts = [m.start() for m in _CODE_BREAK.finditer(word)]
        opening = len(word) - len(word.lstrip("([`'\""))
        # "(`fusible-repeated-sequences`)." may break after "(`"; "(nms-on-npu," (an id in brackets) stays whole
        if not cuts and 0 < opening < len(word) and set(word[:opening]) & set("`'\""):
            cuts = [opening]
    else:
        cuts = []
    bounds = [0, *cuts, len(word)]
    return [(start + a, start + b, n > 0) for n, (a, b) in enumerate(zip(bounds, bounds[1:]))]


def min_width(text: str) -> int:
    """The narrowest a column can be without cutting this text's words or numbers."""
    return max((cell_len(line[a:b]) for line in text.split("\n") for a, b, _glued in pieces(line)), default=0)


def natural_width(text: str) -> int:
    """The width this text takes unwrapped."""
    return max((cell_len(line) for line in text.split("\n")), default=0)


def wrap_lines(line: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of each output line of ``line`` wrapped to ``width`` between its pieces."""
    spans: list[tuple[int, int]] = []
    begin = end = None
    for a, b, glued in pieces(line):
        if begin is None:
            begin, end = a, b
        elif cell_len(line[begin:b]) <= width:
            end = b
        else:
            spans.append((begin, end))
            begin, end = a, b
        del glued
    if begin is None:
        return [(0, 0)]
    spans.append((begin, end))
    # a piece wider than the column (only when nothing else could give way) is folded by characters
    return [part for span in spans for part in _fold(line, span, width)]


def _fold(line: str, span: tuple[int, int], width: int) -> list[tuple[int, int]]:
    start, end = span
    out = []
    while cell_len(line[start:end]) > width > 0:
        cut = start + 1
        while cut < end and cell_len(line[start:cut + 1]) <= width:
            cut += 1
        out.append((start, cut))
        start = cut
    return out + [(start, end)]


def wrap_cell(cell: Any, width: int):
    """``cell`` (str, our Text or Rich's) as a Text wrapped to ``width`` between words, its styles kept."""
    text = from_rich(cell) if hasattr(cell, "plain") else Text(str(cell))
    out: list = []
    for line in text.split("\n", allow_blank=True):
        out += [line[a:b] for a, b in wrap_lines(line.plain, width)]
    return Text("\n").join(out)


#: Table options that change nothing about a row's width.
_WIDTHLESS = {"title", "caption", "title_justify", "header_style"}


def _table_overhead(table_options: dict[str, Any], columns: int) -> int:
    """The width a table's borders and padding take with ``columns`` columns.

    Counted for the default box or none, the default padding, with or without edges (what our tables
    use; tests/test_plain_render.py holds it to Rich's); measured by Rich for anything else.
    """
    if set(table_options) - _WIDTHLESS <= {"box", "show_edge", "pad_edge", "show_lines"} and \
            table_options.get("box", "default") in ("default", None):
        boxed = table_options.get("box", "default") is not None
        edges = boxed and table_options.get("show_edge", True)
        padding = 2 * columns - (0 if table_options.get("pad_edge", True) else min(2, 2 * columns))
        return (2 if edges else 0) + (columns - 1 if boxed else 0) + padding
    return _measured_overhead(table_options, columns)


def _measured_overhead(table_options: dict[str, Any], columns: int) -> int:
    probe = RichTable(**{k: v for k, v in table_options.items() if k not in ("title", "caption")}, show_header=False)
    for _n in range(columns):
        probe.add_column(width=1, no_wrap=True)
    probe.add_row(*(["x"] * columns))
    console = Console(width=1000, color_system=None, file=_Null())
    lines = console.render_lines(probe, console.options, pad=False)
    return max(sum(len(segment.text) for segment in line) for line in lines) - columns


class _Null:
    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass


def choose_widths(columns: Sequence[Column], rows: Sequence[Sequence[Any]], width: int,
                  overhead_of) -> tuple[list[int], list[int]]:
    """(kept column indexes, their widths): drop by rank until the minimum widths fit, share out the rest."""
    texts = [[_plain(row[i]) for row in rows] for i in range(len(columns))]
    headers = [_(c.header) if c.header else "" for c in columns]
    lows = [max([natural_width(t) if c.whole else min_width(t) for t in texts[i]] + [min_width(headers[i])]
                + [min(max(c.least, TEXT_FLOOR), max(map(natural_width, texts[i] + [headers[i]]), default=0))])
            for i, c in enumerate(columns)]
    highs = [max([natural_width(t) for t in texts[i]] + [natural_width(headers[i]), lows[i]])
             for i, c in enumerate(columns)]
    kept = list(range(len(columns)))
    droppable = sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: (-columns[i].drop, -i))
    while sum(lows[i] for i in kept) + overhead_of(len(kept)) > width and droppable:
        kept.remove(droppable.pop(0))
    widths = {i: lows[i] for i in kept}
    spare = width - overhead_of(len(kept)) - sum(widths.values())
    if spare < 0:  # nothing left to drop: the text columns fold their longest words (never the numbers)
        _narrow_text_columns(widths, [i for i in kept if not columns[i].whole], -spare)
    # water-filling: every column that wants more gets an equal part, so short columns reach their
    # natural width before the long text column takes what is left
    while spare > 0:
        wanting = [i for i in kept if widths[i] < highs[i]]
        if not wanting:
            break
        part = max(1, spare // len(wanting))
        for i in wanting:
            given = min(part, highs[i] - widths[i], spare)
            widths[i] += given
            spare -= given
    return kept, [widths[i] for i in kept]


def _narrow_text_columns(widths: dict[int, int], text_columns: list[int], excess: int) -> None:
    while excess > 0 and text_columns:
        widest = max(text_columns, key=lambda i: widths[i])
        if widths[widest] <= 4:
            break
        widths[widest] -= 1
        excess -= 1


def _plain(cell: Any) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


def fitted_table(columns: Sequence[Column], rows: Sequence[Sequence[Any]], width: int,
                 **table_options: Any) -> tuple[Any, list[str]]:
    """A table of ``rows`` no wider than ``width``, and the headers of the columns left out."""
    overheads: dict[int, int] = {}

    def overhead_of(n: int) -> int:
        if n not in overheads:
            overheads[n] = _table_overhead(table_options, n)
        return overheads[n]

    kept, widths = choose_widths(columns, rows, width, overhead_of)
    table = Table(**table_options)
    for i, w in zip(kept, widths):
        column = columns[i]
        table.add_column(wrap_cell(_(column.header) if column.header else "", w), justify=column.justify, no_wrap=True, width=w)
    for row in rows:
        table.add_row(*(wrap_cell(row[i], w) for i, w in zip(kept, widths)))
    return table, [_(columns[i].header or columns[i].label) for i in range(len(columns)) if i not in kept]


def dropped_note(dropped: Sequence[str]) -> list:
    """The one note line naming the columns a narrow terminal left out (nothing when none was)."""
    if not dropped:
        return []
    return [Text(_("narrow terminal: {columns} left out (--format json has every column)").format(columns=", ".join(dropped)), style="dim")]
