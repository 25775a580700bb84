"""One guard for every side file a reader opens, and for the numbers every reader returns.

Side files (``profiler_info*.json``, ``communication.json``, ``device_*/info.json.*``, msOpProf's
metric CSVs and ``dump/op_basic_info.txt`` ...) are written by other programs and may be anything:
a FIFO (``open()`` blocks until a writer appears), a device, a 3 GB sparse file, JSON nested
100,000 deep, a 401-digit number, ``NaN``, or a string where a mapping belongs. So:

* ``open_regular`` opens without blocking and refuses what is not a regular file, or is larger
  than the cap;
* ``read_text`` / ``read_json`` read through it; JSON nesting, ``NaN``/``Infinity``, numbers that do
  not fit a float and integers of more than MAX_INT_DIGITS digits are refused;
* ``dig`` walks nested mappings and gives None where a level has the wrong type;
* ``check_durations`` refuses a profile whose task durations are not finite or not plausible.

Every refusal of a side file is a ``SideFileError``: a ValueError, so the readers' existing
"ignored <file>: not readable JSON (...)" handling applies to it unchanged.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.units import TEXT as U

#: Side files above this are refused (real ones are a few KB; communication.json of a big job a few MB).
MAX_SIDE_FILE_BYTES = 256 * 1024 * 1024
#: Integers in side files longer than this are refused (int() of 4,300+ digits raises; a count never needs 20).
MAX_INT_DIGITS = 20
#: No task runs longer than this (µs, about 11.6 days): a larger duration is a corrupt value, and
#: summing a few of them overflows to "device time inf s".
MAX_DURATION_US = 1e12


class SideFileError(ValueError):
    """A side file that is not a regular file, too large, or not well-formed; the message says which."""


def open_regular(path: Path, limit: int = MAX_SIDE_FILE_BYTES):
    """A binary file object for ``path``; SideFileError when it is not a regular file or larger than ``limit``.

    Opened with O_NONBLOCK, so a FIFO in place of the file does not wait for a writer.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SideFileError(f"cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SideFileError(f"not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise SideFileError(f"{info.st_size:,} bytes, over the {limit:,} bytes read from such a file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"


def read_bytes(path: Path, limit: int = MAX_SIDE_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (SideFileError otherwise)."""
    with open_regular(path, limit) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew after the check
        raise SideFileError(f"over the {limit:,} bytes read from such a file")
    return data


def read_text(path: Path, limit: int = MAX_SIDE_FILE_BYTES, encoding: str = "utf-8-sig",
              errors: str = "strict") -> str:
    """The text of a regular file (SideFileError when it is not one, is too large or does not decode)."""
    try:
        return read_bytes(path, limit).decode(encoding, errors)
    except UnicodeDecodeError as exc:
        raise SideFileError(f"not {encoding} text ({exc.reason} at byte {exc.start})") from None


def read_json(path: Path, limit: int = MAX_SIDE_FILE_BYTES) -> Any:
    """A side file's JSON document; SideFileError for anything :func:`read_text` or a strict parse refuses."""
    text = read_text(path, limit)
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite_float)
    except RecursionError:
        raise SideFileError("JSON nested too deeply") from None


def _refuse_constant(name: str):
    raise SideFileError(f"{name} is not a number JSON allows")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise SideFileError(f"a {len(text)}-digit integer is not a plausible value")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise SideFileError(f"{text} does not fit a float")
    return value


#: json.loads / JSONDecoder hooks refusing NaN, Infinity and numbers too large for a float (SideFileError).
FINITE_JSON_NUMBERS = {"parse_constant": _refuse_constant, "parse_float": _finite_float}


def dig(document: Any, *keys: str) -> Any:
    """``document[k1][k2]...`` through mappings only; None when a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def small_int(value: Any) -> int | None:
    """A non-negative count from a side file (an int, or a string of at most MAX_INT_DIGITS digits); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 10 ** MAX_INT_DIGITS else None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= MAX_INT_DIGITS:
        return int(value)
    return None


def check_durations(durations, names, path: str) -> None:
    """Raise MalformedProfile when a task duration is not finite or over MAX_DURATION_US (C-speed when all are fine).

    ``durations``: a numpy array (a kernel table's); ``names``: the task names, or a callable giving them (only
    called to name the bad task)."""
    if not len(durations) or bool((abs(durations) <= MAX_DURATION_US).all()):  # one vector test; NaN compares false
        return
    durations = durations.tolist()  # the loop below only names the task
    if callable(names):
        names = names()
    for index, value in enumerate(durations):
        if not (math.isfinite(value) and value <= MAX_DURATION_US):
            name = names[index] if index < len(names) else f"#{index + 1}"
            raise MalformedProfile(f"task {name!r} has a duration of {value:g} µs, not a plausible time "
                                   f"(over {U.time(MAX_DURATION_US)} or not finite)", path=path,
                                   hint="the file is corrupt or edited; re-export the profile")
