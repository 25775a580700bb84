"""Memory data of a profile (FORMATS.md §10): allocator records, tensors, device HBM and module reservations.

Sources, found by content (a CSV by its header, a DB by its tables), in a profile folder, its
``ASCEND_PROFILER_OUTPUT`` or ``mindstudio_profiler_output``:

* ``memory_record*.csv`` (``Component,Timestamp(us),Total Allocated(MB|KB),Total Reserved(MB|KB)[,Total
  Active(MB)]``; torch_npu writes MB, system msprof KB: the unit is read from the header) or the DB's
  ``MEMORY_RECORD`` (bytes, ns);
* ``operator_memory*.csv`` (``Name,Size(KB),Allocation Time(us),Release Time(us)|Duration(us)``) or ``OP_MEMORY``:
  one row per tensor, no release = still held at the end of the window;
* ``npu_mem*.csv`` (``event,hbm(KB),timestamp(us)``) or ``NPU_MEM``: the process (``app``) and the whole device's
  HBM as the driver sees it;
* ``npu_module_mem*.csv`` (``Component,Timestamp(us),Total Reserved(MB|KB)``) or ``NPU_MODULE_MEM``: per CANN module.

Everything comes out in bytes and µs, as pyarrow tables (a memory record table can hold millions of rows:
CSVs are read with pyarrow.csv, only the columns used; the DB's rows are selected in SQL).

The summary (``memory_summary``, FORMATS.md §10.4–10.5) is what the profile keeps: peaks per allocator
component, the gap at the peak, who holds the memory at that moment, and what the process holds outside the
allocator.

* **Peaks** per (device, component): the highest ``Total Reserved`` with the allocated figure of that same
  record, and the highest ``Total Allocated``. ``PTA+GE`` is the framework-visible total torch_npu builds
  (each PTA or GE record plus the latest of the other), so its peak is the process's, never PTA's + GE's.
* **Gap at the peak** = reserved − allocated at the reserved peak (of the records at that reserved figure, the one
  with the most allocated): what the caching allocator holds that no tensor used at any moment of the peak
  (fragmentation and cache).
* **Holders at the peak**: tensors allocated at or before the peak and released after it (or never, in the
  window), summed by name, largest first.
* **Outside the allocator** = the process's HBM as the driver sees it (``NPU_MEM`` app) at the sample nearest the
  peak − the reserved peak: communication buffers, runtime, workspaces (``NPU_MODULE_MEM`` names the module).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.i18n import M_
from opprof_advisor.core.sqlite_files import connect_readonly, table_names
from opprof_advisor.readers import columns
from opprof_advisor.readers.layouts import _header
from opprof_advisor.readers.columns import plain_header


@dataclass
class MemoryData:
    """A profile's memory tables, bytes and µs; a table is None when the profile has none of it."""

    sources: list[str] = field(default_factory=list)
    records: Any = None  # pyarrow Table: device, component, t_us, allocated, reserved, active (nullable)
    tensors: Any = None  # pyarrow Table: device, name, size, alloc_us, release_us (nullable: held to the end)
    npu: Any = None  # pyarrow Table: device, type ("app" / "device"), t_us, hbm
    modules: Any = None  # pyarrow Table: device, module, t_us, reserved
    notes: list[str] = field(default_factory=list)
    bad: list = field(default_factory=list)  # columns.BadNumbers of each file read

    def empty(self) -> bool:
        return all(table is None or table.num_rows == 0 for table in (self.records, self.tensors, self.npu,
                                                                       self.modules))


