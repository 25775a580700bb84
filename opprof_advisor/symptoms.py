"""The symptom checks: one function per finding, each with its sourced threshold, in one ``CHECKS`` tuple.

Each check reads the per-kernel context the builder made (``profile_builder.Kernels``: op types,
units, durations, the op-type rows, the step split) and adds symptoms or "cannot judge <what>: <why>
(collect with <switch>)" notes, so nothing is skipped silently. Adding a symptom = one function and
one line in CHECKS (its id must be in ``vocabulary.SYMPTOMS``).

Every symptom says which rows it concerns (``op_types``), their time (``time_us``), their ``share``
of device time (of the step for step-split findings) and, where the profile bounds it, the most a fix
could save (``ceiling_us``: idle cores of the last wave, the slowest block against the mean, the
exposed part of communication …). The recommender never promises more than that.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from statistics import median
from typing import TYPE_CHECKING, Iterable

from opprof_advisor.models import OpTypeStat
from opprof_advisor.vocabulary import BOUND_SYMPTOM

if TYPE_CHECKING:
    from opprof_advisor.profile_builder import Kernels

# ----------------------------------------------------------------------------------------------
# Thresholds and their sources
# ----------------------------------------------------------------------------------------------

#: In whole-model profiles, kernels shorter than this are not judged one by one for bound class or
#: block dim: msprof-analyze's ``_MIN_TASK_DURATION = 20`` (operator_bound_checker.py; FORMATS.md §6;
#: KB-SOURCES #5, #50). They are summed instead (``small_kernels``). ``msprof op`` kernels are always
#: judged: the user chose that kernel.
MIN_TASK_DURATION_US = 20.0
#: A pipe is "bound" when its time-weighted ratio reaches the threshold of its side. msprof-analyze:
#: ``operator_bound_ratio = 0.8`` (config.ini, FORMATS.md §1.6) for the AI Core pipes; its vector
#: rules use 0.7 for vec / mte2 / mte3 and FA fixpipe 0.75 (aicore_performance.yaml, KB-SOURCES #50).
BOUND_THRESHOLDS: dict[str, float] = {
    "aic_cube": 0.8, "aic_scalar": 0.8, "aic_mte2": 0.8, "aic_mte3": 0.8, "aic_fixpipe": 0.75,
    "aiv_vec": 0.7, "aiv_scalar": 0.8, "aiv_mte2": 0.7, "aiv_mte3": 0.7,
    "cube": 0.8, "vec": 0.7, "scalar": 0.8, "mte2": 0.8, "mte3": 0.8,
}
#: Pipe key -> bound class (mte1 moves data inside the core and has no class of its own).
PIPE_CLASS: dict[str, str] = {
    "aic_cube": "cube", "cube": "cube", "aiv_vec": "vector", "vec": "vector",
    "aic_scalar": "scalar", "aiv_scalar": "scalar", "scalar": "scalar",
    "aic_mte2": "mte2", "aiv_mte2": "mte2", "mte2": "mte2",
    "aic_mte3": "mte3", "aiv_mte3": "mte3", "mte3": "mte3", "aic_fixpipe": "fixpipe",
}
#: An op type counts as "hot" (worth a bound / block-dim / fp32 symptom) from this share of compute
#: time: msprof-analyze's fusible-sequence rule uses 1 % (KB-SOURCES #51).
HOT_SHARE = 0.01
#: AI CPU and float64 findings need one kernel of at least MIN_TASK_DURATION_US (msprof-analyze
#: flags AI_CPU tasks above 20 us, KB-SOURCES #5) or this share of compute time in total.
AICPU_MIN_SHARE = 0.01
#: TransData / format conversion is reported from 5 % of compute time: msprof-analyze ranks an
#: issue >= 5 % of the step as high priority (KB-SOURCES #71).
TRANSDATA_SHARE = 0.05
#: Exposed (not overlapped) communication is reported from 5 % of the step (KB-SOURCES #71).
COMM_EXPOSED_SHARE = 0.05
#: Free (idle) device time is reported from 10 % of the step: Huawei's MindStudio profiling case
#: calls Free under 10 % normal and above 30 % a sign of other load on the host (KB-SOURCES #9, hiascend
#: mindstudio 830 toolsample6_091). MindSpeed-LLM's FSDP2 guide asks for under 3 % (KB-AUDIT N17): that
#: is a target for a tuned LLM job, not the point where idle time becomes the thing to fix first.
FREE_SHARE = 0.10
FREE_HIGH_SHARE = 0.30
#: Free time computed from task intervals is not called host-bound when one idle gap holds at least this
#: share of the window: dispatch gaps are many and short; one long gap is an excerpt or a paused run
#: (checkpoint, evaluation, a blocking sync), which the host-bound remedies do not address.
PAUSE_SHARE = 0.5
#: launch_bound: at least this many compute kernels, at least half of them shorter than
#: MIN_TASK_DURATION_US, and the median gap before a short kernel at least its median duration.
LAUNCH_MIN_KERNELS = 50
LAUNCH_SHORT_FRACTION = 0.5
#: small_kernels: kernels too short to judge one by one that add up to this share of compute time.
#: This project's threshold: a tenth of the compute time is worth a fusion or graph-capture pass.
SMALL_KERNEL_SHARE = 0.10
#: block_imbalance: slowest block >= 1.5 x the mean block (a kernel lasts as long as its slowest
#: block, so the mean/max ratio bounds what rebalancing can recover; FORMATS.md §1.6 example).
IMBALANCE_RATIO = 1.5
#: A side of a mix kernel (cube or vector sub-cores) is judged for imbalance only when its slowest
#: sub-core is busy for at least this share of the task: an idle side says nothing about balance.
WORKING_SIDE_SHARE = 0.25
#: Block dim: a launch leaves cores idle in its last wave when the block count is not a multiple of
#: the core count (msprof-analyze block_dim_checker, FORMATS.md §6, KB-SOURCES #43). Reported when at
#: least this share of the core slots is idle (this project's threshold: a smaller tail is noise).
IDLE_SLOT_SHARE = 0.05
#: low_parallelism: one or two blocks on a chip with at least this many cores of the unit.
FEW_BLOCKS = 2
FEW_BLOCKS_MIN_CORES = 8
#: shape_recompile: online compilation (opCompile-style host APIs) of at least this share of the step
#: (msprof's best practice on compile latency shows Free at 22 % from frequent online compilation,
#: KB-AUDIT N22; 5 % as for every other high-priority issue, KB-SOURCES #71).
COMPILE_SHARE = 0.05
#: setup_in_window: input generation (random-number kernels), or a first step at least WARMUP_RATIO x
#: the median of the others, taking this share of the window. This project's threshold: at a tenth
#: of the window the profile no longer describes the steady state.
SETUP_SHARE = 0.10
WARMUP_RATIO = 2.0
WARMUP_MIN_STEPS = 3
#: slow_rank: the slowest rank computes longer than the fastest by this share of the step
#: (msprof-analyze's slow-rank / slow-link analyzers flag a gap ratio above 5 %, KB-AUDIT §3.1).
SLOW_RANK_GAP = 0.05
#: slow_link: a rank's bandwidth on one transport below this share of the median rank's, for links that
#: carried at least SLOW_LINK_MIN_MB per rank (this project's threshold; small transfers are latency, not
#: bandwidth). msprof-analyze's slow-link analyzer compares the same per-transport bandwidths.
SLOW_LINK_SHARE = 0.8
SLOW_LINK_MIN_MB = 1.0
#: ub_bank_conflict: vector cycles stalled on UB bank / bank-group conflicts (ResourceConflictRatio,
#: time-weighted). This project's threshold: one cycle in twenty.
BANK_CONFLICT_RATIO = 0.05
#: l2_cache_miss: read hit rate of the working side below this while MTE2 is the busiest pipe. This
#: project's threshold: most loads then go out to HBM (L2 is ~4x faster than GM, KB-AUDIT N50).
L2_HIT_RATE = 0.5
#: communication_wait fires when waiting (Wait, which includes Synchronization) plus Idle time is at least
#: this share of the collectives' elapsed time in communication.json. This project's threshold ("mostly" =
#: at least half). CANN's documented slow-rank cue is a Wait Time Ratio = wait / (wait + transit) above 0.2
#: (hiascend CANN profiling guide, "Performance Tuning Suggestions", atlasprofiling_16_2260); it leaves out
#: Idle = elapse - transit - wait, which the same guide calls the op's dispatch time (atlasprofiling_16_0027),
#: i.e. time lost to the host, so it is reported in the detail line rather than used alone.
COMM_WAIT_SHARE = 0.5
CANN_WAIT_RATIO = 0.2
#: Kernels looked back / ahead from a Softmax for a BatchMatMul (unfused attention chain).
ATTENTION_WINDOW = 4

_FLOAT64 = re.compile(r"\b(?:DT_)?(?:DOUBLE|FLOAT64)\b", re.I)
_INT64 = re.compile(r"\b(?:DT_)?U?INT64\b", re.I)
_FP32 = re.compile(r"^(?:DT_)?FLOAT(?:32)?$", re.I)
#: Kernels that generate input data (torch.randn / rand on the NPU run on the DSA engine); the dropout
#: masks (DSAGenBitMask, DSAStatelessGenBitMask) are steady-state work and do not count.
_INPUT_GENERATION = re.compile(r"^(?:DSA)?(?:Stateless)?Random|^DSA(?:Stateless)?(?:Normal|Uniform|TruncatedNormal)",
                               re.I)
_CUBE_FAMILIES = frozenset({"MatMul", "GroupedMatMul", "Conv2D"})
AIC_UNITS = frozenset({"ai_core", "mix_aic", "mix_aiv"})
AIV_UNITS = frozenset({"ai_vector", "mix_aic", "mix_aiv"})
NO_PIPE_UNITS = frozenset({"ai_cpu", "communication", "dsa", "other"})

#: What to collect for a missing piece of data, per producer (msopprof, msprof, torch_npu). A note's
#: remedy always fits the tool that wrote the profile: msprof op has no profiler_level.
REMEDIES: dict[str, dict[str, str]] = {
    "level1": {"torch_npu": "profiler_level=Level1", "msprof": "msprof --task-time=l1"},
    "shapes": {"torch_npu": "profiler_level=Level1 and record_shapes=True", "msprof": "msprof --task-time=l1"},
    "op_state": {"torch_npu": "profiler_level=Level1 on CANN >= 8.0", "msprof": "msprof on CANN >= 8.0"},
    "pipe": {"torch_npu": "experimental_config aic_metrics=AiCMetrics.PipeUtilization",
             "msprof": "msprof --aic-metrics=PipeUtilization", "msopprof": "msprof op --aic-metrics=PipeUtilization"},
    "cores": {"torch_npu": "export_type=db (NPU_INFO names the chip), or keep PROF_*/device_*/info.json.*",
              "msprof": "the PROF_*/device_*/info.json.* files kept beside the export",
              "msopprof": "the dump/op_basic_info.txt of the OPPROF_* folder kept (Run Soc Version)"},
    "steps": {"torch_npu": "the torch_npu profiler, which writes ASCEND_PROFILER_OUTPUT/step_trace_time.csv",
              "msprof": "msprof --task-time=l1 (task start times in op_summary) or the msprof DB export"},
    "communication_json": {"torch_npu": "profiler_level=Level1 (communication.json)",
                           "msprof": "the torch_npu profiler at Level1 (communication.json), or msprof-analyze "
                                     "cluster over all ranks"},
    "api_statistic": {"torch_npu": "profiler_level=Level1 (api_statistic.csv)",
                      "msprof": "msprof --export=on (api_statistic_*.csv) or the msprof DB export (CANN_API)"},
    "whole_run": {"msopprof": "the whole run profiled with msprof or the torch_npu profiler"},
    "steady_state": {"torch_npu": "a profiler schedule (wait, warmup, active) that records whole steady-state steps",
                     "msprof": "a profile of whole steady-state iterations (msprof --delay / --duration)"},
    "per_block": {"msopprof": "msprof op --aic-metrics=PipeUtilization, keeping every launch folder"},
}


# ----------------------------------------------------------------------------------------------
# Step split: exposed communication, free (idle) time, communication waits
# ----------------------------------------------------------------------------------------------


def check_step_split(ctx: Kernels) -> None:
    total = ctx.step_total
    if total is None or total.stage_us <= 0:
        if ctx.single_kernel:
            return
        what = "exposed communication and free time" if ctx.comm_time else "free (idle) time"
        ctx.note(what, "the profile has no step table and no task start times", "steps")
        return
    comm = [r.op_type for r in ctx.rows if r.unit == "communication"]
    exposed = total.exposed_us / total.stage_us
    if exposed >= COMM_EXPOSED_SHARE:
        ctx.add("communication_exposed", comm, total.exposed_us,
                f"{total.exposed_us:.1f} us of communication is not overlapped with computation = {exposed:.1%} of "
                f"the step ({total.communication_us:.1f} us communication in total; {ctx.step_source})",
                share=exposed, ceiling_us=total.exposed_us)
    free = total.free_us / total.stage_us
    gap = total.largest_gap_us or 0.0
    benchmark = _benchmark_loop(ctx)
    if free >= FREE_SHARE and benchmark:
        ctx.notes.append(f"the device is idle {free:.1%} of the window between launches of one operator "
                         f"({benchmark}): a benchmark loop, whose gaps are the harness's host time, not the "
                         "model's dispatch")
    elif free >= FREE_SHARE and gap >= PAUSE_SHARE * total.stage_us:
        ctx.note("host-bound dispatch", f"the device is idle {free:.1%} of the window, but one gap of "
                 f"{gap / 1000:.1f} ms holds {gap / total.stage_us:.0%} of it: an excerpt of the run or a pause, not "
                 "dispatch gaps", "steady_state")
    elif free >= FREE_SHARE:
        level = "above 30 %: other load on the host, or the host cannot feed the device" if free >= FREE_HIGH_SHARE \
            else "above the 10 % Huawei's profiling guide calls normal"
        preparing = f"; {total.preparing_us:.1f} us before the first task of the step" if total.preparing_us else ""
        ctx.add("host_bound", [], total.free_us,
                f"the device is idle {total.free_us:.1f} us = {free:.1%} of the step ({level}){preparing}",
                share=free, ceiling_us=total.free_us)


def _benchmark_loop(ctx: Kernels) -> str:
    """"main_kernel x11" when every compute launch is one op type launched repeatedly, else ""."""
    ops = Counter(op for op, unit in zip(ctx.op_type, ctx.unit) if unit != "communication")
    if len(ops) == 1 and not ctx.comm_time:
        (op, count), = ops.items()
        return f"{op} x{count}" if count >= 2 else ""
    return ""


def check_communication_wait(ctx: Kernels) -> None:
    exposed = ctx.symptom("communication_exposed")
    if exposed is None:
        return  # nothing exposed: how the hidden communication splits does not matter
    comm = ctx.raw.extra.get("communication") or {}
    elapse = comm.get("Elapse Time(ms)", 0.0)
    if elapse <= 0:
        ctx.note("whether exposed communication is waiting or transferring", "communication.json is missing",
                 "communication_json")
        return
    transit, wait, idle = (comm.get(f"{k} Time(ms)", 0.0) for k in ("Transit", "Wait", "Idle"))
    waiting = (wait + idle) / elapse
    if waiting < COMM_WAIT_SHARE:
        return
    ratio = wait / (wait + transit) if wait + transit else 0.0
    verdict = "above" if ratio > CANN_WAIT_RATIO else "not above"
    ctx.add("communication_wait", exposed.op_types, exposed.time_us * waiting,
            f"of {elapse:.1f} ms in {int(comm.get('ops', 0))} communication ops only {transit:.1f} ms is transfer; "
            f"{wait:.1f} ms is waiting (synchronisation {comm.get('Synchronization Time(ms)', 0.0):.1f} ms) and "
            f"{idle:.1f} ms idle = {waiting:.1%} of it; wait ratio {ratio:.2f} is {verdict} CANN's slow-rank "
            f"limit {CANN_WAIT_RATIO}", share=exposed.share * waiting, ceiling_us=exposed.time_us * waiting)


def check_slow_rank(ctx: Kernels) -> None:
    """The slow rank is the one that computes longest: in a data-parallel job the fast ranks wait inside
    AllReduce, so their device time is nearly the slow rank's."""
    ranks = [r for r in ctx.ranks if r.computing_us is not None]
    if len(ranks) < 2:
        return
    slowest = max(ranks, key=lambda r: r.computing_us)
    fastest = min(ranks, key=lambda r: r.computing_us)
    stages = [r.stage_us for r in ranks if r.stage_us]
    base = median(stages) if stages else median(r.device_time_us or 0.0 for r in ranks)
    gap = slowest.computing_us - fastest.computing_us
    share = gap / base if base else 0.0
    device = f", device time {slowest.device_time_us:.1f} us" if slowest.device_time_us is not None else ""
    who = f"{slowest.rank} ({slowest.computing_us:.1f} us of computing{device})"
    if share < SLOW_RANK_GAP:
        ctx.notes.append(f"computation is balanced across {len(ranks)} ranks: the slowest by computation, {who}, "
                         f"computes {gap:.1f} us = {share:.1%} of the step longer than the fastest ({fastest.rank}); "
                         "waiting in collectives is not caused by a slow computing rank")
        return
    ctx.add("slow_rank", [], gap,
            f"the slowest rank by computation, {who}, computes {gap:.1f} us = {share:.1%} of the step longer than "
            f"{fastest.rank} ({fastest.computing_us:.1f} us); the other ranks wait for it in collectives",
            share=share, ceiling_us=gap)


