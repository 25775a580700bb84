"""A fast split of a KB file into front matter, body and `##` headings, for the files that need no markdown parser.

``kb.parse_file`` needs three things from markdown-it: where the front matter ends, its text, and
the level-2 headings with their lines. A full CommonMark parse costs ~1.5 ms a file (most of a
50,000-entry build); a line scan gives the same three things in a few µs for the files KB authors
write. It answers only when no line could make CommonMark read the file differently from the scan
(setext underlines, block quotes, HTML blocks, indented or nested headings, indented fences, tabs,
odd line ends ...) and returns None otherwise, so that file goes through markdown-it as before.
``tests/test_kb_split.py`` checks the scan against markdown-it on every shipped entry and on
files made to trip it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: Characters after which markdown-it or str.splitlines would count lines differently from a split on "\n"
#: (and tabs, whose column CommonMark counts in steps of four); the last three only in non-ASCII text.
_ODD_ASCII = "\t\r\v\f\x1c\x1d\x1e"
_ODD_WIDE = _ODD_ASCII + "\x85\u2028\u2029"
#: NUL, which markdown-it replaces: searched by a pattern, as ``"\0" in text`` is ~4x slower on non-ASCII text
#: (it looks for a zero byte, and every ASCII character stored wide holds one).
_NUL = re.compile("\0")
#: The line that ends the front matter, or one that makes the front-matter plugin read it otherwise.
_FRONT_END = re.compile(r"\n(?: *---|\.\.\.)")
#: The next body line that may matter, from the "\n" before it (so a search from the closing fence's "\n"
#: steps over prose and empty lines in C): (1) an h2 heading's text; (2) a fence opens (its indent,
#: marker and info string); (3) a line CommonMark may read otherwise than the scan, left to
#: markdown-it: a block quote or HTML block, a setext underline (at any indent, as in a list item),
#: an indented heading or fence, a list item that opens with a heading, fence, quote or HTML, an empty
#: heading; (4) a `## ` line that is none of these (empty, or a closing sequence of '#'s markdown-it
#: would drop). A line (1) matches can match neither (2) nor (3): it comes first as the most common.
#: The lookahead keeps the first characters these can start with as literal ASCII (``\d`` would take
#: other digits); no part reads past its line's end.
_NEXT_LINE = re.compile(r"\n(?=[ #<>\-=*+`~0-9])(?:## +(?P<h2>[^ #\n](?:.*[^ #\n])?) *$"
                        r"|(?P<indent> {0,3})(?P<marker>`{3,}|~{3,})(?P<info>.*)$"
                        r"|(?P<unusual>#+ *$| *[<>]| *(?:-+|=+) *$| +(?:#|```|~~~)"
                        r"| *(?:(?:[-*+]|\d{1,9}[.)]) +)+(?:[#<>]|```|~~~))"
                        r"|(?P<unsure>## ))", re.M)


class Split(NamedTuple):
    front: str  # the YAML between the fences
    body_start: int  # 0-based index of the first line after the closing fence
    headings: list[tuple[str, int]]  # (## heading text, 1-based line)


def split_simple(text: str) -> Split | None:
    """Front matter, body start and h2 headings as markdown-it finds them, or None when unsure."""
    if not text.startswith("---\n") or any(map(text.__contains__, _ODD_ASCII if text.isascii() else _ODD_WIDE)) \
            or _NUL.search(text):
        return None
    end = _FRONT_END.search(text, 3)  # (from the first line's "\n": the first line after it that may end the block)
    if end is None:
        return None  # not closed: markdown-it reads it another way
    start = end.start() + 1
    after = start + 3
    if start == 4 or text[start:after] != "---" or (after < len(text) and text[after] != "\n"):
        return None  # an empty block, or a line the front-matter plugin might read otherwise
    headings = _headings(text, after)
    if headings is None:
        return None
    return Split(text[4:start - 1], text.count("\n", 0, start) + 1, headings)


def _headings(text: str, start: int) -> list[tuple[str, int]] | None:
    """The h2 headings of the body after the "\n" at ``start`` (with their 1-based lines), or None when unsure."""
    headings: list[tuple[str, int]] = []
    search, end = _NEXT_LINE.search, len(text)
    counted, line = 0, 1  # the line of the character after position ``counted``
    found = search(text, start)
    while found is not None:
        at = found.start()
        line += text.count("\n", counted, at + 1)
        counted = at + 1
        kind = found.lastgroup
        if kind == "h2":
            headings.append((found.group("h2"), line))
        elif kind == "info":
            if found.group("marker")[0] == "`" and "`" in found.group("info"):
                return None  # not a fence: inline code
            closed_at = _fence_end(text, found.end(), found.group("marker"), len(found.group("indent")))
            if closed_at is None:
                return None
            if closed_at == end:
                break  # not closed before the end of the file
            found = search(text, closed_at)  # (from the closing line's "\n")
            continue
        else:
            return None
        found = search(text, found.end())
    return headings


def _fence_end(text: str, at: int, marker: str, indent: int) -> int | None:
    """Position of the "\n" that ends the line closing the fence opened by the line ending at ``at``
    (len(text) when it does not close), or None when where it ends depends on context."""
    end = len(text)
    while at < end:
        line_end = text.find("\n", at + 1)
        if line_end == -1:
            line_end = end
        closed = _fence_line(text[at + 1:line_end], marker, indent)
        if closed is None:
            return None
        if closed:
            return line_end
        at = line_end
    return end


def _fence_line(line: str, marker: str, indent: int) -> bool | None:
    """True when ``line`` closes the fence, False when it is inside it, None when that depends on context.

    An indented fence may belong to a list item: then a line indented less ends the item (and the
    fence), and a closing fence may sit up to three columns right of the item's text. Only lines
    that read the same at the top level and in a list item are taken.
    """
    stripped = line.lstrip(" ")
    if not stripped:
        return False
    depth = len(line) - len(stripped)
    if depth < indent:
        return None
    closes = stripped.startswith(marker) and not stripped.rstrip(" ").strip(marker[0])
    if not closes:
        return False
    if depth == indent or (indent == 0 and depth <= 3):
        return True
    return None
