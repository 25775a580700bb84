"""Rank knowledge-base entries against a profile: applicability, evidence, Amdahl-bounded gains.

How a suggestion is made (the README section "How suggestions are ranked" says the same):

1. **Query.** The profile becomes one text (``build_query``): each op family repeated
   ``1 + round(20 × share)`` times (so device time weighs the query), each symptom id
   ``2 + round(20 × share)`` times plus the words of its one-line meaning in
   ``vocabulary.SYMPTOMS`` once, the units that carry ≥ 1 % of device time, the dtypes of those
   rows, and the ``--model`` hint (4 times). ``relevance`` r is the TF-IDF cosine of that text
   with the entry (``matcher.EntryMatcher``), 0..1.
2. **Applicability and evidence.** An entry's *operator rows* are the profile rows whose family
   is one of its ``operators``. One of its ``symptoms`` found in the profile *backs* it when that
   symptom concerns one of its operator rows (or a row of unknown family, e.g. a custom kernel),
   or the entry names no operators. The rows the fix addresses (``matched rows``) are the
   backing symptoms' rows (restricted to the entry's operators and unknown families when it
   names operators; AI CPU rows only for ``aicpu_fallback`` / ``nms_cpu``), or the operator rows
   when no symptom backs it. An entry with no matched rows and no backing symptom is not
   applicable and is never suggested. ``a`` = share of device time of the matched rows (for a
   backing symptom without op types, its own share). An *exposure* symptom
   (``communication_exposed``) backs an entry with all of its rows, and ``a`` is capped at the
   symptom's own share: overlapping communication cannot save more than what is left exposed.
   ``dynamic_shape`` counts as descriptive (tier 1 below): binary kernels report it in healthy runs.
3. **Score.** ``score = tier + specificity × (0.5 × √a + 0.5 × r) × hardware``.
   ``tier`` is 2 when a *defect* symptom backs the entry (``aicpu_fallback``,
   ``transdata_overhead``, ``launch_bound`` … anything that names a waste with a known remedy),
   1 when only *bound-class* symptoms back it (``cube_bound`` … ``no_bound``: they say which pipe
   limits the hot kernels, not that something is wrong), 0 when only its operators are present
   (the entry is "loosely related"). So a symptom-backed entry always outranks a loosely related
   one, and within a tier the most time at stake and the strongest match come first.
   ``specificity`` is 1.0 when both operators and a symptom match (or operators alone, tier 0),
   0.85 for a symptom alone (a general entry); ``hardware`` is 0.8 when the entry's hardware or
   CANN range excludes the profile's (stated in the notes), else 1. √a keeps time at stake
   dominant without letting one huge family drown every other finding. Ties are broken by id.
   Cases are not suggested unless ``kind="case"``: they are listed under similar cases.
   Variety: at most ``MAX_SAME_EVIDENCE`` (2) suggestions backed by exactly the same symptoms
   lead the list; the others follow, in score order, after advice about something else.
4. **Expected gain** (Amdahl). For an ``operators``-scope gain range [lo, hi] (percent of the
   matched operators' time), the expected gain is [lo × f, hi × f] percent of device time, where
   f is the share of the matched rows of the entry's own operator families (all matched rows for
   an entry that names none), and the time saved that percentage of ``device_time_us`` — never
   more than that share. An ``end_to_end`` gain, and any figure of a case, is not an
   expectation: the notes say "observed in that case". No gain → ``expected_gain`` is None and a note says so.
5. **Similar cases.** ``similarity = 0.8 × cosine + 0.2 × overlap``. ``cosine`` is between the
   profile's family-share vector and the case's ``op_mix``: an ordered list of families
   (descending device time) whose i-th item (from 0) gets weight ``1/(i+1)``, normalised to sum
   1. ``overlap`` is the Jaccard index of the defect symptoms (bound classes left out) of the
   profile and of the case: two detectors with the same layers differ in *what went wrong*
   (NMS on the AI CPU versus a host-side NMS loop), which the op mix alone cannot tell. Cases
   below ``MIN_SIMILARITY`` (0.3) are not said to resemble the profile; a note names the closest.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from opprof_advisor.errors import MatcherError
from opprof_advisor.models import Entry, OpTypeStat, Profile, Symptom
from opprof_advisor.operators import FAMILIES
from opprof_advisor.vocabulary import BOUND_SYMPTOM, KINDS, SYMPTOMS

SUGGEST_SCHEMA = "opprof-advisor/suggest/1"

#: Weights of the ranking formula (see the module docstring).
TIER_DEFECT = 2
TIER_BOUND = 1
TIER_OPERATORS = 0
SPECIFIC = 1.0
GENERAL = 0.85
STAKE_WEIGHT = 0.5
RELEVANCE_WEIGHT = 0.5
HARDWARE_MISMATCH = 0.8

#: Descriptive symptoms: the bound classes describe the hot kernels' limiting pipe rather than a
#: defect, and ``dynamic_shape`` says how the run executes: with prebuilt binary kernels
#: (jit_compile=False, the default on Atlas A2/A3, KB-SOURCES #30) operators report OP State
#: "dynamic" in healthy runs.
DESCRIPTIVE_SYMPTOMS = frozenset(BOUND_SYMPTOM.values()) | {"dynamic_shape"}

#: Symptoms that concern only the AI CPU launches of their op types (where the profile has any:
#: float64 / int64 work elsewhere is still reported through its other rows).
AI_CPU_SYMPTOMS = frozenset({"aicpu_fallback", "nms_cpu", "double_dtype"})
#: Symptoms about how a whole class of kernels is exposed, not about single operators: every entry
#: they back addresses all of the symptom's rows, and no more than the symptom's own share is at
#: stake (overlapping communication cannot save more than the communication left exposed).
EXPOSURE_SYMPTOMS = frozenset({"communication_exposed"})
#: How many suggestions backed by the same evidence may lead the list before the others get a turn.
MAX_SAME_EVIDENCE = 2
#: Kinds suggested when no kind is asked for; cases are shown as similar cases instead.
DEFAULT_KINDS = ("recipe", "pattern", "tip")
MAX_EVIDENCE_ROWS = 5
MAX_SIMILAR_CASES = 3
#: Below this similarity a case is not said to resemble the profile (a note names the closest).
MIN_SIMILARITY = 0.3

_UNIT_WORDS = {
    "ai_cpu": "aicpu ai_cpu cpu fallback",
    "communication": "hccl communication",
    "ai_vector": "vector",
    "ai_core": "cube",
    "mix_aic": "mix cube",
    "mix_aiv": "mix vector",
}


# --------------------------------------------------------------------------------------------
# Result objects
# --------------------------------------------------------------------------------------------


@dataclass
class Evidence:
    """One reason to believe an entry applies: an op-type row (or a symptom) with its time."""

    op_type: str | None
    time_us: float
    share: float
    why: str


@dataclass
class ExpectedGain:
    """An Amdahl-bounded gain in percent of the profile's device time."""

    low_pct: float
    high_pct: float
    saved_us_low: float
    saved_us_high: float
    basis: str


