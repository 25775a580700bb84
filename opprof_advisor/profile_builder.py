"""Turn a reader's RawProfile into the normalised Profile: op-type rows, totals, symptoms, notes.

Everything here is deterministic and explained: each threshold below names its source. Where the
data cannot support a judgement the profile gets a note ``cannot judge <what>: <why> (collect with
<switch>)`` instead of a guess.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from statistics import median
from typing import Any, Iterable

from opprof_advisor.models import OpTypeStat, Profile, RankSummary, Symptom
from opprof_advisor.operators import COMMUNICATION_FAMILIES, canonical_family
from opprof_advisor.readers.base import KernelTable, RawProfile
from opprof_advisor.vocabulary import BOUND_SYMPTOM

SCHEMA = "opprof-advisor/profile/1"

# ----------------------------------------------------------------------------------------------
# Thresholds and their sources
# ----------------------------------------------------------------------------------------------

#: Kernels shorter than this are not judged for bound class or block dim: msprof-analyze's
#: ``_MIN_TASK_DURATION = 20`` (operator_bound_checker.py; FORMATS.md §6; KB-SOURCES #5, #50).
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
#: launch_bound: at least this many compute kernels, at least half of them shorter than
#: MIN_TASK_DURATION_US, and the median gap before a short kernel at least its median duration.
LAUNCH_MIN_KERNELS = 50
LAUNCH_SHORT_FRACTION = 0.5
#: block_imbalance: slowest block >= 1.5 x the mean block (a kernel lasts as long as its slowest
#: block, so the mean/max ratio bounds what rebalancing can recover; FORMATS.md §1.6 example).
IMBALANCE_RATIO = 1.5
#: Kernels looked back / ahead from a Softmax for a BatchMatMul (unfused attention chain).
ATTENTION_WINDOW = 4

_FLOAT64 = re.compile(r"\b(?:DT_)?(?:DOUBLE|FLOAT64)\b", re.I)
_INT64 = re.compile(r"\b(?:DT_)?U?INT64\b", re.I)
_FP32 = re.compile(r"^(?:DT_)?FLOAT(?:32)?$", re.I)
_CUBE_FAMILIES = frozenset({"MatMul", "GroupedMatMul", "Conv2D"})

#: Raw unit labels (op_summary Task Type, kernel_details Accelerator Core, msOpProf Op Type,
#: timeline/task_time kernel types) -> vocabulary.UNITS (FORMATS.md §3.3).
UNIT_OF_TASK_TYPE: dict[str, str] = {
    "AI_CORE": "ai_core", "KERNEL_AICORE": "ai_core", "CUBE": "ai_core",
    "AI_VECTOR_CORE": "ai_vector", "KERNEL_AIVEC": "ai_vector", "VECTOR": "ai_vector",
    "MIX_AIC": "mix_aic", "MIX": "mix_aic", "MIX_AIV": "mix_aiv",
    "AI_CPU": "ai_cpu", "KERNEL_AICPU": "ai_cpu", "AICPU": "ai_cpu",
    "HCCL": "communication", "COMMUNICATION": "communication", "HCCL_AI_CPU": "communication",
    "DSA_SQE": "dsa", "DSA": "dsa",
    "DVPP": "other", "SDMA": "other", "SDMA_SQE": "other", "FFTS_PLUS": "other", "FUSION": "other",
    "WRITE_BACK": "other", "PCIE_DMA_SQE": "other",
}


# ----------------------------------------------------------------------------------------------
# Per-kernel normalisation
# ----------------------------------------------------------------------------------------------


def unit_of(task_type: str, family: str | None, name: str = "") -> str:
    """The vocabulary unit of one kernel from its raw task type (and family for communication)."""
    if family in COMMUNICATION_FAMILIES or name.startswith("hcom_"):
        return "communication"
    label = task_type.strip().upper()
    if not label:
        return "unknown"
    return UNIT_OF_TASK_TYPE.get(label, "other")


_TRAILING_IDS = re.compile(r"(?:_+\d+)+_*$")
_TRAILING_DIGITS = re.compile(r"(?<![Vv\d])\d+$")


def op_type_from_name(name: str) -> str:
    """Guess an op type from a kernel name when Type is not recorded (level0).

    ``aclnnMm_MatMulCommon_MatMulV2`` -> MatMulV2, ``trans_TransData_17`` -> TransData,
    ``Conv2DBackpropInput5`` -> Conv2DBackpropInput, ``hcom_allReduce__868_3_1`` -> hcom_allReduce.
    """
    text = _TRAILING_IDS.sub("", name.strip()).rstrip("_")
    if text.startswith("hcom_"):
        return text
    if text.startswith("trans_"):
        text = text[len("trans_"):]
    text = text.rsplit("/", 1)[0].rsplit("_", 1)[-1]
    return _TRAILING_DIGITS.sub("", text) or name


def _column(table: KernelTable, field: str) -> list | None:
    """A column the source really had (listed in ``present`` or fully filled), else None."""
    values = getattr(table, field)
    if len(values) != len(table):
        return None
    if table.present and field not in table.present:
        return None
    return values


# ----------------------------------------------------------------------------------------------
# Building the profile
# ----------------------------------------------------------------------------------------------


class _Context:
    """Per-kernel derived columns shared by the symptom checks."""

    def __init__(self, raw: RawProfile):
        table = raw.kernels
        self.raw, self.table = raw, table
        ops = table.op_type if len(table.op_type) == len(table) else [""] * len(table)
        names = table.name if len(table.name) == len(table) else [""] * len(table)
        self.derived = not any(op for op in ops)
        if self.derived:
            ops = [op_type_from_name(n) for n in names]
        self.op_type = ops
        families = {op: canonical_family(op) for op in set(ops)}
        self.family = {op: fam or op for op, fam in families.items()}
        tasks = table.task_type if len(table.task_type) == len(table) else [""] * len(table)
        unit_cache: dict[tuple[str, str], str] = {}
        units = []
        for op, task, name in zip(ops, tasks, names):
            key = (op, task)
            unit = unit_cache.get(key)
            if unit is None:
                unit = unit_cache[key] = unit_of(task, families[op], op or name)
            units.append(unit)
        self.unit = units
        self.duration = table.duration_us
        self.device_time = float(sum(self.duration))
        self.comm_time = float(sum(d for d, u in zip(self.duration, units) if u == "communication"))
        self.compute_time = self.device_time - self.comm_time
        self.notes: list[str] = list(raw.notes)
        self.symptoms: list[Symptom] = []

    def share(self, time_us: float) -> float:
        return time_us / self.device_time if self.device_time else 0.0

    def compute_share(self, time_us: float) -> float:
        return time_us / self.compute_time if self.compute_time else 0.0

    @property
    def timeline(self) -> bool:
        """True for timeline-only inputs, which lack every summary column whatever the level."""
        return self.raw.format in TIMELINE_FORMATS

    def note(self, what: str, why: str, switch: str) -> None:
        if self.timeline:
            # The profiler level is not the cause: a timeline never carries the column.
            why = why.split(" at profiler level")[0]
            level_only = switch.startswith(("profiler_level", "msprof on"))
            switch = TIMELINE_SWITCH if level_only else f"{TIMELINE_SWITCH}, with {switch}"
        note = f"cannot judge {what}: {why} (collect with {switch})"
        if note not in self.notes:
            self.notes.append(note)

    def add(self, symptom_id: str, op_types: Iterable[str], time_us: float, detail: str,
            share: float | None = None) -> None:
        ops = list(dict.fromkeys(op_types))
        value = self.share(time_us) if share is None else share
        self.symptoms.append(Symptom(id=symptom_id, op_types=ops, share=round(value, 6), detail=detail))


#: Timeline-only formats (trace_view.json / msprof_*.json) and what to collect instead.
TIMELINE_FORMATS = frozenset({"torch-npu-timeline", "msprof-timeline"})
TIMELINE_SWITCH = "kernel_details.csv from the torch_npu profiler, or msprof --export=on for op_summary"


def build_profile(raw: RawProfile) -> Profile:
    """Normalise a RawProfile: op-type rows, device/compute/communication totals, symptoms, notes."""
    ctx = _Context(raw)
    rows = _op_type_rows(ctx)
    profile = Profile(
        path=raw.path, format=raw.format, versions=dict(raw.versions), chip=raw.chip,
        device_time_us=round(ctx.device_time, 3), compute_time_us=round(ctx.compute_time, 3),
        communication_time_us=round(ctx.comm_time, 3), op_types=rows,
        kernel=dict(raw.kernel_detail) if raw.kernel_detail else None,
    )
    profile.device = device_facts(raw)
    if raw.core_counts:
        profile.versions.setdefault("cores", ",".join(f"{k}={v}" for k, v in sorted(raw.core_counts.items())))
    if ctx.derived and len(raw.kernels) and not ctx.timeline:  # a timeline reader says so itself
        ctx.notes.append("op types were derived from kernel names: the Type column is not recorded "
                         "(collect with profiler_level=Level1)")
    for check in _CHECKS:
        check(ctx, rows)
    _add_ranks(profile, raw, ctx)
    profile.symptoms = ctx.symptoms
    return profile


def device_facts(raw: RawProfile) -> dict[str, Any]:
    """Chip name, core counts and AI Core clock, where the profile records them."""
    facts: dict[str, Any] = {"chip": raw.chip} if raw.chip else {}
    facts.update({key: value for key, value in raw.core_counts.items() if value})
    if raw.freq_mhz:
        facts["freq_mhz"] = raw.freq_mhz
    return facts


def _add_ranks(profile: Profile, raw: RawProfile, ctx: _Context) -> None:
    ranks = raw.extra.get("ranks") or []
    profile.ranks = [RankSummary(**rank) for rank in ranks]
    timed = [r for r in profile.ranks if r.device_time_us is not None]
    if len(timed) >= 2:
        slowest = max(timed, key=lambda r: r.device_time_us)
        mean = sum(r.device_time_us for r in timed) / len(timed)
        ctx.notes.append(f"slowest rank: {slowest.rank} with {slowest.device_time_us:.1f} us of device time "
                         f"({slowest.device_time_us / mean - 1:+.1%} against the mean of {len(timed)} ranks)")
    profile.notes = list(dict.fromkeys(ctx.notes))


def kernel_rows(raw: RawProfile) -> Iterable[dict[str, Any]]:
    """The normalised kernels of a RawProfile, one dict per launch (for exports)."""
    ctx = _Context(raw)
    table = ctx.table
    optional = [f for f in ("wait_us", "block_dim", "mix_block_dim", "input_shapes", "input_dtypes",
                            "input_formats", "output_formats", "output_dtypes", "op_state")
                if _column(table, f) is not None]
    pipes = [k for k, v in table.pipe.items() if len(v) == len(table)]
    names = table.name if len(table.name) == len(table) else [""] * len(table)
    for i in range(len(table)):
        row = {"seq": i, "name": names[i], "op_type": ctx.op_type[i], "family": ctx.family.get(ctx.op_type[i]),
               "unit": ctx.unit[i], "task_type": table.task_type[i] if table.task_type else "",
               "duration_us": ctx.duration[i]}
        for field in optional:
            row[field] = getattr(table, field)[i]
        for key in pipes:
            row[f"{key}_ratio"] = table.pipe[key][i]
        yield row


def _op_type_rows(ctx: _Context) -> list[OpTypeStat]:
    table = ctx.table
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, key in enumerate(zip(ctx.op_type, ctx.unit)):
        groups[key].append(index)
    dtypes = _column(table, "input_dtypes")
    formats = _column(table, "input_formats")
    blocks = _column(table, "block_dim")
    waits = _column(table, "wait_us")
    rows = []
    for (op_type, unit), indices in groups.items():
        time_us = sum(ctx.duration[i] for i in indices)
        row = OpTypeStat(
            op_type=op_type or "(unknown)", family=ctx.family.get(op_type) or op_type or "(unknown)", unit=unit,
            count=len(indices), time_us=round(time_us, 3), share=round(ctx.share(time_us), 6),
            bound=_bound_class(ctx, indices, unit),
            dtypes=_top_values(dtypes, indices), formats=_top_values(formats, indices),
            block_dim=_most_common(blocks, indices),
            wait_us=round(sum(waits[i] or 0.0 for i in indices), 3) if waits is not None else None,
        )
        rows.append(row)
    rows.sort(key=lambda r: (-r.time_us, r.op_type, r.unit))
    return rows


def _top_values(column: list[str] | None, indices: list[int], limit: int = 4) -> list[str]:
    if column is None:
        return []
    counts: Counter[str] = Counter()
    # count whole cells first (few distinct values), then split each distinct cell once
    for cell, times in Counter(column[i] for i in indices).items():
        for item in cell.split(";"):
            item = item.strip()
            if item:
                counts[item] += times
    return [value for value, _ in counts.most_common(limit)]


def _most_common(column: list | None, indices: list[int]) -> int | None:
    if column is None:
        return None
    counts = Counter(column[i] for i in indices if column[i] is not None)
    return counts.most_common(1)[0][0] if counts else None


_AIC_UNITS = frozenset({"ai_core", "mix_aic", "mix_aiv"})
_AIV_UNITS = frozenset({"ai_vector", "mix_aic", "mix_aiv"})


def _pipes_for(unit: str, pipe: dict[str, list]) -> list[str]:
    keys = [k for k in pipe if k in BOUND_THRESHOLDS]
    if unit in ("ai_cpu", "communication", "dsa", "other"):
        return []
    return [k for k in keys if (k.startswith("aic_") and unit in _AIC_UNITS | {"unknown"})
            or (k.startswith("aiv_") and unit in _AIV_UNITS | {"unknown"})
            or not k.startswith(("aic_", "aiv_"))]


def _bound_class(ctx: _Context, indices: list[int], unit: str) -> str:
    """Time-weighted pipe ratios of an op type's kernels >= MIN_TASK_DURATION_US -> bound class."""
    pipe = ctx.table.pipe if "pipe" in ctx.table.present or not ctx.table.present else {}
    keys = _pipes_for(unit, pipe)
    if not keys:
        return "unknown"
    long = [i for i in indices if ctx.duration[i] >= MIN_TASK_DURATION_US]
    if not long:
        return "unknown"
    best, best_score, seen = "none", 0.0, False
    for key in keys:
        column = pipe[key]
        weight = total = 0.0
        for i in long:
            value = column[i]
            if value is not None:
                weight += ctx.duration[i]
                total += value * ctx.duration[i]
        if not weight:
            continue
        seen = True
        score = (total / weight) / BOUND_THRESHOLDS[key]
        if score >= 1.0 and score > best_score:
            best, best_score = PIPE_CLASS[key], score
    return best if seen else "unknown"


