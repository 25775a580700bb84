"""Reading profiler CSV files robustly and fast, straight into a columnar KernelTable.

Handles what real files do (FORMATS.md §5): trailing commas, CRLF, newlines inside quoted fields,
a UTF-8 BOM, GBK text (re-saved by spreadsheet tools on Chinese Windows), ``N/A``/``NA``, TABs after
timestamps, doubly quoted shapes. Every problem becomes a MalformedProfile naming ``file[:line]``.

Speed: the stdlib C parser does the splitting; rows are buffered in chunks and turned into columns
with ``zip(*rows)``, and repeated values (op types, ratios, block dims, shapes) share one object per
distinct value so a 400k-row file stays columnar and small.
"""

from __future__ import annotations

import codecs
import csv
import math
import os
from functools import partial
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Callable, Iterator

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.i18n import M_
from opprof_advisor.readers import columns
from opprof_advisor.readers.base import KernelTable, Progress
from opprof_advisor.core.sidefile import MAX_DURATION_US, SideFileError, open_regular
from opprof_advisor.readers import arrowcsv

SNIFF_BYTES = columns.SNIFF_BYTES
#: Longest physical line accepted; a longer one means a corrupt file and must not be read whole.
MAX_LINE_CHARS = 16 * 1024 * 1024
#: Rows converted to columns at a time (bounds the transient memory of raw strings).
CHUNK_ROWS = 8192
#: Encodings tried in order. GBK covers files re-saved by Chinese-locale spreadsheet tools;
#: a file that is neither is reported instead of being decoded with replacement characters.
ENCODINGS: tuple[str, ...] = ("utf-8", "gbk")

csv.field_size_limit(MAX_LINE_CHARS)


class _Interned(dict):
    """Maps each distinct string to one shared object (``table[value]``), cleaned once."""

    def __init__(self, clean: Callable[[str], object]):
        super().__init__()
        self.clean = clean
        self.bad = False  # True once a cell cleaned to columns.Bad (a number out of range or not finite)

    def __missing__(self, key: str) -> object:
        value = self[key] = self.clean(key)
        if type(value) is columns.Bad:
            self.bad = True
        return value


def read_head(path: Path, count: int = SNIFF_BYTES) -> tuple[int, bytes]:
    """Size and first ``count`` bytes of a profiler file; MalformedProfile when unreadable or empty."""
    try:
        with open_regular(path, limit=1 << 62) as handle:  # a FIFO or device is refused, not waited on
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(count)
    except SideFileError as exc:
        raise MalformedProfile(str(exc), path=path, hint="point advisor at the profiler's output files") from None
    except OSError as exc:
        raise MalformedProfile(f"cannot open: {exc.strerror or exc}", path=path,
                               hint="check the path and its permissions") from None
    if size == 0:
        raise MalformedProfile("empty file (0 bytes)", path=path,
                               hint="the profiler did not finish writing it; re-export the profile")
    return size, head


def sniff_file(path: Path) -> bytes:
    """Return the first bytes of a CSV after checking it is non-empty text; raise MalformedProfile otherwise."""
    size, head = read_head(path)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or _looks_utf16(head):
        raise MalformedProfile("UTF-16 text (a spreadsheet's \"Unicode text\"), not UTF-8", path=path,
                               hint="re-save the file as UTF-8 CSV")
    if b"\x00" in head:
        raise MalformedProfile(f"binary data, not a CSV text file ({_human(size)})", path=path,
                               hint="point advisor at the profiler's CSV output")
    return head


def _looks_utf16(head: bytes) -> bool:
    # ASCII text in UTF-16 without a BOM: every other byte is NUL, the others are not
    sample = head[:512]
    if len(sample) < 8:
        return False
    even, odd = sample[0::2], sample[1::2]
    return (odd.count(0) == len(odd) and 0 not in even) or (even.count(0) == len(even) and 0 not in odd)


def _encoding_of(head: bytes) -> str:
    return "utf-8-sig" if head.startswith(codecs.BOM_UTF8) else ENCODINGS[0]


