"""Remedies from the knowledge base, hung under a finding: only those that apply to this workload.

A KB entry (recipe, pattern or tip) is a candidate remedy of a finding when it answers one of the
finding's symptoms and, if it names operator families, one of the finding's. It is left out when its
``applies_to`` does not fit the workload context (a context value the profile cannot tell never rules it
out) or one of its ``requires:`` fails; ``--explain`` lists what was left out and why. The candidates are
ranked by the TF-IDF matcher against the finding's own words (its symptoms, operators, op types) and the
workload context, after two tiers: one written for another chip comes last, and one resting on what no profile
shows (the training stack unless ``--stack`` names it, operators the finding does not show) after those it
does not; one resting on MAX_GUESSES facts the profile cannot tell (one of those, and another or an unknown
framework) is left out. An entry written for the finding's operators ranks ahead of a general one. The first
is the lead remedy; an entry that contradicts one ranked above it is dropped.
"""

from __future__ import annotations

from typing import Any, Sequence

from opprof_advisor.advice.finding import Finding
from opprof_advisor.core.i18n import M_, Message, join_messages
from opprof_advisor.kb import first_step
from opprof_advisor.core.models import Entry, Profile
from opprof_advisor.core.operators import FAMILIES
from opprof_advisor.core.vocabulary import APPLIES_KEYS
from opprof_advisor.advice.requirements import check_requirements, hardware_mismatch, unmet

#: An entry written for the finding's operators counts this much more than a general one.
SPECIFIC_BONUS = 0.25
#: ... and one whose symptoms are all the finding's, up to this much more than one answering many symptoms.
FOCUS_BONUS = 0.15
MAX_REMEDIES = 5
#: A remedy resting on this many workload facts the profile cannot tell, one of them UNSEEN, is a guess: left out,
#: with why (1 GB pages for scattered reads, on a custom kernel of a run whose framework is unknown).
MAX_GUESSES = 2
#: The facts no profile of this run shows, whatever wrote it: the training stack, and the operators a remedy is
#: written for when the finding's are others (a custom kernel). A remedy resting on them ranks under those that
#: do not; an unknown framework or phase (a system msprof run or a cluster summary records neither) only counts
#: towards MAX_GUESSES beside one of them.
UNSEEN = frozenset({"stack", "operators"})
KNOWN = frozenset(FAMILIES)
#: ``applies_to`` keys the workload context holds as lists, and under which name.
LISTED = {"family": "families", "stack": "stacks"}
#: Serving engines whose own kernels (the paged-attention cache writes) show in every run of theirs.
SERVING_ENGINES = frozenset({"vllm-ascend", "mindie"})
#: Model families told by their operators alone (grouped matmuls / MoE routing, NMS, an encoder's convolution).
SEEN_BY_OPS = frozenset({"moe", "detection", "multimodal"})
#: Tags of advice that moves fewer bytes or does less work (reuse, cache, fusion, lower precision): the only
#: remedies of a kernel near its roof.
FEWER_BYTES = frozenset({"l2-cache", "l2", "data-reuse", "cache", "fusion", "fused-ops", "quantization", "int8",
                         "int4", "w8a8", "w8a16", "fp16", "bf16", "mixed-precision", "amp", "low-precision"})
#: Advice about using the cores better (more blocks, balanced blocks), which cannot help a kernel at its roof.
CORE_USE = frozenset({"low_block_dim", "block_imbalance", "low_parallelism"})


def misfit(entry: Entry, context: dict[str, Any]) -> Message | None:
    """Why ``entry`` does not apply to the workload, or None when it does (or the profile cannot tell)."""
    for key, wanted in entry.applies_to.items():
        if key in LISTED:  # the families the kernels show; the stacks said with --stack (the profile never tells)
            have = context.get(LISTED[key]) or []
            if key == "family" and not have and context.get("kernels_seen") and set(wanted) <= SEEN_BY_OPS:
                # MoE routing and NMS always show as operators: a run whose kernels hold none has neither
                return M_("applies to {requirement}; none of their operators ran", requirement=_said(key, wanted))
            if have and not set(have) & set(wanted):
                return M_("applies to {requirement}; this run: {have}", requirement=_said(key, wanted),
                          have=", ".join(have))
            continue
        value = context.get(key)
        if key == "framework" and value is None and context.get("kernels_seen") and set(wanted) <= SERVING_ENGINES:
            # a serving engine's paged-attention cache kernels show in every run of it
            return M_("applies to {requirement}; none of its kernels ran", requirement=_said(key, wanted))
        if value is not None and value not in wanted:
            return M_("applies to {requirement}; this run: {have}", requirement=_said(key, wanted), have=str(value))
    return None


def unconfirmed(entry: Entry, context: dict[str, Any], operators: set[str]) -> list[str]:
    """The workload facts ``entry`` rests on that the profile cannot tell: each context value it names that is
    unknown (the framework of a system msprof run, the training stack unless --stack says it), and operators
    the finding does not show (a custom kernel takes any remedy, but one written for MatMul is a guess there)."""
    # a finding about no operators (the run's idle time, its memory) does not make operators a guess
    unknown = ["operators"] if entry.operators and operators and not operators & set(entry.operators) else []
    for key, wanted in entry.applies_to.items():
        if set(APPLIES_KEYS.get(key, ())) <= set(wanted):
            continue  # every value: no condition
        if key in LISTED:
            known = context.get(LISTED[key])
        elif key == "mode" and "framework" in entry.applies_to and context.get("framework") is None:
            known = True  # a mode is told only once the framework is: one unknown fact, counted there
        else:
            known = key == "producer" or context.get(key) is not None
        if not known:
            unknown.append(key)
    return unknown


