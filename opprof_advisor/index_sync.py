"""Bring the rows of an index up to date with the KB files: parse only new and changed files, write in batches.

Used on a temporary copy by ``index_build`` (a build) and inside one transaction of the live file
by ``index_add`` (an add). The work grows with the files that changed, plus a few light passes over
every file's stats and every entry's id: a file whose size and mtime match its row, and that was not
modified within the racy window of the last signature, keeps its stored digest unread. Rows are
written with ``executemany`` (FTS5 follows through the triggers of ``migrations.m002``); the search
summaries and the list of problems are recomputed from the ``entries`` table, so an add leaves
exactly the rows a full rebuild writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from opprof_advisor.errors import Problem
from opprof_advisor.store import (
    APP_ID, BUILD_VERSION, KbSource, SourceFile, _ENTRY_COLUMNS, _entry_to_row, _sources_json,
    content_hash, file_digests, stat_signature, stored_digests,
)

_FILE_COLUMNS = ("path", "source", "origin", "sha256", "size", "mtime_ns", "entry_id", "entry", "problems")
_ROW_COLUMNS = (*_ENTRY_COLUMNS, "row_hash")
#: Below this many files to parse, worker processes cost more (their start-up) than they save.
POOL_MIN_FILES = 2_000
#: Above this many new rows (and more than the index holds) FTS5 is filled in one pass, not per row.
BULK_FTS_ROWS = 1_000


class Parsed(NamedTuple):
    """One KB file parsed: its entry (the ``entries`` row and the search summary) or its problems, and the
    sha256 of the bytes it was parsed from (None when they could not be read)."""

    entry_id: str | None
    problems_json: str | None
    row: tuple | None
    summary: list | None
    sha256: str | None


def sync_rows(conn: sqlite3.Connection, sources: Sequence[KbSource], files: Sequence[SourceFile], scanned_at: int,
              folders: list[list], fts_later: list[str] | None = None) -> None:
    """Update ``files``, ``entries`` (and so FTS) and ``meta`` for ``files``; the caller holds the transaction.

    With ``fts_later`` a bulk insert leaves FTS5 to the caller: the statements that fill it are appended
    there, for ``finish_fts`` (a build runs them alongside other work); FTS5 is then stale until they ran.
    """
    meta = dict(conn.execute("select key, value from meta where key != 'summaries'").fetchall())
    known = stored_digests(conn)
    # A file the index has no row of is parsed whatever its digest: the parse reads it once and hashes
    # those bytes (a rebuild reads every file once, not twice).
    digests = file_digests([f for f in files if f.path in known], known, int(meta.get("signed_at_ns", "0")))
    changed = [f for f in files if f.path not in known or known[f.path][0] != digests[f.path]
               or known[f.path][3:] != (f.source, f.origin)]
    removed = sorted(set(known) - {f.path for f in files})
    parsed = dict(zip((f.path for f in changed), parse_files(changed)))
    unread = [f for f in changed if f.path not in digests and parsed[f.path].sha256 is None]
    digests.update((path, item.sha256) for path, item in parsed.items() if path not in digests)
    digests.update(file_digests(unread))  # (too big to parse, or unreadable: the read raises as before)
    conn.executemany("delete from files where path = ?", [(path,) for path in removed])
    # files.entry stays empty: the entry lives in its ``entries`` row (a file that wins its id later
    # without changing, because the one that overrode it went, is parsed again), which halves the file.
    conn.executemany(f"insert or replace into files ({', '.join(_FILE_COLUMNS)}) values ({_marks(_FILE_COLUMNS)})", [
        (f.path, f.source, f.origin, digests[f.path], f.size, f.mtime_ns, parsed[f.path].entry_id, None,
         parsed[f.path].problems_json) for f in changed])
    conn.executemany("update files set size = ?, mtime_ns = ? where path = ?", [  # same content, new stats
        (f.size, f.mtime_ns, f.path) for f in files if f.path not in parsed and known[f.path][1:3] != (f.size, f.mtime_ns)])
    problems = _sync_entries(conn, parsed, bool(changed or removed), fts_later)
    _write_meta(conn, sources, files, digests, problems, scanned_at, folders)


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
    import pickle
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", "opprof_advisor.index_sync"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
    process.stdin.write(pickle.dumps(items))
    process.stdin.close()
    return process


def _worker_results(process, items: list[tuple]) -> list[Parsed]:
    """The worker's results; its share parsed here when it failed (killed, out of memory ...)."""
    import pickle

    data = process.stdout.read()
    if process.wait() != 0 or not data:
        return [parse_one(item) for item in items]
    return [Parsed(*item) for item in pickle.loads(data)]


