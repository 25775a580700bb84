"""Profile readers: one small reader per producer format, found by ``detect_format``, parsed by ``read_raw``.

Adding a format = one new module with a class following ``base.Reader`` + one line in READERS.
Readers are imported lazily (the list holds ``module:Class`` strings) so a CLI start-up does not
pay for formats it never sees.
"""

from __future__ import annotations

import importlib
import re
import os
from pathlib import Path
from typing import TYPE_CHECKING

from opprof_advisor.core.errors import ProfileError, UnknownFormat
from opprof_advisor.readers.collectives import count_collectives_once
from opprof_advisor.readers.layouts import is_multi_rank
from opprof_advisor.readers.memory_files import memory_sources
from opprof_advisor.readers.serving import serving_files, span_sources
from opprof_advisor.core.sidefile import check_durations

if TYPE_CHECKING:
    from opprof_advisor.readers.base import Progress, RawProfile, Reader

#: Tried in order; the first reader whose ``detect(path)`` is true reads the path. Specific layouts
#: first, the single-CSV fallback and the multi-rank parent last. One line per format.
READERS: tuple[str, ...] = (
    "opprof_advisor.readers.msopprof_device:MsopprofDeviceReader",
    "opprof_advisor.readers.msopprof_simulator:MsopprofSimulatorReader",
    "opprof_advisor.readers.torch_npu_text:TorchNpuTextReader",
    "opprof_advisor.readers.msprof_db:MsprofDbReader",  # after the text reader: a folder with both reads the CSV
    "opprof_advisor.readers.timeline_json:TimelineReader",  # only when no kernel CSV / op_summary / DB is beside it
    "opprof_advisor.readers.msprof_text:MsprofTextReader",
    "opprof_advisor.readers.multirank:MultiRankReader",
    "opprof_advisor.readers.cluster_summary:ClusterSummaryReader",  # msprof-analyze cluster_analysis_output/
    "opprof_advisor.readers.mindspore1:MindSpore1Reader",  # MindSpore 1.x per-op summaries, by header
    "opprof_advisor.readers.light:LightExportReader",  # op_statistic / step_trace_time alone: last, by header
)

#: The test of each reader's ``detect``, by file and folder names and headers (readers/layouts.py): a reader
#: module is imported only when the path is of its format, so detecting a torch_npu folder does not load
#: the msOpProf, DB or timeline parsers. A reader not listed here is loaded to ask its ``detect``.
LAYOUT_TESTS: dict[str, str] = {
    "opprof_advisor.readers.msopprof_device:MsopprofDeviceReader": "is_msopprof_device",
    "opprof_advisor.readers.msopprof_simulator:MsopprofSimulatorReader": "is_msopprof_simulator",
    "opprof_advisor.readers.torch_npu_text:TorchNpuTextReader": "is_torch_npu_text",
    "opprof_advisor.readers.msprof_db:MsprofDbReader": "is_msprof_db",
    "opprof_advisor.readers.timeline_json:TimelineReader": "is_timeline",
    "opprof_advisor.readers.multirank:MultiRankReader": "is_multi_rank",
    "opprof_advisor.readers.cluster_summary:ClusterSummaryReader": "is_cluster_summary",
    "opprof_advisor.readers.light:LightExportReader": "is_light_export",
}

#: How many single-subfolder levels detection descends through (``out/`` -> ``run/`` -> ``x_ascend_pt/``).
DESCEND_DEPTH = 3

_loaded: dict[str, Reader] = {}


def _load(entry: str) -> Reader:
    if entry not in _loaded:
        module_name, _, class_name = entry.partition(":")
        _loaded[entry] = getattr(importlib.import_module(module_name), class_name)()
    return _loaded[entry]


def readers() -> list[Reader]:
    """The registered readers, in detection order."""
    return [_load(entry) for entry in READERS]


def _matches(entry: str, path: Path) -> bool:
    """True when the reader of ``entry`` reads ``path`` (without importing it where LAYOUT_TESTS has its test)."""
    test = LAYOUT_TESTS.get(entry)
    if test is not None:
        from opprof_advisor.readers import layouts

        return getattr(layouts, test)(path)
    return _load(entry).detect(path)


