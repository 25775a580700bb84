"""The symptoms of the kernels themselves: block dim against the cores, pipe bounds, per-block balance, unfused chains, float32 cube work."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

from opprof_advisor.core.i18n import M_, N_, Message, join_messages
from opprof_advisor.readers.chips import family_parts, fewest_cores
from opprof_advisor.core.models import OpTypeStat
from opprof_advisor.core.thresholds import (
    AIC_UNITS, AIV_UNITS, ATTENTION_WINDOW, BANK_CONFLICT_RATIO, CUBE_FAMILIES, FEW_BLOCKS, FEW_BLOCKS_MIN_CORES,
    FP32_DTYPE, HOT_SHARE, IDLE_SLOT_SHARE, IMBALANCE_RATIO, L2_HIT_RATE, NO_PIPE_UNITS, WORKING_SIDE_SHARE,
)
from opprof_advisor.core.vocabulary import BOUND_SYMPTOM
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.readers.frame import Frame
from opprof_advisor.readers.base import Coded, KernelTable

if TYPE_CHECKING:
    from opprof_advisor.profile.builder import Kernels

# ----------------------------------------------------------------------------------------------
# Block dim against the cores, pipes, per-block balance
# ----------------------------------------------------------------------------------------------


def check_block_dim(ctx: Kernels) -> None:
    frame = ctx.frame
    blocks = frame.coded("block_dim") if frame.has("block_dim") else None
    if blocks is None or not any(frame.occurring(blocks)):
        if ctx.compute_time:
            ctx.note(N_("block dim"), N_("Block Dim / Block Num is not recorded"), "level1")
        return
    cores, lower = ctx.raw.core_counts, False
    if not cores.get("aic"):
        parts, why = _parts_that_ran(ctx)
        if not parts:
            chip = M_("the chip ({chip}) is not one whose core count is known", chip=ctx.raw.chip) if ctx.raw.chip \
                else N_("the chip's AI Core count is not in the profile")
            ctx.note(N_("block dim against the core count"), chip, "cores")
            return
        # the fewest cores of the parts it can be: one or two blocks leave most of them idle whichever it is; the
        # last wave's idle share needs the exact part
        cores, lower = fewest_cores(parts), True
        ctx.note(N_("the idle cores of each launch's last wave"), why, "cores")
    aic, aiv = cores["aic"], cores.get("aiv") or cores["aic"]
    # waves, idle share and bucket once per distinct (unit, block dim)
    pairs = frame.pair(ctx.units, blocks)
    waves_of, idle_of, bucket_of = [], [], []
    for unit, block in pairs.values:
        need = aiv if unit in ("ai_vector", "mix_aiv") else aic
        waves = -(-block // need) if block else 0
        idle = 1.0 - block / (waves * need) if block else 0.0
        waves_of.append(waves)
        idle_of.append(idle)
        if not block or unit not in AIC_UNITS | AIV_UNITS:
            bucket_of.append("")
        elif block <= FEW_BLOCKS and need >= FEW_BLOCKS_MIN_CORES:
            bucket_of.append("few")
        elif idle >= IDLE_SLOT_SHARE and not lower:
            bucket_of.append("tail")
        else:
            bucket_of.append("")
    long = frame.at_least(ctx.duration, ctx.min_duration)
    idle_time = frame.product(ctx.duration, frame.lookup(pairs, idle_of))
    few, tail = {}, {}  # op -> [time, idle core time]
    for name, bucket in (("few", few), ("tail", tail)):
        mask = frame.both(long, frame.isin(pairs, {pair for pair, b in zip(pairs.values, bucket_of) if b == name}))
        times = frame.tally(ctx.ops, mask, ctx.duration)
        idles = frame.tally(ctx.ops, mask, idle_time)
        bucket.update({op: [t, i] for op, t, i in zip(times.keys, times.sums, idles.sums)})
    examples: dict[str, str] = {}
    judged = frame.both(long, frame.isin(pairs, {pair for pair, b in zip(pairs.values, bucket_of) if b}))
    first = frame.tally(ctx.ops, judged)
    for op, row in zip(first.keys, first.first):
        code = pairs.codes[row]
        (unit, block), waves, idle = pairs.values[code], waves_of[code], idle_of[code]
        need = aiv if unit in ("ai_vector", "mix_aiv") else aic
        cores = "AIV" if need == aiv and aiv != aic else "AI"
        template = (N_("{op} block dim {block} on {need} {cores} cores ({waves} waves, {idle:.0%} of core slots idle)")
                    if waves > 1 else
                    N_("{op} block dim {block} on {need} {cores} cores ({waves} wave, {idle:.0%} of core slots idle)"))
        examples[op] = Message(template, op=op, block=block, need=need, cores=cores, waves=waves, idle=idle)
    for symptom_id, bucket, what in (("low_parallelism", few, N_("launch only one or two blocks")),
                                     ("low_block_dim", tail, N_("leave cores idle in their last wave"))):
        hot = [op for op, (t, _) in sorted(bucket.items(), key=lambda kv: -kv[1][0])
               if ctx.single_kernel or ctx.compute_share(t) >= HOT_SHARE]
        if not hot:
            continue
        time_us = sum(bucket[op][0] for op in hot)
        ceiling = sum(bucket[op][1] for op in hot)
        template = (N_("{examples}: kernels that {what} take {time} ({share:.1%} of device time; chip at least "
                       "{aic} AIC / {aiv} AIV); using every core would save at least {ceiling}") if lower else
                    N_("{examples}: kernels that {what} take {time} ({share:.1%} of device time; chip {aic} AIC / "
                       "{aiv} AIV); using every core would save at most {ceiling}"))
        ctx.add(symptom_id, hot, time_us,
                Message(template, examples=join_messages([examples[op] for op in hot[:3]], "; "), what=what,
                        time=U.time(time_us), share=ctx.share(time_us), aic=aic, aiv=aiv,
                        ceiling=U.time(ceiling)), ceiling_us=ceiling)


def _parts_that_ran(ctx: Kernels) -> tuple[tuple[str, ...], str]:
    """The parts a family name covers (``Ascend910B``: B1–B4) when the profile records no core count, and why, for
    the note. (A Mix launch on an unnamed chip is judged by the advice over the 20- and 24-core parts.)"""
    chip = ctx.raw.chip
    if family_parts(chip):
        return family_parts(chip), M_("{chip} names a family ({parts}) of parts with different core counts",
                                      chip=chip, parts=", ".join(family_parts(chip)))
    return (), ""


def check_bound(ctx: Kernels) -> None:
    if not ctx.has_pipes:
        if any(r.unit not in NO_PIPE_UNITS for r in ctx.rows):
            ctx.note(N_("bound class"), N_("no pipe ratio columns (aic_mac_ratio, aiv_vec_ratio ...) in the profile"), "pipe")
        return
    by_class: dict[str, list[OpTypeStat]] = defaultdict(list)
    for row in ctx.rows:
        if row.bound in BOUND_SYMPTOM and (ctx.single_kernel or ctx.compute_share(row.time_us) >= HOT_SHARE):
            by_class[row.bound].append(row)
    for bound, hits in by_class.items():
        total = sum(r.time_us for r in hits)
        names = join_messages([M_("{op} {share:.1%} ({pipe})", op=r.op_type, share=ctx.share(r.time_us),
                                  pipe=_pipe_text(r)) for r in hits[:4]])
        what = N_("no pipe reaches the bound threshold") if bound == "none" else M_("{bound} pipe is the busiest",
                                                                                       bound=bound)
        ctx.add(BOUND_SYMPTOM[bound], [r.op_type for r in hits], total, M_("{what} in {names}", what=what, names=names))


def _pipe_text(row: OpTypeStat) -> str:
    if row.busiest_pipe is None or row.busiest_ratio is None:
        return N_("no ratio")
    return M_("busiest {pipe} {ratio:.2f}", pipe=row.busiest_pipe, ratio=row.busiest_ratio)


def check_imbalance(ctx: Kernels) -> None:
    detail = ctx.raw.kernel_detail
    if not detail:
        return
    launches = detail.get("launches") or [detail]
    judged = [d for d in launches if any(len(v or []) >= 2 for v in (d.get("block_time_us") or {}).values())]
    if not judged:
        ctx.note(N_("block imbalance"), N_("no per-block times in the msOpProf output"), "per_block")
        return
    worst = None
    for launch in judged:
        task = launch.get("task_duration_us") or 0.0
        for side, values in (launch.get("block_time_us") or {}).items():
            values = [v for v in values or [] if v is not None]
            if len(values) < 2 or not max(values) or max(values) < WORKING_SIDE_SHARE * task:
                continue  # an idle side (the cube of a vector-only mix kernel) says nothing about balance
            mean = sum(values) / len(values)
            ratio = max(values) / mean if mean else 0.0
            if worst is None or ratio > worst[1]:
                ids = (launch.get("block_ids") or {}).get(side) or list(range(len(values)))
                slowest = ids[values.index(max(values))] if len(ids) == len(values) else values.index(max(values))
                worst = (side, ratio, max(values), min(values), mean, slowest, task)
    if worst and worst[1] >= IMBALANCE_RATIO:
        side, ratio, high, low, mean, slowest, task = worst
        ops = [r.op_type for r in ctx.rows if r.unit != "communication"] or [str(detail.get("kernel", "kernel"))]
        saving = 1 - mean / high
        ctx.add("block_imbalance", ops, ctx.compute_time,
                M_("{side} blocks: slowest {high} (block {slowest}) vs mean {mean}, fastest {low}; balanced blocks "
                   "would save up to {saving:.0%} of the kernel time", side=side, high=U.time(high), slowest=slowest,
                   mean=U.time(mean), low=U.time(low), saving=saving), ceiling_us=ctx.compute_time * saving)


def check_msopprof_memory(ctx: Kernels) -> None:
    """Bank conflicts and L2 misses from the msOpProf ResourceConflictRatio / L2Cache tables."""
    detail = ctx.raw.kernel_detail
    if not detail or not ctx.rows:
        return
    ops = [r.op_type for r in ctx.rows if r.unit != "communication"]
    conflict = detail.get("bank_conflict_ratio")
    busiest = [r.busiest_pipe for r in ctx.rows if r.busiest_pipe]
    if conflict is not None and conflict >= BANK_CONFLICT_RATIO:
        if any(p.endswith("vec") for p in busiest):
            ctx.add("ub_bank_conflict", ops, ctx.compute_time,
                    M_("{conflict:.1%} of vector cycles stall on UB bank / bank-group conflicts (ResourceConflictRatio, "
                       "weighted by sub-core time) while the vector pipe is the busiest", conflict=conflict),
                    ceiling_us=ctx.compute_time * conflict)
        else:
            ctx.notes.append(M_("UB bank conflicts stall {conflict:.1%} of vector cycles, but the vector pipe is not "
                                "the busiest ({busiest}): removing them would not shorten the kernel until that pipe "
                                "is relieved", conflict=conflict, busiest=", ".join(busiest) or N_("no pipe data")))
    hit = detail.get("l2_read_hit_rate")
    if hit is not None and hit < L2_HIT_RATE and any(p.endswith("mte2") for p in busiest):
        ctx.add("l2_cache_miss", ops, ctx.compute_time,
                M_("L2 read hit rate {hit:.1%} on the working sub-cores while MTE2 (loads) is the busiest pipe: most "
                   "loads go out to HBM", hit=hit))


# ----------------------------------------------------------------------------------------------
# Unfused chains and precision
# ----------------------------------------------------------------------------------------------


def check_attention(ctx: Kernels) -> None:
    frame = ctx.frame
    batch = frame.isin(ctx.ops, lambda op: "batchmatmul" in op.lower())
    softmax = frame.isin(ctx.ops, lambda op: ctx.family.get(op) == "Softmax" and "grad" not in op.lower())
    chains: set[int] = set()
    for chain in frame.neighbours(softmax, batch, ATTENTION_WINDOW):
        chains.update(chain)
    if chains:
        duration = frame.floats("duration_us")
        op_of = {i: frame.value_at(ctx.ops, i) for i in chains}
        total = sum(float(duration[i]) for i in chains)
        count = sum(1 for i in chains if ctx.family.get(op_of[i]) == "Softmax")
        ctx.add("unfused_attention", sorted(set(op_of.values())), total,
                M_("{count} BatchMatMul -> Softmax -> BatchMatMul chain(s) take {total} ({share:.1%} of device "
                   "time) instead of one fused attention kernel", count=count, total=U.time(total),
                   share=ctx.share(total)))


#: Unfused normalisation / activation chains: ordered op-type steps (normalised names without a
#: version suffix) that must appear within ``NORM_WINDOW`` consecutive compute kernels.
NORM_PATTERNS: dict[str, tuple[frozenset[str], ...]] = {
    # ReduceMeanD is the constant-axis ("D") form of ReduceMean that op_summary names
    "RMSNorm": (frozenset({"pow", "square", "mul"}), frozenset({"reducemean", "reducemeand"}),
                frozenset({"rsqrt", "sqrt"})),
    "LayerNorm": (frozenset({"reducemean", "reducemeand"}), frozenset({"sub"}), frozenset({"reducemean", "reducemeand"}),
                  frozenset({"rsqrt", "sqrt"})),
    "SwiGLU": (frozenset({"silu", "swish", "sigmoid"}), frozenset({"mul"}), frozenset({"mul"})),
    "RoPE": (frozenset({"neg"}), frozenset({"concat", "concatd", "concatv2"}), frozenset({"mul"}),
             frozenset({"add", "addv2"})),
}
NORM_WINDOW = 8


_SEPARATORS = re.compile(r"[\s_\-]+")
_VERSION = re.compile(r"v\d+$")


def _base_name(op: str) -> str:
    return _VERSION.sub("", _SEPARATORS.sub("", op).lower())


def check_norm(ctx: Kernels) -> None:
    frame = ctx.frame
    compute = frame.rows(frame.negate(frame.isin(ctx.units, {"communication", "ai_cpu"})))
    # the op type's base name of each compute kernel, in launch order (a Frame of its own)
    names = _compute_names(ctx, compute)
    present_families = {r.family for r in ctx.rows}
    found: dict[str, set[int]] = {}
    for pattern, steps in NORM_PATTERNS.items():
        if pattern in present_families:
            continue  # the fused kernel is used; a stray match would be noise
        hits: set[int] = set()
        for chain in names.chains([names.isin(names.coded("name"), step) for step in steps], NORM_WINDOW):
            hits.update(chain)
        if hits:
            found[pattern] = {int(compute[j]) for j in hits}
    if not found:
        return
    kernels = set().union(*found.values())
    duration = frame.floats("duration_us")
    total = sum(float(duration[i]) for i in kernels)
    ctx.add("unfused_norm", sorted({frame.value_at(ctx.ops, i) for i in kernels}), total,
            M_("{patterns} built from separate small kernels: {total} ({share:.1%} of device time)",
               patterns=", ".join(found), total=U.time(total), share=ctx.share(total)))


def _compute_names(ctx: Kernels, compute: list[int]):
    """A Frame over the compute kernels alone, its ``name`` column the base name of each one's op type."""
    frame = ctx.frame
    base = frame.mapped(ctx.ops, _base_name)
    table = KernelTable()
    table.store("duration_us", frame.np.zeros(len(compute)))
    table.store("name", Coded(base.codes[compute], base.values))
    return Frame(table)


