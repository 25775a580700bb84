"""Findings about the hot kernels themselves: cores left idle, uneven blocks, scalar work, the busiest pipe
against the roofline. Every gain is bounded by what the roofline leaves for those kernels: a kernel at 98 %
of its bandwidth roof cannot gain 30 % from better tiling, whatever its block dim or balance says.

Models (``../shared/GAIN-MODELS.md``):

* block dim / one or two blocks: the idle core slots the symptom measured (its ceiling), low half of it;
  with no core count, a Mix launch's tail wave over the 20- and 24-core parts (``PLAUSIBLE_CHIPS``).
* per-block imbalance: ``(max − mean) / max`` of the block times (the symptom's ceiling), low half of it.
* scalar-bound: ``s − 0.2`` (low) … ``s − 0.1`` (high) of the kernel time, ``s`` the busiest scalar ratio.
* the roofline, where judged: the efficiency brought to 60–70 % of the roof (the roofline's model band,
  KB-AUDIT N67); at ≥ AT_ROOF (70 %, "close to the device limit") only moving fewer bytes (or less work)
  helps, and the profile does not say how many of the bytes are compulsory: no number, and what to collect.
* no roofline (chip or shapes unknown): for a kernel profile (your own kernel), the busiest pipe brought to
  the same 60–70 % band when none is saturated; a bound pipe kept busy up to PIPE_LIMIT, ``1 − r / 0.85``
  (high), half of it (low); at ≥ PIPE_LIMIT the pipe is almost always busy (no number without the bytes).
  A framework's kernel with no pipe saturated and no roofline is not judged (a note says what to collect).
"""

from __future__ import annotations

import math
from typing import Any

from opprof_advisor.advice.context import PLAUSIBLE_CHIPS
from opprof_advisor.advice.finding import Finding, Gain, band
from opprof_advisor.advice.rules_run import evidence_row, share_text, symptoms_of
from opprof_advisor.core.i18n import M_, N_, join_messages
from opprof_advisor.core.models import OpTypeStat, Profile, RooflineRow
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.profile.roofline import MODEL_TARGET_SOURCE, MODEL_TARGETS
from opprof_advisor.core.thresholds import BOUND_THRESHOLDS, IDLE_SLOT_SHARE

#: What _pipe_gain says of a framework kernel whose pipes are all below their thresholds, without a roofline.
UNJUDGED = "unjudged"
#: At or above this fraction of the roof a kernel is near the device limit (the top of the roofline's model band,
#: KB-AUDIT N67: "> 70 %: close to the device limit"): no tuning gain is modelled, only fewer bytes or less work.
#: At or above PIPE_LIMIT of a pipe's time the pipe is almost always busy (no roofline to say more).
AT_ROOF = MODEL_TARGETS[1]
PIPE_LIMIT = 0.85
#: Scalar ratio a well-written kernel keeps: 0.2 (low end of the gain) … 0.1 (high end).
SCALAR_TARGETS = (0.2, 0.1)
#: Kernel rows worth a finding: at least this share of the reference time.
MIN_SHARE = 0.01
PIPE_SYMPTOMS = ("cube_bound", "vector_bound", "mte2_bound", "mte3_bound", "fixpipe_bound", "no_bound")
_PIPE_WORDS = {"mte2": "MTE2 (loads)", "mte3": "MTE3 (stores)", "vec": "vector", "cube": "cube", "scalar": "scalar",
               "fixpipe": "fixpipe", "mte1": "MTE1"}


def _roof_rows(profile: Profile, row: OpTypeStat) -> list[tuple[str | None, RooflineRow]]:
    """The judged roofline rows of ``row``: on the profile's chip, else one per plausible part (chip unknown)."""
    if profile.roofline is None:
        return []
    found = profile.roofline.row(row.op_type, row.unit)
    if _judged(found):
        return [(None, found)]
    return [(chip, alt) for chip, rows in profile.roofline.by_chip.items()
            for alt in rows if alt.op_type == row.op_type and alt.unit == row.unit and _judged(alt)]


def _judged(row: RooflineRow | None) -> bool:
    return row is not None and row.status == "judged" and row.efficiency is not None


