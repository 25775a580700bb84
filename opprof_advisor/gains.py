"""Expected gains on one scale: microseconds saved, never more than the profile allows.

Every candidate has a **stake**: the time of the rows its backing symptoms concern (the Amdahl
ceiling). Its expected saving is ``stake × fraction``, where the fraction comes, in this order, from

1. **sourced**: the entry's own ``gain`` range with ``scope: operators`` (a fraction of its operators'
   time, from a cited source), applied to the rows of the entry's own operator families only;
2. **calibrated**: that range moved toward the outcomes recorded with ``advisor compare --applied``
   (``outcomes.calibrate``);
3. **model estimate**: the roofline's band for the hot kernels (``roofline.model_gain_for``), only for
   entries that make a kernel itself faster (the pipe-bound, block-dim, balance and memory symptoms);
4. **none**: no figure applies. The suggestion shows no gain, and counts DEFAULT_FRACTION of its stake.

Ranked by that saving times the confidence the kind of evidence gives (CONFIDENCE): the same figure
counts fully behind a problem symptom, a tenth behind a descriptive one, a fiftieth behind none.

A symptom that bounds what fixing it can save (``Symptom.ceiling_us``: the exposed part of
communication, idle core slots, a block against the mean …) caps the saving. Percentages are of the
profile's reference time: the step's wall time where the profile has a step split, else device time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from opprof_advisor.models import Entry, Profile

#: What a suggestion is worth is its expected saving *if it applies* times how likely the evidence says it
#: applies. The saving if it applies is its figure (sourced, calibrated, model estimate), else
#: DEFAULT_FRACTION of the stake. How likely, by the kind of evidence behind the entry (CONFIDENCE): a
#: problem symptom (a waste with a known remedy) 1; a descriptive one 0.1 (every kernel has a bound class,
#: which says which pipe limits it, not that anything is wasted); none, its operators merely ran, 0.02.
#: This project's priors: at equal time a problem outranks a description ten to one, and a description
#: with a figure of 6 % or more outranks an entry nothing points at. As stake × prior: problem 0.30,
#: descriptive 0.03, loose 0.006.
DEFAULT_FRACTION = 0.30
CONFIDENCE: dict[str, float] = {"problem": 1.0, "descriptive": 0.1, "loose": 0.02}
PRIORS: dict[str, float] = {kind: DEFAULT_FRACTION * weight for kind, weight in CONFIDENCE.items()}

#: Symptoms whose fix makes the kernels themselves faster: for these the roofline's headroom bounds and
#: estimates the saving where no sourced figure applies.
KERNEL_SYMPTOMS = frozenset({
    "cube_bound", "vector_bound", "mte2_bound", "mte3_bound", "scalar_bound", "fixpipe_bound", "no_bound",
    "low_block_dim", "low_parallelism", "block_imbalance", "ub_bank_conflict", "l2_cache_miss",
})


@dataclass
class ExpectedGain:
    """A gain in percent of the profile's reference time (the step, else device time), with the time saved."""

    low_pct: float
    high_pct: float
    saved_us_low: float
    saved_us_high: float
    basis: str
    kind: str = "sourced"  # sourced | calibrated | model estimate
    reference: str = "device time"  # what the percentages are of: "step" or "device time"

    @property
    def mid_us(self) -> float:
        return (self.saved_us_low + self.saved_us_high) / 2


def gain_of(low_us: float, high_us: float, profile: Profile, basis: str, kind: str,
            ceiling_us: float | None = None) -> ExpectedGain:
    """An ExpectedGain from the time it saves, capped by a symptom's ceiling, in % of the reference time."""
    if ceiling_us is not None:
        low_us, high_us = min(low_us, ceiling_us), min(high_us, ceiling_us)
    reference = profile.reference_us
    pct = (lambda us: 100.0 * us / reference) if reference else (lambda us: 0.0)
    return ExpectedGain(low_pct=round(pct(low_us), 3), high_pct=round(pct(high_us), 3),
                        saved_us_low=round(low_us, 3), saved_us_high=round(high_us, 3), basis=basis, kind=kind,
                        reference=profile.reference)


