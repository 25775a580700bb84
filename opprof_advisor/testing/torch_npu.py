"""The torch_npu profiler's ``*_ascend_pt`` text output (kernel_details, op_statistic, step_trace_time, profiler_info), one rank or a job."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from opprof_advisor.testing.files import fmt, producer_dir, stamp, us_text, write_csv, write_json
from opprof_advisor.testing.headers import OP_STAT_HEADER, op_statistic_rows, summary_rows, variant_header
from opprof_advisor.testing.spec import (
    BASE_NS, NS_PER_US, KernelSpec, Launch, as_specs, expand_launches, seeded_rng, with_comm_label,
)


#: torch_npu text variants: what the real files of each period look like (FORMATS.md §4.3).
TORCH_NPU_VARIANTS: dict[str, dict[str, Any]] = {
    "2025-01": {"device_col": False, "crlf": True, "block": ("Block Dim", "Mix Block Dim"), "comm": "HCCL",
                "versions": {}},
    "2025-11": {"device_col": True, "crlf": False, "block": ("Block Dim", "Mix Block Dim"), "comm": "COMMUNICATION",
                "versions": {"torch_npu_version": "2.7.1", "cann_version": "8.3.RC1"}},
    "2026": {"device_col": True, "crlf": False, "block": ("Block Num", "Mix Block Num"), "comm": "COMMUNICATION",
             "versions": {"torch_npu_version": "2.8.0", "cann_version": "8.5.0"}},
}


_LEVEL0_HEADER = ("Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)")


def torch_npu_dirname(rng: random.Random) -> str:
    return f"localhost.localdomain_{rng.randint(10000, 4000000)}_{stamp(BASE_NS, 17)}_ascend_pt"


def write_torch_npu_text(out: Path | str, kernels: Iterable[KernelSpec | Mapping[str, Any]], *,
                         level: str = "Level2", variant: str = "2025-11", pmu: bool = True, step: int = 1,
                         rank: int | None = 0, device_id: int = 0, seed: int = 0) -> Path:
    """Write a torch_npu ``*_ascend_pt`` folder (kernel_details, op_statistic, step_trace_time, profiler_info).

    ``level``: Level0 (8 columns, no unit, no op_statistic), Level1 or Level2 (all columns).
    ``variant``: a key of TORCH_NPU_VARIANTS (header spelling, line ending, versions).
    ``pmu=False`` leaves out the pipe columns (aic_metrics NONE). Returns the ``_ascend_pt`` dir.
    """
    rng = seeded_rng(seed, "torch_npu")
    var = TORCH_NPU_VARIANTS[variant]
    root = producer_dir(out, r"_ascend_pt$", lambda: torch_npu_dirname(rng))
    launches = with_comm_label(expand_launches(kernels, seed=seed), var["comm"])
    output = root / "ASCEND_PROFILER_OUTPUT"
    lead = ["Step Id"] + (["Device_id"] if var["device_col"] else [])
    lead_vals = [str(step)] + ([str(device_id)] if var["device_col"] else [])
    if level == "Level0":
        header = lead + list(_LEVEL0_HEADER) + [var["block"][0]]
        rows = [lead_vals + _level0_row(l, i == 0) for i, l in enumerate(launches)]
    else:
        header = lead + variant_header(var, pmu)
        rows = [lead_vals + r for r in summary_rows(launches, pmu)]
    write_csv(output / "kernel_details.csv", header, rows, crlf=var["crlf"])
    if level != "Level0":
        stat_lead = ["Device_id"] if var["device_col"] else []
        write_csv(output / "op_statistic.csv", stat_lead + list(OP_STAT_HEADER),
                   [([str(device_id)] if var["device_col"] else []) + r for r in op_statistic_rows(launches)])
    _write_step_trace(output / "step_trace_time.csv", launches, step, var, device_id)
    write_profiler_info(root, rank, level, pmu, var, "text")
    return root


def _level0_row(launch: Launch, first: bool) -> list[str]:
    s = launch.spec
    unit = s.task_type if s.is_communication else "N/A"  # level0 cannot tell units apart
    name = s.name if not s.is_communication or s.count == 1 else f"{s.name}_{launch.index}_1"
    op_type = s.op_type if s.is_communication else "N/A"
    wait = "0" if first else fmt(launch.wait_ns / NS_PER_US)
    return [name, op_type, unit, us_text(launch.start_ns) + "\t", fmt(launch.duration_us), wait, "0"]


def _write_step_trace(path: Path, launches: Sequence[Launch], step: int, var: Mapping[str, Any],
                      device_id: int) -> None:
    compute = sum(l.duration_us for l in launches if not l.spec.is_communication)
    comm = sum(l.duration_us for l in launches if l.spec.is_communication)
    span = (launches[-1].start_ns + launches[-1].dur_ns - launches[0].start_ns) / NS_PER_US if launches else 0.0
    free = max(0.0, span - compute - comm)
    header = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
              "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
    row = [str(step), fmt(compute), fmt(comm), "0.0", fmt(comm), fmt(free), fmt(span), "0", fmt(comm), "0.0"]
    if var["device_col"]:
        header, row = ["Device_id"] + header, [str(device_id)] + row
    write_csv(path, header, [row], crlf=var["crlf"])


def write_profiler_info(root: Path, rank: int | None, level: str, pmu: bool, var: Mapping[str, Any],
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
        "end_info": {"collectionTimeEnd": BASE_NS + 10**9},
    }
    info.update(var["versions"])
    info["rank_id"] = (str(rank) if var["device_col"] else rank) if rank is not None else -1
    name = "profiler_info.json" if rank is None else f"profiler_info_{rank}.json"
    write_json(root / name, info)
    write_json(root / "profiler_metadata.json", {"ENV_VARIABLES": {"ASCEND_LAUNCH_BLOCKING": ""}})


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
    rng = seeded_rng(seed, "torch_npu_job")
    folder_stamp = stamp(BASE_NS, 17)
    folders = []
    for rank in range(ranks):
        factor = slow_factor if rank == slow_rank else 1.0
        wait_us = (slowest - compute * factor) / allreduces
        scaled = [replace(s, duration_us=s.duration_us * factor) for s in specs]
        comm = KernelSpec(name="hcom_allReduce__586_0_1", op_type="hcom_allReduce_", task_type="HCCL",
                          duration_us=allreduce_us + wait_us, count=allreduces, block_dim=0)
        root = out / f"node{rank // 8}_{rng.randint(10000, 4000000)}_{folder_stamp}_ascend_pt"
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
                "Start Timestamp(us)": BASE_NS / 1000, "Elapse Time(ms)": transit_ms + wait_ms,
                "Transit Time(ms)": transit_ms, "Wait Time(ms)": wait_ms, "Synchronization Time(ms)": wait_ms,
                "Idle Time(ms)": 0.0, "Wait Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4),
                "Synchronization Time Ratio": round(wait_ms / (wait_ms + transit_ms), 4)},
            "Communication Bandwidth Info": {"RDMA": dict(empty), "HCCS": dict(link), "PCIE": dict(empty),
                                             "SDMA": dict(link), "SIO": dict(empty)}}
        for i in range(ops)}
    write_json(path, {"step1": {"p2p": {}, "collective": collective}})