def _human(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


def _lines(handle) -> Iterator[str]:
    # readline with a limit (C-level iteration, no per-line Python code): a file without newlines
    # is never read whole; an over-long line arrives in pieces that do not fit the header.
    return iter(partial(handle.readline, MAX_LINE_CHARS), "")


class _LineTooLong(Exception):
    pass


def _open_rows(path: Path, encoding: str):
    handle = path.open("r", encoding=encoding, errors="strict", newline="")
    return handle, csv.reader(_lines(handle))


class Rows(list):
    """The rows of a CSV (lists of cells), with ``lines``: the physical line each row starts on (for notes)."""

    def __init__(self):
        super().__init__()
        self.lines: list[int] = []


def read_rows(path: Path) -> tuple[list[str], Rows]:
    """Header and rows of a small CSV (op_statistic, step_trace_time); raise MalformedProfile on bad input."""
    head = sniff_file(path)
    for encoding in _candidate_encodings(head):
        try:
            handle, reader = _open_rows(path, encoding)
            with handle:
                header = next(reader, None)
                if header is None:
                    raise MalformedProfile("empty file", path=path, hint="re-export the profile")
                rows, start = Rows(), reader.line_num + 1
                for row in reader:
                    if row:
                        rows.append(row)
                        rows.lines.append(start)
                    start = reader.line_num + 1
                return _strip_trailing(header), rows
        except UnicodeDecodeError as exc:
            last = exc
        except (csv.Error, _LineTooLong) as exc:
            raise _csv_problem(path, exc, reader) from None
    raise _decode_problem(path, last)


def _candidate_encodings(head: bytes) -> tuple[str, ...]:
    first = _encoding_of(head)
    return (first,) if first == "utf-8-sig" else ENCODINGS


def _decode_problem(path: Path, exc: UnicodeDecodeError) -> MalformedProfile:
    line, byte = _first_undecodable(path)
    return MalformedProfile(f"not UTF-8 or GBK text (undecodable byte 0x{byte:02x})", path=path, line=line,
                            hint="re-save the file as UTF-8")


def _first_undecodable(path: Path) -> tuple[int | None, int]:
    # Error path only: find the first line that is neither UTF-8 nor GBK, streaming.
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            for encoding in ENCODINGS:
                try:
                    line.decode(encoding)
                    break
                except UnicodeDecodeError as exc:
                    problem = exc
            else:
                return number, problem.object[problem.start]
    return None, 0


def _csv_problem(path: Path, exc: Exception, reader) -> MalformedProfile:
    line = getattr(reader, "line_num", None) or None
    if isinstance(exc, _LineTooLong):
        return MalformedProfile(f"a line is longer than {MAX_LINE_CHARS:,} characters; not a profiler CSV",
                                path=path, line=1, hint="check that the file is the profiler's CSV output")
    message = str(exc)
    if "unexpected end of data" in message or "EOF" in message:
        return MalformedProfile("truncated: the file ends inside a quoted field", path=path, line=line,
                                hint="the profiler was interrupted; re-export the profile")
    return MalformedProfile(f"not a valid CSV ({message})", path=path, line=line,
                            hint="check that the file is the profiler's CSV output")


def _strip_trailing(header: list[str]) -> list[str]:
    # msOpProf ends every line with a comma (FORMATS.md §1.2): drop the empty last header cell.
    return header[:-1] if header and header[-1].strip() == "" and len(header) > 1 else header


# ----------------------------------------------------------------------------------------------
# Kernel tables
# ----------------------------------------------------------------------------------------------

REQUIRED_FIELDS = columns.REQUIRED_FIELDS

_TEXT_FIELDS = ("name", "op_type", "task_type", "input_shapes", "input_dtypes", "input_formats",
                "output_formats", "output_dtypes")


def read_kernel_csv(path: Path, progress: Progress | None = None, notes: list[str] | None = None,
                    required: tuple[str, ...] = REQUIRED_FIELDS) -> KernelTable:
    """Read an op_summary / kernel_details style CSV into a KernelTable (columns found by header name).

    Rows whose field count differs from the header (hand-edited files) are skipped and reported in
    ``notes``; a short last line without a final newline means the file was cut off: an error.
    """
    head = sniff_file(path)
    fast = _read_with_arrow(path, head, progress, required)
    if fast is not None:
        return fast
    last: UnicodeDecodeError | None = None
    for encoding in _candidate_encodings(head):
        try:
            return _read_kernel_csv(path, encoding, progress, notes if notes is not None else [], required)
        except UnicodeDecodeError as exc:
            last = exc
    raise _decode_problem(path, last)


def _read_with_arrow(path: Path, head: bytes, progress: Progress | None,
                     required: tuple[str, ...]) -> KernelTable | None:
    """The pyarrow fast path for large clean UTF-8 files (see arrowcsv), or None."""
    if _estimated_rows(path.stat().st_size, head) < arrowcsv.ARROW_FROM_ROWS or not arrowcsv.available():
        return None
    encoding = _encoding_of(head)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a multi-byte character cut at the sniff boundary
            return None
    handle, reader = _open_rows(path, encoding)
    with handle:
        try:
            header = next(reader, None)
        except (csv.Error, UnicodeDecodeError):
            return None
    if not header:
        return None
    mapping = columns.map_header(_strip_trailing(header))
    _check_required(path, mapping, required)
    return arrowcsv.read_kernel_csv(path, header, mapping, 1, progress)


def _estimated_rows(size: int, head: bytes) -> int:
    """Rows of a file of ``size`` bytes whose first bytes are ``head`` (exact when the head is the whole file)."""
    lines = head.count(b"\n")
    if size <= len(head) or not lines:
        return lines
    return int(size / (len(head) / lines))


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) in (b"\n", b"\r")