def _serve_worker() -> None:
    import pickle
    import sys

    items = pickle.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(pickle.dumps([tuple(parse_one(item)) for item in items], protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()


def parse_one(item: tuple[str, int, str]) -> Parsed:
    """One file's entry or problems (a worker's task: plain strings and tuples travel back cheaply)."""
    from opprof_advisor.kb import entry_too_big, validate_file

    path, size, origin = item
    too_big = entry_too_big(Path(path), size)  # not even parsed
    data = None if too_big else _read_or_none(path)
    digest = hashlib.sha256(data).hexdigest() if data is not None else None
    entry, problems = (None, [too_big]) if too_big else validate_file(Path(path), origin=origin, data=data)
    if entry is None:
        return Parsed(None, json.dumps([[p.line, p.message] for p in problems], ensure_ascii=False), None, None,
                      digest)
    row = _entry_to_row(entry)
    summary = [entry.id, entry.kind, entry.title, entry.operators, entry.symptoms, entry.tags, entry.models]
    return Parsed(entry.id, None, tuple(row[c] for c in _ROW_COLUMNS), summary, digest)


def _read_or_none(path: str) -> bytes | None:
    """The file's bytes; None when it cannot be read (the parse then reports why, at the file)."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# Entries: the winning file per id (later sources win), its row, the summaries and problems
# ---------------------------------------------------------------------------------------------


def _sync_entries(conn: sqlite3.Connection, parsed: dict[str, Parsed], files_changed: bool,
                  fts_later: list[str] | None) -> list[Problem]:
    winners, problems = _winners(conn)
    if files_changed:
        have = {row[0]: row[1:] for row in conn.execute("select id, path, row_hash from entries")}
        gone = sorted(set(have) - set(winners))
        rows = {entry_id: _winner_row(conn, path, parsed) for entry_id, path in winners.items()
                if path in parsed or have.get(entry_id, (None,))[0] != path}
        rows = {entry_id: row for entry_id, row in rows.items() if have.get(entry_id, (None, None))[1] != row[-1]}
        conn.executemany("delete from entries where id = ?", [(entry_id,) for entry_id in gone])
        updates = [(*row[1:], row[0]) for entry_id, row in sorted(rows.items()) if entry_id in have]
        inserts = [row for entry_id, row in sorted(rows.items()) if entry_id not in have]
        assignments = ", ".join(f"{column} = ?" for column in _ROW_COLUMNS[1:])
        conn.executemany(f"update entries set {assignments} where id = ?", updates)
        _insert_entries(conn, inserts, bulk=len(inserts) > BULK_FTS_ROWS and len(inserts) > len(have),
                        fts_later=fts_later)
        if gone or rows:
            _write_summaries(conn, parsed, winners, rows)
    return problems + _related_problems(conn, winners)


def _insert_entries(conn: sqlite3.Connection, rows: list[tuple], *, bulk: bool, fts_later: list[str] | None) -> None:
    """Insert ``entries`` rows; ``bulk`` fills FTS5 in one pass afterwards instead of row by row in its trigger
    (then, or later by ``finish_fts`` when ``fts_later`` takes the statements)."""
    insert = f"insert into entries ({', '.join(_ROW_COLUMNS)}) values ({_marks(_ROW_COLUMNS)})"
    trigger = conn.execute("select sql from sqlite_master where type = 'trigger' and name = 'entries_ai'").fetchone()
    if not bulk or trigger is None:
        conn.executemany(insert, rows)
        return
    conn.execute("drop trigger entries_ai")  # inside the caller's transaction: all or nothing
    conn.executemany(insert, rows)
    statements = ["insert into entries_fts (entries_fts) values ('rebuild')", trigger[0]]
    if fts_later is None:
        finish_fts(conn, statements)
    else:
        fts_later.extend(statements)


def finish_fts(conn: sqlite3.Connection, statements: list[str]) -> None:
    """Run what a bulk insert left for FTS5 (its one-pass fill, and the insert trigger back in place)."""
    for statement in statements:
        conn.execute(statement)


def _winners(conn: sqlite3.Connection) -> tuple[dict[str, str], list[Problem]]:
    """Path of the file that wins each id, in the order ids first appear; a second file of one source is a problem."""
    chosen: dict[str, tuple[int, str]] = {}
    problems = []
    for path, source, entry_id in conn.execute(
            "select path, source, entry_id from files where entry_id is not null order by source, path"):
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


def _write_summaries(conn: sqlite3.Connection, parsed: dict[str, Parsed], winners: dict[str, str],
                     rows: dict[str, tuple]) -> None:
    """The search summaries (one JSON document, sorted by id): kept for unchanged entries, replaced for the rest."""
    old = _stored_summaries(conn) if len(rows) < len(winners) else {}
    summaries = []
    for entry_id in sorted(winners):
        item = old.get(entry_id) if entry_id not in rows else None
        if item is None:
            item = _summary(conn, winners[entry_id], parsed)
        summaries.append(item)
    conn.execute("insert or replace into meta (key, value) values ('summaries', ?)",
                 (json.dumps(summaries, ensure_ascii=False),))


def _stored_summaries(conn: sqlite3.Connection) -> dict[str, list]:
    """The summaries the index holds, by id; none when they are missing or damaged (all are then rebuilt)."""
    stored = conn.execute("select value from meta where key = 'summaries'").fetchone()
    try:
        items = json.loads(stored[0]) if stored else []
        return {item[0]: item for item in items if isinstance(item, list) and len(item) == 7}
    except (ValueError, TypeError, IndexError):
        return {}


def _summary(conn: sqlite3.Connection, path: str, parsed: dict[str, Parsed]) -> list:
    if path in parsed:
        return parsed[path].summary
    columns = ("id", "kind", "title", "operators", "symptoms", "tags", "models")
    values = conn.execute(f"select {', '.join(columns)} from entries where path = ?", (path,)).fetchone()
    return [*values[:3], *(json.loads(value or "[]") for value in values[3:])]


def _related_problems(conn: sqlite3.Connection, winners: dict[str, str]) -> list[Problem]:
    """``related`` ids that name no entry, in the order of kb.check_related over the winning entries.

    The dangling ids are found by SQLite (json_each) without decoding every entry's list in Python.
    """
    from opprof_advisor.kb import related_problems

    dangling = conn.execute(
        "select entries.id, entries.path, item.key, item.value from entries, json_each(entries.related) as item "
        "where entries.related is not null and item.value not in (select id from entries)").fetchall()
    if not dangling:
        return []
    order = {entry_id: number for number, entry_id in enumerate(winners)}
    dangling.sort(key=lambda row: (order[row[0]], row[2]))
    ids = set(winners)
    return [problem for _, path, _, rel in dangling for problem in related_problems([(path, [rel])], ids)]


def _write_meta(conn: sqlite3.Connection, sources, files, digests, problems: list[Problem], scanned_at: int,
                folders: list[list]) -> None:
    values: dict[str, Any] = {
        "file_count": str(len(files)),
        "folders": json.dumps(folders),
        "app": APP_ID,
        "build_version": BUILD_VERSION,
        "sources": _sources_json(sources),
        "stat_signature": stat_signature(sources, files),
        "signed_at_ns": str(scanned_at),
        "content_hash": content_hash(files, digests),
        "problems": json.dumps([[p.path, p.line, p.message] for p in problems], ensure_ascii=False),
    }
    conn.executemany("insert or replace into meta (key, value) values (?, ?)", list(values.items()))


if __name__ == "__main__":
    _serve_worker()