def read_memory(sources: list[tuple[Path, str]]) -> MemoryData:
    """The memory tables of ``sources`` (memory_files.memory_sources): the DB's, then each CSV kind the DB lacks (the
    files of one kind concatenated); a broken table is one error naming the file and line."""
    data = MemoryData()
    from_db: set[str] = set()
    parts: dict[str, list] = {}
    for path, kind in sources:
        if kind == "db":
            _read_db(path, data)
            from_db = {k for k in ("records", "tensors", "npu", "modules") if getattr(data, k) is not None}
        elif kind not in from_db:
            bad = columns.BadNumbers(path)
            data.bad.append(bad)
            parts.setdefault(kind, []).append(_read_csv(path, kind, bad))
        else:
            continue
        data.sources.append(str(path))
    for kind, tables in parts.items():
        setattr(data, kind, pa.concat_tables(tables) if len(tables) > 1 else tables[0])
    data.notes.extend(note for bad in data.bad for note in bad.notes())
    return data


# ------------------------------------------------------------------------------------------------
# Numbers: every figure is checked where it is read (CSV and DB alike)
# ------------------------------------------------------------------------------------------------

#: Bytes of one memory figure: 1e15 is a petabyte, far above any device.
BYTES = (0.0, 1e15)
#: Field -> its plausible range (times are µs since the epoch).
BOUNDS = {"allocated": BYTES, "reserved": BYTES, "active": BYTES, "size": BYTES, "hbm": BYTES,
          "t_us": columns.NON_NEGATIVE, "alloc_us": columns.NON_NEGATIVE, "release_us": columns.NON_NEGATIVE}
#: Per kind, the figures a row means nothing without: a row whose figure is missing or bad is left out.
REQUIRED = {"records": ("t_us",), "tensors": ("size", "alloc_us"), "npu": ("t_us", "hbm"), "modules": ("t_us",)}


def _checked(out: dict[str, Any], kind: str, bad: "columns.BadNumbers", names: dict[str, str], raw: dict[str, Any],
             where) -> dict[str, Any]:
    """``out``'s figures (bytes, µs) with each one out of range or not finite made null (counted in ``bad`` under the
    column's name in ``names``, its cell shown from ``raw``; ``where(i)``: the line or row of row i), and the rows
    missing a figure of ``REQUIRED`` left out."""
    keep = None
    for name, (low, high) in BOUNDS.items():
        if name not in out:
            continue
        column = out[name]
        tiny = pc.and_(pc.less(pc.abs(column), columns.TINY), pc.not_equal(column, 0.0))
        if pc.any(tiny).as_py():  # a subnormal is 0, as columns.checked_float reads it
            column = out[name] = pc.if_else(tiny, 0.0, column)
        inside = pc.and_(pc.greater_equal(column, low), pc.less_equal(column, high))  # NaN compares false
        outside = pc.invert(pc.fill_null(inside, True))
        count = pc.sum(outside).as_py() or 0
        if count:
            first = pc.index(outside, True).as_py()
            shown = raw.get(name, column)[first].as_py()
            bad.add(names.get(name, name), where(first), shown, (low, high), count, dropped=name in REQUIRED[kind])
            out[name] = pc.if_else(outside, pa.scalar(None, pa.float64()), column)
        if name in REQUIRED[kind]:
            valid = pc.is_valid(out[name])
            keep = valid if keep is None else pc.and_(keep, valid)
    if keep is not None and not pc.all(keep).as_py():
        out = {name: pc.filter(column, keep) for name, column in out.items()}
    return out


# ------------------------------------------------------------------------------------------------
# CSV (pyarrow.csv, only the columns used)
# ------------------------------------------------------------------------------------------------

#: (field, header name without unit, required) per kind.
_FIELDS = {
    "records": (("component", "component", True), ("t_us", "timestamp", True), ("allocated", "total allocated", True),
                ("reserved", "total reserved", False), ("active", "total active", False)),
    "tensors": (("name", "name", True), ("size", "size", True), ("alloc_us", "allocation time", True),
                ("release_us", "release time", False), ("duration_us", "duration", False)),
    "npu": (("type", "event", True), ("t_us", "timestamp", True), ("hbm", "hbm", True)),
    "modules": (("module", "component", True), ("t_us", "timestamp", True), ("reserved", "total reserved", True)),
}
_TEXT_FIELDS = {"component", "name", "type", "module", "device"}
#: pyarrow's missing-value spellings but NaN: a NaN figure is a number that is not finite, reported like inf.
_NULL_VALUES = [v for v in pacsv.ConvertOptions().null_values if v.lower().lstrip("-") != "nan"]
_DEVICE_HEADERS = ("device_id", "device type", "device")