def roof_bound(profile: Profile, rows: list[OpTypeStat]) -> float:
    """The most any change to how ``rows`` run can save: each judged row's distance to its roof (the largest over
    the plausible parts when the chip is unknown), else its time."""
    total = 0.0
    for row in rows:
        roofs = _roof_rows(profile, row)
        total += row.time_us if not roofs else max(
            max(0.0, roof.judged_time_us * (1 - roof.efficiency)) + (row.time_us - roof.judged_time_us)
            for _, roof in roofs)
    return total


def _pipe_name(pipe: str | None) -> str:
    if not pipe:
        return "?"
    side, _, name = pipe.partition("_")
    return f"{side.upper()} {_PIPE_WORDS.get(name, name)}" if name else _PIPE_WORDS.get(side, side)


def _rows(profile: Profile, names: list[str], ref_us: float) -> list[OpTypeStat]:
    wanted = set(names)
    return [r for r in profile.op_types if r.op_type in wanted and r.unit != "communication"
            and r.time_us >= MIN_SHARE * ref_us]


def _evidence(rows: list[OpTypeStat], ref_us: float, why) -> list[dict[str, Any]]:
    return [evidence_row(r.op_type, r.time_us, ref_us, why(r)) for r in rows[:5]]


def _ops(rows: list[OpTypeStat]) -> str:
    return ", ".join(r.op_type for r in rows[:3]) + (" …" if len(rows) > 3 else "")


def kernels(profile: Profile, ctx: dict[str, Any], ref_us: float, covered: frozenset[str] = frozenset()
            ) -> list[Finding]:
    """Block dim, imbalance and scalar findings first; the busiest pipe / roofline for the hot rows they leave.
    ``covered``: op types a finding about the whole run already claims (attention, TransData ...): their time is
    not claimed twice."""
    found = symptoms_of(profile)
    out: list[Finding] = []
    # a row at its roof gains nothing from more cores, balance or less scalar work: its pipe finding says so
    at_roof: set[str] = {r.op_type for r in profile.op_types if isinstance(_pipe_gain(profile, r), str)
                         and _roof_rows(profile, r)}
    explained = at_roof | set(covered)
    ref_name = ctx["reference"]
    for sid, fid, template, note in (
        ("low_parallelism", "one-block", N_LOW_PAR, "low_parallelism"),
        ("low_block_dim", "block-dim", N_BLOCK_DIM, "low_block_dim"),
        ("block_imbalance", "imbalance", N_IMBALANCE, "block_imbalance"),
    ):
        symptom = found.get(sid)
        if not symptom or not symptom.ceiling_us:
            continue
        rows = [r for r in _rows(profile, symptom.op_types, ref_us) if r.op_type not in explained]
        if not rows:
            continue
        stake = sum(r.time_us for r in rows) or symptom.time_us
        bound = roof_bound(profile, rows)
        gain = band(symptom.ceiling_us, 0.5, 1.0, M_(
            "{detail}; low: half of it (tail and fixed cost)", detail=symptom.detail)).capped(bound)
        out.append(Finding(fid, "kernel", M_(template, ops=_ops(rows), time=U.time(stake),
                                             ceiling=U.time(symptom.ceiling_us),
                                             share=share_text(stake, ref_us, ref_name)),
                           stake, _roof_note(gain, bound, symptom.ceiling_us), [sid], confidence=_own(ctx),
                           op_types=[r.op_type for r in rows], operators=sorted({r.family for r in rows}),
                           evidence=_evidence(rows, ref_us, lambda r: M_("{id}: {detail}", id=note,
                                                                         detail=symptom.detail))))
        explained.update(r.op_type for r in rows)
    out += _tail_wave(profile, ctx, ref_us, explained)
    scalar = found.get("scalar_bound")
    if scalar:  # a diagnosis of its own beside a block-dim one (GAIN-MODELS: each shown, never summed)
        rows = [r for r in _rows(profile, scalar.op_types, ref_us) if r.busiest_ratio and r.op_type not in
                at_roof | set(covered) and str(r.busiest_pipe).endswith("scalar")]
        if rows:
            high = sum(r.time_us * (r.busiest_ratio - SCALAR_TARGETS[1]) for r in rows)
            low = sum(r.time_us * (r.busiest_ratio - SCALAR_TARGETS[0]) for r in rows)
            stake = sum(r.time_us for r in rows)
            bound = roof_bound(profile, rows)
            ratios = ", ".join((f"{r.op_type} " if len(rows) > 1 else "") + f"{r.busiest_ratio:.2f}" for r in rows[:3])
            wanted = Gain(max(0.0, low), max(0.0, high), "model", M_(
                "the busiest scalar pipe ({ratios}) brought down to 0.2 (low) … 0.1 (high) of the kernel time",
                ratios=ratios))
            gain = _roof_note(wanted.capped(bound), bound, wanted.high_us)
            out.append(Finding("scalar", "kernel", M_(N_SCALAR, ops=_ops(rows), ratios=ratios, time=U.time(stake),
                                                      share=share_text(stake, ref_us, ref_name)),
                               stake, gain, ["scalar_bound"], confidence=_own(ctx), op_types=[r.op_type for r in rows],
                               operators=sorted({r.family for r in rows}),
                               evidence=_evidence(rows, ref_us, lambda r: M_("busiest {pipe} {ratio:.2f}",
                                                                            pipe=_pipe_name(r.busiest_pipe),
                                                                            ratio=r.busiest_ratio or 0.0))))
            explained.update(r.op_type for r in rows)
    out += _pipes(profile, ctx, ref_us, explained, at_roof, covered)
    return out