def _read_kernel_csv(path: Path, encoding: str, progress: Progress | None, notes: list[str],
                     required: tuple[str, ...]) -> KernelTable:
    total = path.stat().st_size
    handle, reader = _open_rows(path, encoding)
    skipped: list[tuple[int, int]] = []  # (data row index, fields) of rows that do not fit the header
    with handle:
        try:
            header = next(reader, None)
            if header is None:
                raise MalformedProfile("empty file", path=path, hint="re-export the profile")
            if sum(map(len, header)) + len(header) >= MAX_LINE_CHARS:
                raise _LineTooLong()
            header = _strip_trailing(header)
            mapping = columns.map_header(header)
            _check_required(path, mapping, required)
            builder = _ColumnBuilder(path, encoding, mapping, len(header), header)
            pick, width, seen = builder.pick, len(header), 0
            rows: list[tuple[str, ...]] = []
            append = rows.append
            while True:
                odd = 0  # rows of this chunk that did not fit (their index needs the count)
                for row in islice(reader, CHUNK_ROWS):
                    if len(row) == width:
                        append(pick(row))
                    elif len(row) == width + 1 and row[-1] == "":
                        append(pick(row))  # trailing comma on a data line: the extra cell is not picked
                    else:
                        if row:
                            skipped.append((seen + len(rows) + odd, len(row)))
                        odd += 1
                consumed = len(rows) + odd
                if not consumed:
                    break
                seen += consumed
                builder.add(rows)
                rows.clear()
                if progress is not None:
                    progress(handle.buffer.tell(), total)
        except (csv.Error, _LineTooLong) as exc:
            raise _csv_problem(path, exc, reader) from None
        if skipped and skipped[-1][0] == seen - 1 and not _ends_with_newline(path):
            raise MalformedProfile(f"truncated last line ({skipped[-1][1]} of {width} fields)", path=path,
                                   line=reader.line_num,
                                   hint="the profiler was interrupted while writing; re-export the profile")
    if progress is not None:
        progress(total, total)
    if not len(builder.table):
        if builder.bad:  # every row's duration is out of range or not finite
            raise builder.no_duration()
        if skipped:  # rows are there, but none has the header's field count
            counts = sorted({fields for _, fields in skipped})
            raise MalformedProfile(f"no row has the header's {width} fields ({len(skipped)} row(s) have "
                                   f"{', '.join(map(str, counts[:3]))})", path=path,
                                   line=_line_of_record(path, encoding, skipped[0][0]),
                                   hint="the file was edited or joined from two exports; re-export the profile")
        raise MalformedProfile("no data rows (header only)", path=path, line=1,
                               hint="the profiled run launched no kernels, or the export was cut short")
    if skipped:
        first = _line_of_record(path, encoding, skipped[0][0])
        notes.append(M_("skipped {count} row(s) of {path} whose field count differs from the header (first at line "
                        "{line})", count=len(skipped), path=path, line=first))
    builder.finish(notes)
    return builder.table


def _line_of_record(path: Path, encoding: str, record: int) -> int | None:
    """Physical line where CSV record ``record`` (0-based after the header) starts; error paths only."""
    with path.open("r", encoding=encoding, newline="") as handle:
        reader = csv.reader(_lines(handle))
        next(reader, None)
        start = reader.line_num + 1
        for index, _ in enumerate(reader):
            if index == record:
                return start
            start = reader.line_num + 1
    return None


