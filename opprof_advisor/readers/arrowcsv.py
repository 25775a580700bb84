"""The columnar reader of kernel CSVs: pyarrow's multi-threaded C++ parser, streamed in blocks, into a
columnar KernelTable (no Python object per row).

Used by ``csvfile.read_kernel_csv`` for every file of ARROW_FROM_ROWS rows and more when pyarrow is
installed. Text and integer columns are dictionary-encoded batch by batch (``readers.base.Coded``:
each distinct cell is cleaned once, with the stdlib reader's own ``clean_text`` / ``int``), numbers
kept as float64 arrays; ``readers.frame.Frame`` builds the profile from them with numpy. Small
blocks (1 MB) keep pyarrow's buffers small.

It only handles clean files: any row that does not fit the header, a missing or non-numeric
duration, a number that is not finite, or bytes that are not UTF-8 make it return None, and the
careful stdlib reader reads the file again to produce its exact notes and ``file:line`` errors.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from opprof_advisor.readers import columns
from opprof_advisor.readers.base import COLUMN_KINDS, COLUMNAR_FROM_ROWS, Coded, KernelTable, Progress

#: Files of fewer rows (estimated from the first 64 KB) are read by the stdlib reader: importing pyarrow
#: and numpy (~0.15 s) costs more than it saves below about this many rows (bench_profile.py --sweep).
ARROW_FROM_ROWS = COLUMNAR_FROM_ROWS
#: Bytes parsed per streamed block (bounds the memory held by pyarrow at once; see above).
BLOCK_BYTES = 1024 * 1024
#: Blocks checked and dictionary-encoded together (fewer compute calls; strings of this much input held at once).
GROUP_BYTES = 16 * 1024 * 1024
#: Parse blocks on several threads (faster, but more blocks held in memory at once).
USE_THREADS = True

_TEXT = ("name", "op_type", "task_type", "input_shapes", "input_dtypes", "input_formats", "output_formats",
         "output_dtypes")
_OPTIONAL_TEXT = ("op_state", "step_id")
_NUMBERS = ("duration_us", "wait_us", "block_dim", "mix_block_dim", "start_us", "device_id", "aic_time_us",
            "aiv_time_us", *columns.MEMORY_FIELDS)


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
    """Read a clean kernel CSV with pyarrow into a columnar KernelTable; None when it needs the careful reader."""
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
                                                 null_values=sorted(columns.MISSING_NUMBERS), strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
        )
        chunks: dict[str, list] = {field: [] for field in fields}
        total, done, pending = path.stat().st_size, 0, []
        for batch in reader:
            pending.append(batch)
            done = min(total, done + BLOCK_BYTES)
            if len(pending) * BLOCK_BYTES >= GROUP_BYTES:
                if invalid:
                    return None
                _add_batches(chunks, fields, pending)
                pending = []
            if progress is not None:
                progress(done, total)
        if invalid:
            return None
        if pending:
            _add_batches(chunks, fields, pending)
        if not any(len(c) for c in chunks["duration_us"]):
            return None
        return _table(mapping, fields, chunks)
    except (pa.ArrowException, UnicodeDecodeError, OSError, ImportError):
        return None  # ImportError: numpy missing for to_numpy(); the stdlib reader needs nothing
    finally:
        # give parse buffers back to the OS now
        pa.default_memory_pool().release_unused()


def _add_batches(chunks: dict[str, list], fields: dict[str, int], batches: list) -> None:
    """Keep the batches' columns, text and integers dictionary-encoded (one compute call per column)."""
    import pyarrow as pa

    try:  # the kernel itself: importing pyarrow.compute builds wrappers for every kernel (~65 ms)
        from pyarrow._compute import call_function
    except ImportError:
        from pyarrow.compute import call_function
    group = pa.Table.from_batches(batches)
    for field, index in fields.items():
        array = group.column(f"c{index}")
        if _kind(field) != "float":
            array = call_function("dictionary_encode", [array])
        chunks[field].extend(array.chunks)


def _kind(field: str) -> str:
    return "float" if field.startswith("pipe:") else COLUMN_KINDS[field]


def _table(mapping: dict[str, int], fields: dict[str, int], chunks: dict[str, list]) -> KernelTable | None:
    """The KernelTable of the kept columns; None when a duration is missing, or a number is not finite (inf, nan,
    1e400) or outside its field's range (``columns.range_of``): the stdlib reader then names the line and notes it."""
    import numpy as np
    import pyarrow as pa

    table = KernelTable()
    table.present = {f for f in mapping if not f.startswith("pipe:")}
    pipes = [f[5:] for f in fields if f.startswith("pipe:")]
    if pipes:
        table.present.add("pipe")
    table.pipe = {key: [] for key in pipes}
    n = sum(len(c) for c in chunks["duration_us"])
    for field in fields:
        column = pa.chunked_array(chunks.pop(field))
        if _kind(field) == "float":
            values = column.to_numpy()  # nulls become NaN: None when read as a list
            low, high = columns.range_of(field)
            with np.errstate(invalid="ignore"):
                inside = np.count_nonzero((values >= low) & (values <= high))  # NaN compares false
            if n - inside != column.null_count:
                return None  # a number out of its range, or not finite, that was not written as missing
            with np.errstate(invalid="ignore"):
                tiny = (np.abs(values) < columns.TINY) & (values != 0)
            if tiny.any():  # a subnormal is 0, as checked_float reads it
                values = np.where(tiny, 0.0, values)
            table.store(field, values)
        else:
            decoded = _decoded(column, _CLEAN[_kind(field)])
            if decoded is None:
                return None
            table.store(field, decoded)
    if table.stored("duration_us").size and np.isnan(table.stored("duration_us")).any():
        return None  # a missing duration: the stdlib reader names its line
    # columns the file lacks read as empty, as the stdlib reader fills them
    for field in (*_TEXT, "op_state", "block_dim", "mix_block_dim"):
        if field not in fields:
            table.store(field, Coded(np.zeros(n, dtype=np.int32), ["" if field in _TEXT else None]))
    if "wait_us" not in fields:
        table.store("wait_us", np.full(n, np.nan))
    return table


def _decoded(column, clean: Callable) -> Coded | None:
    """A chunked dictionary array as one Coded column: each distinct cell cleaned once, equal results merged;
    None when a cell does not clean (an integer column holding inf or nan)."""
    import numpy as np
    import pyarrow as pa

    array = pa.concat_arrays(column.unify_dictionaries().chunks)
    index: dict = {}
    try:
        remap = [index.setdefault(clean(value), len(index)) for value in array.dictionary.to_pylist()]
    except (OverflowError, ValueError):  # int() of inf / nan, or a count out of its range
        return None
    codes = array.indices.to_numpy(zero_copy_only=False)
    if array.indices.null_count:  # a missing number (N/A; the codes come as floats, NaN there): one code for None
        remap.append(index.setdefault(None, len(index)))
        codes = np.where(np.isnan(codes), len(remap) - 1, codes).astype(np.int64)
    mapping = np.asarray(remap, dtype=np.int32) if remap else np.zeros(1, dtype=np.int32)
    return Coded(mapping[codes], list(index))


def _count(value: float | None) -> int | None:
    """An integer column's distinct value (block dim, device id): ValueError outside ``columns.COUNT``."""
    if value is None:
        return None
    if not columns.COUNT[0] <= value <= columns.COUNT[1]:  # NaN compares false
        raise ValueError(value)
    return int(value)


_CLEAN: dict[str, Callable] = {
    "text": columns.clean_text,
    "optional": columns.clean_optional,
    "int": _count,
}
