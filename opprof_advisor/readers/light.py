"""Light exports (FORMATS.md §12): an op_statistic table and / or step_trace_time.csv without the per-launch table.

A torch_npu folder may keep only ``ASCEND_PROFILER_OUTPUT/op_statistic.csv`` and ``step_trace_time.csv``, and an
op_statistic table may be saved under another name (``op_summary.csv``). Both say a good deal: per op type and
unit (``Core Type``) the count and total time, and per step where the window went (computing, exposed
communication, free). The files are found by their headers; the profile is built from the op types
(``profile.builder``), and the notes say which checks need the per-launch table and how to collect it.
"""

from __future__ import annotations

from pathlib import Path

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers import columns, csvfile
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile
from opprof_advisor.readers.layouts import OUTPUT_DIR, light_files
from opprof_advisor.readers.communication import add_collectives
from opprof_advisor.readers.memory_files import add_memory
from opprof_advisor.readers.msprof_text import read_device_info, read_platform_version
from opprof_advisor.readers.torch_npu_text import read_profiler_info, read_step_trace

#: op_statistic columns read (FORMATS.md §3.4, §12); Device_id only in msprof's.
STATISTIC_COLUMNS = ("OP Type", "Core Type", "Count", "Total Time(us)")
#: The per-launch table each producer writes, for the note on what the light export lacks.
FULL_TABLE = {"torch-npu-text": "ASCEND_PROFILER_OUTPUT/kernel_details.csv (the torch_npu profiler's default text "
                                "export)",
              "msprof-text": "op_summary_*.csv (msprof --export=on)",
              "mindspore-text": "ASCEND_PROFILER_OUTPUT/kernel_details.csv (the MindSpore profiler's text export)"}


class LightExportReader:
    """op_statistic / step_trace_time tables without a per-launch table."""

    name = "light-export"

    def detect(self, path: Path) -> bool:
        return bool(light_files(path))

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        files = light_files(path)
        if not files:
            raise MalformedProfile("no op_statistic or step_trace_time table found", path=path,
                                   hint="point advisor at the profiler's output folder")
        torch_npu = "step_trace" in files or any(OUTPUT_DIR in f.parts or f.parent.name.endswith("_ascend_pt")
                                                 for f in files.values())
        mindspore = any(part.endswith("_ascend_ms") for f in files.values() for part in f.parts)
        fmt = "mindspore-text" if mindspore else "torch-npu-text" if torch_npu else "msprof-text"
        notes: list[str] = []
        raw = RawProfile(path=str(path), format=fmt, kernels=KernelTable(), notes=notes)
        statistic = files.get("op_statistic")
        if statistic is not None:
            raw.extra["op_statistic"] = read_statistic(statistic, notes)
            if statistic.name.startswith(("op_summary", "kernel_details")):
                notes.append(f"{statistic.name} was read as an op_statistic table (its header says so): op types with "
                             "counts and total times, no launches")
        if "step_trace" in files:
            split = read_step_trace(files["step_trace"], notes)
            if split:
                raw.extra["steps"], raw.extra["step_source"] = split, files["step_trace"].name
        add_collectives(raw.extra, next(iter(files.values())).parent, notes)
        add_memory(raw.extra, next(iter(files.values())).parent)
        root = _root(path)
        raw.versions.update(read_profiler_info(root, notes))
        counts, raw.freq_mhz = read_device_info(root)
        if generation := read_platform_version(root):
            raw.extra["platform_version"] = generation
        raw.core_counts.update(counts)
        raw.extra["light"] = sorted(kind for kind in files)
        missing = [name for name, kind in (("op_statistic", "op_statistic"), ("step_trace_time.csv", "step_trace"))
                   if kind not in files]
        judged = " and ".join(what for what, kind in (("op types", "op_statistic"), ("the step split", "step_trace"))
                              if kind in files)
        notes.append(f"a light export ({', '.join(f.name for f in files.values())}"
                     + (f"; no {' or '.join(missing)}" if missing else "")
                     + f"): {judged} {'are' if ' and ' in judged else 'is'} judged; launches, bound classes, block "
                       f"dims and gaps need {FULL_TABLE[fmt]}")
        return raw


def read_statistic(path: Path, notes: list[str]) -> list[dict[str, object]]:
    """The rows of an op_statistic table: op type, core type, count and total time (µs), summed over devices."""
    header, rows = csvfile.read_rows(path)
    index = {name.strip(): number for number, name in enumerate(header)}
    missing = [name for name in STATISTIC_COLUMNS if name not in index]
    if missing:
        raise MalformedProfile(f"required column {missing[0]!r} is missing", path=path, line=1,
                               hint="export the profile again; the header must name " + ", ".join(STATISTIC_COLUMNS))
    found: dict[tuple[str, str], dict[str, object]] = {}
    devices = set()
    bad = columns.BadNumbers(path)  # a count or total out of range or not finite: the row is left out, with a note
    for number, row in zip(rows.lines, rows):
        cells = {name: row[at].strip() if at < len(row) else "" for name, at in index.items()}
        op_type, core = cells["OP Type"], cells["Core Type"]
        count = columns.checked_int(cells["Count"], columns.COUNT)
        total = columns.checked_float(cells["Total Time(us)"], columns.DURATION_US)
        if isinstance(count, columns.Bad) or isinstance(total, columns.Bad):
            column, cell, bounds = ("Count", cells["Count"], columns.COUNT) if isinstance(count, columns.Bad) else \
                ("Total Time(us)", cells["Total Time(us)"], columns.DURATION_US)
            bad.add(column, number, cell, bounds, dropped=True)
            continue
        if not op_type or count is None or total is None:
            raise MalformedProfile(f"row without an op type, a count or a total time: {','.join(row)[:80]!r}",
                                   path=path, line=number, hint="export the profile again")
        devices.add(cells.get("Device_id", ""))
        item = found.setdefault((op_type, core), {"op_type": op_type, "core_type": core, "count": 0, "total_us": 0.0})
        item["count"] += count  # type: ignore[operator]
        item["total_us"] += total  # type: ignore[operator]
    if len(devices) > 1:
        notes.append(f"{path.name} holds {len(devices)} devices; their op types are summed")
    if not found and bad:
        raise MalformedProfile(f"no row with a plausible count and total time: {bad.summary()}", path=path,
                               line=bad.first_line(), hint="export the profile again")
    notes.extend(bad.notes())
    return list(found.values())


def _root(path: Path) -> Path:
    """The folder a light export's side files (profiler_info, info.json) are looked for in."""
    folder = path.parent if path.is_file() else path
    return folder.parent if folder.name == OUTPUT_DIR else folder
