"""Small profiler outputs written row by row from the documented headers (opprof_advisor.testing), for reader tests."""

from __future__ import annotations

import csv
from pathlib import Path

from opprof_advisor.testing import KERNEL_DETAILS_HEADER, KERNEL_DETAILS_TO_OP_SUMMARY, OP_SUMMARY_HEADER

#: torch_npu kernel_details.csv, Level1/2, Jan 2025 (FORMATS.md §4.3), as opprof_advisor.testing writes it.
LEVEL2_HEADER = KERNEL_DETAILS_HEADER
_RENAMED = KERNEL_DETAILS_TO_OP_SUMMARY


def kernel(name: str, op_type: str, core: str, duration: float, *, wait: float = 1.0, block: int = 40,
           dtypes: str = "FLOAT16", state: str = "dynamic", shapes: str = "8,16", start: float = 0.0,
           **ratios: float) -> dict[str, str]:
    """One kernel_details row as a dict keyed by the Level2 header (ratios as aic_mac_ratio=0.9 ...)."""
    row = {column: "N/A" for column in LEVEL2_HEADER}
    row.update({
        "Step Id": "1", "Model ID": "4294967295", "Task ID": "1", "Stream ID": "2", "Name": name, "Type": op_type,
        "OP State": state, "Accelerator Core": core, "Start Time(us)": f"{1736408883704643.212 + start:.3f}\t",
        "Duration(us)": f"{duration}", "Wait Time(us)": f"{wait}", "Block Dim": str(block), "Mix Block Dim": "0",
        "HF32 Eligible": "NO", "Input Shapes": f'"{shapes}"', "Input Data Types": dtypes, "Input Formats": "ND",
        "Output Shapes": f'"{shapes}"', "Output Data Types": dtypes.split(";")[0], "Output Formats": "ND",
    })
    for key, value in ratios.items():
        row[key] = str(value)
    return row


def write_csv(path: Path, header: list[str], rows: list[dict[str, str]], *, newline: str = "\r\n",
              encoding: str = "utf-8") -> Path:
    """Write rows under ``header`` the way csv.writer does (torch_npu: CRLF)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding=encoding) as handle:
        writer = csv.writer(handle, lineterminator=newline)
        writer.writerow(header)
        for row in rows:
            writer.writerow([row.get(column, "N/A") for column in header])
    return path


def write_ascend_pt(root: Path, rows: list[dict[str, str]], *, step_trace: dict[str, float] | None = None,
                    level: str = "Level2", name: str = "rank0_ascend_pt", rank_id: int = 0) -> Path:
    """A torch_npu ``*_ascend_pt`` folder with kernel_details.csv (+ step_trace_time.csv, profiler_info_0.json)."""
    folder = root / name
    out = folder / "ASCEND_PROFILER_OUTPUT"
    write_csv(out / "kernel_details.csv", LEVEL2_HEADER, rows)
    if step_trace is not None:
        header = ["Step", *step_trace]
        write_csv(out / "step_trace_time.csv", header, [{"Step": "1", **{k: str(v) for k, v in step_trace.items()}}])
    (folder / "profiler_info_0.json").write_text(
        '{"config": {"experimental_config": {"_profiler_level": "%s", "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION"}},'
        ' "torch_npu_version": "2.7.1", "cann_version": "8.3.RC1", "rank_id": "%d"}' % (level, rank_id))
    return folder


def as_op_summary(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The same kernels under op_summary column names."""
    return [{_RENAMED.get(k, k): v for k, v in row.items()} | {"Device_id": "0"} for row in rows]
