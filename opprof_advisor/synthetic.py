"""Write synthetic profiler output in the documented on-disk formats (../shared/FORMATS.md).

Tests, benchmarks and ``data/make_examples.py`` describe a workload as a list of ``KernelSpec``
(or plain dicts with the same keys) and write it as any producer would have:

* ``write_torch_npu_text(dir, kernels, level="Level2")``  ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/``
* ``write_torch_npu_job(dir, kernels, ranks=8, slow_rank=3)`` a data-parallel job: one ``*_ascend_pt`` per rank
* ``write_torch_npu_db(dir, kernels)``                     ``*_ascend_pt/.../ascend_pytorch_profiler_<rank>.db``
* ``write_op_summary(dir, kernels)``                       system msprof ``PROF_*`` tree
* ``write_msprof_db(path, kernels)``                       ``PROF_*/msprof_<ts>.db``
* ``write_msopprof_device(dir, kernel)``                   ``msprof op`` ``OPPROF_*`` directory
* ``write_msopprof_simulator(dir, kernel)``                ``msprof op simulator`` ``OPPROF_*`` directory
* ``write_all_formats(dir, kernels)``                      the four whole-run formats above, side by side

Directory rule shared by every writer: pass either the producer-named directory itself
(``…_ascend_pt``, ``PROF_…``, ``OPPROF_…``) or any other directory, in which one with a realistic
name is created; the writer returns the producer directory (or the DB file).

Every writer expands the specs with ``expand_launches`` from one seed, so the same workload written
in two formats has identical per-launch durations (rounded to whole nanoseconds, so the µs text
and the ns databases agree exactly), and ``spec_totals`` gives the expected per-op-type totals.
"""

from __future__ import annotations

import csv
import json
import random
import re
import sqlite3
import string
from collections import defaultdict
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from opprof_advisor.readers import chips as _chips

#: AI Core / AI Vector core counts of the chips the writers know (info.json ``ai_core_num`` / ``aiv_num``).
CHIP_CORES: dict[str, tuple[int, int]] = dict(_chips.CHIP_CORES)

COMMUNICATION_TYPES = frozenset({"HCCL", "COMMUNICATION"})
_NS_PER_US = 1000
_BASE_NS = 1_736_408_883_704_643_212  # 2025-01-09, like the real torch_npu samples
_UINT32_MAX = "4294967295"
_FREQ_MHZ = 1800


@dataclass
class KernelSpec:
    """One kernel (op instance) of a synthetic workload, launched ``count`` times.

    ``task_type`` is the op_summary unit (``AI_CORE``, ``AI_VECTOR_CORE``, ``MIX_AIC``, ``MIX_AIV``,
    ``AI_CPU``, ``DSA_SQE``, ``HCCL`` / ``COMMUNICATION``); for msOpProf writers ``cube`` /
    ``vector`` / ``mix`` are accepted too. ``duration_us`` is the mean launch time; with
    ``jitter`` > 0 launches vary but their sum stays ``count * duration_us`` (to the ns).
    ``pipe`` holds 0..1 ratios under the ``readers.base.PIPE_KEYS`` names (``aic_cube``,
    ``aiv_vec``, ``aiv_mte2`` ...); empty means typical defaults for the unit.
    """

    name: str
    op_type: str = ""
    task_type: str = "AI_CORE"
    duration_us: float = 10.0
    count: int = 1
    block_dim: int = 0
    mix_block_dim: int = 0
    wait_us: float = 2.0
    jitter: float = 0.0
    input_shapes: str = ""
    input_dtypes: str = "FLOAT16"
    input_formats: str = "ND"
    output_shapes: str = ""
    output_dtypes: str = "FLOAT16"
    output_formats: str = "ND"
    op_state: str = "static"
    pipe: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.op_type:
            self.op_type = self.name
        if self.count < 1 or self.duration_us < 0:
            raise ValueError(f"kernel {self.name!r}: count must be >= 1 and duration_us >= 0")

    @property
    def is_communication(self) -> bool:
        return self.task_type.upper() in COMMUNICATION_TYPES


@dataclass(frozen=True)
class Launch:
    """One launch of a spec on the device timeline (integer ns, so every format agrees)."""

    spec: KernelSpec
    index: int  # launch number within the spec
    start_ns: int
    dur_ns: int
    wait_ns: int
    pipe: dict[str, float]

    @property
    def duration_us(self) -> float:
        return self.dur_ns / _NS_PER_US


def as_specs(kernels: Iterable[KernelSpec | Mapping[str, Any]]) -> list[KernelSpec]:
    """Coerce dicts to KernelSpec (unknown keys are an error, so typos do not pass silently)."""
    names = {f.name for f in fields(KernelSpec)}
    specs = []
    for k in kernels:
        if isinstance(k, KernelSpec):
            specs.append(k)
            continue
        unknown = set(k) - names
        if unknown:
            raise ValueError(f"unknown KernelSpec keys: {sorted(unknown)}")
        specs.append(KernelSpec(**k))
    return specs


def spec_totals(kernels: Iterable[KernelSpec | Mapping[str, Any]]) -> dict[str, float]:
    """Expected total time per op type in µs (what a reader must find)."""
    totals: dict[str, float] = defaultdict(float)
    for s in as_specs(kernels):
        totals[s.op_type] += round(s.count * s.duration_us * _NS_PER_US) / _NS_PER_US
    return dict(totals)


def expand_launches(kernels: Iterable[KernelSpec | Mapping[str, Any]], *, seed: int = 0,
                    start_ns: int = _BASE_NS) -> list[Launch]:
    """Spread every spec's launches over one timeline, as a model's layers interleave."""
    rng = random.Random(seed)
    specs = as_specs(kernels)
    order = sorted(
        ((j + 0.5) / s.count, i, j) for i, s in enumerate(specs) for j in range(s.count)
    )
    durations = {i: _launch_durations(s, rng) for i, s in enumerate(specs)}
    launches: list[Launch] = []
    clock = start_ns
    for _, i, j in order:
        spec = specs[i]
        wait = 0 if not launches else _jittered_ns(spec.wait_us, 0.2, rng)
        start = clock + wait
        dur = durations[i][j]
        launches.append(Launch(spec, j, start, dur, wait, _launch_pipe(spec, rng)))
        clock = start + dur
    return launches


def _launch_durations(spec: KernelSpec, rng: random.Random) -> list[int]:
    total = round(spec.count * spec.duration_us * _NS_PER_US)
    if spec.jitter <= 0 or spec.count == 1:
        base = [total // spec.count] * spec.count
    else:
        weights = [max(0.05, 1 + rng.gauss(0, spec.jitter)) for _ in range(spec.count)]
        scale = total / sum(weights)
        base = [max(1, int(w * scale)) for w in weights]
    base[-1] += total - sum(base)  # the last launch absorbs rounding: the sum is exact
    return base


def _jittered_ns(us: float, rel: float, rng: random.Random) -> int:
    return max(0, round(us * _NS_PER_US * (1 + rng.uniform(-rel, rel))))


_DEFAULT_PIPE = {
    "cube": {"aic_cube": 0.62, "aic_mte1": 0.35, "aic_mte2": 0.41, "aic_fixpipe": 0.18, "aic_scalar": 0.09},
    "vector": {"aiv_vec": 0.48, "aiv_mte2": 0.37, "aiv_mte3": 0.21, "aiv_scalar": 0.12},
}


def unit_sides(task_type: str) -> tuple[str, ...]:
    """Which sub-cores ran a unit: ("cube",), ("vector",), both, or none (AI CPU, comm ...)."""
    t = task_type.upper()
    if t in ("AI_CORE", "CUBE"):
        return ("cube",)
    if t in ("AI_VECTOR_CORE", "VECTOR"):
        return ("vector",)
    if t in ("MIX_AIC", "MIX_AIV", "MIX"):
        return ("cube", "vector")
    return ()


def _launch_pipe(spec: KernelSpec, rng: random.Random) -> dict[str, float]:
    ratios: dict[str, float] = {}
    for side in unit_sides(spec.task_type):
        ratios.update(_DEFAULT_PIPE[side])
    ratios.update(spec.pipe)
    return {k: min(1.0, max(0.0, round(v * (1 + rng.uniform(-0.03, 0.03)), 3))) for k, v in ratios.items()}


# ------------------------------------------------------------------------------------------------
# Names and small helpers
# ------------------------------------------------------------------------------------------------


def _stamp(ns: int, digits: int = 14) -> str:
    """A YYYYMMDDhhmmss[fff] stamp from epoch ns (UTC), as profilers put into directory names."""
    t = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
    text = t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"
    return text[:digits]


def _letters(rng: random.Random, n: int = 16) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(n))


