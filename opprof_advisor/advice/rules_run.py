"""Findings about the whole run: idle time, communication, AI CPU work, conversions, precision, fusion,
recompilation, slow ranks. One function per family; each reads the profile's symptoms and step split and
returns its findings with the gain model of ``../shared/GAIN-MODELS.md`` named in ``assumptions``.

``ref_us`` is the time shares are taken of (the step, or device time for an excerpt): see advice/suggest.py.
"""

from __future__ import annotations

from typing import Any, Callable

from opprof_advisor.symptoms import IDLE_LATE
from opprof_advisor.advice.finding import Finding, band
from opprof_advisor.core.i18n import M_, N_, join_messages
from opprof_advisor.core.models import OpTypeStat, Profile, Symptom
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.core.thresholds import FREE_SHARE

#: The GAIN-MODELS band for remedies whose removable part the profile cannot measure (graph capture of
#: launch gaps, overlapping communication, ending waits): 30 % (low) to 80 % (high) of the time covered.
LOW, HIGH = 0.3, 0.8
#: The shortest chain the unfused-norm check matches (RMSNorm, SwiGLU: three kernels; symptoms_kernels.NORM_PATTERNS).
NORM_CHAIN = 3
#: Share of the AI CPU time an AI Core kernel of the same op leaves (GAIN-MODELS: low 0.5, high 0.9 saved).
AICPU_SAVED = (0.5, 0.9)

Rule = Callable[[Profile, dict[str, Any], float], list[Finding]]


def evidence_row(op_type: str | None, time_us: float, ref_us: float, why: str) -> dict[str, Any]:
    return {"op_type": op_type, "time_us": round(time_us, 3), "share": round(time_us / ref_us, 6) if ref_us else 0.0,
            "why": why}


def symptoms_of(profile: Profile) -> dict[str, Symptom]:
    return {s.id: s for s in profile.symptoms}


def rows_of(profile: Profile, names: list[str], unit: str | None = None) -> list[OpTypeStat]:
    wanted = set(names)
    rows = [r for r in profile.op_types if r.op_type in wanted or r.family in wanted]
    if unit:
        rows = [r for r in rows if r.unit == unit] or rows
    return rows


def share_text(time_us: float, ref_us: float, ref_name: str) -> str:
    return M_("{share} of the {reference}", share=U.share(time_us / ref_us if ref_us else 0.0), reference=ref_name)


def _count(detail: Any) -> int | None:
    """The kernel count a symptom's detail holds (its Message's value)."""
    values = getattr(detail, "values", {})
    value = values.get("count", values.get("shorts"))
    return value if isinstance(value, int) else None


# ------------------------------------------------------------------------------------------------------
# Idle time and launches
# ------------------------------------------------------------------------------------------------------


