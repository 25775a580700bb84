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
``MalformedProfile`` naming the file and what is missing. The run facts beside the kernels (steps, chip, clock,
versions, core counts) are read by ``readers/db_run.py``.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import contextmanager
from itertools import accumulate
from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import MalformedProfile, UnknownFormat
from opprof_advisor.core.i18n import N_
from opprof_advisor.readers.callstacks import db_call_stacks
from opprof_advisor.readers.memory_files import add_memory
from opprof_advisor.readers import columns
from opprof_advisor.readers.base import PIPE_KEYS, KernelTable, Progress, RawProfile
from opprof_advisor.readers.columns import COUNT, RATIO
from opprof_advisor.readers.chips import core_counts_for
from opprof_advisor.readers.layouts import SQLITE_MAGIC, find_db_files, is_msprof_db
from opprof_advisor.readers.msprof_text import is_compile_api
from opprof_advisor.readers.db_numbers import DURATION_NS, _checked, _communication_rows, _number, _plausible_tasks
from opprof_advisor.readers.db_run import (
    _add_steps, _analysis_communication, _chip, _columns, _core_counts, _freq, _tables, _versions,
)
import shutil
import tempfile

FORMAT_MSPROF = "msprof-db"
FORMAT_TORCH = "torch-npu-db"
FORMAT_MINDSPORE = "mindspore-db"  # ascend_mindspore_profiler_<rank>.db (FORMATS.md §11.1)

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
        return is_msprof_db(Path(path))

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        """Read the DB export(s) under ``path``."""
        return read_msprof_db(Path(path), progress)


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
    with _with_journal_applied(path) as (copy, note):
        con = _connect(path, copy)
        try:
            tables = _tables(con)
            missing = [t for t in REQUIRED_TABLES if t not in tables]
            if missing:
                raise MalformedProfile(f"not a profiler DB export: table(s) {', '.join(missing)} missing", path=path,
                                       hint="export with `msprof --export=on --type=db` or torch_npu export_type=db")
            raw = _read_tables(con, path, tables)
        except sqlite3.DatabaseError as exc:
            raise MalformedProfile(f"unreadable SQLite database ({exc})", path=path,
                                   hint="the file is damaged or still being written; export it again") from None
        except (TypeError, ValueError, OverflowError) as exc:  # a numeric column the checks below do not cover
            raise MalformedProfile(f"a numeric column holds something else ({exc})", path=path,
                                   hint="the DB was edited or damaged; export it again") from None
        finally:
            con.close()
    if note:
        raw.notes.append(note)
    return raw


@contextmanager
def _with_journal_applied(path: Path):
    """(None, None) for a DB alone; for one with a ``-wal`` or hot ``-journal`` beside it, (a temporary
    copy with that journal applied, a note saying so).

    The reader opens profiles immutable (nothing may be written into a profile folder), and an
    immutable open ignores the journal: committed data still in a ``-wal`` (a profile copied while
    its writer had it open) would be silently missing. SQLite applies a journal only on a writable
    open, so that happens on a copy in the temporary folder.
    """
    journals = [side for side in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal"))
                if side.is_file() and side.stat().st_size > 0]
    if not journals:
        yield None, None
        return

    with tempfile.TemporaryDirectory(prefix="advisor-db-") as folder:
        copy = Path(folder) / path.name
        try:
            shutil.copyfile(path, copy)
            for side in journals:
                shutil.copyfile(side, Path(folder) / side.name)
        except OSError as exc:
            raise MalformedProfile(f"cannot copy the DB to read its {journals[0].name[len(path.name):]} "
                                   f"({exc.strerror or exc})", path=path,
                                   hint="free space in the temporary folder (TMPDIR), or checkpoint the DB") from None
        kind = journals[0].name[len(path.name):]
        what = ("committed changes not yet checkpointed into the DB" if kind == "-wal" else
                "an interrupted write, rolled back")
        yield copy, f"{path.name}{kind} beside the DB held {what}; read from a temporary copy with it applied"


def _connect(path: Path, copy: Path | None = None) -> sqlite3.Connection:
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise MalformedProfile(f"cannot open: {exc.strerror or exc}", path=path) from None
    if head != SQLITE_MAGIC:
        what = "empty file (0 bytes)" if not head else "not an SQLite database"
        raise MalformedProfile(what, path=path, hint="point at the msprof_*.db / ascend_pytorch_profiler*.db export")
    # read-only and immutable: profile folders are often read-only, and nothing may be written there
    # (a temporary copy is opened writable, so that SQLite applies the journal copied beside it)
    uri = copy.resolve().as_uri() if copy is not None else path.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise MalformedProfile(f"cannot open SQLite database ({exc})", path=path) from None


