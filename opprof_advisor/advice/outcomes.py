"""Measured outcomes of applied advice: what changed on the entry's operators and end to end, as a record.

An outcome is what a user measured after applying one entry (``advisor compare --applied ID``):
the time of the rows the recommender addresses for that entry on the BEFORE profile (by family,
so a renamed kernel still counts), before and after; the end-to-end device time before and
after; fingerprints of both profiles; chip/CANN where the profiles say; the date and a free note.
Outcomes are user data, kept by ``outcomes_store`` in their own migrated SQLite file beside the
index, and exported as JSON (``outcomes_to_json``) or markdown (``render/markdown.py``) to
contribute back to ``kb/``. How they calibrate an entry's expected gain is ``gains.calibrate``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from opprof_advisor.loop.compare import Comparison, not_like_for_like, profile_fingerprint
from opprof_advisor.core.errors import OutcomeRefused
from opprof_advisor.advice.gains import observed_text
from opprof_advisor.core.models import Entry, Profile
from opprof_advisor.advice import outcomes_store
from opprof_advisor.advice.recommend import fixed_rows, match_entry

OUTCOMES_SCHEMA = "opprof-advisor/outcomes/1"

@dataclass
class Outcome:
    """One measured result of applying a KB entry (gains in %, positive = time saved)."""

    entry_id: str
    matched_families: list[str]
    matched_before_us: float | None
    matched_after_us: float | None
    matched_gain_pct: float | None  # % of the matched operators' BEFORE time saved
    matched_share: float | None  # share of BEFORE device time of the matched operators, 0..1
    e2e_before_us: float
    e2e_after_us: float
    e2e_gain_pct: float | None  # % of BEFORE device time saved
    before_fingerprint: str
    after_fingerprint: str
    before_path: str = ""
    after_path: str = ""
    chip: str | None = None
    cann: str | None = None
    recorded_at: str = ""  # ISO 8601, UTC
    note: str = ""
    id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> "Outcome":
        """Rebuild an outcome from a stored row (unknown keys are ignored)."""
        known = {name: row[name] for name in cls.__dataclass_fields__ if name in row}
        known["matched_families"] = list(known.get("matched_families") or [])
        return cls(**known)


# --------------------------------------------------------------------------------------------
# Building an outcome from a comparison
# --------------------------------------------------------------------------------------------


def matched_families(entry: Entry, profile: Profile) -> list[str]:
    """The families of the rows the recommender addresses for ``entry`` on ``profile`` (what its gain is about)."""
    families: list[str] = []
    for row in fixed_rows(entry, match_entry(entry, profile)):
        if row.family not in families:
            families.append(row.family)
    return families


def build_outcome(entry: Entry, comparison: Comparison, note: str = "", now: datetime | None = None, *,
                  force: bool = False) -> Outcome:
    """Turn a before/after comparison into the outcome of applying ``entry``.

    Raises OutcomeRefused when the comparison gives no trustworthy percentage (an incomplete
    simulated kernel time), or, unless ``force``, when it is not like for like (two workloads,
    chips or kernels: ``compare.not_like_for_like``): a wrong outcome would skew every later
    calibration of the entry.
    """
    if comparison.pct_refused:
        raise OutcomeRefused(
            f"no outcome of {entry.id} recorded: the comparison gives no percentage change "
            "(a simulated kernel time is incomplete)",
            hint="record outcomes from two device profiles (msprof op, msprof or torch_npu)")
    reason = not_like_for_like(comparison)
    if reason and not force:
        raise OutcomeRefused(
            f"no outcome of {entry.id} recorded: {reason}",
            hint="compare two profiles of one workload, before and after one change (--force records it anyway)")
    before, after = comparison.before, comparison.after
    families = matched_families(entry, before)
    rows = [comparison.family(name) for name in families]
    rows = [row for row in rows if row is not None]
    old = sum(row.before_us for row in rows) if rows else None
    new = sum(row.after_us for row in rows) if rows else None
    share = sum(row.before_share for row in rows) if rows else None
    return Outcome(
        entry_id=entry.id,
        matched_families=families,
        matched_before_us=old,
        matched_after_us=new,
        matched_gain_pct=_saved_pct(old, new),
        matched_share=share,
        e2e_before_us=before.device_time_us,
        e2e_after_us=after.device_time_us,
        e2e_gain_pct=_saved_pct(before.device_time_us, after.device_time_us),
        before_fingerprint=profile_fingerprint(before),
        after_fingerprint=profile_fingerprint(after),
        before_path=before.path,
        after_path=after.path,
        chip=after.chip or before.chip,
        cann=after.versions.get("cann") or before.versions.get("cann"),
        recorded_at=(now or datetime.now(timezone.utc)).replace(microsecond=0).isoformat(),
        note=note,
    )


def _saved_pct(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before <= 0:
        return None
    return (before - after) / before * 100.0


# --------------------------------------------------------------------------------------------
# Persistence (outcomes_store: a database of its own beside the index)
# --------------------------------------------------------------------------------------------


def record_outcome(outcome: Outcome, db_path: Path | None = None, *, force: bool = False) -> Outcome:
    """Store an outcome beside the index database ``db_path``; returns it with its id.

    A pair of profiles is recorded once (errors.DuplicateOutcome); ``force`` only lets another
    entry record a pair that is already recorded.
    """
    outcome.id = outcomes_store.record_outcome(_to_row(outcome), path=db_path, force=force)
    return outcome


def remove_outcomes(ids: Iterable[int], db_path: Path | None = None) -> list[Outcome]:
    """Delete recorded outcomes by id and return them (an unknown id removes nothing: OutcomesError)."""
    return [Outcome.from_dict(row) for row in outcomes_store.remove_outcomes(list(ids), path=db_path)]


def list_outcomes(entry_id: str | None = None, db_path: Path | None = None) -> list[Outcome]:
    """Recorded outcomes, oldest first (of one entry when ``entry_id`` is given)."""
    return [Outcome.from_dict(row) for row in outcomes_store.list_outcomes(entry_id, path=db_path)]


def outcomes_by_entry(outcomes: Iterable[Outcome]) -> dict[str, list[Outcome]]:
    """Group outcomes by entry id (for the recommender: one look-up per suggested entry)."""
    grouped: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.entry_id, []).append(outcome)
    return grouped


def _to_row(outcome: Outcome) -> dict[str, Any]:
    row = outcome.to_dict()
    row.pop("id")
    return row


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def outcomes_to_json(outcomes: list[Outcome]) -> dict[str, Any]:
    """The ``opprof-advisor/outcomes/1`` JSON document."""
    grouped = outcomes_by_entry(outcomes)
    return {
        "schema": OUTCOMES_SCHEMA,
        "entries": [
            {
                "id": entry_id,
                "observed": observed_text([o.matched_gain_pct for o in rows if o.matched_gain_pct is not None]),
                "outcomes": [o.to_dict() for o in rows],
            }
            for entry_id, rows in sorted(grouped.items())
        ],
    }


__all__ = [
    "Outcome",
    "build_outcome",
    "list_outcomes",
    "matched_families",
    "outcomes_by_entry",
    "outcomes_to_json",
    "record_outcome",
    "remove_outcomes",
]
