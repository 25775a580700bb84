"""Measured outcomes of applied advice, and how they calibrate a KB entry's expected gain.

An outcome is what a user measured after applying one entry: the time of the entry's operators
before and after, the end-to-end device time before and after, fingerprints of both profiles,
chip/CANN where the profiles say, the date and a free note. Outcomes are user data (not derived
from the markdown): ``opprof_advisor.store`` keeps them in their own migrated SQLite file beside
the index (``<index>.outcomes.db``), so KB rebuilds and a corrupt index never touch them. They are
exported as JSON (``outcomes_to_json``) or markdown (``render/markdown.py``) to contribute back to ``kb/``.

How ``advisor suggest`` uses them: load once per run with
``outcomes_by_entry(list_outcomes(db_path=db))``; for each suggested entry with outcomes call
``calibrate(entry, its_outcomes, matched_share)`` (the share of device time of the entry's matched
operators, 0..1) and show ``Calibration.expected_low_pct`` / ``expected_high_pct`` (% of device
time, already scaled and bounded by the share) with ``Calibration.basis``, and ``Calibration.text``.

Calibration rule (``calibrate``)
--------------------------------
Gains are in % of the matched operators' time (the KB ``operators`` scope), positive = faster.

* Observed band: the minimum and maximum of the recorded operator-scope gains; their median is
  reported as "observed N times: median X % (range A–B %)".
* Weight of the observations: ``w = n / (n + PRIOR_WEIGHT)`` with ``PRIOR_WEIGHT = 3``: the KB
  range counts as three observations, so one outcome moves it a quarter of the way, three
  outcomes half-way, and the literature fades as outcomes accumulate.
* Calibrated range: ``low = (1 - w) * kb_low + w * observed_min`` and
  ``high = (1 - w) * kb_high + w * observed_max`` — the KB range slides toward the observed band
  (narrowing or widening to match it).  An entry without an operator-scope KB gain (no sourced
  figure, or a case's end-to-end result) takes the observed band alone.
* Clamp: the operator-scope range stays within −100 … 100 %, so the expected end-to-end gain
  (range × the matched operators' share of device time, Amdahl) never exceeds that share.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from opprof_advisor.compare import Comparison, not_like_for_like, profile_fingerprint
from opprof_advisor.errors import OutcomesError
from opprof_advisor.models import Entry, Profile
from opprof_advisor.operators import family_or_self

OUTCOMES_SCHEMA = "opprof-advisor/outcomes/1"

class OutcomeRefused(OutcomesError):
    """The comparison cannot support a measured outcome."""


#: How many observations the KB range is worth when blending (see the module docstring).
PRIOR_WEIGHT = 3.0


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


@dataclass(frozen=True)
class Calibration:
    """An entry's expected gain after taking its recorded outcomes into account."""

    entry_id: str
    n: int  # outcomes with a measured operator-scope gain
    median_pct: float | None
    min_pct: float | None
    max_pct: float | None
    median_e2e_pct: float | None
    weight: float  # weight of the observations against the KB range, 0..1
    low_pct: float | None  # calibrated operator-scope range
    high_pct: float | None
    expected_low_pct: float | None  # × matched share: % of the profile's device time
    expected_high_pct: float | None
    basis: str
    text: str  # "observed N times: median X % (range A–B %)", "" without outcomes


# --------------------------------------------------------------------------------------------
# Building an outcome from a comparison
# --------------------------------------------------------------------------------------------


def matched_families(entry: Entry, profile: Profile) -> list[str]:
    """The families of ``profile`` the entry is about: its operators, else its symptoms' op types."""
    present = {row.family for row in profile.op_types}
    families = [name for name in entry.operators if name in present]
    if families:
        return families
    wanted = set(entry.symptoms)
    found: list[str] = []
    for symptom in profile.symptoms:
        if symptom.id in wanted:
            for op_type in symptom.op_types:
                family = family_or_self(op_type)
                if family in present and family not in found:
                    found.append(family)
    return found


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
# Calibration
# --------------------------------------------------------------------------------------------


