"""The one header alias table, and tolerant parsers for the values found in profiler CSVs.

Every reader maps header spellings through ``map_header`` and never indexes columns by position:
column order and membership drift with tool version, chip, ``--aic-metrics`` and profiler level
(FORMATS.md §5.1).
"""

from __future__ import annotations

import math
import re
from typing import Any

from opprof_advisor.core.i18n import M_, Message
from opprof_advisor.core.operators import COMMUNICATION_FAMILIES
from opprof_advisor.core.sidefile import MAX_DURATION_US, MAX_INT_DIGITS
from opprof_advisor.readers.base import PIPE_KEYS

#: Bytes inspected before parsing: NUL bytes there mean a binary (or sparse) file, never a CSV.
SNIFF_BYTES = 64 * 1024
#: Longest line (and row) of a profiler CSV; a longer one means a corrupt file and is never read whole.
MAX_LINE_CHARS = 16 * 1024 * 1024
#: Fields a kernel table cannot do without.
REQUIRED_FIELDS: tuple[str, ...] = ("name", "duration_us")

#: KernelTable field -> header spellings (FORMATS.md §3.2, §4.3, §5.1). Compared after ``normalise_header``.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("Op Name", "Name", "kernel_name", "Kernel Name"),
    "op_type": ("OP Type", "Op Type", "Type", "opType"),
    "task_type": ("Task Type", "Accelerator Core", "Core Type", "kernel_type"),
    "start_us": ("Task Start Time(us)", "Start Time(us)", "Task Start Time", "Start Time", "task_start(us)"),
    "duration_us": ("Task Duration(us)", "Duration(us)", "task_time(us)", "Task Duration"),
    "wait_us": ("Task Wait Time(us)", "Wait Time(us)", "Task Wait Time"),
    "block_dim": ("Block Dim", "Block Num", "blockDim", "blockNum", "block_dim"),
    "mix_block_dim": ("Mix Block Dim", "Mix Block Num", "mixBlockDim", "mixBlockNum"),
    "input_shapes": ("Input Shapes",),
    "input_dtypes": ("Input Data Types",),
    "input_formats": ("Input Formats",),
    "output_formats": ("Output Formats",),
    "output_dtypes": ("Output Data Types",),
    "op_state": ("OP State", "Op State"),
    "device_id": ("Device_id", "Device Id", "Device ID"),
    "aic_time_us": ("aicore_time(us)", "aic_time(us)"),
    "aiv_time_us": ("aiv_time(us)",),
    "aic_read_kb": ("aic_read_main_memory_datas(KB)",),
    "aic_write_kb": ("aic_write_main_memory_datas(KB)",),
    "aiv_read_kb": ("aiv_read_main_memory_datas(KB)",),
    "aiv_write_kb": ("aiv_write_main_memory_datas(KB)",),
    "step_id": ("Step Id", "Step ID"),
}

#: The main-memory volume columns of a MemoryAccess capture (KB read and written by each side).
MEMORY_FIELDS: tuple[str, ...] = ("aic_read_kb", "aic_write_kb", "aiv_read_kb", "aiv_write_kb")

_PIPES = ("cube", "vec", "scalar", "mte1", "mte2", "mte3", "fixpipe")


def _pipe_aliases() -> dict[str, str]:
    # msprof names the cube pipe "mac" (aic_mac_ratio), msOpProf "cube" (aic_cube_ratio); older chips
    # write the ratios without the aic_/aiv_ prefix (mac_ratio, vec_ratio) (FORMATS.md §1.5, §3.2).
    aliases: dict[str, str] = {}
    for prefix in ("aic_", "aiv_", ""):
        for pipe in _PIPES:
            key = f"{prefix}{pipe}"
            if key not in PIPE_KEYS:
                continue
            aliases[f"{key}_ratio"] = key
            if pipe == "cube":
                aliases[f"{prefix}mac_ratio"] = key
    return aliases


#: normalised header (e.g. ``aic_mac_ratio``) -> PIPE_KEYS key (``aic_cube``).
PIPE_ALIASES: dict[str, str] = _pipe_aliases()

#: Values that mean "not recorded" (FORMATS.md §1.2, §5.3).
MISSING_VALUES = frozenset({"", "N/A", "NA", "n/a", "na", "None", "NULL", "null", "-", "--", "nan", "NaN"})
#: The same in a numeric cell: there ``nan`` is a number that is not finite, reported like ``inf``.
MISSING_NUMBERS = MISSING_VALUES - {"nan", "NaN"}


def normalise_header(name: str) -> str:
    """Lower-case a header cell and drop BOM, quotes, surrounding blanks and inner spacing variants."""
    return re.sub(r"\s+", " ", name.replace("\ufeff", "").strip().strip('"').strip()).lower()


