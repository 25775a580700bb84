"""System msprof text export (FORMATS.md §3): ``op_summary_*.csv`` under a PROF_* tree, or one CSV.

Layouts: ``PROF_*/mindstudio_profiler_output/op_summary_<ts>.csv`` (CANN >= 8.0, sliced into
``op_summary_slice_<k>_<ts>.csv`` above 1,000,000 rows), the older ``PROF_*/device_<N>/summary/``,
a folder of several PROF_* trees, and a lone op_summary / kernel_details CSV given as a file.
Core counts come from ``device_*/info.json.<N>`` (``ai_core_num``, ``aiv_num``).
"""

from __future__ import annotations

import re
from pathlib import Path

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers import columns, csvfile
from opprof_advisor.readers.frame import Frame
from opprof_advisor.readers.memory_files import add_memory
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile
from opprof_advisor.core.sidefile import dig, read_json, small_int
from opprof_advisor.readers.collectives import count_collectives_once
from opprof_advisor.readers.layouts import (
    PROF_DIR, is_kernel_csv, light_files, subdirs, summary_files, summary_folders,
)
from opprof_advisor.readers.multirank import merge_ranks, rank_summary



def read_core_counts(root: Path) -> dict[str, int]:
    """AI Core / AI Vector core counts from ``info.json.*`` files under ``root`` (a PROF tree or above)."""
    counts, _ = read_device_info(root)
    return counts


def read_device_info(root: Path) -> tuple[dict[str, int], float | None]:
    """Core counts and the AI Core clock (MHz) from the first ``info.json.*`` that names a core count."""
    for info in _info_files(root):
        try:
            devices = dig(read_json(info), "DeviceInfo")
        except (OSError, ValueError):
            continue
        device = devices[0] if isinstance(devices, list) and devices else None
        if not isinstance(device, dict):
            continue
        counts = {}
        for key, name in (("ai_core_num", "aic"), ("aiv_num", "aiv")):
            value = small_int(device.get(key))
            if value is not None:
                counts[name] = value
        if counts.get("aic"):
            return counts, _positive(device.get("aic_frequency"))
    return {}, None


def read_platform_version(root: Path) -> str | None:
    """``platform_version`` of the first ``info.json.*`` that has one: the chip generation ("5" = CHIP_V4_1_0, the
    Atlas A2 / A3 class; "1" = CHIP_V2_1_0, the first Ascend 910) even where no chip name is written."""
    for info in _info_files(root):
        try:
            value = dig(read_json(info), "platform_version")
        except (OSError, ValueError):
            continue
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip().isdigit():
            return str(value).strip()
    return None


