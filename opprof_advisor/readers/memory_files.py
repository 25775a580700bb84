"""Where a profile keeps its memory data (FORMATS.md §10), found by content without reading it: CSVs by their
header, a DB by its tables. Cheap, and free of pyarrow: the tables are read (readers.memory) only when found."""

from __future__ import annotations

from pathlib import Path

from opprof_advisor.core.sqlite_files import table_names
from opprof_advisor.readers.columns import plain_header
from opprof_advisor.readers.layouts import LIGHT_FOLDERS, _header

#: Header fingerprints (normalised names, unit suffixes dropped).
RECORD = frozenset({"component", "timestamp", "total allocated"})
TENSORS = frozenset({"name", "size", "allocation time"})
MODULES = frozenset({"component", "timestamp", "total reserved"})
NPU_MEM = frozenset({"event", "hbm", "timestamp"})
#: DB tables that hold memory data.
DB_TABLES = frozenset({"MEMORY_RECORD", "OP_MEMORY", "NPU_MEM", "NPU_MODULE_MEM", "NPU_OP_MEM"})


def csv_memory_kind(path: Path) -> str | None:
    """"records", "tensors", "npu" or "modules" when the CSV's header is that memory table's, else None."""
    names = {plain_header(cell)[0] for cell in _header(path)}
    if RECORD <= names:
        return "records"
    if TENSORS <= names:
        return "tensors"
    if NPU_MEM <= names:
        return "npu"
    if MODULES <= names:
        return "modules"
    return None


def _folders(path: Path) -> list[Path]:
    if path.is_file():
        return [path.parent]
    return [path] + [path / sub for sub in LIGHT_FOLDERS if (path / sub).is_dir()]


def db_has_memory(path: Path) -> bool:
    """True for a DB export with at least one memory table."""
    tables = table_names(path)
    return bool(tables & DB_TABLES) and "STRING_IDS" in tables


def memory_sources(path: str | Path) -> list[tuple[Path, str]]:
    """(file, kind) of the profile's memory data: a DB with memory tables ("db") first, then the memory CSVs (all
    files of a kind: msprof slices a large table), which fill what the DB lacks."""
    path = Path(path)
    if path.is_file() and path.suffix == ".db":
        return [(path, "db")] if db_has_memory(path) else []
    folders = _folders(path) if path.exists() else []
    found = [(db, "db") for db in (f for folder in folders for f in sorted(folder.glob("*.db"))) if db_has_memory(db)]
    found = found[:1]
    for file in (f for folder in folders for f in sorted(folder.glob("*.csv"))):
        kind = csv_memory_kind(file)
        if kind is not None:
            found.append((file, kind))
    return found


def add_memory(extra: dict, path: str | Path) -> None:
    """Read the profile's memory data into a RawProfile's ``extra["memory"]`` (a summary, see readers.memory)
    when it has some; pyarrow is imported only then."""
    sources = memory_sources(path)
    if sources:
        from opprof_advisor.readers import memory

        extra["memory"] = memory.memory_summary(memory.read_memory(sources))
