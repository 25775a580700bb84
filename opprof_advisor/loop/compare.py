"""Compare two operator profiles: before/after a change, or device vs simulator for one kernel.

Works on normalised ``Profile`` objects, so BEFORE and AFTER may come from any supported format.
Rows are per operator family (``operators.FAMILIES``), because a fix often renames the kernel
(``NonMaxSuppressionV3`` on the AI CPU becomes ``BatchMultiClassNMS`` on the AI Core) while the
family stays the same.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from opprof_advisor.profile.families import family_totals
from opprof_advisor.core.i18n import M_, N_, Message, join_messages
from opprof_advisor.core.models import Profile
from opprof_advisor.core.vocabulary import UNIT_CLASS
from opprof_advisor.core.units import TEXT as U

SCHEMA = "opprof-advisor/compare/1"

#: Below this weighted family overlap the two profiles are flagged as different workloads: in
#: before/after runs of one model nearly all time sits in families both profiles have (a fix
#: moves or shrinks families, it rarely replaces most of them).
MIN_FAMILY_OVERLAP = 0.6
#: ... or when fewer than this fraction of the family names are shared (Jaccard index).
MIN_FAMILY_JACCARD = 0.4
#: Families below this share of device time on both sides do not get "cannot judge" notes.
NOTE_SHARE = 0.01
#: How the notes name the two sides (in Chinese through the catalogue, like the table's headers).
SIDES = {"before": N_("BEFORE"), "after": N_("AFTER")}


@dataclass
class FamilyDelta:
    """Time of one operator family before and after, with its dominant unit and bound class."""

    family: str
    before_us: float
    after_us: float
    before_share: float
    after_share: float
    unit_before: str | None
    unit_after: str | None
    bound_before: str | None
    bound_after: str | None
    pct_refused: bool = False  # a simulated side's time is only a lower bound

    @property
    def delta_pct(self) -> float | None:
        """Change of the family's time in % of its BEFORE time; None when it appeared or is not comparable."""
        if self.before_us <= 0 or self.pct_refused:
            return None
        return (self.after_us - self.before_us) / self.before_us * 100.0

    @property
    def status(self) -> str:
        if self.before_us <= 0 < self.after_us:
            return "appeared"
        if self.after_us <= 0 < self.before_us:
            return "vanished"
        return "both"

    @property
    def unit_changed(self) -> bool:
        known = {None, "", "unknown"}  # a level0 profile records no unit: missing, not changed
        if self.status != "both" or self.unit_before in known or self.unit_after in known:
            return False
        return UNIT_CLASS.get(self.unit_before, self.unit_before) != UNIT_CLASS.get(self.unit_after, self.unit_after)

    @property
    def bound_changed(self) -> bool:
        known = {None, "unknown"}
        if self.status != "both" or self.bound_before in known or self.bound_after in known:
            return False
        return self.bound_before != self.bound_after


@dataclass
class KernelRow:
    """One metric of a single-kernel (msOpProf) profile, side by side."""

    metric: str
    before: Any
    after: Any