def _producer_dir(out: Path | str, pattern: str, make_name) -> Path:
    out = Path(out)
    target = out if re.search(pattern, out.name) else out / make_name()
    target.mkdir(parents=True, exist_ok=True)
    return target


def _us_text(ns: int) -> str:
    """µs with 3 decimals from integer ns, exact (floats lose ~0.25 µs at epoch magnitudes)."""
    return f"{ns // _NS_PER_US}.{ns % _NS_PER_US:03d}"


def _fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def _quoted(shape: str) -> str:
    # The profilers store shapes with literal double quotes; csv then doubles them: """1,2""".
    return f'"{shape}"'


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]], *, crlf: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\r\n" if crlf else "\n")
        w.writerow(header)
        w.writerows(rows)


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")


# ------------------------------------------------------------------------------------------------
# op_summary / kernel_details rows
# ------------------------------------------------------------------------------------------------

_PMU_HEADER = (
    "aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)", "aic_mac_ratio", "aic_scalar_time(us)",
    "aic_scalar_ratio", "aic_mte1_time(us)", "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio",
    "aic_fixpipe_time(us)", "aic_fixpipe_ratio", "aic_icache_miss_rate", "aiv_time(us)", "aiv_total_cycles",
    "aiv_vec_time(us)", "aiv_vec_ratio", "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
    "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio", "aiv_icache_miss_rate", "cube_utilization(%)",
)
#: op_summary PMU pipe columns -> PIPE_KEYS (``mac`` in msprof is ``cube`` in msOpProf).
_PMU_PIPES = {
    "aic": (("mac", "aic_cube"), ("scalar", "aic_scalar"), ("mte1", "aic_mte1"), ("mte2", "aic_mte2"),
            ("fixpipe", "aic_fixpipe")),
    "aiv": (("vec", "aiv_vec"), ("scalar", "aiv_scalar"), ("mte2", "aiv_mte2"), ("mte3", "aiv_mte3")),
}


def _pmu_cells(launch: Launch) -> list[str]:
    sides = unit_sides(launch.spec.task_type)
    if not sides:
        return ["N/A"] * len(_PMU_HEADER)
    cells: list[str] = []
    for prefix, side in (("aic", "cube"), ("aiv", "vector")):
        active = side in sides
        busy_us = launch.duration_us * 0.94 if active else 0.0
        cells += [_fmt(busy_us), str(round(busy_us * _FREQ_MHZ * max(1, launch.spec.block_dim))) if active else "0"]
        for _, key in _PMU_PIPES[prefix]:
            ratio = launch.pipe.get(key, 0.0) if active else 0.0
            cells += [_fmt(ratio * busy_us), _fmt(ratio)]
        cells.append(_fmt(0.002) if active else "0.0")
    cells.append(_fmt(launch.pipe.get("aic_cube", 0.0) * 100 if "cube" in sides else 0.0))
    return cells