N_LOW_PAR = N_("One or two blocks leave the cores idle in {ops}: up to {ceiling} of their {time} ({share})")
N_BLOCK_DIM = N_("The block dim of {ops} leaves cores idle: up to {ceiling} of their {time} ({share})")
N_IMBALANCE = N_("Uneven blocks in {ops}: balanced blocks would save up to {ceiling} of their {time} ({share})")
N_SCALAR = N_("Scalar work limits {ops} (busiest scalar pipe {ratios}): {time}, {share}")


def _own(ctx: dict[str, Any]) -> str:
    """high for a kernel profile (its author can act on it); medium for a framework's kernels in a run, whose
    remedies are the shapes, dtypes and layouts they are called with, or a newer CANN."""
    return "high" if ctx["producer"] == "kernel" else "medium"


def _roof_note(gain: Gain, bound: float, wanted: float) -> Gain:
    if bound + 1e-9 < wanted and gain.high_us >= bound - 1e-9:
        return Gain(gain.low_us, gain.high_us, gain.model, M_(
            "{assumptions}; capped at {bound}, what the roofline leaves", assumptions=gain.assumptions,
            bound=U.time(bound)))
    return gain


def _tail_wave(profile: Profile, ctx: dict[str, Any], ref_us: float, explained: set[str]) -> list[Finding]:
    """Mix launches on a part whose core count the profile does not record: the idle slots of the last wave
    over the 20- and 24-core parts a Mix block dim implies."""
    if ctx.get("aic") or "low_block_dim" in profile.symptom_ids():
        return []
    rows = [r for r in _rows(profile, [r.op_type for r in profile.op_types], ref_us)
            if r.unit in ("mix_aic", "mix_aiv") and r.block_dim and r.op_type not in explained]
    out = []
    for row in rows[:3]:
        if any(row.block_dim % aic == 0 for aic, _aiv in PLAUSIBLE_CHIPS.values()):
            continue  # sized for one of the parts: the launch itself names the core count
        idle = {}
        for name, (aic, _aiv) in PLAUSIBLE_CHIPS.items():
            slots = math.ceil(row.block_dim / aic) * aic
            idle[name] = (slots - row.block_dim) / slots
        low, high = min(idle.values()), max(idle.values())
        if high < IDLE_SLOT_SHARE:
            continue
        bound = roof_bound(profile, [row])
        gain = band(row.time_us, low / 2, high, M_(
            "Block Dim {b} on a part with 20 or 24 AI Cores (a Mix launch needs one): {low}–{high} of the core "
            "slots idle; low: half of the smaller", b=row.block_dim, low=U.share(low), high=U.share(high))).capped(bound)
        out.append(Finding(f"tail-{row.op_type}", "kernel", M_(
            "Block Dim {b} of {op} leaves {low}–{high} of the cores idle on a 20- or 24-core part ({share})",
            b=row.block_dim, op=row.op_type, low=U.share(low), high=U.share(high),
            share=share_text(row.time_us, ref_us, ctx["reference"])), row.time_us, gain, ["low_block_dim"],
            op_types=[row.op_type], operators=[row.family], confidence="medium",
            evidence=[evidence_row(row.op_type, row.time_us, ref_us, M_("block dim {b}", b=row.block_dim))],
            measure=M_("keep dump/op_basic_info.txt (msprof op) so the chip and its core count are known")))
    return out