def _first(candidates: tuple[str, ...], columns: list[str]) -> str | None:
    return next((c for c in candidates if c in columns), None)


# ------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------


def _read_tables(con: sqlite3.Connection, path: Path, tables: set[str]) -> RawProfile:
    cols = _columns(con, "COMPUTE_TASK_INFO")
    block, mix = _first(_BLOCK_COLUMNS, cols), _first(_MIX_COLUMNS, cols)
    strings = _Strings(con)
    bad = columns.BadNumbers(path)
    rows, gids = _compute_table(con, cols, block, mix, strings, bad)
    comm, comm_note = _communication(con, tables, bad)
    order = _append_communication(rows, comm, strings)
    if not rows.duration_us and bad:
        raise MalformedProfile(f"no task with plausible times: {bad.summary()}", path=path,
                               hint="the DB was edited or damaged; export it again")
    if "TASK_PMU_INFO" in tables:
        _fill_pipe(con, rows, gids, strings, bad)
    _reorder(rows, order)
    _fill_wait(rows)
    table = KernelTable(pipe=rows.pipe, **{name: values for name, values in vars(rows).items() if name != "pipe"})
    table.present = {f for c, f in _TEXT_COLUMNS.items() if c in cols} | {"duration_us", "wait_us", "start_us",
                                                                          "device_id"}
    table.present |= {name for name, col in (("block_dim", block), ("mix_block_dim", mix)) if col}
    if "opState" in cols:
        table.present.add("op_state")
    if table.pipe:
        table.present.add("pipe")
    is_torch = path.name.startswith("ascend_pytorch_profiler") or "PYTORCH_API" in tables
    notes = [comm_note] if comm_note else []
    if not table.pipe:
        notes.append(N_("cannot judge pipe-bound class: TASK_PMU_INFO has no pipe ratios (collect with aic-metrics "
                        "PipeUtilization and --aic-mode=task-based)"))
    chip = _chip(con, tables)
    fmt = FORMAT_MINDSPORE if path.name.startswith("ascend_mindspore_profiler") else \
        FORMAT_TORCH if is_torch else FORMAT_MSPROF
    raw = RawProfile(path=str(path), format=fmt, kernels=table,
                     versions=_versions(con, path, tables, block), chip=chip,
                     core_counts=_core_counts(path) or core_counts_for(chip), notes=notes,
                     freq_mhz=_freq(con, tables, bad))
    _add_steps(raw, con, tables, path, bad)
    _add_compile_time(raw, con, tables, strings, bad)
    stacks = db_call_stacks(con, tables, strings)
    if stacks:
        raw.extra["stacks"] = stacks
    communication = _analysis_communication(path)
    if communication:
        raw.extra["communication"] = communication
    add_memory(raw.extra, path.parent if path.is_file() else path)  # the DB and the memory CSVs beside it
    raw.notes.extend(bad.notes())
    return raw


class _Strings(dict):
    """STRING_IDS id -> cleaned text, loaded lazily; one shared str object per distinct value."""

    def __init__(self, con: sqlite3.Connection):
        super().__init__()
        self.raw = dict(con.execute("SELECT id, value FROM STRING_IDS"))

    def __missing__(self, sid: Any) -> str:
        value = self[sid] = _text(self.raw.get(sid))
        return value


# ------------------------------------------------------------------------------------------------
# Numbers: every number read from the DB is checked here (a DB cell can hold any type: text, a REAL for an
# INTEGER column, 9e999 for infinity); a bad time leaves its row out, any other bad number reads as missing,
# each with a note naming the table, the column and the row.
# ------------------------------------------------------------------------------------------------

class _Rows:
    """The task columns as Python lists while the DB is read (KernelTable fields, and the reader's own
    ``start_ns`` and ``device`` until ``_fill_wait``); a KernelTable is made of them at the end."""

    def __init__(self):
        self.pipe: dict[str, list] = {}


