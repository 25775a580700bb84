"""A finding: one diagnosis of one profile, in its own numbers, with the time it covers and a modelled gain.

Rules (advice/rules_run.py, advice/rules_kernel.py) make findings from the profile's facts; the
remedies of the knowledge base are hung under them (advice/remedies.py); advice/suggest.py ranks them.

An expected gain (``Gain``) is a low–high range of µs saved with its basis and its assumptions in one line
(``../shared/GAIN-MODELS.md``): ``model`` (arithmetic on this profile), ``sourced`` (a KB figure whose scope
fits) or ``measured`` (the user's recorded outcomes). Every model is **local then global**: a fraction of
the time the finding covers, never more than that time (Amdahl) nor than the roofline leaves (``bound_us``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from opprof_advisor.core.i18n import Message


class Gain(NamedTuple):  # a NamedTuple, not a dataclass: no inspect / ast import on suggest's path
    """Time a finding's remedy can save, µs, with its basis and assumptions."""

    low_us: float
    high_us: float
    model: str  # model | sourced | measured
    assumptions: Message | str
    observed: str = ""  # measured: "observed N times: median X % (range A–B %)" of the recorded outcomes

    def capped(self, bound_us: float | None) -> "Gain":
        if bound_us is None:
            return self
        bound_us = max(0.0, bound_us)
        if self.high_us <= bound_us:
            return self
        # the bound cuts the range: its high end is the bound, its low end no more than half of it (a range, not a point)
        return self._replace(low_us=min(self.low_us, bound_us / 2), high_us=bound_us)

    @property
    def mid_us(self) -> float:
        return (self.low_us + self.high_us) / 2


def band(time_us: float, low: float, high: float, assumptions: Message | str, model: str = "model") -> Gain:
    """A gain of ``low``..``high`` (fractions, clipped to 0..1) of ``time_us``."""
    low, high = max(0.0, min(low, 1.0)), max(0.0, min(high, 1.0))
    return Gain(time_us * min(low, high), time_us * high, model, assumptions)


class Finding:
    """One diagnosis; ``stake_us`` is the time it covers; ``gain`` None only where no honest model exists
    (then ``measure`` says what to collect to get one)."""

    def __init__(self, id: str, family: str, title: Message | str, stake_us: float, gain: Gain | None,
                 symptoms: list[str], *, op_types: list[str] | None = None, operators: list[str] | None = None,
                 evidence: list[dict[str, Any]] | None = None, confidence: str = "high",
                 measure: Message | str | None = None, remedy_symptoms: list[str] | None = None,
                 remedy_tags: list[str] | None = None, first_step: Message | str | None = None,
                 story: str | None = None, note: bool = False) -> None:
        self.id = id
        self.family = family  # which rule made it (the gain model's family)
        self.title = title
        self.stake_us = stake_us
        self.gain = gain
        self.symptoms = symptoms  # the profile symptoms it rests on: remedies are looked up by these
        self.op_types = op_types or []
        self.operators = operators or []  # their families
        self.evidence = evidence or []
        self.confidence = confidence  # high | medium | low
        self.measure = measure  # what to collect when there is no gain (or to narrow it)
        self.remedy_symptoms = remedy_symptoms  # remedies answer these (default: ``symptoms``)
        #: "bytes": a kernel at its roof, whose remedies must move fewer bytes (never "use the cores better")
        self.remedy_tags = remedy_tags or []
        self.first_step = first_step  # said when no KB remedy applies
        #: the KB pattern that tells this diagnosis's whole story: always listed among its remedies when it applies
        self.story = story
        self.note = note  # what cannot be judged: said as a note under the table (its title), not ranked as a row
