"""The SQLite index of the knowledge base: build it from markdown, keep it fresh, read it fast.

The markdown under the built-in and user KB folders is the source of truth; the index is a build
artefact. Building (sqlite-utils, named migrations, FTS5 kept in sync by triggers) happens under a
file lock into a temporary file that replaces the index atomically, so an interrupted build leaves
the previous index usable. It is incremental: files are keyed on their path and content hash and
only changed files are parsed again. Reading uses the stdlib ``sqlite3`` module only, because
``advisor search`` must start fast and ``import sqlite_utils`` alone costs ~100 ms.

Freshness: the index stores a signature of the KB files' sizes and mtimes and a content hash.
Stats equal → fresh; stats changed → hash the files; hash changed → rebuild.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opprof_advisor import paths
from opprof_advisor.errors import (
    EntryExists, EntryNotFound, EntryValidationError, KnowledgeBaseError, OutcomesError, Problem, StoreNotWritable,
)
from opprof_advisor.models import Entry, Gain

#: Bump when the loader's output for the same markdown changes: every index is then rebuilt. The
#: Entry fields are part of it, so a field added to models.Entry also forces a rebuild (the index
#: caches parsed entries as JSON).
BUILD_VERSION = "2:" + ",".join(Entry.__dataclass_fields__)
#: Marks a database as ours; any other file at the index path is foreign and gets rebuilt.
APP_ID = "opprof-advisor/kb-index"
MIGRATION_SET = "opprof-advisor-index"
#: A file modified this close to the last signature may have changed within one mtime tick.
RACY_WINDOW_NS = 2_000_000_000
LOCK_TIMEOUT_S = 120.0

#: Columns of the full-text index, in order, and their bm25 weights.
FTS_COLUMNS: tuple[tuple[str, float], ...] = (
    ("id", 6.0), ("kind", 1.0), ("title", 6.0), ("summary", 2.0), ("operators", 5.0),
    ("symptoms", 2.0), ("tags", 3.0), ("models", 2.0), ("body", 1.0),
)
_LIST_COLUMNS = ("operators", "symptoms", "tags", "models", "hardware", "sources", "related", "requires")


# ---------------------------------------------------------------------------------------------
# Schema: named migrations (applied by sqlite_utils.Migrations when an index is built)
# ---------------------------------------------------------------------------------------------


def m001_create_tables(db) -> None:
    """Tables for build metadata, one row per source file, and one row per entry."""
    db["meta"].create({"key": str, "value": str}, pk="key", not_null={"value"})
    db["files"].create(
        {"path": str, "source": int, "origin": str, "sha256": str, "entry_id": str, "entry": str, "problems": str},
        pk="path", not_null={"source", "origin", "sha256"},
    )
    db["entries"].create(
        {
            "id": str, "kind": str, "title": str, "summary": str, "operators": str, "symptoms": str, "tags": str,
            "models": str, "hardware": str, "cann": str, "gain": str, "evidence": str, "sources": str,
            "related": str, "op_mix": str, "body": str, "path": str, "origin": str, "row_hash": str,
        },
        pk="id", not_null={"kind", "title", "row_hash"},
    )
    db["entries"].create_index(["kind"])


def m002_full_text_search(db) -> None:
    """FTS5 over the searchable columns, kept in sync with ``entries`` by triggers."""
    db["entries"].enable_fts([name for name, _ in FTS_COLUMNS], fts_version="FTS5", create_triggers=True,
                             tokenize="porter")


def m003_entry_requires(db) -> None:
    """The entry's ``requires:`` preconditions (JSON list of one-key mappings)."""
    db["entries"].add_column("requires", str)


def m004_entry_zh(db) -> None:
    """The entry's Chinese title, summary and first step (JSON mapping)."""
    db["entries"].add_column("zh", str)


MIGRATION_STEPS = (m001_create_tables, m002_full_text_search, m003_entry_requires, m004_entry_zh)
MIGRATION_NAMES = tuple(step.__name__ for step in MIGRATION_STEPS)


def migrations():
    """The ``sqlite_utils.Migrations`` set that creates the index schema."""
    from sqlite_utils import Migrations

    steps = Migrations(MIGRATION_SET)
    for step in MIGRATION_STEPS:
        steps()(step)
    return steps


# ---------------------------------------------------------------------------------------------
# Sources and freshness
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KbSource:
    """A folder of KB markdown. Later sources override earlier ones for the same id."""

    root: Path
    origin: str  # builtin | user


