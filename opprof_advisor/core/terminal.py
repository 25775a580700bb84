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

import codecs
import io
import json
import math
import re
from functools import cache
from typing import Any
import os
import sys

import orjson

from opprof_advisor.core.errors import OutputError
from opprof_advisor.core.i18n import M_, N_, current_lang
from opprof_advisor.core.text import one_line  # noqa: F401 - re-exported: where the callers import it

#: C0 controls except TAB (0x09) and LF (0x0a), DEL, and the C1 controls.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@cache
def _json_raw_controls() -> re.Pattern:
    """Characters json.dumps(ensure_ascii=False) leaves raw although a terminal may act on them."""
    return re.compile("[\x7f-\x9f\u2028\u2029]")


def printable(text: object) -> str:
    """``text`` without control characters (newline and tab are kept)."""
    text = str(text)
    return CONTROLS.sub("", text) if CONTROLS.search(text) else text


def dumps_json(document: Any) -> str:
    """``document`` as indented, strict JSON with every control character escaped (``\\u009b`` too).

    Written by orjson: the standard library writes indented JSON in pure Python, ten times slower (a profile of a
    million op types is 240 MB of JSON: 0.8 s instead of 9.6 s). orjson writes the same document: keys in order,
    text unescaped, values it does not know (a Path, a datetime, a dataclass) through ``str`` as ``default=str``
    did, keys that are not text as text; a float the shortest way that reads back the same (``1e-6``).

    Strict: no ``NaN`` / ``Infinity`` token is ever written. The readers check every number where it is read, so a
    document holds none; should one slip through all the same, orjson writes it as ``null`` (what JSON has for a
    value that is not known). An integer beyond 64 bits, which orjson refuses, is written by the standard library."""
    try:
        text = orjson.dumps(document, default=str, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, or a default=str that gave up
        try:
            text = json.dumps(document, indent=2, ensure_ascii=False, default=str, allow_nan=False)
        except ValueError:  # "Out of range float values are not JSON compliant"
            text = json.dumps(_finite(document), indent=2, ensure_ascii=False, default=str, allow_nan=False)
    if text.isascii() and "\x7f" not in text:
        return text
    # Outside strings JSON has no such characters, so escaping them everywhere stays valid JSON.
    return _json_raw_controls().sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_ORJSON_OPTIONS = (orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS
                   | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_SERIALIZE_NUMPY)  # a numpy number as a number


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None (containers copied as lists and dicts)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


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


# ---------------------------------------------------------------------------------------------
# The process's standard streams and terminal size: one guard, set up by the entry point
# ---------------------------------------------------------------------------------------------

#: The narrowest and widest terminal the tables are laid out for ($COLUMNS outside is taken as the nearer bound).
MIN_COLUMNS, MAX_COLUMNS = 20, 1000
#: The same for $LINES.
MIN_LINES, MAX_LINES = 5, 1000

#: What a stream that cannot show one of these characters (an ASCII or Latin-1 terminal) prints instead: the
#: typography of our own texts, in ASCII (one character for one where a table cell may hold it, so columns align).
#: Any other character stdout cannot show is refused in Chinese output (one OutputError line); in English, and on
#: stderr, it is written as ``\uXXXX``.
ASCII_FALLBACK = {
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u00b7": "|", "\u2022": "*", "\u2026": ".", "\u2192": ">", "\u2190": "<", "\u2191": "^", "\u2193": "v",
    "\u21d2": ">", "\u00d7": "x", "\u2265": ">=", "\u2264": "<=", "\u2248": "~", "\u2260": "!=", "\u00b1": "+/-",
    "\u00b5": "u", "\u03bc": "u", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " ",
    "\u2009": " ", "\u202f": " ", "\u2713": "v", "\u2717": "x", "\u00b2": "^2", "\u00b3": "^3", "\u2030": "o/oo",
    "\u00f7": "/", "\u2500": "-", "\u2501": "-", "\u2550": "=", "\u2502": "|", "\u2503": "|", "\u2551": "|",
}
#: Box drawing (U+2500-257F) not in ASCII_FALLBACK is ``+``, a block element (U+2580-259F: a bar) ``#``.
BOX_DRAWING, BLOCK_ELEMENTS = (0x2500, 0x257F), (0x2580, 0x259F)


def sane_size(value: str | None, low: int, high: int) -> int | None:
    """$COLUMNS or $LINES as a number of cells within ``low``..``high``; None when it is unset, empty, 0, negative or
    not a decimal number (the terminal's own size is asked then)."""
    text = (value or "").strip()
    if not text or not text.isascii() or not text.isdigit():
        return None
    text = text.lstrip("0")
    if not text:
        return None
    return high if len(text) > 9 else min(max(int(text), low), high)


def sane_terminal_size(environ: Any = None) -> None:
    """Rewrite $COLUMNS and $LINES (and Typer's $TERMINAL_WIDTH) so that every library that reads them (Rich,
    Typer's help, click, shutil) gets a size it can lay out: a number within bounds, or nothing (``COLUMNS=0``
    printed nothing, a huge one ran for minutes, ``COLUMNS=²`` or ``TERMINAL_WIDTH=abc`` broke int())."""
    environ = os.environ if environ is None else environ
    for name, low, high in (("COLUMNS", MIN_COLUMNS, MAX_COLUMNS), ("TERMINAL_WIDTH", MIN_COLUMNS, MAX_COLUMNS),
                            ("LINES", MIN_LINES, MAX_LINES)):
        value = environ.get(name)
        if value is None:
            continue
        size = sane_size(value, low, high)
        if size is None:
            del environ[name]
        elif str(size) != value:
            environ[name] = str(size)


def guard_standard_streams() -> None:
    """Make stdin, stdout and stderr safe to use whatever the caller left them as (the entry point calls this first).

    * A closed descriptor 0, 1 or 2 is opened on /dev/null, so that no file advisor opens later takes its number
      (and a child's output lands in it); a closed stdout fails at its first write (one OutputError).
    * stdout writes through ``_Stdout``: a full disk or a broken device is one ``OutputError`` instead of an
      internal error, a character the stream's encoding lacks is written as ASCII_FALLBACK says or refused, the
      original bytes of a path that is not UTF-8 are written back (what ``ls`` does).
    * stderr never fails on a character: ASCII_FALLBACK, else ``\\uXXXX``.
    """
    closed = [fd for fd in (0, 1, 2) if not _is_open(fd)]
    for fd in closed:
        _open_devnull_at(fd)
    if 2 in closed or sys.stderr is None:
        sys.stderr = _text_stream(2, None, errors=STDERR_ERRORS)
    else:
        try:
            sys.stderr.reconfigure(errors=STDERR_ERRORS)
        except (AttributeError, ValueError, io.UnsupportedOperation):
            pass  # not a real text file (a test runner's buffer)
    if 0 in closed or sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin, open until exit
    original = sys.stdout
    if 1 not in closed and (original is None or not _is_fd(original, 1)):
        return  # stdout replaced by a test runner or an embedding program: theirs to handle
    sys.stdout = _text_stream(1, None if 1 in closed else original, errors=STDOUT_ERRORS, closed=1 in closed)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _open_devnull_at(fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)


def _is_fd(stream: Any, fd: int) -> bool:
    try:
        return stream.fileno() == fd
    except (AttributeError, ValueError, OSError):
        return False


def _text_stream(fd: int, original: Any, *, errors: str, closed: bool = False) -> io.TextIOWrapper:
    """A text stream over descriptor ``fd`` (through ``_Stdout`` for stdout) as ``original`` was set up."""
    encoding = getattr(original, "encoding", None) or sys.getfilesystemencoding() or "utf-8"
    line_buffering = bool(getattr(original, "line_buffering", False))
    raw = _Stdout(fd, closed=closed) if fd == 1 else io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=encoding, errors=errors, line_buffering=line_buffering,
                            write_through=fd == 2)


