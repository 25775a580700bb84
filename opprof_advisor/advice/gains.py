"""Expected gains on one scale: microseconds saved, never more than the profile allows.

Every candidate has a **stake**: the time of the rows its backing symptoms concern (the Amdahl
ceiling). Its expected saving is ``stake × fraction``, where the fraction comes, in this order, from

1. **sourced**: the entry's own ``gain`` range with ``scope: operators`` (a fraction of its operators'
   time, from a cited source), applied to the rows of the entry's own operator families only;
2. **calibrated**: that range moved toward the outcomes recorded with ``advisor compare --applied``
   (``calibrate``, below);
3. **model estimate**: the roofline's band for the hot kernels (``roofline.model_gain_for``), only for
   entries that make a kernel itself faster (the pipe-bound, block-dim, balance and memory symptoms);
4. **none**: no figure applies. The suggestion shows no gain, and counts DEFAULT_FRACTION of its stake.

Ranked by that saving times the confidence the kind of evidence gives (CONFIDENCE): the same figure
counts fully behind a problem symptom, a tenth behind a descriptive one, a fiftieth behind none.

A symptom that bounds what fixing it can save (``Symptom.ceiling_us``: the exposed part of
communication, idle core slots, a block against the mean …) caps the saving. Percentages are of the
profile's reference time: the step's wall time where the profile has a step split, else device time.

Calibration rule (``calibrate``)
--------------------------------
Recorded outcomes (``outcomes.Outcome``, from ``advisor compare --applied``) are gains in % of the
matched operators' time (the KB ``operators`` scope), positive = faster.

* Observed band: the minimum and maximum of the recorded operator-scope gains; their median is
  reported as "observed N times: median X % (range A–B %)" (``Calibration.text``).
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

from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Protocol, Sequence

from opprof_advisor.core.i18n import M_, N_, Message, join_messages
from opprof_advisor.core.models import Entry, Profile
from opprof_advisor.core.records import Record
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.profile.roofline import model_gain_for
from statistics import median


class RecordedOutcome(Protocol):
    """What calibration reads of a recorded outcome (``outcomes.Outcome``); a Protocol, so this module needs
    no import of the outcomes module, which imports this one."""

    entry_id: str
    matched_gain_pct: float | None
    e2e_gain_pct: float | None


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
class ExpectedGain(Record):
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
    basis = M_("{low}–{high} % of {what} time ({metric}, {source}) × their {time} (Amdahl)",
               low=_pct(gain.low_pct), high=_pct(gain.high_pct), what=_operators(operators), metric=gain.metric,
               source=gain.source, time=U.time(fixed_us))
    return gain_of(low * fixed_us, high * fixed_us, profile, basis, "sourced", ceiling_us)


def model_gain(profile: Profile, op_types: Sequence[str], ceiling_us: float | None) -> ExpectedGain | None:
    """The roofline's model-estimate band over ``op_types``; None where the roofline has none."""
    band = model_gain_for(profile, op_types)
    if band is None or band.high <= 0:
        return None
    return gain_of(band.low * band.time_us, band.high * band.time_us, profile, band.basis, "model estimate",
                   ceiling_us)


def calibrated_gain(entry: Entry, outcomes: list[Any], fixed_us: float, profile: Profile,
                    operators: Sequence[str], ceiling_us: float | None) -> tuple[ExpectedGain | None, str]:
    """The expected gain with the entry's recorded outcomes blended in (``calibrate``), and the
    "observed N times ..." text of those outcomes (``""`` without any)."""
    share = fixed_us / profile.reference_us if profile.reference_us else 0.0
    calibration = calibrate(entry, outcomes, share)
    if calibration.low_pct is None or calibration.high_pct is None or fixed_us <= 0:
        return None, calibration.text
    basis = join_messages([calibration.basis, M_("× the {time} of {what} (Amdahl)", time=U.time(fixed_us),
                                                 what=_operators(operators))], "; ")
    low, high = calibration.low_pct / 100 * fixed_us, calibration.high_pct / 100 * fixed_us
    return gain_of(low, high, profile, basis, "calibrated", ceiling_us), calibration.text