def _compute_table(con: sqlite3.Connection, cols: list[str], block: str | None, mix: str | None,
                   strings: _Strings, bad: columns.BadNumbers) -> tuple[_Rows, list[int]]:
    """Columns of COMPUTE_TASK_INFO ⋈ TASK (ids mapped through STRING_IDS in Python: fast and shared)."""
    text = [c for c in _TEXT_COLUMNS if c in cols]
    extra = ["opState"] if "opState" in cols else []
    sql = (f"SELECT t.startNs, t.endNs, t.deviceId, c.globalTaskId, {f'c.{block}' if block else 'NULL'}, "
           f"{f'c.{mix}' if mix else 'NULL'}, {'c.waitNs' if 'waitNs' in cols else 'NULL'}"
           f"{''.join(f', c.{c}' for c in text + extra)} "
           "FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId")
    rows = _plausible_tasks(con.execute(sql).fetchall(), bad, "TASK", "globalTaskId")
    columns = list(zip(*rows)) if rows else [()] * (7 + len(text) + len(extra))
    del rows
    table = _Rows()
    ids = columns[3]
    table.start_ns = list(columns[0])  # type: ignore[attr-defined]  # reader-private
    devices = _checked(list(columns[2]), COUNT, bad, "TASK.deviceId", ids, int)
    table.device = [v or 0 for v in devices]  # type: ignore[attr-defined]
    table.duration_us = [max(0, e - s) / 1000.0 for s, e in zip(table.start_ns, columns[1])]
    table.block_dim = _checked(list(columns[4]), COUNT, bad, f"COMPUTE_TASK_INFO.{block}", ids, int)
    table.mix_block_dim = _checked(list(columns[5]), COUNT, bad, f"COMPUTE_TASK_INFO.{mix}", ids, int)
    table.wait_us = _checked(list(columns[6]), DURATION_NS, bad, "COMPUTE_TASK_INFO.waitNs", ids,
                             lambda v: v / 1000.0)
    get = strings.__getitem__
    for i, col in enumerate(text):
        setattr(table, _TEXT_COLUMNS[col], list(map(get, columns[7 + i])))
    for col in _TEXT_COLUMNS:
        if col not in text:
            setattr(table, _TEXT_COLUMNS[col], [""] * len(table.duration_us))
    table.op_state = [v or None for v in map(get, columns[7 + len(text)])] if extra else \
        [None] * len(table.duration_us)
    return table, list(columns[3])


def _fill_pipe(con: sqlite3.Connection, table: _Rows, gids: list[int], strings: _Strings,
               bad: columns.BadNumbers) -> None:
    """Pipe-ratio columns from TASK_PMU_INFO (ratio rows only; names carry no unit suffix)."""
    keys = {}
    for sid, value in strings.raw.items():
        m = _PMU_NAME.match(value or "")
        if m:
            pipe = "cube" if m.group(2) == "mac" else m.group(2)
            key = f"{m.group(1)}_{pipe}" if m.group(1) else pipe
            if key in PIPE_KEYS:
                keys[sid] = key
    if not keys:
        return
    # SQLite maps each name to a slot number, so the per-row Python work is two look-ups; no
    # per-row dicts (a 400k-kernel DB has millions of PMU rows).
    slots = {sid: n for n, sid in enumerate(keys)}
    case = " ".join(f"WHEN {int(sid)} THEN {n}" for sid, n in slots.items())
    position = dict(zip(gids, range(len(gids))))
    by_slot = [[None] * len(table.duration_us) for _ in slots]  # communication rows keep None
    cursor = con.execute(f"SELECT globalTaskId, CASE name {case} END, value FROM TASK_PMU_INFO "
                         f"WHERE name IN ({','.join(str(int(sid)) for sid in slots)}) AND value IS NOT NULL")
    found = False
    get = position.get
    low, high = RATIO
    names = {n: strings.raw.get(sid) for sid, n in slots.items()}
    for rows in iter(lambda: cursor.fetchmany(65536), []):
        found = True
        for gid, slot, value in rows:
            i = get(gid)
            if i is not None:
                if type(value) is not float or not low <= value <= high:  # NaN compares false
                    number = _number(value, RATIO)
                    if isinstance(number, columns.Bad):
                        bad.add(f"TASK_PMU_INFO.value ({names[slot]})", f"globalTaskId {gid}", value,
                                RATIO)
                        number = None
                    value = number
                by_slot[slot][i] = value
    if not found:
        return
    for sid, n in slots.items():
        key, column = keys[sid], by_slot[n]
        if key in table.pipe:  # two spellings of one pipe (aic_mac_ratio / aic_cube_ratio): merge
            column = [a if a is not None else b for a, b in zip(table.pipe[key], column)]
        table.pipe[key] = column


def _communication(con: sqlite3.Connection, tables: set[str], bad: columns.BadNumbers
                   ) -> tuple[list[tuple], str | None]:
    """(start, end, device, name id, op_type id, wait_ns) per communication op."""
    if "COMMUNICATION_OP" in tables:
        cols = _columns(con, "COMMUNICATION_OP")
        rows = con.execute(
            f"SELECT startNs, endNs, NULL, opName, {'opType' if 'opType' in cols else 'NULL'}, "
            f"{'waitNs' if 'waitNs' in cols else 'NULL'}, {'opId' if 'opId' in cols else 'rowid'} "
            "FROM COMMUNICATION_OP ORDER BY startNs").fetchall()
        if rows:
            return _communication_rows(rows, bad, "COMMUNICATION_OP", "opId" if "opId" in cols else "rowid"), None
    if "COMMUNICATION_TASK_INFO" in tables:
        rows = con.execute(
            "SELECT MIN(t.startNs), MAX(t.endNs), MIN(t.deviceId), c.name, NULL, NULL, c.opId "
            "FROM COMMUNICATION_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId "
            "GROUP BY c.opId, c.name ORDER BY 1").fetchall()
        if rows:
            return _communication_rows(rows, bad, "COMMUNICATION_TASK_INFO", "opId"), N_(
                "communication ops were rebuilt from COMMUNICATION_TASK_INFO (COMMUNICATION_OP is empty or absent): "
                "each op spans its first to last task")
    return [], None


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = str(value).strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':  # shapes are stored with literal quotes
        text = text[1:-1]
    return "" if text in _MISSING else text


