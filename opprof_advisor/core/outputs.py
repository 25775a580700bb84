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

import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from opprof_advisor.core.errors import OutputError
from opprof_advisor.core.i18n import M_, N_


def check_target(target: Path | str, *, what: str, is_ours: Callable[[Path], bool], force: bool = False,
                 inputs: Sequence[Path | str] = (), option: str = "--output") -> Path:
    """The absolute path to write ``what`` to; raise OutputError when rules 2 or 3 (above) forbid it."""
    target = Path(os.path.realpath(Path(target).expanduser()))  # through a link: the file it names
    for source in inputs:
        source = Path(os.path.realpath(source))
        if target == source or source in target.parents:
            where = N_("the profile itself") if target == source else N_("inside the profile")
            raise OutputError(M_("is {where} ({source}); advisor never writes into what it reads", where=where,
                                 source=source), path=target,
                              hint=M_("give {option} a path outside the profile", option=option))
    if target.is_dir():
        raise OutputError(N_("is a folder, not a file"), path=target, hint=M_("give {option} a file name", option=option))
    if not target.parent.is_dir():
        raise OutputError(N_("folder does not exist"), path=target.parent,
                          hint=M_("create it first or choose another {option}", option=option))
    if os.path.lexists(target) and not force and not _is_ours(target, is_ours):
        raise OutputError(M_("exists and is not {what} written by advisor; it was left untouched", what=what), path=target,
                          hint=M_("choose another {option}, or add --force to replace it", option=option))
    return target


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


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target``; renamed over ``target`` when the block ends without error."""
    try:
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _cannot_write(target, exc) from exc
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; an output is meant to be shared
        os.replace(tmp, target)
    except OSError as exc:
        raise _cannot_write(target, exc) from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            leftover.unlink(missing_ok=True)


def write_text(target: Path, text: str, *, what: str, is_ours: Callable[[Path], bool], force: bool = False,
               inputs: Sequence[Path | str] = (), option: str = "--output") -> Path:
    """Write ``text`` to ``target`` under the three rules; return the path written."""
    target = check_target(target, what=what, is_ours=is_ours, force=force, inputs=inputs, option=option)
    with replacing(target) as tmp:
        with tmp.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    return target


def _cannot_write(target: Path, exc: OSError) -> OutputError:
    return OutputError(f"cannot write: {exc.strerror or exc}", path=target,
                       hint="choose a writable place with enough free space")


def current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
