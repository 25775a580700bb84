"""SQLite files advisor owns: read-only connections, the inter-process lock, the journals beside a file."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import KnowledgeBaseError, StoreNotWritable
from filelock import FileLock
from filelock import Timeout

LOCK_TIMEOUT_S = 120.0
#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"

def connect_readonly(db_path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    # Never opened for writing: readers must not change the live index (a kill in the middle of a
    # write would leave a journal that every later read-only open trips over).
    if not immutable:
        odd = odd_journal(db_path)
        if odd is not None:
            raise sqlite3.OperationalError(f"{odd.name} beside it is not a regular file")
    flags = "?mode=ro&immutable=1" if immutable else "?mode=ro"
    return sqlite3.connect(f"{db_path.resolve().as_uri()}{flags}", uri=True)


def table_names(db_path: Path) -> set[str]:
    """The tables of the SQLite file at ``db_path`` (opened read-only, immutable); empty when it is not one."""
    try:
        conn = connect_readonly(db_path, immutable=True)
        try:
            return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.Error:
        return set()


JOURNAL_SUFFIXES = ("-journal", "-wal", "-shm")


def journals(db_path: Path) -> list[Path]:
    """The SQLite journal files beside ``db_path``."""
    sides = (db_path.with_name(db_path.name + suffix) for suffix in JOURNAL_SUFFIXES)
    return [side for side in sides if os.path.lexists(side)]


def odd_journal(db_path: Path) -> Path | None:
    """A journal beside ``db_path`` that is not a regular file: a FIFO, device, folder or link (SQLite would wait
    on a FIFO for good, and roll a link's target back into the database), or None."""
    for side in journals(db_path):
        try:
            mode = os.lstat(side).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            return side
    return None


def merge_journals(db_path: Path, *, timeout: float = 1.0) -> None:
    """Let SQLite settle the journals beside ``db_path``: a ``-wal``'s committed pages written into the file, a hot
    rollback journal rolled back; SQLite removes them when the last connection closes.

    For a file about to be replaced (an export): what the journals hold is part of the file, and a ``-wal``
    left beside the new file would be read as part of it. Opened for writing (a read-only connection can do
    neither); sqlite3.Error when another connection keeps it busy longer than ``timeout`` seconds.
    """
    odd = odd_journal(db_path)
    if odd is not None:
        raise sqlite3.OperationalError(f"{odd.name} beside it is not a regular file")
    conn = sqlite3.connect(db_path, timeout=timeout, isolation_level=None)
    try:
        conn.execute("select count(*) from sqlite_master").fetchone()  # rolls a hot journal back
        if conn.execute("pragma journal_mode").fetchone()[0] == "wal":
            busy = conn.execute("pragma wal_checkpoint(truncate)").fetchone()[0]
            if busy:
                raise sqlite3.OperationalError("database is locked")
    finally:
        conn.close()


def other_holders(path: Path) -> list[int]:
    """The ids of other processes that have ``path`` open (Linux: ``/proc/*/fd``); [] where that cannot be seen.

    A program that holds a file open keeps writing into the file it opened: renaming a new file over the
    path loses whatever it writes after (an SQLite connection in rollback mode holds no lock while idle, so
    SQLite itself cannot tell).
    """
    try:
        target = os.stat(path)
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    wanted = (target.st_dev, target.st_ino)
    me = str(os.getpid())
    found = []
    for pid in pids:
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # gone, or another user's (not visible without privileges)
            continue
        for fd in fds:
            try:
                info = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if (info.st_dev, info.st_ino) == wanted:
                found.append(int(pid))
                break
    return found


def remove_with_journals(path: Path) -> None:
    for name in (path.name, *(path.name + suffix for suffix in JOURNAL_SUFFIXES)):
        try:
            path.with_name(name).unlink(missing_ok=True)
        except OSError:
            pass  # left for the next build to remove


def make_parent(db_path: Path) -> None:
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreNotWritable(f"cannot create the index folder: {exc.strerror or exc}", path=db_path.parent,
                               hint="point --db or ADVISOR_DB at a writable location") from exc


_LOCKS: dict[str, Any] = {}


def file_lock(db_path: Path):
    """The inter-process lock that serialises builds and adds (re-entrant within one process)."""
    key = str(db_path.resolve())
    if key not in _LOCKS:
        _LOCKS[key] = FileLock(key + ".lock", timeout=LOCK_TIMEOUT_S)
    return _Locked(_LOCKS[key], db_path)


class _Locked:
    def __init__(self, lock, db_path: Path):
        self.lock = lock
        self.db_path = db_path

    def __enter__(self):
        try:
            self.lock.acquire()
        except Timeout:
            raise KnowledgeBaseError("the knowledge-base index is locked by another advisor process",
                                     path=self.db_path, hint="wait for it to finish, or remove the .lock file "
                                                             "if no advisor is running") from None
        except OSError as exc:  # read-only folder, no permission, a folder or a link at the lock path
            hint = ("remove that folder: advisor keeps its lock file there" if isinstance(exc, IsADirectoryError)
                    else "point --db or ADVISOR_DB at a file in a writable folder")
            reason = exc.strerror or str(exc)
            if exc.errno == errno.ELOOP:  # the lock is opened without following a link (filelock's O_NOFOLLOW)
                reason, hint = "it is a symbolic link, which advisor never follows", "remove that link"
            raise StoreNotWritable(f"cannot create the lock file: {reason}", path=self.lock.lock_file,
                                   hint=hint) from None
        return self

    def __exit__(self, *exc_info):
        self.lock.release()
        return False

    def try_acquire(self) -> bool:
        """Take the lock only if that needs no waiting (and is possible at all)."""
        try:
            self.lock.acquire(timeout=0)
        except (Timeout, OSError):
            return False
        return True

    def release(self) -> None:
        self.lock.release()
