"""Text on one line: what an error, a warning or a table cell shows of text that came from a file.

Below every other module of ``core`` (``errors`` and ``terminal`` both use it), so that neither imports the other
back.
"""

from __future__ import annotations

import re
from functools import cache


@cache
def _line_breakers() -> re.Pattern:
    """C0 and C1 controls, DEL, TAB, LF and the Unicode line separators: what may not appear inside one line.

    Compiled when first needed (a class reaching past Latin-1 costs ~0.5 ms to compile; most texts are clean).
    """
    return re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: object) -> str:
    """``text`` on one line: control characters, newlines and tabs shown escaped (``\\n``, ``\\x1b``)."""
    text = str(text)
    if text.isprintable() or not _line_breakers().search(text):  # every line breaker is unprintable
        return text
    return _line_breakers().sub(_escaped, text)


_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
