"""Write a normalised profile into a SQLite file (browsable with ``datasette``).

The export is built in a temporary file beside the target and renamed over it (opprof_advisor.core.outputs),
so a kill or a full disk leaves the previous file as it was. An existing file is written only
when it is an earlier export (SQLite application id APPLICATION_ID, or, from before the id, a
``source`` row holding a profile document); its tables other than EXPORT_TABLES are kept. Any other
SQLite file needs ``--force``, and even then a table of the same name as one of ours is never
dropped. The profile being read is never written.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Sequence

from opprof_advisor.core.errors import OutputError
from opprof_advisor.core.models import Profile
from opprof_advisor.readers.base import RawProfile
from opprof_advisor.core.outputs import check_target, replacing
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
    new = not target.is_file() or target.stat().st_size == 0
    keep_tables = [] if new else _tables_to_keep(target, _is_export(target))
    try:
        with replacing(target) as tmp:
            if keep_tables:
                _copy_database(target, tmp)
            counts = _write(tmp, raw, profile)
    except sqlite3.Error as exc:
        raise OutputError(f"cannot write the SQLite export ({exc})", path=target,
                          hint="choose a writable place with enough free space") from None
    return target, counts


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


def _copy_database(source: Path, target: Path) -> None:
    # Read-only: opening the user's file for writing could checkpoint its WAL into it.
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _write(path: Path, raw: RawProfile, profile: Profile) -> dict[str, int]:
    import sqlite_utils

    db = sqlite_utils.Database(path)
    try:
        for name in EXPORT_TABLES:
            db[name].drop(ignore=True)  # only in the copy, and only our own tables (see _tables_to_keep)
        db["kernels"].insert_all(kernel_rows(raw), pk="seq", batch_size=2000, alter=True)
        db["op_types"].insert_all(
            ({**r.to_dict(), "dtypes": ";".join(r.dtypes), "formats": ";".join(r.formats), "bound_why": str(r.bound_why)}
             for r in profile.op_types),
            pk=("op_type", "unit"), alter=True)
        db["symptoms"].insert_all(
            ({"id": s.id, "op_types": ";".join(s.op_types), "share": s.share, "detail": str(s.detail)}
             for s in profile.symptoms), pk="id", alter=True)
        db["notes"].insert_all(({"seq": i, "note": str(n)} for i, n in enumerate(profile.notes)), pk="seq", alter=True)
        # a job keeps no kernel rows (each rank is summarised, then dropped): its ranks are the detail
        db["ranks"].insert_all((r.to_dict() for r in profile.ranks), alter=True)
        document = profile_to_json(profile)
        db["source"].insert({"key": "profile", "json": json.dumps(document, ensure_ascii=False)}, pk="key")
        if db.execute("pragma application_id").fetchone()[0] == 0:  # another program's id stays
            db.execute(f"pragma application_id = {APPLICATION_ID}")
        return {name: (db[name].count if db[name].exists() else 0) for name in EXPORT_TABLES}
    finally:
        db.close()