def sourced_gain(entry: Entry, fixed_us: float, profile: Profile, operators: Sequence[str],
                 ceiling_us: float | None) -> ExpectedGain | None:
    """The entry's operators-scope range × the time of its own operators' rows (Amdahl); None without one."""
    gain = entry.gain
    if gain is None or gain.scope != "operators" or fixed_us <= 0 or entry.kind == "case":
        return None
    low, high = min(gain.low_pct, 100.0) / 100, min(gain.high_pct, 100.0) / 100
    what = ", ".join(operators) or "the matched operators"
    basis = (f"{_pct(gain.low_pct)}–{_pct(gain.high_pct)} % of {what} time ({gain.metric}, {gain.source}) × their "
             f"{fixed_us:,.1f} us (Amdahl)")
    return gain_of(low * fixed_us, high * fixed_us, profile, basis, "sourced", ceiling_us)


def model_gain(profile: Profile, op_types: Sequence[str], ceiling_us: float | None) -> ExpectedGain | None:
    """The roofline's model-estimate band over ``op_types``; None where the roofline has none."""
    from opprof_advisor.roofline import model_gain_for

    band = model_gain_for(profile, op_types)
    if band is None or band.high <= 0:
        return None
    return gain_of(band.low * band.time_us, band.high * band.time_us, profile, band.basis, "model estimate",
                   ceiling_us)


def calibrated_gain(entry: Entry, outcomes: list[Any], fixed_us: float, profile: Profile,
                    operators: Sequence[str], ceiling_us: float | None) -> ExpectedGain | None:
    """The expected gain with the entry's recorded outcomes blended in (rule: ``outcomes.calibrate``)."""
    from opprof_advisor.outcomes import calibrate

    share = fixed_us / profile.reference_us if profile.reference_us else 0.0
    calibration = calibrate(entry, outcomes, share)
    if calibration.low_pct is None or calibration.high_pct is None or fixed_us <= 0:
        return None
    what = ", ".join(operators) or "the matched operators"
    basis = f"{calibration.basis}; × the {fixed_us:,.1f} us of {what} (Amdahl)"
    low, high = calibration.low_pct / 100 * fixed_us, calibration.high_pct / 100 * fixed_us
    return gain_of(low, high, profile, basis, "calibrated", ceiling_us)


def value_us(gain: ExpectedGain | None, stake_us: float, kind: str, ceiling_us: float | None) -> float:
    """What a suggestion is ranked by: its saving if it applies (mid-range, else DEFAULT_FRACTION of the
    stake, capped by the ceiling) times the confidence its evidence gives."""
    saving = gain.mid_us if gain is not None else stake_us * DEFAULT_FRACTION
    if ceiling_us is not None:
        saving = min(saving, ceiling_us)
    return saving * CONFIDENCE[kind]


def _pct(value: float) -> str:
    return f"{value:g}"


def gain_note(entry: Entry) -> str | None:
    """The note for an entry whose gain cannot be scaled to this profile, else None."""
    gain = entry.gain
    if gain is None:
        return f"{entry.id}: no sourced gain figure, so no expected gain is given"
    if gain.estimate:
        return (f"{entry.id}: {_pct(gain.low_pct)}–{_pct(gain.high_pct)} % {gain.metric} is an unmeasured estimate "
                f"({gain.source}); not an expected gain for this profile")
    if gain.scope == "end_to_end" or entry.kind == "case":
        where = "end to end" if gain.scope == "end_to_end" else "on its operators' time"
        return (f"{entry.id}: observed in that case: {_pct(gain.low_pct)}–{_pct(gain.high_pct)} % {gain.metric}"
                f" {where} ({gain.source}); not an expected gain for this profile")
    return None
