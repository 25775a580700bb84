"""Measured work of one ``msprof op`` launch: ArithmeticUtilization ``*_fops`` and Memory.csv data volumes.

msOpProf counts what the kernel really did, so the roofline prefers these figures to a formula over
the shapes (FORMATS.md §1.5): ``aic_cube_fops`` / ``aiv_vec_fops`` are operation counts per (block,
sub-core) row (work, not a rate); ``read_main_memory_datas(KB)`` / ``write_main_memory_datas(KB)``
are the main-memory (GM) volumes per row. A launch's work is the sum over its rows. The files pair
with ``OpBasicInfo<suffix>.csv`` by the same suffix in the same folder (timestamped names in
multi-operator runs). Missing files or columns -> None for that figure (never 0).
"""

from __future__ import annotations

from pathlib import Path

from opprof_advisor.core.sidefile import read_text

_MISSING = frozenset({"", "N/A", "NA", "nan", "NaN"})
_FOPS = ("aic_cube_fops", "aiv_vec_fops", "aic_cube_fp16_ratio", "aic_cube_int8_ratio")
_VOLUMES = ("read_main_memory_datas(KB)", "write_main_memory_datas(KB)")
#: The largest count or volume a cell may hold.
MAX_VALUE = 1e15


def launch_work(basic_info: str | Path) -> dict[str, float | None]:
    """``{"cube_fops", "vector_fops", "cube_dtype", "read_bytes", "write_bytes"}`` of the launch of ``basic_info``.

    ``cube_dtype`` is "int8" when the cube rows spent more cycles on INT8 than on FP16
    (``aic_cube_int8_ratio`` vs ``aic_cube_fp16_ratio``), else "fp16" (BF16 runs at the FP16 rate).
    """
    basic = Path(basic_info)
    suffix = basic.name[len("OpBasicInfo"):] if basic.name.startswith("OpBasicInfo") else ".csv"
    arith = _column_sums(_companion(basic.parent, "ArithmeticUtilization", suffix), _FOPS)
    memory = _column_sums(_companion(basic.parent, "Memory", suffix), _VOLUMES)
    kb = 1024.0
    read, write = memory.get(_VOLUMES[0]), memory.get(_VOLUMES[1])
    return {
        "cube_fops": arith.get("aic_cube_fops"),
        "vector_fops": arith.get("aiv_vec_fops"),
        "cube_dtype": "int8" if arith.get("aic_cube_int8_ratio", 0.0) > arith.get("aic_cube_fp16_ratio", 0.0) else "fp16",
        "read_bytes": read * kb if read is not None else None,
        "write_bytes": write * kb if write is not None else None,
    }


def _companion(folder: Path, metric: str, suffix: str) -> Path | None:
    exact = folder / f"{metric}{suffix}"
    if exact.is_file():
        return exact
    # "Memory" must not pick MemoryL0 / MemoryUB: the next character is "_" or "." only.
    found = sorted(p for p in folder.glob(f"{metric}*.csv") if p.name[len(metric)] in "._")
    return found[0] if found else None


def _column_sums(path: Path | None, columns: tuple[str, ...]) -> dict[str, float]:
    """Sum of each named column over the rows (cells N/A or NA skipped); a column absent -> no key."""
    if path is None:
        return {}
    try:
        lines = read_text(path, errors="replace").splitlines()
    except (OSError, ValueError):  # SideFileError: a FIFO, a device, an oversized file
        return {}
    if not lines:
        return {}
    header = [c.strip() for c in lines[0].split(",")]
    where = {name: header.index(name) for name in columns if name in header}
    sums: dict[str, float] = {}
    for line in lines[1:]:
        cells = line.split(",")
        for name, col in where.items():
            value = _number(cells[col] if col < len(cells) else "")
            if value is not None:
                sums[name] = sums.get(name, 0.0) + value
    return sums


def _number(text: str) -> float | None:
    """A non-negative count or volume; None when missing, text, not finite or beyond 1e15 (an operation count or KB
    volume of one sub-core that large is a corrupt cell: a few of them would overflow the sums)."""
    text = text.strip()
    if text in _MISSING:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value <= MAX_VALUE else None  # NaN compares false
