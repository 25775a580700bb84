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
#: (and tabs, whose column CommonMark counts in steps of four).
_ODD_TEXT = re.compile("[\t\r\0\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)$")
_H2 = re.compile(r"## +([^ #](?:.*[^ #])?) *$")
#: Outside a fence, a line CommonMark may read otherwise than the scan, left to markdown-it: a block
#: quote or HTML block, a setext underline (at any indent, as in a list item), an indented heading
#: or fence, a list item that opens with a heading, fence, quote or HTML, an empty heading.
_UNUSUAL = re.compile(r"#+ *$| *[<>]| *(?:-+|=+) *$| +(?:#|```|~~~)| *(?:(?:[-*+]|\d{1,9}[.)]) +)+(?:[#<>]|```|~~~)")

#: The first characters of the lines _FENCE, _UNUSUAL or a `## ` heading can match (most prose lines start otherwise).
_MAY_MATTER = frozenset(" #<>-=*+`~0123456789")


class Split(NamedTuple):
    front: str  # the YAML between the fences
    body_start: int  # 0-based index of the first line after the closing fence
    headings: list[tuple[str, int]]  # (## heading text, 1-based line)


def split_simple(text: str) -> Split | None:
    """Front matter, body start and h2 headings as markdown-it finds them, or None when unsure."""
    if not text.startswith("---\n") or _ODD_TEXT.search(text):
        return None
    lines = text.split("\n")
    close = _front_matter_end(lines)
    if close is None:
        return None
    headings = _headings(lines, close + 1)
    if headings is None:
        return None
    return Split("\n".join(lines[1:close]), close + 1, headings)


def _front_matter_end(lines: list[str]) -> int | None:
    """Index of the closing `---`; None for anything the front-matter plugin might read otherwise."""
    for index in range(1, len(lines)):
        line = lines[index]
        stripped = line.lstrip(" ")
        if stripped.startswith("---") or line.startswith("..."):
            return index if line == "---" and index > 1 else None
    return None  # not closed: markdown-it reads it another way


def _headings(lines: list[str], start: int) -> list[tuple[str, int]] | None:
    headings: list[tuple[str, int]] = []
    fence: tuple[str, int] | None = None  # while in a fenced block: its marker and indent
    for index in range(start, len(lines)):
        line = lines[index]
        if fence is not None:
            closed = _fence_line(line, *fence)
            if closed is None:
                return None
            if closed:
                fence = None
            continue
        if not line or line[0] not in _MAY_MATTER:
            continue  # prose, or an empty line: neither pattern below can match it
        opened = _FENCE.match(line)
        if opened:
            if opened.group(2)[0] == "`" and "`" in opened.group(3):
                return None  # not a fence: inline code
            fence = (opened.group(2), len(opened.group(1)))
            continue
        if _UNUSUAL.match(line):
            return None
        if line.startswith("## "):
            heading = _H2.match(line)
            if heading is None:
                return None  # empty, or a closing sequence of '#'s markdown-it would drop
            headings.append((heading.group(1), index + 1))
    return headings


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
