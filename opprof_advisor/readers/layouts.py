"""Where the producers put their files: the walks format detection does, by file and folder names (a header at most).

Detection tries the readers in order (readers/__init__.py) until one recognises the path. Their tests
live here, on the standard library, so that telling a torch_npu folder from an OPPROF_* one, a PROF_*
tree or a folder of ranks does not import the msOpProf, SQLite and timeline parsers: only the module
of the format that matches is loaded. The readers find their files with the same functions, so
detection and reading cannot disagree. An op_summary CSV is also found by its header (a kernel name and
a duration column, through the column map the text readers share).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator

from opprof_advisor.readers import columns

# --- msprof op (msOpProf) device output (FORMATS.md §1.1) -----------------------------------------

_BASIC = re.compile(r"^OpBasicInfo(?:_\d+)?\.csv$")
#: Levels searched below the path: OPPROF_*/device<N>/<OpName>/<n>/ is three below the root,
#: and the user may point at the folder holding OPPROF_*.
MAX_DEPTH = 5
#: Directories never holding launch CSVs (raw dumps, simulator output, other producers' folders).
_SKIP_DIRS = frozenset({"dump", "simulator", "ASCEND_PROFILER_OUTPUT", "FRAMEWORK", "mindstudio_profiler_output",
                        "mindstudio_profiler_log", "logs", "host", "sqlite", "timeline", "summary"})
#: Folders looked into at most while searching (detection must stay cheap on big trees).
MAX_DIRS = 400
_DIGITS = re.compile(r"(\d+)")


def is_basic_info(name: str) -> bool:
    """True for the name of an msOpProf OpBasicInfo CSV (``OpBasicInfo.csv``, ``OpBasicInfo_<stamp>.csv``)."""
    return _BASIC.match(name) is not None


def is_msopprof_device(path: Path) -> bool:
    """True for an OpBasicInfo CSV, or a folder with one within a few levels."""
    if path.is_file():
        return is_basic_info(path.name)
    return next(find_launch_dirs(path), None) is not None


def find_launch_dirs(root: Path, max_depth: int = MAX_DEPTH) -> Iterator[Path]:
    """Yield folders holding an OpBasicInfo*.csv, in natural order (``<OpName>/2`` before ``/10``)."""
    budget = [MAX_DIRS]
    yield from _walk(root, max_depth, budget)


def _walk(folder: Path, depth: int, budget: list[int]) -> Iterator[Path]:
    budget[0] -= 1
    if budget[0] < 0:
        return
    try:
        entries = sorted(os.scandir(folder), key=lambda e: _natural_key(e.name))
    except OSError:
        return
    if any(_BASIC.match(e.name) and e.is_file() for e in entries):
        yield folder
    if depth <= 0:
        return
    for entry in entries:
        # never follow symlinked folders: a symlink loop must not hang detection
        if entry.name not in _SKIP_DIRS and not entry.name.startswith("PROF_") and \
                entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), depth - 1, budget)


def _natural_key(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(name)]


# --- msprof op simulator output (FORMATS.md §2.1) -------------------------------------------------

CORE_DIR = re.compile(r"^core(\d+)\.(cubecore|veccore)(\d+)$")


def is_msopprof_simulator(path: Path) -> bool:
    """True for a folder holding ``simulator/core*.*`` sub-core folders (or such a folder itself)."""
    return path.is_dir() and find_simulator_dir(path) is not None


def find_simulator_dir(path: Path) -> Path | None:
    """The ``simulator`` folder at, inside, or one OPPROF_* level below ``path``."""
    for candidate in (path, path / "simulator", *sorted(path.glob("OPPROF_*/simulator"))):
        if candidate.is_dir() and core_dirs(candidate):
            return candidate
    return None


def core_dirs(sim: Path) -> list[Path]:
    """The sub-core folders (``core0.cubecore0`` ...) of a simulator folder, in core order."""
    try:
        dirs = [p for p in sim.iterdir() if p.is_dir() and CORE_DIR.match(p.name)]
    except OSError:
        return []
    return sorted(dirs, key=_core_key)


def _core_key(p: Path) -> tuple[int, str, int]:
    m = CORE_DIR.match(p.name)
    return (int(m.group(1)), m.group(2), int(m.group(3))) if m else (0, p.name, 0)


# --- torch_npu profiler text export (FORMATS.md §4) -----------------------------------------------

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
KERNEL_FILE = "kernel_details.csv"


def is_torch_npu_text(path: Path) -> bool:
    """True for a ``*_ascend_pt`` folder, its ASCEND_PROFILER_OUTPUT folder or a kernel_details CSV."""
    return output_dir(path) is not None


def output_dir(path: Path) -> Path | None:
    """The ASCEND_PROFILER_OUTPUT folder holding kernel_details.csv for ``path``, if any."""
    if path.is_file():
        return path.parent if path.name.startswith("kernel_details") and path.suffix == ".csv" \
            and csv_kind(path) is None else None
    for candidate in (path / OUTPUT_DIR, path):
        if (candidate / KERNEL_FILE).is_file() and csv_kind(candidate / KERNEL_FILE) is None:
            return candidate  # (an op_statistic table saved under that name is a light export's)
    return None


# --- msprof / torch_npu SQLite exports (FORMATS.md §3.6) ------------------------------------------

DB_NAME = re.compile(r"^(?:msprof_\d+|ascend_pytorch_profiler(?:_\d+)?|ascend_mindspore_profiler(?:_\d+)?)\.db$")
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_msprof_db(path: Path) -> bool:
    """True for a profiler DB file, or a folder holding one where msprof / torch_npu put it."""
    if path.is_file():
        return bool(DB_NAME.match(path.name)) or (path.suffix == ".db" and is_sqlite(path))
    return bool(find_db_files(path))


def find_db_files(folder: Path) -> list[Path]:
    """Profiler DBs at the places the tools write them (not ``analysis.db``, which holds no kernels)."""
    # not */ASCEND_PROFILER_OUTPUT/*.db: a parent of several ranks belongs to the multi-rank reader
    patterns = ("*.db", "ASCEND_PROFILER_OUTPUT/*.db", "PROF_*/*.db")
    found: list[Path] = []
    for pattern in patterns:
        try:
            found += [p for p in sorted(folder.glob(pattern)) if DB_NAME.match(p.name) and p.is_file()]
        except OSError:
            continue
        if found:
            return found
    return found


def is_sqlite(path: Path) -> bool:
    """True when ``path`` starts with the SQLite header (whatever its name)."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


