"""An entry's ``requires:`` preconditions, checked against a profile.

Each item of ``Entry.requires`` is ``{key: [values]}`` (vocabulary.REQUIRE_KEYS); all must hold and a
list means "any of these". A requirement the profile cannot answer (no dtypes recorded, a profile that
cannot tell training from inference) counts as not met: advice that may not apply is worse than none.
The recommender never suggests an entry with an unmet requirement; ``--explain`` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from opprof_advisor.models import Entry, OpTypeStat, Profile
from opprof_advisor.vocabulary import canonical_dtype


@dataclass(frozen=True)
class Check:
    """One requirement and what the profile said about it."""

    key: str
    values: tuple[Any, ...]
    met: bool
    why: str  # what was found, or why it cannot be judged

    def text(self) -> str:
        wanted = ", ".join(str(v) for v in self.values)
        return f"{self.key} {wanted}: {'met' if self.met else 'not met'} ({self.why})"


def check_requirements(entry: Entry, profile: Profile, rows: Sequence[OpTypeStat],
                       stake_share: float) -> list[Check]:
    """Every requirement of ``entry`` against ``profile``; ``rows`` are the rows the entry addresses."""
    return [_check(key, tuple(values), profile, rows, stake_share)
            for item in entry.requires for key, values in item.items()]


def unmet(checks: Sequence[Check]) -> list[Check]:
    return [c for c in checks if not c.met]


def _check(key: str, values: tuple[Any, ...], profile: Profile, rows: Sequence[OpTypeStat],
           stake_share: float) -> Check:
    wanted = set(values)
    if key == "symptom":
        found = sorted(profile.symptom_ids() & wanted)
        return Check(key, values, bool(found), f"found {', '.join(found)}" if found else "none of them in the profile")
    if key == "operator":
        present = {row.family for row in profile.op_types if row.time_us > 0}
        found = sorted(present & wanted)
        return Check(key, values, bool(found), f"{', '.join(found)} ran" if found else "none of them ran")
    if key == "unit":
        addressed = rows or profile.op_types
        units = sorted({row.unit for row in addressed})
        if set(units) <= {"unknown"}:
            return Check(key, values, False, "the unit is not recorded (profiler level0 or a timeline)")
        found = sorted(set(units) & wanted)
        return Check(key, values, bool(found), f"ran on {', '.join(units)}")
    if key == "dtype":
        addressed = rows or profile.op_types
        dtypes = sorted({canonical_dtype(d) for row in addressed for d in row.dtypes})
        if not dtypes:
            return Check(key, values, False, "input data types are not recorded")
        found = sorted(set(dtypes) & wanted)
        return Check(key, values, bool(found), f"inputs are {', '.join(dtypes)}")
    if key == "producer":
        return Check(key, values, profile.producer in wanted, f"written by {profile.producer or 'an unknown tool'}")
    if key == "workload":
        if profile.workload is None:
            return Check(key, values, False, "the profile cannot tell training from inference")
        return Check(key, values, profile.workload in wanted, f"the run is {profile.workload}")
    if key == "min_share":
        least = float(values[0])
        return Check(key, values, stake_share >= least, f"{stake_share:.1%} of the {profile.reference} at stake")
    return Check(key, values, False, f"unknown requirement {key!r}")
