"""The symptom checks: one function per finding, each with its sourced threshold, in one ``CHECKS`` tuple.

Each check reads the per-kernel context the builder made (``profile_builder.Kernels``: op types,
units, durations, the op-type rows, the step split) and adds symptoms or "cannot judge <what>: <why>
(collect with <switch>)" notes, so nothing is skipped silently. Adding a symptom = one function and
one line in CHECKS (its id must be in ``vocabulary.SYMPTOMS``). The checks of the run and the step
are here; those of the kernels themselves in ``symptoms_kernels``; every threshold with its source
in ``thresholds``.

Every symptom says which rows it concerns (``op_types``), their time (``time_us``), their ``share``
of device time (of the step for step-split findings) and, where the profile bounds it, the most a fix
could save (``ceiling_us``: idle cores of the last wave, the slowest block against the mean, the
exposed part of communication …). The recommender never promises more than that.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import median
from pathlib import Path
from typing import Iterable

from opprof_advisor.core.thresholds import (
    AICPU_MIN_SHARE, CANN_WAIT_RATIO, COMM_EXPOSED_SHARE, COMM_WAIT_SHARE, COMPILE_SHARE, FLOAT64_DTYPE,
    FREE_HIGH_SHARE, FREE_SHARE, INPUT_GENERATION, INT64_DTYPE, LAUNCH_MIN_KERNELS, LAUNCH_SHORT_FRACTION,
    MIN_TASK_DURATION_US, NO_PIPE_UNITS, PAUSE_SHARE, SETUP_SHARE, SLOW_LINK_MIN_MB, SLOW_LINK_SHARE,
    SLOW_RANK_GAP, SMALL_KERNEL_SHARE, TRANSDATA_SHARE, WARMUP_MIN_STEPS, WARMUP_RATIO,
)
from opprof_advisor.core.i18n import M_, N_, join_messages
from opprof_advisor.core.models import Profile
from opprof_advisor.profile import roofline as roofs
from opprof_advisor.readers import chips
from opprof_advisor.profile.builder import Kernels, profile_facts
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.symptoms.kernels import (
    check_attention, check_block_dim, check_bound, check_fp32, check_imbalance, check_msopprof_memory, check_norm,
)
from opprof_advisor.symptoms.memory import check_memory

# ----------------------------------------------------------------------------------------------
# Step split: exposed communication, free (idle) time, communication waits
# ----------------------------------------------------------------------------------------------


def check_step_split(ctx: Kernels) -> None:
    total = ctx.step_total
    if total is None or total.stage_us <= 0:
        if ctx.single_kernel:
            return
        what = N_("exposed communication and free time") if ctx.comm_time else N_("free (idle) time")
        ctx.note(what, N_("the profile has no step table and no task start times"), "steps")
        return
    comm = [r.op_type for r in ctx.rows if r.unit == "communication"]
    exposed = total.exposed_us / total.stage_us
    if exposed >= COMM_EXPOSED_SHARE:
        bubble = total.bubble_us or 0.0
        detail = M_("{exposed_time} of communication is not overlapped with computation = {exposed:.1%} of the step "
                    "({total} communication in total; {source})", exposed_time=U.time(total.exposed_us),
                    exposed=exposed, total=U.time(total.communication_us), source=ctx.step_source)
        if bubble > 0:  # step_trace_time's Bubble: the receive waits of pipeline parallelism, inside the exposed part
            detail = join_messages([detail, M_("{bubble} of it ({share:.1%} of the step) is the pipeline bubble: "
                                               "stages waiting to receive from their neighbours, which more "
                                               "micro-batches or an interleaved schedule shrink, not faster "
                                               "collectives", bubble=U.time(bubble), share=bubble / total.stage_us)],
                                   "; ")
        ctx.add("communication_exposed", comm, total.exposed_us, detail, share=exposed, ceiling_us=total.exposed_us)
    free = total.free_us / total.stage_us
    gap = total.largest_gap_us or 0.0
    benchmark = _benchmark_loop(ctx)
    if free >= FREE_SHARE and benchmark:
        ctx.notes.append(M_("the device is idle {free:.1%} of the window between launches of one operator "
                            "({benchmark}): a benchmark loop, whose gaps are the harness's host time, not the "
                            "model's dispatch", free=free, benchmark=benchmark))
    elif free >= FREE_SHARE and gap >= PAUSE_SHARE * total.stage_us:
        ctx.note(N_("host-bound dispatch"), M_("the device is idle {free:.1%} of the window, but one gap of "
                                               "{gap_ms:.1f} ms holds {gap_share:.0%} of it: an excerpt of the run or "
                                               "a pause, not dispatch gaps", free=free, gap_ms=gap / 1000,
                                               gap_share=gap / total.stage_us), "steady_state")
    elif free >= FREE_SHARE:
        level = N_("above 30 %: other load on the host, or the host cannot feed the device") \
            if free >= FREE_HIGH_SHARE else N_("above the 10 % Huawei's profiling guide calls normal")
        preparing = M_("; {time} before the first task of the step", time=U.time(total.preparing_us)) \
            if total.preparing_us else ""
        ctx.add("host_bound", [], total.free_us,
                M_("the device is idle {time} = {free:.1%} of the step ({level}){preparing}",
                   time=U.time(total.free_us), free=free, level=level, preparing=preparing),
                share=free, ceiling_us=total.free_us)


def _benchmark_loop(ctx: Kernels) -> str:
    """"main_kernel x11" when every compute launch is one op type launched repeatedly, else ""."""
    ops = ctx.frame.tally(ctx.ops, ctx.frame.negate(ctx.communication))
    if len(ops.keys) == 1 and not ctx.comm_time:
        op, count = ops.keys[0], ops.counts[0]
        return f"{op} x{count}" if count >= 2 else ""
    return ""


def check_communication_wait(ctx: Kernels) -> None:
    exposed = ctx.symptom("communication_exposed")
    if exposed is None:
        return  # nothing exposed: how the hidden communication splits does not matter
    comm = ctx.raw.extra.get("communication") or {}
    elapse = comm.get("Elapse Time(ms)", 0.0)
    if elapse <= 0:
        ctx.note(N_("whether exposed communication is waiting or transferring"), N_("communication.json is missing"),
                 "communication_json")
        return
    transit, wait, idle = (comm.get(f"{k} Time(ms)", 0.0) for k in ("Transit", "Wait", "Idle"))
    waiting = (wait + idle) / elapse
    if waiting < COMM_WAIT_SHARE:
        return
    ratio = wait / (wait + transit) if wait + transit else 0.0
    verdict = N_("above") if ratio > CANN_WAIT_RATIO else N_("not above")
    ctx.add("communication_wait", exposed.op_types, exposed.time_us * waiting,
            M_("of {elapse:.1f} ms in {ops} communication ops only {transit:.1f} ms is transfer; {wait:.1f} ms is "
               "waiting (synchronisation {sync:.1f} ms) and {idle:.1f} ms idle = {waiting:.1%} of it; wait ratio "
               "{ratio:.2f} is {verdict} CANN's slow-rank limit {limit}", elapse=elapse, ops=int(comm.get("ops", 0)),
               transit=transit, wait=wait, sync=comm.get("Synchronization Time(ms)", 0.0), idle=idle,
               waiting=waiting, ratio=ratio, verdict=verdict, limit=CANN_WAIT_RATIO),
            share=exposed.share * waiting, ceiling_us=exposed.time_us * waiting)


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
    computing_gap = (slowest.computing_us - fastest.computing_us) / base if base else 0.0
    idle_late = _idle_rank(ctx, ranks, base, computing_gap)
    gap = slowest.computing_us - fastest.computing_us
    share = gap / base if base else 0.0
    device = M_(", device time {time}", time=U.time(slowest.device_time_us)) \
        if slowest.device_time_us is not None else ""
    who = M_("{rank} ({time} of computing{device})", rank=slowest.rank, time=U.time(slowest.computing_us), device=device)
    if share < SLOW_RANK_GAP:
        ctx.notes.append(M_("computation is balanced across {ranks} ranks: the slowest by computation, {who}, "
                            "computes {gap} = {share:.1%} of the step longer than the fastest ({fastest}); waiting "
                            "in collectives is not caused by a slow computing rank", ranks=len(ranks), who=who,
                            gap=U.time(gap), share=share, fastest=fastest.rank))
        return
    if idle_late:
        return  # one slow-rank finding: the idle one says the computing difference too
    ctx.add("slow_rank", [], gap,
            M_("the slowest rank by computation, {who}, computes {gap} = {share:.1%} of the step longer than "
               "{fastest} ({fastest_time}); the other ranks wait for it in collectives", who=who, gap=U.time(gap),
               share=share, fastest=fastest.rank, fastest_time=U.time(fastest.computing_us)),
            share=share, ceiling_us=gap, rank=slowest.rank)


#: How the slow-rank finding of a rank late for its idle time begins (the advice tells the two kinds apart by it).
IDLE_LATE = "the rank the others wait for"


def _idle_rank(ctx: Kernels, ranks: list, base: float, computing_gap: float) -> bool:
    """The rank the others wait for when what makes it late is idle time, not kernels: before a collective a rank
    computes and idles (free: host work, data loading), so the latest to arrive is the one whose computing + free
    is longest. Added (True) when that rank is late by SLOW_RANK_GAP of the step and idle time is most of it."""
    if not base or any(r.free_us is None for r in ranks):
        return False
    late = max(ranks, key=lambda r: r.computing_us + r.free_us)
    early = min(ranks, key=lambda r: r.computing_us + r.free_us)
    gap = late.computing_us + late.free_us - early.computing_us - early.free_us
    idle = late.free_us - early.free_us
    if gap / base < SLOW_RANK_GAP or idle < 0.5 * gap or gap / base <= computing_gap:
        return False  # (a slower computing rank that differs more is the finding then)
    exposed = [r.exposed_us for r in ranks if r.exposed_us is not None]
    spread = M_("; exposed communication ranges {low}–{high} across ranks (the others wait in collectives)",
                low=U.time(min(exposed)), high=U.time(max(exposed))) if exposed else ""
    ctx.add("slow_rank", [], gap, M_(
        "the rank the others wait for, {rank}, reaches the collectives {gap} = {share:.1%} of the step after {early}: "
        "its device is idle {idle} longer ({late_free} against {early_free}) while their computing differs by "
        "{compute}; host work or data loading on that rank, not its kernels{spread}", rank=late.rank, gap=U.time(gap),
        share=gap / base, early=early.rank, idle=U.time(idle), late_free=U.time(late.free_us),
        early_free=U.time(early.free_us), compute=U.time(abs(late.computing_us - early.computing_us)), spread=spread),
        share=gap / base, ceiling_us=gap, rank=late.rank)
    return True


def check_slow_link(ctx: Kernels) -> None:
    """Links that move data well below the others of their transport (ranks of a job), or below the bandwidth
    msprof expects of the chip's links when most packets are large. The symptom's time is the transfer time
    beyond what the expected (or the median rank's) bandwidth would take."""
    links = ctx.raw.extra.get("link_bandwidth") or {}
    peers = []
    for transport, ranks in sorted(links.items()):
        rates = {rank: entry[0] / entry[1] for rank, entry in ranks.items()  # MB/ms = GB/s
                 if entry[0] >= SLOW_LINK_MIN_MB and entry[1] > 0}
        if len(rates) < 2:
            continue
        typical = median(rates.values())
        for rank, rate in sorted(rates.items(), key=lambda kv: kv[1]):
            if rate < SLOW_LINK_SHARE * typical:
                size, time_ms = ranks[rank][0], ranks[rank][1]
                peers.append((M_("{rank} {transport} {rate:.1f} GB/s against a median {typical:.1f} GB/s", rank=rank,
                                 transport=transport, rate=rate, typical=typical),
                              (time_ms - size / typical) * 1000.0))
    pairs = _slow_matrix_links(ctx.raw.extra.get("matrix") or [])
    flagged = {str(message.values.get("transport")) for message, _ in peers + pairs if hasattr(message, "values")}
    expected = _below_expected(ctx, ctx.raw.extra.get("transports") or _job_transports(links), flagged)
    found = peers + pairs + expected
    if not found:
        return
    # three views of the same transfers (ranks against each other, pairs against each other, against the
    # chip): the largest excess, never their sum
    time_us = max(sum(t for _, t in group) for group in (peers, pairs, expected))
    ctx.add("slow_link", [], time_us, join_messages([message for message, _ in found[:4]], "; "),
            share=ctx.step_share(time_us), ceiling_us=time_us)


#: How the notes of the link checks begin (a job drops its ranks' and judges its links itself).
LINK_NOTES = ("cannot judge link bandwidth", )


def is_link_note(note: str) -> bool:
    """True for a note the link checks wrote (see LINK_NOTES and the small-packet note)."""
    return str(note).startswith(LINK_NOTES) or getattr(note, "template", "") == SMALL_PACKETS


def _slow_matrix_links(matrix: list[list]) -> list[tuple[str, float]]:
    """(message, excess µs) for each communication_matrix link below SLOW_LINK_SHARE of the median link of its
    transport (LOCAL copies inside a device left out): one slow pair hides in a transport's total."""
    per_transport: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for src, dst, transport, size, time_ms in matrix:
        if src != dst and transport and transport != "LOCAL" and size >= SLOW_LINK_MIN_MB and time_ms > 0:
            per_transport[transport].append((f"{src}-{dst}", size, time_ms))
    found = []
    for transport, rows in sorted(per_transport.items()):
        if len(rows) < 2:
            continue
        typical = median(size / time_ms for _, size, time_ms in rows)
        for pair, size, time_ms in sorted(rows, key=lambda row: row[1] / row[2]):
            if size / time_ms < SLOW_LINK_SHARE * typical:
                found.append((M_("link {pair} {transport} {rate:.1f} GB/s against a median link {typical:.1f} GB/s",
                                 pair=pair, transport=transport, rate=size / time_ms, typical=typical),
                              (time_ms - size / typical) * 1000.0))
    return found


def _job_transports(links: dict[str, dict[str, list[float]]]) -> dict[str, list[float]]:
    """{transport: [MB, ms, packets, large]} of the mean rank of a job (ranks transfer at the same time: their
    excess times overlap, so the job's is one rank's, not the sum)."""
    return {transport: [sum(entry[i] if len(entry) > i else 0.0 for entry in ranks.values()) / len(ranks)
                        for i in range(4)]
            for transport, ranks in links.items() if ranks}


SMALL_PACKETS = N_("{transport} moved {size:.0f} MB at {rate:.1f} GB/s, below the {floor:g} GB/s large transfers reach, "
                   "but only {share:.0%} of its packets are large: small transfers are bound by latency, not by the "
                   "link; fewer, larger collectives (gradient bucketing) raise it")


def _below_expected(ctx: Kernels, transports: dict[str, list[float]], flagged: set[str] = frozenset()
                    ) -> list[tuple[str, float]]:
    """(message, excess µs) for each transport below the bandwidth a large transfer should reach on the chip
    (chips.link_floor) while most of its packets are large; notes for a chip of unknown generation and for
    transports slow because their packets are small."""
    generation = ctx.raw.extra.get("platform_version")
    standard = chips.standard_links(ctx.raw.chip, generation)
    chip = ctx.raw.chip or chips.generation_name(generation) or ""
    known = set().union(*chips.LINK_CLASSES.values())
    found = []
    for transport, entry in sorted(transports.items()):
        size, time_ms, packets, large = (list(entry) + [0.0, 0.0])[:4]
        if transport not in known or size < SLOW_LINK_MIN_MB or time_ms <= 0:
            continue
        rate = size / time_ms  # MB/ms = GB/s
        if not standard:
            ctx.note(N_("link bandwidth against the expected"), M_(
                "the chip is not in the profile ({transport} moved {size:.0f} MB at {rate:.1f} GB/s; msprof's standard "
                "is {options})", transport=transport, size=size, rate=rate, options=", ".join(
                    f"{links[transport]:g} GB/s on {name}" for name, links in chips.LINK_CLASSES.items()
                    if transport in links)), "cores")
            continue
        if transport not in standard:
            continue
        floor = chips.link_floor(transport, standard[transport])
        if rate >= floor:
            continue
        share = large / packets if packets else None
        if share is not None and share < chips.LARGE_PACKET_SHARE:
            if transport in flagged:
                continue  # a slow rank or pair of this transport is the finding; the mean says nothing more
            ctx.notes.append(M_(SMALL_PACKETS, transport=transport, size=size, rate=rate, floor=floor, share=share))
            continue
        ideal_ms = size / floor
        found.append((M_(
            "{transport} moved {size:.0f} MB in {time} = {rate:.1f} GB/s{packets}, below the {floor:g} GB/s a large "
            "transfer reaches on {chip} (msprof's standard {standard:g} GB/s); at {floor:g} GB/s it takes {ideal}",
            transport=transport, size=size, time=U.time(time_ms * 1000.0), rate=rate,
            packets=M_(" (large packets {share:.0%})", share=share) if share is not None else "", floor=floor,
            chip=chip, standard=standard[transport], ideal=U.time(ideal_ms * 1000.0)),
            (time_ms - ideal_ms) * 1000.0))
    return found


# ----------------------------------------------------------------------------------------------
# Where kernels ran: AI CPU, float64, format conversion
# ----------------------------------------------------------------------------------------------


def check_aicpu(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    if ctx.light:
        _aicpu_from_rows(ctx)
        return
    frame = ctx.frame
    units = set(frame.occurring(ctx.units))
    if units <= {"unknown", "communication"} and "unknown" in units:
        if ctx.timeline:  # the timeline reader has already said why the unit is unknown
            ctx.note(N_("AI CPU fallback"), N_("no kernel is labelled AI_CPU"), "level1")
            return
        ctx.note(N_("the unit of compute kernels (AI Core / AI Vector / AI CPU)"),
                 N_("Task Type / Accelerator Core is N/A at profiler level0"), "level1")
        ctx.note(N_("AI CPU fallback"), N_("the unit (Task Type / Accelerator Core) is not recorded at profiler level0"),
                 "level1")
        return
    if "ai_cpu" not in units:
        return
    # HCCL runs some collectives as AI CPU kernels (allreduceAicpuKernel ...): not a compute fallback.
    collective = frame.either(frame.isin(ctx.name_codes, lambda name: name.endswith("AicpuKernel") or
                                         name.startswith("hcom_")),
                              frame.isin(ctx.ops, lambda op: op.endswith("AicpuKernel")))
    fallback = frame.both(frame.isin(ctx.units, {"ai_cpu"}), frame.negate(collective))
    tally = frame.tally(ctx.ops, fallback, ctx.duration)
    time_by_op: Counter[str] = Counter(tally.sum_by_key())
    count, longest = sum(tally.counts), frame.largest(ctx.duration, fallback)
    if not time_by_op:
        return
    total = sum(time_by_op.values())
    if longest < MIN_TASK_DURATION_US and ctx.compute_share(total) < AICPU_MIN_SHARE:
        return
    ops = [op for op, _ in time_by_op.most_common()]
    ctx.add("aicpu_fallback", ops, total,
            M_("{count} AI CPU kernel(s) of {ops} take {total} ({share:.1%} of device time, longest "
               "{longest})", count=count, ops=", ".join(ops[:5]), total=U.time(total),
               share=ctx.share(total), longest=U.time(longest)), ceiling_us=total)
    _nms_on_ai_cpu(ctx, {op: time_by_op[op] for op in ops})


def _nms_on_ai_cpu(ctx: Kernels, time_by_op: dict[str, float]) -> None:
    """nms_cpu for the op types of ``time_by_op`` (AI CPU time by op type, the most first) that are NMS."""
    nms = [op for op in time_by_op if ctx.family.get(op) == "NMS"]
    if nms:
        nms_time = sum(time_by_op[op] for op in nms)
        ctx.add("nms_cpu", nms, nms_time, M_("non-maximum suppression ({ops}) runs on the AI CPU: {time} "
                                             "({share:.1%} of device time)", ops=", ".join(nms), time=U.time(nms_time),
                                             share=ctx.share(nms_time)), ceiling_us=nms_time)


def _aicpu_from_rows(ctx: Kernels) -> None:
    """check_aicpu on op-type rows alone (a light export or summary: counts and totals, no launches)."""
    rows = [r for r in ctx.rows if r.unit == "ai_cpu" and not r.op_type.endswith("AicpuKernel")
            and not r.op_type.startswith("hcom_")]
    total = sum(r.time_us for r in rows)
    if not rows or ctx.compute_share(total) < AICPU_MIN_SHARE:
        return
    ops = [r.op_type for r in sorted(rows, key=lambda r: -r.time_us)]
    ctx.add("aicpu_fallback", ops, total,
            M_("{count} AI CPU kernel(s) of {ops} take {total} ({share:.1%} of device time)",
               count=sum(r.count for r in rows), ops=", ".join(ops[:5]), total=U.time(total),
               share=ctx.share(total)), ceiling_us=total)
    _nms_on_ai_cpu(ctx, {r.op_type: r.time_us for r in sorted(rows, key=lambda r: -r.time_us)})


def check_double(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    frame = ctx.frame
    sides = [frame.coded(name) for name in ("input_dtypes", "output_dtypes") if frame.has(name)]
    if not sides:
        ctx.note(N_("float64 / int64 work"), N_("Input Data Types is not recorded"), "shapes")
        return
    # The patterns match whole words, so searching "inputs;outputs" is searching either side.
    float64 = frame.either(*(frame.isin(side, lambda text: bool(FLOAT64_DTYPE.search(text))) for side in sides))
    int64 = frame.either(*(frame.isin(side, lambda text: bool(INT64_DTYPE.search(text))) for side in sides))
    hit = frame.both(frame.negate(ctx.communication),
                     frame.either(float64, frame.both(frame.isin(ctx.units, {"ai_cpu"}), int64)))
    time_by_op: Counter[str] = Counter(frame.tally(ctx.ops, hit, ctx.duration).sum_by_key())
    longest = frame.largest(ctx.duration, hit)
    total = sum(time_by_op.values())
    if time_by_op and (longest >= MIN_TASK_DURATION_US or ctx.compute_share(total) >= AICPU_MIN_SHARE):
        ops = [op for op, _ in time_by_op.most_common()]
        ctx.add("double_dtype", ops, total, M_("float64, or int64 on the AI CPU, in {ops}: {total} "
                                               "({share:.1%} of device time)", ops=", ".join(ops[:5]), total=U.time(total),
                                               share=ctx.share(total)))


def check_transdata(ctx: Kernels) -> None:
    hits = [r for r in ctx.rows if r.family == "TransData"]
    total = sum(r.time_us for r in hits)
    if hits and ctx.compute_share(total) >= TRANSDATA_SHARE:
        count = sum(r.count for r in hits)
        ctx.add("transdata_overhead", [r.op_type for r in hits], total,
                M_("{count} TransData kernel(s) take {total} = {share:.1%} of device time", count=count,
                   total=U.time(total), share=ctx.share(total)),
                ceiling_us=total)


# ----------------------------------------------------------------------------------------------
# How the run executes: dynamic shapes, launch gaps, small kernels, set-up in the window
# ----------------------------------------------------------------------------------------------


def check_dynamic(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    frame = ctx.frame
    dynamic: Counter[str] = Counter()
    if not frame.has("op_state"):
        ctx.note(N_("dynamic shape"), N_("the OP State column is missing"), "op_state")
    else:
        states = frame.coded("op_state")
        static = frame.count(frame.isin(states, lambda state: bool(state) and state.lower() == "static"))
        running = frame.isin(states, lambda state: bool(state) and state.lower() == "dynamic")
        tally = frame.tally(ctx.ops, running, ctx.duration)
        dynamic.update(tally.sum_by_key())
        count = sum(tally.counts)
        # msprof-analyze treats "no static operator at all" as a dynamic-shape model (FORMATS.md §3.7).
        # Descriptive: aclnn eager calls and binary kernels report "dynamic" in healthy runs.
        if dynamic and not static:
            ctx.add("dynamic_shape", [op for op, _ in dynamic.most_common()], sum(dynamic.values()),
                    M_("all {count} kernels with an OP State run in dynamic-shape mode, none static", count=count))
    _check_recompile(ctx, dynamic)


def _check_recompile(ctx: Kernels, dynamic: Counter[str]) -> None:
    compile_us = ctx.raw.extra.get("compile_us")
    if compile_us is None:
        if dynamic:
            ctx.note(N_("whether operators are compiled again during the run"), N_("no host API statistics "
                     "(opCompile time) in the profile"), "api_statistic")
        return
    base = ctx.step_total.stage_us if ctx.step_total and ctx.step_total.stage_us else ctx.device_time
    share = compile_us / base if base else 0.0
    calls = int(ctx.raw.extra.get("compile_calls") or 0)
    if share >= COMPILE_SHARE:
        ops = [op for op, _ in dynamic.most_common()] if dynamic else []
        ctx.add("shape_recompile", ops, compile_us,
                M_("{calls} online operator compilation call(s) take {time} = {share:.1%} of the step (host API "
                   "statistics)", calls=calls, time=U.time(compile_us), share=share), share=share, ceiling_us=compile_us)


def check_launch(ctx: Kernels) -> None:
    if ctx.single_kernel:
        return
    frame = ctx.frame
    if not frame.has("wait_us"):
        ctx.note(N_("launch bound"), N_("Task Wait Time is not recorded"), "level1")
        return
    waits = frame.floats("wait_us")
    compute = frame.negate(ctx.communication)
    short = frame.both(compute, frame.below(ctx.duration, MIN_TASK_DURATION_US))
    computes, shorts = frame.count(compute), frame.count(short)
    if computes < LAUNCH_MIN_KERNELS or shorts < LAUNCH_SHORT_FRACTION * computes:
        return
    if not frame.count(frame.both(short, frame.present(waits))):
        return
    median_gap, median_dur = frame.median(waits, short), frame.median(ctx.duration, short)
    if median_gap >= median_dur:
        by_op = Counter(frame.tally(ctx.ops, short).count_by_key())
        total = frame.total(ctx.duration, short)
        ctx.add("launch_bound", [op for op, _ in by_op.most_common(8)], total,
                M_("{shorts} of {computes} kernels are shorter than {limit} (median {duration}) and wait a median "
                   "{gap} before starting", shorts=shorts, computes=computes, limit=U.time_tick(MIN_TASK_DURATION_US),
                   duration=U.time(median_dur), gap=U.time(median_gap)))


def check_small_kernels(ctx: Kernels) -> None:
    """Kernels too short to judge one by one: summed into one finding when they add up, noted always."""
    if ctx.single_kernel:
        return
    frame = ctx.frame
    small = frame.both(frame.negate(frame.isin(ctx.units, NO_PIPE_UNITS)), frame.below(ctx.duration, MIN_TASK_DURATION_US))
    tally = frame.tally(ctx.ops, small, ctx.duration)
    time_by_op: Counter[str] = Counter(tally.sum_by_key())
    count = sum(tally.counts)
    if not count:
        return
    total = sum(time_by_op.values())
    share = ctx.compute_share(total)
    ctx.notes.append(M_("{count} kernel launch(es) shorter than {limit} ({ops} op types, {share:.1%} of device "
                        "time) are not judged one by one for bound class or block dim: their pipe counters are too "
                        "short to mean much (msprof-analyze's 20 µs rule)", count=count, limit=U.time_tick(MIN_TASK_DURATION_US),
                        ops=len(time_by_op), share=ctx.share(total)))
    if share >= SMALL_KERNEL_SHARE:
        ops = [op for op, _ in time_by_op.most_common()]
        ctx.add("small_kernels", ops, total,
                M_("{count} kernels shorter than {limit} take {total} = {share:.1%} of device time "
                   "({ops} …): latency-bound work best fused or captured as a graph", count=count,
                   limit=U.time_tick(MIN_TASK_DURATION_US), total=U.time(total), share=ctx.share(total), ops=", ".join(ops[:4])))


def check_setup(ctx: Kernels) -> None:
    """Input generation or a warm-up step inside the profiled window: not the steady state."""
    if ctx.single_kernel or not ctx.device_time:
        return
    generation = [r for r in ctx.rows if INPUT_GENERATION.search(r.op_type) and "bitmask" not in r.op_type.lower()]
    time_us = sum(r.time_us for r in generation)
    if generation and ctx.share(time_us) >= SETUP_SHARE:
        ctx.add("setup_in_window", [r.op_type for r in generation], time_us,
                M_("input generation ({ops}) takes {time} = {share:.1%} of device time: the window holds set-up, not "
                   "the steady state", ops=", ".join(r.op_type for r in generation[:3]), time=U.time(time_us),
                   share=ctx.share(time_us)),
                ceiling_us=time_us)
        return
    steps = [s for s in ctx.steps if s.step is not None and s.stage_us > 0]
    if len(steps) >= WARMUP_MIN_STEPS:
        first, rest = steps[0], [s.stage_us for s in steps[1:]]
        typical = median(rest)
        window = sum(s.stage_us for s in steps)
        if first.stage_us >= WARMUP_RATIO * typical and (first.stage_us - typical) / window >= SETUP_SHARE:
            ctx.add("setup_in_window", [], first.stage_us - typical,
                    M_("step {step} takes {time}, {ratio:.1f}x the median {typical} of the other {others} steps: a "
                       "warm-up step inside the window", step=first.step, time=U.time(first.stage_us),
                       ratio=first.stage_us / typical, typical=U.time(typical), others=len(rest)),
                    share=(first.stage_us - typical) / window, ceiling_us=first.stage_us - typical)


def check_single_kernel_scope(ctx: Kernels) -> None:
    """A single-kernel profile cannot answer whole-run questions: say so once, with what to collect."""
    if ctx.single_kernel:
        ctx.note(N_("AI CPU fallback, communication, the step split, launch gaps, dynamic shapes and dtypes"),
                 N_("msprof op profiles one kernel"), "whole_run")


#: Every check, in the order its findings are listed. Symptoms that read other symptoms come after them.
CHECKS = (
    check_step_split, check_communication_wait, check_slow_rank, check_slow_link, check_aicpu, check_double, check_transdata,
    check_block_dim, check_bound, check_imbalance, check_msopprof_memory, check_dynamic, check_launch,
    check_small_kernels, check_setup, check_attention, check_norm, check_fp32, check_single_kernel_scope, check_memory,
)


def unjudged(items: Iterable[str]) -> str:
    """``a, b and 3 more`` for a note listing op types."""
    items = list(items)
    if len(items) <= 5:
        return ", ".join(items)
    return M_("{items} and {n} more", items=", ".join(items[:5]), n=len(items) - 5)


def note_unjudged(ctx: Kernels) -> None:
    """Every op type is judged or explained: one note per reason, naming the op types."""
    reasons: dict[str, list[str]] = defaultdict(list)
    for row in ctx.rows:
        if row.bound == "unknown" and row.bound_why and row.unit != "communication":
            reasons[row.bound_why].append(row.op_type)
    for why, ops in reasons.items():
        if why.startswith("the profile has no pipe") or ctx.light:
            continue  # the bound-class note (a light export's own note) already says so, with what to collect
        ctx.notes.append(M_("bound class not judged for {ops}: {why}", ops=unjudged(ops), why=why))


def profile_of(ctx: Kernels, peaks: str | Path | None = None, checks=CHECKS, roofline: bool = True) -> Profile:
    """The judged Profile of derived kernels: its facts (``profile.builder``), then ``checks`` in order,
    then the roofline (``peaks``: a --peaks YAML file), whose "cannot judge" notes come after the checks'."""
    profile = profile_facts(ctx)
    for check in checks:
        check(ctx)
    note_unjudged(ctx)
    profile.symptoms = ctx.symptoms
    profile.notes = list(dict.fromkeys(ctx.notes))
    if roofline:
        profile.roofline = roofs.compute(ctx.raw, profile, peaks)
    return profile
