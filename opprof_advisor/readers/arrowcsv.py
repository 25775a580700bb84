"""The one reader of kernel CSVs: pyarrow's multi-threaded C++ parser, streamed in blocks, into a columnar
KernelTable (no Python object per row), for files of every size, UTF-8 (with or without a BOM) or GBK.

Text and integer columns are dictionary-encoded batch by batch (``readers.base.Coded``: each distinct cell is
cleaned once, with ``columns.clean_text`` / ``int``), numbers kept as float64 arrays; ``readers.frame.Frame``
builds the profile from them with numpy. Small blocks (1 MB) keep pyarrow's buffers small.

What real files do wrong is judged here, the same way for every size:

* a row whose field count differs from the header is skipped (pyarrow's invalid-row handler) and noted; a data
  row with exactly one extra, empty, trailing cell (a trailing comma) is kept;
* a number column that pyarrow cannot convert, or that holds a number out of its range or not finite, is read
  again as text and checked cell by cell (``columns.checked_float``): a bad cell reads as missing, a row whose
  duration is bad is left out, and each column gets one note naming its first line;
* a duration that is not a number is an error naming its line.

Line numbers come from the stdlib ``csv`` module, on those note and error paths only: ``csvfile`` hands its line
finder in (``lines``).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Callable, Protocol

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers import columns
from opprof_advisor.readers.base import COLUMN_KINDS, EMPTY, Coded, KernelTable, Progress, column_kind

#: Bytes parsed per streamed block (bounds the memory held by pyarrow at once; see above).
BLOCK_BYTES = 1024 * 1024
#: Blocks checked and dictionary-encoded together (fewer compute calls; strings of this much input held at once).
GROUP_BYTES = 16 * 1024 * 1024
#: A row longer than a block is read with blocks 8 times larger, up to this size: a longer row is refused, as the
#: stdlib reader that names lines refuses a longer field or line (csvfile.MAX_LINE_CHARS), so both see the same rows.
LONGEST_ROW_BYTES = columns.MAX_LINE_CHARS
#: Parse blocks on several threads (faster, but more blocks held in memory at once).
USE_THREADS = True

_TEXT = tuple(field for field, kind in COLUMN_KINDS.items() if kind == "text")
_OPTIONAL_TEXT = tuple(field for field, kind in COLUMN_KINDS.items() if kind == "optional")
#: The number columns, in the order their notes are written.
_NUMBERS = ("duration_us", "block_dim", "mix_block_dim", "wait_us", "start_us", "device_id", "aic_time_us",
            "aiv_time_us", *columns.MEMORY_FIELDS)
_CONVERSION = re.compile(r"In CSV column #(\d+): CSV conversion error to double")
_REEXPORT = "the file is corrupt or edited; re-export the profile"


class Lines(Protocol):
    """What the stdlib reader finds in the file, on note and error paths only (``csvfile.LineFinder``)."""

    def line_of_row(self, row_index: int) -> int | None:
        """The physical line of the ``row_index``-th row that fits the header (0-based)."""

    def order(self, fields: int):
        """Where each fitting row is among the rows of ``fields`` fields followed by the others (numpy array)."""

    def skipped(self):
        """The rows that do not fit (``.rows``, ``.note()``, ``.none_fit()``); raises for a last line cut short."""

    def header_only(self) -> MalformedProfile:
        """The error of a file without data rows."""

    def check_long(self) -> None:
        """Raise the error of a line or field too long for the stdlib reader (which names lines), if any."""

    def refused(self, message: str) -> MalformedProfile:
        """The error of a file pyarrow could not parse."""


class _RowTooLong(Exception):
    """A row is longer than the block size: read the file again with larger blocks."""


class _AsText(Exception):
    """Read the file again with these number columns as text (to check and name their cells one by one)."""

    def __init__(self, fields: set[str]):
        super().__init__(fields)
        self.fields = fields


def read_kernel_csv(path: Path, header: list[str], mapping: dict[str, int], progress: Progress | None = None, *,
                    lines: Lines, encoding: str = "utf-8", fields_per_row: int | None = None,
                    notes: list | None = None) -> KernelTable:
    """Read a kernel CSV whose (trailing-comma-stripped) ``header`` maps onto KernelTable fields by ``mapping``.

    ``fields_per_row`` is the field count of its data rows (the header's, or one more for a trailing comma);
    ``lines`` names the lines of bad rows (needed once a row is bad). Raises MalformedProfile (naming the line) on
    bad input, UnicodeDecodeError when the file is not ``encoding``.
    """
    width = len(header)
    count = fields_per_row or width
    as_text: set[str] = set()
    total, block = path.stat().st_size, BLOCK_BYTES
    while True:
        try:
            chunks, invalid, unfit = _read(path, encoding, count, width, mapping, as_text, progress, total, lines,
                                           block)
            other = width + 1 if count == width else width
            kept = [row for row in invalid if _fits(row, other, width)]
            order = None
            if kept:  # rows of both accepted widths (a trailing comma on some lines): read the others too
                more, _, more_unfit = _read(path, encoding, other, width, mapping, as_text, None, total, lines, block)
                unfit += more_unfit
                for field in mapping:
                    chunks[field].extend(more[field])
                order = lines.order(count)
            if block > BLOCK_BYTES * 8:  # a row over 8 MiB: one the line finder cannot read makes the file refused
                lines.check_long()
            table = _Table(path, header, mapping, chunks, order, lines)
            table = table.build(len(invalid) > len(kept) or unfit > 0, notes)
            if progress is not None:
                progress(total, total)
            return table
        except _AsText as retry:
            as_text |= retry.fields
        except _RowTooLong as exc:
            if block >= LONGEST_ROW_BYTES:
                raise lines.refused(str(exc)) from None
            block = min(block * 8, LONGEST_ROW_BYTES)


def _fits(row: tuple[int, str], fields: int, width: int) -> bool:
    """True when an invalid row of ``fields`` fields fits the header all the same (one extra empty last cell)."""
    actual, text = row
    if actual != fields:
        return False
    return fields == width or next(csv.reader(io.StringIO(text)), [""])[-1] == ""


def _arrow_encoding(encoding: str) -> str:
    return "utf8" if encoding in ("utf-8", "utf-8-sig") else encoding  # pyarrow skips a UTF-8 BOM itself


def _source(path: Path):
    """The path as pyarrow opens it, or an open binary file when the path is not UTF-8 (pyarrow needs UTF-8)."""
    try:
        str(path).encode("utf-8")
        return str(path)
    except UnicodeEncodeError:
        return path.open("rb")


def _read(path: Path, encoding: str, count: int, width: int, fields: dict[str, int],
          as_text: set[str], progress: Progress | None, total: int, lines: Lines,
          block: int) -> tuple[dict[str, list], list[tuple[int, str]], int]:
    """The columns of the rows of ``count`` fields that fit the header of ``width`` (arrays, text and integers
    dictionary-encoded), the (field count, text) of the rows of other counts, and how many rows of ``count``
    fields did not fit (one field more than the header, not empty)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:  # the kernel itself: importing pyarrow.compute builds wrappers for every kernel (~65 ms)
        from pyarrow._compute import call_function
    except ImportError:
        from pyarrow.compute import call_function
    names = [f"c{i}" for i in range(count)]
    text = {f for f in fields if column_kind(f) in ("text", "optional") or f in as_text}
    types = {f"c{i}": (pa.string() if f in text else pa.float64()) for f, i in fields.items() if i < count}
    # a row one field longer than the header fits only when that field is empty (a trailing comma): read it too
    extra = f"c{count - 1}" if count == width + 1 else None
    if extra is not None:
        types[extra] = pa.string()
    invalid: list[tuple[int, str]] = []

    def on_invalid(row) -> str:
        invalid.append((row.actual_columns, row.text))
        return "skip"

    source = _source(path)
    try:
        reader = pacsv.open_csv(
            source,
            # the header is one record (a quoted cell may hold a newline): skipped as a row, not as lines
            read_options=pacsv.ReadOptions(column_names=names, skip_rows_after_names=1, block_size=block,
                                           use_threads=USE_THREADS, encoding=_arrow_encoding(encoding)),
            parse_options=pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(include_columns=list(types), column_types=types,
                                                 null_values=sorted(columns.MISSING_NUMBERS), strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
        )
        chunks: dict[str, list] = {field: [] for field in fields}
        done, pending, unfit = 0, [], 0

        def add(group) -> int:
            if extra is not None:  # keep the rows whose extra last field is empty
                fitting = call_function("filter", [group, call_function("equal", [group.column(extra),
                                                                                  pa.scalar("")])])
                dropped, group = group.num_rows - fitting.num_rows, fitting
            else:
                dropped = 0
            _add_batches(chunks, fields, text, group, call_function)
            return dropped

        for batch in reader:
            pending.append(batch)
            done = min(total, done + block)
            if len(pending) * block >= GROUP_BYTES:
                unfit += add(pa.Table.from_batches(pending))
                pending = []
            if progress is not None:
                progress(done, total)
        if pending:
            unfit += add(pa.Table.from_batches(pending))
        return chunks, invalid, unfit
    except pa.ArrowInvalid as exc:
        message = str(exc)
        found = _CONVERSION.search(message)
        if found:  # a number pyarrow does not read (text, a doubly quoted number, blanks): check it cell by cell
            index = int(found.group(1))
            raise _AsText({f for f, i in fields.items() if i == index}) from None
        if "straddl" in message:
            raise _RowTooLong(message) from None
        if "invalid UTF8" in message:
            raise UnicodeDecodeError(encoding, b"", 0, 1, message) from None
        raise lines.refused(message) from None
    finally:
        if not isinstance(source, str):
            source.close()
        # give parse buffers back to the OS now
        pa.default_memory_pool().release_unused()


def _add_batches(chunks: dict[str, list], fields: dict[str, int], text: set[str], group, call_function) -> None:
    """Keep the columns of a group of batches, text dictionary-encoded (one compute call per column)."""
    for field, index in fields.items():
        if f"c{index}" not in group.column_names:
            continue
        array = group.column(f"c{index}")
        if field in text:
            array = call_function("dictionary_encode", [array])
        chunks[field].extend(array.chunks)


class _Table:
    """The checked columns of one read, made into a KernelTable with the notes and errors of bad cells."""

    def __init__(self, path: Path, header: list[str], mapping: dict[str, int], chunks: dict[str, list], order,
                 lines: Lines):
        import numpy as np
        import pyarrow as pa

        self.np, self.pa = np, pa
        self.names = {field: header[index] for field, index in mapping.items() if index < len(header)}
        self.fields, self.chunks, self.order, self.lines = mapping, chunks, order, lines
        self.bad = columns.BadNumbers(path)
        self.first_bad: dict[str, int] = {}  # column -> index (among rows that fit the header) of its first bad cell

    def build(self, skipped: bool, notes: list | None) -> KernelTable:
        np = self.np
        duration, dropped = self._duration()
        scan = self.lines.skipped() if skipped else None
        keep = None if dropped is None else ~dropped
        n = len(duration) if keep is None else int(np.count_nonzero(keep))
        if not n:
            if dropped is not None:
                raise self._no_duration()
            if scan is not None and scan.rows:
                raise scan.none_fit()
            raise self.lines.header_only()
        table = KernelTable()
        table.present = {f for f in self.fields if not f.startswith("pipe:")}
        pipes = [f for f in self.fields if f.startswith("pipe:")]
        if pipes:
            table.present.add("pipe")
        table.pipe = {field[5:]: [] for field in pipes}
        table.store("duration_us", duration if keep is None else duration[keep])
        for field in (*_NUMBERS[1:], *pipes):
            if field in self.fields:
                table.store(field, self._numbers(field, keep))
        for field in (*_TEXT, *_OPTIONAL_TEXT):
            if field in self.fields:
                codes, values = self._rows(field)
                table.store(field, self._coded(codes if keep is None else codes[keep], values,
                                               _CLEAN[column_kind(field)]))
        # columns the file lacks read as empty, as they always did
        for field in (*_TEXT, "op_state", "block_dim", "mix_block_dim"):
            if field not in self.fields:
                table.store(field, Coded(np.zeros(n, dtype=np.int32), [EMPTY[column_kind(field)]]))
        if "wait_us" not in self.fields:
            table.store("wait_us", np.full(n, np.nan))
        if notes is not None:
            if scan is not None and scan.rows:
                notes.append(scan.note())
            for column, index in self.first_bad.items():  # each bad-number note names its column's first line
                self.bad.found[column][0] = self.lines.line_of_row(index)
            notes.extend(self.bad.notes())
        return table

    def _rows(self, field: str):
        """The column in file order: (codes, distinct cells) when read as text, else (float64 array with NaN for
        missing, count of missing cells)."""
        np, pa = self.np, self.pa
        parts = self.chunks.pop(field)
        if self._is_text(parts):
            array = pa.concat_arrays(pa.chunked_array(parts).unify_dictionaries().chunks)
            codes = array.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            values = array.dictionary.to_pylist()
        elif parts:
            column = pa.chunked_array(parts)
            codes, values = column.to_numpy(), column.null_count
        else:  # no row at all
            codes, values = np.zeros(0, dtype=np.int64), ([] if column_kind(field) in ("text", "optional") else 0)
        if self.order is not None:
            codes = codes[self.order]
        return codes, values

    def _is_text(self, parts: list) -> bool:
        return bool(parts) and self.pa.types.is_dictionary(parts[0].type)

    def _checked(self, field: str):
        """(rows, distinct cells, each checked once) of a number column read as text."""
        rows, cells = self._rows(field)
        check = columns.checked_int if column_kind(field) == "int" else columns.checked_float
        bounds = columns.range_of(field)
        return rows, cells, [check(cell, bounds) for cell in cells]

    def _floats(self, field: str):
        """The float array of a column pyarrow converted; _AsText when a cell is out of range or not finite."""
        np = self.np
        values, missing = self._rows(field)
        low, high = columns.range_of(field)
        with np.errstate(invalid="ignore"):
            tiny = (np.abs(values) < columns.TINY) & (values != 0)
            if tiny.any():  # a subnormal is 0, as checked_float reads it
                values = np.where(tiny, 0.0, values)
            inside = np.count_nonzero((values >= low) & (values <= high))  # NaN compares false
        if len(values) - inside != missing or (missing and field == "duration_us"):
            raise _AsText({field})  # a bad number, or a missing duration: checked and named cell by cell
        return values

    def _duration(self):
        """(the durations of all rows, the mask of those left out as implausible, or None)."""
        np = self.np
        if not self._is_text(self.chunks["duration_us"]):
            return self._floats("duration_us"), None
        rows, cells, checked = self._checked("duration_us")
        missing = self._mask(checked, rows, lambda value: value is None)
        if missing.any():
            first = int(np.argmax(missing))
            raise MalformedProfile(f"duration {cells[rows[first]].strip()!r} is not a number", path=self.bad.path,
                                   line=self.lines.line_of_row(first), hint=_REEXPORT)
        bad = self._mask(checked, rows, _is_bad)
        self._count("duration_us", rows, cells, bad, None, dropped=True)
        return self._as_floats(checked, rows), (bad if bad.any() else None)

    def _numbers(self, field: str, keep):
        """A number column of the kept rows: a float array (NaN for missing), or a Coded of int / None for an
        integer field. A bad cell reads as missing and is counted for its column's note."""
        if self._is_text(self.chunks[field]):
            rows, cells, checked = self._checked(field)
            self._count(field, rows, cells, self._mask(checked, rows, _is_bad), keep)
            if keep is not None:
                rows = rows[keep]
            if column_kind(field) == "int":
                return self._coded(rows, checked, _not_bad)
            return self._as_floats(checked, rows)
        values = self._floats(field)
        if keep is not None:
            values = values[keep]
        if column_kind(field) == "int":
            return self._coded(*self._float_codes(values), _count)
        return values

    def _count(self, field: str, rows, cells: list, bad, keep, dropped: bool = False) -> None:
        """Count the bad cells of ``field`` (among kept rows) for its note."""
        np = self.np
        where = bad if keep is None else bad & keep
        found = int(np.count_nonzero(where))
        if not found:
            return
        first = int(np.argmax(where))
        name = self.names.get(field) or field
        self.bad.add(name, None, cells[rows[first]], columns.range_of(field), found, dropped=dropped)
        self.first_bad.setdefault(name, first)

    def _no_duration(self) -> MalformedProfile:
        """The error of a file none of whose rows has a plausible duration."""
        name = self.names.get("duration_us") or "duration_us"
        found = columns.BadNumbers(self.bad.path)
        found.found[name] = [None, *self.bad.found[name][1:]]
        return MalformedProfile(f"no row has a plausible duration: {found.summary()}", path=self.bad.path,
                                line=self.lines.line_of_row(self.first_bad[name]), hint=_REEXPORT)

    def _mask(self, checked: list, rows, test: Callable):
        """The rows whose checked cell passes ``test``, as a boolean array."""
        return self.np.asarray([test(value) for value in checked] or [False], dtype=bool)[rows]

    def _as_floats(self, checked: list, rows):
        """The float array of checked cells (NaN for missing or bad)."""
        np = self.np
        values = [np.nan if value is None or _is_bad(value) else value for value in checked]
        return np.asarray(values or [np.nan], dtype=np.float64)[rows]

    def _float_codes(self, values):
        """(codes, distinct values, None for NaN) of a float array."""
        np = self.np
        nan = np.isnan(values)
        distinct, codes = np.unique(np.where(nan, 0.0, values), return_inverse=True)
        found = distinct.tolist()
        if nan.any():
            found.append(None)
            codes = np.where(nan, len(found) - 1, codes)
        return codes, found

    def _coded(self, codes, values: list, clean: Callable) -> Coded:
        """Codes into ``values`` as one Coded column: each distinct cell cleaned once, equal results merged."""
        np = self.np
        index: dict = {}
        remap = [index.setdefault(clean(value), len(index)) for value in values]
        mapping = np.asarray(remap, dtype=np.int32) if remap else np.zeros(1, dtype=np.int32)
        return Coded(mapping[np.asarray(codes, dtype=np.int64)], list(index))


def _is_bad(value) -> bool:
    return type(value) is columns.Bad


def _not_bad(value):
    return None if type(value) is columns.Bad else value


def _count(value: float | None) -> int | None:
    """An integer column's distinct value (block dim, device id), its range checked before."""
    return None if value is None else int(value)


_CLEAN: dict[str, Callable] = {
    "text": columns.clean_text,
    "optional": columns.clean_optional,
}
