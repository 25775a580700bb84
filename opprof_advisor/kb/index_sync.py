"""Bring the rows of an index up to date with the KB files: parse only new and changed files, write in batches.

Used on a temporary copy by ``index_build`` (a build) and inside one transaction of the live file
by ``index_add`` (an add). The work grows with the files that changed, plus a few light passes over
every file's stats and every entry's id: a file whose size and mtime match its row, and that was not
modified within the racy window of the last signature, keeps its stored digest unread. Rows are
written with ``executemany`` (both FTS5 tables follow through the triggers of ``migrations.m002`` and
``m007``); the list of problems is recomputed from the ``entries`` table, so an add leaves exactly the
rows a full rebuild writes.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import stat
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from opprof_advisor.core.errors import Problem
from opprof_advisor.kb.migrations import INSERT_TRIGGERS
from opprof_advisor.kb.manifest import (
    APP_ID, BUILD_VERSION, FINE_RACY_WINDOW_NS, KbSource, SourceFile, _mtime, _scan_folder, _sources_json, content_hash,
    content_record, file_digests, moved_hash, racy_window, stat_record, stat_signature, stored_digests,
)
from opprof_advisor.kb.rows import _ENTRY_COLUMNS, _entry_to_row
from opprof_advisor import kb
from opprof_advisor.kb import entry_too_big, manifest, related_problems
import time
import pickle
import sys
import subprocess

_FILE_COLUMNS = ("path", "source", "origin", "sha256", "size", "mtime_ns", "entry_id", "entry", "problems")
_ROW_COLUMNS = (*_ENTRY_COLUMNS, "zh_grams", "row_hash")
#: Below this many files to parse, worker processes cost more (their start-up) than they save.
POOL_MIN_FILES = 2_000
#: Above this many new rows (and more than the index holds) FTS5 is filled in one pass, not per row.
BULK_FTS_ROWS = 1_000


class Parsed(NamedTuple):
    """One KB file parsed: its entry (the ``entries`` row) or its problems, and the sha256 of the bytes it was
    parsed from (None when they could not be read)."""

    entry_id: str | None
    problems_json: str | None
    row: tuple | None
    sha256: str | None


def sync_rows(conn: sqlite3.Connection, sources: Sequence[KbSource], files: Sequence[SourceFile], scanned_at: int,
              folders: list[list]) -> None:
    """Update ``files``, ``entries`` (and so FTS) and ``meta`` for ``files``; the caller holds the transaction."""
    meta = dict(conn.execute("select key, value from meta where key != 'summaries'").fetchall())
    known = stored_digests(conn)
    # A file the index has no row of is parsed whatever its digest: the parse reads it once and hashes
    # those bytes (a rebuild reads every file once, not twice).
    digests = file_digests([f for f in files if f.path in known], known, int(meta.get("signed_at_ns", "0")))
    changed = [f for f in files if f.path not in known or known[f.path][0] != digests[f.path]
               or known[f.path][3:] != (f.source, f.origin)]
    parsed = _parse_changed(changed, digests)
    files, changed = _without_vanished(files, changed, parsed)
    removed = sorted(set(known) - {f.path for f in files})
    _write_files(conn, files, changed, removed, known, digests, parsed)
    problems = _sync_entries(conn, parsed, bool(changed or removed))
    _write_meta(conn, _meta_values(sources, len(files), folders, scanned_at, problems,
                                   stat_signature(sources, files), content_hash(files, digests)))


def _parse_changed(changed: list[SourceFile], digests: dict[str, str]) -> dict[str, Parsed]:
    """Parse the changed files; ``digests`` gains those of the files parsed unhashed (the bytes the parse read)."""
    parsed = dict(zip((f.path for f in changed), parse_files(changed)))
    unread = [f for f in changed if f.path not in digests and parsed[f.path].sha256 is None]
    digests.update((path, item.sha256) for path, item in parsed.items() if path not in digests)
    digests.update(file_digests(unread))  # (too big to parse, or unreadable: manifest.UNREADABLE)
    return parsed


def _without_vanished(files: Sequence[SourceFile], changed: list[SourceFile], parsed: dict[str, Parsed]
                      ) -> tuple[Sequence[SourceFile], list[SourceFile]]:
    """``files`` and ``changed`` without the files deleted since they were listed (another process edits the KB
    meanwhile): they are not in the KB any more, so they get no row, not a "cannot read" problem."""
    gone = {f.path for f in changed if parsed[f.path] == VANISHED}
    if not gone:
        return files, changed
    for path in gone:
        del parsed[path]
    return [f for f in files if f.path not in gone], [f for f in changed if f.path not in gone]


def _write_files(conn: sqlite3.Connection, files: Sequence[SourceFile], changed: list[SourceFile], removed: list[str],
                 known: dict[str, tuple], digests: dict[str, str], parsed: dict[str, Parsed]) -> None:
    """Write the ``files`` rows of ``files`` (``changed``, parsed, or with new stats) and ``removed``."""
    conn.executemany("delete from files where path = ?", [(path,) for path in removed])
    # files.entry stays empty: the entry lives in its ``entries`` row (a file that wins its id later
    # without changing, because the one that overrode it went, is parsed again), which halves the file.
    conn.executemany(f"insert or replace into files ({', '.join(_FILE_COLUMNS)}) values ({_marks(_FILE_COLUMNS)})", [
        (f.path, f.source, f.origin, digests[f.path], f.size, f.mtime_ns, parsed[f.path].entry_id, None,
         parsed[f.path].problems_json) for f in changed])
    conn.executemany("update files set size = ?, mtime_ns = ? where path = ?", [  # same content, new stats
        (f.size, f.mtime_ns, f.path) for f in files if f.path not in parsed and known[f.path][1:3] != (f.size, f.mtime_ns)])


# ---------------------------------------------------------------------------------------------
# An add or a remove on a big KB: only the folders whose mtime moved are listed again
# ---------------------------------------------------------------------------------------------


def sync_moved_folders(conn: sqlite3.Connection, sources: Sequence[KbSource]) -> bool:
    """``sync_rows`` for a KB of more than FULL_STAT_LIMIT files, reading only what the manifest of folders says moved.

    Adding, removing, renaming or saving a file by replacement changes its folder's mtime (what `advisor add`
    and editors do): the folders whose mtime moved, or was within the racy window of the last signature, are
    listed again and their files' stats compared with their rows; every other file keeps its row unread, and
    the signatures move by the terms of the files listed (see manifest.moved_hash). So a user's edit elsewhere in
    the KB meanwhile is seen by the next open as by a full scan. Returns False when the manifest cannot
    be trusted (a small KB, other sources, an index without one): the caller then compares every file.
    """
    meta = dict(conn.execute("select key, value from meta where key != 'summaries'").fetchall())
    if int(meta.get("file_count", "0")) <= manifest.FULL_STAT_LIMIT or meta.get("sources") != _sources_json(sources):
        return False
    try:
        recorded = [(int(number), str(rel), int(mtime)) for number, rel, mtime in json.loads(meta["folders"])]
        signed_at = int(meta["signed_at_ns"])
        file_count = int(meta["file_count"])
        int(meta["stat_signature"], 16), int(meta["content_hash"], 16)
        roots = [str(source.root) for source in sources]
        for number, _, _ in recorded:
            roots[number]
    except (KeyError, ValueError, TypeError, IndexError):
        return False
    if not recorded:
        return False
    window = racy_window([mtime for _, _, mtime in recorded])
    scanned_at = _settle(recorded, roots, window)
    kept, moved = [], []
    for number, rel, mtime in recorded:
        now = _mtime(os.path.join(roots[number], rel))
        (kept if now == mtime and mtime < signed_at - window else moved).append([number, rel, now])
    listed_folders = {(number, rel) for number, rel, _ in recorded}
    files: list[SourceFile] = []
    new_folders: list[list] = []
    for number, rel, now in moved:
        if now != -1:  # its files, and whole the subfolders the manifest lacks (new ones)
            listed = frozenset(other for mine, other in listed_folders if mine == number)
            _scan_folder(os.path.join(roots[number], rel) if rel else roots[number], rel, number,
                         sources[number].origin, files, new_folders, listed)
    old = _rows_in(conn, sources, [(number, rel) for number, rel, _ in moved])
    known = {f.path: (sha, f.size, f.mtime_ns, f.source, f.origin) for f, sha, _ in old}
    digests = file_digests(files, known, signed_at)
    changed = [f for f in files if known.get(f.path, (None,))[0] != digests[f.path]
               or known[f.path][3:] != (f.source, f.origin)]
    parsed = _parse_changed(changed, digests)
    files, changed = _without_vanished(files, changed, parsed)
    removed = sorted(set(known) - {f.path for f in files})
    _write_files(conn, files, changed, removed, known, digests, parsed)
    gone_or_changed = set(removed) | set(parsed)
    affected = {entry_id for f, _, entry_id in old if entry_id and f.path in gone_or_changed}
    affected |= {p.entry_id for p in parsed.values() if p.entry_id}
    old_problems = json.loads(meta.get("problems", "[]"))
    problems = _sync_affected(conn, parsed, affected, old_problems)
    # Only the files whose stats or digest moved move the signatures (the same term leaves and comes back).
    stored = {(f, sha) for f, sha, _ in old}
    same = {f.path for f in files if (f, digests[f.path]) in stored}
    signature = moved_hash(meta["stat_signature"], (stat_record(f) for f, _, _ in old if f.path not in same),
                           (stat_record(f) for f in files if f.path not in same))
    content = moved_hash(meta["content_hash"], (content_record(f, sha) for f, sha, _ in old if f.path not in same),
                         (content_record(f, digests[f.path]) for f in files if f.path not in same))
    folders = sorted([*kept, *(folder for folder in moved if folder[2] != -1 or folder[1] == ""), *new_folders],
                     key=lambda folder: (folder[0], folder[1].split("/")))
    _write_meta(conn, _meta_values(sources, file_count - len(old) + len(files), folders, scanned_at, problems,
                                   signature, content))
    return True


def _settle(recorded: list[tuple[int, str, int]], roots: list[str], window: int) -> int:
    """The time of the new signature, after waiting (up to a fine window, 50 ms) for folders just changed to age
    past the racy window: the next open then trusts their mtime instead of comparing every file."""
    newest = max(_mtime(os.path.join(roots[number], rel)) for number, rel, _ in recorded)
    wait = newest + window - time.time_ns()
    if 0 < wait <= FINE_RACY_WINDOW_NS:
        time.sleep(wait / 1e9)
    return time.time_ns()


def _rows_in(conn: sqlite3.Connection, sources: Sequence[KbSource], folders: list[tuple[int, str]]
             ) -> list[tuple[SourceFile, str, str | None]]:
    """(file as scanned when its row was written, sha256, entry id) of the rows directly in each of ``folders``."""
    found = []
    for number, rel in folders:
        root = str(sources[number].root)
        prefix = f"{root}/{rel}"
        for path, origin, sha, size, mtime_ns, entry_id in conn.execute(
                "select path, origin, sha256, size, mtime_ns, entry_id from files where source = ? and path > ? and "
                "path < ? and instr(substr(path, ?), '/') = 0", (number, prefix, prefix[:-1] + "0", len(prefix) + 1)):
            found.append((SourceFile(path, path[len(root) + 1:], number, origin, size, mtime_ns), sha, entry_id))
    return found


def _sync_affected(conn: sqlite3.Connection, parsed: dict[str, Parsed], affected: set[str], old_problems: list
                   ) -> list[Problem]:
    """``_sync_entries`` for the ids of the files that changed only (their winners, rows and the problems)."""
    ids = json.dumps(sorted(affected))
    chosen = conn.execute("select path, source, entry_id from files where entry_id in (select value from json_each(?)) "
                          "order by source, path", (ids,)).fetchall()
    winners, _ = _pick_winners(chosen)
    have = {row[0]: row[1:] for row in conn.execute(
        "select id, path, row_hash from entries where id in (select value from json_each(?))", (ids,))}
    _write_entries(conn, parsed, winners, have)
    problems = _duplicates(conn, _pick_winners(chosen)[1], affected, old_problems)
    if _related_unchanged(conn, old_problems, set(have) - set(winners), affected & set(winners)):
        return problems
    all_winners, _ = _winners(conn)
    return problems + _related_problems(conn, all_winners)


def _duplicates(conn: sqlite3.Connection, found: list[Problem], affected: set[str], old_problems: list) -> list[Problem]:
    """The duplicate-id problems: ``found`` for the affected ids, the stored ones for the others, in the order of
    source then path (as _winners lists them)."""
    problems = []
    for path, line, message in old_problems:
        row = conn.execute("select entry_id from files where path = ?", (path,)).fetchone()
        if str(message).startswith("duplicate id ") and row and row[0] not in affected:
            problems.append(Problem(path, line, message))
    problems += found
    sources = dict(conn.execute("select path, source from files where path in (select value from json_each(?))",
                                (json.dumps([p.path for p in problems]),)).fetchall())
    return sorted(problems, key=lambda p: (sources[p.path], p.path))


def _related_unchanged(conn: sqlite3.Connection, old_problems: list, gone: set[str], changed: set[str]) -> bool:
    """True when no ``related`` id can name no entry now: none did before, no id went, and the changed entries'
    related ids all exist (else the caller checks every entry, as a build does)."""
    if gone or any(str(message).startswith("related id ") for _, _, message in old_problems):
        return False
    related = {rel for (value,) in conn.execute(
        "select related from entries where related is not null and id in (select value from json_each(?))",
        (json.dumps(sorted(changed)),)) for rel in json.loads(value)}
    found = conn.execute("select count(*) from entries where id in (select value from json_each(?))",
                         (json.dumps(sorted(related)),)).fetchone()[0]
    return found == len(related)


def _marks(columns: Sequence[str]) -> str:
    return ", ".join("?" * len(columns))


def parse_files(files: Sequence[SourceFile]) -> list[Parsed]:
    """Parse and validate ``files``; when there are many, a share goes to worker processes (one per other core)."""
    items = [(f.path, f.size, f.origin) for f in files]
    helpers = min(os.cpu_count() or 1, 4) - 1
    if len(items) < POOL_MIN_FILES or helpers < 1:
        return [parse_one(item) for item in items]
    share = len(items) // (helpers + 1)
    shares = [items[number * share:(number + 1) * share] for number in range(helpers)]
    workers = [_start_worker(mine) for mine in shares]
    own = [parse_one(item) for item in items[helpers * share:]]
    return [parsed for worker, mine in zip(workers, shares) for parsed in _worker_results(worker, mine)] + own


def _start_worker(items: list[tuple]):
    # A plain child interpreter, not multiprocessing: it needs no `if __name__ == "__main__"` guard in the
    # caller's script, inherits no file descriptor (the index lock), and exits on a broken pipe when this
    # process is killed.

    process = subprocess.Popen([sys.executable, "-m", "opprof_advisor.kb.index_sync"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
    process.stdin.write(pickle.dumps(items))
    process.stdin.close()
    return process


def _worker_results(process, items: list[tuple]) -> list[Parsed]:
    """The worker's results; its share parsed here when it failed (killed, out of memory ...)."""
    data = process.stdout.read()
    if process.wait() != 0 or not data:
        return [parse_one(item) for item in items]
    return [Parsed(*item) for item in pickle.loads(data)]