def _device_ids(column):
    """Device cells as their number: ``NPU:0`` (torch_npu's Device Type) and ``0`` (Device_id, the DB) alike."""
    return pc.replace_substring_regex(pc.cast(column, pa.string()), r"^\D*?(\d+)$", r"\1")


def _read_csv(path: Path, kind: str, bad: "columns.BadNumbers | None" = None):
    header = [cell.strip().lstrip("\ufeff").strip('"') for cell in _header(path)]  # pyarrow names them unquoted
    plain = {plain_header(cell)[0]: (cell, plain_header(cell)[1]) for cell in header}
    chosen: dict[str, tuple[str, float]] = {}
    for name, wanted, required in _FIELDS[kind]:
        if wanted in plain:
            chosen[name] = plain[wanted]
        elif required:
            raise MalformedProfile(f"required column {wanted!r} is missing", path=path, line=1,
                                   hint="export the profile again")
    device = next((plain[h][0] for h in _DEVICE_HEADERS if h in plain), None)
    types = {cell: (pa.string() if name in _TEXT_FIELDS else pa.float64()) for name, (cell, _) in chosen.items()}
    if device:
        types[device] = pa.string()
    try:
        table = _csv_table(path, types)
    except pa.ArrowInvalid as exc:
        # a number pyarrow does not parse (Arabic-Indic digits, 1_000 ...) may still be one: read the figures as text
        # and each cell as Python does; a cell that is no number at all is the error below
        table = _python_numbers(path, kind, types, exc)
    except UnicodeDecodeError as exc:
        raise _unreadable(path, kind, exc) from None
    out = {"device": _device_ids(table.column(device)) if device else pa.array([""] * table.num_rows, pa.string())}
    for name, (cell, factor) in chosen.items():
        column = table.column(cell)
        out[name] = column if name in _TEXT_FIELDS or factor == 1.0 else pc.multiply(column, factor)
    if kind == "tensors" and "release_us" not in out:
        duration = out.pop("duration_us", None)
        out["release_us"] = pc.add(out["alloc_us"], duration) if duration is not None else \
            pa.nulls(table.num_rows, pa.float64())
        if duration is not None:
            chosen["release_us"] = chosen["duration_us"]
    out.pop("duration_us", None)
    if kind == "npu":
        out["type"] = pc.utf8_lower(out["type"])  # msprof writes APP / Device, the DB app / device
    # each figure out of range or not finite (it would reach the JSON as Infinity) is a note naming its line (a row of
    # these tables holds no quoted newline: data row i is line i + 2)
    out = _checked(out, kind, bad if bad is not None else columns.BadNumbers(path),
                   {name: cell for name, (cell, _) in chosen.items()},
                   {name: table.column(cell) for name, (cell, _) in chosen.items()}, lambda i: i + 2)
    rows = len(out["device"])
    if kind == "records" and "reserved" not in out:  # judged without: the peak of allocated, no gap (a note says)
        out["reserved"] = pa.nulls(rows, pa.float64())
    if kind == "records" and "active" not in out:
        out["active"] = pa.nulls(rows, pa.float64())
    return pa.table(out)


def _csv_table(path: Path, types: dict[str, Any]):
    return pacsv.read_csv(path, read_options=pacsv.ReadOptions(encoding="utf-8-sig"),
                          convert_options=pacsv.ConvertOptions(include_columns=list(types), column_types=types,
                                                               strings_can_be_null=False, null_values=_NULL_VALUES))