def _pipes(profile: Profile, ctx: dict[str, Any], ref_us: float, explained: set[str], at_roof: set[str],
           covered: frozenset[str]) -> list[Finding]:
    """The busiest pipe of the hot rows no other finding explains: below its roof (a gain) or at it (none)."""
    found = symptoms_of(profile)
    out: list[Finding] = []
    for sid in PIPE_SYMPTOMS:
        symptom = found.get(sid)
        if not symptom:
            continue
        rows = [r for r in _rows(profile, symptom.op_types, ref_us) if r.op_type not in covered
                and (r.op_type not in explained or r.op_type in at_roof)]
        below: list[tuple[OpTypeStat, Gain]] = []
        at_limit: list[tuple[OpTypeStat, str]] = []
        unjudged: list[OpTypeStat] = []
        for row in rows:
            judged = _pipe_gain(profile, row, own_kernel=ctx["producer"] == "kernel")
            if judged is UNJUDGED:
                unjudged.append(row)
            elif isinstance(judged, Gain):
                below.append((row, judged))
            elif judged:
                at_limit.append((row, judged))
        if below:
            stake = sum(r.time_us for r, _ in below)
            gain = Gain(sum(g.low_us for _, g in below), sum(g.high_us for _, g in below), "model",
                        below[0][1].assumptions if len(below) == 1 else M_(
                            "per kernel, as for {op}: {first}", op=below[0][0].op_type, first=below[0][1].assumptions))
            out.append(Finding(f"pipe-{sid}", "kernel", _pipe_title(sid, [r for r, _ in below], stake, ref_us, ctx),
                               stake, gain, [sid], confidence="low" if sid == "no_bound" else _own(ctx),
                               op_types=[r.op_type for r, _ in below],
                               operators=sorted({r.family for r, _ in below}),
                               evidence=_evidence([r for r, _ in below], ref_us, _pipe_why(profile))))
        if unjudged:
            stake = sum(r.time_us for r in unjudged)
            ratios = ", ".join(f"{r.op_type} {_pipe_name(r.busiest_pipe)} {r.busiest_ratio:.2f}" for r in unjudged[:3])
            out.append(Finding(f"unjudged-{sid}", "kernel", M_(
                "cannot judge how much faster {ops} ({share}) could run: no pipe is saturated ({ratios}) and there is "
                "no roofline (give the chip's peaks with --peaks FILE.yaml, or profile the kernel with msprof op)",
                ops=_ops(unjudged), share=share_text(stake, ref_us, ctx["reference"]), ratios=ratios),
                stake, None, [sid], op_types=[r.op_type for r in unjudged], note=True))
        if at_limit:
            limit_rows = [r for r, _ in at_limit]
            stake = sum(r.time_us for r in limit_rows)
            what = join_messages([M_("{op} {what}", op=r.op_type, what=w) for r, w in at_limit[:3]]
                                 + (["…"] if len(at_limit) > 3 else []))
            if all(_roof_rows(profile, r) for r in limit_rows):
                out.append(Finding(f"limit-{sid}", "kernel", M_(
                    "Near the roof ({what}): {time} ({share}); only moving fewer bytes or doing less work helps",
                    what=what, time=U.time(stake),
                    share=share_text(stake, ref_us, ctx["reference"])), stake, None, [sid],
                    op_types=[r.op_type for r in limit_rows], operators=sorted({r.family for r in limit_rows}),
                    evidence=_evidence(limit_rows, ref_us, _pipe_why(profile)), remedy_tags=["bytes"],
                    measure=M_("how many of the bytes are compulsory is not in the profile: compare the bytes moved "
                               "(msprof op --aic-metrics=Memory) with the tensors' sizes")))
            else:
                moves = sid in ("mte2_bound", "mte3_bound")
                title = (N_("A data-movement pipe busy almost all the time ({what}): {time} ({share}); fewer, larger "
                            "or aligned transfers, or more cores, can help") if moves else
                         N_("A compute pipe busy almost all the time ({what}): {time} ({share}); less work on it "
                            "(fewer or wider instructions, no bank conflicts), or more cores, can help"))
                measure = (M_("by how much depends on the bytes against the bandwidth: name the chip (or give --peaks) "
                              "and keep msprof op's Memory metrics for the roofline") if not ctx.get("chip") else
                           M_("by how much the roofline would say: keep msprof op's Memory and ArithmeticUtilization "
                              "metrics (the defaults) so the bytes and the work are known"))
                out.append(Finding(f"busy-{sid}", "kernel", M_(
                    title, what=what, time=U.time(stake), share=share_text(stake, ref_us, ctx["reference"])), stake,
                    None, [sid], op_types=[r.op_type for r in limit_rows],
                    operators=sorted({r.family for r in limit_rows}),
                    evidence=_evidence(limit_rows, ref_us, _pipe_why(profile)), confidence="medium", measure=measure))
    return out


