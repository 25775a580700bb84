"""The recorded outcomes on disk: their own migrated SQLite file beside the index, one row per measured change.

Outcomes are user data, so they never live in the index (a build artefact a rebuild replaces):
``<index stem>.outcomes.db`` beside it. Writes are serialised across processes; a pair of
profiles is recorded once. Rows are plain dicts of ``outcomes.Outcome`` fields.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opprof_advisor.core import paths
from opprof_advisor.core.errors import DuplicateOutcome, OutcomesError
from opprof_advisor.kb.migrations import outcome_migrations
from opprof_advisor.core.sqlite_files import connect_readonly, file_lock, make_parent, odd_journal

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
    make_parent(target)
    data = dict(row)
    data["matched_families"] = json.dumps(list(data.get("matched_families") or []))
    try:
        # Serialised across processes: concurrent writers otherwise fail with "database is locked"
        # (a read-then-write transaction cannot wait for the busy timeout) and lose their outcome.
        with file_lock(target):
            odd = odd_journal(target)
            if odd is not None:  # (SQLite would wait on a FIFO there for good)
                raise sqlite3.OperationalError(f"{odd.name} beside it is not a regular file")
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
        with file_lock(target):
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
        conn = connect_readonly(target)
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