def _serve_worker() -> None:

    items = pickle.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(pickle.dumps([tuple(parse_one(item)) for item in items], protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()


def parse_one(item: tuple[str, int, str]) -> Parsed:
    """One file's entry or problems (a worker's task: plain strings and tuples travel back cheaply)."""
    name, size, origin = item
    path = Path(name)
    too_big = entry_too_big(path, size)  # not even parsed
    data = None if too_big else _read(name, size)
    if data is None and not too_big:
        return VANISHED
    digest = hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else None
    if too_big or not isinstance(data, bytes):  # (not read again by the parse: it may be a FIFO by now)
        entry, problems = None, [too_big or Problem(path, None, data)]
    else:
        entry, problems = kb.validate_file(path, origin=origin, data=data)
    if entry is None:
        return Parsed(None, json.dumps([[p.line, p.message] for p in problems], ensure_ascii=False), None, digest)
    return Parsed(entry.id, None, _row_values(_entry_to_row(entry)), digest)


#: What parse_one says of a file deleted since it was listed: no entry and no problem (it is left out).
VANISHED = Parsed(None, None, None, None)

#: The values of an ``entries`` row in _ROW_COLUMNS order, from _entry_to_row's dict.
_row_values = operator.itemgetter(*_ROW_COLUMNS)


#: O_NONBLOCK: a FIFO put in a file's place since it was listed is not waited on (and not read: not regular);
#: O_BINARY: no newline translation on Windows.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _read(path: str, size: int) -> bytes | str | None:
    """The bytes of the regular file ``path`` (``size``: what its stat said, a hint), why they cannot be read
    (a problem's message), or None when the file is gone (deleted since it was listed: whatever is at its path
    now is the next scan's). Plain os.read calls: a buffered file object costs twice the read of a KB file."""
    try:
        handle = os.open(path, _READ_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return "not a regular file (a FIFO, device or socket)"
        chunks = []
        while chunk := os.read(handle, max(size + 1, 1 << 16)):  # to the end, should the file have grown
            chunks.append(chunk)
        return b"".join(chunks) if len(chunks) != 1 else chunks[0]
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    finally:
        os.close(handle)


# ---------------------------------------------------------------------------------------------
# Entries: the winning file per id (later sources win), its row and problems
# ---------------------------------------------------------------------------------------------


def _sync_entries(conn: sqlite3.Connection, parsed: dict[str, Parsed], files_changed: bool) -> list[Problem]:
    winners, problems = _winners(conn)
    if files_changed:
        have = {row[0]: row[1:] for row in conn.execute("select id, path, row_hash from entries")}
        _write_entries(conn, parsed, winners, have)
    return problems + _related_problems(conn, winners)


def _write_entries(conn: sqlite3.Connection, parsed: dict[str, Parsed], winners: dict[str, str],
                   have: dict[str, tuple]) -> None:
    """Write the ``entries`` rows of ``winners`` (id -> winning path) against ``have`` (id -> path, row_hash of the
    rows of those ids and of ids now gone)."""
    gone = sorted(set(have) - set(winners))
    rows = {entry_id: _winner_row(conn, path, parsed) for entry_id, path in winners.items()
            if path in parsed or have.get(entry_id, (None,))[0] != path}
    rows = {entry_id: row for entry_id, row in rows.items() if have.get(entry_id, (None, None))[1] != row[-1]}
    conn.executemany("delete from entries where id = ?", [(entry_id,) for entry_id in gone])
    updates = [(*row[1:], row[0]) for entry_id, row in sorted(rows.items()) if entry_id in have]
    inserts = [row for entry_id, row in sorted(rows.items()) if entry_id not in have]
    assignments = ", ".join(f"{column} = ?" for column in _ROW_COLUMNS[1:])
    conn.executemany(f"update entries set {assignments} where id = ?", updates)
    _insert_entries(conn, inserts, bulk=len(inserts) > BULK_FTS_ROWS and len(inserts) > len(have))
    # Search summaries are read from the entries rows (Index.summaries): an index of an earlier
    # version kept them in one JSON document, which an add had to decode and write again (~1 s at 50,000).
    conn.execute("delete from meta where key = 'summaries'")


def _insert_entries(conn: sqlite3.Connection, rows: list[tuple], *, bulk: bool) -> None:
    """Insert ``entries`` rows; ``bulk`` fills the FTS5 tables in one pass each afterwards ('rebuild') instead of
    row by row in their triggers."""
    insert = f"insert into entries ({', '.join(_ROW_COLUMNS)}) values ({_marks(_ROW_COLUMNS)})"
    triggers = dict(conn.execute("select name, sql from sqlite_master where type = 'trigger' and name in "
                                 "(select value from json_each(?))", (json.dumps(list(INSERT_TRIGGERS.values())),)))
    if not bulk or len(triggers) != len(INSERT_TRIGGERS):
        conn.executemany(insert, rows)
        return
    for name in triggers:
        conn.execute(f"drop trigger {name}")  # inside the caller's transaction: all or nothing
    conn.executemany(insert, rows)
    for table, trigger in INSERT_TRIGGERS.items():
        conn.execute(f"insert into {table} ({table}) values ('rebuild')")
        conn.execute(triggers[trigger])


def _winners(conn: sqlite3.Connection) -> tuple[dict[str, str], list[Problem]]:
    """Path of the file that wins each id, in the order ids first appear; a second file of one source is a problem."""
    return _pick_winners(conn.execute(
        "select path, source, entry_id from files where entry_id is not null order by source, path"))


def _pick_winners(rows: Iterable[tuple[str, int, str]]) -> tuple[dict[str, str], list[Problem]]:
    """``_winners`` of (path, source, entry id) rows in the order of source then path."""
    chosen: dict[str, tuple[int, str]] = {}
    problems = []
    for path, source, entry_id in rows:
        previous = chosen.get(entry_id)
        if previous and previous[0] == source:
            problems.append(Problem(path, 1, f"duplicate id {entry_id!r} (also {previous[1]}); not indexed"))
            continue
        chosen[entry_id] = (source, path)
    return {entry_id: path for entry_id, (_, path) in chosen.items()}, problems


def _winner_row(conn: sqlite3.Connection, path: str, parsed: dict[str, Parsed]) -> tuple:
    if path not in parsed:
        # An unchanged file that now wins its id (the file that overrode it went): parsed again.
        size, origin = conn.execute("select size, origin from files where path = ?", (path,)).fetchone()
        parsed[path] = parse_one((path, size or 0, origin))
    return parsed[path].row


def _related_problems(conn: sqlite3.Connection, winners: dict[str, str]) -> list[Problem]:
    """``related`` ids that name no entry, in the order of kb.check_related over the winning entries.

    The dangling ids are found by SQLite (json_each) without decoding every entry's list in Python.
    """
    dangling = conn.execute(
        "select entries.id, entries.path, item.key, item.value from entries, json_each(entries.related) as item "
        "where entries.related is not null and item.value not in (select id from entries)").fetchall()
    if not dangling:
        return []
    order = {entry_id: number for number, entry_id in enumerate(winners)}
    dangling.sort(key=lambda row: (order[row[0]], row[2]))
    return related_problems([(path, [rel]) for _, path, _, rel in dangling], winners)


def _meta_values(sources, file_count: int, folders: list[list], scanned_at: int, problems: list[Problem],
                 signature: str, content: str) -> dict[str, str]:
    return {
        "file_count": str(file_count),
        "folders": json.dumps(folders),
        "app": APP_ID,
        "build_version": BUILD_VERSION,
        "sources": _sources_json(sources),
        "stat_signature": signature,
        "signed_at_ns": str(scanned_at),
        "content_hash": content,
        "problems": json.dumps([[p.path, p.line, p.message] for p in problems], ensure_ascii=False),
    }


def _write_meta(conn: sqlite3.Connection, values: dict[str, str]) -> None:
    conn.executemany("insert or replace into meta (key, value) values (?, ?)", list(values.items()))


if __name__ == "__main__":
    try:
        _serve_worker()
    except BaseException:  # noqa: BLE001 - a killed parent, Ctrl-C: the parent parses the share itself, or stops
        os._exit(1)
