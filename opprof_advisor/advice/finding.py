"""A finding: one diagnosis of one profile, in its own numbers, with the time it covers and a modelled gain.

Rules (advice/rules_run.py, advice/rules_kernel.py) make findings from the profile's facts; the
remedies of the knowledge base are hung under them (advice/remedies.py); advice/suggest.py ranks them.

An expected gain (``Gain``) is a low–high range of µs saved with its basis and its assumptions in one line
(``../shared/GAIN-MODELS.md``): ``model`` (arithmetic on this profile), ``sourced`` (a KB figure whose scope
fits) or ``measured`` (the user's recorded outcomes). Every model is **local then global**: a fraction of
the time the finding covers, never more than that time (Amdahl) nor than the roofline leaves (``bound_us``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opprof_advisor.i18n import Message


@dataclass
class Gain:
    """Time a finding's remedy can save, µs, with its basis and assumptions."""

    low_us: float
    high_us: float
    model: str  # model | sourced | measured
    assumptions: Message | str

    def capped(self, bound_us: float | None) -> "Gain":
        if bound_us is None:
            return self
        bound_us = max(0.0, bound_us)
        return Gain(min(self.low_us, bound_us), min(self.high_us, bound_us), self.model, self.assumptions)

    @property
    def mid_us(self) -> float:
        return (self.low_us + self.high_us) / 2


def band(time_us: float, low: float, high: float, assumptions: Message | str, model: str = "model") -> Gain:
    """A gain of ``low``..``high`` (fractions, clipped to 0..1) of ``time_us``."""
    low, high = max(0.0, min(low, 1.0)), max(0.0, min(high, 1.0))
    return Gain(time_us * min(low, high), time_us * high, model, assumptions)


@dataclass
class Finding:
    """One diagnosis; ``stake_us`` is the time it covers; ``gain`` None only where no honest model exists
    (then ``measure`` says what to collect to get one)."""

    id: str
    family: str  # which rule made it (the gain model's family)
    title: Message | str
    stake_us: float
    gain: Gain | None
    symptoms: list[str]  # the profile symptoms it rests on: remedies are looked up by these
    op_types: list[str] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)  # their families
    evidence: list[dict[str, Any]] = field(default_factory=list)
    confidence: str = "high"  # high | medium | low
    measure: Message | str | None = None  # what to collect when there is no gain (or to narrow it)
    remedy_symptoms: list[str] | None = None  # remedies answer these (default: ``symptoms``)
    #: Remedies that only fit some findings of a symptom: "bytes" (move fewer bytes), never "tiling" advice.
    remedy_tags: list[str] = field(default_factory=list)
    first_step: Message | str | None = None  # said when no KB remedy applies
    #: the KB pattern that tells this diagnosis's whole story: always listed among the remedies when it applies
    story: str | None = None
    note: bool = False  # what cannot be judged: said as a note under the table (its title), not ranked as a row