_BASE_HEADER = ("Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
                "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim", "Mix Block Dim",
                "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                "Output Data Types", "Output Formats", "Context ID")


def _summary_row(launch: Launch, task_id: int, first: bool, pmu: bool) -> list[str]:
    s = launch.spec
    wait = "0" if first else f"{launch.wait_ns / _NS_PER_US:.6f}"
    start = _us_text(launch.start_ns) + "\t"  # msprof appends a TAB to start times
    dur = _fmt(launch.duration_us)
    if s.is_communication:
        row = [_UINT32_MAX, "N/A", "N/A", s.name if s.count == 1 else f"{s.name}_{launch.index}_1", s.op_type,
               "N/A", s.task_type, start, dur, wait, "0"] + ["N/A"] * 9
        return row + (["N/A"] * len(_PMU_HEADER) if pmu else [])
    mix = s.task_type.upper().startswith("MIX")
    row = [_UINT32_MAX, str(task_id), "2", s.name, s.op_type, s.op_state, s.task_type, start, dur, wait,
           str(s.block_dim), str(s.mix_block_dim), "NO",
           _quoted(s.input_shapes), s.input_dtypes, s.input_formats,
           _quoted(s.output_shapes), s.output_dtypes, s.output_formats, "0" if mix else "N/A"]
    return row + (_pmu_cells(launch) if pmu else [])


def _summary_rows(launches: Sequence[Launch], pmu: bool) -> list[list[str]]:
    return [_summary_row(l, 11000 + i, i == 0, pmu) for i, l in enumerate(launches)]


def _op_statistic_rows(launches: Sequence[Launch]) -> list[list[str]]:
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for l in launches:
        if not l.spec.is_communication:
            groups[(l.spec.op_type, l.spec.task_type)].append(l.duration_us)
    total = sum(sum(v) for v in groups.values()) or 1.0
    rows = []
    for (op_type, unit), d in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        rows.append([op_type, unit, str(len(d)), _fmt(sum(d)), _fmt(min(d)), _fmt(sum(d) / len(d)),
                     _fmt(max(d)), _fmt(100 * sum(d) / total)])
    return rows


_OP_STAT_HEADER = ("OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                   "Max Time(us)", "Ratio(%)")


# ------------------------------------------------------------------------------------------------
# torch_npu text
# ------------------------------------------------------------------------------------------------

#: torch_npu text variants: what the real files of each period look like (FORMATS.md §4.3).
TORCH_NPU_VARIANTS: dict[str, dict[str, Any]] = {
    "2025-01": {"device_col": False, "crlf": True, "block": ("Block Dim", "Mix Block Dim"), "comm": "HCCL",
                "versions": {}},
    "2025-11": {"device_col": True, "crlf": False, "block": ("Block Dim", "Mix Block Dim"), "comm": "COMMUNICATION",
                "versions": {"torch_npu_version": "2.7.1", "cann_version": "8.3.RC1"}},
    "2026": {"device_col": True, "crlf": False, "block": ("Block Num", "Mix Block Num"), "comm": "COMMUNICATION",
             "versions": {"torch_npu_version": "2.8.0", "cann_version": "8.5.0"}},
}
_KD_RENAME = {"Op Name": "Name", "OP Type": "Type", "Task Type": "Accelerator Core",
              "Task Start Time(us)": "Start Time(us)", "Task Duration(us)": "Duration(us)",
              "Task Wait Time(us)": "Wait Time(us)"}
_LEVEL0_HEADER = ("Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)")


def _torch_npu_dirname(rng: random.Random) -> str:
    return f"localhost.localdomain_{rng.randint(10000, 4000000)}_{_stamp(_BASE_NS, 17)}_ascend_pt"


def _rng(seed: int, kind: str) -> random.Random:
    """A generator per writer kind: one seed gives each producer its own folder letters and ids."""
    return random.Random(f"{seed}:{kind}")


def write_torch_npu_text(out: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *,
                         level: str = "Level2", variant: str = "2025-11", pmu: bool = True, step: int = 1,
                         rank: int | None = 0, device_id: int = 0, seed: int = 0) -> Path:
    """Write a torch_npu ``*_ascend_pt`` folder (kernel_details, op_statistic, step_trace_time, profiler_info).

    ``level``: Level0 (8 columns, no unit, no op_statistic), Level1 or Level2 (all columns).
    ``variant``: a key of TORCH_NPU_VARIANTS (header spelling, line ending, versions).
    ``pmu=False`` leaves out the pipe columns (aic_metrics NONE). Returns the ``_ascend_pt`` dir.
    """
    rng = _rng(seed, "torch_npu")
    var = TORCH_NPU_VARIANTS[variant]
    root = _producer_dir(out, r"_ascend_pt$", lambda: _torch_npu_dirname(rng))
    launches = _with_comm_label(expand_launches(kernels, seed=seed), var["comm"])
    output = root / "ASCEND_PROFILER_OUTPUT"
    lead = ["Step Id"] + (["Device_id"] if var["device_col"] else [])
    lead_vals = [str(step)] + ([str(device_id)] if var["device_col"] else [])
    if level == "Level0":
        header = lead + list(_LEVEL0_HEADER) + [var["block"][0]]
        rows = [lead_vals + _level0_row(l, i == 0) for i, l in enumerate(launches)]
    else:
        header = lead + _kernel_details_header(var, pmu)
        rows = [lead_vals + r for r in _summary_rows(launches, pmu)]
    _write_csv(output / "kernel_details.csv", header, rows, crlf=var["crlf"])
    if level != "Level0":
        stat_lead = ["Device_id"] if var["device_col"] else []
        _write_csv(output / "op_statistic.csv", stat_lead + list(_OP_STAT_HEADER),
                   [([str(device_id)] if var["device_col"] else []) + r for r in _op_statistic_rows(launches)])
    _write_step_trace(output / "step_trace_time.csv", launches, step, var, device_id)
    _write_profiler_info(root, rank, level, pmu, var, "text")
    return root


def _with_comm_label(launches: list[Launch], label: str) -> list[Launch]:
    """Communication rows were ``HCCL`` up to early 2025 and ``COMMUNICATION`` since CANN 8.3."""
    out = []
    for l in launches:
        if l.spec.is_communication and l.spec.task_type != label:
            l = replace(l, spec=replace(l.spec, task_type=label))
        out.append(l)
    return out


def _kernel_details_header(var: Mapping[str, Any], pmu: bool) -> list[str]:
    header = []
    for col in _BASE_HEADER:
        if col == "Block Dim":
            col = var["block"][0]
        elif col == "Mix Block Dim":
            col = var["block"][1]
        header.append(_KD_RENAME.get(col, col))
    # torch_npu moves OP State in front of Accelerator Core exactly like op_summary; keep order.
    return header + (list(_PMU_HEADER) if pmu else [])


def _level0_row(launch: Launch, first: bool) -> list[str]:
    s = launch.spec
    unit = s.task_type if s.is_communication else "N/A"  # level0 cannot tell units apart
    name = s.name if not s.is_communication or s.count == 1 else f"{s.name}_{launch.index}_1"
    op_type = s.op_type if s.is_communication else "N/A"
    wait = "0" if first else _fmt(launch.wait_ns / _NS_PER_US)
    return [name, op_type, unit, _us_text(launch.start_ns) + "\t", _fmt(launch.duration_us), wait, "0"]


def _write_step_trace(path: Path, launches: Sequence[Launch], step: int, var: Mapping[str, Any],
                      device_id: int) -> None:
    compute = sum(l.duration_us for l in launches if not l.spec.is_communication)
    comm = sum(l.duration_us for l in launches if l.spec.is_communication)
    span = (launches[-1].start_ns + launches[-1].dur_ns - launches[0].start_ns) / _NS_PER_US if launches else 0.0
    free = max(0.0, span - compute - comm)
    header = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
              "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
    row = [str(step), _fmt(compute), _fmt(comm), "0.0", _fmt(comm), _fmt(free), _fmt(span), "0", _fmt(comm), "0.0"]
    if var["device_col"]:
        header, row = ["Device_id"] + header, [str(device_id)] + row
    _write_csv(path, header, [row], crlf=var["crlf"])


def _write_profiler_info(root: Path, rank: int | None, level: str, pmu: bool, var: Mapping[str, Any],
                         export: str) -> None:
    info: dict[str, Any] = {
        "config": {
            "common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                              "schedule": {"wait": 0, "active": 1, "warmup": 1, "repeat": 1, "skip_first": 10},
                              "record_shapes": True, "profile_memory": False, "with_stack": False,
                              "with_flops": False, "with_modules": False},
            "experimental_config": {"_profiler_level": level,
                                    "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION" if pmu else "ACL_AICORE_NONE",
                                    "_l2_cache": False, "_msprof_tx": False, "_data_simplification": True,
                                    "_export_type": [export] if var["device_col"] else export},
        },
        "start_info": {"syscnt_enable": True, "freq": 100},
        "end_info": {"collectionTimeEnd": _BASE_NS + 10**9},
    }
    info.update(var["versions"])
    info["rank_id"] = (str(rank) if var["device_col"] else rank) if rank is not None else -1
    name = "profiler_info.json" if rank is None else f"profiler_info_{rank}.json"
    _write_json(root / name, info)
    _write_json(root / "profiler_metadata.json", {"ENV_VARIABLES": {"ASCEND_LAUNCH_BLOCKING": ""}})


def write_torch_npu_job(out: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *, ranks: int = 8,
                        slow_rank: int | None = None, slow_factor: float = 1.5, allreduce_us: float = 200.0,
                        allreduces: int = 4, transfer_mb: float = 64.0, level: str = "Level1",
                        variant: str = "2025-11", seed: int = 0) -> list[Path]:
    """Write a data-parallel job: one torch_npu ``*_ascend_pt`` folder per rank under ``out`` (returned in rank order).

    Every rank runs the same compute ``kernels`` followed, ``allreduces`` times a step, by an AllReduce of
    ``transfer_mb`` that takes ``allreduce_us`` to transfer. ``slow_rank`` computes ``slow_factor`` x longer;
    its peers wait for it inside the AllReduce (their AllReduce lasts the difference longer), so device
    time is nearly equal on every rank and only computing tells the slow rank. Each rank also gets the
    communication.json torch_npu writes at Level1 (transit / wait / idle per op, HCCS bandwidth).
    """
    out = Path(out)
    specs = [s for s in as_specs(kernels) if not s.is_communication]
    compute = sum(s.count * s.duration_us for s in specs)
    slowest = compute * (slow_factor if slow_rank is not None else 1.0)
    rng = _rng(seed, "torch_npu_job")
    stamp = _stamp(_BASE_NS, 17)
    folders = []
    for rank in range(ranks):
        factor = slow_factor if rank == slow_rank else 1.0
        wait_us = (slowest - compute * factor) / allreduces
        scaled = [replace(s, duration_us=s.duration_us * factor) for s in specs]
        comm = KernelSpec(name="hcom_allReduce__586_0_1", op_type="hcom_allReduce_", task_type="HCCL",
                          duration_us=allreduce_us + wait_us, count=allreduces, block_dim=0)
        root = out / f"node{rank // 8}_{rng.randint(10000, 4000000)}_{stamp}_ascend_pt"
        write_torch_npu_text(root, scaled + [comm], level=level, variant=variant, rank=rank, device_id=rank % 8,
                             seed=seed)
        _write_communication(root / "ASCEND_PROFILER_OUTPUT" / "communication.json", allreduces, allreduce_us,
                             wait_us, transfer_mb)
        folders.append(root)
    return folders


def _write_communication(path: Path, ops: int, transfer_us: float, wait_us: float, transfer_mb: float) -> None:
    """communication.json of one step (FORMATS.md §4.4): each AllReduce's time split and its HCCS bandwidth."""
    transit_ms, wait_ms = transfer_us / 1000, wait_us / 1000
    link = {"Transit Size(MB)": transfer_mb, "Transit Time(ms)": transit_ms,
            "Bandwidth(GB/s)": round(transfer_mb / transit_ms, 4) if transit_ms else 0,
            "Large Packet Ratio": 0.0, "Size Distribution": {}}
    empty = {"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0, "Large Packet Ratio": 0,
             "Size Distribution": {}}
    collective = {
        f"hcom_allReduce__586_{i}_1@17522688603477080586": {
            "Communication Time Info": {
                "Start Timestamp(us)": _BASE_NS / 1000, "Elapse Time(ms)": transit_ms + wait_ms,
                "Transit Time(ms)": transit_ms, "Wait Time(ms)": wait_ms, "Synchronization Time(ms)": wait_ms,
                "Idle Time(ms)": 0.0, "Wait Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4),
                "Synchronization Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4)},
            "Communication Bandwidth Info": {"RDMA": dict(empty), "HCCS": dict(link), "PCIE": dict(empty),
                                             "SDMA": dict(link), "SIO": dict(empty)}}
        for i in range(ops)}
    _write_json(path, {"step1": {"p2p": {}, "collective": collective}})


# ------------------------------------------------------------------------------------------------
# System msprof text (PROF_*)
# ------------------------------------------------------------------------------------------------


def _prof_dirname(rng: random.Random) -> str:
    return f"PROF_000001_{_stamp(_BASE_NS, 17)}_{_letters(rng)}"


def write_op_summary(out: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *,
                     chip: str = "Ascend910B1", layout: str = "cann8", block_header: str = "Block Dim",
                     pmu: bool = True, slices: int = 1, device_id: int = 0, seed: int = 0,
                     compile_us: float | None = None) -> Path:
    """Write a system msprof ``PROF_*`` tree: op_summary (+ op_statistic) and device_N/info.json.N.

    ``layout``: ``cann8`` (``mindstudio_profiler_output/op_summary_<ts>.csv``) or ``cann7``
    (``device_N/summary/op_summary_<dev>_1_<ts>.csv``). ``block_header``: ``Block Dim`` (CANN ≤ 8.3)
    or ``Block Num`` (2026, with ``Mix Block Num``). ``slices`` > 1 splits the rows into
    ``op_summary_slice_<k>_<ts>.csv`` files. ``compile_us`` adds an api_statistic CSV whose ``opCompile``
    row takes that long (online compilation on the host). Returns the ``PROF_*`` dir.
    """
    rng = _rng(seed, "prof")
    root = _producer_dir(out, r"^PROF_\d{6}_\d{17}_\w+$", lambda: _prof_dirname(rng))
    launches = _with_comm_label(expand_launches(kernels, seed=seed), "COMMUNICATION")
    header = ["Device_id"] + _summary_header(block_header, pmu)
    rows = [[str(device_id)] + r for r in _summary_rows(launches, pmu)]
    ts = _stamp(_BASE_NS, 14)
    if layout == "cann8":
        folder, stem, stat = root / "mindstudio_profiler_output", "op_summary", f"op_statistic_{ts}.csv"
    elif layout == "cann7":
        folder, stem, stat = root / f"device_{device_id}" / "summary", f"op_summary_{device_id}_1", \
            f"op_statistic_{device_id}_1_{ts}.csv"
    else:
        raise ValueError(f"layout must be 'cann8' or 'cann7', not {layout!r}")
    _write_sliced(folder, stem, ts, header, rows, slices)
    _write_csv(folder / stat, ["Device_id"] + list(_OP_STAT_HEADER),
               [[str(device_id)] + r for r in _op_statistic_rows(launches)])
    if compile_us is not None:
        calls = max(1, round(compile_us / 2000))
        _write_csv(folder / f"api_statistic_{ts}.csv", list(API_STATISTIC_HEADER),
                   [["host", "acl", "opCompile", _fmt(compile_us), str(calls), _fmt(compile_us / calls), "0", "0", "0"],
                    ["host", "runtime", "KernelLaunch", _fmt(len(launches) * 5.0), str(len(launches)), "5.000",
                     "4.000", "9.000", "1.000"]])
    write_device_info(root, chip, device_id=device_id)
    return root


#: api_statistic header (FORMATS.md §3.4).
API_STATISTIC_HEADER = ("Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                        "Variance")


def _summary_header(block_header: str, pmu: bool) -> list[str]:
    mix = "Mix Block Num" if block_header == "Block Num" else "Mix Block Dim"
    cols = [block_header if c == "Block Dim" else mix if c == "Mix Block Dim" else c for c in _BASE_HEADER]
    return cols + (list(_PMU_HEADER) if pmu else [])


def _write_sliced(folder: Path, stem: str, ts: str, header: Sequence[str], rows: list[list[str]], slices: int) -> None:
    if slices <= 1:
        _write_csv(folder / f"{stem}_{ts}.csv", header, rows)
        return
    per = -(-len(rows) // slices)
    for k in range(slices):
        _write_csv(folder / f"{stem}_slice_{k}_{ts}.csv", header, rows[k * per:(k + 1) * per])


def write_device_info(prof_dir: Path | str, chip: str, *, device_id: int = 0) -> Path:
    """Write ``device_N/info.json.N`` with the chip's AI Core / AI Vector counts (24 / 48 for a chip
    CHIP_CORES does not list)."""
    aic, aiv = CHIP_CORES.get(chip, (24, 48))
    info = {"jobInfo": "NA", "devices": str(device_id), "DeviceInfo": [{
        "id": device_id, "env_type": 3, "ctrl_cpu_id": "ARMv8_Cortex_A55", "ctrl_cpu_core_num": 1,
        "ai_cpu_core_num": 6, "ai_core_num": aic, "aiv_num": aiv, "hwts_frequency": "50",
        "aic_frequency": str(_FREQ_MHZ), "aiv_frequency": str(_FREQ_MHZ)}],
        "platform_version": "5", "pid": "1000"}
    path = Path(prof_dir) / f"device_{device_id}" / f"info.json.{device_id}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------
# SQLite exports (msprof_*.db, ascend_pytorch_profiler*.db)
# ------------------------------------------------------------------------------------------------

#: COMPUTE_TASK_INFO column sets over time (FORMATS.md §3.6): block_dim -> blockDim -> blockNum.
DB_SCHEMAS: dict[str, tuple[str, ...]] = {
    "2023": ("name", "globalTaskId", "block_dim", "mixBlockDim", "taskType", "opType", "inputFormats",
             "inputDataTypes", "inputShapes", "outputFormats", "outputDataTypes", "outputShapes"),
    "2025": ("name", "globalTaskId", "blockDim", "mixBlockDim", "taskType", "opType", "inputFormats",
             "inputDataTypes", "inputShapes", "outputFormats", "outputDataTypes", "outputShapes", "attrInfo",
             "waitNs"),
    "2026": ("name", "globalTaskId", "blockNum", "mixBlockNum", "taskType", "opType", "inputFormats",
             "inputDataTypes", "inputShapes", "outputFormats", "outputDataTypes", "outputShapes", "attrInfo",
             "opState", "hf32Eligible"),
}
_INTERNED = {"name", "taskType", "opType", "inputFormats", "inputDataTypes", "inputShapes", "outputFormats",
             "outputDataTypes", "outputShapes", "attrInfo", "opState", "hf32Eligible"}
_HW_TASK_TYPE = {"AI_CORE": "KERNEL_AICORE", "AI_VECTOR_CORE": "KERNEL_AIVEC", "AI_CPU": "KERNEL_AICPU"}
_DB_TABLES = (
    "CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY,value TEXT)",
    "CREATE TABLE TASK (startNs INTEGER,endNs INTEGER,deviceId INTEGER,connectionId INTEGER,globalTaskId INTEGER,"
    "globalPid INTEGER,taskType INTEGER,contextId INTEGER,streamId INTEGER,taskId INTEGER,modelId INTEGER, "
    "depth integer)",
    "CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER,name INTEGER,value NUMERIC)",
    "CREATE TABLE COMMUNICATION_OP (opName INTEGER,startNs INTEGER,endNs INTEGER,connectionId INTEGER,"
    "groupName INTEGER,opId INTEGER PRIMARY KEY,relay INTEGER,retry INTEGER,dataType INTEGER,algType INTEGER,"
    "count NUMERIC,opType INTEGER, waitNs INTEGER)",
    "CREATE TABLE COMMUNICATION_TASK_INFO (name INTEGER,globalTaskId INTEGER,taskType INTEGER,planeId INTEGER,"
    "groupName INTEGER,notifyId INTEGER,rdmaType INTEGER,srcRank INTEGER,dstRank INTEGER,transportType INTEGER,"
    "size INTEGER,dataType INTEGER,linkType INTEGER,opId INTEGER)",
    "CREATE TABLE NPU_INFO (id INTEGER,name TEXT)",
    "CREATE TABLE AICORE_FREQ (deviceId INTEGER,timestampNs NUMERIC,freq INTEGER)",
    "CREATE TABLE SESSION_TIME_INFO (startTimeNs INTEGER,endTimeNs INTEGER)",
    "CREATE TABLE META_DATA (name TEXT,value TEXT)",
)
_TORCH_TABLES = (
    "CREATE TABLE PYTORCH_API (startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, name INTEGER, "
    "sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, "
    "type INTEGER, depth integer)",
    "CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER)",
    "CREATE TABLE RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER)",
)
#: TASK_PMU_INFO names (no unit suffix, times in ns) -> PIPE_KEYS.
_DB_PMU = {"aic_mac_ratio": "aic_cube", "aic_scalar_ratio": "aic_scalar", "aic_mte1_ratio": "aic_mte1",
           "aic_mte2_ratio": "aic_mte2", "aic_fixpipe_ratio": "aic_fixpipe", "aiv_vec_ratio": "aiv_vec",
           "aiv_scalar_ratio": "aiv_scalar", "aiv_mte2_ratio": "aiv_mte2", "aiv_mte3_ratio": "aiv_mte3"}


class _Strings:
    """STRING_IDS interning, as the msprof DB writer does for every text column."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, value: str) -> int:
        return self.ids.setdefault(value, len(self.ids))


def write_msprof_db(path: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *, schema: str = "2026",
                    chip: str = "Ascend910B", pmu: bool = True, device_id: int = 0, seed: int = 0) -> Path:
    """Write a system msprof DB export (TASK ⋈ COMPUTE_TASK_INFO ⋈ STRING_IDS, TASK_PMU_INFO, COMMUNICATION_OP).

    ``path``: a ``.db`` file, or a directory (a ``PROF_*`` dir is created in it unless it is one,
    and ``msprof_<ts>.db`` written there). ``schema``: a key of DB_SCHEMAS. Returns the DB file.
    """
    rng = _rng(seed, "prof")
    path = Path(path)
    if path.suffix != ".db":
        path = _producer_dir(path, r"^PROF_\d{6}_\d{17}_\w+$", lambda: _prof_dirname(rng)) / \
            f"msprof_{_stamp(_BASE_NS, 14)}.db"
    launches = expand_launches(kernels, seed=seed)
    _write_db(path, launches, schema=schema, chip=chip, pmu=pmu, device_id=device_id, torch=False)
    return path


def write_torch_npu_db(out: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *, schema: str = "2025",
                       level: str = "Level1", chip: str = "Ascend910B", pmu: bool = True, rank: int | None = 0,
                       device_id: int = 0, step: int = 1, seed: int = 0) -> Path:
    """Write a torch_npu ``*_ascend_pt`` folder exported as DB (``ascend_pytorch_profiler_<rank>.db``).

    Same workload rules as ``write_torch_npu_text`` (same seed -> same launches), so the text and
    DB exports of one workload give equal totals. Returns the DB file
    (``<dir>/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db``).
    """
    rng = _rng(seed, "torch_npu")
    root = _producer_dir(out, r"_ascend_pt$", lambda: _torch_npu_dirname(rng))
    name = "ascend_pytorch_profiler.db" if rank is None else f"ascend_pytorch_profiler_{rank}.db"
    path = root / "ASCEND_PROFILER_OUTPUT" / name
    launches = expand_launches(kernels, seed=seed)
    _write_db(path, launches, schema=schema, chip=chip, pmu=pmu, device_id=device_id, torch=True, step=step,
              rank=rank)
    variant = dict(TORCH_NPU_VARIANTS["2025-11"])
    _write_profiler_info(root, rank, level, pmu, variant, "db")
    return path


def _write_db(path: Path, launches: Sequence[Launch], *, schema: str, chip: str, pmu: bool, device_id: int,
              torch: bool, step: int = 1, rank: int | None = None) -> None:
    columns = DB_SCHEMAS[schema]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    con = sqlite3.connect(path)
    try:
        strings = _Strings()
        for ddl in _DB_TABLES + (_TORCH_TABLES if torch else ()):
            con.execute(ddl)
        con.execute(f"CREATE TABLE COMPUTE_TASK_INFO ({', '.join(_col_ddl(c) for c in columns)})")
        tasks, compute, pmu_rows, comm_ops = _db_rows(launches, columns, strings, pmu, device_id)
        con.executemany("INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tasks)
        con.executemany(f"INSERT INTO COMPUTE_TASK_INFO VALUES ({','.join('?' * len(columns))})", compute)
        con.executemany("INSERT INTO TASK_PMU_INFO VALUES (?,?,?)", pmu_rows)
        con.executemany("INSERT INTO COMMUNICATION_OP VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", comm_ops)
        _write_db_metadata(con, launches, chip, device_id, torch, step, rank)
        con.executemany("INSERT INTO STRING_IDS VALUES (?,?)", [(i, v) for v, i in strings.ids.items()])
        con.commit()
    finally:
        con.close()


def _col_ddl(col: str) -> str:
    return f"{col} INTEGER PRIMARY KEY" if col == "globalTaskId" else f"{col} INTEGER"


def _db_rows(launches: Sequence[Launch], columns: Sequence[str], strings: _Strings, pmu: bool, device_id: int):
    tasks, compute, pmu_rows, comm_ops = [], [], [], []
    gid = 0
    for i, l in enumerate(launches):
        s = l.spec
        end = l.start_ns + l.dur_ns
        if s.is_communication:
            name = s.name if s.count == 1 else f"{s.name}_{l.index}_1"
            comm_ops.append((strings(name), l.start_ns, end, 5000 + i, strings("group_0"), len(comm_ops) + 1, 0, 0,
                             4, strings("RING-HD"), 1 << 20, strings(s.op_type), l.wait_ns))
            # the comm op's own device tasks (Notify Wait / SDMA) live in TASK without compute info
            tasks.append((l.start_ns, end, device_id, 5000 + i, gid, 1000, strings("SDMA"), 0, 9, 60000 + i,
                          int(_UINT32_MAX), 0))
            gid += 1
            continue
        tasks.append((l.start_ns, end, device_id, 2000 + i, gid, 1000,
                      strings(_HW_TASK_TYPE.get(s.task_type, s.task_type)), int(_UINT32_MAX), 2, 11000 + i,
                      int(_UINT32_MAX), 0))
        compute.append(tuple(_compute_value(c, l, gid, strings) for c in columns))
        if pmu:
            pmu_rows += [(gid, strings(name), l.pipe[key]) for name, key in _DB_PMU.items() if key in l.pipe]
        gid += 1
        if i % 7 == 3:  # a synchronisation task that has no compute info, as in real TASK tables
            tasks.append((end, end + 20, device_id, 2000 + i, gid, 1000, strings("EVENT_RECORD"), int(_UINT32_MAX),
                          2, 11000 + i, int(_UINT32_MAX), 0))
            gid += 1
    return tasks, compute, pmu_rows, comm_ops


def _compute_value(col: str, l: Launch, gid: int, strings: _Strings) -> Any:
    s = l.spec
    values = {"name": s.name, "globalTaskId": gid, "block_dim": s.block_dim, "blockDim": s.block_dim,
              "blockNum": s.block_dim, "mixBlockDim": s.mix_block_dim, "mixBlockNum": s.mix_block_dim,
              "taskType": s.task_type, "opType": s.op_type, "inputFormats": s.input_formats,
              "inputDataTypes": s.input_dtypes, "inputShapes": _quoted(s.input_shapes),
              "outputFormats": s.output_formats, "outputDataTypes": s.output_dtypes,
              "outputShapes": _quoted(s.output_shapes), "attrInfo": "N/A", "waitNs": l.wait_ns,
              "opState": s.op_state, "hf32Eligible": "NO"}
    value = values[col]
    return strings(value) if col in _INTERNED else value


def _write_db_metadata(con: sqlite3.Connection, launches: Sequence[Launch], chip: str, device_id: int, torch: bool,
                       step: int, rank: int | None) -> None:
    start = launches[0].start_ns if launches else _BASE_NS
    end = launches[-1].start_ns + launches[-1].dur_ns if launches else _BASE_NS
    con.execute("INSERT INTO NPU_INFO VALUES (?,?)", (device_id, chip))
    con.execute("INSERT INTO AICORE_FREQ VALUES (?,?,?)", (device_id, start, _FREQ_MHZ))
    con.execute("INSERT INTO SESSION_TIME_INFO VALUES (?,?)", (start - 10**6, end + 10**6))
    con.executemany("INSERT INTO META_DATA VALUES (?,?)", [("SCHEMA_VERSION", "1.0.0")])
    if torch:
        con.execute("INSERT INTO STEP_TIME VALUES (?,?,?)", (step, start, end))
        con.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?,?)", (rank if rank is not None else -1, device_id))


# ------------------------------------------------------------------------------------------------
# msprof op (msOpProf) device output
# ------------------------------------------------------------------------------------------------

_PIPE_2025_03 = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),"
    "aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_mte3_time(us),"
    "aic_mte3_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,"
    "aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,"
    "aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate")
_PIPE_2025_12 = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),"
    "aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_mte3_time(us),"
    "aic_mte3_ratio,aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),"
    "aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),"
    "aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,"
    "aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate")
_PIPE_2026 = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_mte1_time(us),"
    "aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),"
    "aic_fixpipe_time(us),aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aic_scalar_time(us),"
    "aic_scalar_ratio,aic_scalar_single_time(us),aic_scalar_dual_time(us),aic_scalar_mte1_stall_time(us),"
    "aic_scalar_mte2_stall_time(us),aic_scalar_mte3_stall_time(us),aic_scalar_cube_stall_time(us),"
    "aic_scalar_wait_ib_time(us),aic_scalar_wait_time(us),aiv_time(us),aiv_total_cycles,aiv_vec_time(us),"
    "aiv_vec_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,"
    "aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate,aiv_scalar_time(us),aiv_scalar_ratio,aiv_scalar_single_time(us),"
    "aiv_scalar_dual_time(us),aiv_scalar_mte2_stall_time(us),aiv_scalar_mte3_stall_time(us),"
    "aiv_scalar_stall_by_ub_time(us),aiv_scalar_vector_stall_time(us),aiv_scalar_wait_ib_time(us),"
    "aiv_scalar_wait_time(us)")
_OTHER_METRICS_910B = {
    "ArithmeticUtilization": (
        "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_ratio,aic_cube_fp16_ratio,aic_cube_int8_ratio,"
        "aic_cube_fops,aic_cube_total_instr_number,aic_cube_fp_instr_number,aic_cube_int_instr_number,aiv_time(us),"
        "aiv_total_cycles,aiv_vec_ratio,aiv_vec_fp32_ratio,aiv_vec_fp16_ratio,aiv_vec_int32_ratio,aiv_vec_int16_ratio,"
        "aiv_vec_misc_ratio,aiv_vec_fops"),
    "L2Cache": (
        "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_write_cache_hit,aic_write_cache_miss_allocate,"
        "aic_r0_read_cache_hit,aic_r0_read_cache_miss_allocate,aic_r1_read_cache_hit,aic_r1_read_cache_miss_allocate,"
        "aic_write_hit_rate(%),aic_read_hit_rate(%),aic_total_hit_rate(%),aiv_time(us),aiv_total_cycles,"
        "aiv_write_cache_hit,aiv_write_cache_miss_allocate,aiv_r0_read_cache_hit,aiv_r0_read_cache_miss_allocate,"
        "aiv_r1_read_cache_hit,aiv_r1_read_cache_miss_allocate,aiv_write_hit_rate(%),aiv_read_hit_rate(%),"
        "aiv_total_hit_rate(%)"),
    "Memory": (
        "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_l1_read_bw(GB/s),aic_l1_write_bw(GB/s),"
        "aic_main_mem_read_bw(GB/s),aic_main_mem_write_bw(GB/s),aic_mte1_instructions,aic_mte1_ratio,"
        "aic_mte2_instructions,aic_mte2_ratio,aic_mte3_instructions,aic_mte3_ratio,aiv_time(us),aiv_total_cycles,"
        "aiv_ub_to_gm_bw(GB/s),aiv_gm_to_ub_bw(GB/s),aiv_main_mem_read_bw(GB/s),aiv_main_mem_write_bw(GB/s),"
        "aiv_mte2_instructions,aiv_mte2_ratio,aiv_mte3_instructions,aiv_mte3_ratio,read_main_memory_datas(KB),"
        "write_main_memory_datas(KB),GM_to_L1_datas(KB),GM_to_L1_bw_usage_rate(%),L1_to_GM_datas(KB)(estimate),"
        "L1_to_GM_bw_usage_rate(%)(estimate),L0C_to_L1_datas(KB),L0C_to_L1_bw_usage_rate(%),L0C_to_GM_datas(KB),"
        "L0C_to_GM_bw_usage_rate(%),GM_to_UB_datas(KB),GM_to_UB_bw_usage_rate(%),UB_to_GM_datas(KB),"
        "UB_to_GM_bw_usage_rate(%)"),
    "MemoryL0": (
        "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_l0a_read_bw(GB/s),aic_l0a_write_bw(GB/s),"
        "aic_l0b_read_bw(GB/s),aic_l0b_write_bw(GB/s),aic_l0c_read_bw_cube(GB/s),aic_l0c_write_bw_cube(GB/s),"
        "aiv_time(us),aiv_total_cycles"),
    "MemoryUB": (
        "block_id,sub_block_id,aic_time(us),aic_total_cycles,aiv_time(us),aiv_total_cycles,"
        "aiv_ub_read_bw_vector(GB/s),aiv_ub_write_bw_vector(GB/s),aiv_ub_read_bw_scalar(GB/s),"
        "aiv_ub_write_bw_scalar(GB/s)"),
    "ResourceConflictRatio": (
        "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_wait_ratio,aic_mte1_wait_ratio,"
        "aic_mte2_wait_ratio,aic_mte3_wait_ratio,aiv_time(us),aiv_total_cycles,aiv_vec_total_cflt_ratio,"
        "aiv_vec_bankgroup_cflt_ratio,aiv_vec_bank_cflt_ratio,aiv_vec_resc_cflt_ratio,aiv_vec_mte_cflt_ratio,"
        "aiv_vec_wait_ratio,aiv_mte1_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio"),
}
#: PipeUtilization header generations (FORMATS.md §1.5) and their missing-value token.
MSOPPROF_GENERATIONS: dict[str, tuple[str, str]] = {
    "2025-03": (_PIPE_2025_03, "N/A"),
    "2025-12": (_PIPE_2025_12, "NA"),
    "2026": (_PIPE_2026, "NA"),
}
_OP_BASIC_HEADER = "Op Name,Op Type,Task Duration(us),Block Dim,Mix Block Dim,Device Id,Pid,Current Freq,Rated Freq"
_MSOPPROF_TYPE = {"AI_CORE": "cube", "AI_VECTOR_CORE": "vector", "MIX_AIC": "mix", "MIX_AIV": "mix",
                  "CUBE": "cube", "VECTOR": "vector", "MIX": "mix"}


def _opprof_dirname(rng: random.Random) -> str:
    return f"OPPROF_{_stamp(_BASE_NS, 14)}_{_letters(rng)}"


def _write_msopprof_csv(path: Path, header: str, rows: Iterable[Sequence[str]]) -> None:
    # msOpProf writes `element,` for every cell, header included: every line ends with a comma.
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [header + ","] + [",".join(r) + "," for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def write_msopprof_device(out: Path | str, kernel: KernelSpec | Mapping[str, Any] | Sequence[Any], *,
                          chip: str = "Ascend910B3", generation: str = "2026", imbalance: float = 1.0,
                          metrics: Sequence[str] = ("PipeUtilization", "ArithmeticUtilization", "L2Cache", "Memory",
                                                    "MemoryL0", "MemoryUB", "ResourceConflictRatio"),
                          freq_mhz: int = _FREQ_MHZ, device_id: int = 0, seed: int = 0) -> Path:
    """Write a ``msprof op`` device ``OPPROF_*`` directory for one kernel (or several: multi-op layout).

    ``kernel.task_type``: ``mix`` / ``cube`` / ``vector`` (or AI_CORE, AI_VECTOR_CORE, MIX_AIC ...);
    ``duration_us`` is the Task Duration; ``block_dim`` / ``mix_block_dim`` as launched; ``pipe``
    holds the mean ratios (``aic_cube``, ``aic_mte2``, ``aiv_vec`` ...). ``imbalance`` = slowest /
    fastest block busy time (1.0 = even). ``generation``: a key of MSOPPROF_GENERATIONS (header
    spelling and ``N/A`` vs ``NA``). A list of kernels, or ``count`` > 1, gives the multi-op
    layout ``<OpName>/<n>/`` with timestamped CSV names. Returns the ``OPPROF_*`` dir.
    """
    rng = _rng(seed, "opprof")
    kernels = as_specs(kernel if isinstance(kernel, (list, tuple)) else [kernel])
    root = _producer_dir(out, r"^OPPROF_\d{14}_[A-Z]{16}$", lambda: _opprof_dirname(rng))
    multi = len(kernels) > 1 or kernels[0].count > 1
    launches = expand_launches(kernels, seed=seed)
    per_op: dict[str, int] = defaultdict(int)
    for i, launch in enumerate(launches):
        if multi:
            n = per_op[launch.spec.name]
            per_op[launch.spec.name] += 1
            # each launch is dumped separately, some ms apart: distinct timestamp suffixes
            folder, suffix = root / launch.spec.name / str(n), "_" + _stamp(launch.start_ns + i * 37_000_000, 17)
        else:
            folder, suffix = root, ""
        _write_one_launch(folder, suffix, launch, chip=chip, generation=generation, imbalance=imbalance,
                          metrics=metrics, freq_mhz=freq_mhz, device_id=device_id, rng=rng)
    return root


def _write_one_launch(folder: Path, suffix: str, launch: Launch, *, chip: str, generation: str, imbalance: float,
                      metrics: Sequence[str], freq_mhz: int, device_id: int, rng: random.Random) -> None:
    spec = launch.spec
    op_type = _MSOPPROF_TYPE.get(spec.task_type.upper(), spec.task_type.lower())
    pipe_header, missing = MSOPPROF_GENERATIONS[generation]
    block_dim = max(1, spec.block_dim)
    mix = spec.mix_block_dim if op_type == "mix" else None
    pid = rng.randint(10000, 2000000)
    basic = [spec.name, op_type, f"{launch.duration_us:.6f}", str(block_dim), str(mix) if mix else missing,
             str(device_id), str(pid), str(freq_mhz), str(freq_mhz)]
    _write_msopprof_csv(folder / f"OpBasicInfo{suffix}.csv", _OP_BASIC_HEADER, [basic])
    rows = _block_rows(launch, op_type, block_dim, mix, imbalance, rng)
    for metric in metrics:
        header = pipe_header if metric == "PipeUtilization" else _OTHER_METRICS_910B[metric]
        cells = [_metric_cells(header.split(","), r, missing, freq_mhz, rng) for r in rows]
        _write_msopprof_csv(folder / f"{metric}{suffix}.csv", header, cells)
    info = [f"Op Name={spec.name}", f"Block Dim={block_dim}", f"Run Soc Version={chip}", f"Device Id={device_id}",
            f"Pid={pid}", f"Current Freq={freq_mhz}", f"Rated Freq={freq_mhz}"]
    if generation != "2025-03":
        info += ["Is MC2=0", "Is Lccl=0", "Has Simt=0"]
    (folder / "dump").mkdir(parents=True, exist_ok=True)
    (folder / "dump" / "op_basic_info.txt").write_text("\n".join(info) + "\n", encoding="ascii")


def _block_rows(launch: Launch, op_type: str, block_dim: int, mix: int | None, imbalance: float,
                rng: random.Random) -> list[dict[str, Any]]:
    """(block, sub-core) rows with a busy time each: the slowest block is the task's critical path."""
    subs = {"cube": ["cube0"], "vector": ["vector0"], "mix": ["cube0"] + [f"vector{i}" for i in range(
        max(1, (mix or block_dim) // block_dim))]}[op_type]
    slowest = launch.duration_us * 0.93
    factors = [1.0 / imbalance + (1 - 1.0 / imbalance) * b / max(1, block_dim - 1) for b in range(block_dim)]
    rng.shuffle(factors)
    rows = []
    for b, f in enumerate(factors):
        for sub in subs:
            side = "aic" if sub.startswith("cube") else "aiv"
            # in a mix kernel the cube sub-core of a vector-heavy kernel is mostly idle, and vice versa
            share = 1.0 if op_type != "mix" else _side_share(launch.pipe, side)
            rows.append({"block": b, "sub": sub, "side": side, "time": slowest * f * share * rng.uniform(0.985, 1.0),
                         "pipe": launch.pipe})
    return rows


def _side_share(pipe: Mapping[str, float], side: str) -> float:
    busy = {s: max([v for k, v in pipe.items() if k.startswith(s + "_")] or [0.0]) for s in ("aic", "aiv")}
    top = max(busy.values()) or 1.0
    return max(0.02, busy[side] / top)


def _metric_cells(header: Sequence[str], row: Mapping[str, Any], missing: str, freq_mhz: int,
                  rng: random.Random) -> list[str]:
    side, t = row["side"], row["time"]
    cells = []
    for col in header:
        if col == "block_id":
            cells.append(str(row["block"]))
        elif col == "sub_block_id":
            cells.append(row["sub"])
        elif col[:4] in ("aic_", "aiv_") and col[:3] != side:
            cells.append(missing)
        elif not col.startswith(("aic_", "aiv_")) and ("UB" in col) != (side == "aiv"):
            cells.append(missing)
        else:
            cells.append(_metric_value(col, row, t, freq_mhz, rng))
    return cells


def _metric_value(col: str, row: Mapping[str, Any], t: float, freq_mhz: int, rng: random.Random) -> str:
    name = col[4:] if col[:4] in ("aic_", "aiv_") else col
    if name == "time(us)":
        return f"{t:.6f}"
    if name == "total_cycles":
        return str(round(t * freq_mhz))
    pipe = re.fullmatch(r"(cube|vec|scalar|mte1|mte2|mte3|fixpipe)_(ratio|time\(us\))", name)
    if pipe:
        ratio = row["pipe"].get(f"{col[:3]}_{pipe.group(1)}", 0.0) * rng.uniform(0.97, 1.03)
        return f"{min(1.0, ratio):.6f}" if pipe.group(2) == "ratio" else f"{min(1.0, ratio) * t:.6f}"
    # a healthy kernel unless the spec says otherwise: few conflicts, an L2 that mostly hits
    if name.endswith("(%)") or "rate" in name:
        return f"{rng.uniform(80, 99):.6f}"
    if "cflt_ratio" in name:
        return f"{rng.uniform(0, 0.01):.6f}"
    if "ratio" in name:
        return f"{rng.uniform(0, 0.2):.6f}"
    if name.endswith("cache_hit"):
        return str(rng.randint(40000, 60000))
    if name.endswith("cache_miss_allocate"):
        return str(rng.randint(0, 4000))
    if "(GB/s)" in name:
        return f"{rng.uniform(1, 400):.6f}"
    if "(KB)" in name:
        return f"{rng.uniform(1, 20000):.6f}"
    if "time(us)" in name:
        return f"{t * rng.uniform(0, 0.2):.6f}"
    return str(rng.randint(0, 60000))


# ------------------------------------------------------------------------------------------------
# msprof op simulator output
# ------------------------------------------------------------------------------------------------

_SIM_PIPES = {"cube": ("SCALAR", "SCALARLDST", "CUBE", "MTE1", "MTE2", "FIXP", "FLOWCTRL"),
              "vector": ("SCALAR", "SCALARLDST", "VECTOR", "MTE2", "MTE3", "FLOWCTRL")}
_SIM_PID = {"SCALAR": 10, "SCALARLDST": 20, "VECTOR": 30, "CUBE": 40, "MTE1": 50, "MTE2": 60, "MTE3": 70,
            "FIXP": 80, "FLOWCTRL": 90, "ALL": 100, "CACHEMISS": 110}
_SIM_INSTR = {"ALL": ("BAR",), "SCALAR": ("ADD_XD_XN_XM", "MOV_XD_IMM"), "SCALARLDST": ("LD_XD_XN_IMM", "ST_XD_XN_IMM"),
              "VECTOR": ("VADD", "VMUL", "VCONV_F162F32"), "CUBE": ("MMAD",), "MTE1": ("LOAD_L1_TO_L0A",),
              "MTE2": ("MOV_OUT_TO_UB", "LOAD_OUT_TO_L1"), "MTE3": ("MOV_UB_TO_OUT",), "FIXP": ("FIX_L0C_TO_OUT",),
              "FLOWCTRL": ("JUMPC_XN_IMM", "SET_FLAG")}
_SIM_KEY = {"CUBE": "aic_cube", "MTE1": "aic_mte1", "FIXP": "aic_fixpipe", "VECTOR": "aiv_vec",
            "SCALAR": "scalar", "SCALARLDST": "scalar", "MTE2": "mte2", "MTE3": "aiv_mte3", "FLOWCTRL": None}


def write_msopprof_simulator(out: Path | str, kernel: KernelSpec | Mapping[str, Any], *, cores: int = 2,
                             schema: int = 2, freq_mhz: int = _FREQ_MHZ, seed: int = 0) -> Path:
    """Write a ``msprof op simulator`` ``OPPROF_*`` directory: per-core instr/code CSVs and trace.json.

    ``cores`` AI Cores are simulated (each with ``cubecore0`` for cube/mix and ``veccore0/1`` for
    vector/mix kernels). ``duration_us`` is the span of the slowest core; ``pipe`` ratios set
    each pipe's busy share of it. ``schema=1``: one trace.json per core with numeric pids (2025);
    ``schema=2``: one merged ``simulator/trace.json`` with string pids (2026). Returns the dir.
    """
    rng = _rng(seed, "opprof-simulator")
    spec = as_specs([kernel])[0]
    root = _producer_dir(out, r"^OPPROF_\d{14}_[A-Z]{16}$", lambda: _opprof_dirname(rng))
    op_type = _MSOPPROF_TYPE.get(spec.task_type.upper(), spec.task_type.lower())
    subs = {"cube": ["cubecore0"], "vector": ["veccore0", "veccore1"],
            "mix": ["cubecore0", "veccore0", "veccore1"]}[op_type]
    pipe = _launch_pipe(spec, rng)
    merged: list[dict[str, Any]] = []
    sim = root / "simulator"
    for c in range(cores):
        for sub in subs:
            core = f"core{c}.{sub}"
            span = spec.duration_us * (1.0 if c == 0 else rng.uniform(0.8, 0.98))
            events = _sim_events(core, sub, span, pipe, rng)
            _write_sim_csvs(sim / core, core, events, freq_mhz)
            if schema == 1:
                _write_json_compact(sim / core / "trace.json", _sim_trace_v1(events))
            else:
                merged += _sim_trace_v2_events(core, events)
    if schema == 2:
        _write_json_compact(sim / "trace.json", {"displayTimeUnit": "ns", "profilingType": "op", "schemaVersion": 2,
                                                 "traceEvents": merged})
    _write_summary_log(root / "dump" / "core0_summary_log", spec, cores, freq_mhz)
    return root


def _write_json_compact(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")


def _sim_events(core: str, sub: str, span: float, pipe: Mapping[str, float], rng: random.Random) -> list[dict]:
    """X events per pipe whose union covers ``ratio * span``; some overlap on a second issue slot."""
    side = "cube" if sub.startswith("cube") else "vector"
    prefix = "aic" if side == "cube" else "aiv"
    start = 6.4
    # a pipe barrier at each end, as kernels begin and end with one: the core span is exactly ``span``
    events = [{"pipe": "ALL", "name": "BAR", "ts": start, "dur": 0.001, "tid": 1, "pc": "0x1168b000"},
              {"pipe": "ALL", "name": "BAR", "ts": round(start + span - 0.001, 6), "dur": 0.001, "tid": 1,
               "pc": "0x1168b004"}]
    for name in _SIM_PIPES[side]:
        key = _SIM_KEY[name]
        key = f"{prefix}_{key}" if key in ("scalar", "mte2") else key
        ratio = pipe.get(key, 0.05) if key else 0.03
        busy, n = ratio * span, 8
        for i in range(n):
            seg = span / n
            dur = min(seg, busy / n)
            ts = start + i * seg + (seg - dur) * rng.random()
            instr = _SIM_INSTR[name][i % len(_SIM_INSTR[name])]
            events.append({"pipe": name, "name": instr, "ts": round(ts, 6), "dur": round(dur, 6), "tid": 1,
                           "pc": f"0x{0x1168b000 + 4 * (i + 16 * list(_SIM_PID).index(name)):x}"})
            if i % 3 == 0 and dur > 0:  # a second slot inside the first: the union must not count it twice
                events.append({"pipe": name, "name": instr, "ts": round(ts + dur / 4, 6), "dur": round(dur / 2, 6),
                               "tid": 2, "pc": events[-1]["pc"]})
    return events


def _write_sim_csvs(folder: Path, core: str, events: Sequence[Mapping[str, Any]], freq_mhz: int) -> None:
    per_pc: dict[tuple[str, str, str], list[int]] = {}
    for e in events:
        entry = per_pc.setdefault((e["name"], e["pc"], e["pipe"]), [0, 0])
        entry[0] += 1
        entry[1] += round(e["dur"] * freq_mhz)
    rows = sorted(((k, v) for k, v in per_pc.items()), key=lambda kv: -kv[1][1])
    _write_csv(folder / f"{core}_instr_exe.csv", ["instr", "addr", "pipe", "call_count", "cycles", "running_time(us)",
                                                  "detail"],
               [[k[0], k[1], k[2], str(v[0]), str(v[1]), "0.000000", "dtype:B64,XD:X1=0x0,IMM:0,"] for k, v in rows])
    _write_csv(folder / f"{core}_code_exe.csv", ["code", "call_count", "cycles", "running_time(us)"], [])


def _sim_x(e: Mapping[str, Any], pid: Any, tid: Any) -> dict[str, Any]:
    return {"args": {"code": "", "detail": "", "pc_addr": e["pc"]}, "cname": "good", "dur": e["dur"],
            "name": e["name"], "ph": "X", "pid": pid, "tid": tid, "ts": e["ts"]}


def _sim_trace_v1(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    meta = [{"args": {"name": p}, "name": "process_name", "ph": "M", "pid": _SIM_PID[p], "tid": 0}
            for p in sorted({e["pipe"] for e in events})]
    xs = [_sim_x(e, _SIM_PID[e["pipe"]], e["tid"]) for e in events]
    return {"displayTimeUnit": "ns", "profilingType": "op", "schemaVersion": 1, "traceEvents": meta + xs}


def _sim_trace_v2_events(core: str, events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    meta = [{"args": {"name": core}, "name": "process_name", "ph": "M", "pid": core}]
    return meta + [_sim_x(e, core, e["pipe"]) for e in events]


def _write_summary_log(path: Path, spec: KernelSpec, cores: int, freq_mhz: int) -> None:
    ticks = round(spec.duration_us * freq_mhz)
    lines = ["----------------------------- AiCore Summary Log -----------------------------", ""]
    for c in range(cores):
        lines += ["=" * 78, f"kernal total ticks : {ticks}", f"system total ticks : {ticks + 11869}", "=" * 78,
                  f"++++++++++++++++++++++core: {c}, start: 11869, tick: {ticks + 11870}, kernal: 0, blkID {c} of "
                  f"blkdim {max(cores, spec.block_dim)}, streamId 0, taskId 0, subtaskId 0, threadId 0, "
                  f"done++++++++++++++++++++++.", "", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="ascii")


# ------------------------------------------------------------------------------------------------
# Everything at once
# ------------------------------------------------------------------------------------------------


def write_all_formats(out: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *, seed: int = 0,
                      chip: str = "Ascend910B1", level: str = "Level2") -> dict[str, Path]:
    """Write one workload as torch_npu text, torch_npu DB, system msprof text and msprof DB.

    Returns ``{"torch-npu-text": dir, "torch-npu-db": dir, "msprof-text": PROF dir,
    "msprof-db": db file}`` under ``out/<format>/``; all four carry the same launches.
    """
    out = Path(out)
    specs = as_specs(kernels)
    return {
        "torch-npu-text": write_torch_npu_text(out / "torch-npu-text", specs, level=level, seed=seed),
        "torch-npu-db": write_torch_npu_db(out / "torch-npu-db", specs, level=level, chip=chip, seed=seed).parents[1],
        "msprof-text": write_op_summary(out / "msprof-text", specs, chip=chip, seed=seed),
        "msprof-db": write_msprof_db(out / "msprof-db", specs, chip=chip, seed=seed),
    }
