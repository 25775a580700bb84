"""Rank knowledge-base entries against a profile: preconditions, evidence, time at stake, expected gain.

How a suggestion is made (docs/suggest.md says the same):

1. **Query.** The profile becomes one text (``profile_query.build_query``): each op family repeated
   ``1 + round(20 × share)`` times, each symptom id ``2 + round(20 × share)`` times plus the words of
   its meaning, the units that carry >= 1 % of device time, the dtypes of those rows and the
   ``--model`` hint. ``relevance`` r is the TF-IDF cosine of that text with the entry, 0..1.
2. **Evidence.** An entry's *operator rows* are the profile rows of its ``operators``. A symptom of
   its ``symptoms`` found in the profile *backs* it when it concerns one of those rows (or a custom
   kernel of unknown family, or the entry names no operators). The rows it addresses are the backing
   symptoms' rows (AI CPU rows only for the AI CPU symptoms), or its operator rows when no symptom
   backs it ("loosely related"; so is an entry backed only by ``dynamic_shape``, which healthy eager
   runs report). No rows and no backing symptom: not applicable.
3. **Preconditions.** Every ``requires:`` item must hold (``requirements.py``); an entry with an unmet
   requirement is never suggested (``--explain`` says which failed).
4. **Stake.** ``stake_us`` is the time the addressed rows hold (a step-split symptom without rows
   brings its own time, e.g. the free time); behind an exposure symptom it is the exposed time itself. ``stake_share`` is it over the reference time (the step, else device time).
5. **Value** (``gains.py``): the saving if the entry applies, in µs — the entry's sourced range over
   its own operators' time, the calibrated range, or the roofline's model estimate for kernel-speed
   advice, else 30 % of the stake — capped by a symptom's ceiling (``Symptom.ceiling_us``), times the
   confidence its evidence gives: 1 for a problem symptom, 0.1 for a descriptive one, 0.02 for none
   (as stake × prior without a figure: problem 0.30, descriptive 0.03, loosely related 0.006). ``score = value_us × (0.8 + 0.4 × r × specificity) × hardware``
   (specificity 0.85 for an entry backed by a symptom but naming none of its rows' operators, else 1):
   time decides between problems of different size; relevance (±20 %) orders entries answering the same
   problem;
   ``hardware`` is 0.8 when the entry's hardware or CANN range excludes the profile's. No tier lets a
   small stake outrank a large one.
6. **The top three carry no noise**: nothing under 0.5 % of the reference time at stake, no loosely
   related entry while three evidence-backed ones exist, at most two entries backed by the very same
   evidence. The rest follow in score order. Cases are listed under similar cases
   (``similar_cases.py``) unless ``kind="case"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

from opprof_advisor.advice import gains as gainlib
from opprof_advisor.advice.gains import ExpectedGain
from opprof_advisor.core.i18n import M_, join_messages
from opprof_advisor.kb import first_step
from opprof_advisor.core.models import Entry, OpTypeStat, Profile, Symptom
from opprof_advisor.core.operators import FAMILIES
from opprof_advisor.advice.profile_query import build_query
from opprof_advisor.core.records import Record
from opprof_advisor.advice.requirements import Check, check_requirements, hardware_mismatch, unmet
from opprof_advisor.advice.similar_cases import (  # noqa: F401  (re-exported: the public names of this module)
    MIN_SIMILARITY, SimilarCase, case_mix_weights, closest_case_note, cosine, jaccard, rank_cases, resembling,
    similar_cases,
)
from opprof_advisor.core.vocabulary import DESCRIPTIVE_SYMPTOMS
from opprof_advisor.advice.matcher import ready_matcher
from opprof_advisor.profile.builder import profile_to_json

SUGGEST_SCHEMA = "opprof-advisor/suggest/1"

#: Relevance moves a score by at most this much either way (0.8 .. 1.2 of the value): time decides
#: between problems of different size, relevance among the entries answering the same problem. An entry
#: backed by a symptom but naming none of the addressed rows' operators is general: its relevance counts
#: GENERAL of an entry written for those operators.
RELEVANCE_SPAN = 0.4
GENERAL = 0.85
HARDWARE_MISMATCH = 0.8
#: Symptoms that concern only the AI CPU launches of their op types (where the profile has any).
AI_CPU_SYMPTOMS = frozenset({"aicpu_fallback", "nms_cpu", "double_dtype"})
#: Symptoms about how a class of time is exposed, not about single operators: an entry they back
#: addresses all their rows, and no more than the symptom's own time is at stake (overlapping
#: communication cannot save more than the communication left exposed).
EXPOSURE_SYMPTOMS = frozenset({"communication_exposed", "communication_wait"})
#: A refining symptom splits the time of the symptom it refines: communication_wait is the part of the
#: exposed communication spent waiting. An entry backed by the general symptom but not the refining one
#: addresses only the rest (bandwidth, buffer and algorithm advice cannot shorten a wait for a slow rank).
REFINES: dict[str, str] = {"communication_wait": "communication_exposed"}
#: The top three never hold: a stake under this share, a loosely related entry while three
#: evidence-backed ones exist, or more than MAX_SAME_EVIDENCE entries backed by the same symptoms.
NOISE_SHARE = 0.005
TOP_CLEAN = 3
MAX_SAME_EVIDENCE = 2
#: Kinds suggested when no kind is asked for; cases are shown as similar cases instead.
DEFAULT_KINDS = ("recipe", "pattern", "tip")
MAX_EVIDENCE_ROWS = 5


# --------------------------------------------------------------------------------------------
# Result objects
# --------------------------------------------------------------------------------------------


class Evidence(NamedTuple):  # never changed once made; a NamedTuple is cheaper to define at start-up
    """One reason to believe an entry applies: an op-type row (or a symptom) with its time."""

    op_type: str | None
    time_us: float
    share: float  # of the profile's reference time
    why: str


@dataclass
class Suggestion(Record):
    """One ranked entry with its evidence, the parts of its score and its expected gain."""

    entry: Entry
    score: float
    relevance: float
    stake_us: float
    stake_share: float
    value_us: float  # what it is ranked by: saving if it applies × the confidence of its evidence
    evidence_kind: str  # problem | descriptive | loose
    prior: float
    hardware: float
    specificity: float  # 1.0 when the entry names the addressed rows' operators (or none backs it), else GENERAL
    matched_symptoms: list[str]
    matched_operators: list[str]
    evidence: list[Evidence]
    expected_gain: ExpectedGain | None
    requirements: list[Check] = field(default_factory=list)
    ceiling_us: float | None = None
    first_step: str = ""
    hardware_note: str | None = None
    rank: int = 0
    matched_terms: list[tuple[str, float]] = field(default_factory=list)
    rows: list[OpTypeStat] = field(default_factory=list)  # every addressed row (evidence shows the largest)
    observed: str = ""  # "observed N times: median X % (range A–B %)" from recorded outcomes

    @property
    def gain_basis(self) -> str:
        return self.expected_gain.kind if self.expected_gain else "none"


@dataclass
class SuggestResult(Record):
    """What ``suggest`` returns: ranked suggestions, similar cases, notes."""

    profile: Profile
    suggestions: list[Suggestion]
    similar_cases: list[SimilarCase]
    notes: list[str]
    query: str = ""
    refused: list[tuple[str, list[Check]]] = field(default_factory=list)  # entries whose requirements failed
    explain: bool = False  # matched terms were looked up: renderers show the score breakdown


# --------------------------------------------------------------------------------------------
# Evidence and stake
# --------------------------------------------------------------------------------------------


class _Match(NamedTuple):  # never changed once made; a NamedTuple is cheaper to define at start-up
    rows: list[OpTypeStat]
    operator_rows: list[OpTypeStat]
    symptoms: list[Symptom]
    symptom_us: float  # time from backing symptoms that name no op types
    cap_us: float | None = None  # the most an exposure symptom leaves at stake


def match_entry(entry: Entry, profile: Profile) -> _Match:
    """The profile rows and symptoms that back ``entry`` (empty when it does not apply)."""
    families = set(entry.operators)
    operator_rows = [row for row in profile.op_types if row.family in families]
    backing: list[Symptom] = []
    rows: dict[int, OpTypeStat] = {}
    loose_us = 0.0
    cap: float | None = None
    for symptom in profile.symptoms:
        if symptom.id not in entry.symptoms:
            continue
        symptom_rows = _symptom_rows(symptom, profile.op_types)
        if symptom.id in EXPOSURE_SYMPTOMS and symptom_rows:
            if families and not any(row.family in families for row in symptom_rows):
                continue  # about other kernels than this entry's
            time_us = symptom_time(symptom, profile)
            cap = time_us if cap is None else min(cap, time_us)
        elif families:
            # A symptom that names no op types backs the entry through its own operators.
            symptom_rows = [
                row for row in symptom_rows if row.family in families or row.family not in FAMILIES
            ] if symptom.op_types else operator_rows
            if not symptom_rows and symptom.op_types:
                continue  # the symptom is about other operators than this entry's
        if not symptom_rows:
            loose_us = max(loose_us, symptom_time(symptom, profile))
        backing.append(symptom)
        rows.update((id(row), row) for row in symptom_rows)
    cap = _refined_cap(entry, profile, backing, cap)
    chosen = list(rows.values()) if backing else operator_rows
    chosen.sort(key=lambda row: (-row.time_us, row.op_type))
    return _Match(chosen, operator_rows, backing, 0.0 if rows else loose_us, cap if backing else None)


def _refined_cap(entry: Entry, profile: Profile, backing: list[Symptom], cap: float | None) -> float | None:
    found = {s.id: s for s in profile.symptoms}
    ids = {s.id for s in backing}
    for refined, general in REFINES.items():
        if general in ids and refined not in ids and refined in found and general in found:
            rest = max(0.0, symptom_time(found[general], profile) - symptom_time(found[refined], profile))
            cap = rest if cap is None else min(cap, rest)
    return cap


def symptom_time(symptom: Symptom, profile: Profile) -> float:
    """The time a symptom concerns (µs); from its share of the reference time when it records none."""
    return symptom.time_us or symptom.share * reference_of(profile)


def reference_of(profile: Profile) -> float:
    """The reference time; 1.0 for a pseudo-profile with shares but no time (``advisor scan``), so its
    stakes are shares and rank the same way."""
    return profile.reference_us or 1.0


def row_time(row: OpTypeStat, profile: Profile) -> float:
    """A row's time (µs), or its share where the profile has no time."""
    return row.time_us if profile.reference_us else row.share


