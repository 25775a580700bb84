"""Writing the KB index file, under a lock: a build into a temporary copy that replaces the index atomically,
an add or a remove inside one transaction of the live file.

An interrupted build leaves the previous index usable; an add killed inside its transaction
leaves a hot journal that the next build rolls back under the lock (a journal that cannot be
trusted means a build from the KB files); a damaged file at the index path is kept aside, another
program's database is never written. Parsing happens only for new and changed KB files
(``index_sync``); the FTS5 tables are kept in sync by the triggers of ``migrations`` m002 and m007.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Sequence
from pathlib import Path

from opprof_advisor.core.errors import KnowledgeBaseError, StoreNotWritable
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.kb.migrations import index_migrations
from opprof_advisor.core.sqlite_files import (
    SQLITE_HEADER, connect_readonly, file_lock, journals, make_parent, odd_journal, remove_with_journals,
)
from opprof_advisor.kb.manifest import (
    APP_ID, FRESH, KbSource, SourceFile, _freshness, _open_snapshot, _warn, scan_files,
)
from opprof_advisor.kb.rows import Index
from opprof_advisor.kb.index_sync import sync_moved_folders, sync_rows
import tempfile

def build(db: Path, sources: Sequence[KbSource], *, rebuild: bool = False, in_place: bool = False) -> Index:
    """Bring the index at ``db`` up to date with ``sources``; ``rebuild`` starts from an empty file.

    ``in_place`` (for `advisor add` and `remove`, which have just changed a KB file) updates the
    live file inside one transaction instead of writing a new copy (see ``_write_in_place``), and
    skips the freshness check: the sync compares every file's stats with its row anyway.
    """
    check_index_target(db)  # refuse another program's file before writing anything beside it (the lock)
    make_parent(db)
    with file_lock(db):
        _remove_stale_temp_files(db)
        _refuse_odd_journal(db)
        damaged = check_index_target(db) == "damaged"
        if damaged:
            _set_aside(db)
        # A journal beside the live file was left by an add killed inside its transaction (or by
        # another program): SQLite rolls it back when the file is opened for writing, here, under
        # the lock. Any doubt about the result and the file is not trusted: built again from the KB.
        journal_left = _roll_back_journal(db)
        if in_place and not (rebuild or journal_left or damaged):
            index = _update_moved_folders(db, sources)
            if index is not None:
                return index
        scanned_at = time.time_ns()
        folders: list[list] = []
        files = scan_files(sources, folders)
        snapshot = None if journal_left else _open_snapshot(db)
        if snapshot is not None and not (rebuild or in_place) and _freshness(snapshot[1], sources, files,
                                                                              snapshot[0]) == FRESH:
            return Index(db, *snapshot)
        if snapshot is not None:
            snapshot[0].close()
        base = None if rebuild or snapshot is None else db
        if not (in_place and base is not None and _write_in_place(db, sources, files, scanned_at, folders)):
            write_index(db, sources, files, scanned_at, base=base, folders=folders)
        return Index(db, *(_open_snapshot(db) or _unreadable(db)))


#: How long an in-place update waits for readers that hold a snapshot of the index before it writes a new file instead.
IN_PLACE_WAIT_S = 1.0


def _write_in_place(db: Path, sources, files, scanned_at: int, folders: list[list]) -> bool:
    """Update the live index inside one SQLite transaction; False when readers kept it busy (nothing changed).

    For `advisor add` on a big KB, where copying the whole index would cost seconds. The rollback
    journal keeps the file whole if the process is killed (the next build rolls it back, see
    ``_roll_back_journal``); readers keep the snapshot they opened (their read transaction) and the
    commit waits for them up to IN_PLACE_WAIT_S, after which the caller writes a new file as any build.
    """
    return _in_transaction(db, lambda conn: sync_rows(conn, sources, files, scanned_at, folders) or True)


def _update_moved_folders(db: Path, sources) -> Index | None:
    """An add's or a remove's update of a big KB, in place, listing only the folders that moved
    (index_sync.sync_moved_folders); None when the manifest cannot be trusted or readers keep the file busy."""
    snapshot = _open_snapshot(db)  # a valid index of this version (else a build starts from the KB files)
    if snapshot is None:
        return None
    snapshot[0].close()
    done = _in_transaction(db, lambda conn: sync_moved_folders(conn, sources))
    return Index(db, *(_open_snapshot(db) or _unreadable(db))) if done else None


def _in_transaction(db: Path, sync) -> bool:
    """Run ``sync(conn)`` (-> done) in one transaction of the live file; False when readers kept it busy past
    IN_PLACE_WAIT_S or ``sync`` declined (nothing changed)."""
    try:
        conn = sqlite3.connect(db, timeout=IN_PLACE_WAIT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise _not_writable(db, str(exc)) from exc
    try:
        conn.execute("begin immediate")
        try:
            if not sync(conn):
                conn.execute("rollback")
                return False
            conn.execute("commit")
        except BaseException:
            if conn.in_transaction:
                conn.execute("rollback")
            raise
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return False
        raise _not_writable(db, str(exc)) from exc
    finally:
        conn.close()
    return True


def check_index_target(db_path: Path) -> str:
    """What lies at the index path: "missing" (or empty), "ours", or "damaged" (kept aside, then rebuilt).

    Raise KnowledgeBaseError for another program's SQLite database (a profile DB, the outcomes
    database, a user's own file given to --db by mistake): it is never renamed or written; and for
    anything but a regular file (a link, a folder, a device, a FIFO): a build replaces the file at
    the index path, so what is there must be a file advisor wrote, or nothing.
    """
    info = index_path_stat(db_path)
    if info is None or info.st_size == 0:
        return "missing"
    try:
        with db_path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreNotWritable(M_("cannot read the index: {reason}", reason=exc.strerror or str(exc)), path=db_path,
                               hint=N_("point --db or ADVISOR_DB at a file advisor can read and write")) from None
    if header != SQLITE_HEADER:
        return "damaged"
    try:
        # immutable: readable even with a journal left beside it by a killed writer
        conn = connect_readonly(db_path, immutable=True)
        try:
            tables = [row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")]
            app = conn.execute("select value from meta where key = 'app'").fetchone() if "meta" in tables else None
        finally:
            conn.close()
    except sqlite3.Error:
        return "damaged"
    if app and app[0] == APP_ID:
        return "ours"
    if not tables and not journals(db_path):
        return "missing"  # an empty database
    raise _foreign_database(db_path, tables)  # (no tables but a journal: the data may all be in its -wal)


def index_path_stat(db_path: Path) -> os.stat_result | None:
    """The stat of the regular file at the index path, None when there is none; KnowledgeBaseError for a path
    that names anything else (the link itself is looked at, not what it points to)."""
    try:
        info = os.lstat(db_path)
    except (FileNotFoundError, NotADirectoryError):  # (a file where a folder should be: creating it says so)
        return None
    except OSError as exc:  # a name too long, no permission on the folder
        raise StoreNotWritable(M_("cannot use this index path: {reason}", reason=exc.strerror or str(exc)),
                               path=db_path, hint=N_("point --db or ADVISOR_DB at a file in a writable folder")) from None
    if stat.S_ISREG(info.st_mode):
        return info
    if stat.S_ISLNK(info.st_mode):
        what = M_("is a symbolic link (to {target}); a rebuild would replace the link with a new file",
                  target=_link_target(db_path))
    elif stat.S_ISDIR(info.st_mode):
        what = N_("is a folder, not an index file")
    else:
        what = N_("is not a regular file (a device, FIFO or socket); advisor never replaces one")
    raise KnowledgeBaseError(what, path=db_path,
                             hint=N_("point --db or ADVISOR_DB at a new file name, or at an index advisor wrote"))


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _foreign_database(db_path: Path, tables: list[str]) -> KnowledgeBaseError:
    if "outcomes" in tables:
        what = "the database of recorded outcomes"
        hint = f"give --db the index it belongs to ({db_path.name.replace('.outcomes.db', '')}.sqlite or advisor.db)"
    else:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        what = f"an SQLite database of another program (tables {shown})"
        hint = "point --db or ADVISOR_DB at a new file or at an advisor index"
    return KnowledgeBaseError(f"not an opprof-advisor index: {what}; it was left untouched", path=db_path,
                              hint=hint)


def _set_aside(db_path: Path) -> Path:
    """Keep a corrupt file at the index path (and its journals) under a new name instead of overwriting it."""
    kept = db_path.with_name(f"{db_path.name}.not-an-index-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        os.replace(db_path, kept)
        for side in journals(db_path):  # a journal left here would be applied to the new index
            os.replace(side, kept.with_name(kept.name + side.name[len(db_path.name):]))
    except OSError as exc:
        raise StoreNotWritable(f"cannot move the damaged index aside: {exc.strerror or exc}", path=db_path,
                               hint="point --db or ADVISOR_DB at a writable file") from exc
    _warn(f"{db_path} was not an opprof-advisor index (corrupt or another program's file); kept it as {kept.name} and"
          " built a new index")
    return kept


def _refuse_odd_journal(db_path: Path) -> None:
    """KnowledgeBaseError when a journal beside the index is not a regular file (SQLite would wait on a FIFO for
    good, or roll what a link points to into the index); it was not advisor's: it is left as it is."""
    odd = odd_journal(db_path)
    if odd is not None:
        raise KnowledgeBaseError(M_("{journal} beside the index is not a regular file (a FIFO, device, folder or "
                                    "link); SQLite would read it as the index's journal", journal=odd.name),
                                 path=db_path, hint=N_("remove it, or point --db or ADVISOR_DB at another file"))


