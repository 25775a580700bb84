"""Reading profiler CSV files robustly and fast: kernel tables with pyarrow (``arrowcsv``), small side tables
with the stdlib ``csv`` module.

Handles what real files do (FORMATS.md §5): trailing commas, CRLF, newlines inside quoted fields,
a UTF-8 BOM, GBK text (re-saved by spreadsheet tools on Chinese Windows), ``N/A``/``NA``, TABs after
timestamps, doubly quoted shapes. Every problem becomes a MalformedProfile naming ``file[:line]``: the line of
a kernel CSV's bad row is found with the stdlib reader, on that note or error path only.
"""

from __future__ import annotations

import codecs
import csv
import os
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Iterator

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.i18n import M_
from opprof_advisor.readers import columns
from opprof_advisor.readers.base import KernelTable, Progress
from opprof_advisor.core.sidefile import SideFileError, open_regular
from opprof_advisor.readers import arrowcsv

SNIFF_BYTES = columns.SNIFF_BYTES
#: Longest physical line accepted; a longer one means a corrupt file and must not be read whole.
MAX_LINE_CHARS = columns.MAX_LINE_CHARS
#: Encodings tried in order. GBK covers files re-saved by Chinese-locale spreadsheet tools;
#: a file that is neither is reported instead of being decoded with replacement characters.
ENCODINGS: tuple[str, ...] = ("utf-8", "gbk")

csv.field_size_limit(MAX_LINE_CHARS)


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


def read_kernel_csv(path: Path, progress: Progress | None = None, notes: list[str] | None = None,
                    required: tuple[str, ...] = REQUIRED_FIELDS) -> KernelTable:
    """Read an op_summary / kernel_details style CSV into a KernelTable (columns found by header name) with
    pyarrow (``arrowcsv``), whatever its size.

    Rows whose field count differs from the header (hand-edited files) are skipped and reported in
    ``notes``; a short last line without a final newline means the file was cut off: an error.
    """
    head = sniff_file(path)
    last: UnicodeDecodeError | None = None
    for encoding in _candidate_encodings(head):
        try:
            header, fields_per_row = _kernel_header(path, encoding)
            mapping = columns.map_header(header)
            _check_required(path, mapping, required)
            if fields_per_row is None:  # said here: pyarrow refuses a header without a newline as a broken CSV
                raise LineFinder(path, encoding, len(header)).header_only()
            return arrowcsv.read_kernel_csv(path, header, mapping, progress, lines=LineFinder(path, encoding, len(header)),
                                            encoding=encoding, fields_per_row=fields_per_row, notes=notes)
        except UnicodeDecodeError as exc:
            last = exc
    raise _decode_problem(path, last)


def _kernel_header(path: Path, encoding: str) -> tuple[list[str], int | None]:
    """The header (without a trailing empty cell) and the field count of the first data row (the header's when it
    does not fit), None when there is no data row."""
    handle, reader = _open_rows(path, encoding)
    with handle:
        try:
            header = next(reader, None)
            if header is None:
                raise MalformedProfile("empty file", path=path, hint="re-export the profile")
            if sum(map(len, header)) + len(header) >= MAX_LINE_CHARS:
                raise _LineTooLong()
            first = next((row for row in reader if row), None)  # blank lines are no rows
        except (csv.Error, _LineTooLong) as exc:
            raise _csv_problem(path, exc, reader) from None
    header = _strip_trailing(header)
    if first is None:  # no data row
        return header, None
    return header, len(first) if _fits(first, len(header)) else len(header)


def _fits(row: list[str], width: int) -> bool:
    # a trailing comma on a data line: the extra empty cell is not read
    return len(row) == width or (len(row) == width + 1 and row[-1] == "")


# ----------------------------------------------------------------------------------------------
# Naming lines with the stdlib csv module: note and error paths of the pyarrow reader only
# ----------------------------------------------------------------------------------------------