def _symptom_rows(symptom: Symptom, rows: Sequence[OpTypeStat]) -> list[OpTypeStat]:
    names = set(symptom.op_types)
    found = [row for row in rows if row.op_type in names or row.family in names]
    if symptom.id in AI_CPU_SYMPTOMS:
        found = [row for row in found if row.unit == "ai_cpu"] or found
    return found


def stake_of(match: _Match, profile: Profile) -> float:
    """Time at stake (µs): the addressed rows' time, or a row-less backing symptom's; for an exposure symptom
    its own time (the step split says how much communication is left exposed, whatever the kernels sum to)."""
    if match.cap_us is not None:
        return match.cap_us
    return sum(row_time(row, profile) for row in match.rows) + match.symptom_us


def ceiling_of(match: _Match) -> float | None:
    """The tightest bound the backing symptoms put on what fixing them can save."""
    bounds = [s.ceiling_us for s in match.symptoms if s.ceiling_us is not None]
    return min(bounds) if bounds else None


def collect_evidence(match: _Match, profile: Profile) -> list[Evidence]:
    """Evidence items: the addressed rows (largest first) and the backing symptoms without op types."""
    reference = profile.reference_us
    share = (lambda us: us / reference) if reference else (lambda us: 0.0)
    items: list[Evidence] = []
    for row in match.rows[:MAX_EVIDENCE_ROWS]:
        # Messages, so a report says the reason in Chinese; the English text (the JSON) is the same.
        where = {"family": row.family, "unit": row.unit, "count": row.count}
        reasons = [M_("{family} on {unit}, {count} launch", **where) if row.count == 1 else
                   M_("{family} on {unit}, {count} launches", **where)]
        reasons += [M_("{id}: {detail}", id=s.id, detail=s.detail) for s in match.symptoms if _concerns(s, row)]
        if not match.symptoms:
            reasons.append(M_("operator present; none of the entry's symptoms seen"))
        items.append(Evidence(row.op_type, round(row.time_us, 3), round(share(row.time_us), 6),
                              join_messages(reasons, "; ")))
    for symptom in match.symptoms:
        if not symptom.op_types:
            time_us = symptom_time(symptom, profile)
            items.append(Evidence(None, round(time_us, 3), round(share(time_us), 6),
                                  M_("{id}: {detail}", id=symptom.id, detail=symptom.detail)))
    return items