@dataclass
class Comparison:
    """The result of ``compare_profiles``."""

    before: Profile
    after: Profile
    families: list[FamilyDelta]  # by max(before_us, after_us), descending
    kernel_rows: list[KernelRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overlap: float = 1.0  # time-weighted share of families both profiles have
    jaccard: float = 1.0  # share of the family names both profiles have
    pct_refused: bool = False  # no % deltas: a simulator side's kernel time is incomplete

    @property
    def total_before_us(self) -> float:
        return self.before.device_time_us

    @property
    def total_after_us(self) -> float:
        return self.after.device_time_us

    @property
    def total_delta_pct(self) -> float | None:
        if self.total_before_us <= 0 or self.pct_refused:
            return None
        return (self.total_after_us - self.total_before_us) / self.total_before_us * 100.0

    def family(self, name: str) -> FamilyDelta | None:
        """The row of one family, or None when neither profile has it."""
        return next((row for row in self.families if row.family == name), None)


# --------------------------------------------------------------------------------------------
# Building the comparison
# --------------------------------------------------------------------------------------------


def compare_profiles(before: Profile, after: Profile) -> Comparison:
    """Compare two profiles per operator family, plus the kernel detail of msOpProf runs."""
    alias = _single_kernel_alias(before, after)
    families = _family_deltas(before, after, alias)
    overlap, jaccard = _family_overlap(before, after, alias)
    comparison = Comparison(before=before, after=after, families=families, overlap=overlap, jaccard=jaccard)
    gap = _incomplete_simulation(before, after)
    if gap:
        comparison.pct_refused = True
        for row in families:
            row.pct_refused = True
    comparison.kernel_rows = _kernel_rows(before.kernel, after.kernel, with_change=not gap)
    comparison.notes = _notes(comparison)
    if gap:
        comparison.notes.append(M_("cannot judge the speed-up: {gap} — no percentage change is given", gap=gap))
    if alias:
        (old, new), = alias.items()
        comparison.notes.append(M_("compared as one kernel: {new} of AFTER is {old} of BEFORE (the simulator "
                                   "records no kernel name)", new=new, old=old))
    return comparison


def _incomplete_simulation(before: Profile, after: Profile) -> str | None:
    """Why a simulator side's kernel time is only a lower bound (readers/msopprof_simulator.py), else None."""
    for side, profile in ((SIDES["before"], before), (SIDES["after"], after)):
        kernel = profile.kernel or {}
        if kernel.get("simulator") and kernel.get("kernel_time_complete") is False:
            gap = kernel.get("kernel_time_gap") or M_("some simulated cores are not timed")
            return M_("the simulated kernel time of {side} ({time}) is a lower bound, {gap}",
                      side=side, time=U.time(profile.device_time_us), gap=gap)
    return None


def _single_kernel_alias(before: Profile, after: Profile) -> dict[str, str]:
    """{AFTER family: BEFORE family} when both are one-kernel msOpProf runs of the same kernel.

    The simulator output names no kernel, so its reader labels the row after the folder; two
    single-kernel runs (device vs simulator, two tilings) are one kernel unless their names differ.
    """
    if not before.kernel or not after.kernel:
        return {}
    old_families = {row.family for row in before.op_types}
    new_families = {row.family for row in after.op_types}
    if len(old_families) != 1 or len(new_families) != 1 or old_families == new_families:
        return {}
    old_name = before.kernel.get("kernel") or before.kernel.get("name")
    new_name = after.kernel.get("kernel") or after.kernel.get("name")
    if old_name and new_name and old_name != new_name:
        return {}
    return {next(iter(new_families)): next(iter(old_families))}


def _family_deltas(before: Profile, after: Profile, alias: dict[str, str]) -> list[FamilyDelta]:
    old, new = family_totals(before.op_types), family_totals(after.op_types, alias)
    rows = []
    for name in set(old) | set(new):
        was, now = old.get(name), new.get(name)
        rows.append(
            FamilyDelta(
                family=name,
                before_us=was.time_us if was else 0.0,
                after_us=now.time_us if now else 0.0,
                before_share=was.share if was else 0.0,
                after_share=now.share if now else 0.0,
                unit_before=was.unit if was else None,
                unit_after=now.unit if now else None,
                bound_before=was.bound if was else None,
                bound_after=now.bound if now else None,
            )
        )
    rows.sort(key=lambda row: (-max(row.before_us, row.after_us), row.family))
    return rows


def _family_overlap(before: Profile, after: Profile, alias: dict[str, str]) -> tuple[float, float]:
    """(time-weighted overlap, Jaccard index) of the two profiles' family sets."""
    old = before.family_shares()
    new = {alias.get(name, name): share for name, share in after.family_shares().items()}
    if not old and not new:
        return 1.0, 1.0
    common = set(old) & set(new)
    jaccard = len(common) / len(set(old) | set(new))

    def coverage(shares: dict[str, float]) -> float:
        total = sum(shares.values())
        return sum(shares[name] for name in common) / total if total > 0 else 0.0

    return min(coverage(old), coverage(new)), jaccard


# --------------------------------------------------------------------------------------------
# msOpProf single-kernel detail
# --------------------------------------------------------------------------------------------

#: Scalar fields of the kernel summary shown side by side, in display order, with their labels.
KERNEL_FIELDS: tuple[tuple[str, str], ...] = (
    ("mode", "mode"),
    ("kernel", "kernel"),
    ("op_type", "kernel type"),
    ("chip", "chip"),
    ("task_duration_us", "task duration (µs)"),
    ("block_dim", "block dim"),
    ("mix_block_dim", "mix block dim"),
    ("block_imbalance", "block imbalance (slowest / mean block)"),
    ("bound_pipe", "busiest pipe"),
)


def kernel_summary(kernel: dict[str, Any] | None) -> dict[str, Any] | None:
    """The comparable part of a msOpProf kernel detail (keys of readers/msopprof_device.py).

    Scalars of KERNEL_FIELDS plus ``pipe_ratios`` {pipe: mean ratio}; the simulator reader's
    detail (readers/msopprof_simulator.py) has the same keys except ``kernel_time_us``. ``block_imbalance`` is the
    worst side's slowest-block / mean-block time (1.0 = even), from ``imbalance`` or, failing
    that, from ``block_time_us``.
    """
    if not kernel:
        return None
    summary: dict[str, Any] = {
        "mode": "simulator" if kernel.get("simulator") else "device",
        "kernel": kernel.get("kernel") or kernel.get("name"),
        "op_type": kernel.get("op_type"),
        "chip": kernel.get("chip"),
        # the simulator reader calls the span of the slowest core kernel_time_us
        "task_duration_us": kernel.get("task_duration_us", kernel.get("kernel_time_us")),
        "block_dim": kernel.get("block_dim"),
        "mix_block_dim": kernel.get("mix_block_dim"),
        "block_imbalance": _block_imbalance(kernel),
        "bound_pipe": (kernel.get("bound") or {}).get("pipe") if isinstance(kernel.get("bound"), dict) else None,
    }
    summary = {key: value for key, value in summary.items() if value is not None}
    ratios = kernel.get("pipe_ratio") or {}
    if isinstance(ratios, dict) and ratios:
        summary["pipe_ratios"] = {k: round(v, 4) for k, v in sorted(ratios.items()) if isinstance(v, (int, float))}
    return summary


def _block_imbalance(kernel: dict[str, Any]) -> float | None:
    worst = None
    for side in (kernel.get("imbalance") or {}).values():
        value = side.get("max_over_mean") if isinstance(side, dict) else None
        if isinstance(value, (int, float)):
            worst = value if worst is None else max(worst, value)
    if worst is None:
        for values in (kernel.get("block_time_us") or {}).values():
            values = [v for v in values or [] if isinstance(v, (int, float))]
            if len(values) >= 2 and sum(values) > 0:
                ratio = max(values) / (sum(values) / len(values))
                worst = ratio if worst is None else max(worst, ratio)
    return None if worst is None else round(worst, 3)


def _index_after(rows: list[KernelRow], metric: str) -> int:
    for position, row in enumerate(rows):
        if row.metric == metric:
            return position + 1
    return len(rows)


def _kernel_rows(before: dict[str, Any] | None, after: dict[str, Any] | None,
                 with_change: bool = True) -> list[KernelRow]:
    old, new = kernel_summary(before), kernel_summary(after)
    if old is None or new is None:
        return []
    rows = [
        KernelRow(label, old.get(key), new.get(key))
        for key, label in KERNEL_FIELDS
        if old.get(key) is not None or new.get(key) is not None
    ]
    old_pipes, new_pipes = old.get("pipe_ratios", {}), new.get("pipe_ratios", {})
    for pipe in sorted(set(old_pipes) | set(new_pipes)):
        rows.append(KernelRow(f"{pipe} ratio", old_pipes.get(pipe), new_pipes.get(pipe)))
    if with_change and old.get("task_duration_us") and new.get("task_duration_us"):
        change = (new["task_duration_us"] - old["task_duration_us"]) / old["task_duration_us"] * 100.0
        change_row = KernelRow("task duration change", None, f"{change:+.1f} %")
        rows.insert(_index_after(rows, "task duration (µs)"), change_row)
    return rows


# --------------------------------------------------------------------------------------------
# Notes
# --------------------------------------------------------------------------------------------


def _notes(comparison: Comparison) -> list[str]:
    before, after = comparison.before, comparison.after
    notes = []
    workloads = _different_workloads(comparison)
    if workloads:
        notes.append(M_("{workloads} — the deltas compare different models, not one change", workloads=workloads))
    notes.extend(_context_notes(before, after))
    for row in comparison.families:
        if row.unit_changed:
            notes.append(M_("{family} moved from {unit_before} to {unit_after}: {before} -> {after} ({change})",
                            family=row.family, unit_before=_unit(row.unit_before), unit_after=_unit(row.unit_after),
                            before=U.time(row.before_us), after=U.time(row.after_us), change=_pct(row.delta_pct)))
    for row in comparison.families:
        if row.bound_changed:
            notes.append(M_("{family} bound class changed: {before} -> {after}",
                            family=row.family, before=row.bound_before, after=row.bound_after))
    appeared = [row for row in comparison.families if row.status == "appeared"]
    vanished = [row for row in comparison.families if row.status == "vanished"]
    if appeared:
        notes.append(M_("appeared: {families}", families=_family_list(appeared, "after")))
    if vanished:
        notes.append(M_("vanished: {families}", families=_family_list(vanished, "before")))
    notes.extend(_missing_bound_notes(comparison))
    if before.kernel and after.kernel:
        kernels = _different_kernels(before, after)
        if kernels:
            notes.append(kernels)
    elif before.kernel or after.kernel:
        side = SIDES["before"] if before.kernel else SIDES["after"]
        notes.append(M_("cannot judge kernel detail side by side: only {side} is a single-kernel msOpProf profile "
                        "(collect both with `advisor collect`)", side=side))
    return notes


def _family_list(rows: list[FamilyDelta], side: str) -> Message:
    """'Family (time, unit), ...' for the families that appeared (``side`` after) or vanished (before)."""
    return join_messages([M_("{family} ({time}, {unit})", family=r.family, time=U.time(getattr(r, f"{side}_us")),
                             unit=_unit(getattr(r, f"unit_{side}"))) for r in rows])


def _different_workloads(comparison: Comparison) -> str | None:
    if comparison.before.kernel and comparison.after.kernel:
        return None  # two single-kernel runs: judged by their kernel names (_different_kernels)
    if comparison.overlap >= MIN_FAMILY_OVERLAP and comparison.jaccard >= MIN_FAMILY_JACCARD:
        return None
    return M_("the profiles look like different workloads: only {overlap:.0%} of the time is in operator families "
              "both have ({jaccard:.0%} of the families are shared)", overlap=comparison.overlap, jaccard=comparison.jaccard)


def _different_kernels(before: Profile, after: Profile) -> str | None:
    old = before.kernel.get("kernel") or before.kernel.get("name")
    new = after.kernel.get("kernel") or after.kernel.get("name")
    if old and new and old != new:
        return M_("the two msOpProf runs profiled different kernels ({old} vs {new})", old=old, new=new)
    return None


def not_like_for_like(comparison: Comparison) -> str | None:
    """Why the comparison does not measure one change of one workload on one chip, or None when it does.

    A measured outcome is only worth recording from such a comparison: two different models, two
    chips or two kernels would credit the entry with a difference it did not make.
    """
    before, after = comparison.before, comparison.after
    if profile_fingerprint(before) == profile_fingerprint(after):
        return M_("BEFORE and AFTER are the same profile (same operators and times): there is no change to measure")
    workloads = _different_workloads(comparison)
    if workloads:
        return workloads
    if before.kernel and after.kernel and _different_kernels(before, after):
        return _different_kernels(before, after)
    if before.chip and after.chip and before.chip != after.chip:
        return M_("the profiles come from different chips ({before} vs {after})", before=before.chip, after=after.chip)
    return None


def _context_notes(before: Profile, after: Profile) -> list[str]:
    notes = []
    if before.chip and after.chip and before.chip != after.chip:
        notes.append(M_("different chips: {before} vs {after} — part of the delta is the hardware",
                        before=before.chip, after=after.chip))
    for key in ("cann", "torch_npu"):
        old, new = before.versions.get(key), after.versions.get(key)
        if old and new and old != new:
            notes.append(M_("different {package} versions: {old} vs {new}", package=key, old=old, new=new))
    if {before.format, after.format} == {"msopprof-device", "msopprof-simulator"}:
        notes.append(M_("device vs simulator: the simulated time is the span of the slowest simulated core, "
                        "not a measured task duration"))
    elif before.format != after.format:
        notes.append(M_("different profile formats: {before} vs {after} — device time is counted the same way "
                        "but coverage of the formats may differ", before=before.format, after=after.format))
    return notes


#: What a side lacks when no hot family has a bound class / a unit: the note for one side, for both.
_BLIND_NOTES = {
    "bound": (N_("cannot judge bound-class changes: {side} has no pipe ratios "
                 "(collect with --aic-metrics=PipeUtilization)"),
              N_("cannot judge bound-class changes: BEFORE and AFTER have no pipe ratios "
                 "(collect with --aic-metrics=PipeUtilization)")),
    "unit": (N_("cannot judge unit changes: {side} has no unit column (level0 profile; collect with "
                "profiler_level=Level1)"),
             N_("cannot judge unit changes: BEFORE and AFTER have no unit column (level0 profile; collect "
                "with profiler_level=Level1)")),
}


def _missing_bound_notes(comparison: Comparison) -> list[str]:
    hot = [r for r in comparison.families if r.status == "both" and max(r.before_share, r.after_share) >= NOTE_SHARE]
    notes = []
    for what, (one_side, both_sides) in _BLIND_NOTES.items():
        sides = _blind_sides(hot, what)
        if sides:
            notes.append(Message(one_side, side=sides[0]) if len(sides) == 1 else Message(both_sides))
    return notes


def _blind_sides(rows: list[FamilyDelta], what: str) -> list[str]:
    """The sides ('BEFORE', 'AFTER') where ``what`` is never known for any of ``rows``."""
    if not rows:
        return []
    return [SIDES[side] for side in ("before", "after")
            if all(getattr(r, f"{what}_{side}") in (None, "", "unknown") for r in rows)]


def _unit(unit: str | None) -> str:
    return UNIT_CLASS.get(unit, unit) if unit else "-"


def _pct(value: float | None) -> str:
    return M_("new") if value is None else f"{value:+.1f} %"


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def profile_fingerprint(profile: Profile) -> str:
    """A short content hash of a profile's op-type rows (independent of where the files lie)."""
    rows = sorted((row.op_type, row.unit, row.count, round(row.time_us, 3)) for row in profile.op_types)
    payload = json.dumps([profile.format, round(profile.device_time_us, 3), rows], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _side_to_json(profile: Profile) -> dict[str, Any]:
    side: dict[str, Any] = {
        "path": profile.path,
        "format": profile.format,
        "device_time_us": _round(profile.device_time_us),
        "chip": profile.chip,
        "versions": dict(profile.versions),
        "fingerprint": profile_fingerprint(profile),
    }
    kernel = kernel_summary(profile.kernel)
    if kernel is not None:
        side["kernel"] = kernel
    return side


def comparison_to_json(comparison: Comparison) -> dict[str, Any]:
    """The ``opprof-advisor/compare/1`` JSON document."""
    return {
        "schema": SCHEMA,
        "before": _side_to_json(comparison.before),
        "after": _side_to_json(comparison.after),
        "total": {
            "before_us": _round(comparison.total_before_us),
            "after_us": _round(comparison.total_after_us),
            "delta_pct": _round(comparison.total_delta_pct),
        },
        "op_types": [
            {
                "op_type": row.family,
                "before_us": _round(row.before_us),
                "after_us": _round(row.after_us),
                "delta_pct": _round(row.delta_pct),
                "unit_before": row.unit_before,
                "unit_after": row.unit_after,
                "before_share": _round(row.before_share, 6),
                "after_share": _round(row.after_share, 6),
                "bound_before": row.bound_before,
                "bound_after": row.bound_after,
                "status": row.status,
            }
            for row in comparison.families
        ],
        "notes": list(comparison.notes),
        "kernel_rows": [{"metric": row.metric, "before": row.before, "after": row.after}
                        for row in comparison.kernel_rows],
    }


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)