class _Stdout(io.RawIOBase):
    """Descriptor 1 for the process's stdout: a failed write is one OutputError (a closed pipe stays the
    BrokenPipeError the entry point ends quietly on); after a failure what is still buffered is dropped, so the
    flush at exit does not fail a second time."""

    def __init__(self, fd: int, *, closed: bool):
        super().__init__()
        self.fd = fd
        self.was_closed = closed
        self.failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return not self.was_closed and os.isatty(self.fd)

    def write(self, data) -> int:
        if self.failed:
            return len(data)
        if self.was_closed:
            self.failed = True
            raise _output_error(N_("stdout is closed: there is nowhere to print the output"),
                                N_("run it with stdout open, or send it to a file (> FILE)"))
        try:
            return os.write(self.fd, data)
        except BrokenPipeError:
            self.failed = True
            raise
        except InterruptedError:
            return 0  # (BufferedWriter writes the rest)
        except OSError as exc:
            self.failed = True
            raise _output_error(M_("cannot write the output to stdout: {reason}", reason=exc.strerror or str(exc)),
                                N_("make room where stdout goes, or send the output elsewhere")) from None


def _output_error(message: str, hint: str) -> Exception:
    return OutputError(message, hint=hint)


#: The error handlers of the two streams (``codecs.register_error`` names).
STDOUT_ERRORS = "advisor-stdout"
STDERR_ERRORS = "advisor-stderr"


