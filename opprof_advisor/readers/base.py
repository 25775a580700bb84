"""What every profile reader returns: a columnar kernel table plus what the files say about the run.

Readers only parse; ``opprof_advisor.profiles.build_profile`` turns a RawProfile into the
normalised ``Profile`` (op-type rows, bound classes, symptoms, notes). The kernel table holds one
pyarrow array per column (text and integer columns dictionary-encoded, float columns float64 with NaN
for "not recorded"), whichever reader made it, so multi-million-row inputs hold no Python object per row.
"""

from __future__ import annotations

from collections.abc import Mapping
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
#: "int" (int or None) and "float" (float or None). Text, optional and int columns are stored dictionary-encoded,
#: float columns as float64 arrays with NaN for None.
COLUMN_KINDS: dict[str, str] = {
    "name": "text", "op_type": "text", "task_type": "text", "duration_us": "float", "wait_us": "float",
    "block_dim": "int", "mix_block_dim": "int", "input_shapes": "text", "input_dtypes": "text",
    "input_formats": "text", "output_formats": "text", "output_dtypes": "text", "op_state": "optional",
    "start_us": "float", "device_id": "int", "step_id": "optional", "aic_time_us": "float", "aiv_time_us": "float",
    "aic_read_kb": "float", "aic_write_kb": "float", "aiv_read_kb": "float", "aiv_write_kb": "float",
}
EMPTY: dict[str, Any] = {"text": "", "optional": None, "int": None, "float": None}


class _Column:
    """A KernelTable column read as a new Python list (assigning sets the column; appending to the list does not)."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, table: "KernelTable | None", owner=None):
        if table is None:
            return self
        return table.values(self.name)

    def __set__(self, table: "KernelTable", values) -> None:
        table.store(self.name, values)


class KernelTable:
    """One row per device task (kernel launch). All columns the source had have the same length.

    Empty string / None mean "not recorded" (e.g. ``op_type`` is ``""`` at profiler level0).
    ``task_type`` is the raw unit label (``AI_CORE``, ``AI_CPU``, ``MIX_AIC``, ``HCCL``,
    ``COMMUNICATION``, ``vector`` / ``cube`` / ``mix`` for msOpProf ...).

    Each column is one pyarrow array (``array``); readers hand columns over whole, as lists, numpy arrays,
    ``Coded`` columns or pyarrow arrays (``store``, or the constructor), and ``readers.frame.Frame`` reads them
    without making a Python object per row. Reading an attribute (``table.name``) gives a new list.
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

    def __init__(self, present: set[str] | None = None, pipe: dict[str, Any] | None = None, **columns):
        unknown = set(columns) - set(COLUMN_KINDS)
        if unknown:
            raise TypeError(f"KernelTable has no column {sorted(unknown)[0]!r}")
        self._arrays: dict[str, Any] = {}  # column (pipe columns as "pipe:<key>") -> pyarrow array
        self._pipe_keys: list[str] = []
        # Which optional columns the source file had at all (a missing column is not "all empty"):
        # e.g. {"op_state", "block_dim", "input_dtypes", "pipe", "wait_us"}. The builder only judges
        # from a column named here; a column that is not present may be left empty.
        self.present: set[str] = set(present or ())
        self.cached_frame = None  # the readers.frame.Frame of this table, once made
        for name, values in columns.items():
            self.store(name, values)
        if pipe:
            self.pipe = pipe

    # -- storage ---------------------------------------------------------------------------------

    @property
    def pipe(self) -> "Mapping[str, list]":
        """PIPE_KEYS -> column, each read as a new list (``array("pipe:<key>")`` for the array); assignable."""
        return _PipeColumns(self)

    @pipe.setter
    def pipe(self, columns) -> None:
        columns = dict(columns)
        for key in self._pipe_keys:
            self._arrays.pop("pipe:" + key, None)
        self._pipe_keys = []
        for key, values in columns.items():
            self.store("pipe:" + key, values)

    def pipe_keys(self) -> list[str]:
        return list(self._pipe_keys)

    def array(self, name: str):
        """The column as a pyarrow array (``pipe:<key>`` too), or None when it was never set."""
        return self._arrays.get(name)

    def store(self, name: str, values) -> None:
        """Set a column from a list, a numpy array, a Coded column or a pyarrow array (``pipe:<key>`` adds a pipe
        column)."""
        if name.startswith("pipe:"):
            if name[5:] not in self._pipe_keys:
                self._pipe_keys.append(name[5:])
        elif name not in COLUMN_KINDS:
            raise TypeError(f"KernelTable has no column {name!r}")
        self._arrays[name] = _array(values, column_kind(name))
        self.cached_frame = None

    def values(self, name: str) -> list:
        """The column as a new Python list (None / "" where not recorded); an empty list when never set."""
        array = self._arrays.get(name)
        return [] if array is None else _to_list(array)

    def __len__(self) -> int:
        array = self._arrays.get("duration_us")
        return 0 if array is None else len(array)

    def has(self, name: str) -> bool:
        """True when the source really had the column (``present``, or fully filled when nothing is listed)."""
        array = self._arrays.get(name)
        if (0 if array is None else len(array)) != len(self):  # a column never set is empty: had by a table of no rows
            return False
        return not (self.present and name not in self.present)

    def column(self, name: str) -> list | None:
        """A column the source really had (listed in ``present``, or fully filled when nothing is listed)."""
        return self.values(name) if self.has(name) else None

    def take(self, indices) -> "KernelTable":
        """A new table of the rows at ``indices`` (columns the source lacked stay empty)."""
        part = KernelTable(present=set(self.present))
        n = len(self)
        for name, array in self._arrays.items():
            if len(array) == n:
                part.store(name, array.take(indices) if len(indices) else array.slice(0, 0))
            elif name.startswith("pipe:"):
                part.store(name, [])
        return part

    def extend(self, other: "KernelTable") -> None:
        """Append the rows of ``other`` (columns missing on one side are padded with empty values)."""
        joined = KernelTable.concat([self, other])
        self._arrays, self._pipe_keys, self.present = joined._arrays, joined._pipe_keys, joined.present
        self.cached_frame = None

    @classmethod
    def concat(cls, tables: list["KernelTable"]) -> "KernelTable":
        """One table of the rows of ``tables`` in order (columns missing in some are padded with empty values)."""
        joined = cls()
        pipe_keys = list(dict.fromkeys(key for table in tables for key in table._pipe_keys))
        for name in (*COLUMN_KINDS, *("pipe:" + key for key in pipe_keys)):
            if not any(name in table._arrays for table in tables):
                continue
            kind = column_kind(name)
            empty = 0.0 if name == "duration_us" else EMPTY[kind]
            parts = []
            for table in tables:
                array, n = table._arrays.get(name), len(table)
                if array is None or len(array) != n:  # one empty value, n codes of it: no per-row Python
                    array = _array(Coded([0] * n, [empty]), kind) if kind != "float" else _array([empty] * n, kind)
                parts.append(array)
            joined.store(name, _joined(parts, kind))
        for table in tables:
            joined.present |= table.present
        return joined