def _positive(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if 0 < number < 1e6 else None


#: Host APIs that compile operators online (api_statistic / CANN_API names such as ``opCompile``,
#: ``aclopCompile``); the ``...AndExecute`` APIs also launch the op, so their time is not compile time.
_COMPILE_API = re.compile(r"compile", re.I)
_EXECUTE_API = re.compile(r"execute", re.I)


def is_compile_api(name: str) -> bool:
    """True for a host API that compiles operators (not one that also executes them)."""
    return bool(_COMPILE_API.search(name)) and not _EXECUTE_API.search(name)


def read_compile_time(path: Path, notes: list[str]) -> tuple[float, int] | None:
    """(µs, calls) of online operator compilation in an api_statistic CSV; None when the file is absent."""
    if not path.is_file():
        return None
    try:
        header, rows = csvfile.read_rows(path)
    except MalformedProfile as exc:
        notes.append(f"ignored {path}: {exc.message}")
        return None
    index = {name: i for i, name in enumerate(header)}
    name_col, time_col, count_col = (index.get(k) for k in ("API Name", "Time(us)", "Count"))
    if name_col is None or time_col is None:
        notes.append(f"ignored {path}: no API Name / Time(us) columns")
        return None
    total, calls = 0.0, 0
    for row in rows:
        if len(row) > max(name_col, time_col) and is_compile_api(row[name_col]):
            total += columns.parse_float(row[time_col]) or 0.0
            calls += columns.parse_int(row[count_col]) or 0 if count_col is not None and count_col < len(row) else 0
    return total, calls


def api_statistic_files(path: Path) -> list[Path]:
    """api_statistic_*.csv beside op_summary in a PROF tree (mindstudio_profiler_output) or the folder itself."""
    found: list[Path] = []
    for folder in summary_folders(path) if path.is_dir() else [path.parent]:
        found.extend(p for p in folder.glob("api_statistic*.csv") if p.is_file())
    return sorted(set(found))


def _info_files(root: Path) -> list[Path]:
    candidates: list[Path] = []
    prof_roots = [root] + sorted(p for p in subdirs(root) if PROF_DIR.match(p.name)) if root.is_dir() else []
    for prof in prof_roots:
        for device in sorted(d for d in subdirs(prof) if d.name.startswith("device")):
            candidates.extend(sorted(p for p in device.glob("info.json.*") if not p.name.endswith(".done")))
    return candidates


class MsprofTextReader:
    """System msprof op_summary CSVs (any layout), or one op_summary / kernel_details CSV file."""

    name = "msprof-text"

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return is_kernel_csv(path)
        # a PROF_* tree is msprof's by its name, unless all it kept is a light export (readers/light.py)
        return bool(summary_files(path)) or bool(PROF_DIR.match(path.name)) and not light_files(path)

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        files = [path] if path.is_file() else summary_files(path)
        if not files:
            raise MalformedProfile("PROF folder without op_summary_*.csv", path=path,
                                   hint="export the text summaries: msprof --export=on --output=<PROF folder>")
        notes: list[str] = []
        kernels = _read_all(files, progress, notes)
        fmt = "torch-npu-text" if path.is_file() and "accelerator core" in _lower_header(path) else self.name
        raw = RawProfile(path=str(path), format=fmt, kernels=kernels, notes=notes)
        root = path.parent if path.is_file() else path
        counts, raw.freq_mhz = read_device_info(root)
        raw.core_counts.update(counts)
        if len(files) > 1:
            raw.extra["files"] = [str(f) for f in files]
        add_compile_time(raw, api_statistic_files(path))
        add_memory(raw.extra, root)
        raw.kernels = count_collectives_once(raw.kernels, raw.notes)  # per device, before the devices are split
        return split_devices(raw)


def add_compile_time(raw: RawProfile, files: list[Path]) -> None:
    """``extra["compile_us"]`` / ``["compile_calls"]`` from the api_statistic files, when there are any."""
    found = [t for t in (read_compile_time(f, raw.notes) for f in files) if t is not None]
    if found:
        raw.extra["compile_us"] = sum(t for t, _ in found)
        raw.extra["compile_calls"] = sum(c for _, c in found)


def split_devices(raw: RawProfile) -> RawProfile:
    """A profile holding several Device_id values becomes one rank per device (never merged silently)."""
    frame = Frame.of(raw.kernels)
    devices = frame.coded("device_id") if frame.has("device_id") else None
    distinct = sorted(d for d in frame.occurring(devices) if d is not None) if devices is not None else []
    if len(distinct) < 2:
        return raw
    parts, summaries = [], []
    for device in distinct:
        part = RawProfile(path=raw.path, format=raw.format, versions=dict(raw.versions), chip=raw.chip,
                          core_counts=dict(raw.core_counts), freq_mhz=raw.freq_mhz,
                          kernels=raw.kernels.take(frame.rows(frame.isin(devices, {device}))))
        parts.append(part)
        summaries.append(rank_summary(f"device{device}", f"{raw.path} (Device_id {device})", part))
    notes = list(raw.notes) + [f"{len(distinct)} devices in one profile ({', '.join(map(str, distinct))}): "
                               "each is shown as a rank; op types and symptoms cover all of them"]
    merged = merge_ranks(Path(raw.path), parts, summaries, notes)
    merged.versions["ranks"] = str(len(distinct))
    merged.extra.update({k: v for k, v in raw.extra.items() if k not in merged.extra})
    return merged


def _read_all(files: list[Path], progress: Progress | None, notes: list[str]) -> KernelTable:
    sizes = [f.stat().st_size for f in files]
    nonempty = [f for f, size in zip(files, sizes) if size]
    if len(files) > 1 and nonempty and len(nonempty) < len(files):
        # 0-byte slice placeholders next to real slices are normal; a lone 0-byte file is an error.
        notes.append(f"skipped {len(files) - len(nonempty)} empty op_summary file(s)")
        files = nonempty
    total, done = sum(sizes), 0
    parts: list[KernelTable] = []
    for file in files:
        size = file.stat().st_size
        parts.append(csvfile.read_kernel_csv(file, _offset(progress, done, total), notes))
        done += size
    return parts[0] if len(parts) == 1 else KernelTable.concat(parts)


def _offset(progress: Progress | None, done: int, total: int) -> Progress | None:
    if progress is None:
        return None
    return lambda current, _total: progress(done + current, total)


def _lower_header(path: Path) -> str:
    with path.open("rb") as handle:
        return handle.read(4096).split(b"\n", 1)[0].decode("utf-8", "replace").lower()