def check_path(path: Path) -> None:
    """Raise ProfileError when ``path`` does not exist or is a symlink loop."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise ProfileError("symlink loop (too many levels of symbolic links)", path=path,
                               hint="point advisor at the real profile folder") from None
        raise ProfileError("no such file or directory", path=path, hint="check the path") from None


def detect_format(path: str | Path) -> Reader:
    """Return the reader for ``path`` (a folder, a CSV/DB file); raise UnknownFormat when none fits."""
    return _detect(Path(path))[0]


def _detect(path: Path, refuse: bool = True) -> tuple[Reader, Path]:
    check_path(path)
    scanned = _refuse_separate_profiles(path) if refuse else None
    current = path
    for _ in range(DESCEND_DEPTH + 1):
        for entry in READERS:
            if _matches(entry, current):
                return _load(entry), current
        child = _single_child_dir(current)
        if child is None:
            break
        current = child
    raise _unknown(path, name_profiles=refuse, scanned=scanned)


#: Child folders looked at to name the profiles of a folder that is none itself (detection must stay cheap).
MAX_CHILDREN = 64


#: Child folders that are parts of one profile, never a profile beside it: the producers' own sub-folders and
#: msprof op runs (the msOpProf reader names several). The ranks of a job are the multi-rank reader's.
_PARTS_OF_ONE = re.compile(r"^(?:ASCEND_PROFILER_OUTPUT|FRAMEWORK|PROF_.*|OPPROF_.*|mindstudio_profiler_\w+|device_?\d*|"
                           r"host|sqlite|timeline|summary|dump|simulator|logs?|cluster_analysis_output|\d+)$")
#: Its reader tells its own runs apart (OPPROF_* folders) and names several: launches of one op are not profiles.
_READS_ITS_RUNS = "msopprof-device"


def _refuse_separate_profiles(path: Path) -> list[tuple[Path, str]] | None:
    """A folder holding two or more separate profiles (runs of different producers, a before and an after ...)
    is not one profile: refuse, naming them, rather than read the first that a reader's walk reaches. A folder
    that is itself part of a profile by its name (an OPPROF_* run, a PROF_* tree ...) holds parts, not profiles."""
    if not path.is_dir() or _PARTS_OF_ONE.match(path.name) or is_multi_rank(path):
        return None
    found = _profiles_below(path, stop_at=2)
    if len(found) >= 2 and any(what != _READS_ITS_RUNS for _, what in found):
        raise _several(path, _profiles_below(path))
    if found:  # the folder's own msprof / msprof op runs beside another profile: two profiles, not one
        runs = _own_runs(path)
        if runs:
            raise _several(path, sorted(_profiles_below(path) + runs[:1]))
    return found if len(found) < 2 else None  # (fewer than two: every child was looked at, for _unknown)


_OWN_RUN = re.compile(r"^(?:PROF_|OPPROF_)")


def _own_runs(path: Path) -> list[tuple[Path, str]]:
    """The PROF_* / OPPROF_* runs directly in ``path``, each with its format (they are read as the folder's own)."""
    try:
        runs = sorted(p for p in path.iterdir() if _OWN_RUN.match(p.name) and p.is_dir())
    except OSError:
        return []
    out = []
    for run in runs[:MAX_CHILDREN]:
        try:
            out.append((run, _detect(run, refuse=False)[0].name))
        except (ProfileError, OSError):
            continue
    return out


def _several(path: Path, found: list[tuple[Path, str]]) -> UnknownFormat:
    named = ", ".join(f"{child.name} ({what})" for child, what in found[:8])
    more = f" and {len(found) - 8} more" if len(found) > 8 else ""
    if len(found) == 1:
        return UnknownFormat(f"no profile here, one a folder further down: {named}", path=path,
                             hint=f"give that folder: advisor suggest {found[0][0]}")
    return UnknownFormat(f"{len(found)} separate profiles in this folder, not one: {named}{more}", path=path,
                         hint=f"give one of them (advisor suggest {found[0][0]}), analyse each in turn "
                              "with --each (which lists them with their device time and top op), or compare two with "
                              "advisor compare BEFORE AFTER")


#: Child names that look like profiles are looked at first (a profile among many other folders is still found).
_LOOKS_LIKE_PROFILE = re.compile(r"_ascend_(?:pt|ms)$|^PROF_|^OPPROF_|prof|trace|msprof|output", re.I)


def separate_profiles(path: str | Path) -> list[tuple[Path, str]]:
    """The separate profiles a folder holds (child folders that are profiles themselves), each with its format;
    [] for a path that is one profile or none (``advisor profile / suggest --each``)."""
    path = Path(path)
    if not path.is_dir() or _PARTS_OF_ONE.match(path.name) or is_multi_rank(path):
        return []
    found = _profiles_below(path)
    if found:  # the folder's own PROF_* / OPPROF_* run beside them is one more
        found = sorted(found + _own_runs(path)[:1])
    return found if len(found) >= 2 and any(what != _READS_ITS_RUNS for _, what in found) else []


def _profiles_below(path: Path, stop_at: int | None = None) -> list[tuple[Path, str]]:
    """The child folders of ``path`` that are profiles themselves (not parts of one), each with its format; with
    ``stop_at``, no more than that many (enough to know there are several)."""
    try:
        children = sorted((p for p in path.iterdir() if not p.name.startswith(".") and not _PARTS_OF_ONE.match(p.name)
                           and p.is_dir()), key=lambda p: (not _LOOKS_LIKE_PROFILE.search(p.name), p.name))
    except OSError:
        return []
    found = []
    for child in children[:MAX_CHILDREN]:
        try:
            found.append((child, _detect(child, refuse=False)[0].name))  # one level down: detection stays cheap
        except (ProfileError, OSError):  # (an unreadable folder beside them is not one of them)
            continue
        if stop_at is not None and len(found) >= stop_at:
            break
    return sorted(found)


def _single_child_dir(path: Path) -> Path | None:
    if not path.is_dir():
        return None
    try:
        children = [p for p in path.iterdir() if not p.name.startswith(".")]
    except OSError:
        return None
    # files beside the one folder (a README, SOURCE.txt) do not stop the descent
    dirs = [p for p in children if p.is_dir() and not p.is_symlink()]
    return dirs[0] if len(dirs) == 1 else None


def _unknown(path: Path, name_profiles: bool = True, scanned: list[tuple[Path, str]] | None = None) -> UnknownFormat:
    hint = ("expected a torch_npu *_ascend_pt folder, a PROF_* or OPPROF_* folder, an op_summary / "
            "kernel_details CSV, an msprof / ascend_pytorch_profiler DB, or a .zip / .tar.gz of one")
    if path.is_dir():
        try:
            entries = sum(1 for _ in path.iterdir())
        except OSError as exc:
            raise ProfileError(f"cannot list folder: {exc.strerror}", path=path) from None
        if entries == 0:
            return UnknownFormat("empty folder", path=path, hint=hint)
        found = (scanned if scanned is not None else _profiles_below(path)) if name_profiles else []
        if found:
            return _several(path, found)
        if serving_files(path) or span_sources(path):
            return UnknownFormat("an ms_service_profiler (serving) output, not a kernel profile", path=path,
                                 hint=f"analyse it with: advisor serving {path}")
        if memory_sources(path):
            return UnknownFormat("memory tables without a kernel table", path=path,
                                 hint=f"analyse them with: advisor memory {path}")
        return UnknownFormat(f"no profiler output found among {entries} entries", path=path, hint=hint)
    return UnknownFormat("not a profiler output file", path=path, hint=hint)


def read_raw(path: str | Path, progress: Progress | None = None) -> RawProfile:
    """Detect the format of ``path`` and parse it, without normalising (used per rank).

    A folder of ranks reads as its rank folders (``extra["rank_dirs"]``), for ``opprof_advisor.cluster``.
    """
    reader, where = _detect(Path(path))
    raw = reader.read(where, progress)
    raw.kernels = count_collectives_once(raw.kernels, raw.notes)
    table = raw.kernels  # whatever the reader, no inf device time
    if len(table):
        check_durations(table.array("duration_us").to_numpy(zero_copy_only=False), lambda: table.name, raw.path)
    return raw
