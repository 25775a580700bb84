"""The one header alias table, and tolerant parsers for the values found in profiler CSVs.

Every reader maps header spellings through ``map_header`` and never indexes columns by position:
column order and membership drift with tool version, chip, ``--aic-metrics`` and profiler level
(FORMATS.md §5.1).
"""

from __future__ import annotations

import math
import re

from opprof_advisor.core.operators import COMMUNICATION_FAMILIES
from opprof_advisor.readers.base import PIPE_KEYS

#: Bytes inspected before parsing: NUL bytes there mean a binary (or sparse) file, never a CSV.
SNIFF_BYTES = 64 * 1024
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


def parse_float(value: str) -> float | None:
    """A number, or None for N/A / NA / empty; tolerates a trailing TAB and stray quotes."""
    text = value.strip().strip('"').strip()
    if text in MISSING_VALUES:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None  # inf / NaN: the CSV reader reports the cell


def parse_int(value: str) -> int | None:
    """An integer (``24``, ``24.0``), or None for missing, unparsable or non-finite values."""
    number = parse_float(value)
    return None if number is None else int(number)


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