# ----------------------------------------------------------------------------------------------
# Symptom checks: each takes the context and the op-type rows, adds symptoms and notes
# ----------------------------------------------------------------------------------------------


def _is_comm_aicpu_kernel(name: str, op_type: str) -> bool:
    # HCCL runs some collectives as AI CPU kernels (allreduceAicpuKernel ...): not a compute fallback.
    return name.endswith("AicpuKernel") or op_type.endswith("AicpuKernel") or name.startswith("hcom_")


def _check_aicpu(ctx: _Context, rows: list[OpTypeStat]) -> None:
    units = set(ctx.unit)
    if units <= {"unknown", "communication"} and "unknown" in units:
        if ctx.timeline:  # the timeline reader has already said why the unit is unknown
            ctx.note("AI CPU fallback", "no kernel is labelled AI_CPU", TIMELINE_SWITCH)
            return
        ctx.note("the unit of compute kernels (AI Core / AI Vector / AI CPU)",
                 "Task Type / Accelerator Core is N/A at profiler level0", "profiler_level=Level1")
        ctx.note("AI CPU fallback", "the unit (Task Type / Accelerator Core) is not recorded at profiler level0",
                 "profiler_level=Level1")
        return
    names = ctx.table.name
    time_by_op: Counter[str] = Counter()
    longest = 0.0
    for i, unit in enumerate(ctx.unit):
        if unit == "ai_cpu" and not _is_comm_aicpu_kernel(names[i] if names else "", ctx.op_type[i]):
            time_by_op[ctx.op_type[i]] += ctx.duration[i]
            longest = max(longest, ctx.duration[i])
    if not time_by_op:
        return
    total = sum(time_by_op.values())
    if longest < MIN_TASK_DURATION_US and ctx.compute_share(total) < AICPU_MIN_SHARE:
        return
    ops = [op for op, _ in time_by_op.most_common()]
    count = sum(r.count for r in rows if r.unit == "ai_cpu" and r.op_type in time_by_op)
    ctx.add("aicpu_fallback", ops, total,
            f"{count} AI CPU kernel(s) of {', '.join(ops[:5])} take {total:.1f} us "
            f"({ctx.compute_share(total):.1%} of compute time, longest {longest:.1f} us)")
    nms = [op for op in ops if ctx.family.get(op) == "NMS"]
    if nms:
        nms_time = sum(time_by_op[op] for op in nms)
        ctx.add("nms_cpu", nms, nms_time, f"non-maximum suppression ({', '.join(nms)}) runs on the AI CPU: "
                f"{nms_time:.1f} us ({ctx.compute_share(nms_time):.1%} of compute time)")