@dataclass
class Suggestion:
    """One ranked entry with its evidence, score breakdown and expected gain."""

    entry: Entry
    score: float
    relevance: float
    stake_share: float
    tier: int
    specificity: float
    hardware: float
    matched_symptoms: list[str]
    matched_operators: list[str]
    evidence: list[Evidence]
    expected_gain: ExpectedGain | None
    rank: int = 0
    matched_terms: list[tuple[str, float]] = field(default_factory=list)
    rows: list[OpTypeStat] = field(default_factory=list)  # every matched row (evidence shows the largest)
    observed: str = ""  # "observed N times: median X % (range A–B %)" from recorded outcomes


@dataclass
class SimilarCase:
    """A case study whose operator mix resembles the profile's."""

    id: str
    title: str
    similarity: float
    mix_cosine: float = 0.0
    symptom_overlap: float = 0.0


@dataclass
class SuggestResult:
    """What ``suggest`` returns: ranked suggestions, similar cases, notes."""

    profile: Profile
    suggestions: list[Suggestion]
    similar_cases: list[SimilarCase]
    notes: list[str]
    query: str = ""


# --------------------------------------------------------------------------------------------
# Query
# --------------------------------------------------------------------------------------------


def build_query(profile: Profile, model: str | None = None) -> str:
    """The text the matcher scores entries against: families by share, symptoms, units, dtypes, model."""
    words: list[str] = []
    for family, share in sorted(profile.family_shares().items(), key=lambda kv: (-kv[1], kv[0])):
        words.extend([_family_words(family)] * (1 + round(20 * share)))
    for symptom in profile.symptoms:
        words.extend([symptom.id] * (2 + round(20 * symptom.share)))
        words.extend(_meaning_words(symptom.id))
    words.extend(_unit_words(profile.op_types))
    words.extend(_dtype_words(profile.op_types))
    if model:
        words.extend(_model_words(model) * 4)
    return " ".join(words)


