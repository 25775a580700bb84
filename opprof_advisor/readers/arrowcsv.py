"""Fast path for large kernel CSVs: pyarrow's multi-threaded C++ parser, streamed in blocks.

Used by ``csvfile.read_kernel_csv`` for files of ARROW_MIN_BYTES and more when pyarrow is
installed. Measured on the 2-core target machine (benchmarks/bench_profile.py, whole CLI run):
the stdlib csv module needs ~2.6 s for a 100 MB kernel_details.csv and ~8.3 s for a
1,000,000-row op_summary, at or over the 3 s / 8 s targets; with this path 1.4 s and 3.8 s.
Small blocks (1 MB) keep pyarrow's buffers small: 100 MB peaks at ~265 MB RSS (2 MB: ~300,
8 MB: ~380) at the same speed.

It only handles clean files: any row that does not fit the header, a missing or non-numeric
duration, or bytes that are not UTF-8 make it return None, and the stdlib reader reads the file
again to produce its exact notes and ``file:line`` errors. Repeated values are mapped to one
Python object per distinct value (dictionary encoding), as the stdlib reader does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from opprof_advisor.readers import columns
from opprof_advisor.readers.base import KernelTable, Progress
from opprof_advisor.readers.sidefile import MAX_DURATION_US

#: Files smaller than this are read by the stdlib reader (importing pyarrow costs ~0.3 s).
ARROW_MIN_BYTES = 32 * 1024 * 1024
#: Bytes parsed per streamed block (bounds the memory held by pyarrow at once; see above).
BLOCK_BYTES = 1024 * 1024
#: Parse blocks on several threads (faster, but more blocks held in memory at once).
USE_THREADS = True

_TEXT = ("name", "op_type", "task_type", "input_shapes", "input_dtypes", "input_formats", "output_formats",
         "output_dtypes")
_OPTIONAL_TEXT = ("op_state", "step_id")
_NUMBERS = ("duration_us", "wait_us", "block_dim", "mix_block_dim", "start_us", "device_id", "aic_time_us",
            "aiv_time_us")


def available() -> bool:
    """True when pyarrow can be imported and the fast path is not switched off (ADVISOR_NO_ARROW=1)."""
    if os.environ.get("ADVISOR_NO_ARROW"):
        return False
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def read_kernel_csv(path: Path, header: list[str], mapping: dict[str, int], skip_rows: int,
                    progress: Progress | None) -> KernelTable | None:
    """Read a clean kernel CSV with pyarrow; None when the file needs the careful stdlib reader."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    fields = {f: i for f, i in mapping.items() if f in _TEXT or f in _OPTIONAL_TEXT or f in _NUMBERS
              or f.startswith("pipe:")}
    names = [f"c{i}" for i in range(len(header))]
    types = {f"c{i}": (pa.string() if f in _TEXT or f in _OPTIONAL_TEXT else pa.float64()) for f, i in fields.items()}
    invalid: list[int] = []

    def on_invalid(row) -> str:
        invalid.append(row.number)
        return "skip"

    try:
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=skip_rows, block_size=BLOCK_BYTES,
                                           use_threads=USE_THREADS),
            parse_options=pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(include_columns=list(types), column_types=types,
                                                 null_values=sorted(columns.MISSING_VALUES), strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
        )
        table = _new_table(mapping, fields)
        converter = _Converter(fields)
        total, done = path.stat().st_size, 0
        for batch in reader:
            if invalid or not converter.add(table, batch):
                return None
            done = min(total, done + BLOCK_BYTES)
            if progress is not None:
                progress(done, total)
    except (pa.ArrowException, UnicodeDecodeError, OSError, ImportError):
        return None  # ImportError: numpy missing for to_numpy(); the stdlib reader needs nothing
    finally:
        # give parse buffers back to the OS now: the builder's Python objects come next
        pa.default_memory_pool().release_unused()
    if invalid or not len(table):
        return None
    return table


def _new_table(mapping: dict[str, int], fields: dict[str, int]) -> KernelTable:
    table = KernelTable()
    table.present = {f for f in mapping if not f.startswith("pipe:")}
    pipes = [f[5:] for f in fields if f.startswith("pipe:")]
    if pipes:
        table.present.add("pipe")
    table.pipe = {key: [] for key in pipes}
    return table


class _Converter:
    """Arrow record batches -> KernelTable columns, one Python object per distinct value."""

    def __init__(self, fields: dict[str, int]):
        self.fields = fields
        self.text = _Memo(columns.clean_text)
        self.optional = _Memo(columns.clean_optional)
        self.ints = _Memo(lambda v: None if v is None else int(v))
        self.floats = _Memo(lambda v: v)

    def add(self, table: KernelTable, batch) -> bool:
        """Append a batch; False when a duration is missing or negative (the stdlib reader reports it)."""
        import pyarrow.compute as pc

        n = batch.num_rows
        column = lambda field: batch.column(f"c{self.fields[field]}")  # noqa: E731
        durations = column("duration_us")
        if durations.null_count or (n and (pc.min(durations).as_py() < 0 or pc.max(durations).as_py() > MAX_DURATION_US)):
            return False
        if not self._all_finite(batch):
            return False  # inf / nan / 1e400 somewhere: the stdlib reader names the line
        for field in _TEXT:
            values = _mapped(column(field), self.text) if field in self.fields else [""] * n
            getattr(table, field).extend(values)
        table.op_state.extend(_mapped(column("op_state"), self.optional) if "op_state" in self.fields else [None] * n)
        for field in ("block_dim", "mix_block_dim"):
            getattr(table, field).extend(_mapped(column(field), self.ints) if field in self.fields else [None] * n)
        table.wait_us.extend(column("wait_us").to_pylist() if "wait_us" in self.fields else [None] * n)
        if "start_us" in self.fields:
            table.start_us.extend(column("start_us").to_pylist())
        if "device_id" in self.fields:
            table.device_id.extend(_mapped(column("device_id"), self.ints))
        if "step_id" in self.fields:
            table.step_id.extend(_mapped(column("step_id"), self.optional))
        for field in ("aic_time_us", "aiv_time_us"):
            if field in self.fields:
                getattr(table, field).extend(_mapped(column(field), self.floats))
        table.duration_us.extend(durations.to_pylist())
        for key in table.pipe:
            table.pipe[key].extend(_mapped(column("pipe:" + key), self.floats))
        return True


    def _all_finite(self, batch) -> bool:
        import pyarrow.compute as pc
        import pyarrow.types as pt

        for index in self.fields.values():
            array = batch.column(f"c{index}")
            if pt.is_floating(array.type) and pc.any(pc.invert(pc.is_finite(array))).as_py():
                return False
        return True


class _Memo(dict):
    def __init__(self, clean: Callable):
        super().__init__()
        self.clean = clean

    def __missing__(self, key):
        value = self[key] = self.clean(key)
        return value


def _mapped(array, memo: _Memo) -> list:
    # dictionary-encode in C++, clean each distinct value once, expand with C-level map()
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(array)
    distinct = [memo[v] for v in encoded.dictionary.to_pylist()]
    indices = encoded.indices
    if indices.null_count:
        return [None if i is None else distinct[i] for i in indices.to_pylist()]
    return list(map(distinct.__getitem__, indices.to_numpy(zero_copy_only=False).tolist()))
