"""Write a normalised profile into a SQLite file (browsable with ``datasette``).

The export is built in a temporary file beside the target and renamed over it (opprof_advisor.core.outputs),
so a kill or a full disk leaves the previous file as it was. An existing file is written only
when it is an earlier export (SQLite application id APPLICATION_ID, or, from before the id, a
``source`` row holding a profile document); its tables other than EXPORT_TABLES are kept. Any other
SQLite file needs ``--force``, and even then a table of the same name as one of ours is never
dropped. The profile being read is never written.

A file another program has open is refused (what it writes after the rename would go to the old file
and be lost); a ``-wal`` or hot journal beside the file is merged into it by SQLite before its tables are
copied, and the export itself is one file in rollback mode, so no journal is ever read as part of it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Sequence

from opprof_advisor.core.errors import OutputError
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.models import Profile
from opprof_advisor.readers.base import RawProfile
from opprof_advisor.core.outputs import check_target, encodable, head_contains, replacing
from opprof_advisor.core.sqlite_files import (
    SQLITE_HEADER, connect_readonly, journals, merge_journals, odd_journal, other_holders,
)
from opprof_advisor.profile.builder import kernel_rows, profile_to_json

#: ``PRAGMA application_id`` of an export: the bytes "OPAX" (SQLite's magic-number registry is free-form).
APPLICATION_ID = int.from_bytes(b"OPAX", "big")
#: The tables an export creates, and the only ones it ever drops.
EXPORT_TABLES = ("kernels", "op_types", "symptoms", "notes", "ranks", "source")


def export_profile(target: str | Path, raw: RawProfile, profile: Profile, *, force: bool = False,
                   inputs: Sequence[Path | str] = ()) -> tuple[Path, dict[str, int]]:
    """Write the profile's tables into ``target``; return the path written and the row count per table."""
    target = check_target(target, what="an SQLite export", is_ours=_is_export, force=force,
                          inputs=inputs, option="--export")
    _settle(target)
    new = not target.is_file() or target.stat().st_size == 0
    keep_tables = [] if new else _tables_to_keep(target, _is_export(target))
    try:
        with replacing(target, before_replace=lambda: _refuse_held(target)) as tmp:
            if keep_tables:
                _copy_database(target, tmp)
            counts = _write(tmp, raw, profile)
    except sqlite3.Error as exc:
        raise OutputError(f"cannot write the SQLite export ({exc})", path=target,
                          hint="choose a writable place with enough free space") from None
    return target, counts


def _settle(target: Path) -> None:
    """Make the file about to be replaced whole and free: no other program holding it, no journal beside it.

    An SQLite file's ``-wal`` holds committed rows (of a writer killed before its checkpoint, or of an
    export left in WAL mode): SQLite writes them into the file first, so the tables kept are whole, and a
    ``-wal`` left beside the new file can never be read as part of it. A journal beside anything else
    belongs to no database advisor can read, and is left to the user.
    """
    _refuse_open(target)
    if not journals(target):
        return
    odd = odd_journal(target)
    if odd is not None:  # (SQLite would wait on a FIFO for good, or roll what a link points to into the file)
        raise OutputError(M_("{journal} beside it is not a regular file (a FIFO, device, folder or link); SQLite would "
                             "read it as the file's journal", journal=odd.name), path=target,
                          hint=N_("remove it, or choose another --export file"))
    if _is_sqlite(target):
        try:
            merge_journals(target)
        except sqlite3.Error as exc:
            raise OutputError(M_("its SQLite journal cannot be merged into it ({reason})", reason=str(exc)),
                              path=target, hint=N_("close the program that uses it, or choose another --export file")
                              ) from None
    left = [side for side in journals(target) if not side.name.endswith("-shm")]
    if left:
        raise OutputError(M_("an SQLite journal of another database is beside it ({journal}); the new file "
                             "would be read with it", journal=left[0].name), path=target,
                          hint=N_("remove that journal, or choose another --export file"))


def _refuse_open(target: Path) -> None:
    """OutputError when another program has ``target`` open: what it writes after the replace would be lost."""
    holders = other_holders(target)
    if holders:
        raise OutputError(M_("is open in another program (process {pid}); replacing it would lose what that "
                             "program writes to it", pid=holders[0]), path=target,
                          hint=N_("close that program first, or choose another --export file"))


def _refuse_held(target: Path) -> None:
    """``_refuse_open``, and OutputError when a journal appeared beside ``target`` meanwhile (just before the rename)."""
    _refuse_open(target)
    if any(not side.name.endswith("-shm") for side in journals(target)):
        raise OutputError(N_("another program started writing to it while the export was made; it was left as it is"),
                          path=target, hint=N_("close that program first, or choose another --export file"))


def _is_sqlite(path: Path) -> bool:
    try:
        return head_contains(path, SQLITE_HEADER, len(SQLITE_HEADER))
    except OSError:
        return False


