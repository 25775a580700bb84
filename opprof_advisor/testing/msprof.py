"""System ``msprof`` text output: the ``PROF_*`` tree with op_summary, op_statistic, api_statistic and device info."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from opprof_advisor.testing.files import fmt, letters, producer_dir, stamp, write_csv
from opprof_advisor.testing.headers import OP_STAT_HEADER, op_statistic_rows, summary_header, summary_rows
from opprof_advisor.testing.spec import (
    BASE_NS, CHIP_CORES, FREQ_MHZ, KernelSpec, expand_launches, seeded_rng, with_comm_label,
)


def prof_dirname(rng: random.Random) -> str:
    return f"PROF_000001_{stamp(BASE_NS, 17)}_{letters(rng)}"


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
    rng = seeded_rng(seed, "prof")
    root = producer_dir(out, r"^PROF_\d{6}_\d{17}_\w+$", lambda: prof_dirname(rng))
    launches = with_comm_label(expand_launches(kernels, seed=seed), "COMMUNICATION")
    header = ["Device_id"] + summary_header(block_header, pmu)
    rows = [[str(device_id)] + r for r in summary_rows(launches, pmu)]
    ts = stamp(BASE_NS, 14)
    if layout == "cann8":
        folder, stem, stat = root / "mindstudio_profiler_output", "op_summary", f"op_statistic_{ts}.csv"
    elif layout == "cann7":
        folder, stem, stat = root / f"device_{device_id}" / "summary", f"op_summary_{device_id}_1", \
            f"op_statistic_{device_id}_1_{ts}.csv"
    else:
        raise ValueError(f"layout must be 'cann8' or 'cann7', not {layout!r}")
    write_sliced(folder, stem, ts, header, rows, slices)
    write_csv(folder / stat, ["Device_id"] + list(OP_STAT_HEADER),
               [[str(device_id)] + r for r in op_statistic_rows(launches)])
    if compile_us is not None:
        calls = max(1, round(compile_us / 2000))
        write_csv(folder / f"api_statistic_{ts}.csv", list(API_STATISTIC_HEADER),
                   [["host", "acl", "opCompile", fmt(compile_us), str(calls), fmt(compile_us / calls), "0", "0", "0"],
                    ["host", "runtime", "KernelLaunch", fmt(len(launches) * 5.0), str(len(launches)), "5.000",
                     "4.000", "9.000", "1.000"]])
    write_device_info(root, chip, device_id=device_id)
    return root


#: api_statistic header (FORMATS.md §3.4).
API_STATISTIC_HEADER = ("Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                        "Variance")


def write_sliced(folder: Path, stem: str, ts: str, header: Sequence[str], rows: list[list[str]], slices: int) -> None:
    if slices <= 1:
        write_csv(folder / f"{stem}_{ts}.csv", header, rows)
        return
    per = -(-len(rows) // slices)
    for k in range(slices):
        write_csv(folder / f"{stem}_slice_{k}_{ts}.csv", header, rows[k * per:(k + 1) * per])


def write_device_info(prof_dir: Path | str, chip: str, *, device_id: int = 0) -> Path:
    """Write ``device_N/info.json.N`` with the chip's AI Core / AI Vector counts (24 / 48 for a chip
    CHIP_CORES does not list)."""
    aic, aiv = CHIP_CORES.get(chip, (24, 48))
    info = {"jobInfo": "NA", "devices": str(device_id), "DeviceInfo": [{
        "id": device_id, "env_type": 3, "ctrl_cpu_id": "ARMv8_Cortex_A55", "ctrl_cpu_core_num": 1,
        "ai_cpu_core_num": 6, "ai_core_num": aic, "aiv_num": aiv, "hwts_frequency": "50",
        "aic_frequency": str(FREQ_MHZ), "aiv_frequency": str(FREQ_MHZ)}],
        "platform_version": "5", "pid": "1000"}
    path = Path(prof_dir) / f"device_{device_id}" / f"info.json.{device_id}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info), encoding="utf-8")
    return path
