"""MindSpore 1.x profiler output (and the ``profiler/`` folder 2.x keeps): per-op summaries, FORMATS.md §11.2.

``aicore_intermediate_<id>_detail.csv`` has one row per AI Core op: ``full_op_name`` (2.x: ``full_kernel_name``)
and its time in ms, ``execution_time`` (2.x: ``task_duration``), with ``execution_frequency`` from 1.3 on. With a
frequency the time is the average per execution, so an op's total is time x frequency; the two-column 1.0-1.2
file gives the time per step already. ``framework_raw_<id>.csv`` names each op's type (``full_op_name`` ->
``op_type``); ``aicpu_intermediate_<id>.csv`` lists the AI CPU ops (``op_type``, ``execution_time`` ms). Files are
recognised by their headers, whatever their names. There are no launches: the profile is built from the op
types (``profile.builder``, as for a light export) and the notes say what needs the 2.x profiler.

``step_trace_raw_<id>_detail_time.csv`` gives the steps (mindspore-ai/mindspore@650d3f4b:mindspore/python/mindspore/
profiler/parser/step_trace_parser.py): ``step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,
fp_and_bp,tail`` and a column per AllReduce (``stream_<id>_<n>``...), in units of 10 ns, the last row the average
(``step_num`` "-"). Inference runs drop ``bp_point`` and ``tail`` and call the forward time ``fp``. Each step is
read as: free = iteration_interval (the gap before the forward pass starts: data loading, host work), computing =
fp_and_bp + tail (the tail after the backward pass, gradient AllReduce and the update, is not split further), wall
time = total.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.models import StepSplit
from opprof_advisor.readers import columns, csvfile
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile
from opprof_advisor.readers.layouts import header_names

FORMAT = "mindspore-text"
#: Header fingerprints (normalised): a file is what its header says.
DETAIL = ({"full_op_name", "full_kernel_name"}, {"execution_time", "task_duration"})
FRAMEWORK = {"task_id", "stream_id", "block_dim", "full_op_name", "op_type"}
AICPU = {"op_type", "execution_time"}
STEP_TRACE = {"step_num", "start_point", "end_point", "total", "fp_point", "iteration_interval"}
#: step_trace_raw values are in units of 10 ns (step_trace_parser.py: "The unit of duration is 10ns").
STEP_TRACE_UNIT_US = 0.01
#: A step trace value above this (10 ns units: about 11.6 days) is not a plausible step.
STEP_TRACE_MAX = 1e14
#: Where 1.x puts its files below the path given.
FOLDERS = ("", "profiler", "data/profiler")


def _kind(path: Path) -> str | None:
    header = header_names(path)
    if header & DETAIL[0] and header & DETAIL[1]:
        return "detail"
    if FRAMEWORK <= header:
        return "framework"
    if STEP_TRACE <= header:
        return "step_trace"
    if AICPU <= header and "kernel_type" not in header and ("serial_number" in header or "serial_num" in header):
        return "aicpu"
    return None


def find_files(path: Path) -> dict[str, list[Path]]:
    """The detail, framework_raw and aicpu tables under ``path`` (or its profiler/ folder), by header."""
    found: dict[str, list[Path]] = defaultdict(list)
    for sub in FOLDERS:
        folder = path / sub if sub else path
        if not folder.is_dir():
            continue
        for file in sorted(folder.iterdir()):
            if file.suffix.lower() == ".csv" and file.is_file():
                kind = _kind(file)
                if kind:
                    found[kind].append(file)
        if found.get("detail"):
            break
    return dict(found)


class MindSpore1Reader:
    """MindSpore 1.x per-op summaries (aicore_intermediate_*_detail.csv and companions)."""

    name = "mindspore1"

    def detect(self, path: Path) -> bool:
        return path.is_dir() and bool(find_files(path).get("detail"))

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        files = find_files(path)
        notes: list[str] = []
        types = {}
        for framework in files.get("framework", []):
            types.update(_op_types(framework))
        rows: dict[tuple[str, str], dict] = {}
        per_step = False
        bad: list[columns.BadNumbers] = []  # numbers out of range or not finite: their rows are left out, with a note
        for detail in files["detail"]:
            for name, count, total_us, two_columns in _detail_rows(detail, bad):
                per_step = per_step or two_columns
                op_type = types.get(name) or name.rsplit("/", 1)[-1].split("-op")[0]
                _add(rows, op_type, "AI_CORE", count, total_us)
        for aicpu in files.get("aicpu", []):
            for op_type, total_us in _aicpu_rows(aicpu, bad):
                _add(rows, op_type, "AI_CPU", 1, total_us)
        if len(files["detail"]) > 1:
            notes.append(f"{len(files['detail'])} devices' op tables ({', '.join(f.name for f in files['detail'])}): "
                         "their op types are summed")
        steps = read_step_trace(files["step_trace"][0], bad) if files.get("step_trace") else []
        notes.extend(note for found in bad for note in found.notes())
        if not files.get("framework"):
            notes.append("framework_raw_<id>.csv is missing: op types are taken from the op names")
        notes.append("MindSpore 1.x per-op summaries: op types and their time over the profiled steps"
                     + (" (per step: the two-column 1.0-1.2 table)" if per_step else "")
                     + (" and the steps (step_trace_raw: free = the gap before each forward pass, the rest "
                        "computing)" if steps else "")
                     + " are judged; launches, " + ("" if steps else "the step split, ")
                     + "bound classes and block dims need the MindSpore 2.3+ profiler (mindspore.Profiler, *_ascend_ms)")
        raw = RawProfile(path=str(path), format=FORMAT, kernels=KernelTable(), notes=notes)
        if steps:
            trace = files["step_trace"][0]
            raw.extra["steps"], raw.extra["step_source"] = steps, trace.name
            if len(files["step_trace"]) > 1:
                notes.append(f"{len(files['step_trace'])} devices' step traces: the steps are those of {trace.name}")
        raw.extra["op_statistic"] = list(rows.values())
        raw.extra["light"] = ["mindspore1"]
        return raw


def _add(rows: dict, op_type: str, core: str, count: int, total_us: float) -> None:
    item = rows.setdefault((op_type, core), {"op_type": op_type, "core_type": core, "count": 0, "total_us": 0.0})
    item["count"] += count
    item["total_us"] += total_us


def _table(path: Path) -> tuple[dict[str, int], list[list[str]]]:
    header, rows = csvfile.read_rows(path)
    return {columns.normalise_header(name): at for at, name in enumerate(header)}, rows


def _cell(row: list[str], at: int | None) -> str:
    return row[at].strip() if at is not None and at < len(row) else ""


#: A time of these tables (ms): up to columns.DURATION_US.
_MS = (0.0, columns.DURATION_US[1] / 1000.0)


def _checked(bad: list, path: Path, row: list[str], at: int | None, name: str, line: int,
             bounds: tuple[float, float]) -> float | None | columns.Bad:
    """The cell's number; Bad (counted in the file's BadNumbers, the last of ``bad``) when out of ``bounds``."""
    value = columns.checked_float(_cell(row, at), bounds)
    if isinstance(value, columns.Bad):
        if not bad or bad[-1].path != path:
            bad.append(columns.BadNumbers(path))
        bad[-1].add(name, line, value.cell, bounds, dropped=True)
    return value


def _detail_rows(path: Path, bad: list | None = None):
    """(op name, executions, total µs, two-column table?) per row; a row whose time or count is a number out of range
    or not finite is left out (counted in ``bad``), a row without them is one line naming it."""
    bad = bad if bad is not None else []
    index, rows = _table(path)
    name_at = index.get("full_op_name", index.get("full_kernel_name"))
    time_at = index.get("execution_time", index.get("task_duration"))
    count_at = index.get("execution_frequency")
    for number, row in zip(rows.lines, rows):
        name = _cell(row, name_at)
        time_ms = _checked(bad, path, row, time_at, "execution_time", number, _MS)
        count = _checked(bad, path, row, count_at, "execution_frequency", number, columns.COUNT) \
            if count_at is not None else 1.0
        if isinstance(time_ms, columns.Bad) or isinstance(count, columns.Bad):
            continue
        if not name or time_ms is None or count is None or time_ms * count > 1e12:
            raise MalformedProfile(f"row without an op name, a time or a count: {','.join(row)[:80]!r}", path=path,
                                   line=number, hint="export the profile again")
        yield name, int(count), time_ms * count * 1000.0, count_at is None


def _op_types(path: Path) -> dict[str, str]:
    index, rows = _table(path)
    name_at, type_at = index.get("full_op_name"), index.get("op_type")
    return {_cell(row, name_at): _cell(row, type_at) for row in rows if _cell(row, name_at) and _cell(row, type_at)}


def _aicpu_rows(path: Path, bad: list | None = None):
    bad = bad if bad is not None else []
    index, rows = _table(path)
    type_at, time_at = index.get("op_type"), index.get("execution_time")
    for number, row in zip(rows.lines, rows):
        op_type = _cell(row, type_at)
        time_ms = _checked(bad, path, row, time_at, "execution_time", number, _MS)
        if isinstance(time_ms, columns.Bad):
            continue
        if not op_type or time_ms is None:
            raise MalformedProfile(f"row without an op type or a time: {','.join(row)[:80]!r}", path=path,
                                   line=number, hint="export the profile again")
        yield op_type, time_ms * 1000.0


def read_step_trace(path: Path, bad: list | None = None) -> list[StepSplit]:
    """The steps of a step_trace_raw table (the average row left out); a step whose figure is a number out of range or
    not finite is left out (counted in ``bad``), a step without its figures is one line naming the row."""
    bad = bad if bad is not None else []
    index, rows = _table(path)
    compute_columns = [c for c in ("fp_and_bp", "tail", "fp") if c in index]
    steps = []
    for number, row in zip(rows.lines, rows):
        step = _cell(row, index["step_num"])
        if step == "-":
            continue  # the average of the rows above
        values = {name: _checked(bad, path, row, index[name], name, number, (0.0, STEP_TRACE_MAX)) for name in
                  ("total", "iteration_interval", *compute_columns)}
        if any(isinstance(v, columns.Bad) for v in values.values()):
            continue
        if not step or any(v is None for v in values.values()):
            raise MalformedProfile(f"step row without its times: {','.join(row)[:80]!r}", path=path, line=number,
                                   hint="export the profile again")
        total = values["total"] * STEP_TRACE_UNIT_US
        free = values["iteration_interval"] * STEP_TRACE_UNIT_US
        computing = sum(values[c] for c in compute_columns) * STEP_TRACE_UNIT_US
        steps.append(StepSplit(step=step, computing_us=round(computing, 3), free_us=round(free, 3),
                               stage_us=round(max(total, computing + free), 3)))
    return steps
