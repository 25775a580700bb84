"""Styled text and fitted tables as the terminal renderers build them, without importing Rich.

The renderers of ``render.text`` describe their output with ``Text`` (a string and its styled
spans) and ``Table`` (columns of fixed width, cells already wrapped by ``fit.fitted_table``). The
CLI prints them as plain lines itself when Rich would print no escape code anyway (stdout is a pipe
or a file: ``render.plain``), and converts them with ``to_rich`` for a terminal. Rich's console
module alone costs ~25 ms to import, a sixth of a whole `advisor suggest`.

``Text`` keeps exactly what ``rich.text.Text`` would hold after the same calls (the same control
codes dropped, the same spans), so that ``to_rich`` gives Rich the object it would have been given.
"""

from __future__ import annotations

from typing import Any, Iterable
from rich.text import Span
from rich.text import Text as RichText
from rich.table import Table as RichTable

#: What rich.text.Text drops from every string it is given (bell, backspace, VT, FF, CR: rich.control).
_STRIPPED = {7: None, 8: None, 11: None, 12: None, 13: None}


class Text:
    """A string with styled spans: the part of ``rich.text.Text`` the renderers use."""

    __slots__ = ("plain", "style", "spans")

    def __init__(self, text: str = "", style: str = "", *, spans: list[tuple[int, int, Any]] | None = None):
        self.plain = text.translate(_STRIPPED)
        self.style = style
        self.spans: list[tuple[int, int, Any]] = spans or []

    @classmethod
    def assemble(cls, *parts: Any, style: str = "") -> "Text":
        """Strings, ``(string, style)`` pairs and Texts one after the other."""
        text = cls(style=style)
        for part in parts:
            if isinstance(part, (str, Text)):
                text.append(part)
            else:
                text.append(*part)
        return text

    def __len__(self) -> int:
        return len(self.plain)

    def __str__(self) -> str:
        return self.plain

    def append(self, text: "str | Text", style: Any = None) -> "Text":
        """Add ``text`` at the end (a string in ``style``; a Text with its own styles)."""
        offset = len(self.plain)
        if isinstance(text, str):
            text = text.translate(_STRIPPED)
            if text and style:
                self.spans.append((offset, offset + len(text), style))
            self.plain += text
        elif text.plain:
            if text.style:
                self.spans.append((offset, offset + len(text.plain), text.style))
            self.spans.extend((start + offset, end + offset, span_style) for start, end, span_style in text.spans)
            self.plain += text.plain
        return self

    def join(self, lines: Iterable["Text"]) -> "Text":
        """The lines with this text between them (as ``rich.text.Text.join``: the result has this text's style)."""
        joined = Text(style=self.style)
        for number, line in enumerate(lines):
            if number and self.plain:
                joined.append(Text(self.plain, self.style, spans=list(self.spans)))
            joined.append(line)
        return joined

    def divide(self, offsets: list[int]) -> list["Text"]:
        """The pieces between ``offsets``, each with the base style and its share of the spans."""
        bounds = [0, *offsets, len(self.plain)]
        return [self._piece(start, end) for start, end in zip(bounds, bounds[1:])]

    def _piece(self, start: int, end: int) -> "Text":
        piece = Text(style=self.style)
        piece.plain = self.plain[start:end]  # already clean
        piece.spans = [(max(0, a - start), min(b, end) - start, style) for a, b, style in self.spans
                       if min(b, end) - start > max(0, a - start)]
        return piece

    def split(self, separator: str = "\n", *, allow_blank: bool = False) -> list["Text"]:
        """The lines of this text (a blank last line kept with ``allow_blank``)."""
        if separator not in self.plain:
            return [Text(self.plain, self.style, spans=list(self.spans))]
        cuts = []
        position = self.plain.find(separator)
        while position >= 0:
            cuts += [position, position + len(separator)]
            position = self.plain.find(separator, position + len(separator))
        lines = [line for line in self.divide(cuts) if line.plain != separator]
        if not allow_blank and self.plain.endswith(separator):
            lines.pop()
        return lines

    def __getitem__(self, where: slice) -> "Text":
        start, stop, _step = where.indices(len(self.plain))
        return self._piece(start, max(start, stop))  # as Rich's divide([start, stop])[1]

    def to_rich(self):
        return RichText(self.plain, self.style, spans=[Span(*span) for span in self.spans])


class Table:
    """A table of fixed-width columns whose cells are wrapped already (``fit.fitted_table`` makes them)."""

    def __init__(self, **options: Any):
        self.options = options
        self.columns: list[tuple[Any, dict[str, Any]]] = []
        self.rows: list[tuple[Any, ...]] = []

    def add_column(self, header: Any = "", **options: Any) -> None:
        self.columns.append((header, options))

    def add_row(self, *cells: Any) -> None:
        self.rows.append(cells)

    def to_rich(self):
        table = RichTable(**self.options)
        for header, options in self.columns:
            table.add_column(rich_item(header), **options)
        for cells in self.rows:
            table.add_row(*(rich_item(cell) for cell in cells))
        return table


def rich_item(item: Any) -> Any:
    """``item`` as Rich prints it: our Text and Table converted, anything else as it is."""
    return item.to_rich() if isinstance(item, (Text, Table)) else item


def from_rich(text: Any) -> Text:
    """A ``rich.text.Text`` (or a string) as our Text, with its styles."""
    if isinstance(text, Text):
        return text
    if isinstance(text, str):
        return Text(text)
    return Text(text.plain, text.style, spans=[(span.start, span.end, span.style) for span in text.spans])