_STOP_WORDS = frozenset(
    "a an the of to in on or and as by for from than their its is are be not no run runs instead "
    "that whose which with without".split()
)


def _family_words(family: str) -> str:
    # A custom kernel ("MatmulLeakyRelu") has no family: its name's parts still say what it does.
    if family in FAMILIES:
        return family
    return " ".join(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", family)) or family


def _meaning_words(symptom_id: str) -> list[str]:
    # The symptom's one-line meaning carries the words entries use in prose ("host dispatch").
    text = SYMPTOMS.get(symptom_id, "")
    return [w for w in re.findall(r"[A-Za-z0-9_]+", text.lower()) if w not in _STOP_WORDS and len(w) > 1]


def _unit_words(rows: Sequence[OpTypeStat]) -> list[str]:
    unit_share: dict[str, float] = {}
    for row in rows:
        unit_share[row.unit] = unit_share.get(row.unit, 0.0) + row.share
    return [_UNIT_WORDS.get(unit, unit) for unit, share in sorted(unit_share.items()) if share >= 0.01]


def _dtype_words(rows: Sequence[OpTypeStat]) -> list[str]:
    seen: list[str] = []
    for row in rows:
        if row.share < 0.01:
            continue
        for dtype in row.dtypes:
            for word in re.split(r"[^A-Za-z0-9_]+", dtype.lower()):
                if word and word not in seen:
                    seen.append(word)
    return seen


def _model_words(model: str) -> list[str]:
    name = model.strip().lower()
    # "yolov8s" also says "yolov8": the KB names architectures without the size suffix.
    base = re.sub(r"(\d)[nsmlxb]$", r"\1", name)
    return [name] if base == name else [name, base]


# --------------------------------------------------------------------------------------------
# Applicability and evidence
# --------------------------------------------------------------------------------------------


@dataclass
class _Match:
    rows: list[OpTypeStat]
    operator_rows: list[OpTypeStat]
    symptoms: list[Symptom]
    symptom_share: float  # share from backing symptoms that name no op types
    cap_share: float = 1.0  # the most an exposure symptom leaves at stake


def match_entry(entry: Entry, profile: Profile) -> _Match:
    """The profile rows and symptoms that back ``entry`` (empty when it does not apply)."""
    families = set(entry.operators)
    operator_rows = [row for row in profile.op_types if row.family in families]
    backing: list[Symptom] = []
    rows: dict[int, OpTypeStat] = {}
    loose_share = 0.0
    cap_share = 1.0
    for symptom in profile.symptoms:
        if symptom.id not in entry.symptoms:
            continue
        symptom_rows = _symptom_rows(symptom, profile.op_types)
        if symptom.id in EXPOSURE_SYMPTOMS and symptom_rows:
            if families and not any(row.family in families for row in symptom_rows):
                continue  # about other kernels than this entry's
            cap_share = min(cap_share, symptom.share)
        elif families:
            # A symptom that names no op types backs the entry through its own operators.
            symptom_rows = [
                row for row in symptom_rows if row.family in families or row.family not in FAMILIES
            ] if symptom.op_types else operator_rows
            if not symptom_rows:
                continue  # the symptom is about other operators than this entry's
        if not symptom_rows:
            loose_share = max(loose_share, symptom.share)
        backing.append(symptom)
        rows.update((id(row), row) for row in symptom_rows)
    chosen = list(rows.values()) if backing else operator_rows
    chosen.sort(key=lambda row: (-row.time_us, row.op_type))
    return _Match(chosen, operator_rows, backing, 0.0 if rows else loose_share, cap_share if backing else 1.0)


def _symptom_rows(symptom: Symptom, rows: Sequence[OpTypeStat]) -> list[OpTypeStat]:
    names = set(symptom.op_types)
    found = [row for row in rows if row.op_type in names or row.family in names]
    if symptom.id in AI_CPU_SYMPTOMS:
        on_cpu = [row for row in found if row.unit == "ai_cpu"]
        found = on_cpu or found
    return found


def collect_evidence(match: _Match, profile: Profile) -> list[Evidence]:
    """Evidence items: the matched rows (largest first) and symptoms without op types."""
    items: list[Evidence] = []
    for row in match.rows[:MAX_EVIDENCE_ROWS]:
        launches = "launch" if row.count == 1 else "launches"
        reasons = [f"{row.family} on {row.unit}, {row.count} {launches}"]
        reasons += [f"{s.id}: {s.detail}" for s in match.symptoms if _concerns(s, row)]
        if not match.symptoms:
            reasons.append("operator present; none of the entry's symptoms seen")
        items.append(Evidence(row.op_type, round(row.time_us, 3), round(row.share, 6), "; ".join(reasons)))
    for symptom in match.symptoms:
        if not symptom.op_types:
            time_us = symptom.share * profile.device_time_us
            items.append(Evidence(None, round(time_us, 3), round(symptom.share, 6), f"{symptom.id}: {symptom.detail}"))
    return items


def _concerns(symptom: Symptom, row: OpTypeStat) -> bool:
    return row.op_type in symptom.op_types or row.family in symptom.op_types


def stake_share(match: _Match) -> float:
    """Share of device time the matched rows (or a backing symptom without op types) hold, 0..1."""
    return min(match.cap_share, sum(row.share for row in match.rows) + match.symptom_share)


# --------------------------------------------------------------------------------------------
# Hardware and CANN applicability
# --------------------------------------------------------------------------------------------

#: Product names -> chip-name prefixes (normalised: lower case, no spaces, ``_`` or ``-``).
_HARDWARE_CHIPS = {
    "atlasa2": ("ascend910b",),
    "atlas800ta2": ("ascend910b",),
    "atlas800ia2": ("ascend910b",),
    "atlas900a2": ("ascend910b",),
    "atlasa3": ("ascend91093",),
    "atlas300i": ("ascend310p", "ascend310"),
    "atlas300iduo": ("ascend310p",),
    "atlas300ipro": ("ascend310p",),
    "atlas800": ("ascend910",),
    "atlas900": ("ascend910",),
}


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).lower()


