"""`advisor suggest`: findings ranked by expected gain, each with the remedies that apply, as one document.

1. The workload context is told once (advice/context.py).
2. Every rule (advice/rules_run.py, advice/rules_kernel.py) makes its findings: one row per diagnosis, in the
   profile's own numbers, with the time it covers and a modelled gain (``../shared/GAIN-MODELS.md``).
3. Remedies are hung under each finding (advice/remedies.py); the gain becomes ``measured`` when the user
   recorded outcomes of the lead remedy, else ``sourced`` when the lead remedy's published figure is about
   the finding's operators (never above the finding's model bound), else stays ``model``.
4. Rows are ranked by the middle of their gain (a quarter of the way up it for a low-confidence finding, whose
   range starts at 0 because the profile cannot tell whether its cause is there), then confidence; rows without a model follow. ``--top`` is a
   maximum: findings whose gain (or, without a model, whose stake) stays under REST_SHARE of the reference time
   are not listed; one line says so.

Shares are of the step where the profile has a step split, of device time otherwise, and of device time
for an excerpt (one idle gap holding most of the window). The document's schema is
``opprof-advisor/suggest/2``; every front end renders it.
"""

from __future__ import annotations

from typing import Any, Sequence

from opprof_advisor.advice.context import workload_context
from opprof_advisor.cluster.reduce import per_rank, per_rank_of
from opprof_advisor.advice.finding import Finding, Gain
from opprof_advisor.advice.remedies import remedies_for, remedy_json
from opprof_advisor.advice.requirements import chips_fit, hardware_mismatch
from opprof_advisor.advice.rules_kernel import kernels
from opprof_advisor.advice.rules_memory import memory_findings, saving_json
from opprof_advisor.advice.rules_run import RUN_RULES
from opprof_advisor.core.i18n import M_
from opprof_advisor.core.models import Entry, Profile
from opprof_advisor.core.vocabulary import check_stack
from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.advice.similar_cases import closest_case_note, rank_cases, resembling
from opprof_advisor.advice.gains import calibrated_gain
from opprof_advisor.advice.matcher import ready_matcher

SUGGEST_SCHEMA = "opprof-advisor/suggest/2"
#: Rows whose gain (or, without a model, whose stake) stays under this share of the reference time are not
#: listed: "nothing else above 3 % of the step".
REST_SHARE = 0.03
DEFAULT_KINDS = ("recipe", "pattern", "tip")
_CONFIDENCE_ORDER = {"high": 0, "medium": 1, "low": 2}
LOW_CONFIDENCE_POINT = 0.25
#: The first step of a finding no knowledge-base entry answers for this workload.
NO_REMEDY = M_("no knowledge-base remedy fits this workload: check the shapes, dtypes and layout the operators are "
               "called with against their documented constraints, try a newer CANN, or add your own entry "
               "(advisor add)")


def reference(profile: Profile, context: dict[str, Any]) -> tuple[float, str]:
    """(µs, name) of what shares are taken of."""
    if context.get("excerpt") or profile.reference != "step":
        return profile.device_time_us, "device time"
    return profile.reference_us, "step"


def _located(evidence: list[dict[str, Any]], profile: Profile) -> list[dict[str, Any]]:
    """Evidence rows with ``where``: the user's code that launched most of the op type's time, when recorded."""
    stacks = {row.op_type: row.stacks for row in profile.op_types if row.stacks}
    return [{**row, "where": stacks[row["op_type"]][0]["where"]} if row.get("op_type") in stacks else row
            for row in evidence]


def findings_of(profile: Profile, context: dict[str, Any], ref_us: float) -> list[Finding]:
    """Every rule's findings; the kernel rules leave alone the op types a whole-run finding already claims."""
    run = [finding for rule in RUN_RULES for finding in rule(profile, context, ref_us)]
    covered = frozenset(op for finding in run for op in finding.op_types)
    return run + kernels(profile, context, ref_us, covered)