def calibrate(entry: Entry, outcomes: Iterable[Outcome], matched_share: float) -> Calibration:
    """Blend the entry's KB gain range with its recorded outcomes (rule in the module docstring).

    ``matched_share`` is the share (0..1) of the current profile's device time spent in the
    entry's matched operators; the expected end-to-end range is scaled by it and never exceeds it.
    """
    mine = [o for o in outcomes if o.entry_id == entry.id]
    gains = sorted(o.matched_gain_pct for o in mine if o.matched_gain_pct is not None)
    e2e = [o.e2e_gain_pct for o in mine if o.e2e_gain_pct is not None]
    prior = entry.gain if entry.gain is not None and entry.gain.scope == "operators" else None
    n = len(gains)
    weight = n / (n + PRIOR_WEIGHT) if prior is not None else (1.0 if n else 0.0)
    low, high, basis = _blend(prior, gains, weight)
    share = max(0.0, min(1.0, matched_share))
    expected_low = None if low is None else low * share
    expected_high = None if high is None else high * share
    return Calibration(
        entry_id=entry.id,
        n=n,
        median_pct=statistics.median(gains) if gains else None,
        min_pct=gains[0] if gains else None,
        max_pct=gains[-1] if gains else None,
        median_e2e_pct=statistics.median(e2e) if e2e else None,
        weight=weight,
        low_pct=low,
        high_pct=high,
        expected_low_pct=expected_low,
        expected_high_pct=expected_high,
        basis=basis,
        text=observed_text(gains),
    )


def _blend(prior, gains: list[float], weight: float) -> tuple[float | None, float | None, str]:
    if not gains and prior is None:
        return None, None, "no sourced gain and no recorded outcome"
    if not gains:
        return _clamp(prior.low_pct), _clamp(prior.high_pct), f"KB range {prior.low_pct:g}–{prior.high_pct:g} %"
    if prior is None:
        return _clamp(gains[0]), _clamp(gains[-1]), f"{observed_text(gains)} (no operator-scope KB range)"
    low = (1 - weight) * prior.low_pct + weight * gains[0]
    high = (1 - weight) * prior.high_pct + weight * gains[-1]
    basis = (
        f"KB range {prior.low_pct:g}–{prior.high_pct:g} % moved {weight:.0%} toward the {observed_text(gains)}"
    )
    return _clamp(min(low, high)), _clamp(max(low, high)), basis


def _clamp(value: float) -> float:
    return max(-100.0, min(100.0, float(value)))


def observed_text(gains: list[float]) -> str:
    """'observed N times: median X % (range A–B %)' for operator-scope gains; '' for none."""
    if not gains:
        return ""
    ordered = sorted(gains)
    times = "time" if len(ordered) == 1 else "times"
    median = statistics.median(ordered)
    return f"observed {len(ordered)} {times}: median {median:.0f} % (range {ordered[0]:.0f}–{ordered[-1]:.0f} %)"


# --------------------------------------------------------------------------------------------
# Persistence (owned by opprof_advisor.store: a database beside the index)
# --------------------------------------------------------------------------------------------


def record_outcome(outcome: Outcome, db_path: Path | None = None, *, force: bool = False) -> Outcome:
    """Store an outcome beside the index database ``db_path``; returns it with its id.

    A pair of profiles is recorded once (store.DuplicateOutcome); ``force`` only lets another
    entry record a pair that is already recorded.
    """
    from opprof_advisor import store

    outcome.id = store.record_outcome(_to_row(outcome), path=db_path, force=force)
    return outcome


def remove_outcomes(ids: Iterable[int], db_path: Path | None = None) -> list[Outcome]:
    """Delete recorded outcomes by id and return them (an unknown id removes nothing: OutcomesError)."""
    from opprof_advisor import store

    return [Outcome.from_dict(row) for row in store.remove_outcomes(list(ids), path=db_path)]


def list_outcomes(entry_id: str | None = None, db_path: Path | None = None) -> list[Outcome]:
    """Recorded outcomes, oldest first (of one entry when ``entry_id`` is given)."""
    from opprof_advisor import store

    return [Outcome.from_dict(row) for row in store.list_outcomes(entry_id, path=db_path)]


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
    "Calibration",
    "Outcome",
    "build_outcome",
    "calibrate",
    "list_outcomes",
    "matched_families",
    "observed_text",
    "outcomes_by_entry",
    "outcomes_to_json",
    "record_outcome",
    "remove_outcomes",
]
