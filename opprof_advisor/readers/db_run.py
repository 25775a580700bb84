"""The run facts of a profiler DB beside its kernels: step split and windows, chip, clock, versions, core counts.

The step split is the export's own: ``OVERLAP_ANALYSIS`` summed per type within each ``STEP_TIME`` window, else
torch_npu's ``analysis.db`` ``StepTraceTime`` beside the DB (a note says when the two differ by more than
STEP_AGREEMENT); ``analysis.db`` also holds the communication times (``CommAnalyzerTime``). The chip comes from
``NPU_INFO``, the AI Core clock from ``AICORE_FREQ`` (the one most samples ran at), versions from ``META_DATA`` and
``profiler_info*.json``, core counts from ``PROF_*/device_*/info.json.*``. ``readers/msprof_db.py`` reads the kernels
and calls these; ``_tables`` and ``_columns`` are the schema look-ups both use.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from opprof_advisor.core import steps
from opprof_advisor.core.models import StepSplit
from opprof_advisor.readers.communication import analysis_communication
from opprof_advisor.readers import columns
from opprof_advisor.readers.base import RawProfile
from opprof_advisor.readers.layouts import is_sqlite
from opprof_advisor.core.sidefile import dig, read_json, small_int
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.readers.db_numbers import FREQ_MHZ, _number, _plausible_tasks, _plausible_windows


def _tables(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in con.execute(f'PRAGMA table_info("{table}")')]


# ------------------------------------------------------------------------------------------------
# Metadata
# ------------------------------------------------------------------------------------------------


def _chip(con: sqlite3.Connection, tables: set[str]) -> str | None:
    if "NPU_INFO" not in tables:
        return None
    names = sorted({r[0] for r in con.execute("SELECT name FROM NPU_INFO") if r[0]})
    return "/".join(names) or None


# ------------------------------------------------------------------------------------------------
# Steps
# ------------------------------------------------------------------------------------------------

#: OVERLAP_ANALYSIS.type -> step_trace_time column. The msprof overlap assembler writes the four kinds
#: in this order (Computing, Communication, Communication(Not Overlapped), Free); on the real torch_npu
#: level1 DB the sums per type equal analysis.db StepTraceTime to the nanosecond.
OVERLAP_TYPES = {0: "Computing", 1: "Communication", 2: "Communication(Not Overlapped)", 3: "Free"}
#: analysis.db StepTraceTime column -> step_trace_time column.
_ANALYSIS_COLUMNS = {"computing": "Computing", "communication_not_overlapped": "Communication(Not Overlapped)",
                     "overlapped": "Overlapped", "communication": "Communication", "free": "Free", "stage": "Stage",
                     "bubble": "Bubble", "preparing": "Preparing"}
#: The step split of two tables of one export may differ by this much before a note says so.
STEP_AGREEMENT = 0.03


def _add_steps(raw: RawProfile, con: sqlite3.Connection, tables: set[str], path: Path,
               bad: columns.BadNumbers) -> None:
    """The export's own step split (OVERLAP_ANALYSIS, else analysis.db StepTraceTime) and its step windows."""
    windows = _step_windows(con, tables, bad)
    if windows:
        raw.extra["step_windows"] = windows
    analysis = _analysis_steps(path, raw.notes)
    overlap = _overlap_steps(con, tables, windows, bad)
    chosen = overlap or analysis
    if chosen:
        raw.extra["steps"] = chosen
        raw.extra["step_source"] = "OVERLAP_ANALYSIS" if overlap else "analysis.db StepTraceTime"
    if overlap and analysis:
        ours, theirs = steps.total(overlap), steps.total(analysis)
        for field in ("computing_us", "exposed_us", "free_us"):
            a, b = getattr(ours, field), getattr(theirs, field)
            if max(a, b) and abs(a - b) > STEP_AGREEMENT * max(a, b):
                raw.notes.append(f"the step split of OVERLAP_ANALYSIS and analysis.db StepTraceTime differ "
                                 f"({field[:-3]} {a:.1f} vs {U.time(b)}); the first is used")
                break


def _step_windows(con: sqlite3.Connection, tables: set[str], bad: columns.BadNumbers) -> list[tuple[str, float, float]]:
    if "STEP_TIME" not in tables or not {"id", "startNs", "endNs"} <= set(_columns(con, "STEP_TIME")):
        return []
    rows = con.execute("SELECT startNs, endNs, NULL, id FROM STEP_TIME WHERE endNs > startNs ORDER BY startNs"
                       ).fetchall()
    return [(str(step), start / 1000.0, end / 1000.0) for start, end, _, step in
            _plausible_windows(rows, bad, "STEP_TIME", "id")]