def check_slow_link(ctx: Kernels) -> None:
    links = ctx.raw.extra.get("link_bandwidth") or {}
    slow = []
    for transport, ranks in sorted(links.items()):
        rates = {rank: size / time_ms for rank, (size, time_ms) in ranks.items()  # MB/ms = GB/s
                 if size >= SLOW_LINK_MIN_MB and time_ms > 0}
        if len(rates) < 2:
            continue
        typical = median(rates.values())
        for rank, rate in sorted(rates.items(), key=lambda kv: kv[1]):
            if rate < SLOW_LINK_SHARE * typical:
                slow.append((transport, rank, rate, typical, ranks[rank][1]))
    if not slow:
        return
    time_us = sum(item[4] for item in slow) * 1000.0
    ctx.add("slow_link", [], time_us, "; ".join(
        f"{rank} {transport} {rate:.1f} GB/s against a median {typical:.1f} GB/s" for transport, rank, rate, typical, _
        in slow[:4]), share=ctx.step_share(time_us))


# ----------------------------------------------------------------------------------------------
# Where kernels ran: AI CPU, float64, format conversion
# ----------------------------------------------------------------------------------------------


def _is_comm_aicpu_kernel(name: str, op_type: str) -> bool:
    # HCCL runs some collectives as AI CPU kernels (allreduceAicpuKernel ...): not a compute fallback.
    return name.endswith("AicpuKernel") or op_type.endswith("AicpuKernel") or name.startswith("hcom_")