def _pipe_gain(profile: Profile, row: OpTypeStat, own_kernel: bool = True) -> Gain | str | None:
    """A Gain for a row below its roof; the name of the limit it is at; UNJUDGED for a framework kernel with no
    pipe saturated and no roofline; None when nothing can be said. ``own_kernel``: a kernel profile, whose
    author can fill the pipes' idle time."""
    roofs = _roof_rows(profile, row)
    if roofs and roofs[0][0] is None:  # the profile's own chip
        roof = roofs[0][1]
        eff = roof.efficiency
        what = M_("at {eff:.0%} of its {roof} roof", roof=roof.roof, eff=eff)
        if eff >= AT_ROOF:
            return what
        if roof.model_gain_high is not None:
            return Gain(row.time_us * roof.model_gain_low, row.time_us * roof.model_gain_high, "model", roof.basis)
        low, high = max(0.0, 1 - eff / MODEL_TARGETS[0]), 1 - eff / MODEL_TARGETS[1]
        return band(roof.judged_time_us, low, high, M_(
            "{op} at {eff:.0%} of its {roof} roof, brought to {low_t:.0%}–{high_t:.0%} of it ({source})",
            op=row.op_type, eff=eff, roof=roof.roof, low_t=MODEL_TARGETS[0], high_t=MODEL_TARGETS[1],
            source=MODEL_TARGET_SOURCE))
    if roofs:  # the chip is unknown: the range over the plausible parts, and say so
        return _over_chips(row, roofs)
    ratio = row.busiest_ratio
    if not ratio or not row.busiest_pipe:
        return None
    threshold = BOUND_THRESHOLDS.get(row.busiest_pipe, 0.8)
    if ratio >= PIPE_LIMIT:
        return M_("{pipe} {ratio:.2f}", pipe=_pipe_name(row.busiest_pipe), ratio=ratio)
    target = threshold if ratio < threshold else PIPE_LIMIT
    high = 1 - ratio / target
    if high <= 0.0:
        return None
    if ratio < threshold:  # no pipe saturated: latency or waits between pipes, which may be the kernel's nature
        if not own_kernel:
            return UNJUDGED  # a framework's kernel: not a defect by itself, and nothing says how far it could go
        low, high = max(0.0, 1 - ratio / MODEL_TARGETS[0]), max(0.0, 1 - ratio / MODEL_TARGETS[1])
        if high <= 0.0:
            return None
        return band(row.time_us, low, high, M_(
            "no pipe is saturated (busiest {pipe} {ratio:.2f}): the busiest pipe brought to {low_t:.0%}–{high_t:.0%} "
            "of the kernel time ({source}); no roofline, the chip or the shapes are unknown",
            pipe=_pipe_name(row.busiest_pipe), ratio=ratio, low_t=MODEL_TARGETS[0], high_t=MODEL_TARGETS[1],
            source=MODEL_TARGET_SOURCE))
    return band(row.time_us, high / 2, high, M_(
        "the busiest pipe ({pipe} {ratio:.2f}) kept busy up to {target:.2f} of {op}'s time: {high} (low: half); "
        "no roofline, the chip or the shapes are unknown", pipe=_pipe_name(row.busiest_pipe), ratio=ratio,
        target=target, op=row.op_type, high=U.share(high)))