def _concerns(symptom: Symptom, row: OpTypeStat) -> bool:
    return row.op_type in symptom.op_types or row.family in symptom.op_types


#: Symptoms that are no evidence for ranking: OP State "dynamic" is what aclnn eager calls and binary
#: kernels report in healthy runs; ``shape_recompile`` is the evidence that dynamic shapes cost time.
NOT_EVIDENCE = frozenset({"dynamic_shape"})


def evidence_kind(symptoms: Sequence[Symptom]) -> str:
    """problem (a waste with a known remedy backs it), descriptive (only bound classes), loose (nothing,
    or only how the run executes)."""
    ids = {s.id for s in symptoms} - NOT_EVIDENCE
    if not ids:
        return "loose"
    return "descriptive" if ids <= DESCRIPTIVE_SYMPTOMS else "problem"


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------

#: The clause a loosely related suggestion's gain basis ends with: nothing in the profile shows its problem.
LOOSE_BASIS = M_("no symptom shows the problem this fixes, so the figure holds only if it applies")


def score_entry(entry: Entry, profile: Profile, relevance: float, *, gains: bool = True,
                outcomes: list[Any] | None = None) -> Suggestion | None:
    """Score one entry against the profile, or None when the profile shows no evidence for it."""
    match = match_entry(entry, profile)
    if not match.rows and not match.symptoms:
        return None
    stake = stake_of(match, profile)
    share = stake / reference_of(profile)
    ceiling = ceiling_of(match)
    kind = evidence_kind(match.symptoms)
    prior = gainlib.PRIORS[kind]
    fixed = fixed_rows(entry, match)
    fixed_us = min(stake, sum(row_time(r, profile) for r in fixed) + (0.0 if entry.operators else match.symptom_us))
    op_names = _unique(row.op_type for row in fixed)
    gain, observed = (_expected_gain(entry, match, profile, fixed_us, op_names, ceiling, outcomes)
                      if gains and entry.kind != "case" else (None, ""))
    value = gainlib.value_us(gain, stake, kind, ceiling)
    if gain is not None and kind == "loose":
        gain = gain.replace(basis=join_messages([gain.basis, LOOSE_BASIS], "; "))
    mismatch = hardware_mismatch(entry, profile)
    hardware = HARDWARE_MISMATCH if mismatch else 1.0
    specificity = 1.0 if not match.symptoms or match.operator_rows else GENERAL
    score = value * (1 - RELEVANCE_SPAN / 2 + RELEVANCE_SPAN * relevance * specificity) * hardware
    return Suggestion(
        entry=entry, score=round(score, 6), relevance=round(relevance, 6), stake_us=round(stake, 3),
        stake_share=round(share, 6), value_us=round(value, 3), evidence_kind=kind, prior=prior, hardware=hardware,
        specificity=specificity,
        matched_symptoms=[s.id for s in match.symptoms],
        matched_operators=_unique(row.family for row in match.operator_rows),
        evidence=collect_evidence(match, profile), expected_gain=gain,
        requirements=check_requirements(entry, profile, match.rows, share), ceiling_us=ceiling,
        hardware_note=mismatch, rows=list(match.rows), observed=observed,
    )


