"""What every profile reader returns: a columnar kernel table plus what the files say about the run.

Readers only parse; ``opprof_advisor.profile_builder.build_profile`` turns a RawProfile into the
normalised ``Profile`` (op-type rows, bound classes, symptoms, notes). Keeping the table columnar
(one list per column) keeps 400k-row inputs within the memory target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

#: Canonical pipe-ratio keys of ``KernelTable.pipe``. Readers map every header spelling onto these:
#: msprof ``aic_mac_ratio`` and msOpProf ``aic_cube_ratio`` -> ``aic_cube``; un-prefixed older
#: ``mac_ratio`` -> ``cube``, ``vec_ratio`` -> ``vec`` and so on. Values are 0..1 ratios or None.
PIPE_KEYS: tuple[str, ...] = (
    "aic_cube", "aic_scalar", "aic_mte1", "aic_mte2", "aic_mte3", "aic_fixpipe",
    "aiv_vec", "aiv_scalar", "aiv_mte2", "aiv_mte3",
    "cube", "vec", "scalar", "mte1", "mte2", "mte3",
)

#: Called by readers on long inputs: ``progress(done, total)`` in bytes or rows.
Progress = Callable[[int, int], None]


@dataclass
class KernelTable:
    """One row per device task (kernel launch). All lists have the same length.

    Empty string / None mean "not recorded" (e.g. ``op_type`` is ``""`` at profiler level0).
    ``task_type`` is the raw unit label (``AI_CORE``, ``AI_CPU``, ``MIX_AIC``, ``HCCL``,
    ``COMMUNICATION``, ``vector`` / ``cube`` / ``mix`` for msOpProf ...).
    """

    name: list[str] = field(default_factory=list)
    op_type: list[str] = field(default_factory=list)
    task_type: list[str] = field(default_factory=list)
    duration_us: list[float] = field(default_factory=list)
    wait_us: list[float | None] = field(default_factory=list)
    block_dim: list[int | None] = field(default_factory=list)
    mix_block_dim: list[int | None] = field(default_factory=list)
    input_shapes: list[str] = field(default_factory=list)
    input_dtypes: list[str] = field(default_factory=list)
    input_formats: list[str] = field(default_factory=list)
    output_formats: list[str] = field(default_factory=list)
    output_dtypes: list[str] = field(default_factory=list)  # optional: may stay empty (length 0)
    op_state: list[str | None] = field(default_factory=list)
    start_us: list[float | None] = field(default_factory=list)  # task start, µs (local Unix time)
    device_id: list[int | None] = field(default_factory=list)  # Device_id where the file records several
    step_id: list[str | None] = field(default_factory=list)  # kernel_details "Step Id" (torch_npu schedules)
    aic_time_us: list[float | None] = field(default_factory=list)  # busy time of the cube side (aicore_time)
    aiv_time_us: list[float | None] = field(default_factory=list)  # busy time of the vector side (aiv_time)
    pipe: dict[str, list[float | None]] = field(default_factory=dict)  # PIPE_KEYS -> column

    def __len__(self) -> int:
        return len(self.duration_us)

    def column(self, name: str) -> list | None:
        """A column the source really had (listed in ``present``, or fully filled when nothing is listed)."""
        values = getattr(self, name)
        if len(values) != len(self):
            return None
        if self.present and name not in self.present:
            return None
        return values

    # Which optional columns the source file had at all (a missing column is not "all empty"):
    # e.g. {"op_state", "block_dim", "input_dtypes", "pipe", "wait_us"}. The builder only judges
    # from a column named here; a column that is not present may be left as an empty list.
    present: set[str] = field(default_factory=set)

    def take(self, indices: list[int]) -> "KernelTable":
        """A new table of the rows at ``indices`` (columns the source lacked stay empty)."""
        part = KernelTable(present=set(self.present))
        n = len(self)
        for name in _LIST_COLUMNS:
            column = getattr(self, name)
            if len(column) == n:
                setattr(part, name, [column[i] for i in indices])
        part.pipe = {key: [column[i] for i in indices] for key, column in self.pipe.items()}
        return part

    def extend(self, other: "KernelTable") -> None:
        """Append the rows of ``other`` (columns missing on one side are padded with empty values)."""
        n_self, n_other = len(self), len(other)
        for name in _LIST_COLUMNS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if len(mine) != n_self:
                mine.extend([_EMPTY[name]] * (n_self - len(mine)))
            mine.extend(theirs if len(theirs) == n_other else [_EMPTY[name]] * n_other)
        for key in set(self.pipe) | set(other.pipe):
            column = self.pipe.setdefault(key, [None] * n_self)
            column.extend(other.pipe.get(key, [None] * n_other))
        self.present |= other.present


_EMPTY: dict[str, Any] = {
    "name": "", "op_type": "", "task_type": "", "duration_us": 0.0, "wait_us": None, "block_dim": None,
    "mix_block_dim": None, "input_shapes": "", "input_dtypes": "", "input_formats": "", "output_formats": "",
    "output_dtypes": "", "op_state": None, "start_us": None, "device_id": None, "step_id": None,
    "aic_time_us": None, "aiv_time_us": None,
}
_LIST_COLUMNS: tuple[str, ...] = tuple(_EMPTY)


@dataclass
class RawProfile:
    """What a reader found under one path, before normalisation."""

    path: str
    format: str
    kernels: KernelTable
    versions: dict[str, str] = field(default_factory=dict)  # cann, torch_npu, profiler_level, aic_metrics ...
    chip: str | None = None
    core_counts: dict[str, int] = field(default_factory=dict)  # {"aic": 24, "aiv": 48} where known
    freq_mhz: float | None = None  # AI Core clock the run used (info.json aic_frequency, msOpProf Current Freq, DB AICORE_FREQ)
    notes: list[str] = field(default_factory=list)  # reader-level "cannot judge ..." notes
    # msOpProf / simulator per-kernel detail. Keys the builder reads (all optional):
    #   "block_time_us": {"cube": [...], "vector": [...]}  busy time per (block, sub-core) row:
    #       aic_time(us) of the cube rows / aiv_time(us) of the vector rows, in block_id order;
    #       -> block_imbalance when max >= 1.5 x mean (see profile_builder.IMBALANCE_RATIO)
    #   "block_ids": {"cube": [...], "vector": [...]}  block_id of each value above (to name the slowest)
    #   "pipe_ratio": {PIPE_KEY: ratio}  mean over rows (the KernelTable.pipe row carries the same)
    # Also written (full list in the docstrings of readers/msopprof_device.py, msopprof_simulator.py):
    #   "sub_block_ids" {side: ["cube0", "vector1", ...]}, "pipe_ratio_max" {PIPE_KEY: max over rows},
    #   "bound_pipe" {side: PIPE_KEY}, "bound" {"pipe", "ratio"}, "imbalance" {side: {"rows", "mean_us",
    #   "max_us", "min_us", "max_over_min" (None if min is 0), "max_over_mean", "cv", "slowest", "fastest"
    #   ({"block_id", "sub_block_id", "time_us"})}}, "kernel", "op_type", "task_duration_us", "block_dim",
    #   "mix_block_dim", "chip", "launches" (every launch's dict when an OPPROF holds several; the top
    #   level is then the longest); simulator: "kernel_time_us", "cores", "hot_instructions", "block_dim".
    # Anything else (chip, frequency, instruction hot spots ...) is passed through to Profile.kernel.
    kernel_detail: dict[str, Any] | None = None
    # Known keys: "step_trace" {column: µs summed over steps, e.g. "Communication(Not Overlapped)"},
    # "op_statistic" [rows as dicts], "op_type_derived" True when op types were guessed from names.
    # "communication" {communication.json "Elapse/Transit/Wait/Synchronization/Idle Time(ms)": summed, "ops"}.
    extra: dict[str, Any] = field(default_factory=dict)


class Reader(Protocol):
    """One producer format. Register it in ``opprof_advisor/readers/__init__.py``."""

    #: format id written into Profile.format, e.g. "torch-npu-text"
    name: str

    def detect(self, path: Path) -> bool:
        """True when ``path`` (a directory or file) holds this format. Must be cheap."""

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        """Parse ``path``; raise ``MalformedProfile`` naming the file (and line) on bad input."""