def _check_double(ctx: _Context, rows: list[OpTypeStat]) -> None:
    inputs = _column(ctx.table, "input_dtypes")
    outputs = _column(ctx.table, "output_dtypes")
    if inputs is None and outputs is None:
        ctx.note("float64 / int64 work", "Input Data Types is not recorded",
                 "profiler_level=Level1 and record_shapes=True")
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


def _check_transdata(ctx: _Context, rows: list[OpTypeStat]) -> None:
    hits = [r for r in rows if r.family == "TransData"]
    total = sum(r.time_us for r in hits)
    if hits and ctx.compute_share(total) >= TRANSDATA_SHARE:
        count = sum(r.count for r in hits)
        ctx.add("transdata_overhead", [r.op_type for r in hits], total,
                f"{count} TransData kernel(s) take {total:.1f} us = {ctx.compute_share(total):.1%} of compute time")


def _check_block_dim(ctx: _Context, rows: list[OpTypeStat]) -> None:
    blocks = _column(ctx.table, "block_dim")
    if blocks is None or all(b in (None, 0) for b in blocks):
        ctx.note("block dim", "Block Dim / Block Num is not recorded", "profiler_level=Level1")
        return
    cores = ctx.raw.core_counts
    if not cores.get("aic"):
        ctx.note("block dim", "the chip's AI Core count is not in the profile",
                 "msprof so that PROF_*/device_*/info.json.* is kept")
        return
    aic, aiv = cores["aic"], cores.get("aiv") or cores["aic"]
    low: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for i, unit in enumerate(ctx.unit):
        block = blocks[i]
        if not block or ctx.duration[i] < MIN_TASK_DURATION_US or unit not in _AIC_UNITS | _AIV_UNITS:
            continue
        need = aiv if unit in ("ai_vector", "mix_aiv") else aic
        # msprof-analyze block_dim_checker: a block dim that is not a multiple of the core count
        # leaves cores idle in the last wave (FORMATS.md §6, KB-SOURCES #43).
        if block % need:
            low[ctx.op_type[i]] += ctx.duration[i]
            examples.setdefault(ctx.op_type[i], f"{ctx.op_type[i]} block dim {block} vs {need} cores")
    hot = [op for op, t in low.most_common() if ctx.compute_share(t) >= HOT_SHARE]
    if hot:
        total = sum(low[op] for op in hot)
        ctx.add("low_block_dim", hot, total, "; ".join(examples[op] for op in hot[:3]) +
                f" ({ctx.compute_share(total):.1%} of compute time; AIC {aic}, AIV {aiv})")