def value_us(gain: ExpectedGain | None, stake_us: float, kind: str, ceiling_us: float | None) -> float:
    """What a suggestion is ranked by: its saving if it applies (mid-range, else DEFAULT_FRACTION of the
    stake, capped by the ceiling) times the confidence its evidence gives."""
    saving = gain.mid_us if gain is not None else stake_us * DEFAULT_FRACTION
    if ceiling_us is not None:
        saving = min(saving, ceiling_us)
    return saving * CONFIDENCE[kind]


def _pct(value: float) -> str:
    return f"{value:g}"


def _operators(operators: Sequence[str]) -> str:
    """The operators a figure is about, as a basis names them (a Message says "the matched operators" in Chinese)."""
    return ", ".join(operators) or N_("the matched operators")


def gain_note(entry: Entry) -> str | None:
    """The note for an entry whose gain cannot be scaled to this profile, else None."""
    gain = entry.gain
    if gain is None:
        return M_("{id}: no sourced gain figure, so no expected gain is given", id=entry.id)
    if gain.estimate:
        return M_("{id}: {low}–{high} % {metric} is an unmeasured estimate ({source}); not an expected gain for this "
                  "profile", id=entry.id, low=_pct(gain.low_pct), high=_pct(gain.high_pct), metric=gain.metric,
                  source=gain.source)
    if gain.scope == "end_to_end" or entry.kind == "case":
        where = N_("end to end") if gain.scope == "end_to_end" else N_("on its operators' time")
        return M_("{id}: observed in that case: {low}–{high} % {metric} {where} ({source}); not an expected gain for "
                  "this profile", id=entry.id, low=_pct(gain.low_pct), high=_pct(gain.high_pct), metric=gain.metric,
                  where=where, source=gain.source)
    return None


# --------------------------------------------------------------------------------------------
# Calibration by recorded outcomes
# --------------------------------------------------------------------------------------------

#: How many observations the KB range is worth when blending (see the module docstring).
PRIOR_WEIGHT = 3.0



class Calibration(NamedTuple):  # a NamedTuple: built at start-up, ~5x cheaper than a frozen dataclass
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





def calibrate(entry: Entry, outcomes: Iterable[RecordedOutcome], matched_share: float) -> Calibration:
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
        median_pct=_median(gains) if gains else None,
        min_pct=gains[0] if gains else None,
        max_pct=gains[-1] if gains else None,
        median_e2e_pct=_median(e2e) if e2e else None,
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
        return None, None, M_("no sourced gain and no recorded outcome")
    if not gains:
        return _clamp(prior.low_pct), _clamp(prior.high_pct), M_("KB range {low:g}–{high:g} %", low=prior.low_pct,
                                                                  high=prior.high_pct)
    if prior is None:
        return _clamp(gains[0]), _clamp(gains[-1]), M_("{observed} (no operator-scope KB range)",
                                                       observed=observed_text(gains))
    low = (1 - weight) * prior.low_pct + weight * gains[0]
    high = (1 - weight) * prior.high_pct + weight * gains[-1]
    basis = M_("KB range {low:g}–{high:g} % moved {weight:.0%} toward the {observed}", low=prior.low_pct,
               high=prior.high_pct, weight=weight, observed=observed_text(gains))
    return _clamp(min(low, high)), _clamp(max(low, high)), basis


def _clamp(value: float) -> float:
    return max(-100.0, min(100.0, float(value)))


def observed_text(gains: list[float]) -> str:
    """'observed N times: median X % (range A–B %)' for operator-scope gains; '' for none."""
    if not gains:
        return ""
    ordered = sorted(gains)
    template = (N_("observed {count} time: median {median:.0f} % (range {low:.0f}–{high:.0f} %)") if len(ordered) == 1
                else N_("observed {count} times: median {median:.0f} % (range {low:.0f}–{high:.0f} %)"))
    return Message(template, count=len(ordered), median=_median(ordered), low=ordered[0], high=ordered[-1])


def _median(values: list[float]) -> float:
    # statistics is imported only when there are recorded outcomes: it pulls in fractions and decimal

    return median(values)