def advise(profile: Profile, entries: Sequence[Entry], *, matcher: Any = None, top: int = 5, kind: str | None = None,
           explain: bool = False, outcomes: dict[str, list[Any]] | None = None, model: str | None = None,
           stack: str | None = None) -> dict[str, Any]:
    """The ``opprof-advisor/suggest/2`` document for ``profile`` (a job's: per rank, see ``cluster.reduce.per_rank``)."""
    profile = per_rank(profile)
    matcher = ready_matcher(entries, kind, matcher)
    check_stack(stack)
    context = workload_context(profile, stack)
    ref_us, ref_name = reference(profile, context)
    context["reference"] = ref_name
    context["reference_us"] = ref_us
    if model:
        context["model_hint"] = model
    kinds = (kind,) if kind else DEFAULT_KINDS
    rows, left_out, unjudged, measured_notes = [], [], [], []
    for finding in findings_of(profile, context, ref_us):
        finding.evidence = _located(finding.evidence, profile)
        if finding.note:
            unjudged.append(finding.title)
            continue
        remedies, dropped, relevance = remedies_for(finding, entries, profile, context, matcher, kinds)
        left_out += dropped
        gain = _best_gain(finding, remedies, profile, outcomes or {})
        if gain is not None and gain.model == "measured":
            measured_notes.append(M_("{id}: {observed} in your recorded outcomes", id=remedies[0].id,
                                     observed=gain.observed))
        rows.append((finding, gain, [(entry, relevance.get(entry.id)) for entry in remedies]))
    rows.sort(key=_rank_key)
    listed, rest = [], []
    for row in rows:
        finding, gain, _ = row
        worth = gain.high_us if gain is not None else finding.stake_us
        (listed if ref_us and worth >= REST_SHARE * ref_us else rest).append(row)
    shown = listed[:max(0, top)]
    suggestions = [_row_json(rank, finding, gain, remedies, ref_us, ref_name)
                   for rank, (finding, gain, remedies) in enumerate(shown, start=1)]
    notes = list(profile.notes) + unjudged + measured_notes
    if ref_us <= 0:
        notes.append(M_("cannot judge time at stake: the profile has no device time and no step split"))
    if context.get("excerpt"):
        notes.append(M_("the window is an excerpt (one idle gap holds most of it): shares are of device time"))
    cases = rank_cases(profile, entries)
    note = closest_case_note(cases)
    if note:
        notes.append(note)
    more = len(listed) - len(shown)
    memory = _memory_section(profile, entries, context, matcher, kinds)
    return {
        "schema": SUGGEST_SCHEMA,
        "profile": {"path": profile.path, "format": profile.format, "device_time_us": profile.device_time_us,
                    "reference": ref_name, "reference_us": round(ref_us, 3), "excerpt": bool(context.get("excerpt")),
                    **({"per_rank_of": per_rank_of(profile)} if per_rank_of(profile) else {})},
        "context": context,
        "suggestions": suggestions,
        "rest": _rest_line(more, ref_name),
        "similar_cases": [{"id": c.id, "title": c.title, "similarity": c.similarity, "mix_cosine": c.mix_cosine,
                           "symptom_overlap": c.symptom_overlap, "why": list(c.why), "zh": dict(c.zh)}
                          for c in resembling(cases)],
        "notes": notes,
        "left_out": left_out if explain else [],
        "explain": explain,
        "profile_document": profile_to_json(profile),
        **({"memory": memory} if memory is not None else {}),
    }


def _memory_section(profile: Profile, entries: Sequence[Entry], context: dict[str, Any], matcher: Any,
                    kinds: Sequence[str]) -> dict[str, Any] | None:
    """The memory block of the document: the peak and each memory finding with what it can save (bytes, not time:
    apart from the ranked time findings) and its remedies."""
    if profile.memory is None:
        return None
    findings = []
    for finding, saving in memory_findings(profile, context.get("ranks")):
        remedies, _, relevance = remedies_for(finding, entries, profile, context, matcher, kinds)
        listed = [remedy_json(entry, finding, relevance.get(entry.id)) for entry in remedies]
        findings.append({"id": finding.id, "title": finding.title, "matched_symptoms": list(finding.symptoms),
                         "saving": saving_json(saving), "remedies": listed,
                         "first_step": listed[0]["first_step"] if listed else NO_REMEDY})
    return {"peak": profile.memory.get("peak"), "components": profile.memory.get("components"),
            "curve": profile.memory.get("curve"),
            "holders": profile.memory.get("holders"), "outside_allocator": profile.memory.get("outside_allocator"),
            "modules": profile.memory.get("modules"), "findings": findings}


def _rank_key(row) -> tuple:
    finding, gain, _ = row
    has = gain is not None
    return (not has, -(expected_us(finding, gain) if has else finding.stake_us),
            _CONFIDENCE_ORDER.get(finding.confidence, 3), finding.id)


def expected_us(finding: Finding, gain: Gain) -> float:
    """What a row is ranked by: the middle of its range, or a quarter of the way up it for a low-confidence
    finding (one whose range starts at 0 because the profile cannot tell whether the cause is there)."""
    return gain.low_us + (gain.high_us - gain.low_us) * LOW_CONFIDENCE_POINT if finding.confidence == "low" \
        else gain.mid_us