def _check_bound(ctx: _Context, rows: list[OpTypeStat]) -> None:
    if not any(k in BOUND_THRESHOLDS for k in ctx.table.pipe):
        if any(r.unit not in ("communication", "ai_cpu") for r in rows):
            ctx.note("bound class", "no pipe ratio columns (aic_mac_ratio, aiv_vec_ratio ...) in the profile",
                     _pipe_switch(ctx.raw.format))
        return
    by_class: dict[str, list[OpTypeStat]] = defaultdict(list)
    for row in rows:
        if row.bound in BOUND_SYMPTOM and ctx.compute_share(row.time_us) >= HOT_SHARE:
            by_class[row.bound].append(row)
    for bound, hits in by_class.items():
        total = sum(r.time_us for r in hits)
        names = ", ".join(f"{r.op_type} {ctx.compute_share(r.time_us):.0%}" for r in hits[:4])
        what = "no pipe reaches the bound threshold" if bound == "none" else f"{bound} pipe is the busiest"
        ctx.add(BOUND_SYMPTOM[bound], [r.op_type for r in hits], total, f"{what} in {names}")


def _pipe_switch(fmt: str) -> str:
    if fmt.startswith("torch-npu"):
        return "experimental_config aic_metrics=AiCMetrics.PipeUtilization"
    return "--aic-metrics=PipeUtilization"