def check_aicpu(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    units = set(ctx.unit)
    if units <= {"unknown", "communication"} and "unknown" in units:
        if ctx.timeline:  # the timeline reader has already said why the unit is unknown
            ctx.note("AI CPU fallback", "no kernel is labelled AI_CPU", "level1")
            return
        ctx.note("the unit of compute kernels (AI Core / AI Vector / AI CPU)",
                 "Task Type / Accelerator Core is N/A at profiler level0", "level1")
        ctx.note("AI CPU fallback", "the unit (Task Type / Accelerator Core) is not recorded at profiler level0",
                 "level1")
        return
    time_by_op: Counter[str] = Counter()
    count, longest = 0, 0.0
    for i in (i for i, unit in enumerate(ctx.unit) if unit == "ai_cpu") if "ai_cpu" in units else ():
        if not _is_comm_aicpu_kernel(ctx.names[i], ctx.op_type[i]):
            time_by_op[ctx.op_type[i]] += ctx.duration[i]
            longest = max(longest, ctx.duration[i])
            count += 1
    if not time_by_op:
        return
    total = sum(time_by_op.values())
    if longest < MIN_TASK_DURATION_US and ctx.compute_share(total) < AICPU_MIN_SHARE:
        return
    ops = [op for op, _ in time_by_op.most_common()]
    ctx.add("aicpu_fallback", ops, total,
            f"{count} AI CPU kernel(s) of {', '.join(ops[:5])} take {total:.1f} us "
            f"({ctx.compute_share(total):.1%} of compute time, longest {longest:.1f} us)", ceiling_us=total)
    nms = [op for op in ops if ctx.family.get(op) == "NMS"]
    if nms:
        nms_time = sum(time_by_op[op] for op in nms)
        ctx.add("nms_cpu", nms, nms_time, f"non-maximum suppression ({', '.join(nms)}) runs on the AI CPU: "
                f"{nms_time:.1f} us ({ctx.compute_share(nms_time):.1%} of compute time)", ceiling_us=nms_time)


def check_double(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    inputs = ctx.column("input_dtypes")
    outputs = ctx.column("output_dtypes")
    if inputs is None and outputs is None:
        ctx.note("float64 / int64 work", "Input Data Types is not recorded", "shapes")
        return
    time_by_op: Counter[str] = Counter()
    longest = 0.0
    verdicts: dict[tuple[str, str, str], bool] = {}  # regexes once per distinct (unit, inputs, outputs)
    for i, unit in enumerate(ctx.unit):
        if unit == "communication":
            continue
        key = (unit, inputs[i] if inputs else "", outputs[i] if outputs else "")
        hit = verdicts.get(key)
        if hit is None:
            text = key[1] + ";" + key[2]
            hit = verdicts[key] = bool(_FLOAT64.search(text) or (unit == "ai_cpu" and _INT64.search(text)))
        if hit:
            time_by_op[ctx.op_type[i]] += ctx.duration[i]
            longest = max(longest, ctx.duration[i])
    total = sum(time_by_op.values())
    if time_by_op and (longest >= MIN_TASK_DURATION_US or ctx.compute_share(total) >= AICPU_MIN_SHARE):
        ops = [op for op, _ in time_by_op.most_common()]
        ctx.add("double_dtype", ops, total, f"float64, or int64 on the AI CPU, in {', '.join(ops[:5])}: "
                f"{total:.1f} us ({ctx.compute_share(total):.1%} of compute time)")


def check_transdata(ctx: Kernels) -> None:
    hits = [r for r in ctx.rows if r.family == "TransData"]
    total = sum(r.time_us for r in hits)
    if hits and ctx.compute_share(total) >= TRANSDATA_SHARE:
        count = sum(r.count for r in hits)
        ctx.add("transdata_overhead", [r.op_type for r in hits], total,
                f"{count} TransData kernel(s) take {total:.1f} us = {ctx.compute_share(total):.1%} of compute time",
                ceiling_us=total)


# ----------------------------------------------------------------------------------------------
# Block dim against the cores, pipes, per-block balance
# ----------------------------------------------------------------------------------------------


def check_block_dim(ctx: Kernels) -> None:
    blocks = ctx.column("block_dim")
    if blocks is None or all(b in (None, 0) for b in blocks):
        if ctx.compute_time:
            ctx.note("block dim", "Block Dim / Block Num is not recorded", "level1")
        return
    cores = ctx.raw.core_counts
    if not cores.get("aic"):
        chip = f"the chip ({ctx.raw.chip}) is not one whose core count is known" if ctx.raw.chip else \
            "the chip's AI Core count is not in the profile"
        ctx.note("block dim against the core count", chip, "cores")
        return
    aic, aiv = cores["aic"], cores.get("aiv") or cores["aic"]
    few: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # op -> [time, idle core time]
    tail: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    examples: dict[str, str] = {}
    for i, unit in enumerate(ctx.unit):
        block = blocks[i]
        if not block or unit not in AIC_UNITS | AIV_UNITS or ctx.duration[i] < ctx.min_duration:
            continue
        need = aiv if unit in ("ai_vector", "mix_aiv") else aic
        waves = -(-block // need)
        idle = 1.0 - block / (waves * need)
        op = ctx.op_type[i]
        if block <= FEW_BLOCKS and need >= FEW_BLOCKS_MIN_CORES:
            bucket = few
        elif idle >= IDLE_SLOT_SHARE:
            bucket = tail
        else:
            continue
        bucket[op][0] += ctx.duration[i]
        bucket[op][1] += ctx.duration[i] * idle
        examples.setdefault(op, f"{op} block dim {block} on {need} {'AIV' if need == aiv and aiv != aic else 'AI'} "
                                f"cores ({waves} wave{'s' if waves > 1 else ''}, {idle:.0%} of core slots idle)")
    for symptom_id, bucket, what in (("low_parallelism", few, "launch only one or two blocks"),
                                     ("low_block_dim", tail, "leave cores idle in their last wave")):
        hot = [op for op, (t, _) in sorted(bucket.items(), key=lambda kv: -kv[1][0])
               if ctx.single_kernel or ctx.compute_share(t) >= HOT_SHARE]
        if not hot:
            continue
        time_us = sum(bucket[op][0] for op in hot)
        ceiling = sum(bucket[op][1] for op in hot)
        ctx.add(symptom_id, hot, time_us,
                f"{'; '.join(examples[op] for op in hot[:3])}: kernels that {what} take {time_us:.1f} us "
                f"({ctx.compute_share(time_us):.1%} of compute time; chip {aic} AIC / {aiv} AIV); "
                f"using every core would save at most {ceiling:.1f} us", ceiling_us=ceiling)


def check_bound(ctx: Kernels) -> None:
    if not ctx.has_pipes:
        if any(r.unit not in NO_PIPE_UNITS for r in ctx.rows):
            ctx.note("bound class", "no pipe ratio columns (aic_mac_ratio, aiv_vec_ratio ...) in the profile", "pipe")
        return
    by_class: dict[str, list[OpTypeStat]] = defaultdict(list)
    for row in ctx.rows:
        if row.bound in BOUND_SYMPTOM and (ctx.single_kernel or ctx.compute_share(row.time_us) >= HOT_SHARE):
            by_class[row.bound].append(row)
    for bound, hits in by_class.items():
        total = sum(r.time_us for r in hits)
        names = ", ".join(f"{r.op_type} {ctx.compute_share(r.time_us):.0%} ({_pipe_text(r)})" for r in hits[:4])
        what = "no pipe reaches the bound threshold" if bound == "none" else f"{bound} pipe is the busiest"
        ctx.add(BOUND_SYMPTOM[bound], [r.op_type for r in hits], total, f"{what} in {names}")


def _pipe_text(row: OpTypeStat) -> str:
    if row.busiest_pipe is None or row.busiest_ratio is None:
        return "no ratio"
    return f"busiest {row.busiest_pipe} {row.busiest_ratio:.2f}"


def check_imbalance(ctx: Kernels) -> None:
    detail = ctx.raw.kernel_detail
    if not detail:
        return
    launches = detail.get("launches") or [detail]
    judged = [d for d in launches if any(len(v or []) >= 2 for v in (d.get("block_time_us") or {}).values())]
    if not judged:
        ctx.note("block imbalance", "no per-block times in the msOpProf output", "per_block")
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
                f"{side} blocks: slowest {high:.1f} us (block {slowest}) vs mean {mean:.1f} us, fastest {low:.1f} us; "
                f"balanced blocks would save up to {saving:.0%} of the kernel time", ceiling_us=ctx.compute_time * saving)


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
                    f"{conflict:.1%} of vector cycles stall on UB bank / bank-group conflicts (ResourceConflictRatio, "
                    f"weighted by sub-core time) while the vector pipe is the busiest",
                    ceiling_us=ctx.compute_time * conflict)
        else:
            ctx.notes.append(f"UB bank conflicts stall {conflict:.1%} of vector cycles, but the vector pipe is not the "
                             f"busiest ({', '.join(busiest) or 'no pipe data'}): removing them would not shorten the "
                             "kernel until that pipe is relieved")
    hit = detail.get("l2_read_hit_rate")
    if hit is not None and hit < L2_HIT_RATE and any(p.endswith("mte2") for p in busiest):
        ctx.add("l2_cache_miss", ops, ctx.compute_time,
                f"L2 read hit rate {hit:.1%} on the working sub-cores while MTE2 (loads) is the busiest pipe: most "
                f"loads go out to HBM")


# ----------------------------------------------------------------------------------------------
# How the run executes: dynamic shapes, launch gaps, small kernels, set-up in the window
# ----------------------------------------------------------------------------------------------


def check_dynamic(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    states = ctx.column("op_state")
    dynamic: Counter[str] = Counter()
    if states is None:
        ctx.note("dynamic shape", "the OP State column is missing", "op_state")
    else:
        kinds = {state: state.lower() for state in set(states) if state}
        static = sum(1 for state in states if kinds.get(state) == "static")
        count = 0
        for state, op, duration in zip(states, ctx.op_type, ctx.duration):
            if kinds.get(state) == "dynamic":
                dynamic[op] += duration
                count += 1
        # msprof-analyze treats "no static operator at all" as a dynamic-shape model (FORMATS.md §3.7).
        # Descriptive: aclnn eager calls and binary kernels report "dynamic" in healthy runs.
        if dynamic and not static:
            ctx.add("dynamic_shape", [op for op, _ in dynamic.most_common()], sum(dynamic.values()),
                    f"all {count} kernels with an OP State run in dynamic-shape mode, none static")
    _check_recompile(ctx, dynamic)


def _check_recompile(ctx: Kernels, dynamic: Counter[str]) -> None:
    compile_us = ctx.raw.extra.get("compile_us")
    if compile_us is None:
        if dynamic:
            ctx.note("whether operators are compiled again during the run", "no host API statistics "
                     "(opCompile time) in the profile", "api_statistic")
        return
    base = ctx.step_total.stage_us if ctx.step_total and ctx.step_total.stage_us else ctx.device_time
    share = compile_us / base if base else 0.0
    calls = int(ctx.raw.extra.get("compile_calls") or 0)
    if share >= COMPILE_SHARE:
        ops = [op for op, _ in dynamic.most_common()] if dynamic else []
        ctx.add("shape_recompile", ops, compile_us,
                f"{calls} online operator compilation call(s) take {compile_us:.1f} us = {share:.1%} of the step "
                f"(host API statistics)", share=share, ceiling_us=compile_us)


def check_launch(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    waits = ctx.column("wait_us")
    if waits is None:
        ctx.note("launch bound", "Task Wait Time is not recorded", "level1")
        return
    compute = [i for i, u in enumerate(ctx.unit) if u != "communication"]
    short = [i for i in compute if ctx.duration[i] < MIN_TASK_DURATION_US]
    if len(compute) < LAUNCH_MIN_KERNELS or len(short) < LAUNCH_SHORT_FRACTION * len(compute):
        return
    gaps = [waits[i] for i in short if waits[i] is not None]
    if not gaps:
        return
    median_gap, median_dur = median(gaps), median(ctx.duration[i] for i in short)
    if median_gap >= median_dur:
        by_op = Counter(ctx.op_type[i] for i in short)
        total = sum(ctx.duration[i] for i in short)
        ctx.add("launch_bound", [op for op, _ in by_op.most_common(8)], total,
                f"{len(short)} of {len(compute)} kernels are shorter than {MIN_TASK_DURATION_US:.0f} us "
                f"(median {median_dur:.1f} us) and wait a median {median_gap:.1f} us before starting")


def check_small_kernels(ctx: Kernels) -> None:
    """Kernels too short to judge one by one: summed into one finding when they add up, noted always."""
    if ctx.single_kernel:
        return
    time_by_op: Counter[str] = Counter()
    count = 0
    for i, unit in enumerate(ctx.unit):
        if unit not in NO_PIPE_UNITS and ctx.duration[i] < MIN_TASK_DURATION_US:
            time_by_op[ctx.op_type[i]] += ctx.duration[i]
            count += 1
    if not count:
        return
    total = sum(time_by_op.values())
    share = ctx.compute_share(total)
    ctx.notes.append(f"{count} kernel launch(es) shorter than {MIN_TASK_DURATION_US:.0f} us ({len(time_by_op)} op "
                     f"types, {share:.1%} of compute time) are not judged one by one for bound class or block dim: "
                     f"their pipe counters are too short to mean much (msprof-analyze's 20 us rule)")
    if share >= SMALL_KERNEL_SHARE:
        ops = [op for op, _ in time_by_op.most_common()]
        ctx.add("small_kernels", ops, total,
                f"{count} kernels shorter than {MIN_TASK_DURATION_US:.0f} us take {total:.1f} us = {share:.1%} of "
                f"compute time ({', '.join(ops[:4])} …): latency-bound work best fused or captured as a graph")


def check_setup(ctx: Kernels) -> None:
    """Input generation or a warm-up step inside the profiled window: not the steady state."""
    if ctx.single_kernel or not ctx.device_time:
        return
    generation = [r for r in ctx.rows if _INPUT_GENERATION.search(r.op_type) and "bitmask" not in r.op_type.lower()]
    time_us = sum(r.time_us for r in generation)
    if generation and ctx.share(time_us) >= SETUP_SHARE:
        ctx.add("setup_in_window", [r.op_type for r in generation], time_us,
                f"input generation ({', '.join(r.op_type for r in generation[:3])}) takes {time_us:.1f} us = "
                f"{ctx.share(time_us):.1%} of device time: the window holds set-up, not the steady state",
                ceiling_us=time_us)
        return
    steps = [s for s in ctx.steps if s.step is not None and s.stage_us > 0]
    if len(steps) >= WARMUP_MIN_STEPS:
        first, rest = steps[0], [s.stage_us for s in steps[1:]]
        typical = median(rest)
        window = sum(s.stage_us for s in steps)
        if first.stage_us >= WARMUP_RATIO * typical and (first.stage_us - typical) / window >= SETUP_SHARE:
            ctx.add("setup_in_window", [], first.stage_us - typical,
                    f"step {first.step} takes {first.stage_us:.1f} us, {first.stage_us / typical:.1f}x the median "
                    f"{typical:.1f} us of the other {len(rest)} steps: a warm-up step inside the window",
                    share=(first.stage_us - typical) / window, ceiling_us=first.stage_us - typical)


# ----------------------------------------------------------------------------------------------
# Unfused chains and precision
# ----------------------------------------------------------------------------------------------


def check_attention(ctx: Kernels) -> None:
    ops = ctx.op_type
    batch = [("batchmatmul" in op.lower()) for op in ops]
    chains: set[int] = set()
    for i, op in enumerate(ops):
        if ctx.family.get(op) != "Softmax" or "grad" in op.lower():
            continue
        before = [j for j in range(max(0, i - ATTENTION_WINDOW), i) if batch[j]]
        after = [j for j in range(i + 1, min(len(ops), i + 1 + ATTENTION_WINDOW)) if batch[j]]
        if before and after:
            chains.update((before[-1], i, after[0]))
    if chains:
        total = sum(ctx.duration[i] for i in chains)
        count = sum(1 for i in chains if ctx.family.get(ops[i]) == "Softmax")
        ctx.add("unfused_attention", sorted({ops[i] for i in chains}), total,
                f"{count} BatchMatMul -> Softmax -> BatchMatMul chain(s) take {total:.1f} us "
                f"({ctx.compute_share(total):.1%} of compute time) instead of one fused attention kernel")


#: Unfused normalisation / activation chains: ordered op-type steps (normalised names without a
#: version suffix) that must appear within ``NORM_WINDOW`` consecutive compute kernels.
NORM_PATTERNS: dict[str, tuple[frozenset[str], ...]] = {
    "RMSNorm": (frozenset({"pow", "square", "mul"}), frozenset({"reducemean"}), frozenset({"rsqrt", "sqrt"})),
    "LayerNorm": (frozenset({"reducemean"}), frozenset({"sub"}), frozenset({"reducemean"}),
                  frozenset({"rsqrt", "sqrt"})),
    "SwiGLU": (frozenset({"silu", "swish", "sigmoid"}), frozenset({"mul"}), frozenset({"mul"})),
    "RoPE": (frozenset({"neg"}), frozenset({"concat", "concatd", "concatv2"}), frozenset({"mul"}),
             frozenset({"add", "addv2"})),
}
NORM_WINDOW = 8


def _base_name(op: str) -> str:
    return re.sub(r"v\d+$", "", re.sub(r"[\s_\-]+", "", op).lower())


def check_norm(ctx: Kernels) -> None:
    compute = [i for i, u in enumerate(ctx.unit) if u not in ("communication", "ai_cpu")]
    base = {op: _base_name(op) for op in set(ctx.op_type)}
    names = [base[ctx.op_type[i]] for i in compute]
    present_families = {r.family for r in ctx.rows}
    found: dict[str, set[int]] = {}
    for pattern, steps in NORM_PATTERNS.items():
        if pattern in present_families:
            continue  # the fused kernel is used; a stray match would be noise
        hits = _find_chains(names, steps)
        if hits:
            found[pattern] = {compute[j] for j in hits}
    if not found:
        return
    kernels = set().union(*found.values())
    total = sum(ctx.duration[i] for i in kernels)
    ctx.add("unfused_norm", sorted({ctx.op_type[i] for i in kernels}), total,
            f"{', '.join(found)} built from separate small kernels: {total:.1f} us "
            f"({ctx.compute_share(total):.1%} of compute time)")


def _find_chains(names: list[str], steps: tuple[frozenset[str], ...]) -> set[int]:
    hits: set[int] = set()
    for start, name in enumerate(names):
        if name not in steps[0]:
            continue
        chain, position = [start], start
        for step in steps[1:]:
            nxt = next((j for j in range(position + 1, min(len(names), start + NORM_WINDOW)) if names[j] in step), None)
            if nxt is None:
                break
            chain.append(nxt)
            position = nxt
        if len(chain) == len(steps):
            hits.update(chain)
    return hits


def check_fp32(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    dtypes = ctx.column("input_dtypes")
    cube_rows = [r for r in ctx.rows if r.family in _CUBE_FAMILIES and r.unit in AIC_UNITS]
    if dtypes is None:
        if cube_rows:
            ctx.note("fp32 compute", "Input Data Types is not recorded", "shapes")
        return
    time_by_op: Counter[str] = Counter()
    for i, unit in enumerate(ctx.unit):
        if unit not in AIC_UNITS or ctx.family.get(ctx.op_type[i]) not in _CUBE_FAMILIES:
            continue
        first = dtypes[i].split(";", 1)[0].strip()
        if _FP32.match(first):
            time_by_op[ctx.op_type[i]] += ctx.duration[i]
    hot = {op: t for op, t in time_by_op.items() if ctx.compute_share(t) >= HOT_SHARE}
    if hot:
        total = sum(hot.values())
        order = sorted(hot, key=hot.get, reverse=True)
        ctx.add("fp32_compute", order, total, f"float32 inputs on the cube unit in {', '.join(order[:4])}: "
                f"{total:.1f} us ({ctx.compute_share(total):.1%} of compute time)")


def check_single_kernel_scope(ctx: Kernels) -> None:
    """A single-kernel profile cannot answer whole-run questions: say so once, with what to collect."""
    if ctx.single_kernel:
        ctx.note("AI CPU fallback, communication, the step split, launch gaps, dynamic shapes and dtypes",
                 "msprof op profiles one kernel", "whole_run")


#: Every check, in the order its findings are listed. Symptoms that read other symptoms come after them.
CHECKS = (
    check_step_split, check_communication_wait, check_slow_rank, check_slow_link, check_aicpu, check_double, check_transdata,
    check_block_dim, check_bound, check_imbalance, check_msopprof_memory, check_dynamic, check_launch,
    check_small_kernels, check_setup, check_attention, check_norm, check_fp32, check_single_kernel_scope,
)


def unjudged(items: Iterable[str]) -> str:
    """``a, b and 3 more`` for a note listing op types."""
    items = list(items)
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