def check_fp32(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    frame = ctx.frame
    cube_rows = [r for r in ctx.rows if r.family in CUBE_FAMILIES and r.unit in AIC_UNITS]
    if not frame.has("input_dtypes"):
        if cube_rows:
            ctx.note(N_("fp32 compute"), N_("Input Data Types is not recorded"), "shapes")
        return
    fp32 = frame.both(frame.isin(ctx.units, AIC_UNITS), frame.isin(ctx.ops, lambda op: ctx.family.get(op) in CUBE_FAMILIES),
                      frame.isin(frame.coded("input_dtypes"),
                                 lambda text: bool(FP32_DTYPE.match(text.split(";", 1)[0].strip()))))
    time_by_op: Counter[str] = Counter(frame.tally(ctx.ops, fp32, ctx.duration).sum_by_key())
    hot = {op: t for op, t in time_by_op.items() if ctx.compute_share(t) >= HOT_SHARE}
    if hot:
        total = sum(hot.values())
        order = sorted(hot, key=hot.get, reverse=True)
        ctx.add("fp32_compute", order, total, M_("float32 inputs on the cube unit in {ops}: {total} ({share:.1%} of "
                                                 "device time)", ops=", ".join(order[:4]), total=U.time(total),
                                                 share=ctx.share(total)))