def _check_imbalance(ctx: _Context, rows: list[OpTypeStat]) -> None:
    detail = ctx.raw.kernel_detail
    if not detail:
        return
    times = detail.get("block_time_us") or {}
    if not any(len(v or []) >= 2 for v in times.values()):
        ctx.note("block imbalance", "no per-block times in the msOpProf output",
                 "msprof op --aic-metrics=PipeUtilization")
        return
    worst = None
    for side, values in times.items():
        values = [v for v in values or [] if v is not None]
        if len(values) < 2 or not max(values):
            continue
        mean = sum(values) / len(values)
        ratio = max(values) / mean if mean else 0.0
        if worst is None or ratio > worst[1]:
            ids = (detail.get("block_ids") or {}).get(side) or list(range(len(values)))
            slowest = ids[values.index(max(values))] if len(ids) == len(values) else values.index(max(values))
            worst = (side, ratio, max(values), min(values), mean, slowest)
    if worst and worst[1] >= IMBALANCE_RATIO:
        side, ratio, high, low, mean, slowest = worst
        ops = [r.op_type for r in rows if r.unit != "communication"] or [str(detail.get("name", "kernel"))]
        ctx.add("block_imbalance", ops, ctx.compute_time,
                f"{side} blocks: slowest {high:.1f} us (block {slowest}) vs mean {mean:.1f} us, fastest {low:.1f} us; "
                f"balanced blocks would save up to {1 - mean / high:.0%} of the kernel time")