def _roll_back_journal(db_path: Path) -> bool:
    """Let SQLite roll back a hot journal beside the index; True when the file cannot be trusted after all."""
    if not journals(db_path):
        return False
    try:
        conn = sqlite3.connect(db_path)
        try:
            ok = conn.execute("pragma quick_check").fetchone() == ("ok",)
        finally:
            conn.close()
    except sqlite3.Error:
        ok = False
    return _remove_journals(db_path) or not ok


def _remove_journals(db_path: Path) -> bool:
    """Delete SQLite journals left beside the index (under the lock); True when there was one."""
    found = False
    for side in journals(db_path):
        try:
            side.unlink()
            found = True
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreNotWritable(f"cannot remove a journal left beside the index: {exc.strerror or exc}",
                                   path=side, hint="remove it by hand, or point ADVISOR_DB at a writable file") from exc
    return found


def write_index(db_path: Path, sources: Sequence[KbSource], files: Sequence[SourceFile], scanned_at: int,
                base: Path | None, folders: list[list] | None = None) -> None:
    """Write the index for ``files`` into a temporary copy of ``base`` (or an empty file), then replace
    ``db_path`` with it. ``folders`` is the manifest scan_files listed (none: the index keeps none)."""
    try:
        handle, tmp_name = tempfile.mkstemp(dir=db_path.parent, prefix=f".{db_path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _not_writable(db_path, exc.strerror or str(exc)) from exc
    os.close(handle)
    tmp = Path(tmp_name)
    try:
        _fill_index(tmp, sources, files, scanned_at, base, folders or [])
        os.replace(tmp, db_path)
    except OSError as exc:
        raise _not_writable(db_path, exc.strerror or str(exc)) from exc
    except sqlite3.OperationalError as exc:  # disk full, read-only folder, cannot open the file
        raise _not_writable(db_path, str(exc)) from exc
    finally:
        remove_with_journals(tmp)


def _fill_index(tmp: Path, sources, files, scanned_at: int, base: Path | None, folders: list[list]) -> None:
    import sqlite_utils

    if base is not None and not _copy_database(base, tmp):
        tmp.write_bytes(b"")  # the old index could not be copied: build from the KB files alone
    db = sqlite_utils.Database(sqlite3.connect(tmp))
    try:
        # A temporary file that is thrown away on any failure needs no journal; it is synced once, below.
        db.execute("pragma journal_mode = off")
        db.execute("pragma synchronous = off")
        db.execute("pragma cache_size = -131072")  # 128 MiB: a big KB's rows are written without rereading pages
        index_migrations().apply(db)
        with db.atomic():
            sync_rows(db.conn, sources, files, scanned_at, folders)
    finally:
        db.close()
    with open(tmp, "rb+") as handle:
        os.fsync(handle.fileno())  # on disk before it replaces the index


def _not_writable(db_path: Path, reason: str) -> StoreNotWritable:
    return StoreNotWritable(f"cannot write the knowledge-base index: {reason}", path=db_path,
                            hint="free some disk space, or point --db or ADVISOR_DB at a file in a writable folder")


def _copy_database(source: Path, target: Path) -> bool:
    """Copy ``source`` into ``target`` with the backup API; False when ``source`` cannot be read."""
    # The backup API copies a consistent snapshot even while another process reads the file.
    try:
        src = connect_readonly(source)
    except sqlite3.Error:
        return False
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN):
            raise  # the target side: cannot write here
        return False
    except sqlite3.DatabaseError:
        return False
    finally:
        dst.close()
        src.close()
    return True


def _unreadable(db_path: Path) -> tuple[sqlite3.Connection, dict[str, str]]:
    raise KnowledgeBaseError("the index just built cannot be read back", path=db_path,
                             hint="check the disk and run `advisor kb build --rebuild`")


def _remove_stale_temp_files(db_path: Path) -> None:
    # Called under the lock: a temporary file present now belongs to a build that was interrupted.
    for stale in db_path.parent.glob(f".{db_path.name}.*.tmp"):
        remove_with_journals(stale)
