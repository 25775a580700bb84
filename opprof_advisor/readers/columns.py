"""The one header alias table, and tolerant parsers for the values found in profiler CSVs.

Every reader maps header spellings through ``map_header`` and never indexes columns by position:
column order and membership drift with tool version, chip, ``--aic-metrics`` and profiler level
(FORMATS.md §5.1).
"""

from __future__ import annotations

import re

from opprof_advisor.readers.base import PIPE_KEYS

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
    "step_id": ("Step Id", "Step ID"),
}

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
        return float(text)
    except ValueError:
        return None


def parse_int(value: str) -> int | None:
    """An integer (``24``, ``24.0``), or None for missing or unparsable values."""
    number = parse_float(value)
    if number is None or number != number:  # NaN
        return None
    return int(number)


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