def _said(key: str, wanted) -> str:
    """``family transformer, moe``: the requirement as the KB writes it, one placeholder (never translated)."""
    return f"{key} {', '.join(wanted)}"


def finding_query(finding: Finding, context: dict[str, Any]) -> str:
    """The matcher's query for a finding: its symptoms and operators weigh most, then the workload."""
    words = [*finding.symptoms * 3, *(finding.remedy_symptoms or []) * 2, *finding.operators * 2, *finding.op_types,
             *finding.remedy_tags * 2]
    words += [str(context[k]) for k in ("framework", "phase", "mode", "precision") if context.get(k)]
    words += list(context.get("families") or [])
    if context.get("model_hint"):  # --model: the architecture's name weighs like a symptom
        words += [str(context["model_hint"])] * 3
    return " ".join(words)


def remedies_for(finding: Finding, entries: Sequence[Entry], profile: Profile, context: dict[str, Any],
                 matcher: Any, kinds: Sequence[str]) -> tuple[list[Entry], list[dict[str, Any]], dict[str, float]]:
    """The remedies of ``finding`` in rank order, the candidates left out with why, and each candidate's
    relevance to the finding (the matcher's cosine)."""
    wanted = set(finding.remedy_symptoms or finding.symptoms)
    operators = set(finding.operators)
    rows = [r for r in profile.op_types if r.op_type in set(finding.op_types)]
    share = finding.stake_us / (context.get("reference_us") or profile.reference_us or 1.0)
    candidates: list[Entry] = []
    left_out: list[dict[str, Any]] = []
    unseen: dict[str, list[str]] = {}  # each candidate's facts the profile cannot tell
    for entry in entries:
        if entry.kind not in kinds or not wanted & set(entry.symptoms):
            continue
        if "bytes" in finding.remedy_tags and (set(entry.symptoms) & CORE_USE or not set(entry.tags) & FEWER_BYTES):
            continue  # at its roof a kernel gains nothing from using the cores or the bandwidth better
        if entry.operators and operators & KNOWN and not operators & set(entry.operators):
            continue  # written for other operators (a custom kernel of no known family takes any)
        why = misfit(entry, context)
        guesses = unseen[entry.id] = unconfirmed(entry, context, operators)
        if why is None and len(guesses) >= MAX_GUESSES and UNSEEN & set(guesses):
            why = M_("rests on what the profile cannot tell: {facts}", facts=", ".join(guesses))
        if why is None:
            failed = unmet(check_requirements(entry, profile, rows, share))
            if failed:
                why = join_messages([c.text() for c in failed], "; ")
        if why is not None:
            left_out.append({"id": entry.id, "finding": finding.id, "why": why})
            continue
        candidates.append(entry)
    if not candidates:
        return [], left_out, {}
    scores = dict(zip(matcher.entry_ids_, matcher.score(finding_query(finding, context))))

    def rank(entry: Entry) -> tuple[bool, int, float, str]:
        specific = SPECIFIC_BONUS if operators & set(entry.operators) else 0.0
        # an entry about this diagnosis alone ranks ahead of one that answers it among many others
        focused = FOCUS_BONUS * len(wanted & set(entry.symptoms)) / len(entry.symptoms)
        # In tiers, then by relevance: one written for another chip or CANN (an Ascend 950 sample on an A2 profile)
        # after every one that fits; then the fewer UNSEEN facts it rests on (the training stack, operators the
        # finding does not show), the earlier: a remedy the profile shows to apply leads, one that may rest on a
        # setting it cannot see comes under it.
        return (hardware_mismatch(entry, profile) is not None, sum(g in UNSEEN for g in unseen[entry.id]),
                -(scores.get(entry.id, 0.0) + specific + focused), entry.id)

    chosen: list[Entry] = []
    for entry in sorted(candidates, key=rank):
        clash = next((c for c in chosen if entry.id in c.contradicts or c.id in entry.contradicts), None)
        if clash is not None:
            left_out.append({"id": entry.id, "finding": finding.id,
                             "why": M_("contradicts {other}, ranked above it", other=clash.id)})
            continue
        chosen.append(entry)
    listed = chosen[:MAX_REMEDIES]
    # the pattern that describes this very diagnosis is always listed, last if the ranking left it out
    story = next((e for e in chosen if e.id == finding.story), None)
    if story is not None and story not in listed:
        listed[-1] = story
    return listed, left_out, {e.id: round(float(scores.get(e.id, 0.0)), 4) for e in listed}


def remedy_json(entry: Entry, finding: Finding, relevance: float | None = None) -> dict[str, Any]:
    """One remedy as the suggest document lists it."""
    answered = [s for s in entry.symptoms if s in set(finding.remedy_symptoms or finding.symptoms)]
    named = [f for f in entry.operators if f in set(finding.operators)]
    why = (M_("answers {symptoms} on {operators}", symptoms=", ".join(answered), operators=", ".join(named))
           if named else M_("answers {symptoms}", symptoms=", ".join(answered)))
    return {
        "id": entry.id, "kind": entry.kind, "title": entry.title, "tags": list(entry.tags),
        "first_step": first_step(entry),
        "why_applies": why, "evidence_grade": entry.evidence, "sources": list(entry.sources),
        "applies_to": dict(entry.applies_to), "relevance": relevance,
        "zh": {key: entry.zh[key] for key in ("title", "summary", "first_step") if entry.zh.get(key)},
    }