def _append_communication(table: _Rows, comm: list[tuple], strings: _Strings) -> list[int]:
    """Add the communication ops as rows (task type COMMUNICATION); return the (device, start) order."""
    for start, end, device, name_id, type_id, wait in comm:
        name = strings[name_id]
        m = _HCOM_TYPE.match(name)
        table.name.append(name)
        table.op_type.append((strings[type_id] if type_id is not None else "") or (m.group(1) if m else name))
        table.task_type.append("COMMUNICATION")
        table.start_ns.append(start)  # type: ignore[attr-defined]
        table.device.append(int(device or 0))  # type: ignore[attr-defined]
        table.duration_us.append(max(0, end - start) / 1000.0)
        table.wait_us.append(None if wait is None else wait / 1000.0)
        table.block_dim.append(0)
        table.mix_block_dim.append(None)
        for field in ("input_shapes", "input_dtypes", "input_formats", "output_formats", "output_dtypes"):
            getattr(table, field).append("")
        table.op_state.append(None)
    keys = list(zip(table.device, table.start_ns))  # type: ignore[attr-defined]
    return sorted(range(len(keys)), key=keys.__getitem__)


def _reorder(table: _Rows, order: list[int]) -> None:
    if order == list(range(len(order))):
        return
    for field in ("name", "op_type", "task_type", "duration_us", "wait_us", "block_dim", "mix_block_dim",
                  "input_shapes", "input_dtypes", "input_formats", "output_formats", "output_dtypes", "op_state",
                  "start_ns", "device"):
        column = getattr(table, field)
        setattr(table, field, [column[i] for i in order])
    for key, column in table.pipe.items():
        table.pipe[key] = [column[i] for i in order]


def _fill_wait(table: _Rows) -> None:
    """op_summary's rule where no waitNs was stored: gap since the previous task on the same device."""
    starts, devices = table.start_ns, table.device  # type: ignore[attr-defined]
    del table.start_ns, table.device  # type: ignore[attr-defined]
    table.start_us = [start / 1000.0 for start in starts]
    table.device_id = devices
    if None not in table.wait_us:
        return
    ends = [s + round(d * 1000) for s, d in zip(starts, table.duration_us)]
    latest = list(accumulate(ends, max))  # rows are sorted by (device, start): reset per device below
    first = 0
    for i in range(len(starts) + 1):
        if i == len(starts) or devices[i] != devices[first]:
            _segment_waits(table.wait_us, starts, ends, latest, first, i)
            first = i


def _segment_waits(wait: list, starts: list[int], ends: list[int], latest: list[int], lo: int, hi: int) -> None:
    if lo >= hi:
        return
    if lo > 0:  # the running max must not carry over from the previous device
        latest[lo:hi] = accumulate(ends[lo:hi], max)
    if wait[lo] is None:
        wait[lo] = 0.0
    for i in range(lo + 1, hi):
        if wait[i] is None:
            wait[i] = max(0, starts[i] - latest[i - 1]) / 1000.0


# ------------------------------------------------------------------------------------------------
# Compile time
# ------------------------------------------------------------------------------------------------


def _add_compile_time(raw: RawProfile, con: sqlite3.Connection, tables: set[str], strings: "_Strings",
                      bad: columns.BadNumbers) -> None:
    """Online compilation on the host from CANN_API (names interned in STRING_IDS), like api_statistic."""
    if "CANN_API" not in tables or not {"name", "startNs", "endNs"} <= set(_columns(con, "CANN_API")):
        return
    compile_ids = [sid for sid, value in strings.raw.items() if isinstance(value, str) and is_compile_api(value)]
    total, calls = 0.0, 0
    if compile_ids:
        marks = ",".join("?" * len(compile_ids))
        rows = con.execute(f"SELECT startNs, endNs, NULL, rowid FROM CANN_API WHERE name IN ({marks})",
                           compile_ids).fetchall()
        rows = _plausible_tasks(rows, bad, "CANN_API", "rowid")
        total, calls = sum(end - start for start, end, _, _ in rows) / 1000.0, len(rows)
    raw.extra["compile_us"], raw.extra["compile_calls"] = total, calls
