"""SQLite files advisor owns: read-only connections, the inter-process lock, the journals beside a file."""

from __future__ import annotations

import os
import sqlite3
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
        except OSError as exc:  # read-only folder, no permission, a folder at the lock path
            hint = ("remove that folder: advisor keeps its lock file there" if isinstance(exc, IsADirectoryError)
                    else "point --db or ADVISOR_DB at a file in a writable folder")
            raise StoreNotWritable(f"cannot create the lock file: {exc.strerror or exc}", path=self.lock.lock_file,
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