def hardware_mismatch(entry: Entry, profile: Profile) -> str | None:
    """A sentence when the entry's hardware or CANN range excludes the profile's, else None."""
    problems = []
    chip = profile.chip
    if entry.hardware and chip:
        prefixes = [p for hw in entry.hardware for p in _chip_prefixes(hw)]
        if prefixes and not any(_norm(chip).startswith(p) for p in prefixes):
            problems.append(f"written for {', '.join(entry.hardware)}; this profile ran on {chip}")
    cann = profile.versions.get("cann")
    if entry.cann and cann and cann_matches(cann, entry.cann) is False:
        problems.append(f"applies to CANN {entry.cann}; this profile used CANN {cann}")
    return "; ".join(problems) or None


def _chip_prefixes(hardware: str) -> tuple[str, ...]:
    key = _norm(hardware)
    if key in _HARDWARE_CHIPS:
        return _HARDWARE_CHIPS[key]
    return (key,) if key.startswith("ascend") else ()  # unknown product names: cannot judge


def _version_tuple(text: str) -> tuple[int, ...] | None:
    numbers = re.findall(r"\d+", text.split("RC")[0].split("rc")[0]) or re.findall(r"\d+", text)
    return tuple(int(n) for n in numbers[:3]) if numbers else None


def cann_matches(version: str, spec: str) -> bool | None:
    """Whether a CANN version satisfies a specifier like ``>=8.0,<8.3``; None when unparseable."""
    have = _version_tuple(version)
    if have is None:
        return None
    for clause in spec.split(","):
        m = re.match(r"\s*(>=|<=|==|!=|>|<|~=)?\s*([\w.]+)\s*$", clause)
        want = _version_tuple(m.group(2)) if m else None
        if want is None:
            return None
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        op = m.group(1) or "=="
        ok = {
            ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b, "!=": a != b,
            "==": a[: len(want)] == b[: len(want)], "~=": a >= b,
        }[op]
        if not ok:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Expected gain