def _is_export(path: Path) -> bool:
    """True when ``path`` is an SQLite file written by ``advisor profile --export`` (this version or an earlier one)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            if conn.execute("pragma application_id").fetchone()[0] == APPLICATION_ID:
                return True
            row = conn.execute("select json from source where key = 'profile'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return bool(row) and '"schema": "opprof-advisor/profile/' in str(row[0])[:200]


def _tables_to_keep(target: Path, ours: bool) -> list[str]:
    """The tables of an existing ``target`` that the export keeps; refuse to drop a table it did not create."""
    if not target.is_file() or target.stat().st_size == 0:
        return []
    try:
        conn = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            tables = [row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return []  # not SQLite (replaced only with --force, which check_target enforced)
    clash = sorted(set(tables) & set(EXPORT_TABLES))
    if clash and not ours:
        raise OutputError(f"already has table(s) {', '.join(clash)} that advisor did not create; it was left "
                          "untouched", path=target, hint="choose another --export file")
    return [name for name in tables if name not in EXPORT_TABLES]


#: How long the copy of the tables an export keeps waits for another program's lock on the file.
COPY_WAIT_S = 5.0
#: Pages copied per step of the backup: between steps Python runs (Ctrl-C, SIGTERM) and the wait is checked.
COPY_STEP_PAGES = 1024


def _copy_database(source: Path, target: Path) -> None:
    """Copy ``source`` (settled: no journal, no other program holding it) into ``target``, in steps.

    Read as an immutable file: a read-only connection to a database in WAL mode would create a ``-wal`` and
    ``-shm`` beside it, which could not be removed again. OutputError when it stays locked all the same.
    """
    src = connect_readonly(source, immutable=True)
    dst = sqlite3.connect(target)
    started = [None]

    def progress(status: int, remaining: int, total: int) -> None:
        if status not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            started[0] = None
            return
        started[0] = started[0] or time.monotonic()
        if time.monotonic() - started[0] > COPY_WAIT_S:
            raise OutputError(M_("another program keeps it locked (waited {seconds} s)", seconds=COPY_WAIT_S),
                              path=source, hint=N_("close that program first, or choose another --export file"))

    try:
        src.backup(dst, pages=COPY_STEP_PAGES, progress=progress, sleep=0.05)
    finally:
        dst.close()
        src.close()


def _write(path: Path, raw: RawProfile, profile: Profile) -> dict[str, int]:
    import sqlite_utils

    db = sqlite_utils.Database(path)
    try:
        # One file, whatever mode the copied database was in: a -wal beside an export is never part of it.
        db.execute("pragma journal_mode = delete")
        # A temporary file, thrown away on any failure and synced once before it replaces the target
        # (core.outputs.replacing), needs no journal and no sync per batch (those made the write I/O-bound).
        db.execute("pragma journal_mode = off")
        db.execute("pragma synchronous = off")
        for name in EXPORT_TABLES:
            db[name].drop(ignore=True)  # only in the copy, and only our own tables (see _tables_to_keep)
        # (kernel rows hold the profile's text, decoded as UTF-8: only paths can hold bytes UTF-8 cannot)
        db["kernels"].insert_all(kernel_rows(raw), pk="seq", batch_size=2000, alter=True)
        db["op_types"].insert_all(
            (_encodable_row({**r.to_dict(), "dtypes": ";".join(r.dtypes), "formats": ";".join(r.formats),
                             "bound_why": str(r.bound_why)}) for r in profile.op_types),
            pk=("op_type", "unit"), alter=True)
        db["symptoms"].insert_all(
            (_encodable_row({"id": s.id, "op_types": ";".join(s.op_types), "share": s.share, "detail": str(s.detail)})
             for s in profile.symptoms), pk="id", alter=True)
        db["notes"].insert_all(({"seq": i, "note": encodable(str(n))} for i, n in enumerate(profile.notes)), pk="seq",
                               alter=True)
        # a job keeps no kernel rows (each rank is summarised, then dropped): its ranks are the detail
        db["ranks"].insert_all((_encodable_row(r.to_dict()) for r in profile.ranks), alter=True)
        document = profile_to_json(profile)
        db["source"].insert({"key": "profile", "json": encodable(json.dumps(document, ensure_ascii=False), json_text=True)},
                            pk="key")
        if db.execute("pragma application_id").fetchone()[0] == 0:  # another program's id stays
            db.execute(f"pragma application_id = {APPLICATION_ID}")
        return {name: (db[name].count if db[name].exists() else 0) for name in EXPORT_TABLES}
    finally:
        db.close()


def _encodable_row(row: dict) -> dict:
    """``row`` with its text as UTF-8 can hold it (SQLite text is UTF-8: a path that is not would fail the insert)."""
    for key, value in row.items():
        if type(value) is str and not value.isascii():
            row[key] = encodable(value)
    return row
