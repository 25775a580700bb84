"""The user KB folder's files that `advisor add` and `remove` write: checked, copied atomically, restored on failure.

Every write is a temporary file then ``os.replace``; a failed add or remove puts back the bytes
each file had, so the KB folder and its index never disagree.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from opprof_advisor.core.errors import KnowledgeBaseError, StoreNotWritable
from opprof_advisor.core.sidefile import read_bytes
import tempfile


def check_entry_file(path: Path) -> None:
    """Raise KnowledgeBaseError unless ``path`` is a regular ``.md`` file (never wait on a FIFO)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise KnowledgeBaseError("no such file", path=path, hint="give the path of a markdown entry") from None
    except OSError as exc:  # a name too long, a link loop, no permission
        raise KnowledgeBaseError(f"cannot read: {exc.strerror or exc}", path=path,
                                 hint="give the path of a markdown entry") from None
    if stat.S_ISDIR(mode):
        raise KnowledgeBaseError("is a folder", path=path, hint="give the path of one markdown entry (FILE.md)")
    if not stat.S_ISREG(mode):
        raise KnowledgeBaseError("not a regular file (a FIFO, device or socket)", path=path,
                                 hint="give the path of a markdown entry")
    if path.suffix.lower() != ".md":
        raise KnowledgeBaseError("not a markdown file", path=path, hint="KB entries are .md files")


class _Link(str):
    """What a symbolic link in the user KB pointed to (put back as the link, not as a copy of the file)."""


def _read_copies(user_dir: Path, entry_id: str, target: Path) -> dict[Path, bytes | _Link]:
    """The current bytes (or link) of every user-KB file an add or a remove of ``entry_id`` may replace or remove."""
    found: dict[Path, bytes | _Link] = {}
    for path in {target, *user_dir.glob(f"*/{entry_id}.md")}:
        try:
            found[path] = _Link(os.readlink(path)) if path.is_symlink() else read_bytes(path)
        except (OSError, ValueError):  # missing, or not a regular file (never waited on)
            continue
    return found


def _restore_copies(previous: dict[Path, bytes | _Link], target: Path) -> None:
    try:
        if target not in previous:
            target.unlink(missing_ok=True)
        for path, data in previous.items():
            if isinstance(data, _Link):
                if not path.is_symlink() or os.readlink(path) != data:
                    path.unlink(missing_ok=True)
                    os.symlink(data, path)
            elif path.is_symlink() or not path.is_file() or path.read_bytes() != data:
                _write_atomically(path, data)
    except (OSError, KnowledgeBaseError):
        pass  # best effort: the error being raised says what failed


def _copy_atomically(source: Path, target: Path) -> Path:
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise KnowledgeBaseError(f"cannot read the entry: {exc.strerror or exc}", path=source) from exc
    _write_atomically(target, data)
    return target


def _write_atomically(target: Path, data: bytes) -> None:
    tmp_name = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_name, target)
    except OSError as exc:
        if tmp_name is not None:
            Path(tmp_name).unlink(missing_ok=True)
        raise StoreNotWritable(f"cannot copy the entry into the user KB: {exc.strerror or exc}", path=target,
                               hint="check that ADVISOR_HOME is writable") from exc


def _remove_other_copies(user_dir: Path, entry_id: str, keep: Path) -> None:
    # With --replace the kind may change; the old copy lives in another kind's folder.
    for other in user_dir.glob(f"*/{entry_id}.md"):
        if os.path.realpath(other) != os.path.realpath(keep):  # (realpath: a link loop is no error)
            other.unlink()