# --------------------------------------------------------------------------------------------


def expected_gain(entry: Entry, share: float, device_time_us: float, operators: Sequence[str]) -> ExpectedGain | None:
    """Amdahl: the entry's operators-scope range × the matched share; None without such a range."""
    gain = entry.gain
    if gain is None or gain.scope != "operators" or share <= 0:
        return None
    # A fix cannot recover more than all of the matched operators' time (Amdahl): clamp at 100 %.
    low = min(gain.low_pct, 100.0) * share
    high = min(gain.high_pct, 100.0) * share
    what = ", ".join(operators) or "the matched operators"
    basis = (
        f"{_pct(gain.low_pct)}–{_pct(gain.high_pct)} % of {what} time ({gain.metric}, {gain.source})"
        f" × their {share * 100:.1f} % share of device time (Amdahl)"
    )
    return _gain_of(low, high, device_time_us, basis)


def _gain_of(low: float, high: float, device_time_us: float, basis: str) -> ExpectedGain:
    """An ExpectedGain from a range in % of device time, with the time it saves."""
    return ExpectedGain(
        low_pct=round(low, 3),
        high_pct=round(high, 3),
        saved_us_low=round(low / 100 * device_time_us, 3),
        saved_us_high=round(high / 100 * device_time_us, 3),
        basis=basis,
    )


def calibrated_gain(entry: Entry, outcomes: list[Any], share: float, device_time_us: float,
                    operators: Sequence[str]) -> ExpectedGain | None:
    """The expected gain with the entry's recorded outcomes blended in (rule: ``outcomes.calibrate``)."""
    from opprof_advisor.outcomes import calibrate

    calibration = calibrate(entry, outcomes, share)
    if calibration.expected_low_pct is None or calibration.expected_high_pct is None or share <= 0:
        return None
    low, high = calibration.expected_low_pct, calibration.expected_high_pct
    what = ", ".join(operators) or "the matched operators"
    basis = f"{calibration.basis}; × the {share * 100:.1f} % share of device time of {what} (Amdahl)"
    return _gain_of(low, high, device_time_us, basis)


def _pct(value: float) -> str:
    return f"{value:g}"


def gain_note(entry: Entry) -> str | None:
    """The note for an entry whose gain cannot be scaled to this profile, else None."""
    gain = entry.gain
    if gain is None:
        return f"{entry.id}: no sourced gain figure, so no expected gain is given"
    if gain.scope == "end_to_end" or entry.kind == "case":
        where = "end to end" if gain.scope == "end_to_end" else "on its operators' time"
        return (
            f"{entry.id}: observed in that case: {_pct(gain.low_pct)}–{_pct(gain.high_pct)} % {gain.metric}"
            f" {where} ({gain.source}); not an expected gain for this profile"
        )
    return None


# --------------------------------------------------------------------------------------------
# Similar cases
# --------------------------------------------------------------------------------------------


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


MIX_WEIGHT = 0.8
SYMPTOM_WEIGHT = 0.2


def rank_cases(profile: Profile, entries: Sequence[Entry]) -> list[SimilarCase]:
    """Every case with an op mix, scored against the profile (op mix and defect symptoms), best first."""
    shares = {f: s for f, s in profile.family_shares().items() if s > 0}
    problems = {s.id for s in profile.symptoms if s.id not in DESCRIPTIVE_SYMPTOMS}
    found = []
    for entry in entries:
        if entry.kind != "case" or not entry.op_mix:
            continue
        mix = cosine(shares, case_mix_weights(entry.op_mix))
        if mix <= 0:
            continue
        overlap = jaccard(problems, {s for s in entry.symptoms if s not in DESCRIPTIVE_SYMPTOMS})
        similarity = MIX_WEIGHT * mix + SYMPTOM_WEIGHT * overlap
        found.append(SimilarCase(entry.id, entry.title, round(similarity, 4), round(mix, 4), round(overlap, 4)))
    found.sort(key=lambda c: (-c.similarity, c.id))
    return found