def _expected_gain(entry: Entry, match: _Match, profile: Profile, fixed_us: float, op_names: list[str],
                   ceiling: float | None, outcomes: list[Any] | None) -> tuple[ExpectedGain | None, str]:
    """Sourced, else calibrated, else the model estimate for kernel-speed advice; and the observed text."""
    measured = _measured_rows(entry, match)
    if measured is None:
        gain = gainlib.sourced_gain(entry, fixed_us, profile, op_names, ceiling)
    else:  # the figure holds only for the families the source measured
        measured_us = min(fixed_us, sum(row_time(r, profile) for r in measured))
        gain = gainlib.sourced_gain(entry, measured_us, profile, _unique(r.op_type for r in measured), ceiling)
    observed = ""
    if outcomes:
        calibrated, observed = gainlib.calibrated_gain(entry, outcomes, fixed_us, profile, op_names, ceiling)
        gain = calibrated or gain
    symptoms = {s.id for s in match.symptoms}
    if gain is None and symptoms and symptoms <= gainlib.KERNEL_SYMPTOMS:
        kernels = [row.op_type for row in match.rows]
        gain = gainlib.model_gain(profile, kernels, ceiling)
    return gain, observed


def fixed_rows(entry: Entry, match: _Match) -> list[OpTypeStat]:
    """The addressed rows an entry's gain figure is about: those of its own operator families."""
    if not entry.operators:
        return match.rows
    families = set(entry.operators)
    return [row for row in match.rows if row.family in families]


def _measured_rows(entry: Entry, match: _Match) -> list[OpTypeStat] | None:
    """The addressed rows of the families the entry's gain figure was measured on; None when it names none."""
    if entry.gain is None or not entry.gain.measured_on:
        return None
    families = set(entry.gain.measured_on)
    return [row for row in match.rows if row.family in families]


