"""Reader for the SQLite exports: system msprof ``msprof_*.db`` and torch_npu ``ascend_pytorch_profiler*.db``.

Both hold the same tables (FORMATS.md §3.6, §4.4); every text column is an id into
``STRING_IDS(id, value)`` and times are ns. Kernels come from
``COMPUTE_TASK_INFO ⋈ TASK ON globalTaskId`` (``TASK`` alone also holds synchronisation and
communication tasks, which are not kernels); pipe ratios from ``TASK_PMU_INFO`` (names without a
unit suffix, ``aic_mac_ratio`` = cube); communication ops from ``COMMUNICATION_OP`` (or, when that
table is empty, rebuilt per ``opId`` from ``COMMUNICATION_TASK_INFO ⋈ TASK``) with task type
``COMMUNICATION``, like the op_summary writer appends them; the chip from ``NPU_INFO``.

The block-dim column was renamed twice: ``block_dim`` (2023) -> ``blockDim`` / ``mixBlockDim``
(2025) -> ``blockNum`` / ``mixBlockNum`` with ``opState`` and ``hf32Eligible`` (2026); columns are
looked up by name (``PRAGMA table_info``). ``opState`` exists only in the newest schema, so
``op_state`` is marked present only then. Wait times come from ``waitNs`` where the schema has it,
otherwise from the gap to the previous task on the same device (op_summary's rule).

A file that is not SQLite, or lacks ``TASK`` / ``COMPUTE_TASK_INFO`` / ``STRING_IDS``, raises
``MalformedProfile`` naming the file and what is missing.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from opprof_advisor.errors import MalformedProfile, UnknownFormat
from opprof_advisor.readers.base import PIPE_KEYS, KernelTable, Progress, RawProfile
from opprof_advisor.readers.chips import core_counts_for

FORMAT_MSPROF = "msprof-db"
FORMAT_TORCH = "torch-npu-db"

DB_NAME = re.compile(r"^(?:msprof_\d+|ascend_pytorch_profiler(?:_\d+)?|ascend_mindspore_profiler(?:_\d+)?)\.db$")
_SQLITE_MAGIC = b"SQLite format 3\x00"
REQUIRED_TABLES = ("TASK", "COMPUTE_TASK_INFO", "STRING_IDS")
#: Interned COMPUTE_TASK_INFO columns -> KernelTable field.
_TEXT_COLUMNS = {"name": "name", "opType": "op_type", "taskType": "task_type", "inputShapes": "input_shapes",
                 "inputDataTypes": "input_dtypes", "inputFormats": "input_formats",
                 "outputFormats": "output_formats", "outputDataTypes": "output_dtypes"}
_BLOCK_COLUMNS = ("blockNum", "blockDim", "block_dim")
_MIX_COLUMNS = ("mixBlockNum", "mixBlockDim", "mix_block_dim")
_PMU_NAME = re.compile(r"^(?:(aic|aiv)_)?(mac|cube|vec|scalar|mte1|mte2|mte3|fixpipe)_ratio$")
_MISSING = frozenset({"", "N/A", "NA", "n/a", "None", "NULL"})
_HCOM_TYPE = re.compile(r"^(hcom_[A-Za-z]+_)")


class MsprofDbReader:
    """msprof and torch_npu SQLite exports (format ``msprof-db`` or ``torch-npu-db``)."""

    name = FORMAT_MSPROF

    def detect(self, path: Path) -> bool:
        """True for a profiler DB file, or a folder holding one where msprof / torch_npu put it."""
        path = Path(path)
        if path.is_file():
            return bool(DB_NAME.match(path.name)) or (path.suffix == ".db" and _is_sqlite(path))
        return bool(find_db_files(path))

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        """Read the DB export(s) under ``path``."""
        return read_msprof_db(Path(path), progress)


def find_db_files(folder: Path) -> list[Path]:
    """Profiler DBs at the places the tools write them (not ``analysis.db``, which holds no kernels)."""
    # not */ASCEND_PROFILER_OUTPUT/*.db: a parent of several ranks belongs to the multi-rank reader
    patterns = ("*.db", "ASCEND_PROFILER_OUTPUT/*.db", "PROF_*/*.db")
    found: list[Path] = []
    for pattern in patterns:
        try:
            found += [p for p in sorted(folder.glob(pattern)) if DB_NAME.match(p.name) and p.is_file()]
        except OSError:
            continue
        if found:
            return found
    return found


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def read_msprof_db(path: Path, progress: Progress | None = None) -> RawProfile:
    """One RawProfile from a DB file, or from every profiler DB in a folder (concatenated)."""
    files = [path] if path.is_file() else find_db_files(path)
    if not files:
        raise UnknownFormat("no msprof_*.db or ascend_pytorch_profiler*.db found", path=path,
                            hint="point at the .db file, its PROF_* folder or the *_ascend_pt folder")
    raws = [read_db_file(f) for f in files]
    if progress is not None:
        progress(len(files), len(files))
    raw = raws[0]
    raw.path = str(path)
    for other in raws[1:]:
        raw.kernels.extend(other.kernels)
        raw.notes += [n for n in other.notes if n not in raw.notes]
    if len(raws) > 1:
        raw.notes.append(f"{len(raws)} DB files under {path} were read as one profile: "
                         + ", ".join(f.name for f in files))
    return raw


def read_db_file(path: Path) -> RawProfile:
    """Read one DB export file."""
    con = _connect(path)
    try:
        tables = _tables(con)
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise MalformedProfile(f"not a profiler DB export: table(s) {', '.join(missing)} missing", path=path,
                                   hint="export with `msprof --export=on --type=db` or torch_npu export_type=db")
        return _read_tables(con, path, tables)
    except sqlite3.DatabaseError as exc:
        raise MalformedProfile(f"unreadable SQLite database ({exc})", path=path,
                               hint="the file is damaged or still being written; export it again") from None
    finally:
        con.close()


def _connect(path: Path) -> sqlite3.Connection:
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise MalformedProfile(f"cannot open: {exc.strerror or exc}", path=path) from None
    if head != _SQLITE_MAGIC:
        what = "empty file (0 bytes)" if not head else "not an SQLite database"
        raise MalformedProfile(what, path=path, hint="point at the msprof_*.db / ascend_pytorch_profiler*.db export")
    # read-only and immutable: profile folders are often read-only, and nothing may be written there
    uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise MalformedProfile(f"cannot open SQLite database ({exc})", path=path) from None


def _tables(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in con.execute(f'PRAGMA table_info("{table}")')]


def _first(candidates: tuple[str, ...], columns: list[str]) -> str | None:
    return next((c for c in candidates if c in columns), None)


# ------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------


def _read_tables(con: sqlite3.Connection, path: Path, tables: set[str]) -> RawProfile:
    cols = _columns(con, "COMPUTE_TASK_INFO")
    block, mix = _first(_BLOCK_COLUMNS, cols), _first(_MIX_COLUMNS, cols)
    has_state, has_wait = "opState" in cols, "waitNs" in cols
    rows = _compute_rows(con, cols, block, mix, has_state, has_wait)
    pipe = _pmu(con) if "TASK_PMU_INFO" in tables else {}
    comm, comm_note = _communication(con, tables)
    table = _kernel_table(rows, comm, pipe, has_wait)
    table.present = _text_present(cols) | {"duration_us", "wait_us"}
    if block:
        table.present.add("block_dim")
    if mix:
        table.present.add("mix_block_dim")
    if has_state:
        table.present.add("op_state")
    if table.pipe:
        table.present.add("pipe")
    is_torch = path.name.startswith("ascend_pytorch_profiler") or "PYTORCH_API" in tables
    notes = [comm_note] if comm_note else []
    if not table.pipe:
        notes.append("cannot judge pipe-bound class: TASK_PMU_INFO has no pipe ratios (collect with aic-metrics "
                     "PipeUtilization and --aic-mode=task-based)")
    chip = _chip(con, tables)
    return RawProfile(path=str(path), format=FORMAT_TORCH if is_torch else FORMAT_MSPROF, kernels=table,
                      versions=_versions(con, path, tables, block), chip=chip,
                      core_counts=_core_counts(path) or core_counts_for(chip), notes=notes)


def _text_present(cols: list[str]) -> set[str]:
    return {field for col, field in _TEXT_COLUMNS.items() if col in cols}


def _compute_rows(con: sqlite3.Connection, cols: list[str], block: str | None, mix: str | None,
                  has_state: bool, has_wait: bool) -> list[tuple]:
    text = [c for c in _TEXT_COLUMNS if c in cols] + (["opState"] if has_state else [])
    selects = [f"s{i}.value" for i in range(len(text))]
    joins = [f"LEFT JOIN STRING_IDS s{i} ON s{i}.id = c.{col}" for i, col in enumerate(text)]
    sql = (f"SELECT t.startNs, t.endNs, t.deviceId, c.globalTaskId, "
           f"{f'c.{block}' if block else 'NULL'}, {f'c.{mix}' if mix else 'NULL'}, "
           f"{'c.waitNs' if has_wait else 'NULL'}, {', '.join(selects)} "
           f"FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId {' '.join(joins)} "
           f"ORDER BY t.deviceId, t.startNs")
    out = []
    for row in con.execute(sql):
        values = dict(zip(text, row[7:]))
        out.append((row[0], row[1], row[2], row[3], row[4], row[5], row[6], values))
    return out


def _pmu(con: sqlite3.Connection) -> dict[int, dict[str, float]]:
    """globalTaskId -> {PIPE_KEY: ratio} from TASK_PMU_INFO (ratio rows only)."""
    names = {}
    for sid, value in con.execute("SELECT id, value FROM STRING_IDS WHERE value LIKE '%ratio'"):
        m = _PMU_NAME.match(value or "")
        if m:
            pipe = "cube" if m.group(2) == "mac" else m.group(2)
            key = f"{m.group(1)}_{pipe}" if m.group(1) else pipe
            if key in PIPE_KEYS:
                names[sid] = key
    if not names:
        return {}
    out: dict[int, dict[str, float]] = {}
    marks = ",".join("?" * len(names))
    for gid, sid, value in con.execute(
            f"SELECT globalTaskId, name, value FROM TASK_PMU_INFO WHERE name IN ({marks})", list(names)):
        if value is not None:
            out.setdefault(gid, {})[names[sid]] = float(value)
    return out


def _communication(con: sqlite3.Connection, tables: set[str]) -> tuple[list[tuple], str | None]:
    """(start, end, device, name, op_type, wait_ns) per communication op."""
    if "COMMUNICATION_OP" in tables:
        cols = _columns(con, "COMMUNICATION_OP")
        type_sel = "s2.value" if "opType" in cols else "NULL"
        wait_sel = "o.waitNs" if "waitNs" in cols else "NULL"
        rows = con.execute(
            f"SELECT o.startNs, o.endNs, NULL, s1.value, {type_sel}, {wait_sel} FROM COMMUNICATION_OP o "
            f"LEFT JOIN STRING_IDS s1 ON s1.id = o.opName "
            f"{'LEFT JOIN STRING_IDS s2 ON s2.id = o.opType' if 'opType' in cols else ''} ORDER BY o.startNs").fetchall()
        if rows:
            return rows, None
    if "COMMUNICATION_TASK_INFO" in tables:
        rows = con.execute(
            "SELECT MIN(t.startNs), MAX(t.endNs), MIN(t.deviceId), s.value, NULL, NULL "
            "FROM COMMUNICATION_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId "
            "LEFT JOIN STRING_IDS s ON s.id = c.name GROUP BY c.opId, c.name ORDER BY 1").fetchall()
        if rows:
            return rows, ("communication ops were rebuilt from COMMUNICATION_TASK_INFO (COMMUNICATION_OP is empty "
                          "or absent): each op spans its first to last task")
    return [], None


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = str(value).strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':  # shapes are stored with literal quotes
        text = text[1:-1]
    return "" if text in _MISSING else text


def _kernel_table(rows: list[tuple], comm: list[tuple], pipe: dict[int, dict[str, float]],
                  has_wait: bool) -> KernelTable:
    entries = []
    for start, end, device, gid, block, mix, wait, values in rows:
        entries.append((device or 0, start, end, wait, values, block, mix, pipe.get(gid)))
    for start, end, device, name, op_type, wait in comm:
        name = _text(name)
        m = _HCOM_TYPE.match(name)
        op_type = _text(op_type) or (m.group(1) if m else name)
        values = {"name": name, "opType": op_type, "taskType": "COMMUNICATION"}
        entries.append((device or 0, start, end, wait, values, 0, None, None))
    entries.sort(key=lambda e: (e[0], e[1] or 0))
    table = KernelTable()
    keys = sorted({k for e in entries if e[7] for k in e[7]})
    table.pipe = {k: [] for k in keys}
    prev_end: dict[int, int] = {}
    for device, start, end, wait, values, block, mix, ratios in entries:
        start, end = int(start or 0), int(end or 0)
        if wait is None:  # op_summary's rule: gap since the previous task on the same device
            wait = max(0, start - prev_end[device]) if device in prev_end else 0
        prev_end[device] = max(end, prev_end.get(device, end))
        table.duration_us.append(max(0, end - start) / 1000.0)
        table.wait_us.append(wait / 1000.0)
        for col, field in _TEXT_COLUMNS.items():
            getattr(table, field).append(_text(values.get(col)))
        state = _text(values.get("opState"))
        table.op_state.append(state or None)
        table.block_dim.append(None if block is None else int(block))
        table.mix_block_dim.append(None if mix is None else int(mix))
        for k in keys:
            table.pipe[k].append(ratios.get(k) if ratios else None)
    return table


# ------------------------------------------------------------------------------------------------
# Metadata
# ------------------------------------------------------------------------------------------------


def _chip(con: sqlite3.Connection, tables: set[str]) -> str | None:
    if "NPU_INFO" not in tables:
        return None
    names = sorted({r[0] for r in con.execute("SELECT name FROM NPU_INFO") if r[0]})
    return "/".join(names) or None


def _versions(con: sqlite3.Connection, path: Path, tables: set[str], block: str | None) -> dict[str, str]:
    versions: dict[str, str] = {}
    if block:
        versions["compute_task_info_block_column"] = block
    if "META_DATA" in tables:
        for name, value in con.execute("SELECT name, value FROM META_DATA WHERE name = 'SCHEMA_VERSION'"):
            versions["db_schema"] = str(value)
    versions.update(_profiler_info(path))
    return versions


def _profiler_info(db: Path) -> dict[str, str]:
    """torch_npu versions and level from profiler_info*.json beside ASCEND_PROFILER_OUTPUT."""
    root = db.parent.parent if db.parent.name == "ASCEND_PROFILER_OUTPUT" else db.parent
    for info in sorted(root.glob("profiler_info*.json")):
        try:
            data = json.loads(info.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        config = (data.get("config") or {}).get("experimental_config") or {}
        found = {"torch_npu": data.get("torch_npu_version"), "cann": data.get("cann_version"),
                 "profiler_level": config.get("_profiler_level"), "aic_metrics": config.get("_aic_metrics")}
        return {k: str(v) for k, v in found.items() if v}
    return {}


def _core_counts(db: Path) -> dict[str, int]:
    """ai_core_num / aiv_num from PROF_*/device_*/info.json.* beside a msprof DB, when kept."""
    for info in sorted(db.parent.glob("device_*/info.json.*")):
        if info.name.endswith(".done"):
            continue
        try:
            device = json.loads(info.read_text(encoding="utf-8"))["DeviceInfo"][0]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
        counts = {"aic": device.get("ai_core_num"), "aiv": device.get("aiv_num")}
        return {k: int(v) for k, v in counts.items() if isinstance(v, int) and v > 0}
    return {}