def similar_cases(profile: Profile, entries: Sequence[Entry], limit: int = MAX_SIMILAR_CASES) -> list[SimilarCase]:
    """The cases that resemble the profile (similarity ≥ MIN_SIMILARITY), best first."""
    return resembling(rank_cases(profile, entries), limit)


def resembling(cases: Sequence[SimilarCase], limit: int = MAX_SIMILAR_CASES) -> list[SimilarCase]:
    """The ranked cases that reach MIN_SIMILARITY, at most ``limit``."""
    return [case for case in cases if case.similarity >= MIN_SIMILARITY][:limit]


def closest_case_note(cases: Sequence[SimilarCase]) -> str | None:
    """When no case reaches MIN_SIMILARITY, a note that says so and names the closest one."""
    if not cases or cases[0].similarity >= MIN_SIMILARITY:
        return None
    best = cases[0]
    return (f"no case study resembles this profile closely (closest: {best.id}, {best.similarity:.2f};"
            f" shown from {MIN_SIMILARITY:.2f})")


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|, 0 when both are empty."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


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

    ``matcher`` is a fitted ``EntryMatcher`` (``matcher.load_matcher(index)``); without one a
    matcher is fitted on ``entries`` (imports scikit-learn). ``gains=False`` leaves every
    ``expected_gain`` None (for pseudo-profiles without real device time). ``outcomes`` maps entry
    ids to their recorded ``outcomes.Outcome`` list: those entries' ranges are calibrated
    (``outcomes.calibrate``) and a note says what was observed.
    """
    if not entries:
        raise MatcherError("the knowledge base has no entries", hint="check `advisor kb list`")
    if kind is not None and kind not in KINDS:
        raise MatcherError(f"unknown kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    if matcher is None:
        from opprof_advisor.matcher import fit_matcher

        matcher = fit_matcher(entries)
    query = build_query(profile, model)
    relevance = dict(zip(matcher.entry_ids_, matcher.score(query)))
    kinds = (kind,) if kind else DEFAULT_KINDS
    notes: list[str] = list(profile.notes)
    ranked = []
    for entry in entries:
        if entry.kind not in kinds:
            continue
        recorded = (outcomes or {}).get(entry.id) if gains else None
        suggestion = score_entry(entry, profile, relevance.get(entry.id, 0.0), gains=gains, outcomes=recorded)
        if suggestion is not None:
            ranked.append(suggestion)
    ranked.sort(key=lambda s: (-s.score, s.entry.id))
    chosen = diversify(ranked)[: max(0, top)]
    for rank, suggestion in enumerate(chosen, start=1):
        suggestion.rank = rank
        if explain:
            suggestion.matched_terms = matcher.matched_terms(query, suggestion.entry.id)
        notes.extend(_suggestion_notes(suggestion, profile, gains))
    if profile.device_time_us <= 0:
        notes.append("cannot judge time at stake: the profile has no device time")
    cases = rank_cases(profile, entries)
    note = closest_case_note(cases)
    if note:
        notes.append(note)
    return SuggestResult(profile, chosen, resembling(cases), notes, query)


def diversify(ranked: list[Suggestion]) -> list[Suggestion]:
    """Let at most MAX_SAME_EVIDENCE suggestions with the same backing evidence lead the list.

    Several tips can answer one symptom (three dynamic-shape switches, six communication
    patterns); the rest follow, in score order, after the advice that addresses something else.
    """
    seen: dict[tuple, int] = {}
    leading, following = [], []
    for suggestion in ranked:
        key = tuple(sorted(suggestion.matched_symptoms)) or ("ops",) + tuple(sorted(suggestion.matched_operators))
        seen[key] = seen.get(key, 0) + 1
        (leading if seen[key] <= MAX_SAME_EVIDENCE else following).append(suggestion)
    return leading + following


def score_entry(entry: Entry, profile: Profile, relevance: float, *, gains: bool = True,
                outcomes: list[Any] | None = None) -> Suggestion | None:
    """Score one entry against the profile, or None when the profile shows no evidence for it."""
    match = match_entry(entry, profile)
    if not match.rows and not match.symptoms:
        return None
    share = stake_share(match)
    specificity = SPECIFIC if match.operator_rows or not match.symptoms else GENERAL
    tier = symptom_tier(match.symptoms)
    hardware = HARDWARE_MISMATCH if hardware_mismatch(entry, profile) else 1.0
    fit = specificity * (STAKE_WEIGHT * math.sqrt(share) + RELEVANCE_WEIGHT * relevance) * hardware
    score = tier + fit
    # A gain figure is about the entry's own operators: scale it by their share only, and never
    # promise a case's result (it is shown as "observed in that case").
    fixed = _fixed_rows(entry, match)
    fixed_share = min(match.cap_share, sum(row.share for row in fixed) + (0.0 if entry.operators else match.symptom_share))
    op_names = _unique(row.op_type for row in fixed)
    promise = gains and entry.kind != "case"
    gain = expected_gain(entry, fixed_share, profile.device_time_us, op_names) if promise else None
    observed = ""
    if promise and outcomes:
        from opprof_advisor.outcomes import observed_text

        gain = calibrated_gain(entry, outcomes, fixed_share, profile.device_time_us, op_names) or gain
        observed = observed_text([o.matched_gain_pct for o in outcomes if o.matched_gain_pct is not None])
    return Suggestion(
        entry=entry,
        score=round(score, 6),
        relevance=round(relevance, 6),
        stake_share=round(share, 6),
        tier=tier,
        specificity=specificity,
        hardware=hardware,
        matched_symptoms=[s.id for s in match.symptoms],
        matched_operators=_unique(row.family for row in match.operator_rows),
        evidence=collect_evidence(match, profile),
        expected_gain=gain,
        rows=list(match.rows),
        observed=observed,
    )


def _fixed_rows(entry: Entry, match: _Match) -> list[OpTypeStat]:
    """The matched rows an entry's gain figure is about: those of its own operator families."""
    if not entry.operators:
        return match.rows
    families = set(entry.operators)
    return [row for row in match.rows if row.family in families]