def _unreadable(path: Path, kind: str, exc: Exception, line: int | None = None) -> MalformedProfile:
    found = re.search(r"[Rr]ow #?(\d+)", str(exc))
    return MalformedProfile(f"not a readable {kind} table: {str(exc).splitlines()[0][:120]}", path=path,
                            line=line or (int(found.group(1)) if found else None), hint="export the profile again")


def _python_numbers(path: Path, kind: str, types: dict[str, Any], exc: Exception):
    """The table with its figures parsed by ``columns.checked_float`` (a number out of range is NaN: noted later)."""
    try:
        text = _csv_table(path, {cell: pa.string() for cell in types})
    except (pa.ArrowInvalid, UnicodeDecodeError) as again:
        raise _unreadable(path, kind, again) from None
    figures = {}
    for cell, kind_of in types.items():
        column = text.column(cell)
        if kind_of == pa.string():
            figures[cell] = column
            continue
        values = []
        for row, value in enumerate(column.to_pylist(), start=2):
            number = columns.checked_float(value) if value is not None else None
            if number is None and value is not None and value.strip() not in _NULL_VALUES:
                raise _unreadable(path, kind, exc, row)  # text where a figure belongs
            values.append(float("nan") if isinstance(number, columns.Bad) else number)
        figures[cell] = pa.array(values, pa.float64())
    return pa.table(figures)


# ------------------------------------------------------------------------------------------------
# DB (torch_npu / msprof export): bytes and ns, names through STRING_IDS
# ------------------------------------------------------------------------------------------------

# Each query selects the figures raw (a cell may hold text or a REAL where an INTEGER belongs; SQL arithmetic would
# turn text into 0), then the row id; ``_DB_COLUMNS`` names each figure's column (ns columns are turned into µs).
_DB_QUERIES = {
    "records": ("MEMORY_RECORD", "SELECT CAST(m.deviceId AS TEXT), COALESCE(s.value, CAST(m.component AS TEXT)), "
                "m.timestamp, m.totalAllocated, m.totalReserved, m.totalActive, m.rowid "
                "FROM MEMORY_RECORD m LEFT JOIN STRING_IDS s ON s.id = m.component",
                ("device", "component", "t_us", "allocated", "reserved", "active")),
    "tensors": ("OP_MEMORY", "SELECT CAST(o.deviceId AS TEXT), COALESCE(s.value, CAST(o.name AS TEXT)), o.size, "
                "o.allocationTime, o.releaseTime, o.rowid FROM OP_MEMORY o "
                "LEFT JOIN STRING_IDS s ON s.id = o.name", ("device", "name", "size", "alloc_us", "release_us")),
    "npu": ("NPU_MEM", "SELECT CAST(n.deviceId AS TEXT), COALESCE(s.value, CAST(n.type AS TEXT)), "
            "n.timestampNs, n.hbm, n.rowid FROM NPU_MEM n LEFT JOIN STRING_IDS s ON s.id = n.type",
            ("device", "type", "t_us", "hbm")),
    "modules": ("NPU_MODULE_MEM", "SELECT CAST(n.deviceId AS TEXT), COALESCE(e.name, CAST(n.moduleId AS TEXT)), "
                "n.timestampNs, n.totalReserved, n.rowid FROM NPU_MODULE_MEM n "
                "LEFT JOIN ENUM_MODULE e ON e.id = n.moduleId", ("device", "module", "t_us", "reserved")),
}
#: (table, field) -> the DB column it comes from; the times are ns.
_DB_COLUMNS = {"MEMORY_RECORD": {"t_us": "timestamp", "allocated": "totalAllocated", "reserved": "totalReserved",
                                 "active": "totalActive"},
               "OP_MEMORY": {"size": "size", "alloc_us": "allocationTime", "release_us": "releaseTime"},
               "NPU_MEM": {"t_us": "timestampNs", "hbm": "hbm"},
               "NPU_MODULE_MEM": {"t_us": "timestampNs", "reserved": "totalReserved"},
               "NPU_OP_MEM": {"t_us": "timestampNs", "allocated": "totalAllocate", "reserved": "totalReserve"}}
