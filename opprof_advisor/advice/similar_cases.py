"""Case studies that resemble a profile: a close operator mix *and* a matching workload.

``similarity = 0.8 × cosine + 0.2 × overlap``. ``cosine`` is between the profile's family-share vector
and the case's ``op_mix`` (an ordered list of families, descending device time, whose i-th item from 0
weighs ``1/(i+1)``, normalised to sum 1). ``overlap`` is the Jaccard index of the problem symptoms (the
descriptive ones left out) of the profile and of the case: two detectors with the same layers differ
in *what went wrong*, which the op mix alone cannot tell.

A case is said to resemble the profile only when, besides ``similarity >= MIN_SIMILARITY``:

* the workloads agree: both communicate (a collective family in the case's op mix or symptoms, and
  collectives or exposed communication in the profile) or neither does; training vs inference where
  both are known (the case's ``requires: workload``, the profile's backward kernels);
* and they share a problem symptom, or their op mixes are nearly the same (cosine >= CLOSE_MIX): a
  healthy profile resembles no case that documents a problem it does not have.

Every similar case carries the reasons it matched; the closest excluded one is named in a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import Any, Sequence

from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.models import Entry, Profile
from opprof_advisor.core.operators import COMMUNICATION_FAMILIES
from opprof_advisor.core.records import Record
from opprof_advisor.core.vocabulary import DESCRIPTIVE_SYMPTOMS as DESCRIPTIVE

MAX_SIMILAR_CASES = 3
#: Below this similarity a case is not said to resemble the profile (a note names the closest).
MIN_SIMILARITY = 0.3
#: Op mixes this close resemble each other even without a shared problem symptom.
CLOSE_MIX = 0.8
#: The profile communicates when collectives hold this share of its reference time.
COMMUNICATION_SHARE = 0.05
MIX_WEIGHT = 0.8
SYMPTOM_WEIGHT = 0.2
_COMMUNICATION_SYMPTOMS = frozenset({"communication_exposed", "communication_wait", "slow_rank", "slow_link"})


@dataclass
class SimilarCase(Record):
    """A case study whose operator mix and workload resemble the profile's."""

    id: str
    title: str
    similarity: float
    mix_cosine: float = 0.0
    symptom_overlap: float = 0.0
    why: list[str] = field(default_factory=list)  # what matched: the shared families, symptoms, workload
    excluded: str = ""  # why it is not shown, when it is not
    zh: dict[str, str] = field(default_factory=dict)  # the case's Chinese title (front matter zh:)


def case_mix_weights(op_mix: Any) -> dict[str, float]:
    """Weights of a case's op mix: the i-th family (from 0, by descending time) gets 1/(i+1), normalised."""
    if isinstance(op_mix, dict):
        # A mapping keeps the documented rule: order by its values (descending), then weigh by rank.
        families = [f for f, _ in sorted(op_mix.items(), key=lambda kv: -float(kv[1] or 0))]
    else:
        families = list(op_mix or [])
    weights: dict[str, float] = {}
    for i, family in enumerate(families):
        weights.setdefault(str(family), 1.0 / (i + 1))
    total = sum(weights.values())
    return {f: w / total for f, w in weights.items()} if total else {}


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    """Cosine similarity of two sparse non-negative vectors."""
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|, 0 when both are empty."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def rank_cases(profile: Profile, entries: Sequence[Entry]) -> list[SimilarCase]:
    """Every case with an op mix, scored against the profile, best first (excluded ones say why)."""
    shares = {f: s for f, s in profile.family_shares().items() if s > 0}
    problems = {s.id for s in profile.symptoms if s.id not in DESCRIPTIVE}
    communicates = _profile_communicates(profile)
    found = []
    for entry in entries:
        if entry.kind != "case" or not entry.op_mix:
            continue
        weights = case_mix_weights(entry.op_mix)
        mix = cosine(shares, weights)
        if mix <= 0:
            continue
        case_problems = {s for s in entry.symptoms if s not in DESCRIPTIVE}
        overlap = jaccard(problems, case_problems)
        similarity = MIX_WEIGHT * mix + SYMPTOM_WEIGHT * overlap
        shared_families = [f for f in weights if f in shares][:3]
        why = [M_("op mix {mix:.2f} ({families} in both)", mix=mix, families=", ".join(shared_families))]
        shared = sorted(problems & case_problems)
        if shared:
            why.append(M_("shared symptoms {ids}", ids=", ".join(shared)))
        excluded = _workload_mismatch(entry, profile, communicates, why)
        if not excluded and not shared and mix < CLOSE_MIX:
            excluded = N_("no shared problem symptom and the op mixes differ")
        found.append(SimilarCase(entry.id, entry.title, round(similarity, 4), round(mix, 4), round(overlap, 4),
                                 why, excluded, {"title": entry.zh["title"]} if entry.zh.get("title") else {}))
    found.sort(key=lambda c: (-c.similarity, c.id))
    return found


def _profile_communicates(profile: Profile) -> bool:
    if profile.symptom_ids() & _COMMUNICATION_SYMPTOMS:
        return True
    comm = sum(r.time_us for r in profile.op_types if r.unit == "communication")
    return bool(profile.reference_us) and comm / profile.reference_us >= COMMUNICATION_SHARE


def _workload_mismatch(entry: Entry, profile: Profile, communicates: bool, why: list[str]) -> str:
    case_comm = bool(set(entry.op_mix) & COMMUNICATION_FAMILIES or set(entry.symptoms) & _COMMUNICATION_SYMPTOMS)
    if case_comm != communicates:
        return (N_("the case's run communicates and this one does not") if case_comm
                else N_("this run communicates and the case's does not"))
    why.append(N_("both communicate") if communicates else N_("neither communicates"))
    workloads = {v for item in entry.requires for key, values in item.items() if key == "workload" for v in values}
    if workloads and profile.workload:
        if profile.workload not in workloads:
            return M_("the case is {case}, this run is {run}", case="/".join(sorted(workloads)), run=profile.workload)
        why.append(M_("both {workload}", workload=profile.workload))
    return ""


def resembling(cases: Sequence[SimilarCase], limit: int = MAX_SIMILAR_CASES) -> list[SimilarCase]:
    """The ranked cases that reach MIN_SIMILARITY and match the workload, at most ``limit``."""
    return [c for c in cases if c.similarity >= MIN_SIMILARITY and not c.excluded][:limit]


def similar_cases(profile: Profile, entries: Sequence[Entry], limit: int = MAX_SIMILAR_CASES) -> list[SimilarCase]:
    """The cases that resemble the profile, best first."""
    return resembling(rank_cases(profile, entries), limit)


def closest_case_note(cases: Sequence[SimilarCase]) -> str | None:
    """When no case resembles the profile, a note that says so and names the closest one and why not."""
    if not cases or resembling(cases):
        return None
    best = cases[0]
    reason = best.excluded or M_("similarity {similarity:.2f}, shown from {limit:.2f}", similarity=best.similarity,
                                 limit=MIN_SIMILARITY)
    return M_("no case study resembles this profile closely (closest: {id}, {similarity:.2f}: {reason})", id=best.id,
              similarity=best.similarity, reason=reason)
