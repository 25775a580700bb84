"""Write a normalised profile into a SQLite file (browsable with ``datasette``)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

from opprof_advisor.errors import AdvisorError
from opprof_advisor.models import Profile
from opprof_advisor.readers.base import RawProfile


def export_profile(target: str | Path, raw: RawProfile, profile: Profile) -> dict[str, int]:
    """Replace tables ``kernels``, ``op_types``, ``symptoms``, ``notes`` and ``source`` in ``target``.

    Returns the row count per table.
    """
    import sqlite_utils

    from opprof_advisor.profile_builder import kernel_rows, profile_to_json

    target = Path(target)
    try:
        db = sqlite_utils.Database(target)
        with db.conn:
            _write(db, raw, profile, kernel_rows, profile_to_json)
        return {name: (db[name].count if db[name].exists() else 0) for name in _TABLES}
    except (sqlite3.Error, OSError) as exc:
        raise AdvisorError(f"cannot write SQLite file ({exc})", path=target,
                           hint="choose a writable path for a new or existing SQLite file") from None


_TABLES = ("kernels", "op_types", "symptoms", "notes", "source")


def _write(db, raw: RawProfile, profile: Profile, kernel_rows, profile_to_json) -> None:
    for name in _TABLES:
        db[name].drop(ignore=True)  # a re-export replaces the previous profile entirely
    db["kernels"].insert_all(kernel_rows(raw), pk="seq", batch_size=2000, alter=True)
    db["op_types"].insert_all(
        ({**asdict(r), "dtypes": ";".join(r.dtypes), "formats": ";".join(r.formats)} for r in profile.op_types),
        pk=("op_type", "unit"), alter=True)
    db["symptoms"].insert_all(
        ({"id": s.id, "op_types": ";".join(s.op_types), "share": s.share, "detail": s.detail}
         for s in profile.symptoms), pk="id", alter=True)
    db["notes"].insert_all(({"seq": i, "note": n} for i, n in enumerate(profile.notes)), pk="seq", alter=True)
    document = profile_to_json(profile)
    db["source"].insert({"key": "profile", "json": json.dumps(document, ensure_ascii=False)}, pk="key")
