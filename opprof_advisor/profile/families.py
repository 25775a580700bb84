"""Operator families of a profile: time, share, share per unit class, dominant unit and bound, summed once.

The profile document (``families``), the HTML charts and ``advisor compare`` all read these
totals, so a family's time is added up in one place. A family's *unit* is the unit that holds
most of its time; its *bound* is that of its rows with a known bound class holding most time
(``unknown`` when none is known). Ties break by name, so the result never depends on row order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from opprof_advisor.core.models import OpTypeStat
from opprof_advisor.core.records import Record
from opprof_advisor.core.vocabulary import UNIT_CLASS


@dataclass
class FamilyTotal(Record):
    """One operator family summed over its op-type rows."""

    family: str
    time_us: float = 0.0
    share: float = 0.0  # of device time, 0..1
    count: int = 0
    unit_times: dict[str, float] = field(default_factory=dict)  # unit id -> µs
    bound_times: dict[str, float] = field(default_factory=dict)  # known bound class -> µs
    class_shares: dict[str, float] = field(default_factory=dict)  # vocabulary.UNIT_CLASS value -> share

    @property
    def unit(self) -> str | None:
        return heaviest(self.unit_times)

    @property
    def bound(self) -> str:
        return heaviest(self.bound_times) or "unknown"

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "time_us": round(self.time_us, 3), "share": round(self.share, 6),
                "count": self.count, "unit": self.unit, "bound": self.bound,
                "class_shares": {name: round(share, 6) for name, share in self.class_shares.items()}}


def heaviest(times: Mapping[str, float]) -> str | None:
    """The key with the most time (ties: the first name in sorted order), None when empty."""
    if not times:
        return None
    return max(sorted(times), key=lambda key: times[key])


def most_common(counts: Mapping[Any, float], n: int) -> list[tuple[Any, float]]:
    """The ``n`` keys with the largest values and those values, the first seen among equals: ``Counter.most_common``
    of a plain dict (a profile of a million op types keeps a dict per one; a million Counters cost seconds)."""
    if n <= 0 or not counts:
        return []
    if n == 1 or len(counts) == 1:
        return [max(counts.items(), key=itemgetter(1))]
    return heapq.nlargest(n, counts.items(), key=itemgetter(1))


def family_totals(rows: Iterable[OpTypeStat], alias: Mapping[str, str] | None = None) -> dict[str, FamilyTotal]:
    """family -> its total, in first-seen order; ``alias`` renames families (one kernel under two names)."""
    totals: dict[str, FamilyTotal] = {}
    alias = alias or {}
    for row in rows:
        name = alias.get(row.family, row.family)
        total = totals.get(name)
        if total is None:
            total = totals[name] = FamilyTotal(name)
        total.time_us += row.time_us
        total.share += row.share
        total.count += row.count
        total.unit_times[row.unit] = total.unit_times.get(row.unit, 0.0) + row.time_us
        cls = UNIT_CLASS.get(row.unit or "unknown", "unknown")
        total.class_shares[cls] = total.class_shares.get(cls, 0.0) + row.share
        if row.bound and row.bound != "unknown":
            total.bound_times[row.bound] = total.bound_times.get(row.bound, 0.0) + row.time_us
    return totals


def ranked_families(rows: Iterable[OpTypeStat]) -> list[FamilyTotal]:
    """The family totals, largest share first (then by name)."""
    return sorted(family_totals(rows).values(), key=lambda total: (-total.share, total.family))


def families_to_json(rows: Iterable[OpTypeStat]) -> list[dict[str, Any]]:
    """The ``families`` list of the profile document."""
    return [total.to_json() for total in ranked_families(rows)]


def rows_from_json(op_types: Iterable[Mapping[str, Any]]) -> list[OpTypeStat]:
    """Op-type rows back from a profile document's ``op_types`` (for documents written without ``families``)."""
    rows = []
    for item in op_types:
        if not isinstance(item, Mapping):
            continue
        rows.append(OpTypeStat(op_type=str(item.get("op_type") or "?"),
                               family=str(item.get("family") or item.get("op_type") or "?"),
                               unit=str(item.get("unit") or "unknown"), count=_number(item.get("count"), int),
                               time_us=_number(item.get("time_us"), float), share=_number(item.get("share"), float),
                               bound=str(item.get("bound") or "unknown")))
    return rows


def _number(value: Any, kind):
    try:
        return kind(value) if value is not None and not isinstance(value, bool) else kind(0)
    except (TypeError, ValueError):
        return kind(0)