# --- timelines: torch_npu trace_view.json, msprof msprof_*.json (FORMATS.md §3.5, §4.1) ------------

TORCH_TIMELINE = "torch-npu-timeline"
MSPROF_TIMELINE = "msprof-timeline"
TRACE_FILE = "trace_view.json"
#: msprof timeline file names (CANN >= 8.0 text export and its slices; older device_<N>/timeline/).
MSPROF_JSON = re.compile(r"^msprof(?:_slice_\d+)?(?:_\d+)+\.json$")


def is_timeline(path: Path) -> bool:
    """True for a timeline with no kernel table beside it."""
    return timeline_files(path) is not None


def timeline_files(path: Path) -> tuple[str, list[Path]] | None:
    """(format id, files) of the timeline under ``path`` when no kernel table sits beside it."""
    if path.is_file():
        if path.name == TRACE_FILE:
            return TORCH_TIMELINE, [path]
        if MSPROF_JSON.match(path.name):
            return MSPROF_TIMELINE, [path]
        return None
    if not path.is_dir() or output_dir(path) is not None:
        return None
    for candidate in (path / OUTPUT_DIR / TRACE_FILE, path / TRACE_FILE):
        if candidate.is_file():
            return TORCH_TIMELINE, [candidate]
    if summary_files(path):
        return None
    files = _msprof_json_files(path)
    return (MSPROF_TIMELINE, files) if files else None