def _check_dynamic(ctx: _Context, rows: list[OpTypeStat]) -> None:
    states = _column(ctx.table, "op_state")
    if states is None:
        torch = ctx.raw.format.startswith("torch")
        ctx.note("dynamic shape", "the OP State column is missing",
                 "profiler_level=Level1 on CANN >= 8.0" if torch else "msprof on CANN >= 8.0")
        return
    dynamic: Counter[str] = Counter()
    static = count = 0
    for state, op, duration in zip(states, ctx.op_type, ctx.duration):
        if state is None:
            continue
        if state == "dynamic" or state.lower() == "dynamic":
            dynamic[op] += duration
            count += 1
        elif state.lower() == "static":
            static += 1
    # msprof-analyze treats "no static operator at all" as a dynamic-shape model (FORMATS.md §3.7).
    if dynamic and not static:
        total = sum(dynamic.values())
        ctx.add("dynamic_shape", [op for op, _ in dynamic.most_common()], total,
                f"all {count} kernels with an OP State run in dynamic-shape mode, none static")


def _check_launch(ctx: _Context, rows: list[OpTypeStat]) -> None:
    waits = _column(ctx.table, "wait_us")
    if waits is None:
        ctx.note("launch bound", "Task Wait Time is not recorded", "profiler_level=Level1")
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