def _unique(items: Any) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


# --------------------------------------------------------------------------------------------
# suggest
# --------------------------------------------------------------------------------------------


def suggest(
    profile: Profile,
    entries: list[Entry],
    *,
    top: int = 5,
    model: str | None = None,
    kind: str | None = None,
    matcher: Any = None,
    gains: bool = True,
    explain: bool = False,
    outcomes: dict[str, list[Any]] | None = None,
) -> SuggestResult:
    """Rank ``entries`` against ``profile``: applicable ones only, with evidence and expected gains.

    ``matcher`` is a fitted ``EntryMatcher`` (``matcher.load_matcher(index)``); without one a matcher is
    fitted on ``entries`` (imports scikit-learn). ``gains=False`` leaves every ``expected_gain`` None
    (pseudo-profiles without real device time). ``outcomes`` maps entry ids to their recorded
    ``outcomes.Outcome`` list: those entries' ranges are calibrated.
    """
    matcher = ready_matcher(entries, kind, matcher)
    query = build_query(profile, model)
    relevance = dict(zip(matcher.entry_ids_, matcher.score(query)))
    kinds = (kind,) if kind else DEFAULT_KINDS
    notes: list[str] = list(profile.notes)
    ranked, refused = [], []
    for entry in entries:
        if entry.kind not in kinds:
            continue
        recorded = (outcomes or {}).get(entry.id) if gains else None
        suggestion = score_entry(entry, profile, relevance.get(entry.id, 0.0), gains=gains, outcomes=recorded)
        if suggestion is None:
            continue
        failed = unmet(suggestion.requirements)
        if failed:
            refused.append((entry.id, failed))
            continue
        ranked.append(suggestion)
    ranked.sort(key=lambda s: (-s.score, s.entry.id))
    chosen = select(ranked)[: max(0, top)]
    for rank, suggestion in enumerate(chosen, start=1):
        suggestion.rank = rank
        suggestion.first_step = first_step(suggestion.entry)
        if explain:
            suggestion.matched_terms = matcher.matched_terms(query, suggestion.entry.id)
        notes.extend(_suggestion_notes(suggestion, gains))
    if explain:
        notes.extend(M_("{id}: not suggested: {checks}", id=entry_id,
                        checks=join_messages([c.text() for c in failed], "; ")) for entry_id, failed in refused)
    if profile.reference_us <= 0:
        notes.append(M_("cannot judge time at stake: the profile has no device time and no step split"))
    cases = rank_cases(profile, entries)
    note = closest_case_note(cases)
    if note:
        notes.append(note)
    return SuggestResult(profile, chosen, resembling(cases), notes, query, refused, explain)


def select(ranked: list[Suggestion]) -> list[Suggestion]:
    """The ranked list with a clean top: no noise, no loose entry while evidence exists, variety.

    The first TOP_CLEAN places go to suggestions with at least NOISE_SHARE at stake; loosely related
    ones only when fewer than TOP_CLEAN evidence-backed ones exist; at most MAX_SAME_EVIDENCE with the
    very same backing symptoms. Everything else follows in score order.
    """
    backed = sum(1 for s in ranked if s.evidence_kind != "loose" and s.stake_share >= NOISE_SHARE)
    top: list[Suggestion] = []
    seen: dict[tuple, int] = {}
    for suggestion in ranked:
        if len(top) == TOP_CLEAN:
            break
        if suggestion.stake_share < NOISE_SHARE or (suggestion.evidence_kind == "loose" and backed >= TOP_CLEAN):
            continue
        key = _evidence_key(suggestion)
        if seen.get(key, 0) >= MAX_SAME_EVIDENCE:
            continue
        seen[key] = seen.get(key, 0) + 1
        top.append(suggestion)
    chosen = {id(s) for s in top}
    return top + [s for s in ranked if id(s) not in chosen]


def _evidence_key(suggestion: Suggestion) -> tuple:
    return tuple(sorted(suggestion.matched_symptoms)) or ("ops",) + tuple(sorted(suggestion.matched_operators))


