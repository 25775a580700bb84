"""The documented column headers of op_summary, kernel_details and op_statistic (FORMATS.md §3.2, §4.3), and their rows.

Tests and benchmarks that write these files by hand take their headers from here
(``KERNEL_DETAILS_HEADER``, ``OP_SUMMARY_HEADER``, ``KERNEL_DETAILS_TO_OP_SUMMARY``), so there is
one copy of each header, the one the writers use.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

from opprof_advisor.testing.files import fmt, quoted, us_text
from opprof_advisor.testing.spec import FREQ_MHZ, NS_PER_US, UINT32_MAX, Launch, unit_sides


PMU_HEADER = (
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
        return ["N/A"] * len(PMU_HEADER)
    cells: list[str] = []
    for prefix, side in (("aic", "cube"), ("aiv", "vector")):
        active = side in sides
        busy_us = launch.duration_us * 0.94 if active else 0.0
        cells += [fmt(busy_us), str(round(busy_us * FREQ_MHZ * max(1, launch.spec.block_dim))) if active else "0"]
        for _, key in _PMU_PIPES[prefix]:
            ratio = launch.pipe.get(key, 0.0) if active else 0.0
            cells += [fmt(ratio * busy_us), fmt(ratio)]
        cells.append(fmt(0.002) if active else "0.0")
    cells.append(fmt(launch.pipe.get("aic_cube", 0.0) * 100 if "cube" in sides else 0.0))
    return cells


BASE_HEADER = ("Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
                "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim", "Mix Block Dim",
                "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                "Output Data Types", "Output Formats", "Context ID")


def _summary_row(launch: Launch, task_id: int, first: bool, pmu: bool) -> list[str]:
    s = launch.spec
    wait = "0" if first else f"{launch.wait_ns / NS_PER_US:.6f}"
    start = us_text(launch.start_ns) + "\t"  # msprof appends a TAB to start times
    dur = fmt(launch.duration_us)
    if s.is_communication:
        row = [UINT32_MAX, "N/A", "N/A", s.name if s.count == 1 else f"{s.name}_{launch.index}_1", s.op_type,
               "N/A", s.task_type, start, dur, wait, "0"] + ["N/A"] * 9
        return row + (["N/A"] * len(PMU_HEADER) if pmu else [])
    mix = s.task_type.upper().startswith("MIX")
    row = [UINT32_MAX, str(task_id), "2", s.name, s.op_type, s.op_state, s.task_type, start, dur, wait,
           str(s.block_dim), str(s.mix_block_dim), "NO",
           quoted(s.input_shapes), s.input_dtypes, s.input_formats,
           quoted(s.output_shapes), s.output_dtypes, s.output_formats, "0" if mix else "N/A"]
    return row + (_pmu_cells(launch) if pmu else [])


def summary_rows(launches: Sequence[Launch], pmu: bool) -> list[list[str]]:
    return [_summary_row(l, 11000 + i, i == 0, pmu) for i, l in enumerate(launches)]


def op_statistic_rows(launches: Sequence[Launch]) -> list[list[str]]:
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for l in launches:
        if not l.spec.is_communication:
            groups[(l.spec.op_type, l.spec.task_type)].append(l.duration_us)
    total = sum(sum(v) for v in groups.values()) or 1.0
    rows = []
    for (op_type, unit), d in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        rows.append([op_type, unit, str(len(d)), fmt(sum(d)), fmt(min(d)), fmt(sum(d) / len(d)),
                     fmt(max(d)), fmt(100 * sum(d) / total)])
    return rows


OP_STAT_HEADER = ("OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                   "Max Time(us)", "Ratio(%)")


KD_RENAME = {"Op Name": "Name", "OP Type": "Type", "Task Type": "Accelerator Core",
              "Task Start Time(us)": "Start Time(us)", "Task Duration(us)": "Duration(us)",
              "Task Wait Time(us)": "Wait Time(us)"}


def variant_header(var: Mapping[str, Any], pmu: bool) -> list[str]:
    header = []
    for col in BASE_HEADER:
        if col == "Block Dim":
            col = var["block"][0]
        elif col == "Mix Block Dim":
            col = var["block"][1]
        header.append(KD_RENAME.get(col, col))
    # torch_npu moves OP State in front of Accelerator Core exactly like op_summary; keep order.
    return header + (list(PMU_HEADER) if pmu else [])


def summary_header(block_header: str, pmu: bool) -> list[str]:
    mix = "Mix Block Num" if block_header == "Block Num" else "Mix Block Dim"
    cols = [block_header if c == "Block Dim" else mix if c == "Mix Block Dim" else c for c in BASE_HEADER]
    return cols + (list(PMU_HEADER) if pmu else [])


#: torch_npu kernel_details.csv of a Level1/2 run with PMU columns, as the 2025-01 profiler writes it.
KERNEL_DETAILS_HEADER: list[str] = ["Step Id"] + variant_header(
    {"block": ("Block Dim", "Mix Block Dim")}, pmu=True)
#: system msprof op_summary with the PMU columns, MindStudio 26 spelling (Block Num).
OP_SUMMARY_HEADER: list[str] = ["Device_id"] + summary_header("Block Num", pmu=True)
#: kernel_details column -> the op_summary column holding the same value (MindStudio 26 spelling).
KERNEL_DETAILS_TO_OP_SUMMARY: dict[str, str] = {
    **{kd: op for op, kd in KD_RENAME.items()}, "Block Dim": "Block Num", "Mix Block Dim": "Mix Block Num"}

