"""Writing output files (reports, exports) without ever losing a file the user had.

Three rules for every file the tool writes:

1. It is written to a temporary file in the target's folder and renamed over the target
   (``os.replace``): a kill, a full disk or an error leaves the previous file, never half a file.
2. It is never written into an input: not over a profile file, not inside a profile folder
   (``inputs``), whatever ``--force`` says — the profile must stay as the profiler wrote it.
3. An existing file is replaced only when it is recognisably ours (``is_ours``: an earlier report
   or export of this tool) or with ``--force``.

How each kind of output is recognised as ours lives with its writer: the HTML reports carry
``<meta name="generator" content="opprof-advisor ...">``, the ``--export`` databases an SQLite
application id (``profile_export.APPLICATION_ID``), the outcome exports their schema or a closing
marker comment.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from opprof_advisor.core.errors import OutputError
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.paths import too_long


def check_target(target: Path | str, *, what: str, is_ours: Callable[[Path], bool], force: bool = False,
                 inputs: Sequence[Path | str] = (), option: str = "--output") -> Path:
    """The absolute path to write ``what`` to; raise OutputError when rules 2 or 3 (above) forbid it."""
    target = Path(os.path.realpath(Path(target).expanduser()))  # through a link: the file it names
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a name too long for the file system, no permission on a folder, a link loop
        raise OutputError(_os_reason(exc), path=target,
                          hint=M_("give {option} a shorter or another path", option=option)) from None
    for source in inputs:
        source = Path(os.path.realpath(source))
        if target == source or source in target.parents:
            where = N_("the profile itself") if target == source else N_("inside the profile")
            raise OutputError(M_("is {where} ({source}); advisor never writes into what it reads", where=where,
                                 source=source), path=target,
                              hint=M_("give {option} a path outside the profile", option=option))
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(N_("is a folder, not a file"), path=target, hint=M_("give {option} a file name", option=option))
    if mode is not None and not stat.S_ISREG(mode):  # renaming a file over it would replace the device itself
        raise OutputError(N_("is not a regular file (a device, FIFO or socket); advisor never replaces one, even with "
                             "--force"), path=target, hint=M_("give {option} the name of a file", option=option))
    if not target.parent.is_dir():
        raise OutputError(N_("folder does not exist"), path=target.parent,
                          hint=M_("create it first or choose another {option}", option=option))
    if os.path.lexists(target) and not force and not _is_ours(target, is_ours):
        raise OutputError(M_("exists and is not {what} written by advisor; it was left untouched", what=what), path=target,
                          hint=M_("choose another {option}, or add --force to replace it", option=option))
    return target


def _os_reason(exc: OSError) -> str:
    """What an OSError about a path says, in words (the name too long: how long, and what the limit is)."""
    if exc.errno == errno.ENAMETOOLONG:
        return too_long(exc.filename or "") or N_("the name is too long for the file system")
    return M_("cannot use this path: {reason}", reason=exc.strerror or str(exc))


def _is_ours(target: Path, is_ours: Callable[[Path], bool]) -> bool:
    try:
        return target.is_file() and (target.stat().st_size == 0 or is_ours(target))
    except OSError:
        return False


def head_contains(path: Path, marker: bytes, size: int = 4096) -> bool:
    """True when ``marker`` occurs in the first ``size`` bytes of ``path``."""
    with path.open("rb") as handle:
        return marker in handle.read(size)


def is_json_document(path: Path) -> bool:
    """True when ``path`` is a JSON document of this tool (``"schema": "opprof-advisor/..."`` near its top)."""
    return head_contains(path, b'"schema": "opprof-advisor/', size=256)


def tail_contains(path: Path, marker: bytes, size: int = 4096) -> bool:
    """True when ``marker`` occurs in the last ``size`` bytes of ``path``."""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - size))
        return marker in handle.read()


#: The temporary file's name keeps at most this many bytes of the target's, so that it and its SQLite journal
#: (``-journal``, ``-wal``) fit the 255 bytes a file name may have whatever the target's name.
TEMP_NAME_BYTES = 100


@contextmanager
def replacing(target: Path, *, before_replace: Callable[[], None] | None = None) -> Iterator[Path]:
    """A temporary path beside ``target``; renamed over ``target`` when the block ends without error.

    ``before_replace`` runs just before the rename (and may refuse it by raising). SIGTERM and SIGHUP end the
    block like Ctrl-C does: the temporary file is removed, then advisor exits (143 / 129).
    """
    with _signals_end_the_write():
        try:
            handle, name = tempfile.mkstemp(prefix=f".{_short(target.name)}.", suffix=".tmp", dir=target.parent)
        except OSError as exc:
            raise _cannot_write(target, exc) from exc
        os.close(handle)
        tmp = Path(name)
        try:
            yield tmp
            if before_replace is not None:
                before_replace()
            os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; an output is meant to be shared
            _sync(tmp)  # on disk before it replaces the target: after a crash, the old file or the whole new one
            os.replace(tmp, target)
        except OSError as exc:
            raise _cannot_write(target, exc) from exc
        finally:
            for leftover in (tmp, *(tmp.with_name(tmp.name + suffix) for suffix in ("-journal", "-wal", "-shm"))):
                leftover.unlink(missing_ok=True)


def _sync(path: Path) -> None:
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _short(name: str) -> str:
    """``name`` cut to TEMP_NAME_BYTES bytes of UTF-8 (whole characters; undecodable bytes of a path kept)."""
    raw = os.fsencode(name)
    if len(raw) <= TEMP_NAME_BYTES:
        return name
    return os.fsdecode(raw[:TEMP_NAME_BYTES].decode("utf-8", "ignore").encode("utf-8"))


class _Stopped(BaseException):
    """SIGTERM or SIGHUP arrived during a write (a BaseException, like KeyboardInterrupt: nothing catches it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def signals_raise(stopped: Callable[[int], BaseException], *, only_default: bool = False) -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise ``stopped(signum)`` in the main thread, so the block unwinds
    and cleans up; ``only_default``: take over only a signal left to its default action (an ignored one stays
    ignored, another handler stays in charge). Outside the main thread nothing changes (handlers belong to it)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # (the MCP server's calls run in other threads)
        return

    def stop(signum, frame):
        raise stopped(signum)

    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {signum: signal.signal(signum, stop) for signum in wanted
                if not only_default or signal.getsignal(signum) is signal.SIG_DFL}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def _signals_end_the_write() -> Iterator[None]:
    """While a file is written, SIGTERM and SIGHUP unwind the write (its temporary file removed), then exit
    with 128 + the signal's number, as a shell reports a process the signal ended."""
    try:
        with signals_raise(_Stopped):
            yield
    except _Stopped as stopped:
        raise SystemExit(128 + stopped.signum) from None


def write_text(target: Path, text: str, *, what: str, is_ours: Callable[[Path], bool], force: bool = False,
               inputs: Sequence[Path | str] = (), option: str = "--output") -> Path:
    """Write ``text`` to ``target`` under the three rules; return the path written."""
    target = check_target(target, what=what, is_ours=is_ours, force=force, inputs=inputs, option=option)
    with replacing(target) as tmp:
        with tmp.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(encodable(text, json_text=is_ours is is_json_document))
    return target


_UNENCODABLE = re.compile("[\ud800-\udfff]")


def encodable(text: str, *, json_text: bool = False) -> str:
    """``text`` as UTF-8 can hold it: a byte of a path that is not UTF-8 (kept by Python as a lone surrogate,
    ``os.fsdecode``) written ``\\xff``, as a shell would show it; any other lone surrogate as ``\\udXXX``.

    ``json_text``: ``text`` is JSON, where a lone surrogate can only be inside a string: written as the JSON
    escape ``\\udcff`` (valid JSON, read back as the same string).
    """
    if text.isascii() or not _UNENCODABLE.search(text):
        return text
    return _UNENCODABLE.sub(_json_escaped if json_text else _escaped, text)


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _json_escaped(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def _cannot_write(target: Path, exc: OSError) -> OutputError:
    if exc.errno == errno.ENAMETOOLONG:  # the temporary file's name, beside a path that just fits
        return OutputError(N_("the path is too long for the file system to write a file beside it"), path=target,
                           hint=N_("choose a shorter path"))
    return OutputError(f"cannot write: {exc.strerror or exc}", path=target,
                       hint="choose a writable place with enough free space")


def current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