def _overlap_steps(con: sqlite3.Connection, tables: set[str], windows: list[tuple[str, float, float]],
                   bad: columns.BadNumbers) -> list[StepSplit]:
    if "OVERLAP_ANALYSIS" not in tables or not {"startNs", "endNs", "type"} <= set(_columns(con, "OVERLAP_ANALYSIS")):
        return []
    rows = con.execute("SELECT startNs, endNs, type, rowid FROM OVERLAP_ANALYSIS WHERE endNs >= startNs").fetchall()
    groups: dict[str | None, list[tuple[int, int, int]]] = {}
    for start, end, kind, _ in _plausible_tasks(rows, bad, "OVERLAP_ANALYSIS", "rowid"):
        groups.setdefault(_window_of(windows, start / 1000.0), []).append((start, end, kind))
    found = []
    for step, items in groups.items():
        totals = {column: 0.0 for column in OVERLAP_TYPES.values()}
        for start, end, kind in items:
            if kind in OVERLAP_TYPES:
                totals[OVERLAP_TYPES[kind]] += (end - start) / 1000.0
        totals["Stage"] = (max(e for _, e, _ in items) - min(s for s, _, _ in items)) / 1000.0
        split = steps.from_trace_row(step, totals)
        if split is not None:
            found.append(split)
    return sorted(found, key=lambda s: steps._step_key(s.step))


def _window_of(windows: list[tuple[str, float, float]], start_us: float) -> str | None:
    for step, lo, hi in windows:
        if lo <= start_us < hi:
            return step
    return None


def _analysis_db(db: Path) -> sqlite3.Connection | None:
    """torch_npu's analysis.db beside the DB (communication scenes), opened read-only, or None."""
    analysis = db.parent / "analysis.db"
    if not analysis.is_file() or not is_sqlite(analysis):
        return None
    try:
        return sqlite3.connect(analysis.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None


def _analysis_steps(db: Path, notes: list[str]) -> list[StepSplit]:
    """analysis.db StepTraceTime: torch_npu's step split of a DB export."""
    con = _analysis_db(db)
    if con is None:
        return []
    try:
        if "StepTraceTime" not in _tables(con):
            return []
        cols = _columns(con, "StepTraceTime")
        wanted = [c for c in cols if c in _ANALYSIS_COLUMNS]
        rows = con.execute(f"SELECT {', '.join(['step'] if 'step' in cols else ['NULL'])}, "
                           f"{', '.join(wanted)} FROM StepTraceTime").fetchall()
    except sqlite3.DatabaseError:
        return []
    finally:
        con.close()
    found = []
    bad = columns.BadNumbers(db.parent / "analysis.db")
    for number, (step, *values) in enumerate(rows, start=1):
        numbers = {_ANALYSIS_COLUMNS[c]: bad.number(v, f"StepTraceTime.{c}", f"StepTraceTime row {number}",
                                                    columns.STEP_US)
                   for c, v in zip(wanted, values) if isinstance(v, (int, float)) and not isinstance(v, bool)}
        numbers = {k: v for k, v in numbers.items() if v is not None}
        split = steps.from_trace_row(None if step in (None, "") else str(step), numbers)
        if split is not None:
            found.append(split)
    notes.extend(bad.notes())
    return found


def _analysis_communication(db: Path) -> dict[str, float]:
    """analysis.db CommAnalyzerTime summed like communication.json (readers.communication)."""
    con = _analysis_db(db)
    if con is None:
        return {}
    try:
        return analysis_communication(con)
    finally:
        con.close()


def _freq(con: sqlite3.Connection, tables: set[str], bad: columns.BadNumbers) -> float | None:
    """The most frequent AI Core clock in AICORE_FREQ (MHz), the clock the run spent most samples at."""
    if "AICORE_FREQ" not in tables or "freq" not in _columns(con, "AICORE_FREQ"):
        return None
    for freq, count in con.execute("SELECT freq, COUNT(*) FROM AICORE_FREQ WHERE freq > 0 GROUP BY freq "
                                   "ORDER BY COUNT(*) DESC, freq DESC"):
        number = _number(freq, FREQ_MHZ)
        if not isinstance(number, columns.Bad):
            return number
        bad.add("AICORE_FREQ.freq", None, freq, FREQ_MHZ, count)
    return None


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
            data = read_json(info)
        except (OSError, ValueError):
            continue
        config = dig(data, "config", "experimental_config")
        found = {"torch_npu": dig(data, "torch_npu_version"), "cann": dig(data, "cann_version"),
                 "profiler_level": dig(config, "_profiler_level"), "aic_metrics": dig(config, "_aic_metrics")}
        return {k: str(v) for k, v in found.items() if v}
    return {}


def _core_counts(db: Path) -> dict[str, int]:
    """ai_core_num / aiv_num from PROF_*/device_*/info.json.* beside a msprof DB, when kept."""
    for info in sorted(db.parent.glob("device_*/info.json.*")):
        if info.name.endswith(".done"):
            continue
        try:
            device = read_json(info)["DeviceInfo"][0]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
        counts = {"aic": small_int(dig(device, "ai_core_num")), "aiv": small_int(dig(device, "aiv_num"))}
        return {k: v for k, v in counts.items() if v}
    return {}
