"""torch_npu profiler text output: ``*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv`` (FORMATS.md §4).

Also reads ``step_trace_time.csv`` (exposed communication), ``communication.json`` (how the
collectives' time splits into transit, wait and idle), ``op_statistic.csv`` and
``profiler_info*.json`` (torch_npu / CANN versions, profiler level, aic_metrics). Accepts the
``*_ascend_pt`` folder, its ``ASCEND_PROFILER_OUTPUT`` folder, or the kernel_details.csv file itself.
"""

from __future__ import annotations

from pathlib import Path

from opprof_advisor.core import steps
from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.core.models import StepSplit
from opprof_advisor.readers import columns, csvfile
from opprof_advisor.readers.base import Progress, RawProfile
from opprof_advisor.readers.callstacks import trace_call_stacks
from opprof_advisor.readers.communication import add_collectives
from opprof_advisor.readers.memory_files import add_memory
from opprof_advisor.readers.layouts import KERNEL_FILE, OUTPUT_DIR, is_torch_npu_text, output_dir
from opprof_advisor.readers.msprof_text import add_compile_time, read_device_info, read_platform_version
from opprof_advisor.core.sidefile import dig, read_json

#: MindSpore 2.3+ writes the same layout in a ``*_ascend_ms`` folder (FORMATS.md §11.1): read alike, named apart so
#: the advice is MindSpore's, not torch's.
MINDSPORE_TEXT = "mindspore-text"


def is_mindspore(root: Path) -> bool:
    """True for a MindSpore profiler run folder (``<worker>_<ts>_ascend_ms``)."""
    return root.name.endswith("_ascend_ms")


#: profiler_info.json experimental_config keys -> RawProfile.versions keys.
_CONFIG_KEYS = {"_profiler_level": "profiler_level", "_aic_metrics": "aic_metrics", "_export_type": "export_type"}


class TorchNpuTextReader:
    """torch_npu ``*_ascend_pt`` text export."""

    name = "torch-npu-text"

    def detect(self, path: Path) -> bool:
        return is_torch_npu_text(path)

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        out = output_dir(path)
        kernel_file = path if path.is_file() else out / KERNEL_FILE
        root = out.parent if out.name == OUTPUT_DIR else out
        notes: list[str] = []
        kernels = csvfile.read_kernel_csv(kernel_file, progress, notes)
        raw = RawProfile(path=str(path), format=MINDSPORE_TEXT if is_mindspore(root) else self.name, kernels=kernels,
                         notes=notes)
        raw.versions.update(read_profiler_info(root, notes))
        counts, raw.freq_mhz = read_device_info(root)
        if generation := read_platform_version(root):
            raw.extra["platform_version"] = generation
        raw.core_counts.update(counts)
        split = read_step_trace(out / "step_trace_time.csv", notes)
        if split:
            raw.extra["steps"], raw.extra["step_source"] = split, "step_trace_time.csv"
        add_collectives(raw.extra, out, notes)
        add_memory(raw.extra, out)
        add_compile_time(raw, [out / "api_statistic.csv"])
        wanted = with_stack(root) is not False and kernels.has("op_type")  # (a run without stacks: not parsed)
        stacks = trace_call_stacks(out / "trace_view.json", dict(zip(kernels.name, kernels.op_type))) \
            if wanted and (out / "trace_view.json").is_file() else {}
        if stacks:
            raw.extra["stacks"] = stacks
        statistic = read_op_statistic(out / "op_statistic.csv", notes)
        if statistic:
            raw.extra["op_statistic"] = statistic
        return raw


def read_profiler_info(root: Path, notes: list[str]) -> dict[str, str]:
    """Versions and collection switches from ``profiler_info*.json`` (keys absent in older torch_npu)."""
    versions: dict[str, str] = {}
    for info in sorted(root.glob("profiler_info*.json")):
        try:
            document = read_json(info)
        except (OSError, ValueError) as exc:
            notes.append(f"ignored {info}: not readable JSON ({exc})")
            continue
        if not isinstance(document, dict):
            continue
        for key in ("torch_npu_version", "cann_version", "rank_id"):
            if document.get(key) not in (None, ""):
                versions[key.replace("_version", "")] = str(document[key])
        config = dig(document, "config", "experimental_config")
        for key, name in _CONFIG_KEYS.items():
            value = dig(config, key)
            if value not in (None, "", []):
                versions[name] = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        break
    return versions


def with_stack(root: Path) -> bool | None:
    """profiler_info's ``common_config.with_stack`` (None when no profiler_info says)."""
    for info in sorted(root.glob("profiler_info*.json")):
        try:
            value = dig(read_json(info), "config", "common_config", "with_stack")
        except (OSError, ValueError):
            continue
        if isinstance(value, bool):
            return value
    return None


def read_step_trace(path: Path, notes: list[str]) -> list[StepSplit]:
    """The steps of step_trace_time.csv (µs); [] when the file is absent or unusable.

    Several Device_id rows of one step (a file written for more than one device) are averaged: the
    split describes the typical device, and the step's wall time is not counted once per device.
    """
    if not path.is_file():
        return []
    try:
        header, rows = csvfile.read_rows(path)
    except AdvisorError as exc:
        notes.append(f"ignored {path}: {exc.message}")
        return []
    by_step: dict[str | None, list[StepSplit]] = {}
    bad = columns.BadNumbers(path)
    for row, line in zip(rows, rows.lines):
        cells = dict(zip(header, row))
        values = {column: bad.number(cells[column], column, line, columns.STEP_US) for column in steps.TRACE_COLUMNS
                  if column in cells}
        step = (cells.get("Step") or "").strip() or None
        split = steps.from_trace_row(step, values)
        if split is not None:
            by_step.setdefault(step, []).append(split)
    notes.extend(bad.notes())
    found = []
    for step, splits in by_step.items():
        typical = splits[0] if len(splits) == 1 else steps.mean(splits)
        typical.step = step
        found.append(typical)
    return found


def read_op_statistic(path: Path, notes: list[str]) -> list[dict[str, str]]:
    """Rows of op_statistic.csv as dicts (kept for reference; the builder recomputes from kernels)."""
    if not path.is_file():
        return []
    try:
        header, rows = csvfile.read_rows(path)
    except AdvisorError as exc:
        notes.append(f"ignored {path}: {exc.message}")
        return []
    return [dict(zip(header, row)) for row in rows]
