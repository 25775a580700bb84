"""The SQLite exports: msprof's ``msprof_<ts>.db`` and the torch_npu profiler's ``ascend_pytorch_profiler_<rank>.db``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from opprof_advisor.testing.files import producer_dir, quoted, stamp
from opprof_advisor.testing.msprof import prof_dirname
from opprof_advisor.testing.spec import (
    BASE_NS, FREQ_MHZ, UINT32_MAX, KernelSpec, Launch, expand_launches, seeded_rng,
)
from opprof_advisor.testing.torch_npu import TORCH_NPU_VARIANTS, torch_npu_dirname, write_profiler_info


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
    rng = seeded_rng(seed, "prof")
    path = Path(path)
    if path.suffix != ".db":
        path = producer_dir(path, r"^PROF_\d{6}_\d{17}_\w+$", lambda: prof_dirname(rng)) / \
            f"msprof_{stamp(BASE_NS, 14)}.db"
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
    rng = seeded_rng(seed, "torch_npu")
    root = producer_dir(out, r"_ascend_pt$", lambda: torch_npu_dirname(rng))
    name = "ascend_pytorch_profiler.db" if rank is None else f"ascend_pytorch_profiler_{rank}.db"
    path = root / "ASCEND_PROFILER_OUTPUT" / name
    launches = expand_launches(kernels, seed=seed)
    _write_db(path, launches, schema=schema, chip=chip, pmu=pmu, device_id=device_id, torch=True, step=step,
              rank=rank)
    variant = dict(TORCH_NPU_VARIANTS["2025-11"])
    write_profiler_info(root, rank, level, pmu, variant, "db")
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
                          int(UINT32_MAX), 0))
            gid += 1
            continue
        tasks.append((l.start_ns, end, device_id, 2000 + i, gid, 1000,
                      strings(_HW_TASK_TYPE.get(s.task_type, s.task_type)), int(UINT32_MAX), 2, 11000 + i,
                      int(UINT32_MAX), 0))
        compute.append(tuple(_compute_value(c, l, gid, strings) for c in columns))
        if pmu:
            pmu_rows += [(gid, strings(name), l.pipe[key]) for name, key in _DB_PMU.items() if key in l.pipe]
        gid += 1
        if i % 7 == 3:  # a synchronisation task that has no compute info, as in real TASK tables
            tasks.append((end, end + 20, device_id, 2000 + i, gid, 1000, strings("EVENT_RECORD"), int(UINT32_MAX),
                          2, 11000 + i, int(UINT32_MAX), 0))
            gid += 1
    return tasks, compute, pmu_rows, comm_ops


def _compute_value(col: str, l: Launch, gid: int, strings: _Strings) -> Any:
    s = l.spec
    values = {"name": s.name, "globalTaskId": gid, "block_dim": s.block_dim, "blockDim": s.block_dim,
              "blockNum": s.block_dim, "mixBlockDim": s.mix_block_dim, "mixBlockNum": s.mix_block_dim,
              "taskType": s.task_type, "opType": s.op_type, "inputFormats": s.input_formats,
              "inputDataTypes": s.input_dtypes, "inputShapes": quoted(s.input_shapes),
              "outputFormats": s.output_formats, "outputDataTypes": s.output_dtypes,
              "outputShapes": quoted(s.output_shapes), "attrInfo": "N/A", "waitNs": l.wait_ns,
              "opState": s.op_state, "hf32Eligible": "NO"}
    value = values[col]
    return strings(value) if col in _INTERNED else value


def _write_db_metadata(con: sqlite3.Connection, launches: Sequence[Launch], chip: str, device_id: int, torch: bool,
                       step: int, rank: int | None) -> None:
    start = launches[0].start_ns if launches else BASE_NS
    end = launches[-1].start_ns + launches[-1].dur_ns if launches else BASE_NS
    con.execute("INSERT INTO NPU_INFO VALUES (?,?)", (device_id, chip))
    con.execute("INSERT INTO AICORE_FREQ VALUES (?,?,?)", (device_id, start, FREQ_MHZ))
    con.execute("INSERT INTO SESSION_TIME_INFO VALUES (?,?)", (start - 10**6, end + 10**6))
    con.executemany("INSERT INTO META_DATA VALUES (?,?)", [("SCHEMA_VERSION", "1.0.0")])
    if torch:
        con.execute("INSERT INTO STEP_TIME VALUES (?,?,?)", (step, start, end))
        con.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?,?)", (rank if rank is not None else -1, device_id))
