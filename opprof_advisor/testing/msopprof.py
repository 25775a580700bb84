"""``msprof op`` (msOpProf) output of one operator: the device ``OPPROF_*`` folder and the simulator's."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from opprof_advisor.testing.files import letters, producer_dir, stamp, write_csv, write_json_compact
from opprof_advisor.testing.spec import (
    BASE_NS, FREQ_MHZ, KernelSpec, Launch, as_specs, expand_launches, launch_pipe, seeded_rng,
)


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
    return f"OPPROF_{stamp(BASE_NS, 14)}_{letters(rng)}"


def _write_msopprof_csv(path: Path, header: str, rows: Iterable[Sequence[str]]) -> None:
    # msOpProf writes `element,` for every cell, header included: every line ends with a comma.
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [header + ","] + [",".join(r) + "," for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def write_msopprof_device(out: Path | str, kernel: KernelSpec | Mapping[str, Any] | Sequence[Any], *,
                          chip: str = "Ascend910B3", generation: str = "2026", imbalance: float = 1.0,
                          metrics: Sequence[str] = ("PipeUtilization", "ArithmeticUtilization", "L2Cache", "Memory",
                                                    "MemoryL0", "MemoryUB", "ResourceConflictRatio"),
                          freq_mhz: int = FREQ_MHZ, device_id: int = 0, seed: int = 0) -> Path:
    """Write a ``msprof op`` device ``OPPROF_*`` directory for one kernel (or several: multi-op layout).

    ``kernel.task_type``: ``mix`` / ``cube`` / ``vector`` (or AI_CORE, AI_VECTOR_CORE, MIX_AIC ...);
    ``duration_us`` is the Task Duration; ``block_dim`` / ``mix_block_dim`` as launched; ``pipe``
    holds the mean ratios (``aic_cube``, ``aic_mte2``, ``aiv_vec`` ...). ``imbalance`` = slowest /
    fastest block busy time (1.0 = even). ``generation``: a key of MSOPPROF_GENERATIONS (header
    spelling and ``N/A`` vs ``NA``). A list of kernels, or ``count`` > 1, gives the multi-op
    layout ``<OpName>/<n>/`` with timestamped CSV names. Returns the ``OPPROF_*`` dir.
    """
    rng = seeded_rng(seed, "opprof")
    kernels = as_specs(kernel if isinstance(kernel, (list, tuple)) else [kernel])
    root = producer_dir(out, r"^OPPROF_\d{14}_[A-Z]{16}$", lambda: _opprof_dirname(rng))
    multi = len(kernels) > 1 or kernels[0].count > 1
    launches = expand_launches(kernels, seed=seed)
    per_op: dict[str, int] = defaultdict(int)
    for i, launch in enumerate(launches):
        if multi:
            n = per_op[launch.spec.name]
            per_op[launch.spec.name] += 1
            # each launch is dumped separately, some ms apart: distinct timestamp suffixes
            folder, suffix = root / launch.spec.name / str(n), "_" + stamp(launch.start_ns + i * 37_000_000, 17)
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
                             schema: int = 2, freq_mhz: int = FREQ_MHZ, seed: int = 0) -> Path:
    """Write a ``msprof op simulator`` ``OPPROF_*`` directory: per-core instr/code CSVs and trace.json.

    ``cores`` AI Cores are simulated (each with ``cubecore0`` for cube/mix and ``veccore0/1`` for
    vector/mix kernels). ``duration_us`` is the span of the slowest core; ``pipe`` ratios set
    each pipe's busy share of it. ``schema=1``: one trace.json per core with numeric pids (2025);
    ``schema=2``: one merged ``simulator/trace.json`` with string pids (2026). Returns the dir.
    """
    rng = seeded_rng(seed, "opprof-simulator")
    spec = as_specs([kernel])[0]
    root = producer_dir(out, r"^OPPROF_\d{14}_[A-Z]{16}$", lambda: _opprof_dirname(rng))
    op_type = _MSOPPROF_TYPE.get(spec.task_type.upper(), spec.task_type.lower())
    subs = {"cube": ["cubecore0"], "vector": ["veccore0", "veccore1"],
            "mix": ["cubecore0", "veccore0", "veccore1"]}[op_type]
    pipe = launch_pipe(spec, rng)
    merged: list[dict[str, Any]] = []
    sim = root / "simulator"
    for c in range(cores):
        for sub in subs:
            core = f"core{c}.{sub}"
            span = spec.duration_us * (1.0 if c == 0 else rng.uniform(0.8, 0.98))
            events = _sim_events(core, sub, span, pipe, rng)
            _write_sim_csvs(sim / core, core, events, freq_mhz)
            if schema == 1:
                write_json_compact(sim / core / "trace.json", _sim_trace_v1(events))
            else:
                merged += _sim_trace_v2_events(core, events)
    if schema == 2:
        write_json_compact(sim / "trace.json", {"displayTimeUnit": "ns", "profilingType": "op", "schemaVersion": 2,
                                                 "traceEvents": merged})
    _write_summary_log(root / "dump" / "core0_summary_log", spec, cores, freq_mhz)
    return root


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
    write_csv(folder / f"{core}_instr_exe.csv", ["instr", "addr", "pipe", "call_count", "cycles", "running_time(us)",
                                                  "detail"],
               [[k[0], k[1], k[2], str(v[0]), str(v[1]), "0.000000", "dtype:B64,XD:X1=0x0,IMM:0,"] for k, v in rows])
    write_csv(folder / f"{core}_code_exe.csv", ["code", "call_count", "cycles", "running_time(us)"], [])


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