def _fallback(exc: UnicodeError, refuse: bool) -> tuple[bytes, int]:
    """What a stream writes for the characters its encoding lacks: the original byte of a path's byte that is not
    UTF-8 (``surrogateescape``), ASCII_FALLBACK's ASCII, else (stderr) ``\\uXXXX`` or (stdout) one OutputError."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for char in exc.object[exc.start:exc.end]:
        if "\udc80" <= char <= "\udcff":
            out.append(ord(char) - 0xDC00)
            continue
        replacement = ASCII_FALLBACK.get(char)
        if replacement is None and BOX_DRAWING[0] <= ord(char) <= BLOCK_ELEMENTS[1]:
            replacement = "+" if ord(char) <= BOX_DRAWING[1] else "#"
        if replacement is None and refuse:
            raise _output_error(M_("stdout cannot show the character U+{code:04X}: its encoding is {encoding}",
                                   code=ord(char), encoding=exc.encoding),
                                N_("use a UTF-8 locale (LANG=C.UTF-8) or PYTHONIOENCODING=utf-8, or --format json, "
                                   "or --lang en"))
        out += (replacement or char).encode("ascii", "backslashreplace")
    return bytes(out), exc.end


# stdout refuses only in Chinese, where the text itself cannot be shown; in English the one character a name or a
# path brings is written as ``\uXXXX`` like on stderr, and the rest of the output stands.
codecs.register_error(STDOUT_ERRORS, lambda exc: _fallback(exc, refuse=current_lang() == "zh"))
codecs.register_error(STDERR_ERRORS, lambda exc: _fallback(exc, refuse=False))


def ascii_json(text: str) -> str:
    """JSON text with every character outside ASCII written as its ``\\uXXXX`` escape (the same document for any
    parser): what an ASCII or Latin-1 stdout, or a path that is not UTF-8, can carry."""
    if text.isascii():
        return text
    return _NOT_ASCII.sub(_json_escape, text)


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


def _json_escape(match: re.Match) -> str:
    units = match.group().encode("utf-16-be", "surrogatepass")  # (a lone surrogate of a path stays one \\udcXX)
    return "".join(f"\\u{units[i] << 8 | units[i + 1]:04x}" for i in range(0, len(units), 2))


def can_carry(stream: Any, text: str) -> bool:
    """True when ``stream``'s encoding can write ``text`` as it is."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    if text.isascii():
        return True
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