@dataclass(frozen=True)
class SourceFile:
    path: Path
    rel: str
    source: int  # index into the list of KbSource
    origin: str
    size: int
    mtime_ns: int


def kb_sources(kb_dirs: Sequence[Path | str] | None = None) -> list[KbSource]:
    """The KB folders to index: ``kb_dirs`` if given, else the built-in KB then the user KB."""
    user = paths.user_kb_dir()
    if kb_dirs is None:
        return [KbSource(paths.builtin_kb_dir(), "builtin"), KbSource(user, "user")]
    user_resolved = user.resolve()
    return [KbSource(Path(d), "user" if Path(d).resolve() == user_resolved else "builtin") for d in kb_dirs]


def scan_files(sources: Sequence[KbSource]) -> list[SourceFile]:
    """Every entry file of the sources with its size and mtime (no file is read)."""
    found: list[SourceFile] = []
    for number, source in enumerate(sources):
        _scan_folder(str(source.root), "", number, source.origin, found)
    return found


def _scan_folder(folder: str, prefix: str, number: int, origin: str, found: list[SourceFile]) -> None:
    # scandir + a hand-made relative path: this runs on every `advisor search`, for every KB file.
    try:
        items = sorted(os.scandir(folder), key=lambda item: item.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for item in items:
        name = item.name
        if name.startswith("."):
            continue
        if item.is_dir():
            _scan_folder(item.path, f"{prefix}{name}/", number, origin, found)
        elif name.endswith(".md") and name.lower() != "readme.md" and item.is_file():
            stat = item.stat()
            found.append(SourceFile(Path(item.path), prefix + name, number, origin, stat.st_size, stat.st_mtime_ns))


def stat_signature(sources: Sequence[KbSource], files: Sequence[SourceFile]) -> str:
    """Hash of the source folders and every file's path, size and mtime."""
    parts = [BUILD_VERSION, [str(s.root.resolve()) for s in sources],
             [(f.source, f.rel, f.size, f.mtime_ns) for f in files]]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def file_digests(files: Sequence[SourceFile]) -> dict[str, str]:
    """sha256 of each file's bytes, keyed by path."""
    return {str(f.path): hashlib.sha256(f.path.read_bytes()).hexdigest() for f in files}


def content_hash(files: Sequence[SourceFile], digests: dict[str, str]) -> str:
    """Hash of all sources' contents (and of the build version), independent of where they live."""
    hasher = hashlib.sha256(BUILD_VERSION.encode())
    for f in files:
        hasher.update(f"\0{f.source}\0{f.origin}\0{f.rel}\0{digests[str(f.path)]}".encode())
    return hasher.hexdigest()


def read_meta(db_path: Path) -> dict[str, str] | None:
    """The build metadata of an index, or None when it is missing, corrupt, foreign or outdated."""
    snapshot = _open_snapshot(db_path)
    if snapshot is None:
        return None
    snapshot[0].close()
    return snapshot[1]


#: Metadata every index of this build version has; one missing means the index is damaged.
_REQUIRED_META = ("app", "build_version", "sources", "stat_signature", "signed_at_ns", "content_hash")


def _open_snapshot(db_path: Path, *, immutable: bool = False) -> tuple[sqlite3.Connection, dict[str, str]] | None:
    """A read-only connection to a valid index and its metadata, read through that same connection.

    Holding the connection keeps the metadata and the rows consistent even if another process
    replaces the file meanwhile (the connection keeps reading the file it opened). ``immutable``
    reads the file as it is, ignoring a journal beside it (for a stale index that cannot be repaired).
    """
    if not db_path.is_file():
        return None
    conn = None
    try:
        conn = _connect_readonly(db_path, immutable=immutable)
        meta = dict(conn.execute("select key, value from meta where key != 'summaries'").fetchall())
        applied = [row[0] for row in conn.execute(
            "select name from _sqlite_migrations where migration_set = ? order by rowid", (MIGRATION_SET,))]
    except sqlite3.Error:
        if conn is not None:
            conn.close()
        return None
    valid = meta.get("app") == APP_ID and meta.get("build_version") == BUILD_VERSION
    valid = valid and all(key in meta for key in _REQUIRED_META)
    if not valid or tuple(applied) != MIGRATION_NAMES:  # foreign, damaged, or built by another schema version
        conn.close()
        return None
    return conn, meta


def _connect_readonly(db_path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    # Never opened for writing: readers must not change the live index (a kill in the middle of a
    # write would leave a journal that every later read-only open trips over).
    flags = "?mode=ro&immutable=1" if immutable else "?mode=ro"
    return sqlite3.connect(f"{db_path.resolve().as_uri()}{flags}", uri=True)


FRESH, SAME_CONTENT, STALE = "fresh", "same content", "stale"


def _freshness(meta: dict[str, str], sources, files) -> str:
    """FRESH when ``meta`` describes the current sources; SAME_CONTENT when only file stats moved; else STALE.

    A file modified within RACY_WINDOW_NS of the last signature may have changed without changing
    its size or mtime (coarse timestamps), so its content is hashed rather than trusted.
    """
    signature = stat_signature(sources, files)
    signed_at = int(meta.get("signed_at_ns", "0"))
    racy = any(f.mtime_ns >= signed_at - RACY_WINDOW_NS for f in files)
    if meta.get("stat_signature") == signature and not racy:
        return FRESH
    if meta.get("sources") != _sources_json(sources):
        return STALE
    if content_hash(files, file_digests(files)) != meta.get("content_hash"):
        return STALE
    return SAME_CONTENT  # e.g. touched, or checked out again


def _sources_json(sources: Sequence[KbSource]) -> str:
    return json.dumps([[str(s.root.resolve()), s.origin] for s in sources])


def _refresh_signature(db_path: Path, sources, files, scanned_at: int) -> None:
    """Record the new file stats so the next open need not hash the files; skipped when busy or read-only.

    Written like any build (temporary copy, then a rename), never into the live file.
    """
    lock = _lock(db_path)
    if not lock.try_acquire():
        return
    try:
        _write_index(db_path, sources, files, scanned_at, base=db_path)
    except KnowledgeBaseError:
        pass  # an optimisation only: the next open hashes the files again
    finally:
        lock.release()


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntrySummary:
    """The searchable fields of an entry, without its body."""

    id: str
    kind: str
    title: str
    operators: list[str]
    symptoms: list[str]
    tags: list[str]
    models: list[str]


class Index:
    """A read-only view of one built index file (a consistent snapshot while it is open)."""

    def __init__(self, db_path: Path, conn: sqlite3.Connection, meta: dict[str, str], *, immutable: bool = False):
        self.db_path = db_path
        self.content_hash: str = meta["content_hash"]
        self._meta = meta
        self._conn: sqlite3.Connection | None = conn
        self._immutable = immutable  # a stale index read as it is (see open_index)
        self._summaries: list[EntrySummary] | None = None

    def __repr__(self) -> str:
        return f"Index({str(self.db_path)!r}, content_hash={self.content_hash[:12]!r})"

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            if self._conn is None:
                self._conn = _connect_readonly(self.db_path, immutable=self._immutable)
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.db_path, str(exc)) from exc

    def close(self) -> None:
        """Close the connection (the next query reopens the file, which may be a newer build)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def entries(self, kind: str | None = None) -> list[Entry]:
        """All entries (of one kind if given), ordered by kind then id."""
        where, params = ("where kind = ?", (kind,)) if kind else ("", ())
        rows = self._query(f"select {_ENTRY_SELECT} from entries {where} order by kind, id", params)
        return [self._entry(row) for row in rows]

    def ids(self) -> list[str]:
        """Every entry id, sorted."""
        return [row[0] for row in self._query("select id from entries order by id")]

    def get(self, entry_id: str) -> Entry:
        """The entry with this id; raise EntryNotFound with close ids as suggestions."""
        rows = self._query(f"select {_ENTRY_SELECT} from entries where id = ?", (entry_id,))
        if rows:
            return self._entry(rows[0])
        raise EntryNotFound(entry_id, suggest_ids(entry_id, self.ids()))

    def _entry(self, row: tuple) -> Entry:
        try:
            return _row_to_entry(row)
        except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
            raise _damaged(self.db_path, f"entry {row[0]!r}: {exc}") from exc

    def summaries(self) -> list[EntrySummary]:
        """Id, kind, title, operators, symptoms, tags and models of every entry (for search), sorted by id.

        Read from one JSON document written at build time: decoding it once is several times faster
        than decoding the JSON columns of every row, which matters for `advisor search` on big KBs.
        """
        if self._summaries is None:
            rows = self._query("select value from meta where key = 'summaries'")
            try:
                self._summaries = [EntrySummary(*item) for item in json.loads(rows[0][0] if rows else "[]")]
            except (ValueError, TypeError) as exc:
                raise _damaged(self.db_path, f"the search summaries: {exc}") from exc
        return self._summaries

    def fts_scores(self, match: str, limit: int = 500) -> dict[str, float]:
        """bm25 of entries matching an FTS5 query (more negative is better), keyed by id."""
        weights = ", ".join(str(weight) for _, weight in FTS_COLUMNS)
        rows = self._query(
            f"select entries.id, bm25(entries_fts, {weights}) as rank from entries_fts "
            "join entries on entries.rowid = entries_fts.rowid where entries_fts match ? order by rank limit ?",
            (match, limit),
        )
        return {row[0]: row[1] for row in rows}

    def term_exists(self, match: str) -> bool:
        """True when an FTS5 query matches at least one entry."""
        return bool(self._query("select 1 from entries_fts where entries_fts match ? limit 1", (match,)))

    @property
    def problems(self) -> list[Problem]:
        """Problems found while building: invalid files (not indexed), duplicate ids, dangling related ids."""
        rows = self._query("select path, problems from files where problems is not null order by source, path")
        try:
            found = [Problem(path, line, message) for path, problems in rows for line, message in json.loads(problems)]
            found.extend(Problem(*item) for item in json.loads(self._meta.get("problems", "[]")))
        except (ValueError, TypeError) as exc:
            raise _damaged(self.db_path, f"the list of problems: {exc}") from exc
        return found

    @property
    def file_count(self) -> int:
        """Number of source files the index was built from."""
        return self._query("select count(*) from files")[0][0]


def _damaged(db_path: Path, detail: str) -> KnowledgeBaseError:
    return KnowledgeBaseError(f"the knowledge-base index is damaged ({detail})", path=db_path,
                              hint="run `advisor kb build --rebuild`, which builds it again from the KB files")


_ENTRY_COLUMNS = ("id", "kind", "title", "summary", "operators", "symptoms", "tags", "models", "hardware", "cann",
                  "gain", "evidence", "sources", "related", "requires", "zh", "op_mix", "body", "path", "origin")
_ENTRY_SELECT = ", ".join(_ENTRY_COLUMNS)


def _row_to_entry(row: tuple) -> Entry:
    values = dict(zip(_ENTRY_COLUMNS, row))
    for column in _LIST_COLUMNS:
        values[column] = json.loads(values[column] or "[]")
    values["op_mix"] = json.loads(values["op_mix"] or "{}")
    values["zh"] = json.loads(values["zh"] or "{}")
    values["gain"] = Gain(**json.loads(values["gain"])) if values["gain"] else None
    return Entry(**values)


def _entry_to_row(entry: Entry) -> dict[str, Any]:
    row = entry.to_dict()
    for column in (*_LIST_COLUMNS, "op_mix", "gain", "zh"):
        row[column] = json.dumps(row[column], ensure_ascii=False) if row[column] else None
    row["row_hash"] = hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()
    return row


def suggest_ids(word: str, ids: Iterable[str], limit: int = 3) -> list[str]:
    """Ids close to ``word`` (typos, partial ids), best first."""
    from rapidfuzz import fuzz, process

    matches = process.extract(word.lower(), list(ids), scorer=fuzz.WRatio, limit=limit, score_cutoff=60)
    return [match[0] for match in matches]


# ---------------------------------------------------------------------------------------------
# Opening and building
# ---------------------------------------------------------------------------------------------


def open_index(db_path: Path | str | None = None, *, kb_dirs: Sequence[Path | str] | None = None) -> Index:
    """Open the index, (re)building it first when a KB file changed or the file is missing or damaged.

    ``kb_dirs`` replaces the default sources (built-in KB, then the user KB folder). When the index
    is out of date but cannot be rebuilt there (read-only or full disk), the old one is used as it
    is, with a warning.
    """
    db = Path(db_path) if db_path else paths.default_db_path()
    sources = kb_sources(kb_dirs)
    scanned_at = time.time_ns()
    files = scan_files(sources)
    snapshot = _open_snapshot(db)
    if snapshot is not None:
        state = _freshness(snapshot[1], sources, files)
        if state == SAME_CONTENT:
            _refresh_signature(db, sources, files, scanned_at)
        if state != STALE:
            return Index(db, *snapshot)
        snapshot[0].close()
    try:
        return build_index(db, kb_dirs=kb_dirs)
    except StoreNotWritable as exc:
        stale = _open_snapshot(db) or _open_snapshot(db, immutable=True)
        if stale is None:
            raise
        _warn(f"{db}: the index is out of date and cannot be rebuilt ({exc.message}); using it as it is,"
              " without the latest KB changes — make the folder writable or point ADVISOR_DB at a writable file")
        return Index(db, *stale, immutable=True)


def build_index(db_path: Path | str | None = None, *, kb_dirs: Sequence[Path | str] | None = None,
                rebuild: bool = False) -> Index:
    """Bring the index up to date (parse only changed files); ``rebuild`` starts from an empty file."""
    db = Path(db_path) if db_path else paths.default_db_path()
    check_index_target(db)  # refuse another program's file before writing anything beside it (the lock)
    sources = kb_sources(kb_dirs)
    _make_parent(db)
    with _lock(db):
        _remove_stale_temp_files(db)
        damaged = check_index_target(db) == "damaged"
        if damaged:
            _set_aside(db)
        # Nothing of ours writes the live file, so a journal beside it was left by a writer that was
        # killed: the file cannot be trusted (and every read-only open fails on a hot journal).
        journal_left = _remove_journals(db)
        scanned_at = time.time_ns()
        files = scan_files(sources)
        snapshot = None if journal_left else _open_snapshot(db)
        if snapshot is not None and not rebuild and _freshness(snapshot[1], sources, files) == FRESH:
            return Index(db, *snapshot)
        if snapshot is not None:
            snapshot[0].close()
        _write_index(db, sources, files, scanned_at, base=None if rebuild or snapshot is None else db)
        return Index(db, *(_open_snapshot(db) or _unreadable(db)))


#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


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
        conn = _connect_readonly(db_path, immutable=True)
        try:
            tables = [row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")]
            app = conn.execute("select value from meta where key = 'app'").fetchone() if "meta" in tables else None
        finally:
            conn.close()
    except sqlite3.Error:
        return "damaged"
    if app and app[0] == APP_ID:
        return "ours"
    if not tables and not _journals(db_path):
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


def _warn(message: str) -> None:
    import warnings

    from opprof_advisor.errors import AdvisorWarning

    warnings.warn(message, AdvisorWarning, stacklevel=3)


def _set_aside(db_path: Path) -> Path:
    """Keep a corrupt file at the index path (and its journals) under a new name instead of overwriting it."""
    kept = db_path.with_name(f"{db_path.name}.not-an-index-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        os.replace(db_path, kept)
        for side in _journals(db_path):  # a journal left here would be applied to the new index
            os.replace(side, kept.with_name(kept.name + side.name[len(db_path.name):]))
    except OSError as exc:
        raise StoreNotWritable(f"cannot move the damaged index aside: {exc.strerror or exc}", path=db_path,
                               hint="point --db or ADVISOR_DB at a writable file") from exc
    _warn(f"{db_path} was not an opprof-advisor index (corrupt or another program's file); kept it as {kept.name} and"
          " built a new index")
    return kept


_JOURNAL_SUFFIXES = ("-journal", "-wal", "-shm")


def _journals(db_path: Path) -> list[Path]:
    """The SQLite journal files beside ``db_path``."""
    sides = (db_path.with_name(db_path.name + suffix) for suffix in _JOURNAL_SUFFIXES)
    return [side for side in sides if os.path.lexists(side)]


def _remove_journals(db_path: Path) -> bool:
    """Delete SQLite journals left beside the index (under the lock); True when there was one."""
    found = False
    for side in _journals(db_path):
        try:
            side.unlink()
            found = True
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreNotWritable(f"cannot remove a journal left beside the index: {exc.strerror or exc}",
                                   path=side, hint="remove it by hand, or point ADVISOR_DB at a writable file") from exc
    return found


def _write_index(db_path: Path, sources: Sequence[KbSource], files: Sequence[SourceFile], scanned_at: int,
                 base: Path | None) -> None:
    import tempfile

    try:
        handle, tmp_name = tempfile.mkstemp(dir=db_path.parent, prefix=f".{db_path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _not_writable(db_path, exc.strerror or str(exc)) from exc
    os.close(handle)
    tmp = Path(tmp_name)
    try:
        _fill_index(tmp, sources, files, scanned_at, base)
        os.replace(tmp, db_path)
    except OSError as exc:
        raise _not_writable(db_path, exc.strerror or str(exc)) from exc
    except sqlite3.OperationalError as exc:  # disk full, read-only folder, cannot open the file
        raise _not_writable(db_path, str(exc)) from exc
    finally:
        _remove_with_journals(tmp)


def _fill_index(tmp: Path, sources, files, scanned_at: int, base: Path | None) -> None:
    import sqlite_utils

    if base is not None and not _copy_database(base, tmp):
        tmp.write_bytes(b"")  # the old index could not be copied: build from the KB files alone
    db = sqlite_utils.Database(tmp)
    try:
        migrations().apply(db)
        digests = file_digests(files)
        with db.atomic():
            _sync_files(db, files, digests)
            problems = _sync_entries(db, sources)
            _write_meta(db, sources, files, digests, problems, scanned_at)
    finally:
        db.close()


def _not_writable(db_path: Path, reason: str) -> StoreNotWritable:
    return StoreNotWritable(f"cannot write the knowledge-base index: {reason}", path=db_path,
                            hint="free some disk space, or point --db or ADVISOR_DB at a file in a writable folder")


def _copy_database(source: Path, target: Path) -> bool:
    """Copy ``source`` into ``target`` with the backup API; False when ``source`` cannot be read."""
    # The backup API copies a consistent snapshot even while another process reads the file.
    try:
        src = _connect_readonly(source)
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
    current = {str(f.path) for f in files}
    for path in set(known) - current:
        db["files"].delete(path)
    for f in files:
        digest = digests[str(f.path)]
        if known.get(str(f.path)) == digest:
            continue
        too_big = entry_too_big(f.path, f.size)  # not even parsed
        entry, problems = (None, [too_big]) if too_big else validate_file(f.path, origin=f.origin)
        db["files"].upsert({
            "path": str(f.path), "source": f.source, "origin": f.origin, "sha256": digest,
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


def _write_meta(db, sources, files, digests, problems: list[Problem], scanned_at: int) -> None:
    db["meta"].upsert_all([
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


def _make_parent(db_path: Path) -> None:
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreNotWritable(f"cannot create the index folder: {exc.strerror or exc}", path=db_path.parent,
                               hint="point --db or ADVISOR_DB at a writable location") from exc


def _remove_stale_temp_files(db_path: Path) -> None:
    # Called under the lock: a temporary file present now belongs to a build that was interrupted.
    for stale in db_path.parent.glob(f".{db_path.name}.*.tmp"):
        _remove_with_journals(stale)


def _remove_with_journals(path: Path) -> None:
    for name in (path.name, *(path.name + suffix for suffix in _JOURNAL_SUFFIXES)):
        try:
            path.with_name(name).unlink(missing_ok=True)
        except OSError:
            pass  # left for the next build to remove


_LOCKS: dict[str, Any] = {}


def _lock(db_path: Path):
    """The inter-process lock that serialises builds and adds (re-entrant within one process)."""
    from filelock import FileLock

    key = str(db_path.resolve())
    if key not in _LOCKS:
        _LOCKS[key] = FileLock(key + ".lock", timeout=LOCK_TIMEOUT_S)
    return _Locked(_LOCKS[key], db_path)


class _Locked:
    def __init__(self, lock, db_path: Path):
        self.lock = lock
        self.db_path = db_path

    def __enter__(self):
        from filelock import Timeout

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
        from filelock import Timeout

        try:
            self.lock.acquire(timeout=0)
        except (Timeout, OSError):
            return False
        return True

    def release(self) -> None:
        self.lock.release()


# ---------------------------------------------------------------------------------------------
# Adding user entries
# ---------------------------------------------------------------------------------------------


def add_entry_file(path: Path | str, replace: bool = False, *, db_path: Path | str | None = None,
                   kb_dirs: Sequence[Path | str] | None = None, user_dir: Path | None = None) -> Entry:
    """Validate a markdown entry, copy it atomically into the user KB folder and index it.

    Raises EntryValidationError (every problem, nothing written) or EntryExists (unless ``replace``).
    The copy is ``<user kb>/<kind>s/<id>.md``; the id may differ from the source file's name.
    """
    from opprof_advisor.kb import check_related, entry_too_big, load_entry

    source = Path(path)
    too_big = entry_too_big(source, source.stat().st_size if source.is_file() else 0)
    if too_big:
        raise EntryValidationError([too_big])
    entry = load_entry(source, origin="user", require_stem_id=False)
    db = Path(db_path) if db_path else paths.default_db_path()
    user_root = user_dir or paths.user_kb_dir()
    target = user_root / f"{entry.kind}s" / f"{entry.id}.md"
    check_index_target(db)
    _make_parent(db)
    with _lock(db):
        ids = set(build_index(db, kb_dirs=kb_dirs).ids())
        problems = check_related([entry], ids)
        if problems:
            raise EntryValidationError(problems)
        if entry.id in ids and not replace:
            raise EntryExists(f"an entry with id {entry.id!r} already exists", path=source,
                              hint="use --replace to overwrite it, or choose another id")
        # All or nothing: an entry that cannot be indexed (full disk ...) does not stay in the KB
        # folder, so the next command does not trip over a half-done add.
        previous = _read_copies(user_root, entry.id, target)
        try:
            _copy_atomically(source, target)
            _remove_other_copies(user_root, entry.id, keep=target)
            build_index(db, kb_dirs=kb_dirs)
        except BaseException:
            _restore_copies(previous, target)
            raise
    entry.path = str(target)
    return entry


def _read_copies(user_dir: Path, entry_id: str, target: Path) -> dict[Path, bytes]:
    """The current bytes of every user-KB file an add of ``entry_id`` may replace or remove."""
    found = {}
    for path in {target, *user_dir.glob(f"*/{entry_id}.md")}:
        try:
            found[path] = path.read_bytes()
        except OSError:
            continue
    return found


def _restore_copies(previous: dict[Path, bytes], target: Path) -> None:
    try:
        if target not in previous:
            target.unlink(missing_ok=True)
        for path, data in previous.items():
            if not path.is_file() or path.read_bytes() != data:
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
    import tempfile

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
        if other.resolve() != keep.resolve():
            other.unlink()


# ---------------------------------------------------------------------------------------------
# Measured outcomes (user data: kept in their own file beside the index, never inside it, because
# the index is a build artefact that a rebuild replaces)
# ---------------------------------------------------------------------------------------------

OUTCOMES_SET = "opprof-advisor-outcomes"


def o001_create_outcomes(db) -> None:
    """One row per measured outcome of applied advice (see opprof_advisor.outcomes.Outcome)."""
    db["outcomes"].create(
        {
            "id": int, "entry_id": str, "matched_families": str, "matched_before_us": float,
            "matched_after_us": float, "matched_gain_pct": float, "matched_share": float, "e2e_before_us": float,
            "e2e_after_us": float, "e2e_gain_pct": float, "before_fingerprint": str, "after_fingerprint": str,
            "before_path": str, "after_path": str, "chip": str, "cann": str, "recorded_at": str, "note": str,
        },
        pk="id", not_null={"entry_id"},
    )
    db["outcomes"].create_index(["entry_id"])


OUTCOME_STEPS = (o001_create_outcomes,)


def outcome_migrations():
    """The ``sqlite_utils.Migrations`` set of the outcomes database."""
    from sqlite_utils import Migrations

    steps = Migrations(OUTCOMES_SET)
    for step in OUTCOME_STEPS:
        steps()(step)
    return steps


def outcomes_path(db_path: Path | str | None = None) -> Path:
    """The outcomes database that belongs to an index: ``<index stem>.outcomes.db`` beside it."""
    index = Path(db_path) if db_path else paths.default_db_path()
    return index.with_name(f"{index.stem}.outcomes.db")


def record_outcome(row: dict[str, Any], path: Path | str | None = None, *, force: bool = False) -> int:
    """Store one outcome (a dict of Outcome fields without ``id``) and return its id.

    ``path`` is the index database the outcome belongs to (default: the default index). A pair of
    profiles (by fingerprint, in either order) is one measured change and is recorded once: the
    same entry again raises DuplicateOutcome, even with ``force``; another entry raises it too
    unless ``force``.
    """
    import sqlite_utils

    target = outcomes_path(path)
    _make_parent(target)
    data = dict(row)
    data["matched_families"] = json.dumps(list(data.get("matched_families") or []))
    try:
        # Serialised across processes: concurrent writers otherwise fail with "database is locked"
        # (a read-then-write transaction cannot wait for the busy timeout) and lose their outcome.
        with _lock(target):
            db = sqlite_utils.Database(target)
            try:
                outcome_migrations().apply(db)
                with db.atomic():
                    _refuse_second_outcome_of_a_pair(db, data, force)
                    # alter=True: a field added to Outcome later becomes a column instead of an error.
                    db["outcomes"].insert(data, alter=True)
                    outcome_id = db.execute("select last_insert_rowid()").fetchone()[0]
            finally:
                db.close()
    except sqlite3.DatabaseError as exc:
        raise _outcomes_error(target, exc) from exc
    return int(outcome_id)


class DuplicateOutcome(OutcomesError):
    """This pair of profiles is already recorded as an outcome; ``outcome_id`` and ``entry_id`` name it."""

    def __init__(self, message: str, *, outcome_id: int, entry_id: str, hint: str):
        super().__init__(message, hint=hint)
        self.outcome_id = outcome_id
        self.entry_id = entry_id

    def __reduce__(self):  # keyword-only arguments: pickle (a process pool) needs to be told how to rebuild it
        return _rebuild_duplicate, (self.message, self.outcome_id, self.entry_id, self.hint)


def _rebuild_duplicate(message: str, outcome_id: int, entry_id: str, hint: str) -> DuplicateOutcome:
    return DuplicateOutcome(message, outcome_id=outcome_id, entry_id=entry_id, hint=hint)


def _refuse_second_outcome_of_a_pair(db, data: dict[str, Any], force: bool) -> None:
    before, after = data.get("before_fingerprint"), data.get("after_fingerprint")
    if not before or not after:
        return
    rows = list(db.query(
        "select id, entry_id, before_fingerprint from outcomes where (before_fingerprint = ? and after_fingerprint = ?)"
        " or (before_fingerprint = ? and after_fingerprint = ?) order by id", (before, after, after, before)))
    same = [row for row in rows if row["entry_id"] == data["entry_id"]]
    clash = same or ([] if force else rows)
    if not clash:
        return
    row = clash[0]
    order = "" if row["before_fingerprint"] == before else " (with BEFORE and AFTER the other way round)"
    hint = f"see `advisor outcomes list`; `advisor outcomes remove {row['id']}` takes it back"
    if not same:
        hint += ", or --force records it for this entry too"
    raise DuplicateOutcome(
        f"not recorded: outcome #{row['id']} of {row['entry_id']} already measures this pair of profiles{order},"
        " and one measured change counts once", outcome_id=row["id"], entry_id=row["entry_id"], hint=hint)


def remove_outcomes(ids: Sequence[int], path: Path | str | None = None) -> list[dict[str, Any]]:
    """Delete the outcomes with these ids and return them; unknown ids raise OutcomesError, removing none."""
    target = outcomes_path(path)
    wanted = sorted(set(ids))
    known = {row["id"]: row for row in list_outcomes(path=path)}
    missing = [outcome_id for outcome_id in wanted if outcome_id not in known]
    if missing:
        listed = ", ".join(f"#{outcome_id}" for outcome_id in missing)
        raise OutcomesError(f"no recorded outcome {listed}; nothing was removed", path=target,
                            hint="see `advisor outcomes list` for the ids")
    try:
        with _lock(target):
            conn = sqlite3.connect(target, timeout=30)
            try:
                with conn:
                    conn.executemany("delete from outcomes where id = ?", [(outcome_id,) for outcome_id in wanted])
            finally:
                conn.close()
    except sqlite3.DatabaseError as exc:
        raise _outcomes_error(target, exc) from exc
    return [known[outcome_id] for outcome_id in wanted]


#: SQLite result codes that mean "cannot write here", not "the file is damaged".
_NOT_WRITABLE_CODES = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR,
                       sqlite3.SQLITE_PERM}


def _outcomes_error(target: Path, exc: sqlite3.DatabaseError) -> OutcomesError:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _NOT_WRITABLE_CODES:
        return OutcomesError(f"cannot write the outcomes database ({exc}); the outcomes recorded so far are intact",
                             path=target, hint="free some disk space, or point --db or ADVISOR_DB at a writable folder")
    return OutcomesError(f"the outcomes database is unusable ({exc})", path=target,
                         hint="move the file aside; recorded outcomes live only there")


def list_outcomes(entry_id: str | None = None, path: Path | str | None = None) -> list[dict[str, Any]]:
    """Recorded outcomes as dicts, oldest first (of one entry when ``entry_id`` is given)."""
    target = outcomes_path(path)
    if not target.is_file():
        return []
    where, params = ("where entry_id = ?", (entry_id,)) if entry_id else ("", ())
    try:
        conn = _connect_readonly(target)
        try:
            conn.row_factory = sqlite3.Row
            rows = [dict(row) for row in conn.execute(f"select * from outcomes {where} order by id", params)]
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise OutcomesError(f"the outcomes database is unreadable ({exc})", path=target) from exc
    except sqlite3.DatabaseError as exc:
        raise OutcomesError(f"the outcomes database is unreadable ({exc})", path=target,
                            hint="move the file aside; recorded outcomes live only there") from exc
    for row in rows:
        try:
            row["matched_families"] = json.loads(row["matched_families"] or "[]")
        except ValueError:
            row["matched_families"] = []  # a damaged cell: the outcome's figures are still good
    return rows
