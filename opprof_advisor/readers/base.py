"""What every profile reader returns: a columnar kernel table plus what the files say about the run.

Readers only parse; ``opprof_advisor.profiles.build_profile`` turns a RawProfile into the
normalised ``Profile`` (op-type rows, bound classes, symptoms, notes). The table is columnar: one
list per column for small inputs, dictionary codes and numpy arrays for large ones (no Python object
per row), which keeps multi-million-row inputs within the memory target.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from opprof_advisor.core.encoded import Coded, as_list, encode
from opprof_advisor.core.records import Record

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


#: What each KernelTable column holds: "text" (str, "" when not recorded), "optional" (str or None),
#: "int" (int or None) and "float" (float or None). Text, optional and int columns may be stored
#: dictionary-encoded (Coded), float columns as numpy float64 arrays with NaN for None.
COLUMN_KINDS: dict[str, str] = {
    "name": "text", "op_type": "text", "task_type": "text", "duration_us": "float", "wait_us": "float",
    "block_dim": "int", "mix_block_dim": "int", "input_shapes": "text", "input_dtypes": "text",
    "input_formats": "text", "output_formats": "text", "output_dtypes": "text", "op_state": "optional",
    "start_us": "float", "device_id": "int", "step_id": "optional", "aic_time_us": "float", "aiv_time_us": "float",
    "aic_read_kb": "float", "aic_write_kb": "float", "aiv_read_kb": "float", "aiv_write_kb": "float",
}
_EMPTY: dict[str, Any] = {"text": "", "optional": None, "int": None, "float": None}
_LIST_COLUMNS: tuple[str, ...] = tuple(COLUMN_KINDS)


class _Column:
    """A KernelTable column read as a Python list; an encoded column becomes one on first read."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, table: "KernelTable | None", owner=None):
        if table is None:
            return self
        return table._list(self.name)

    def __set__(self, table: "KernelTable", values) -> None:
        table.store(self.name, values)


class KernelTable:
    """One row per device task (kernel launch). All columns the source had have the same length.

    Empty string / None mean "not recorded" (e.g. ``op_type`` is ``""`` at profiler level0).
    ``task_type`` is the raw unit label (``AI_CORE``, ``AI_CPU``, ``MIX_AIC``, ``HCCL``,
    ``COMMUNICATION``, ``vector`` / ``cube`` / ``mix`` for msOpProf ...).

    Columns are stored either as Python lists (readers of small or irregular sources append to them)
    or columnar: dictionary-encoded (``Coded``) and numpy float64 arrays, as the pyarrow CSV reader
    leaves them. ``profile_builder`` reads the columnar form through ``opprof_advisor.readers.frame``
    without making a Python object per row; reading an attribute (``table.name``) gives the list.
    """

    name = _Column()
    op_type = _Column()
    task_type = _Column()
    duration_us = _Column()
    wait_us = _Column()
    block_dim = _Column()
    mix_block_dim = _Column()
    input_shapes = _Column()
    input_dtypes = _Column()
    input_formats = _Column()
    output_formats = _Column()
    output_dtypes = _Column()  # optional: may stay empty (length 0)
    op_state = _Column()
    start_us = _Column()  # task start, µs (local Unix time)
    device_id = _Column()  # Device_id where the file records several
    step_id = _Column()  # kernel_details "Step Id" (torch_npu schedules)
    aic_time_us = _Column()  # busy time of the cube side (aicore_time)
    aiv_time_us = _Column()  # busy time of the vector side (aiv_time)
    # main-memory volumes of an aic_metrics=MemoryAccess capture (KB = 1024 bytes, FORMATS.md §12)
    aic_read_kb = _Column()
    aic_write_kb = _Column()
    aiv_read_kb = _Column()
    aiv_write_kb = _Column()

    def __init__(self, present: set[str] | None = None, pipe: dict[str, list] | None = None, **columns: list):
        unknown = set(columns) - set(COLUMN_KINDS)
        if unknown:
            raise TypeError(f"KernelTable has no column {sorted(unknown)[0]!r}")
        # column -> list, Coded or numpy array; pipe columns under "pipe:<key>"
        self._store: dict[str, Any] = {name: columns.get(name, []) for name in COLUMN_KINDS}
        self._pipe_keys: list[str] = []
        # Which optional columns the source file had at all (a missing column is not "all empty"):
        # e.g. {"op_state", "block_dim", "input_dtypes", "pipe", "wait_us"}. The builder only judges
        # from a column named here; a column that is not present may be left empty.
        self.present: set[str] = set(present or ())
        self.pipe = pipe or {}
        self.cached_frame = None  # the readers.frame.Frame of this table, once made

    def is_columnar(self) -> bool:
        """True when some column is stored encoded or as an array (read by the columnar reader)."""
        return any(not isinstance(values, list) for values in self._store.values())

    # -- storage ---------------------------------------------------------------------------------

    @property
    def pipe(self) -> "MutableMapping[str, list]":
        """PIPE_KEYS -> column, each read as a list (see ``stored`` for the columnar form); assignable."""
        return _PipeColumns(self)

    @pipe.setter
    def pipe(self, columns) -> None:
        columns = dict(columns)
        for key in self._pipe_keys:
            self._store.pop("pipe:" + key, None)
        self._pipe_keys = list(columns)
        for key, values in columns.items():
            self._store["pipe:" + key] = values

    def pipe_keys(self) -> list[str]:
        return list(self._pipe_keys)

    def stored(self, name: str):
        """The column as stored (a list, a Coded or a numpy array), without converting it; ``pipe:<key>`` too."""
        return self._store[name]

    def store(self, name: str, values) -> None:
        """Set a column in any stored form (``pipe:<key>`` adds a pipe column)."""
        if name.startswith("pipe:") and name[5:] not in self._pipe_keys:
            self._pipe_keys.append(name[5:])
        self._store[name] = values
        self.cached_frame = None

    def _list(self, name: str) -> list:
        values = self._store[name]
        if not isinstance(values, list):
            values = self._store[name] = as_list(values)
        return values

    def __len__(self) -> int:
        return _length(self._store["duration_us"])

    def has(self, name: str) -> bool:
        """True when the source really had the column (``present``, or fully filled when nothing is listed)."""
        if _length(self._store[name]) != len(self):
            return False
        return not (self.present and name not in self.present)

    def column(self, name: str) -> list | None:
        """A column the source really had (listed in ``present``, or fully filled when nothing is listed)."""
        return self._list(name) if self.has(name) else None

    def take(self, indices: list[int]) -> "KernelTable":
        """A new table of the rows at ``indices`` (columns the source lacked stay empty)."""
        part = KernelTable(present=set(self.present))
        n = len(self)
        for name in (*_LIST_COLUMNS, *("pipe:" + key for key in self._pipe_keys)):
            values = self._store[name]
            if _length(values) == n:
                part.store(name, _take(values, indices))
            elif name.startswith("pipe:"):
                part.store(name, [])
        return part

    def extend(self, other: "KernelTable") -> None:
        """Append the rows of ``other`` (columns missing on one side are padded with empty values)."""
        joined = KernelTable.concat([self, other])
        self._store, self._pipe_keys, self.present = joined._store, joined._pipe_keys, joined.present
        self.cached_frame = None

    @classmethod
    def concat(cls, tables: list["KernelTable"]) -> "KernelTable":
        """One table of the rows of ``tables`` in order (columns missing in some are padded with empty
        values); columnar columns are joined once, not table by table."""
        joined = cls()
        pipe_keys = list(dict.fromkeys(key for table in tables for key in table._pipe_keys))
        columnar = any(table.is_columnar() for table in tables)
        for name in (*_LIST_COLUMNS, *("pipe:" + key for key in pipe_keys)):
            kind = COLUMN_KINDS.get(name, "float")
            empty = 0.0 if name == "duration_us" else _EMPTY[kind]
            parts = []
            for table in tables:
                values, n = table._store.get(name, []), len(table)
                if _length(values) == n:
                    parts.append(values)
                elif columnar and not _length(values):  # a column this table lacks, as columnar empties
                    parts.append(_empties(kind, empty, n))
                else:
                    parts.append(_padded(values, empty, n))
            joined.store(name, _joined(parts, kind))
        for table in tables:
            joined.present |= table.present
        return joined