_NS_FIELDS = frozenset({"t_us", "alloc_us", "release_us"})


#: GE's allocator totals from msprof's NPU_OP_MEM (allocate / release events of operators; no MEMORY_RECORD there).
_GE_RECORDS = ("SELECT CAST(deviceId AS TEXT), 'GE', timestampNs, totalAllocate, totalReserve, NULL, rowid "
               "FROM NPU_OP_MEM")


def _floats(values: list) -> Any:
    """A float64 array of DB cells (SQLite integers fit a float); a cell that is not a number (text, a blob) becomes
    NaN, reported as bad by ``_checked``."""
    nan = float("nan")
    return pa.array([v if type(v) is float else float(v) if type(v) is int else None if v is None else nan
                     for v in values], pa.float64())


def _db_table(rows: list[tuple], names: tuple[str, ...], table: str, kind: str, bad: "columns.BadNumbers"):
    """The rows of one memory table as a pyarrow table, every figure checked (``_checked``)."""
    text = {"device", "component", "name", "type", "module"}
    out, raw = {}, {}
    for i, name in enumerate(names):
        values = [row[i] for row in rows]
        if name in text:
            out[name] = pa.array(values, pa.string())
            continue
        raw[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
        column = _floats(values)
        out[name] = pc.divide(column, 1000.0) if name in _NS_FIELDS else column
    ids = [row[len(names)] for row in rows]
    columns_of = {name: f"{table}.{col}" for name, col in _DB_COLUMNS[table].items()}
    return pa.table(_checked(out, kind, bad, columns_of, raw, lambda i: f"{table} rowid {ids[i]}"))


def _read_db(path: Path, data: MemoryData) -> bool:
    """Fill ``data`` from the DB's memory tables; False when it has none."""
    tables = table_names(path)
    if "STRING_IDS" not in tables:
        return False
    try:
        conn = connect_readonly(path, immutable=True)
    except sqlite3.Error:
        return False
    bad = columns.BadNumbers(path)
    data.bad.append(bad)
    try:
        found = False
        for kind, (table, sql, names) in _DB_QUERIES.items():
            if kind == "records" and table not in tables and "NPU_OP_MEM" in tables:
                table, sql = "NPU_OP_MEM", _GE_RECORDS  # msprof --task-memory=on: GE's totals per operator event
            if table not in tables or (kind == "modules" and "ENUM_MODULE" not in tables):
                continue
            rows = conn.execute(sql).fetchall()
            if not rows:
                continue  # (an empty table leaves the kind to a CSV beside the DB)
            setattr(data, kind, _db_table(rows, names, table, kind, bad))
            found = found or bool(rows)
        return found
    except sqlite3.DatabaseError as exc:
        raise MalformedProfile(f"cannot read the memory tables: {exc}", path=path,
                               hint="export the profile again") from None
    finally:
        conn.close()


# ------------------------------------------------------------------------------------------------
# The summary
# ------------------------------------------------------------------------------------------------

#: The component whose peak is the process's framework-visible peak, in order of preference.
MAIN_COMPONENTS = ("PTA+GE", "PTA", "GE", "APP")
#: Holders and modules listed.
TOP = 5
#: Points of each component's memory curve (the records bucketed in time, each bucket's highest values).
CURVE_POINTS = 200
MIB = 1024.0 * 1024.0


def memory_summary(data: MemoryData) -> dict[str, Any] | None:
    """The memory block of a profile document (bytes, µs), or None when the profile holds no memory data."""
    if data.empty():
        return None
    facts: dict[str, Any] = {"sources": list(data.sources), "components": [], "peak": None, "holders": [],
                             "activations": None, "before_window": None,
                             "device_hbm": None, "outside_allocator": None, "modules": [], "notes": list(data.notes)}
    records = data.records
    if records is not None and records.num_rows:
        facts["components"] = _components(records)
        if not pc.any(pc.is_valid(records["reserved"])).as_py():
            facts["notes"].append(M_("cannot judge fragmentation: the memory records have no Total Reserved column "
                                     "(collect with the torch_npu profiler's profile_memory=True, which records what "
                                     "the allocator reserves)"))
        main = _main(facts["components"])
        if main is not None:
            facts["peak"] = main
            facts["curve"] = _curves(records, main["device"])
            others = [c for c in facts["components"] if c["component"] == main["component"]
                      and c["device"] != main["device"] and c["peak_reserved"]]
            if others:
                listed = ", ".join(f"device {c['device']} {c['peak_reserved'] / MIB:.0f} MiB (gap "
                                   f"{(c['gap_share'] or 0.0):.0%})" for c in others[:7])
                facts["notes"].append(M_("{n} devices: the figures are device {device}'s, the largest; the others' "
                                         "{component} peaks: {listed}", n=len(others) + 1, device=main["device"],
                                         component=main["component"], listed=listed))
    else:
        facts["notes"].append(M_("cannot judge the allocator's peak and its gap: no memory record table (collect "
                                 "with profile_memory=True)"))
    peak = facts["peak"]
    if data.tensors is not None and data.tensors.num_rows and peak is not None:
        facts["holders"], facts["holders_total"] = _holders(data.tensors, peak)
        facts["activations"] = _activations(data.tensors, peak)
        if peak["allocated"]:  # static memory: weights, gradients, optimizer states (in training) held all along
            # the window's tensors are the framework's (PTA); what GE allocates is its own, not held from before
            graph = _allocated_at(records, peak, "GE") if peak["component"] == "PTA+GE" else 0.0
            facts["before_window"] = {"bytes": max(0.0, peak["allocated"] - facts["holders_total"] - graph)}
            if facts["holders_total"] < 0.9 * peak["allocated"]:
                facts["notes"].append(M_("the tensors listed at the peak hold {held:.0f} MiB of the {allocated:.0f} "
                                         "MiB allocated: the rest was allocated before the profiled window (start the "
                                         "profiler earlier to see it)", held=facts["holders_total"] / MIB,
                                         allocated=peak["allocated"] / MIB))
    npu = _on_device(data.npu, peak)
    if npu is not None and npu.num_rows:
        hbm = {}
        for kind in ("app", "device"):
            rows = npu.filter(pc.equal(npu["type"], kind))
            if rows.num_rows:
                hbm[f"{kind}_peak"] = float(pc.max(rows["hbm"]).as_py())
        facts["device_hbm"] = hbm or None
    if peak is not None and peak["component"] != "APP" and peak["reserved"] is not None:
        # the process as the driver sees it: NPU_MEM's app samples, else the APP records torch_npu writes from them
        app = npu.filter(pc.equal(npu["type"], "app")) if npu is not None else None
        if app is None or not app.num_rows:
            apps = _on_device(records, peak)
            app = apps.filter(pc.equal(apps["component"], "APP")).rename_columns(
                ["hbm" if name == "reserved" else name for name in apps.column_names]) if apps is not None else None
        app = app.filter(pc.is_valid(app["hbm"])) if app is not None else None
        if app is not None and app.num_rows:
            nearest = pc.abs(pc.subtract(app["t_us"], peak["at_us"]))
            at = pc.index(nearest, pc.min(nearest)).as_py()
            held = float(app["hbm"][at].as_py())
            facts["outside_allocator"] = {"bytes": max(0.0, held - peak["reserved"]), "app_hbm": held,
                                          "sample_us": float(app["t_us"][at].as_py())}
    modules = _on_device(data.modules, peak)
    if modules is not None and modules.num_rows:
        grouped = modules.group_by("module").aggregate([("reserved", "max")])
        rows = sorted(((m, r) for m, r in zip(grouped["module"].to_pylist(), grouped["reserved_max"].to_pylist())
                       if r is not None), key=lambda r: -r[1])
        facts["modules"] = [{"module": m, "peak_reserved": r} for m, r in rows[:TOP] if r > 0]
    return facts


def _on_device(table, peak: dict[str, Any] | None):
    """The rows of ``table`` on the peak's device (all of them when the table names no device or that one)."""
    if table is None or peak is None or not peak.get("device"):
        return table
    same = pc.equal(table["device"], peak["device"])
    return table.filter(same) if pc.any(same).as_py() else table


def _curves(records, device: str) -> dict[str, Any]:
    """Each component's memory over time on ``device``: ms from the first record, and per time bucket the highest
    reserved and allocated bytes (the peak stays visible however many records there are)."""
    part = records.filter(pc.equal(records["device"], device))
    first, last = pc.min(part["t_us"]).as_py(), pc.max(part["t_us"]).as_py()
    span = (last - first) or 1.0
    bucket = pc.cast(pc.floor(pc.multiply(pc.divide(pc.subtract(part["t_us"], first), span), CURVE_POINTS - 1)),
                     pa.int64())
    table = pa.table({"component": part["component"], "bucket": bucket, "t_us": part["t_us"],
                      "reserved": part["reserved"], "allocated": part["allocated"]})
    grouped = table.group_by(["component", "bucket"]).aggregate([("t_us", "min"), ("reserved", "max"),
                                                                 ("allocated", "max")])
    curves: dict[str, list[list[float]]] = {}
    for component, t, reserved, allocated in sorted(zip(*(grouped[c].to_pylist() for c in (
            "component", "t_us_min", "reserved_max", "allocated_max"))), key=lambda r: (r[0], r[1])):
        curves.setdefault(component, []).append([round((t - first) / 1000.0, 3), reserved, allocated])
    return {"start_us": first, "series": curves}


def _allocated_at(records, peak: dict[str, Any], component: str) -> float:
    """What ``component`` had allocated on the peak's device at the peak (its last record up to then), else 0."""
    rows = _on_device(records, peak)
    rows = rows.filter(pc.and_(pc.and_(pc.equal(rows["component"], component),
                                       pc.less_equal(rows["t_us"], peak["at_us"])), pc.is_valid(rows["allocated"])))
    if not rows.num_rows:
        return 0.0
    return float(rows["allocated"][pc.index(rows["t_us"], pc.max(rows["t_us"])).as_py()].as_py())


def _components(records) -> list[dict[str, Any]]:
    grouped = records.group_by(["device", "component"]).aggregate([("allocated", "max"), ("reserved", "max"),
                                                                   ("reserved", "count")])
    found = []
    for device, component, allocated, reserved, rows in zip(*(grouped[c].to_pylist() for c in (
            "device", "component", "allocated_max", "reserved_max", "reserved_count"))):
        part = records.filter(pc.and_(pc.equal(records["device"], device), pc.equal(records["component"], component)))
        # reserved stays at its peak over many records: the busiest of them (most allocated) leaves the gap that
        # no tensor used at any moment of the peak
        at = -1
        if reserved is not None:
            plateau = pc.if_else(pc.equal(part["reserved"], reserved), part["allocated"], None)
            busiest = pc.max(plateau).as_py()
            at = pc.index(plateau, busiest).as_py() if busiest is not None else pc.index(part["reserved"], reserved).as_py()
        elif allocated is not None:  # no reserved column: the peak is the allocated one
            at = pc.index(part["allocated"], allocated).as_py()
        value = part["allocated"][at].as_py() if at >= 0 else None
        allocated_then = float(value) if value is not None else None  # APP rows carry no allocated figure
        gap = reserved - allocated_then if reserved is not None and allocated_then is not None else None
        found.append({"device": device, "component": component, "rows": rows, "peak_reserved": reserved,
                      "peak_allocated": allocated, "allocated_at_peak": allocated_then,
                      "at_us": float(part["t_us"][at].as_py()) if at >= 0 else None, "gap": gap,
                      "gap_share": gap / reserved if gap is not None and reserved else None})
    order = {name: i for i, name in enumerate(MAIN_COMPONENTS)}
    return sorted(found, key=lambda c: (c["device"], order.get(c["component"], len(order)), c["component"]))


def _main(components: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The framework-visible peak: PTA+GE where torch_npu wrote it, else PTA, GE, APP; the device with the most."""
    for name in MAIN_COMPONENTS:
        rows = [c for c in components if c["component"] == name and (c["peak_reserved"] or c["peak_allocated"])]
        if rows:
            top = max(rows, key=lambda c: c["peak_reserved"] or c["peak_allocated"])
            return {"device": top["device"], "component": name, "reserved": top["peak_reserved"],
                    "allocated": top["allocated_at_peak"], "gap": top["gap"], "gap_share": top["gap_share"],
                    "at_us": top["at_us"]}
    return None


#: Operators of the backward pass (``aten::mm_backward``, ``ConvolutionBackward0``, ``Conv2DBackpropInput``,
#: ``*Grad``), and of the optimizer's multi-tensor step.
_BACKWARD = r"(?i)backward|backprop|grad"
_OPTIMIZER = r"_foreach_|(?i:optimizer)"


def _activations(tensors, peak: dict[str, Any]) -> dict[str, Any] | None:
    """What the activations hold at the peak: tensors a forward operator allocated before the backward pass began
    (the first backward operator's allocation) and that were freed after it began — saved for the backward pass.
    Tensors never freed in the window (weights, caches) are not counted. None without a backward operator (not a
    training step, or its names do not say)."""
    names = tensors["name"]
    backward = pc.match_substring_regex(names, _BACKWARD)
    if not pc.any(backward).as_py():
        return None
    start = pc.min(tensors.filter(backward)["alloc_us"]).as_py()
    t = peak["at_us"]
    kept = pc.and_kleene(pc.less(tensors["alloc_us"], start), pc.greater_equal(tensors["release_us"], start))
    held = pc.and_kleene(pc.less_equal(tensors["alloc_us"], t), pc.greater(tensors["release_us"], t))
    forward = pc.invert(pc.or_(backward, pc.match_substring_regex(names, _OPTIMIZER)))
    mask = pc.and_kleene(pc.and_kleene(kept, held), forward)
    if peak["device"]:
        mask = pc.and_kleene(mask, pc.equal(tensors["device"], peak["device"]))
    rows = tensors.filter(pc.fill_null(mask, False))
    grouped = rows.group_by("name").aggregate([("size", "sum")]) if rows.num_rows else None
    top = sorted(zip(grouped["name"].to_pylist(), grouped["size_sum"].to_pylist()), key=lambda r: (-r[1], r[0])) \
        if grouped is not None else []
    return {"bytes": float(pc.sum(rows["size"]).as_py() or 0.0), "tensors": rows.num_rows, "backward_from_us": start,
            "operators": [name for name, _ in top[:3]]}


def _holders(tensors, peak: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    t = peak["at_us"]
    same = pc.equal(tensors["device"], peak["device"]) if peak["device"] else None
    held = pc.and_(pc.less_equal(tensors["alloc_us"], t),
                   pc.or_kleene(pc.is_null(tensors["release_us"]), pc.greater(tensors["release_us"], t)))
    rows = tensors.filter(pc.and_(held, same) if same is not None and pc.any(same).as_py() else held)
    if not rows.num_rows:
        return [], 0.0
    grouped = rows.group_by("name").aggregate([("size", "sum"), ("size", "count"), ("alloc_us", "min")])
    names = grouped["name"].to_pylist()
    sizes = grouped["size_sum"].to_pylist()
    counts = grouped["size_count"].to_pylist()
    first = grouped["alloc_us_min"].to_pylist()
    order = sorted(range(len(names)), key=lambda i: (-sizes[i], names[i]))
    holders = [{"name": names[i], "bytes": sizes[i], "tensors": counts[i], "held_for_us": round(t - first[i], 3)}
               for i in order[:TOP]]
    return holders, float(sum(sizes))