def _alias_index() -> dict[str, str]:
    index = {normalise_header(alias): field for field, aliases in FIELD_ALIASES.items() for alias in aliases}
    for alias, key in PIPE_ALIASES.items():
        index[alias] = "pipe:" + key
    return index


_INDEX = _alias_index()


def map_header(header: list[str]) -> dict[str, int]:
    """Map a CSV header onto KernelTable fields (``pipe:<key>`` for pipe ratios): field -> column index.

    The first column wins when two spellings of one field are present.
    """
    mapping: dict[str, int] = {}
    for position, cell in enumerate(header):
        field = _INDEX.get(normalise_header(cell))
        if field is not None and field not in mapping:
            mapping[field] = position
    return mapping


# ----------------------------------------------------------------------------------------------
# Numbers: every number read from a profile is checked finite and in its plausible range here
# ----------------------------------------------------------------------------------------------

#: No figure of a profile is larger (µs since the epoch are ~1.8e15, a device's bytes ~1e11): a larger magnitude
#: is a corrupt value, and a few of them overflow a sum to infinity.
MAX_FIGURE = 1e18

#: No figure is measured this finely (a profiler's resolution is 1 ns = 1e-3 µs): a smaller magnitude reads as 0, so
#: that a subnormal such as 4.9e-324 can never become the divisor of a share and overflow it to infinity.
TINY = 1e-9

#: Plausible ranges (low, high) of the kinds of figures read from profiles.
ANY = (-MAX_FIGURE, MAX_FIGURE)
#: A duration, wait, per-step figure or busy time (µs): no task runs longer than MAX_DURATION_US.
DURATION_US = (0.0, MAX_DURATION_US)
#: A figure of a step table (µs): as a duration, but a rounding may leave Free or Bubble a little below 0.
STEP_US = (-MAX_DURATION_US, MAX_DURATION_US)
#: A timestamp or any other non-negative figure (µs since the epoch, bytes, counts of instructions ...).
NON_NEGATIVE = (0.0, MAX_FIGURE)
#: A pipe's busy ratio: a pipe busy more than twice the task's time is no measurement.
RATIO = (0.0, 2.0)
#: Block dims, device ids, core counts (a uint32 at most).
COUNT = (0.0, 4294967295.0)
#: Kilobytes moved by one kernel (1e12 KB is a petabyte).
KILOBYTES = (0.0, 1e12)


#: KernelTable field -> its plausible range (a pipe ratio ``pipe:<key>`` is a RATIO).
FIELD_RANGES: dict[str, tuple[float, float]] = {
    "duration_us": DURATION_US, "wait_us": DURATION_US, "aic_time_us": DURATION_US, "aiv_time_us": DURATION_US,
    "start_us": NON_NEGATIVE, "block_dim": COUNT, "mix_block_dim": COUNT, "device_id": COUNT,
    **{field: KILOBYTES for field in MEMORY_FIELDS},
}


def range_of(field: str) -> tuple[float, float]:
    """The plausible range of a KernelTable field (``pipe:<key>``: a ratio)."""
    return RATIO if field.startswith("pipe:") else FIELD_RANGES.get(field, ANY)


class Bad:
    """A cell that holds a number, but not a finite one or not one in its range (``inf``, ``nan``, ``1e400``, ``-1``
    where a duration belongs): what ``checked_float`` gives instead of the number."""

    __slots__ = ("cell",)

    def __init__(self, cell: object):
        self.cell = cell

    def __repr__(self) -> str:
        return f"Bad({self.cell!r})"


def _json_constant(name: str) -> Bad:
    return Bad(name)  # NaN, Infinity, -Infinity: JSON has no such number


def _json_float(text: str) -> float | Bad:
    value = float(text)
    return value if math.isfinite(value) else Bad(text)  # 1e400


def _json_int(text: str) -> int | Bad:
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else Bad(text)  # int() of 4,300+ digits raises


#: json.loads / JSONDecoder hooks for profile JSON: a number JSON does not allow (NaN, Infinity), one too large for
#: a float (1e400) or an integer of more than MAX_INT_DIGITS digits decodes as ``Bad``, so the reader leaves out (with
#: a note) what holds it instead of refusing the file.
LENIENT_JSON_NUMBERS = {"parse_constant": _json_constant, "parse_float": _json_float, "parse_int": _json_int}


def _number_text(value: str) -> str:
    return value.strip().strip('"').strip()


def _text_number(value: str) -> float | None:
    """A cell's number (a magnitude below TINY is 0), or None for a missing or unparsable one; not range-checked."""
    text = _number_text(value)
    if text in MISSING_NUMBERS:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return 0.0 if -TINY < number < TINY else number