def _over_chips(row: OpTypeStat, roofs: list[tuple[str | None, RooflineRow]]) -> Gain | str | None:
    """The roofline band over the plausible parts: the lowest low and the highest high; near the roof on all of them,
    the limit's name."""
    effs = [roof.efficiency for _, roof in roofs]
    chips = ", ".join(str(chip) for chip, _ in roofs)
    kind = roofs[0][1].roof
    if min(effs) >= AT_ROOF:
        if len(set(effs)) == 1:
            return M_("at {eff:.0%} of its {roof} roof on {chips} (chip unknown)", eff=effs[0], roof=kind, chips=chips)
        return M_("at {low:.0%}–{high:.0%} of its {roof} roof on {chips} (chip unknown)", low=min(effs), high=max(effs),
                  roof=kind, chips=chips)
    lows = [max(0.0, 1 - roof.efficiency / MODEL_TARGETS[0]) * roof.judged_time_us for _, roof in roofs]
    highs = [max(0.0, 1 - roof.efficiency / MODEL_TARGETS[1]) * roof.judged_time_us for _, roof in roofs]
    if max(highs) <= 0.0:
        return None
    if len(roofs) == 1:
        return Gain(min(lows), max(highs), "model", M_(
            "the chip is not named: on {chips}, the one plausible part whose roofs are known here, {op} runs at "
            "{eff:.0%} of its {roof} roof, brought to {low_t:.0%}–{high_t:.0%} of it ({source})", chips=chips,
            op=row.op_type, eff=effs[0], roof=kind, low_t=MODEL_TARGETS[0], high_t=MODEL_TARGETS[1],
            source=MODEL_TARGET_SOURCE))
    return Gain(min(lows), max(highs), "model", M_(
        "the chip is not named: on {chips} {op} runs at {low_e:.0%}–{high_e:.0%} of its {roof} roof, brought to "
        "{low_t:.0%}–{high_t:.0%} of it ({source}); the range is over those parts", chips=chips, op=row.op_type,
        low_e=min(effs), high_e=max(effs), roof=kind, low_t=MODEL_TARGETS[0], high_t=MODEL_TARGETS[1],
        source=MODEL_TARGET_SOURCE))


def _pipe_why(profile: Profile):
    def why(row: OpTypeStat):
        roofs = _roof_rows(profile, row)
        text = M_("busiest {pipe} {ratio:.2f}", pipe=_pipe_name(row.busiest_pipe), ratio=row.busiest_ratio or 0.0)
        if roofs and roofs[0][0] is None:
            text = M_("{text}; {eff:.0%} of the {roof} roof", text=text, eff=roofs[0][1].efficiency, roof=roofs[0][1].roof)
        elif roofs:
            effs = [roof.efficiency for _, roof in roofs]
            chips = ", ".join(str(chip) for chip, _ in roofs)
            text = M_("{text}; {low:.0%}–{high:.0%} of the {roof} roof on {chips} (chip unknown)", text=text,
                      low=min(effs), high=max(effs), roof=roofs[0][1].roof, chips=chips)
        return text
    return why


_PIPE_TITLES = {
    "mte2_bound": N_("Loads from memory (MTE2) limit {ops}: {time} ({share})"),
    "mte3_bound": N_("Stores to memory (MTE3) limit {ops}: {time} ({share})"),
    "vector_bound": N_("The vector pipe limits {ops}: {time} ({share})"),
    "cube_bound": N_("The cube pipe limits {ops}: {time} ({share})"),
    "fixpipe_bound": N_("The fixpipe (write-out) limits {ops}: {time} ({share})"),
    "no_bound": N_("No pipe is busy most of the time in {ops}: {time} ({share}), latency or waits between pipes"),
}


def _pipe_title(sid: str, rows: list[OpTypeStat], stake: float, ref_us: float, ctx: dict[str, Any]):
    return M_(_PIPE_TITLES[sid], ops=_ops(rows), time=U.time(stake), share=share_text(stake, ref_us, ctx["reference"]))