def symptom_tier(symptoms: Sequence[Symptom]) -> int:
    """2 when a defect symptom backs the entry, 1 for bound-class symptoms only, 0 for none."""
    if not symptoms:
        return TIER_OPERATORS
    return TIER_BOUND if all(s.id in DESCRIPTIVE_SYMPTOMS for s in symptoms) else TIER_DEFECT


def _suggestion_notes(suggestion: Suggestion, profile: Profile, gains: bool) -> list[str]:
    notes = []
    mismatch = hardware_mismatch(suggestion.entry, profile)
    if mismatch:
        notes.append(f"{suggestion.entry.id}: {mismatch} — check that it applies")
    entry = suggestion.entry
    if suggestion.observed:
        notes.append(f"{entry.id}: {suggestion.observed} in your recorded outcomes")
    elif gains:
        note = gain_note(entry)
        if note:
            notes.append(note)
        elif suggestion.expected_gain is None:
            notes.append(f"{entry.id}: its figure is about {', '.join(entry.operators)} time, and the matched kernels"
                         " belong to another or an unknown operator family, so no expected gain is given")
    return notes


def _unique(items: Any) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


# --------------------------------------------------------------------------------------------
# The JSON document (shared by `advisor suggest --format json` and the HTML report)
# --------------------------------------------------------------------------------------------


def suggestion_to_json(suggestion: Suggestion) -> dict[str, Any]:
    """One suggestion in the ``opprof-advisor/suggest/1`` shape."""
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
            "low_pct": gain.low_pct,
            "high_pct": gain.high_pct,
            "saved_us_low": gain.saved_us_low,
            "saved_us_high": gain.saved_us_high,
            "basis": gain.basis,
        },
        "evidence_grade": entry.evidence,
        "sources": list(entry.sources),
    }