class _PipeColumns(Mapping):
    """The pipe columns of a table as a mapping; ``table.pipe[key] = values`` sets one."""

    def __init__(self, table: KernelTable):
        self.table = table

    def __getitem__(self, key: str) -> list:
        if key not in self.table._pipe_keys:
            raise KeyError(key)
        return self.table.values("pipe:" + key)

    def __setitem__(self, key: str, values) -> None:
        self.table.store("pipe:" + key, values)

    def __iter__(self):
        return iter(list(self.table._pipe_keys))

    def __len__(self) -> int:
        return len(self.table._pipe_keys)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def column_kind(name: str) -> str:
    """The kind (COLUMN_KINDS) of a KernelTable column; a pipe column ``pipe:<key>`` is a float."""
    return "float" if name.startswith("pipe:") else COLUMN_KINDS[name]


#: The pyarrow type of the distinct values of each encoded kind.
_VALUE_TYPES = {"text": "string", "optional": "string", "int": "int64"}


def _array(values, kind: str):
    """``values`` (list, numpy array, Coded or pyarrow array) as the column's one pyarrow array: float64 with NaN
    for None, or dictionary-encoded with int64 indices and None as a dictionary value (the indices hold no nulls).
    Lists and Coded columns are encoded without pyarrow.compute (its import alone costs ~20 ms)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = _joined(values.chunks, kind)
    if kind == "float":
        if isinstance(values, pa.Array):
            values = values.to_numpy(zero_copy_only=False)  # nulls read as NaN
        return _numbers(pa, np.asarray(values, dtype=np.float64))  # a list's None reads as NaN too
    if isinstance(values, pa.Array):
        if values.type == pa.dictionary(pa.int64(), _value_type(pa, kind)) and not values.null_count:
            return values
        values = values.to_pylist()  # another type, or null rows: rare, and small
    coded = encode(values)
    return _dictionary(pa, np.asarray(coded.codes, dtype=np.int64), coded.values, kind)


def _joined(parts: list, kind: str):
    """Columns of ``kind`` one after the other. Dictionaries are merged here: pyarrow's ``unify_dictionaries``
    refuses a dictionary holding None (an OP State of N/A), which is common."""
    import numpy as np
    import pyarrow as pa

    if kind == "float":
        return pa.concat_arrays([_array(part, kind) for part in parts]) if parts else _numbers(pa, np.zeros(0))
    index: dict = {}
    codes = []
    for part in parts:
        part = _array(part, kind)
        remap = np.asarray([index.setdefault(value, len(index)) for value in part.dictionary.to_pylist()] or [0],
                           dtype=np.int64)
        codes.append(remap[part.indices.to_numpy(zero_copy_only=False)])
    return _dictionary(pa, np.concatenate(codes) if codes else np.zeros(0, np.int64), list(index), kind)


def _value_type(pa, kind: str):
    return getattr(pa, _VALUE_TYPES[kind])()


def _dictionary(pa, codes, values: list, kind: str):
    """int64 ``codes`` (numpy) into distinct ``values`` as a pyarrow dictionary array."""
    return pa.DictionaryArray.from_arrays(_numbers(pa, codes), pa.array(values, type=_value_type(pa, kind)))


def _numbers(pa, values):
    """A numpy float64 or int64 array as a pyarrow array over the same memory. ``pa.array`` would do it too, but
    it imports numpy.ma to look for masks (~9 ms of every run)."""
    values = values if values.flags.c_contiguous else values.copy()
    kind = pa.float64() if values.dtype.kind == "f" else pa.int64()
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _to_list(array) -> list:
    """A stored column as a Python list (None for NaN)."""
    if hasattr(array, "indices"):  # dictionary-encoded
        return as_list(Coded(array.indices.to_numpy(zero_copy_only=False), array.dictionary.to_pylist()))
    return as_list(array.to_numpy(zero_copy_only=False))


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