def line_of_row(path: Path, encoding: str, row_index: int, width: int) -> int | None:
    """The physical line of the ``row_index``-th row that fits the header (0-based); error paths only."""
    with path.open("r", encoding=encoding, newline="") as handle:
        reader = csv.reader(_lines(handle))
        next(reader, None)
        start, seen = reader.line_num + 1, -1
        for row in reader:
            if len(row) == width or (len(row) == width + 1 and row[-1] == ""):
                seen += 1
                if seen == row_index:
                    return start
            start = reader.line_num + 1
    return None


def _check_required(path: Path, mapping: dict[str, int], required: tuple[str, ...]) -> None:
    for field in required:
        if field not in mapping:
            spellings = " / ".join(columns.FIELD_ALIASES[field][:2])
            raise MalformedProfile(f"required column {spellings!r} is missing", path=path, line=1,
                                   hint="export the profile with a supported tool version")


#: Mapped columns the KernelTable has no place for (recognised, but not kept).
_NOT_KEPT: frozenset[str] = frozenset()


class _ColumnBuilder:
    """Turns chunks of raw rows into the typed, de-duplicated columns of a KernelTable.

    Every number is checked finite and in its field's range (``columns.FIELD_RANGES``) here: a bad cell reads as
    missing, a row whose duration is bad is left out, and ``finish`` turns them into one note per column naming
    the first line."""

    def __init__(self, path: Path, encoding: str, mapping: dict[str, int], width: int, header: list[str] = ()):
        self.path, self.encoding, self.width = path, encoding, width
        self.column_names = {field: header[index] for field, index in mapping.items() if index < len(header)}
        fields = [f for f in mapping if f not in _NOT_KEPT]
        # Only the needed cells of each row are kept (itemgetter), in this order:
        self.slot = {field: position for position, field in enumerate(fields)}
        getter = itemgetter(*(mapping[f] for f in fields))
        self.pick = getter if len(fields) > 1 else (lambda row, _g=getter: (_g(row),))
        self.table = KernelTable()
        self.pipe_keys = [f[5:] for f in fields if f.startswith("pipe:")]
        present = {f for f in mapping if not f.startswith("pipe:")}
        if self.pipe_keys:
            present.add("pipe")
        self.table.present = present
        self.table.pipe = {key: [] for key in self.pipe_keys}
        self.rows_done = 0
        self.text = _Interned(columns.clean_text)
        self.optional = _Interned(columns.clean_optional)
        self.checked = {bounds: (_Interned(partial(columns.checked_int, bounds=bounds)),
                                 _Interned(partial(columns.checked_float, bounds=bounds)))
                        for bounds in {*columns.FIELD_RANGES.values(), columns.RATIO}}
        self.bad = columns.BadNumbers(path)
        self.first_bad: dict[str, int] = {}  # column -> index (among rows that fit the header) of its first bad cell
        self.kept: list[int] | None = None  # the rows of the chunk being added that were kept (None: all)

    def _ints(self, field: str) -> _Interned:
        return self.checked[columns.FIELD_RANGES[field]][0]

    def _floats(self, field: str) -> _Interned:
        return self.checked[columns.range_of(field)][1]

    def add(self, rows: list[tuple[str, ...]]) -> None:
        if not rows:
            return
        n = len(rows)
        raw = list(zip(*rows))
        durations, kept = self._durations(raw[self.slot["duration_us"]])
        if kept is not None:  # rows whose duration is not plausible are left out
            rows = [rows[i] for i in kept]
            raw = list(zip(*rows))
        self.kept = kept
        m = len(rows)
        table, slot = self.table, self.slot.get
        if m:
            for field in _TEXT_FIELDS:
                index = slot(field)
                values = [""] * m if index is None else list(map(self.text.__getitem__, raw[index]))
                getattr(table, field).extend(values)
            state = slot("op_state")
            table.op_state.extend([None] * m if state is None else map(self.optional.__getitem__, raw[state]))
            for field in ("block_dim", "mix_block_dim"):
                index = slot(field)
                getattr(table, field).extend([None] * m if index is None else
                                             self._column(raw[index], self._ints(field), field))
            wait = slot("wait_us")
            table.wait_us.extend([None] * m if wait is None else self._floats_of(raw[wait], "wait_us"))
            for field, parse in (("start_us", None), ("device_id", self._ints("device_id")),
                                 ("step_id", partial(map, self.optional.__getitem__)),
                                 ("aic_time_us", self._floats("aic_time_us")),
                                 ("aiv_time_us", self._floats("aiv_time_us")),
                                 *((field, self._floats(field)) for field in columns.MEMORY_FIELDS)):
                index = slot(field)
                if index is not None:
                    values = self._floats_of(raw[index], field) if parse is None else \
                        self._column(raw[index], parse, field)
                    getattr(table, field).extend(values)
            table.duration_us.extend(durations)
            for key in self.pipe_keys:
                table.pipe[key].extend(self._column(raw[slot("pipe:" + key)], self._floats("pipe:" + key),
                                                    "pipe:" + key))
        self.rows_done += n

    def _name(self, field: str) -> str:
        return self.column_names.get(field) or field

    def _original(self, index: int) -> int:
        """The index among the rows that fit the header of row ``index`` of the current chunk (after drops)."""
        return self.rows_done + (index if self.kept is None else self.kept[index])

    def _column(self, cells: tuple[str, ...], parse, field: str) -> list:
        """``cells`` parsed by ``parse`` (an _Interned table or a function); a bad number is None, and counted."""
        values = list(map(parse.__getitem__, cells)) if isinstance(parse, _Interned) else list(parse(cells))
        if isinstance(parse, _Interned) and not parse.bad:
            return values
        return self._drop_bad(values, cells, field)

    def _drop_bad(self, values: list, cells: tuple[str, ...], field: str) -> list:
        bad = [i for i, value in enumerate(values) if type(value) is columns.Bad]
        if bad:
            self.bad.add(self._name(field), None, cells[bad[0]], columns.range_of(field), len(bad))
            self.first_bad.setdefault(self._name(field), self._original(bad[0]))
            for i in bad:
                values[i] = None
        return values

    def _floats_of(self, cells: tuple[str, ...], field: str) -> list[float | None]:
        """A float column (wait, start): C speed when every cell is a plausible number."""
        low, high = columns.range_of(field)
        try:
            values = list(map(float, cells))
        except ValueError:
            return self._drop_bad([columns.checked_float(cell, (low, high)) for cell in cells], cells, field)
        if math.isfinite(sum(values)) and low <= min(values) and max(values) <= high and not _tiny(values):
            return values
        return self._drop_bad([columns.checked_float(cell, (low, high)) for cell in cells], cells, field)

    def _fail(self, index: int, message: str) -> MalformedProfile:
        line = line_of_row(self.path, self.encoding, self.rows_done + index, self.width)
        return MalformedProfile(message, path=self.path, line=line,
                                hint="the file is corrupt or edited; re-export the profile")

    def _durations(self, cells: tuple[str, ...]) -> tuple[list[float], list[int] | None]:
        """(the plausible durations, the indices of their rows, or None when every row is kept)."""
        try:
            values = list(map(float, cells))
        except ValueError:
            values = None
        if values is not None and math.isfinite(sum(values)) and min(values) >= 0 and max(values) <= MAX_DURATION_US \
                and not _tiny(values):
            return values, None
        checked = []
        for index, cell in enumerate(cells):
            value = columns.checked_float(cell, columns.DURATION_US)
            if value is None:
                raise self._fail(index, f"duration {cell.strip()!r} is not a number") from None
            checked.append(value)
        kept = [i for i, value in enumerate(checked) if type(value) is not columns.Bad]
        if len(kept) == len(checked):
            return checked, None
        first = next(i for i, value in enumerate(checked) if type(value) is columns.Bad)
        name = self._name("duration_us")
        self.bad.add(name, None, cells[first], columns.DURATION_US, len(checked) - len(kept), dropped=True)
        self.first_bad.setdefault(name, self.rows_done + first)
        return [checked[i] for i in kept], kept

    def no_duration(self) -> MalformedProfile:
        """The error of a file none of whose rows has a plausible duration."""
        name = self._name("duration_us")
        line = line_of_row(self.path, self.encoding, self.first_bad[name], self.width)
        found = columns.BadNumbers(self.path)
        found.found[name] = [None, *self.bad.found[name][1:]]
        return MalformedProfile(f"no row has a plausible duration: {found.summary()}", path=self.path, line=line,
                                hint="the file is corrupt or edited; re-export the profile")

    def finish(self, notes: list[str]) -> None:
        """The notes of the bad numbers, each naming the line of its column's first bad cell."""
        if not self.bad:
            return
        for column, index in self.first_bad.items():
            self.bad.found[column][0] = line_of_row(self.path, self.encoding, index, self.width)
        notes.extend(self.bad.notes())


def _tiny(values: list[float]) -> bool:
    """True when a value is not 0 yet smaller than columns.TINY (a subnormal): checked_float reads it as 0."""
    return min(map(abs, values)) < columns.TINY and any(0 < abs(v) < columns.TINY for v in values)