def _check_attention(ctx: _Context, rows: list[OpTypeStat]) -> None:
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
_FUSED_FOR = {"RMSNorm": "RMSNorm", "LayerNorm": "LayerNorm", "SwiGLU": "SwiGLU", "RoPE": "RoPE"}


def _base_name(op: str) -> str:
    return re.sub(r"v\d+$", "", re.sub(r"[\s_\-]+", "", op).lower())


def _check_norm(ctx: _Context, rows: list[OpTypeStat]) -> None:
    compute = [i for i, u in enumerate(ctx.unit) if u not in ("communication", "ai_cpu")]
    base = {op: _base_name(op) for op in set(ctx.op_type)}
    names = [base[ctx.op_type[i]] for i in compute]
    present_families = {r.family for r in rows}
    found: dict[str, set[int]] = {}
    for pattern, steps in NORM_PATTERNS.items():
        if _FUSED_FOR[pattern] in present_families:
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


def _check_fp32(ctx: _Context, rows: list[OpTypeStat]) -> None:
    dtypes = _column(ctx.table, "input_dtypes")
    cube_rows = [r for r in rows if r.family in _CUBE_FAMILIES and r.unit in _AIC_UNITS]
    if dtypes is None:
        if cube_rows:
            ctx.note("fp32 compute", "Input Data Types is not recorded", "profiler_level=Level1 and record_shapes=True")
        return
    time_by_op: Counter[str] = Counter()
    for i, unit in enumerate(ctx.unit):
        if unit not in _AIC_UNITS or ctx.family.get(ctx.op_type[i]) not in _CUBE_FAMILIES:
            continue
        first = dtypes[i].split(";", 1)[0].strip()
        if _FP32.match(first):
            time_by_op[ctx.op_type[i]] += ctx.duration[i]
    hot = {op: t for op, t in time_by_op.items() if ctx.compute_share(t) >= HOT_SHARE}
    if hot:
        total = sum(hot.values())
        ctx.add("fp32_compute", sorted(hot, key=hot.get, reverse=True), total,
                f"float32 inputs on the cube unit in {', '.join(sorted(hot, key=hot.get, reverse=True)[:4])}: "
                f"{total:.1f} us ({ctx.compute_share(total):.1%} of compute time)")


def _check_communication(ctx: _Context, rows: list[OpTypeStat]) -> None:
    trace = ctx.raw.extra.get("step_trace") or {}
    exposed = trace.get("Communication(Not Overlapped)")
    if exposed is None:
        if ctx.comm_time:
            ctx.note("exposed communication", "step_trace_time.csv (Communication(Not Overlapped)) is missing",
                     "the torch_npu profiler, which writes ASCEND_PROFILER_OUTPUT/step_trace_time.csv")
        return
    step = trace.get("Stage") or sum(trace.get(k, 0.0) for k in ("Computing", "Communication(Not Overlapped)", "Free"))
    share = exposed / step if step else 0.0
    if share >= COMM_EXPOSED_SHARE:
        ops = [r.op_type for r in rows if r.unit == "communication"]
        ctx.add("communication_exposed", ops, exposed,
                f"{exposed:.1f} us of communication is not overlapped with computation = {share:.1%} of the step "
                f"({trace.get('Communication', exposed):.1f} us communication in total)", share=share)