def _suggestion_notes(suggestion: Suggestion, gains: bool) -> list[str]:
    entry = suggestion.entry
    notes = []
    if suggestion.hardware_note:
        notes.append(M_("{id}: {problem} — check that it applies", id=entry.id, problem=suggestion.hardware_note))
    if suggestion.observed:
        notes.append(M_("{id}: {observed} in your recorded outcomes", id=entry.id, observed=suggestion.observed))
    elif gains and suggestion.gain_basis != "model estimate":
        note = gainlib.gain_note(entry)
        if note:
            notes.append(note)
        elif suggestion.expected_gain is None:
            notes.append(M_("{id}: its figure is about {operators} time, and the matched kernels belong to another or "
                            "an unknown operator family, so no expected gain is given",
                            id=entry.id, operators=", ".join(entry.operators)))
    return notes


# --------------------------------------------------------------------------------------------
# The JSON document (shared by `advisor suggest --format json` and the HTML report)
# --------------------------------------------------------------------------------------------


def suggestion_to_json(suggestion: Suggestion) -> dict[str, Any]:
    """One suggestion in the ``opprof-advisor/suggest/1`` shape (fields only ever added)."""
    entry = suggestion.entry
    gain = suggestion.expected_gain
    return {
        "rank": suggestion.rank,
        "id": entry.id,
        "kind": entry.kind,
        "title": entry.title,
        "tags": list(entry.tags),
        "operators": list(entry.operators),
        "score": round(suggestion.score, 4),
        "evidence": [
            {"op_type": e.op_type, "time_us": e.time_us, "share": e.share, "why": e.why} for e in suggestion.evidence
        ],
        "expected_gain": None if gain is None else {
            "low_pct": gain.low_pct, "high_pct": gain.high_pct, "saved_us_low": gain.saved_us_low,
            "saved_us_high": gain.saved_us_high, "basis": gain.basis, "kind": gain.kind, "of": gain.reference,
        },
        "evidence_grade": entry.evidence,
        "sources": list(entry.sources),
        "stake_us": suggestion.stake_us,
        "stake_share": suggestion.stake_share,
        "ceiling_us": suggestion.ceiling_us,
        "matched_symptoms": list(suggestion.matched_symptoms),
        "matched_operators": list(suggestion.matched_operators),
        "requirements": [{"key": c.key, "values": list(c.values), "met": c.met, "why": c.why, "text": c.text()}
                         for c in suggestion.requirements],
        "gain_basis": suggestion.gain_basis,
        "score_parts": {"value_us": suggestion.value_us, "evidence_kind": suggestion.evidence_kind,
                        "prior": suggestion.prior, "relevance": suggestion.relevance,
                        "specificity": suggestion.specificity,
                        "hardware": suggestion.hardware, **_score_formula(suggestion)},
        "first_step": suggestion.first_step,
        "show": f"advisor show {entry.id}",
        "observed": suggestion.observed or None,
        "matched_terms": [[term, round(weight, 6)] for term, weight in suggestion.matched_terms],
        "zh": zh_texts(entry.zh),
    }


def zh_texts(zh: dict[str, str]) -> dict[str, str]:
    """The Chinese title, summary and first step an entry carries (``--lang zh`` prints them)."""
    return {key: zh[key] for key in ("title", "summary", "first_step") if zh.get(key)}


def _score_formula(suggestion: Suggestion) -> dict[str, Any]:
    """The constants of the score, so a renderer can write the formula out without knowing them."""
    gain = suggestion.expected_gain
    saving = None if gain is None else round(min(gain.mid_us, suggestion.ceiling_us or float("inf")), 3)
    return {"confidence": gainlib.CONFIDENCE[suggestion.evidence_kind], "saving_us": saving,
            "relevance_base": 1 - RELEVANCE_SPAN / 2, "relevance_span": RELEVANCE_SPAN}


def suggestions_to_json(result: SuggestResult) -> dict[str, Any]:
    """The whole ``opprof-advisor/suggest/1`` document for a result (with the profile's own document)."""
    profile = result.profile
    return {
        "schema": SUGGEST_SCHEMA,
        "profile": {"path": profile.path, "format": profile.format, "device_time_us": profile.device_time_us,
                    "reference": profile.reference, "reference_us": round(profile.reference_us, 3)},
        "suggestions": [suggestion_to_json(s) for s in result.suggestions],
        "similar_cases": [{"id": c.id, "title": c.title, "similarity": c.similarity, "mix_cosine": c.mix_cosine,
                           "symptom_overlap": c.symptom_overlap, "why": list(c.why), "zh": dict(c.zh)}
                          for c in result.similar_cases],
        "notes": list(result.notes),
        "explain": result.explain,
        "profile_document": profile_to_json(profile),
    }
