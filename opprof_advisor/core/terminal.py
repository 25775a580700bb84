"""Text that is safe to put on a terminal: what profiles, KB files and file names say, never escape codes.

Op names, KB titles, notes and scanned file names come from files anyone can write. A terminal
takes ESC, CSI and OSC sequences in them as commands (retitle the window, clear the screen, hide a
hyperlink behind harmless text), so every printed string loses its C0 and C1 control characters
(and DEL) except newline and tab. Two ways in, so no call site can forget it:

* ``render.console.safe_console()`` — the one Rich console class, which cleans every segment of
  text it renders (table cells, Markdown, plain strings) before Rich adds its own styling codes;
* ``printable()`` / ``one_line()`` (here) — for the few plain ``write`` calls (markdown to stdout,
  the ``error:`` and ``warning:`` lines, which must also stay on one line).

No Rich here, so that ``opprof_advisor.core.errors`` and the core may use this module.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any
import os
import sys

#: C0 controls except TAB (0x09) and LF (0x0a), DEL, and the C1 controls.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@cache
def _line_breakers() -> re.Pattern:
    """The same plus TAB, LF and the Unicode line separators: what may not appear inside one line.

    Compiled when first needed (a class reaching past Latin-1 costs ~0.5 ms to compile; most texts are clean).
    """
    return re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@cache
def _json_raw_controls() -> re.Pattern:
    """Characters json.dumps(ensure_ascii=False) leaves raw although a terminal may act on them."""
    return re.compile("[\x7f-\x9f\u2028\u2029]")


def printable(text: object) -> str:
    """``text`` without control characters (newline and tab are kept)."""
    text = str(text)
    return CONTROLS.sub("", text) if CONTROLS.search(text) else text


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


def dumps_json(document: Any) -> str:
    """``document`` as indented JSON with every control character escaped (``\\u009b`` too)."""
    text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    if text.isascii() and "\x7f" not in text:
        return text
    # Outside strings JSON has no such characters, so escaping them everywhere stays valid JSON.
    return _json_raw_controls().sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def detach_closed_stdout() -> None:
    """After the reader of a pipe went away (``advisor ... | head``): send what is left to /dev/null.

    Python flushes stdout once more at exit; on a closed pipe that flush fails with "Exception
    ignored ... BrokenPipeError" and exit code 120. Pointing the descriptor at /dev/null makes the
    exit quiet, as the reader has what it wanted.
    """

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (a test runner's buffer): nothing will be flushed to a pipe