def parse_float(value: str) -> float | None:
    """A number, or None for N/A / NA / empty; tolerates a trailing TAB and stray quotes.

    A number that is not finite, or larger in magnitude than MAX_FIGURE, is None too (readers that report such
    cells use ``checked_float``)."""
    number = _text_number(value)
    return number if number is None or -MAX_FIGURE <= number <= MAX_FIGURE else None  # NaN compares false


def parse_int(value: str) -> int | None:
    """An integer (``24``, ``24.0``), or None for missing, unparsable, non-finite or absurd values."""
    number = parse_float(value)
    return None if number is None else int(number)


def checked_float(value: Any, bounds: tuple[float, float] = ANY) -> float | Bad | None:
    """``value`` (a cell, or a number from JSON / SQLite) as a float within ``bounds``; None when it is missing or
    not a number (text); ``Bad(value)`` when it is a number outside ``bounds`` or not finite (a ``Bad`` as it is: a
    JSON number decoded by LENIENT_JSON_NUMBERS)."""
    if isinstance(value, (bool, Bad)):
        return value if isinstance(value, Bad) else None
    if isinstance(value, (int, float)):
        number = float(value) if not isinstance(value, int) or -2 ** 1000 < value < 2 ** 1000 else math.inf
    else:
        number = _text_number(str(value)) if value is not None else None
        if number is None:
            return None
    if -TINY < number < TINY:
        return 0.0
    low, high = bounds
    return number if low <= number <= high else Bad(value)


def checked_int(value: Any, bounds: tuple[float, float] = COUNT) -> int | Bad | None:
    """``checked_float`` as an integer (``24``, ``24.0``)."""
    number = checked_float(value, bounds)
    return int(number) if isinstance(number, float) else number


def shown(value: Any, width: int = 24) -> str:
    """A bad cell as a note shows it: quoted, and cut to ``width`` characters (a 400-digit number is one)."""
    text = value.strip() if isinstance(value, str) else repr(value)
    return repr(text if len(text) <= width else text[:width - 1] + "…")


def _bound(value: float) -> str:
    return f"{value:,.0f}" if abs(value) < 1e10 and float(value).is_integer() else f"{value:g}"


class BadNumbers:
    """The cells of one file that hold a number out of range or not finite, per column.

    A reader asks ``number`` for each cell; a bad one reads as missing (or the reader leaves its row out), and
    ``notes()`` names the first of each column (file:line, the column, the value) and how many there were, so the
    rest of the file is still judged.
    """

    def __init__(self, path: object):
        self.path = path
        self.found: dict[str, list] = {}  # column -> [line, cell, count, bounds, dropped]

    def __bool__(self) -> bool:
        return bool(self.found)

    def add(self, column: str, line: int | str | None, cell: Any, bounds: tuple[float, float], count: int = 1,
            dropped: bool = False) -> None:
        """Count ``count`` bad cells of ``column``, the first at ``line``."""
        cell = cell.cell if isinstance(cell, Bad) else cell
        entry = self.found.get(column)
        if entry is None:
            self.found[column] = [line, cell, count, bounds, dropped]
        else:
            entry[2] += count

    def number(self, cell: Any, column: str, line: int | str | None, bounds: tuple[float, float] = ANY) -> float | None:
        """The cell's number within ``bounds``, or None (missing, text, or bad: then counted)."""
        value = checked_float(cell, bounds)
        if isinstance(value, Bad):
            self.add(column, line, cell, bounds)
            return None
        return value

    def where(self, line: int | str | None) -> str:
        """``file:line`` (a DB names its row: ``file (TASK globalTaskId 7)``)."""
        if isinstance(line, int):
            return f"{self.path}:{line}"
        return f"{self.path} ({line})" if line else str(self.path)

    def summary(self) -> str:
        """The first bad cell in words, for an error when nothing is left to judge (its place: ``first_line``)."""
        column, (line, cell, count, (low, high), _) = next(iter(self.found.items()))
        at = f" ({line})" if isinstance(line, str) else ""
        return (f"{column} {shown(cell)}{at} is not a finite number from {_bound(low)} to {_bound(high)} ({count} such "
                f"row(s))")

    def first_line(self) -> int | None:
        """The line of the first bad cell (None where rows have no line: a DB)."""
        line = next(iter(self.found.values()))[0]
        return line if isinstance(line, int) else None

    def notes(self) -> list[Message]:
        """One note per column with bad cells (file:line, column, first value, range, count)."""
        found = []
        for column, (line, cell, count, (low, high), dropped) in self.found.items():
            where = self.where(line)
            if dropped:
                found.append(M_("{where}: {column} {value} is not a finite number from {low} to {high}; {count} "
                                "row(s) with such a value left out, the rest judged", where=where, column=column,
                                value=shown(cell), low=_bound(low), high=_bound(high), count=count))
            else:
                found.append(M_("{where}: {column} {value} is not a finite number from {low} to {high}; {count} "
                                "such value(s) in that column read as missing", where=where, column=column,
                                value=shown(cell), low=_bound(low), high=_bound(high), count=count))
        return found