def suggestions_to_json(result: SuggestResult) -> dict[str, Any]:
    """The whole ``opprof-advisor/suggest/1`` document for a result."""
    profile = result.profile
    return {
        "schema": SUGGEST_SCHEMA,
        "profile": {"path": profile.path, "format": profile.format, "device_time_us": profile.device_time_us},
        "suggestions": [suggestion_to_json(s) for s in result.suggestions],
        "similar_cases": [{"id": c.id, "title": c.title, "similarity": c.similarity} for c in result.similar_cases],
        "notes": list(result.notes),
    }


# --------------------------------------------------------------------------------------------
# Text renderings (shared by the CLI and reports)
# --------------------------------------------------------------------------------------------


def format_time_us(us: float) -> str:
    """A duration in the unit a reader expects: µs, ms or s."""
    if abs(us) >= 1_000_000:
        return f"{us / 1_000_000:.2f} s"
    if abs(us) >= 1_000:
        return f"{us / 1_000:.1f} ms"
    return f"{us:.1f} µs"


def gain_text(gain: ExpectedGain | None) -> str:
    """``4.5–6.3 % (4.5–6.3 ms)``, or ``no sourced figure``."""
    if gain is None:
        return "no sourced figure"
    return (
        f"{gain.low_pct:.1f}–{gain.high_pct:.1f} % "
        f"({format_time_us(gain.saved_us_low)}–{format_time_us(gain.saved_us_high)})"
    )


def evidence_text(evidence: Evidence) -> str:
    """``NonMaxSuppressionV3 18.0 % (18.0 ms)`` for a row, the reason for a symptom."""
    what = evidence.op_type or evidence.why.split(":", 1)[0]
    return f"{what} {evidence.share * 100:.1f} % ({format_time_us(evidence.time_us)})"


def score_breakdown(suggestion: Suggestion) -> str:
    """The ranking formula with this suggestion's numbers filled in."""
    return (
        f"score {suggestion.score:.3f} = tier {suggestion.tier} + specificity {suggestion.specificity:g}"
        f" × (0.5 × √{suggestion.stake_share:.3f} + 0.5 × relevance {suggestion.relevance:.3f})"
        f" × hardware {suggestion.hardware:g}"
    )


def similar_case_text(case: SimilarCase, *, explain: bool = False) -> str:
    """``your profile resembles <id> — <title> (0.83)``; with ``explain`` the two parts too."""
    text = f"your profile resembles {case.id} — {case.title} ({case.similarity:.2f})"
    if explain:
        text += f" [op mix cosine {case.mix_cosine:.2f}, symptom overlap {case.symptom_overlap:.2f}]"
    return text


def suggestions_to_markdown(result: SuggestResult, *, explain: bool = False) -> str:
    """The result as a markdown document."""
    profile = result.profile
    lines = [
        f"# Suggestions for `{profile.path}`",
        "",
        f"Format {profile.format}, device time {format_time_us(profile.device_time_us)}.",
        "",
    ]
    if not result.suggestions:
        lines += ["No entry of the knowledge base is backed by this profile.", ""]
    for s in result.suggestions:
        lines += [
            f"## {s.rank}. {s.entry.title}",
            "",
            f"- id: `{s.entry.id}` ({s.entry.kind}), evidence grade {s.entry.evidence}, score {s.score:.3f}",
            f"- expected gain: {gain_text(s.expected_gain)}",
        ]
        if s.expected_gain:
            lines.append(f"- basis: {s.expected_gain.basis}")
        lines += [f"- evidence: {evidence_text(e)} — {e.why}" for e in s.evidence]
        lines += [f"- source: {src}" for src in s.entry.sources]
        if explain:
            lines.append(f"- {score_breakdown(s)}")
            terms = ", ".join(f"{t} {w:.3f}" for t, w in s.matched_terms)
            lines.append(f"- matched terms: {terms or 'none'}")
        lines.append("")
    if result.similar_cases:
        lines += ["## Similar cases", ""]
        lines += [f"- {similar_case_text(c, explain=explain)}" for c in result.similar_cases]
        lines.append("")
    if result.notes:
        lines += ["## Notes", ""]
        lines += [f"- {note}" for note in result.notes]
        lines.append("")
    return "\n".join(lines)