class _PipeColumns(MutableMapping):
    """The pipe columns of a table as a mapping that reads and writes the table's own store."""

    def __init__(self, table: KernelTable):
        self.table = table

    def __getitem__(self, key: str) -> list:
        if key not in self.table._pipe_keys:
            raise KeyError(key)
        return self.table._list("pipe:" + key)

    def __setitem__(self, key: str, values) -> None:
        self.table.store("pipe:" + key, values)

    def __delitem__(self, key: str) -> None:
        self.table._pipe_keys.remove(key)
        del self.table._store["pipe:" + key]

    def __iter__(self):
        return iter(list(self.table._pipe_keys))

    def __len__(self) -> int:
        return len(self.table._pipe_keys)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def _length(values) -> int:
    return len(values.codes) if isinstance(values, Coded) else len(values)


def _padded(values, empty, n: int) -> list:
    # a column the source lacked (or filled only in part) padded with empty values, as a list
    return as_list(values) + [empty] * (n - _length(values))


def _empties(kind: str, empty, n: int):
    import numpy as np

    if kind == "float":
        return np.full(n, np.nan if empty is None else empty)
    return Coded(np.zeros(n, dtype=np.int32), [empty])


def _take(values, indices):
    if isinstance(values, list):
        return [values[i] for i in indices]
    import numpy as np

    index = np.asarray(indices, dtype=np.int64)
    if isinstance(values, Coded):
        return Coded(np.asarray(values.codes)[index], values.values)
    return values[index]


def _joined(parts: list, kind: str):
    """Stored columns one after the other: a list when all are lists, else one array or Coded."""
    if all(isinstance(part, list) for part in parts):
        return [value for part in parts for value in part]
    import numpy as np

    if kind == "float":
        return np.concatenate([_float_array(part) for part in parts])
    index: dict = {}
    codes = []
    for part in map(encode, parts):
        remap = np.asarray([index.setdefault(value, len(index)) for value in part.values] or [0], dtype=np.int32)
        codes.append(remap[np.asarray(part.codes, dtype=np.int64)])
    return Coded(np.concatenate(codes), list(index))


def _float_array(values):
    import numpy as np

    if isinstance(values, list):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return values


@dataclass
class RawProfile(Record):
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
