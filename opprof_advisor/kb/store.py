"""The SQLite index of the knowledge base: find the KB files, keep the index fresh, read it fast (adding: kb_add).

The markdown under the built-in and user KB folders is the source of truth; the index is a build
artefact (written by ``index_build``, schema in ``migrations``). It is incremental: files are keyed
on their path and content hash and only changed files are parsed again. Reading uses the stdlib
``sqlite3`` module only, because ``advisor search`` must start fast and ``import sqlite_utils``
alone costs ~100 ms.

Freshness: the index stores a signature of the KB files' sizes and mtimes and a content hash.
Stats equal → fresh; stats changed → hash the files; hash changed → rebuild. It also keeps a
manifest of the KB folders and their mtimes: in a KB of more than FULL_STAT_LIMIT files, where
stat-ing every file would cost more than the search (~3 µs a file here: 0.15 s at 50,000), an
open checks the folders only. Adding, removing or renaming a file changes its folder's mtime, and
so does saving it by replacement (what `advisor add`, vim, emacs and most editors do); a file of
such a KB rewritten in place is picked up by the next `advisor kb build` (an add or a remove there lists
only the folders that moved: index_sync.sync_moved_folders).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from opprof_advisor.core import paths
from opprof_advisor.core.errors import EntryNotFound, KnowledgeBaseError, Problem, StoreNotWritable
from opprof_advisor.kb import migrations
from opprof_advisor.core.sqlite_files import connect_readonly, file_lock
from opprof_advisor.core.errors import AdvisorWarning
from opprof_advisor.core.models import Entry, Gain

#: The entries table's columns: models.Entry's fields, in order.
_ENTRY_COLUMNS = tuple(item.name for item in dataclasses.fields(Entry))

#: Bump when the loader's output for the same markdown changes: every index is then rebuilt. The
#: Entry fields are part of it, so a field added to models.Entry also forces a rebuild (the index
#: caches parsed entries as JSON).
BUILD_VERSION = "3:" + ",".join(_ENTRY_COLUMNS)  # 3: signatures are sums of per-file terms

#: Marks a database as ours; any other file at the index path is foreign and gets rebuilt.
APP_ID = "opprof-advisor/kb-index"


#: A file modified this close to the last signature may have changed within one mtime tick.
RACY_WINDOW_NS = 2_000_000_000

#: Above this many KB files an open checks the folders' mtimes instead of every file's stats.
FULL_STAT_LIMIT = 5_000


_LIST_COLUMNS = ("operators", "symptoms", "tags", "models", "hardware", "sources", "related", "requires", "contradicts")


# ---------------------------------------------------------------------------------------------
# Sources and freshness
# ---------------------------------------------------------------------------------------------


class KbSource(NamedTuple):
    """A folder of KB markdown. Later sources override earlier ones for the same id."""

    root: Path
    origin: str  # builtin | user


class SourceFile(NamedTuple):
    path: str  # not a Path: building 50,000 of them costs more than the search they are for
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


def scan_files(sources: Sequence[KbSource], folders: list[list] | None = None) -> list[SourceFile]:
    """Every entry file of the sources with its size and mtime (no file is read).

    ``folders`` receives ``[source number, relative folder, mtime_ns]`` for every folder listed
    (the manifest an open of a big KB checks instead of the files).
    """
    found: list[SourceFile] = []
    for number, source in enumerate(sources):
        root = str(source.root)
        if folders is not None:
            folders.append([number, "", _mtime(root)])
        _scan_folder(root, "", number, source.origin, found, folders)
    return found


def _mtime(folder: str) -> int:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return -1  # missing: creating it changes this


def _scan_folder(folder: str, prefix: str, number: int, origin: str, found: list[SourceFile],
                 folders: list[list] | None, listed: frozenset[str] = frozenset()) -> None:
    """Files under ``folder`` into ``found``, its folders into ``folders``; subfolders named in ``listed``
    (relative, as the manifest names them) are left out (an add lists the folders that moved only)."""
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
            if f"{prefix}{name}/" in listed:
                continue
            if folders is not None:
                folders.append([number, f"{prefix}{name}/", item.stat().st_mtime_ns])
            _scan_folder(item.path, f"{prefix}{name}/", number, origin, found, folders)
        elif name.endswith(".md") and name.lower() != "readme.md" and item.is_file():
            stat = item.stat()
            found.append(SourceFile(item.path, prefix + name, number, origin, stat.st_size, stat.st_mtime_ns))


#: The racy window of a file system that keeps sub-second times: a few ticks of the kernel's coarse clock.
FINE_RACY_WINDOW_NS = 50_000_000


def racy_window(mtimes_ns: Sequence[int]) -> int:
    """RACY_WINDOW_NS, or FINE_RACY_WINDOW_NS when the times show sub-second resolution (ext4, xfs, btrfs,
    tmpfs, APFS): whole seconds everywhere mean a coarse file system (FAT, HFS+, ext3), where a
    change within the same second or two leaves the time as it was."""
    fine = any(mtime % 1_000_000_000 for mtime in mtimes_ns if mtime > 0)
    return FINE_RACY_WINDOW_NS if fine else RACY_WINDOW_NS


def folders_unchanged(meta: dict[str, str], sources: Sequence[KbSource]) -> bool:
    """True when the index's manifest of folders still describes ``sources`` (a big KB's quick check).

    Only for a KB of more than FULL_STAT_LIMIT files: every recorded folder has its mtime, and none
    was modified within RACY_WINDOW_NS of the signature (it might have changed again within one tick).
    """
    if int(meta.get("file_count", "0")) <= FULL_STAT_LIMIT or meta.get("sources") != _sources_json(sources):
        return False
    try:
        folders = json.loads(meta.get("folders", "[]"))
        signed_at = int(meta.get("signed_at_ns", "0"))
        roots = [str(source.root) for source in sources]
        window = racy_window([mtime_ns for _, _, mtime_ns in folders])
        for number, rel, mtime_ns in folders:
            if mtime_ns >= signed_at - window or _mtime(os.path.join(roots[number], rel)) != mtime_ns:
                return False
    except (ValueError, TypeError, IndexError):
        return False
    return bool(folders)


def stat_signature(sources: Sequence[KbSource], files: Sequence[SourceFile]) -> str:
    """Hash of the source folders and every file's path, size and mtime (a sum of one term per file, so
    that an add moves it by its files' terms without reading every file's row: see moved_hash)."""
    start = _term(json.dumps([BUILD_VERSION, [str(s.root.resolve()) for s in sources]]))
    return _hex(start + sum(_term(stat_record(f)) for f in files))


def stat_record(f: SourceFile) -> str:
    """What stat_signature hashes of one file."""
    return f"{f.source}\0{f.rel}\0{f.size}\0{f.mtime_ns}"


def content_record(f: SourceFile, digest: str) -> str:
    """What content_hash hashes of one file."""
    return f"{f.source}\0{f.origin}\0{f.rel}\0{digest}"


#: The sums of per-file terms are taken modulo 2**256 (a multiset hash: any file's change moves it).
_MODULUS = 1 << 256


def _term(record: str) -> int:
    # Python's own sha256, not hashlib's: every open computes the signature, and hashlib loads OpenSSL first.
    return int.from_bytes(hashlib.sha256(record.encode()).digest(), "big")


def _hex(total: int) -> str:
    return f"{total % _MODULUS:064x}"


def moved_hash(stored: str, removed: Iterable[str], added: Iterable[str]) -> str:
    """A stat_signature or content_hash moved from ``stored`` by the records of files gone and come."""
    return _hex(int(stored, 16) - sum(map(_term, removed)) + sum(map(_term, added)))


def file_digests(files: Sequence[SourceFile], known: dict[str, tuple] | None = None, signed_at: int = 0
                 ) -> dict[str, str]:
    """sha256 of each file's bytes, keyed by path.

    ``known`` maps a path to the (sha256, size, mtime_ns) its index row holds: that digest is reused
    when the file's size and mtime match and it was modified before the racy window of the last
    signature ``signed_at``, so an open or an add reads only the files that may have changed.
    """
    import hashlib
    trusted_before = signed_at - RACY_WINDOW_NS
    digests = {}
    for f in files:
        stored = (known or {}).get(f.path)
        if stored is not None and stored[1:3] == (f.size, f.mtime_ns) and f.mtime_ns < trusted_before:
            digests[f.path] = stored[0]
        else:
            digests[f.path] = hashlib.sha256(_read_bytes(f.path)).hexdigest()
    return digests


def stored_digests(conn: sqlite3.Connection) -> dict[str, tuple]:
    """path -> (sha256, size, mtime_ns, source, origin) of every file row of an index."""
    return {row[0]: row[1:] for row in conn.execute("select path, sha256, size, mtime_ns, source, origin from files")}


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def content_hash(files: Sequence[SourceFile], digests: dict[str, str]) -> str:
    """Hash of all sources' contents (and of the build version), independent of where they live (a sum of
    one term per file, as stat_signature)."""
    return _hex(_term(BUILD_VERSION) + sum(_term(content_record(f, digests[f.path])) for f in files))


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
        conn = connect_readonly(db_path, immutable=immutable)
        # One read transaction for the Index's life: every query sees the same state, even while an
        # add commits into the file (it waits for this snapshot, or writes a new file instead).
        conn.execute("begin")
        meta = dict(conn.execute("select key, value from meta where key != 'summaries'").fetchall())
        applied = [row[0] for row in conn.execute(
            "select name from _sqlite_migrations where migration_set = ? order by rowid", (migrations.INDEX_SET,))]
    except sqlite3.Error:
        if conn is not None:
            conn.close()
        return None
    valid = meta.get("app") == APP_ID and meta.get("build_version") == BUILD_VERSION
    valid = valid and all(key in meta for key in _REQUIRED_META)
    if not valid or tuple(applied) != migrations.INDEX_NAMES:  # foreign, damaged, or built by another schema version
        conn.close()
        return None
    return conn, meta


FRESH, SAME_CONTENT, STALE = "fresh", "same content", "stale"


def _freshness(meta: dict[str, str], sources, files, conn: sqlite3.Connection | None = None) -> str:
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
    known = stored_digests(conn) if conn is not None else None
    if content_hash(files, file_digests(files, known, signed_at)) != meta.get("content_hash"):
        return STALE
    return SAME_CONTENT  # e.g. touched, or checked out again


def _sources_json(sources: Sequence[KbSource]) -> str:
    return json.dumps([[str(s.root.resolve()), s.origin] for s in sources])


def _refresh_signature(db_path: Path, sources, files, scanned_at: int, folders: list[list]) -> None:
    """Record the new file stats so the next open need not hash the files; skipped when busy or read-only.

    Written in place (one transaction: only the file stats and signature change), or as a new copy
    when readers hold the file.
    """
    from opprof_advisor.kb.index_build import _write_in_place, write_index

    lock = file_lock(db_path)
    if not lock.try_acquire():
        return
    try:
        if not _write_in_place(db_path, sources, files, scanned_at, folders):
            write_index(db_path, sources, files, scanned_at, base=db_path, folders=folders)
    except KnowledgeBaseError:
        pass  # an optimisation only: the next open hashes the files again
    finally:
        lock.release()


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


class EntrySummary(NamedTuple):
    """The searchable fields of an entry, without its body.

    A named tuple, not a frozen dataclass: a search builds one per entry, and a tuple is built
    four times faster (0.14 s against 0.58 s for 50,000 here).
    """

    id: str
    kind: str
    title: str
    operators: list[str]
    symptoms: list[str]
    tags: list[str]
    models: list[str]


class EntryText(NamedTuple):
    """The words a reader judges an entry by (near_duplicates compares them), without the rest of the row."""

    id: str
    title: str
    summary: str


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
                self._conn = connect_readonly(self.db_path, immutable=self._immutable)
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.db_path, str(exc)) from exc

    def close(self) -> None:
        """Close the connection (the next query reopens the file, which may be a newer build)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __del__(self) -> None:
        # A sqlite3 connection sits in a reference cycle of its own and would keep its read
        # transaction (and so hold off an add) until the garbage collector runs; the Index is not.
        conn = getattr(self, "_conn", None)
        if conn is not None:
            try:
                conn.close()
            except sqlite3.ProgrammingError:
                # The collector may finalise an Index on any thread (a build's fill thread, say), where sqlite3
                # refuses close(); the connection's own finaliser then closes it, in the same collection.
                pass

    def entries(self, kind: str | None = None) -> list[Entry]:
        """All entries (of one kind if given), ordered by kind then id."""
        where, params = ("where kind = ?", (kind,)) if kind else ("", ())
        rows = self._query(f"select {_ENTRY_SELECT} from entries {where} order by kind, id", params)
        try:
            return _rows_to_entries(rows)
        except (ValueError, TypeError):
            return [self._entry(row) for row in rows]  # one by one, to name the damaged entry

    def texts(self) -> list[EntryText]:
        """Id, title and summary of every entry, sorted by id (what `advisor add` compares a new entry with)."""
        return [EntryText(*row) for row in self._query("select id, title, summary from entries order by id")]

    def existing(self, ids: Sequence[str]) -> list[str]:
        """Those of ``ids`` that name an entry, sorted."""
        return [row[0] for row in self._query(
            "select id from entries where id in (select value from json_each(?)) order by id", (json.dumps(list(ids)),))]

    def texts_of(self, ids: Sequence[str]) -> list[EntryText]:
        """``texts`` of the entries ``ids`` only."""
        return [EntryText(*row) for row in self._query(
            "select id, title, summary from entries where id in (select value from json_each(?)) order by id",
            (json.dumps(list(ids)),))]

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

        The list columns of every row are decoded by one json.loads (a search on the candidate tables
        reads the summaries of its hits only; this is for an index without them).
        """
        if self._summaries is None:
            rows = self._query("select id, kind, title, coalesce(operators, '[]'), coalesce(symptoms, '[]'),"
                               " coalesce(tags, '[]'), coalesce(models, '[]') from entries order by id")
            try:
                lists = json.loads("[" + ",".join(cell for row in rows for cell in row[3:]) + "]")
                if len(lists) != 4 * len(rows) or not all(isinstance(item, list) for item in lists):
                    raise ValueError("a list column holds something else")
                self._summaries = [EntrySummary(*row[:3], *lists[4 * number:4 * number + 4])
                                   for number, row in enumerate(rows)]
            except (ValueError, TypeError) as exc:
                raise _damaged(self.db_path, f"the search summaries: {exc}") from exc
        return self._summaries

    def fts_scores(self, match: str, limit: int = 500) -> dict[str, float]:
        """bm25 of entries matching an FTS5 query (more negative is better), keyed by id."""
        weights = ", ".join(str(weight) for _, weight in migrations.FTS_COLUMNS)
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


_ENTRY_SELECT = ", ".join(_ENTRY_COLUMNS)


def _row_to_entry(row: tuple) -> Entry:
    values = dict(zip(_ENTRY_COLUMNS, row))
    for column in _LIST_COLUMNS:
        values[column] = json.loads(values[column] or "[]")
    values["op_mix"] = json.loads(values["op_mix"] or "{}")
    values["applies_to"] = json.loads(values["applies_to"] or "{}")
    values["zh"] = json.loads(values["zh"] or "{}")
    values["gain"] = Gain(**json.loads(values["gain"])) if values["gain"] else None
    return Entry(**values)


def entry_dict(entry: Entry) -> dict[str, Any]:
    """``entry.to_dict()`` without its deep copies (the same JSON, a tenth of the time): for serialising only."""
    data = {name: getattr(entry, name) for name in _ENTRY_COLUMNS}
    if entry.gain is not None:  # the Gain's own fields
        data["gain"] = entry.gain.to_dict()
    return data


#: The JSON columns of an entry row, with what an empty cell stands for.
_DICT_COLUMNS = ("op_mix", "applies_to", "zh")
_JSON_DEFAULTS = {**dict.fromkeys(_LIST_COLUMNS, "[]"), **dict.fromkeys(_DICT_COLUMNS, "{}"), "gain": "null"}
_JSON_SHAPES = {**dict.fromkeys(_LIST_COLUMNS, list), **dict.fromkeys(_DICT_COLUMNS, dict), "gain": (dict, type(None))}
_GAIN = _ENTRY_COLUMNS.index("gain")


def _rows_to_entries(rows: Sequence[tuple]) -> list[Entry]:
    """``_row_to_entry`` of every row, their JSON cells decoded by one json.loads (ten per entry were ~10 ms of a
    suggest's start-up); ValueError / TypeError when a cell is not what the build writes (decode row by row then)."""
    at = [(_ENTRY_COLUMNS.index(column), column) for column in _JSON_DEFAULTS]
    cells = [row[index] or _JSON_DEFAULTS[column] for row in rows for index, column in at]
    decoded = json.loads("[" + ",".join(cells) + "]")
    if len(decoded) != len(cells):
        raise ValueError("a JSON cell holds more than one value")
    out = []
    for number, row in enumerate(rows):
        values = dict(zip(_ENTRY_COLUMNS, row))
        for (_index, column), value in zip(at, decoded[number * len(at):(number + 1) * len(at)]):
            if not isinstance(value, _JSON_SHAPES[column]):
                raise TypeError(f"{column} is not a {_JSON_SHAPES[column]}")
            values[column] = value
        values["gain"] = Gain(**values["gain"]) if row[_GAIN] else None  # as _row_to_entry: a "null" cell is damage
        out.append(Entry(**values))
    return out


_ROW_JSON_COLUMNS = (*_LIST_COLUMNS, "op_mix", "applies_to", "gain", "zh")


def _json_text(value: list | dict) -> str:
    """``json.dumps(value, ensure_ascii=False)``, by an encoder made once: json.dumps builds a new encoder per
    call when given an option, and eleven calls per entry were a third of turning an entry into its row."""
    global _JSON_TEXT
    if _JSON_TEXT is None:
        from json.encoder import c_make_encoder, encode_basestring

        if c_make_encoder is None:  # an interpreter without the C accelerator: the same text, the slow way
            _JSON_TEXT = json.JSONEncoder(ensure_ascii=False).encode
        else:
            # The arguments JSONEncoder.iterencode passes for ensure_ascii=False and the other defaults;
            # no circular-reference markers: an entry's values are trees of lists, dicts and scalars.
            encoder = c_make_encoder(None, json.JSONEncoder().default, encode_basestring, None, ": ", ", ", False, False, True)
            _JSON_TEXT = lambda tree: "".join(encoder(tree, 0))  # noqa: E731
    return _JSON_TEXT(value)


_JSON_TEXT = None


def _entry_to_row(entry: Entry) -> dict[str, Any]:
    import hashlib
    row = entry_dict(entry)
    for column in _ROW_JSON_COLUMNS:
        row[column] = _json_text(row[column]) if row[column] else None
    # A change detector only: the JSON of the column values (text or None, after the line above) is
    # unambiguous, and with the encoder made once a third of the cost of their repr.
    row["row_hash"] = hashlib.sha256(_json_text(list(row.values())).encode()).hexdigest()
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
    snapshot = _open_snapshot(db)
    if snapshot is not None and folders_unchanged(snapshot[1], sources):
        return Index(db, *snapshot)
    folders: list[list] = []
    files = scan_files(sources, folders)
    if snapshot is not None:
        state = _freshness(snapshot[1], sources, files, snapshot[0])
        if state == SAME_CONTENT:
            snapshot[0].close()  # its read transaction would hold off the update
            _refresh_signature(db, sources, files, scanned_at, folders)
            snapshot = _open_snapshot(db)
            if snapshot is not None:
                return Index(db, *snapshot)
        elif state == FRESH:
            return Index(db, *snapshot)
        else:
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
                rebuild: bool = False, in_place: bool = False) -> Index:
    """Bring the index up to date (parse only changed files); ``rebuild`` starts from an empty file,
    ``in_place`` writes into the live file in one transaction (an add or a remove) instead of a new copy."""
    from opprof_advisor.kb.index_build import build

    return build(Path(db_path) if db_path else paths.default_db_path(), kb_sources(kb_dirs), rebuild=rebuild,
                 in_place=in_place)


def _warn(message: str) -> None:
    import warnings

    warnings.warn(message, AdvisorWarning, stacklevel=3)