def idle(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    """Free time between kernels (the host does not keep the device fed), and short kernels' own time (work to
    fuse): two diagnoses, two models, never the same time twice."""
    return _idle_gaps(profile, ctx, ref_us) + _short_kernels(profile, ctx, ref_us)


def _idle_gaps(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    found = symptoms_of(profile)
    host, launch, small = found.get("host_bound"), found.get("launch_bound"), found.get("small_kernels")
    if not host:
        return []
    free_us = host.time_us
    # time before the step's first task is the host's set-up (data loading, Python), not launch gaps
    preparing = min(free_us, sum(s.preparing_us or 0.0 for s in profile.steps))
    gaps_us = free_us - preparing
    evidence = [evidence_row(None, free_us, ref_us, M_("host_bound: {detail}", detail=host.detail))]
    if launch:
        evidence.append(evidence_row(None, launch.time_us, ref_us, M_("launch_bound: {detail}", detail=launch.detail)))
    if preparing > 0:
        title = M_("The device idles {gaps} between kernels ({share}), besides {prep} of set-up before the step's "
                   "first task", gaps=U.time(gaps_us), share=share_text(gaps_us, ref_us, ctx["reference"]),
                   prep=U.time(preparing))
    else:
        title = M_("The device idles {free} between kernels: {share}", free=U.time(free_us),
                   share=share_text(free_us, ref_us, ctx["reference"]))
    symptoms = [s.id for s in (host, launch) if s]
    before = (M_("; the {time} before the step's first task is set-up, not counted", time=U.time(preparing))
              if preparing > 0 else "")
    if launch or small:  # evidence that the gaps are launches: short kernels waiting on the host
        why = (M_("{count} of the kernels are short and wait on the host", count=_count(launch.detail) or "many")
               if launch else M_("{count} kernels under 20 µs run between the gaps", count=_count(small.detail) or "many"))
        gain = band(gaps_us, LOW, HIGH, M_(
            "graph capture or fewer launches win back 30–80 % of the {time} of gaps between kernels ({why}){before}",
            time=U.time(gaps_us), why=why, before=before))
        return [Finding("idle-launch", "host", title, gaps_us, gain, symptoms + (["small_kernels"] if small else []),
                        evidence=evidence, story="host-bound-dispatch",
                        remedy_symptoms=["host_bound", "launch_bound"])]
    why = (M_("no short kernels wait on the host") if ctx.get("kernels_seen")
           else M_("this profile holds no kernels to tell"))
    gain = band(gaps_us, 0.0, HIGH, M_(
        "nothing shows the gaps are launches ({why}): 0 if they are data loading, a harness or a sync, up to 80 % of "
        "{time} if they are dispatch{before}", why=why, time=U.time(gaps_us), before=before))
    return [Finding("idle-host", "host", title, gaps_us, gain, symptoms, evidence=evidence, confidence="low",
                    story="host-bound-dispatch",
                    measure=M_("collect with with_stack=True (torch_npu) to see what the host does in the gaps"))]


def _short_kernels(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    """The short kernels' own time: fusing chains of them into one pass. The op types among them that the TransData,
    AI CPU and norm-chain findings cover are left to those findings (their whole time: the short launches of an op
    type are not told apart from its long ones)."""
    found = symptoms_of(profile)
    small = found.get("small_kernels")
    count = _count(small.detail) if small else None
    if not small or (count is not None and count < NORM_CHAIN):
        return []
    # the time another finding covers among the short kernels' op types (conversions, AI CPU work, norm chains)
    claimed = min(small.time_us, sum(found[i].time_us for i in ("transdata_overhead", "unfused_norm", "aicpu_fallback")
                                     if i in found and set(found[i].op_types) & set(small.op_types)))
    time_us = small.time_us - claimed
    if time_us <= 0:
        return []
    idle_share = sum(s.free_us for s in profile.steps) / ref_us if ref_us else 0.0
    title = M_("{count} kernels under 20 µs take {small} ({share}): short work to fuse", count=count or "many",
               small=U.time(small.time_us), share=share_text(small.time_us, ref_us, ctx["reference"]))
    local = 1 - 1 / NORM_CHAIN
    left = M_("; {claimed} of conversion, AI CPU and norm-chain kernels left to their own findings",
              claimed=U.time(claimed)) if claimed else ""
    gain = band(time_us, local / 2, local, M_(
        "fusing chains of at least {k} short kernels into one pass saves 1 − 1/{k} of their {time} (low: half of "
        "that){left}", k=NORM_CHAIN, time=U.time(time_us), left=left))
    return [Finding("short-kernels", "fusion", title, small.time_us, gain, ["small_kernels"],
                    evidence=[evidence_row(None, small.time_us, ref_us, M_("small_kernels: {detail}",
                                                                           detail=small.detail))],
                    story="small-kernels-latency-bound", confidence="high" if idle_share < FREE_SHARE else "medium")]


# ------------------------------------------------------------------------------------------------------
# Communication
# ------------------------------------------------------------------------------------------------------


def communication(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    """Exposed communication: the part spent waiting (a late rank or host) and the part that transfers."""
    found = symptoms_of(profile)
    exposed, wait = found.get("communication_exposed"), found.get("communication_wait")
    if not exposed and not wait:
        return []
    ref_name = ctx["reference"]
    computing = sum(s.computing_us for s in profile.steps)
    overlapped = sum(s.overlapped_us for s in profile.steps)
    hide_us = max(0.0, computing - overlapped)  # compute not yet used to hide communication
    exposed_us = exposed.time_us if exposed else wait.time_us
    ops = (exposed or wait).op_types
    families = sorted({r.family for r in rows_of(profile, list(ops))})
    out: list[Finding] = []
    slow = found.get("slow_rank")
    late_idle = slow if slow is not None and slow.detail.startswith(IDLE_LATE) else None
    if late_idle is not None:
        slow = None  # a rank late for its idle time: the waits are host-side skew, as when no rank is named
    if wait:
        wait_us = min(wait.time_us, exposed_us)
        title = M_("Collectives wait for another rank or the host: {wait} of {exposed} exposed communication "
                   "({share}) is waiting, not transfer", wait=U.time(wait_us), exposed=U.time(exposed_us),
                   share=share_text(wait_us, ref_us, ref_name))
        spread = _compute_spread(profile)
        if spread is not None and not slow:  # the ranks are here and compute alike: the waits are host-side skew
            cap = late_idle.ceiling_us if late_idle is not None else None
            gain = band(wait_us, LOW, HIGH, M_(
                "the ranks compute alike (computing differs by {spread}): the waits follow their host-side time; "
                "30–80 % of {time} if the hosts are evened out", spread=U.share(spread), time=U.time(wait_us))
                        ).capped(cap)
            out.append(Finding("comm-wait", "communication", title, wait_us, gain, ["communication_wait"],
                               op_types=list(ops), operators=families, evidence=[_wait_evidence(wait, wait_us, ref_us)],
                               remedy_symptoms=["host_bound", "launch_bound"], story="host-bound-dispatch",
                               measure=M_("compare the ranks' free time and host stacks (with_stack=True)")))
        else:
            bound = slow.ceiling_us if slow and slow.ceiling_us else None
            gain = band(wait_us, LOW, HIGH, M_(
                "the waits end when the late rank or host arrives on time: 30–80 % of {time}; which rank is late is "
                "not in one rank's profile", time=U.time(wait_us)) if bound is None else M_(
                "the waits end when the slow rank catches up: 30–80 % of {time}, capped at its excess over the fastest "
                "({bound})", time=U.time(wait_us), bound=U.time(bound))).capped(bound)
            out.append(Finding("comm-wait", "communication", title, wait_us, gain, ["communication_wait"],
                               op_types=list(ops), operators=families, evidence=[_wait_evidence(wait, wait_us, ref_us)],
                               remedy_symptoms=["communication_wait", "slow_rank"], story="communication-wait-slow-rank",
                               measure=None if profile.ranks else M_(
                                   "profile every rank (or run msprof-analyze cluster) to find the late one")))
        rest = exposed_us - wait_us
        if rest > 0:
            covered = min(rest, hide_us)
            title = M_("{rest} of communication transfers while nothing computes ({share})", rest=U.time(rest),
                       share=share_text(rest, ref_us, ref_name))
            gain = band(covered, LOW, HIGH, M_(
                "overlapping the transfers with the {hide} of computing not yet used to hide them: 30–80 % of {time}",
                hide=U.time(hide_us), time=U.time(covered)))
            out.append(Finding("comm-transfer", "communication", title, rest, gain, ["communication_exposed"],
                               op_types=list(ops), operators=families, remedy_symptoms=["communication_exposed"],
                               story="exposed-communication",
                               evidence=[evidence_row(None, rest, ref_us, M_("exposed transfer"))]))
        return out
    unknown = any("waiting or transferring" in str(note) for note in profile.notes)
    title = M_("{exposed} of communication is not hidden behind computation: {share} ({ops})",
               exposed=U.time(exposed_us), share=share_text(exposed_us, ref_us, ref_name),
               ops=", ".join(ops[:3]) or "collectives")
    covered = min(exposed_us, hide_us)
    if unknown:
        gain = band(exposed_us, LOW * covered / exposed_us if exposed_us else 0.0, HIGH, M_(
            "waiting and transfer cannot be told apart (no communication.json): low = overlapping 30 % of it with the "
            "{hide} of computing left; high = 80 % of {time} if it is waiting for a late rank",
            hide=U.time(hide_us), time=U.time(exposed_us)))
    else:
        gain = band(covered, LOW, HIGH, M_(
            "overlapping with the {hide} of computing not yet used to hide communication: 30–80 % of {time}",
            hide=U.time(hide_us), time=U.time(covered)))
    return [Finding("comm-exposed", "communication", title, exposed_us, gain, ["communication_exposed"],
                    op_types=list(ops), operators=families, story="exposed-communication", evidence=[evidence_row(None, exposed_us, ref_us,
                                                               M_("communication_exposed: {detail}",
                                                                  detail=exposed.detail))],
                    confidence="medium" if unknown else "high",
                    measure=M_("collect with profiler_level=Level1 (communication.json) to split waiting from "
                               "transfer") if unknown else None)]


def _wait_evidence(wait: Symptom, wait_us: float, ref_us: float) -> dict[str, Any]:
    return evidence_row(None, wait_us, ref_us, M_("communication_wait: {detail}", detail=wait.detail))


def _compute_spread(profile: Profile) -> float | None:
    """(max − min) / max of the ranks' computing time, where the profile holds two ranks or more."""
    computing = [r.computing_us for r in profile.ranks if r.computing_us]
    if len(computing) < 2:
        return None
    return (max(computing) - min(computing)) / max(computing)


def slow_ranks(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    found = symptoms_of(profile)
    out = []
    slow = found.get("slow_rank")
    if slow and "communication_wait" not in found:  # (a late rank's waits are the communication rule's)
        bound = slow.ceiling_us or slow.time_us
        gain = band(min(bound, slow.time_us or bound), 0.5, 1.0, M_(
            "the other ranks wait for the slow one: half to all of its excess over the fastest ({time})",
            time=U.time(bound)))
        out.append(Finding("slow-rank", "communication", M_("A slow rank holds the others back: {detail}",
                                                            detail=slow.detail),
                           slow.time_us, gain, ["slow_rank"], evidence=[evidence_row(None, slow.time_us, ref_us,
                                                                                    str(slow.detail))]))
    link = found.get("slow_link")
    if link:
        out.append(_slow_link(profile, link, found.get("communication_exposed"), ref_us))
    return out


def _slow_link(profile: Profile, link: Symptom, exposed: Symptom | None, ref_us: float) -> Finding:
    """The transfer time beyond the expected bandwidth is saved where it is exposed: at least its exposed share of
    it (transfers spread evenly over exposed and hidden time), at most all of it up to the exposed time."""
    excess = link.ceiling_us or link.time_us
    exposed_us = exposed.time_us if exposed else sum(s.exposed_us for s in profile.steps)
    total = profile.communication_time_us or sum(s.communication_us for s in profile.steps)
    if profile.steps and total:
        saved = min(excess, exposed_us)
        gain = band(saved, exposed_us / total, 1.0, M_(
            "the transfers at the expected bandwidth take {excess} less; {exposed} of {total} communication is exposed: "
            "at least that share of {saved}, at most all of it", excess=U.time(excess), exposed=U.time(exposed_us),
            total=U.time(total), saved=U.time(saved)))
        stake = saved
    else:
        gain, stake = None, excess
    return Finding("slow-link", "communication", M_("A slow link: {detail}", detail=link.detail), stake, gain,
                   ["slow_link"], evidence=[evidence_row(None, stake, ref_us, M_("slow_link: {detail}",
                                                                                  detail=link.detail))],
                   measure=None if gain else M_("collect the step split (step_trace_time.csv) to see how much of the "
                                                "communication is exposed"),
                   first_step=M_("run the HCCL bandwidth test (hccl_test) on the slow link and check its HCCS / RoCE "
                                 "configuration"))


# ------------------------------------------------------------------------------------------------------
# Work on the wrong unit, conversions, precision
# ------------------------------------------------------------------------------------------------------


def aicpu(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    """AI CPU kernels of ops that have an AI Core kernel: NMS on its own (its remedy differs), the rest together."""
    found = symptoms_of(profile)
    fallback = found.get("aicpu_fallback")
    if not fallback and "nms_cpu" not in found:
        return []
    names = list((fallback or found["nms_cpu"]).op_types)
    if "nms_cpu" in found:
        names += [n for n in found["nms_cpu"].op_types if n not in names]
    rows = [r for r in rows_of(profile, names) if r.unit == "ai_cpu"]
    groups = {"nms": [r for r in rows if r.family == "NMS"], "other": [r for r in rows if r.family != "NMS"]}
    out = []
    for key, group in groups.items():
        if not group:
            continue
        time_us = sum(r.time_us for r in group)
        ops = [r.op_type for r in group]
        symptoms = ["aicpu_fallback"] + (["nms_cpu"] if key == "nms" and "nms_cpu" in found else [])
        if key == "other" and "double_dtype" in found:
            symptoms.append("double_dtype")
        title = M_("The AI CPU runs {ops}: {time} ({share})", ops=", ".join(ops[:4]), time=U.time(time_us),
                   share=share_text(time_us, ref_us, ctx["reference"]))
        gain = band(time_us, *AICPU_SAVED, M_(
            "the same op on the AI Core takes 10–50 % of the AI CPU time (no work figure for it): 50–90 % of {time}",
            time=U.time(time_us)))
        out.append(Finding(f"aicpu-{key}", "aicpu", title, time_us, gain, symptoms, op_types=ops,
                           operators=sorted({r.family for r in group}),
                           evidence=[evidence_row(r.op_type, r.time_us, ref_us, _row_why(r, [found[i] for i in symptoms
                                                                                           if i in found]))
                                     for r in group[:5]]))
    return out


def _row_why(row: OpTypeStat, symptoms: list[Symptom]):
    """``NMS on ai_cpu, 1 launch; nms_cpu: <its detail>``: the row and each symptom that names it."""
    where = {"family": row.family, "unit": row.unit, "count": row.count}
    reasons = [M_("{family} on {unit}, {count} launch", **where) if row.count == 1 else
               M_("{family} on {unit}, {count} launches", **where)]
    reasons += [M_("{id}: {detail}", id=s.id, detail=s.detail) for s in symptoms
                if row.op_type in s.op_types or row.family in s.op_types]
    return join_messages(reasons, "; ")


def _simple(symptom_id: str, finding_id: str, family: str, template: str, low: float, high: float,
            assumptions: str) -> Rule:
    """A rule for a symptom whose finding covers its own time and saves ``low``..``high`` of it."""
    def rule(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
        symptom = symptoms_of(profile).get(symptom_id)
        if not symptom or symptom.time_us <= 0:
            return []
        rows = rows_of(profile, symptom.op_types)
        title = M_(template, ops=", ".join(symptom.op_types[:3]), time=U.time(symptom.time_us),
                   share=share_text(symptom.time_us, ref_us, ctx["reference"]))
        gain = band(symptom.time_us, low, high, M_(assumptions, time=U.time(symptom.time_us)))
        return [Finding(finding_id, family, title, symptom.time_us, gain, [symptom_id], op_types=list(symptom.op_types),
                        operators=sorted({r.family for r in rows}),
                        evidence=[evidence_row(None, symptom.time_us, ref_us,
                                               M_("{id}: {detail}", id=symptom_id, detail=symptom.detail))])]
    return rule


transdata = _simple("transdata_overhead", "transdata", "conversion",
                    N_("Format conversions (TransData) take {time}: {share}"), 0.5, 1.0,
                    N_("the conversions the remedy removes: half (low) to all (high) of {time}"))
recompile = _simple("shape_recompile", "recompile", "dynamic-shape",
                    N_("Operators are compiled again for new shapes: {time} ({share})"), 0.5, 1.0,
                    N_("the compile time repeats per new shape: bucketing or static shapes removes half to all of "
                       "{time}"))


def fp32(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    symptom = symptoms_of(profile).get("fp32_compute")
    if not symptom:
        return []
    rows = rows_of(profile, symptom.op_types)
    title = M_("Matrix work runs in float32 on the cube: {ops}, {time} ({share})", ops=", ".join(symptom.op_types[:3]),
               time=U.time(symptom.time_us), share=share_text(symptom.time_us, ref_us, ctx["reference"]))
    return [Finding("fp32-cube", "precision", title, symptom.time_us, None, ["fp32_compute"],
                    op_types=list(symptom.op_types), operators=sorted({r.family for r in rows}),
                    evidence=[evidence_row(None, symptom.time_us, ref_us, str(symptom.detail))], confidence="medium",
                    measure=M_("no source states the cube's float32 rate against bf16: time one step with "
                               "allow_hf32 or AMP on and compare these ops"))]


def unfused_attention(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    symptom = symptoms_of(profile).get("unfused_attention")
    if not symptom:
        return []
    if symptom.time_us <= 0:
        return []
    rows = rows_of(profile, symptom.op_types)
    matmul_us = sum(r.time_us for r in rows if r.family == "MatMul")
    other_us = max(0.0, symptom.time_us - matmul_us)
    title = M_("Attention runs as separate kernels ({ops}): {time} ({share})", ops=", ".join(symptom.op_types[:3]),
               time=U.time(symptom.time_us), share=share_text(symptom.time_us, ref_us, ctx["reference"]))
    low, high = 0.5 * other_us, other_us + 0.5 * matmul_us
    gain = band(symptom.time_us, low / symptom.time_us, high / symptom.time_us, M_(
        "a fused kernel keeps the matmuls' work and drops the separate softmax pass and the score matrix's round "
        "trips: low = half the softmax time ({other}), high = all of it plus half the matmuls' ({matmul})",
        other=U.time(other_us), matmul=U.time(matmul_us)))
    return [Finding("unfused-attention", "fusion", title, symptom.time_us, gain, ["unfused_attention"],
                    op_types=list(symptom.op_types), operators=["FlashAttention", "MatMul", "Softmax"],
                    evidence=[evidence_row(r.op_type, r.time_us, ref_us, M_("{family} on {unit}", family=r.family,
                                                                            unit=r.unit)) for r in rows[:4]])]


def unfused_norm(profile: Profile, ctx: dict[str, Any], ref_us: float) -> list[Finding]:
    symptom = symptoms_of(profile).get("unfused_norm")
    if not symptom:
        return []
    rows = rows_of(profile, symptom.op_types)
    k = NORM_CHAIN
    title = M_("Norm / activation / RoPE chains run as separate small kernels ({ops}): {time} ({share})",
               ops=", ".join(symptom.op_types[:4]), time=U.time(symptom.time_us),
               share=share_text(symptom.time_us, ref_us, ctx["reference"]))
    local = 1 - 1 / k
    gain = band(symptom.time_us, local / 2, local, M_(
        "a chain of at least {k} kernels over one tensor becomes one pass: 1 − 1/{k} of {time} (low: half of that)",
        k=k,
        time=U.time(symptom.time_us)))
    return [Finding("unfused-norm", "fusion", title, symptom.time_us, gain, ["unfused_norm"],
                    op_types=list(symptom.op_types), operators=sorted({r.family for r in rows}),
                    evidence=[evidence_row(None, symptom.time_us, ref_us, str(symptom.detail))])]


RUN_RULES: tuple[Rule, ...] = (idle, communication, slow_ranks, aicpu, transdata, recompile, fp32, unfused_attention,
                               unfused_norm)
