"""A parent folder of several ranks (``*_ascend_pt`` children, or several profiles): read in parallel.

Each rank is read by its own reader in a process pool (CSV parsing is CPU bound and the GIL would
serialise threads); the kernel tables are concatenated so op types and symptoms cover the whole
job, and every rank's device time is kept so the slowest rank can be named. A rank that cannot be
read is named with its error; the readable ranks are still reported.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from opprof_advisor.errors import AdvisorError, MalformedProfile
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile

RANK_DIR = re.compile(r"_ascend_(?:pt|ms)$")
#: Below this many bytes of kernel CSVs in total, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
#: Worker processes (the target machines have few cores; each worker holds one rank in memory).
MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))


def rank_dirs(path: Path) -> list[Path]:
    """The ``*_ascend_pt`` children of ``path`` (sorted by name)."""
    if not path.is_dir():
        return []
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and RANK_DIR.search(p.name))
    except OSError:
        return []


def _rank_name(path: Path) -> str:
    match = re.search(r"rank_?(\d+)", path.name)
    return f"rank{match.group(1)}" if match else path.name


def _read_rank(path: str) -> tuple[RawProfile | None, str | None]:
    from opprof_advisor.readers import read_raw

    try:
        return read_raw(path), None
    except AdvisorError as exc:
        # where and what, without the hint: it is repeated once per rank in the output
        return None, f"{exc.location()}: {exc.message}" if exc.location() else exc.message
    except Exception as exc:  # noqa: BLE001 - one broken rank must not hide the others
        return None, f"{path}: {exc.__class__.__name__}: {exc}"


def _kernel_bytes(ranks: list[Path]) -> int:
    total = 0
    for rank in ranks:
        for file in rank.glob("ASCEND_PROFILER_OUTPUT/*.csv"):
            try:
                total += file.stat().st_size
            except OSError:
                pass
    return total


class MultiRankReader:
    """Several ranks under one parent folder."""

    name = "multi-rank"

    def detect(self, path: Path) -> bool:
        return len(rank_dirs(path)) >= 2

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        ranks = rank_dirs(path)
        results = self._read_all(ranks, progress)
        table = KernelTable()
        summaries, notes, versions = [], [], {}
        readable = [(rank, raw) for rank, (raw, _) in zip(ranks, results) if raw is not None]
        for rank, (raw, error) in zip(ranks, results):
            if raw is None:
                summaries.append({"rank": _rank_name(rank), "path": str(rank), "device_time_us": None, "error": error})
                notes.append(f"rank {_rank_name(rank)} not read: {error}")
        if not readable:
            raise MalformedProfile(f"none of the {len(ranks)} ranks could be read ({notes[0]})", path=path)
        core_counts: dict[str, int] = {}
        for rank, raw in readable:
            summaries.append({"rank": _rank_name(rank), "path": str(rank),
                              "device_time_us": round(sum(raw.kernels.duration_us), 3), "error": None})
            table.extend(raw.kernels)
            notes.extend(raw.notes)
            for key, value in raw.versions.items():
                if key != "rank_id":
                    versions.setdefault(key, value)
            core_counts = core_counts or raw.core_counts
        summaries.sort(key=lambda s: s["rank"])
        merged = RawProfile(path=str(path), format=self.name, kernels=table, versions=versions,
                            core_counts=core_counts, notes=notes, chip=readable[0][1].chip,
                            freq_mhz=next((raw.freq_mhz for _, raw in readable if raw.freq_mhz), None))
        merged.versions["ranks"] = str(len(ranks))
        merged.extra["ranks"] = summaries
        raws = [raw for _, raw in readable]
        merged.extra["step_trace"] = _mean_over_ranks(raws, "step_trace")
        merged.extra["communication"] = _mean_over_ranks(raws, "communication")
        return merged

    def _read_all(self, ranks: list[Path], progress: Progress | None) -> list[tuple[RawProfile | None, str | None]]:
        names = [str(r) for r in ranks]
        if len(ranks) < 2 or MAX_WORKERS < 2 or _kernel_bytes(ranks) < PARALLEL_MIN_BYTES:
            results = []
            for done, name in enumerate(names):
                results.append(_read_rank(name))
                if progress is not None:
                    progress(done + 1, len(names))
            return results
        from concurrent.futures import ProcessPoolExecutor  # only here: importing it costs start-up time

        with ProcessPoolExecutor(max_workers=min(MAX_WORKERS, len(ranks))) as pool:
            results = []
            for done, result in enumerate(pool.map(_read_rank, names)):
                results.append(result)
                if progress is not None:
                    progress(done + 1, len(names))
            return results


def _mean_over_ranks(raws: list[RawProfile], key: str) -> dict[str, float]:
    """The mean over ranks of a per-rank table of totals (step trace, communication.json totals).

    Exposed communication of the job, and how it splits into transfer and waiting, are those of a
    typical rank; a rank without the table does not count.
    """
    traces = [raw.extra.get(key) for raw in raws if raw.extra.get(key)]
    if not traces:
        return {}
    keys = set().union(*traces)
    return {key: sum(t.get(key, 0.0) for t in traces) / len(traces) for key in keys}
