"""A parent folder of several ranks (``*_ascend_pt`` children, or several profiles).

The reader only lists the rank folders; each rank is mapped to a compact summary and the summaries are
reduced to the job's profile by ``opprof_advisor.cluster``: memory stays that of one rank per worker however many ranks the job
has, and summaries are cached. Every rank keeps its own summary: device time and its step split
(computing, exposed communication, free), so the slow rank can be named by what it *computes* — in
a data-parallel job the fast ranks wait inside AllReduce, so device time is nearly equal everywhere.
Ranks are labelled ``rank<rank_id>`` from profiler_info*.json, else by their folder name. A rank that
cannot be read is named with its error; the readable ranks are still reported.

Ranks of different jobs are refused with one line naming them: the ranks of one job profile the same
steps at the same time, so their task windows overlap (``SAME_JOB_GAP_S``). One op_summary holding
several Device_id values (a multi-device PROF folder) is split into one rank per device too
(``merge_ranks``: that file is in memory already).
"""

from __future__ import annotations

import re
from pathlib import Path

from opprof_advisor.core import steps
from opprof_advisor.core.errors import ProfileError
from opprof_advisor.readers.frame import Frame
from opprof_advisor.core.operators import canonical_family
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile
from opprof_advisor.readers.columns import op_type_from_name, unit_of
from opprof_advisor.readers.layouts import is_multi_rank, rank_dirs

#: Two ranks whose task windows are further apart than this belong to different runs (hosts of one
#: job agree on the time to far better than a minute; separate runs are hours or days apart).
SAME_JOB_GAP_S = 60.0


def rank_label(path: Path, raw: RawProfile | None = None) -> str:
    """``rank<rank_id>`` from the rank's profiler_info, else from a ``rank_N`` folder name, else the folder name."""
    rank_id = (raw.versions.get("rank_id") if raw is not None else None) or ""
    if rank_id.strip().lstrip("-").isdigit() and int(rank_id) >= 0:
        return f"rank{int(rank_id)}"
    match = re.search(r"rank_?(\d+)", path.name)
    return f"rank{match.group(1)}" if match else path.name


class MultiRankReader:
    """Several ranks under one parent folder."""

    name = "multi-rank"

    def detect(self, path: Path) -> bool:
        return is_multi_rank(path)

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        """The rank folders only (``extra["rank_dirs"]``): mapping and reducing them is the cluster's job
        (``opprof_advisor.cluster.job``), which ``profiles.load_profile`` hands them to."""
        raw = RawProfile(path=str(path), format="multi-rank", kernels=KernelTable())
        raw.extra["rank_dirs"] = rank_dirs(path)
        return raw


def merge_ranks(path: Path, raws: list[RawProfile], summaries: list[dict], notes: list[str]) -> RawProfile:
    """One job from its ranks: the kernels concatenated, each rank's summary, the typical rank's step split."""
    table = KernelTable.concat([raw.kernels for raw in raws])
    versions: dict[str, str] = {}
    core_counts: dict[str, int] = {}
    for raw in raws:
        notes.extend(n for n in raw.notes if n not in notes)
        for key, value in raw.versions.items():
            if key != "rank_id":
                versions.setdefault(key, value)
        core_counts = core_counts or raw.core_counts
    summaries.sort(key=lambda s: _natural(s["rank"]))
    merged = RawProfile(path=str(path), format="multi-rank", kernels=table, versions=versions,
                        core_counts=core_counts, notes=notes, chip=raws[0].chip,
                        freq_mhz=next((raw.freq_mhz for raw in raws if raw.freq_mhz), None))
    merged.extra["ranks"] = summaries
    merged.extra["rank_format"] = raws[0].format
    # the job's split is that of a typical rank: per-rank splits summed would count the wall time N times
    splits = [steps.total(rank_steps(raw)) for raw in raws]
    typical = steps.mean([s for s in splits if s is not None])
    if typical is not None:
        merged.extra["steps"] = [typical]
        merged.extra["step_source"] = f"mean of {sum(1 for s in splits if s)} ranks' step splits"
    merged.extra["communication"] = _mean_over_ranks(raws, "communication")
    return merged


def _natural(label: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)]


def rank_steps(raw: RawProfile) -> list:
    """A rank's step split: its producer's table, else computed from its task intervals."""
    if raw.extra.get("steps"):
        return raw.extra["steps"]
    frame = Frame.of(raw.kernels)
    starts = _starts(frame)
    if starts is None:
        return []
    return steps.from_intervals(starts, frame.floats("duration_us"), _communication_mask(frame),
                                windows=raw.extra.get("step_windows"))


def _starts(frame: Frame):
    """The task start column when every task has one, else None."""
    if not frame.n or not frame.has("start_us"):
        return None
    starts = frame.floats("start_us")
    return starts if frame.count(frame.present(starts)) == frame.n else None


def _communication_mask(frame: Frame):
    """Per task, whether it is communication; judged once per (hcom_ name, op type, task type), the first
    such task's name deciding the op type where none is recorded."""
    names = frame.coded("name")
    hcom = frame.mapped(names, lambda name: name if name.startswith("hcom_") else "")
    keys = frame.combine(hcom, frame.coded("op_type"), frame.coded("task_type"))
    seen = frame.tally(keys)
    verdicts = set()
    for key, row in zip(seen.keys, seen.first):
        _, op, task = key
        name = frame.value_at(names, row)
        op_type = op or op_type_from_name(name)
        if unit_of(task, canonical_family(op_type), op_type or name) == "communication":
            verdicts.add(key)
    return frame.isin(keys, verdicts)


def rank_summary(label: str, path: str, raw: RawProfile) -> dict:
    """What the rank table shows: device time and the rank's split (computing, exposed, free, stage)."""
    total = steps.total(rank_steps(raw))
    frame = Frame.of(raw.kernels)
    durations = frame.floats("duration_us")
    device = round(frame.total(durations), 3)
    if total is None:
        comm = frame.total(durations, _communication_mask(frame))
        computing, exposed, free, stage = round(device - comm, 3), None, None, None
    else:
        computing, exposed, free, stage = (round(v, 3) for v in (total.computing_us, total.exposed_us,
                                                                  total.free_us, total.stage_us))
    return {"rank": label, "path": path, "device_time_us": device, "error": None, "computing_us": computing,
            "exposed_us": exposed, "free_us": free, "stage_us": stage}


def task_window(raw: RawProfile) -> list[float] | None:
    """[first task start, last task end] in µs, or None when the rank has no start times."""
    frame = Frame.of(raw.kernels)
    starts = _starts(frame)
    if starts is None:
        return None
    durations = frame.floats("duration_us")
    return [float(starts.min()), float((starts + durations).max())]


def check_windows(path: Path, ranks: list[tuple[str, list[float] | None]]) -> None:
    """Refuse ranks whose task windows (name, [start, end] µs) are far apart: they come from different runs.

    Ranks without a window are not judged."""
    windows = sorted((window[0], window[1], name) for name, window in ranks if window is not None)
    if len(windows) < 2:
        return
    latest_end, latest_name = windows[0][1], windows[0][2]
    for start, end, name in windows[1:]:
        if start - latest_end > SAME_JOB_GAP_S * 1e6:
            apart = (start - latest_end) / 1e6
            raise ProfileError(f"the rank folders come from different runs: {Path(name).name} starts "
                               f"{_duration(apart)} after {Path(latest_name).name} ends", path=path,
                               hint="point advisor at the folder of one job's ranks, or at one rank")
        if end > latest_end:
            latest_end, latest_name = end, name


def _duration(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.0f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 60:.0f} minutes"


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