#: communication_wait fires when waiting (Wait, which includes Synchronization) plus Idle time is at least
#: this share of the collectives' elapsed time in communication.json. This project's threshold ("mostly" =
#: at least half). CANN's documented slow-rank cue is a Wait Time Ratio = wait / (wait + transit) above 0.2
#: (hiascend CANN profiling guide, "Performance Tuning Suggestions", atlasprofiling_16_2260); it leaves out
#: Idle = elapse - transit - wait, which the same guide calls the op's dispatch time (atlasprofiling_16_0027),
#: i.e. time lost to the host, so it is reported in the detail line rather than used alone.
COMM_WAIT_SHARE = 0.5
#: CANN's Wait Time Ratio limit above which a rank's communication has a bottleneck (see above).
CANN_WAIT_RATIO = 0.2


def _check_communication_wait(ctx: _Context, rows: list[OpTypeStat]) -> None:
    exposed = next((s for s in ctx.symptoms if s.id == "communication_exposed"), None)
    if exposed is None:
        return  # nothing exposed: how the hidden communication splits does not matter
    comm = ctx.raw.extra.get("communication") or {}
    elapse = comm.get("Elapse Time(ms)", 0.0)
    if elapse <= 0:
        ctx.note("whether exposed communication is waiting or transferring", "communication.json is missing",
                 "profiler_level=Level1")
        return
    transit, wait, idle = (comm.get(f"{k} Time(ms)", 0.0) for k in ("Transit", "Wait", "Idle"))
    waiting = (wait + idle) / elapse
    if waiting < COMM_WAIT_SHARE:
        return
    ratio = wait / (wait + transit) if wait + transit else 0.0
    verdict = "above" if ratio > CANN_WAIT_RATIO else "not above"
    ctx.add("communication_wait", exposed.op_types, 0.0,
            f"of {elapse:.1f} ms in {int(comm.get('ops', 0))} communication ops only {transit:.1f} ms is transfer; "
            f"{wait:.1f} ms is waiting (synchronisation {comm.get('Synchronization Time(ms)', 0.0):.1f} ms) and "
            f"{idle:.1f} ms idle = {waiting:.1%} of it; wait ratio {ratio:.2f} is {verdict} CANN's slow-rank "
            f"limit {CANN_WAIT_RATIO}", share=exposed.share * waiting)


_CHECKS = (_check_aicpu, _check_double, _check_transdata, _check_block_dim, _check_bound, _check_imbalance,
           _check_dynamic, _check_launch, _check_attention, _check_norm, _check_fp32, _check_communication,
           _check_communication_wait)


# ----------------------------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------------------------


def profile_to_json(profile: Profile) -> dict[str, Any]:
    """The ``opprof-advisor/profile/1`` JSON document of a profile (shared by CLI, suggest and reports)."""
    source: dict[str, Any] = {"path": profile.path, "format": profile.format, **profile.versions}
    if profile.chip:
        source["chip"] = profile.chip
    if profile.ranks:
        source["ranks"] = [
            {"rank": r.rank, "path": r.path, "device_time_us": r.device_time_us, "error": r.error}
            for r in profile.ranks
        ]
    return {
        "schema": SCHEMA,
        "source": source,
        "device_time_us": profile.device_time_us,
        "compute_time_us": profile.compute_time_us,
        "communication_time_us": profile.communication_time_us,
        "op_types": [
            {"op_type": r.op_type, "family": r.family, "unit": r.unit, "count": r.count, "time_us": r.time_us,
             "share": r.share, "bound": r.bound}
            for r in profile.op_types
        ],
        "symptoms": [{"id": s.id, "op_types": s.op_types, "share": s.share, "detail": s.detail}
                     for s in profile.symptoms],
        "notes": list(profile.notes),
        "device": dict(profile.device),
    }