def _rest_line(more: int, ref_name: str):
    if more > 0:
        return M_("{n} more findings above 3 % of the {reference}: raise --top to see them", n=more,
                  reference=ref_name)
    return M_("nothing else above 3 % of the {reference}", reference=ref_name)


def _best_gain(finding: Finding, remedies: list[Entry], profile: Profile, outcomes: dict[str, list[Any]]) -> Gain | None:
    """measured (the lead remedy's recorded outcomes) > sourced (its figure, for these operators) > model."""
    model = finding.gain
    if not remedies or (model is None and finding.family == "kernel"):
        return model  # a kernel with no model (at its roof) gets no figure from a remedy either
    bound = model.high_us if model is not None and finding.family == "kernel" else finding.stake_us
    lead = remedies[0]
    rows = [r for r in profile.op_types if r.op_type in set(finding.op_types)]
    recorded = outcomes.get(lead.id)
    if recorded:
        fixed = sum(r.time_us for r in rows) or finding.stake_us
        calibrated, observed = calibrated_gain(lead, recorded, fixed, profile, finding.op_types, None)
        if calibrated is not None:
            return Gain(min(calibrated.saved_us_low, bound), min(calibrated.saved_us_high, bound), "measured",
                        M_("{lead}: {observed} in your recorded outcomes, × {time}", lead=lead.id,
                           observed=observed, time=U.time(fixed)), observed=observed)
    figure = lead.gain
    if figure is None or lead.kind == "case" or figure.scope != "operators" or figure.estimate or \
            hardware_mismatch(lead, profile):  # a case's result is its story, never this profile's gain
        return model
    chips = figure.hardware or lead.hardware
    if chips and chips_fit(chips, profile.chip) is not True:
        return model  # measured on other chips, or the profile names none: its scope may not fit (GAIN-MODELS.md)
    families = set(figure.measured_on or lead.operators)
    fit = [r for r in rows if r.family in families]
    fixed = sum(r.time_us for r in fit)
    if fixed <= 0:
        return model
    low, high = fixed * min(figure.low_pct, 100) / 100, fixed * min(figure.high_pct, 100) / 100
    also = (M_("; the model gives {low}–{high}", low=U.time(model.low_us), high=U.time(model.high_us))
            if model is not None else "")
    return Gain(min(low, bound), min(high, bound), "sourced", M_(
        "{low}–{high} % of {families} time ({metric}, {source}) × their {time}{also}", low=format(figure.low_pct, "g"),
        high=format(figure.high_pct, "g"), families=", ".join(sorted(families)), metric=figure.metric,
        source=figure.source, time=U.time(fixed), also=also))


def gain_json(gain: Gain | None, ref_us: float, ref_name: str) -> dict[str, Any] | None:
    if gain is None:
        return None
    pct = (lambda us: round(100.0 * us / ref_us, 3)) if ref_us else (lambda us: 0.0)
    return {"low_us": round(gain.low_us, 3), "high_us": round(gain.high_us, 3), "low_pct": pct(gain.low_us),
            "high_pct": pct(gain.high_us), "model": gain.model, "assumptions": gain.assumptions,
            # the suggest/1 names, for readers of the older document
            "saved_us_low": round(gain.low_us, 3), "saved_us_high": round(gain.high_us, 3), "basis": gain.assumptions,
            "kind": gain.model, "of": ref_name}


def _row_json(rank: int, finding: Finding, gain: Gain | None, remedies: list[tuple[Entry, float | None]], ref_us: float,
              ref_name: str) -> dict[str, Any]:
    lead = remedies[0][0] if remedies else None
    listed = [remedy_json(entry, finding, relevance) for entry, relevance in remedies]
    return {
        "rank": rank,
        "id": finding.id,
        "family": finding.family,
        "title": finding.title,
        "evidence": finding.evidence,
        "matched_symptoms": list(finding.symptoms),
        "operators": list(finding.operators),
        "op_types": list(finding.op_types),
        "stake_us": round(finding.stake_us, 3),
        "stake_share": round(finding.stake_us / ref_us, 6) if ref_us else 0.0,
        "expected_gain": gain_json(gain, ref_us, ref_name),
        "gain_basis": gain.model if gain is not None else "none",
        "confidence": finding.confidence,
        "measure": finding.measure,
        "remedies": listed,
        "first_step": listed[0]["first_step"] if listed else (finding.first_step or finding.measure or NO_REMEDY),
        "show": f"advisor show {lead.id}" if lead else None,
        "zh": {},
    }
