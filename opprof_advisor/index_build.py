"""Writing the KB index file: under a lock, into a temporary copy that replaces the index atomically.

An interrupted build leaves the previous index usable; a journal left by a killed writer is
cleared under the lock; a damaged file at the index path is kept aside, another program's database
is never written. Parsing happens only for new and changed KB files (``files`` rows keyed on path
and content hash); FTS5 is kept in sync by the triggers of ``migrations.m002_full_text_search``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from opprof_advisor.errors import KnowledgeBaseError, Problem, StoreNotWritable
from opprof_advisor.kb_search_index import fill_search_tables
from opprof_advisor.migrations import index_migrations
from opprof_advisor.models import Entry, Gain
from opprof_advisor.sqlite_files import (
    SQLITE_HEADER, connect_readonly, file_lock, journals, make_parent, remove_with_journals,
)
from opprof_advisor.store import (
    APP_ID, BUILD_VERSION, FRESH, Index, KbSource, SourceFile, _entry_to_row, _freshness, _open_snapshot,
    _sources_json, _warn, content_hash, file_digests, scan_files, stat_signature,
)

def build(db: Path, sources: Sequence[KbSource], *, rebuild: bool = False) -> Index:
    """Bring the index at ``db`` up to date with ``sources``; ``rebuild`` starts from an empty file."""
    check_index_target(db)  # refuse another program's file before writing anything beside it (the lock)
    make_parent(db)
    with file_lock(db):
        _remove_stale_temp_files(db)
        damaged = check_index_target(db) == "damaged"
        if damaged:
            _set_aside(db)
        # Nothing of ours writes the live file, so a journal beside it was left by a writer that was
        # killed: the file cannot be trusted (and every read-only open fails on a hot journal).
        journal_left = _remove_journals(db)
        scanned_at = time.time_ns()
        folders: list[list] = []
        files = scan_files(sources, folders)
        snapshot = None if journal_left else _open_snapshot(db)
        if snapshot is not None and not rebuild and _freshness(snapshot[1], sources, files) == FRESH:
            return Index(db, *snapshot)
        if snapshot is not None:
            snapshot[0].close()
        write_index(db, sources, files, scanned_at, base=None if rebuild or snapshot is None else db, folders=folders)
        return Index(db, *(_open_snapshot(db) or _unreadable(db)))


def check_index_target(db_path: Path) -> str:
    """What lies at the index path: "missing" (or empty), "ours", or "damaged" (kept aside, then rebuilt).

    Raise KnowledgeBaseError for another program's SQLite database (a profile DB, the outcomes
    database, a user's own file given to --db by mistake): it is never renamed or written.
    """
    try:
        if not db_path.is_file() or db_path.stat().st_size == 0:
            return "missing"
        with db_path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError:
        return "missing"  # not a regular file: writing there fails with a clear line
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
    import tempfile

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
    db = sqlite_utils.Database(tmp)
    try:
        index_migrations().apply(db)
        digests = file_digests(files)
        with db.atomic():
            _sync_files(db, files, digests)
            problems = _sync_entries(db, sources)
            _write_meta(db, sources, files, digests, problems, scanned_at, folders)
            fill_search_tables(db.conn)
    finally:
        db.close()


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


def _sync_files(db, files: Sequence[SourceFile], digests: dict[str, str]) -> None:
    """Parse new and changed files into the ``files`` table; drop rows of removed files."""
    from opprof_advisor.kb import entry_too_big, validate_file

    known = {row["path"]: row["sha256"] for row in db.query("select path, sha256 from files")}
    current = {f.path for f in files}
    for path in set(known) - current:
        db["files"].delete(path)
    for f in files:
        digest = digests[f.path]
        if known.get(f.path) == digest:
            continue
        path = Path(f.path)
        too_big = entry_too_big(path, f.size)  # not even parsed
        entry, problems = (None, [too_big]) if too_big else validate_file(path, origin=f.origin)
        db["files"].upsert({
            "path": f.path, "source": f.source, "origin": f.origin, "sha256": digest,
            "entry_id": entry.id if entry else None,
            "entry": json.dumps(entry.to_dict(), ensure_ascii=False) if entry else None,
            "problems": json.dumps([[p.line, p.message] for p in problems], ensure_ascii=False) if problems else None,
        }, pk="path")


def _sync_entries(db, sources: Sequence[KbSource]) -> list[Problem]:
    """Make ``entries`` hold the winning entry per id (later sources win); upsert only what changed."""
    from opprof_advisor.kb import check_related

    chosen: dict[str, tuple[int, Entry]] = {}
    problems: list[Problem] = []
    rows = db.query("select path, source, entry from files where entry is not null order by source, path")
    for row in rows:
        data = json.loads(row["entry"])
        data["gain"] = Gain(**data["gain"]) if data["gain"] else None
        entry = Entry(**data)
        previous = chosen.get(entry.id)
        if previous and previous[0] == row["source"]:
            problems.append(Problem(entry.path, 1, f"duplicate id {entry.id!r} (also {previous[1].path}); not indexed"))
            continue
        chosen[entry.id] = (row["source"], entry)
    entries = [entry for _, entry in chosen.values()]
    problems.extend(check_related(entries))
    wanted = {entry.id: _entry_to_row(entry) for entry in entries}
    have = {row["id"]: row["row_hash"] for row in db.query("select id, row_hash from entries")}
    for entry_id in set(have) - set(wanted):
        db["entries"].delete(entry_id)
    changed = [row for entry_id, row in sorted(wanted.items()) if have.get(entry_id) != row["row_hash"]]
    if changed:
        db["entries"].upsert_all(changed, pk="id")
    ordered = sorted(entries, key=lambda e: e.id)
    summaries = [[e.id, e.kind, e.title, e.operators, e.symptoms, e.tags, e.models] for e in ordered]
    db["meta"].upsert({"key": "summaries", "value": json.dumps(summaries, ensure_ascii=False)}, pk="key")
    return problems


def _write_meta(db, sources, files, digests, problems: list[Problem], scanned_at: int, folders: list[list]) -> None:
    db["meta"].upsert_all([
        {"key": "file_count", "value": str(len(files))},
        {"key": "folders", "value": json.dumps(folders)},
        {"key": "app", "value": APP_ID},
        {"key": "build_version", "value": BUILD_VERSION},
        {"key": "sources", "value": _sources_json(sources)},
        {"key": "stat_signature", "value": stat_signature(sources, files)},
        {"key": "signed_at_ns", "value": str(scanned_at)},
        {"key": "content_hash", "value": content_hash(files, digests)},
        {"key": "problems", "value": json.dumps([[p.path, p.line, p.message] for p in problems], ensure_ascii=False)},
    ], pk="key")


def _unreadable(db_path: Path) -> tuple[sqlite3.Connection, dict[str, str]]:
    raise KnowledgeBaseError("the index just built cannot be read back", path=db_path,
                             hint="check the disk and run `advisor kb build --rebuild`")


def _remove_stale_temp_files(db_path: Path) -> None:
    # Called under the lock: a temporary file present now belongs to a build that was interrupted.
    for stale in db_path.parent.glob(f".{db_path.name}.*.tmp"):
        remove_with_journals(stale)
