"""Where the KB files are and whether an index still describes them: sources, stats, digests, signatures, snapshots.

The markdown under the built-in and user KB folders is the source of truth; the index is a build
artefact. Freshness: the index stores a signature of the KB files' sizes and mtimes and a content hash.
Stats equal → fresh; stats changed → hash the files; hash changed → rebuild. It also keeps a
manifest of the KB folders and their mtimes: in a KB of more than FULL_STAT_LIMIT files, where
stat-ing every file would cost more than the search (~3 µs a file here: 0.15 s at 50,000), an
open checks the folders only. Adding, removing or renaming a file changes its folder's mtime, and
so does saving it by replacement (what `advisor add`, vim, emacs and most editors do); a file of
such a KB rewritten in place is picked up by the next `advisor kb build` (an add or a remove there lists
only the folders that moved: index_sync.sync_moved_folders).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from opprof_advisor.core import paths
from opprof_advisor.core.errors import AdvisorWarning
from opprof_advisor.core.i18n import _
from opprof_advisor.core.sidefile import read_bytes
from opprof_advisor.core.sqlite_files import connect_readonly
from opprof_advisor.kb import migrations
from opprof_advisor.kb.rows import _ENTRY_COLUMNS
import warnings

#: Bump when the loader's output for the same markdown changes: every index is then rebuilt. The
#: Entry fields are part of it, so a field added to models.Entry also forces a rebuild (the index
#: caches parsed entries as JSON).
BUILD_VERSION = "4:" + ",".join(_ENTRY_COLUMNS)  # 3: signatures are sums of per-file terms; 4: zh_grams

#: Marks a database as ours; any other file at the index path is foreign and gets rebuilt.
APP_ID = "opprof-advisor/kb-index"


#: A file modified this close to the last signature may have changed within one mtime tick.
RACY_WINDOW_NS = 2_000_000_000

#: Above this many KB files an open checks the folders' mtimes instead of every file's stats.
FULL_STAT_LIMIT = 5_000


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
    user_resolved = os.path.realpath(user)  # (realpath, not resolve: a link loop is no error)
    return [KbSource(Path(d), "user" if os.path.realpath(d) == user_resolved else "builtin") for d in kb_dirs]


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
    (relative, as the manifest names them) are left out (an add lists the folders that moved only).

    The KB folders are the user's: a file or folder may vanish while they are listed (another process
    adds, removes or rebuilds), a link may point back up the tree or nowhere, a folder may be unreadable.
    What cannot be listed or stat-ed is left out (the next open sees it again); a folder reached a second
    time (a link loop, two links to one folder) is listed once; the walk is a loop, not a recursion.
    """
    # scandir + a hand-made relative path: this runs on every `advisor search`, for every KB file.
    seen: set[tuple[int, int]] = set()
    items = _listing(folder, seen)
    if items is None:
        return
    pending = [(iter(items), prefix)]
    while pending:
        item = next(pending[-1][0], None)
        if item is None:
            pending.pop()
            continue
        name = item.name
        if name.startswith("."):
            continue
        here = pending[-1][1]
        try:
            is_dir = item.is_dir()
            if not is_dir and not (name.endswith(".md") and name.lower() != "readme.md" and item.is_file()):
                continue
            stat = item.stat()
        except OSError:  # vanished, a link loop or a link to nowhere, no permission
            continue
        if not is_dir:
            found.append(SourceFile(item.path, here + name, number, origin, stat.st_size, stat.st_mtime_ns))
            continue
        rel = f"{here}{name}/"
        if rel in listed:
            continue
        children = _listing(item.path, seen, stat)
        if children is None:
            continue
        if folders is not None:
            folders.append([number, rel, stat.st_mtime_ns])
        pending.append((iter(children), rel))


def _listing(folder: str, seen: set[tuple[int, int]], stat: os.stat_result | None = None) -> list | None:
    """The entries of ``folder`` sorted by name; None when it cannot be listed or was listed already."""
    try:
        stat = stat or os.stat(folder)
        key = (stat.st_dev, stat.st_ino)
        if key in seen:
            return None
        seen.add(key)
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda item: item.name)
    except PermissionError as exc:
        _warn(_("{folder}: cannot list this knowledge-base folder ({reason}); its entries are left out — make it "
                "readable or move it out of the KB").format(folder=folder, reason=exc.strerror or exc))
        return None
    except OSError:  # vanished, not a folder, a link loop
        return None


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
    start = _term(json.dumps([BUILD_VERSION, [os.path.realpath(s.root) for s in sources]]))
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
    trusted_before = signed_at - RACY_WINDOW_NS
    digests = {}
    for f in files:
        stored = (known or {}).get(f.path)
        if stored is not None and stored[1:3] == (f.size, f.mtime_ns) and f.mtime_ns < trusted_before:
            digests[f.path] = stored[0]
        else:
            digests[f.path] = _digest(f.path)
    return digests


#: The digest of a file that could not be read (vanished since it was listed, or unreadable): never a
#: sha256, so the index records that it changed, and the next open sees whether it is back.
UNREADABLE = "unreadable"


def _digest(path: str) -> str:
    try:
        return hashlib.sha256(read_bytes(Path(path))).hexdigest()  # (a FIFO put in its place is not waited on)
    except (OSError, ValueError):
        return UNREADABLE


def stored_digests(conn: sqlite3.Connection) -> dict[str, tuple]:
    """path -> (sha256, size, mtime_ns, source, origin) of every file row of an index."""
    return {row[0]: row[1:] for row in conn.execute("select path, sha256, size, mtime_ns, source, origin from files")}


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
    try:
        if not db_path.is_file():
            return None
    except OSError:  # a name too long, a link loop: building there says why
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
    return json.dumps([[os.path.realpath(s.root), s.origin] for s in sources])


def _warn(message: str) -> None:
    warnings.warn(message, AdvisorWarning, stacklevel=3)