def clean_text(value: str) -> str:
    """Strip blanks and the literal quotes of doubly quoted shapes; N/A and friends become ``""``."""
    text = value.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1].strip()
    return "" if text in MISSING_VALUES else text


def clean_optional(value: str) -> str | None:
    """Like ``clean_text`` but None for a missing value (e.g. OP State ``N/A``)."""
    text = clean_text(value)
    return text or None


# ----------------------------------------------------------------------------------------------
# Raw labels -> vocabulary
# ----------------------------------------------------------------------------------------------

#: Raw unit labels (op_summary Task Type, kernel_details Accelerator Core, msOpProf Op Type,
#: timeline/task_time kernel types) -> vocabulary.UNITS (FORMATS.md §3.3).
UNIT_OF_TASK_TYPE: dict[str, str] = {
    "AI_CORE": "ai_core", "KERNEL_AICORE": "ai_core", "CUBE": "ai_core",
    "AI_VECTOR_CORE": "ai_vector", "KERNEL_AIVEC": "ai_vector", "VECTOR": "ai_vector",
    "MIX_AIC": "mix_aic", "MIX": "mix_aic", "MIX_AIV": "mix_aiv",
    "AI_CPU": "ai_cpu", "KERNEL_AICPU": "ai_cpu", "AICPU": "ai_cpu",
    "HCCL": "communication", "COMMUNICATION": "communication", "HCCL_AI_CPU": "communication",
    "DSA_SQE": "dsa", "DSA": "dsa",
    "DVPP": "other", "SDMA": "other", "SDMA_SQE": "other", "FFTS_PLUS": "other", "FUSION": "other",
    "WRITE_BACK": "other", "PCIE_DMA_SQE": "other",
}


def unit_of(task_type: str, family: str | None, name: str = "") -> str:
    """The vocabulary unit of one kernel, from its task type (the only column that says where it ran).

    The name is used only for communication: HCCL work labelled AI_CPU / SDMA, or a level0 row whose
    Accelerator Core is N/A, is still communication when its family or ``hcom_`` name says so.
    """
    communication = family in COMMUNICATION_FAMILIES or name.startswith("hcom_")
    label = task_type.strip().upper()
    if not label or label in ("N/A", "NA"):
        return "communication" if communication else "unknown"
    unit = UNIT_OF_TASK_TYPE.get(label, "other")
    return "communication" if communication and unit in ("ai_cpu", "other") else unit


_TRAILING_IDS = re.compile(r"(?:_+\d+)+_*$")
_TRAILING_DIGITS = re.compile(r"(?<![Vv\d])\d+$")


def op_type_from_name(name: str) -> str:
    """Guess an op type from a kernel name when Type is not recorded (level0, timelines).

    ``aclnnMm_MatMulCommon_MatMulV2`` -> MatMulV2, ``trans_TransData_17`` -> TransData,
    ``Conv2DBackpropInput5`` -> Conv2DBackpropInput, ``hcom_allReduce__868_3_1`` -> hcom_allReduce.
    """
    text = _TRAILING_IDS.sub("", name.strip()).rstrip("_")
    if text.startswith("hcom_"):
        return text
    if text.startswith("trans_"):
        text = text[len("trans_"):]
    text = text.rsplit("/", 1)[0].rsplit("_", 1)[-1]
    return _TRAILING_DIGITS.sub("", text) or name


#: Byte factor of a header's unit suffix (memory tables: torch_npu writes MB, system msprof KB).
UNITS = {"b": 1.0, "kb": 1024.0, "mb": 1024.0 * 1024.0, "gb": 1024.0 ** 3}
_UNIT = re.compile(r"\((b|kb|mb|gb)\)$")


def plain_header(name: str) -> tuple[str, float]:
    """(normalised name without its unit, byte factor) of a header cell: ``Total Reserved(MB)`` -> (``total
    reserved``, 1 MiB); time suffixes are dropped with factor 1."""
    cell = normalise_header(name)
    unit = _UNIT.search(cell)
    if unit:
        return cell[:unit.start()].strip(), UNITS[unit.group(1)]
    return re.sub(r"\((us|ns|ms)\)$", "", cell).strip(), 1.0