class LineFinder:
    """The stdlib reader's view of a kernel CSV, for the notes and errors of the pyarrow reader only: the
    physical line of a row, the rows that do not fit the header."""

    def __init__(self, path: Path, encoding: str, width: int):
        self.path, self.encoding, self.width = path, encoding, width

    def records(self) -> Iterator[tuple[int, list[str]]]:
        """(physical line it starts on, cells) of each record after the header; csv.Error names its line."""
        handle, reader = _open_rows(self.path, self.encoding)
        with handle:
            try:
                next(reader, None)
                start = reader.line_num + 1
                for row in reader:
                    yield start, row
                    start = reader.line_num + 1
            except csv.Error as exc:
                raise _csv_problem(self.path, exc, reader) from None

    def line_of_row(self, row_index: int) -> int | None:
        """The physical line of the ``row_index``-th row that fits the header (0-based)."""
        fitting = (line for line, row in self.records() if _fits(row, self.width))
        return next(islice(fitting, row_index, None), None)

    def order(self, fields: int):
        """Where each row that fits the header is, in file order, among the rows of ``fields`` fields followed by
        the others (a file where only some lines end with a trailing comma)."""
        import numpy as np

        first = np.asarray([len(row) == fields for _, row in self.records() if _fits(row, self.width)], dtype=bool)
        order = np.empty(len(first), dtype=np.int64)
        order[first] = np.arange(np.count_nonzero(first))
        order[~first] = np.count_nonzero(first) + np.arange(np.count_nonzero(~first))
        return order

    def skipped(self) -> "Skipped":
        """The records that do not fit the header; MalformedProfile when the last of them is a line cut short."""
        rows: list[tuple[int, int]] = []
        last = False  # the last record is a skipped one
        for line, row in self.records():
            last = bool(row) and not _fits(row, self.width)
            if last:
                rows.append((line, len(row)))
        if last and not _ends_with_newline(self.path):
            handle, reader = _open_rows(self.path, self.encoding)
            with handle:
                for _ in reader:
                    pass
            raise MalformedProfile(f"truncated last line ({rows[-1][1]} of {self.width} fields)", path=self.path,
                                   line=reader.line_num,
                                   hint="the profiler was interrupted while writing; re-export the profile")
        return Skipped(self, rows)

    def header_only(self) -> MalformedProfile:
        return MalformedProfile("no data rows (header only)", path=self.path, line=1,
                                hint="the profiled run launched no kernels, or the export was cut short")

    def check_long(self) -> None:
        """Raise the error of a line or field over MAX_LINE_CHARS (the stdlib reader refuses both), if any."""
        line = _first_long_line(self.path, self.encoding)
        if line is not None:
            raise MalformedProfile(f"a line is longer than {MAX_LINE_CHARS:,} characters; not a profiler CSV",
                                   path=self.path, line=line, hint="check that the file is the profiler's CSV output")
        for _ in self.records():  # a field over the limit spread over several lines: csv.Error, named
            pass

    def refused(self, message: str) -> MalformedProfile:
        """The error of a file pyarrow could not parse: the stdlib reader's, naming the line, when it has one."""
        self.check_long()
        return MalformedProfile(f"not a valid CSV ({message})", path=self.path,
                                hint="check that the file is the profiler's CSV output")


def _first_long_line(path: Path, encoding: str) -> int | None:
    """The number of the first physical line of more than MAX_LINE_CHARS characters (its line end aside), read a
    piece at a time."""
    with path.open("r", encoding=encoding, errors="replace", newline="") as handle:
        number, length = 1, 0
        for piece in iter(partial(handle.readline, MAX_LINE_CHARS + 1), ""):
            ended = piece.endswith(("\n", "\r"))
            length += len(piece.rstrip("\r\n")) if ended else len(piece)
            if length > MAX_LINE_CHARS:
                return number
            if ended:
                number, length = number + 1, 0
    return None


class Skipped:
    """The records of a kernel CSV that do not fit its header: (line, field count) of each."""

    def __init__(self, lines: LineFinder, rows: list[tuple[int, int]]):
        self.path, self.width, self.rows = lines.path, lines.width, rows

    def note(self):
        return M_("skipped {count} row(s) of {path} whose field count differs from the header (first at line "
                  "{line})", count=len(self.rows), path=self.path, line=self.rows[0][0])

    def none_fit(self) -> MalformedProfile:
        counts = sorted({fields for _, fields in self.rows})
        return MalformedProfile(f"no row has the header's {self.width} fields ({len(self.rows)} row(s) have "
                                f"{', '.join(map(str, counts[:3]))})", path=self.path, line=self.rows[0][0],
                                hint="the file was edited or joined from two exports; re-export the profile")


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) in (b"\n", b"\r")


def _check_required(path: Path, mapping: dict[str, int], required: tuple[str, ...]) -> None:
    for field in required:
        if field not in mapping:
            spellings = " / ".join(columns.FIELD_ALIASES[field][:2])
            raise MalformedProfile(f"required column {spellings!r} is missing", path=path, line=1,
                                   hint="export the profile with a supported tool version")