def _msprof_json_files(path: Path) -> list[Path]:
    roots = [path] + sorted(p for p in subdirs(path) if p.name.startswith("PROF_"))
    folders = [path]
    for root in roots:
        folders.append(root / "mindstudio_profiler_output")
        folders.extend(sorted(d / "timeline" for d in subdirs(root) if d.name.startswith("device_")))
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            found.extend(sorted(p for p in folder.iterdir() if MSPROF_JSON.match(p.name) and p.is_file()))
    return list(dict.fromkeys(found))


def subdirs(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []


# --- a parent folder of several ranks ---------------------------------------------------------------

RANK_DIR = re.compile(r"_ascend_(?:pt|ms)$")


def is_multi_rank(path: Path) -> bool:
    """True for a folder of two or more ranks, or of one rank under two or more names (links): read once."""
    return len(rank_dirs(path)) >= 2 or (len(rank_dirs(path)) == 1 and len(rank_names(path)) >= 2)


def rank_dirs(path: Path) -> list[Path]:
    """The ``*_ascend_pt`` children of ``path`` (sorted by name), each real folder once.

    A symlinked child is one more name for a folder: a ``latest_ascend_pt`` link to a rank beside it
    would count that rank twice, and a link to the parent (or above) would read the parent as its
    own rank, again and again. Real folders win over links to them; links to the parent are not ranks.
    """
    children = rank_names(path)
    parent = os.path.realpath(path)
    chosen: dict[str, Path] = {}
    for child in sorted(children, key=lambda p: (p.is_symlink(), p.name)):
        real = os.path.realpath(child)
        if real == parent or parent.startswith(real.rstrip(os.sep) + os.sep):
            continue
        chosen.setdefault(real, child)
    return sorted(chosen.values())


def rank_names(path: Path) -> list[Path]:
    """Every ``*_ascend_pt`` / ``*_ascend_ms`` child folder of ``path`` (links included)."""
    if not path.is_dir():
        return []
    try:
        return [p for p in path.iterdir() if p.is_dir() and RANK_DIR.search(p.name)]
    except OSError:
        return []


# --- msprof-analyze cluster_analysis_output/ ------------------------------------------------------

CLUSTER_DIR = "cluster_analysis_output"
STEP_FILE = "cluster_step_trace_time.csv"
COMM_FILE = "cluster_communication.json"
CLUSTER_FILES = (STEP_FILE, COMM_FILE, "cluster_analysis.db")


def is_cluster_summary(path: Path) -> bool:
    """True for a cluster_analysis_output folder, or a folder holding one."""
    return summary_dir(path) is not None


def summary_dir(path: Path) -> Path | None:
    """The folder holding the cluster summary files for ``path`` (it, or its cluster_analysis_output)."""
    for candidate in (path, path / CLUSTER_DIR):
        if candidate.is_dir() and any((candidate / name).is_file() for name in CLUSTER_FILES):
            return candidate
    return None


# --- msprof text export: op_summary CSVs, found by name or by a kernel-table header (FORMATS.md §3) ----

_SUMMARY = re.compile(r"^op_summary(?:_slice_(\d+))?(?:_[\d_]+)?\.csv$")
PROF_DIR = re.compile(r"^PROF_\d+_\d+_\w+$")


def summary_files(path: Path) -> list[Path]:
    """op_summary CSVs of a PROF_* tree, a folder of PROF_* trees or a mindstudio_profiler_output folder.

    Found by name first; where no file has an op_summary name, any CSV whose header is a kernel table
    (a kernel name and a duration column) is taken, whatever it is called (``a003-op_summary.csv``).
    """
    if not path.is_dir():
        return []
    folders = summary_folders(path)
    found: list[Path] = []
    for folder in folders:
        found.extend(p for p in _files(folder) if _SUMMARY.match(p.name) and csv_kind(p) is None)
    if not found:
        for folder in folders:
            found.extend(p for p in _files(folder) if p.suffix.lower() == ".csv" and _is_kernel_table(p))
    return sorted(found, key=_slice_order)


def _files(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return []


def _header(path: Path) -> list[str]:
    try:
        with path.open("rb") as handle:
            first = handle.read(columns.SNIFF_BYTES).split(b"\n", 1)[0]
    except OSError:
        return []
    if b"\x00" in first:
        return []
    return first.decode("utf-8", "replace").strip().split(",")


#: Columns only msOpProf's OpBasicInfo has: such a file is one launch's basic info, not a kernel table.
_OPBASICINFO_ONLY = frozenset({"current freq", "rated freq"})
#: The columns of a tensor memory table (operator_memory.csv) that no kernel table has.
_TENSOR_MEMORY = frozenset({"allocation time", "release time"})


def header_names(path: Path) -> set[str]:
    """The normalised cells of a CSV's header line (empty when unreadable or binary)."""
    return {columns.normalise_header(cell) for cell in _header(path)}


def _is_kernel_table(path: Path, header: list[str] | None = None) -> bool:
    header = _header(path) if header is None else header
    if _OPBASICINFO_ONLY & {columns.normalise_header(cell) for cell in header}:
        return False
    if _TENSOR_MEMORY <= {columns.plain_header(cell)[0] for cell in header}:
        return False  # operator_memory.csv: a name and a duration, but of tensors held, not kernels run
    mapping = columns.map_header(header)
    return all(field in mapping for field in columns.REQUIRED_FIELDS)


def summary_folders(path: Path) -> list[Path]:
    folders = [path]
    roots = [path] + sorted(p for p in subdirs(path) if PROF_DIR.match(p.name))
    for root in roots:
        folders.append(root / "mindstudio_profiler_output")
        folders.extend(sorted(d / "summary" for d in subdirs(root) if d.name.startswith("device_")))
    return [f for f in folders if f.is_dir()]


def _slice_order(path: Path) -> tuple[str, int, str]:
    match = _SUMMARY.match(path.name)
    return (str(path.parent), int(match.group(1) or 0) if match else 0, path.name)


def is_kernel_csv(path: Path) -> bool:
    """True when ``path`` is a CSV whose header has a kernel name and a duration column (or an op_summary name,
    unless its header says it is another table)."""
    if not path.is_file() or path.suffix.lower() != ".csv":
        return False
    return _is_kernel_table(path) or (path.name.startswith("op_summary") and csv_kind(path) is None)


# --- light exports: summary tables without the per-launch one (FORMATS.md §12) -------------------------

#: Header fingerprints (FORMATS.md §12): a file is what its header says, whatever its name.
FINGERPRINTS: dict[str, frozenset[str]] = {
    "op_statistic": frozenset({"op type", "core type", "count", "total time(us)"}),
    "step_trace": frozenset({"computing", "communication(not overlapped)", "free"}),
}
#: Where a light export keeps its tables: the folder itself, a torch_npu output folder, an msprof one.
LIGHT_FOLDERS = (OUTPUT_DIR, "mindstudio_profiler_output")


def csv_kind(path: Path, header: list[str] | None = None) -> str | None:
    """"op_statistic" or "step_trace" when the CSV's header is that table's, else None."""
    names = {columns.normalise_header(cell) for cell in (_header(path) if header is None else header)}
    return next((kind for kind, needed in FINGERPRINTS.items() if needed <= names), None)


def light_files(path: Path) -> dict[str, Path]:
    """The op_statistic and step_trace_time tables of a light export at ``path`` (a CSV file, or a folder holding
    them directly or in its ASCEND_PROFILER_OUTPUT / mindstudio_profiler_output), found by their headers."""
    if path.is_file():
        kind = csv_kind(path) if path.suffix.lower() == ".csv" else None
        return {kind: path} if kind else {}
    found: dict[str, Path] = {}
    for folder in [path, *(path / name for name in LIGHT_FOLDERS)]:
        for file in sorted(_files(folder)) if folder.is_dir() else []:
            if file.suffix.lower() == ".csv":
                header = _header(file)  # (read once for both tests)
                kind = None if _is_kernel_table(file, header) else csv_kind(file, header)
                if kind:
                    found.setdefault(kind, file)
    return found


def is_light_export(path: Path) -> bool:
    """True for an op_statistic table (any name), or a folder with op_statistic / step_trace_time tables and no
    per-launch table (readers of fuller formats are tried first)."""
    return bool(light_files(path))
