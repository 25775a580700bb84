"""msprof-analyze's cluster summary: ``cluster_analysis_output/`` (cluster_step_trace_time.csv, cluster_communication.json).

What a cluster user has at hand after ``msprof-analyze cluster -d <ranks>``. It holds no kernels, but
it answers the first questions of a top-down reading for every rank at once:

* ``cluster_step_trace_time.csv``: one row per (step, rank) with the columns of step_trace_time.csv
  (Type ``rank``, Index = the rank id); Type ``stage`` rows are per-pipeline-stage maxima and are not
  ranks (msprof-analyze docs, "Table Structures of Recipe Results"). Each rank gets its split, the job
  the mean rank's split.
* ``cluster_communication.json``: ``{group: {step: {op@hash: {rank: {"Communication Time Info": {...},
  "Communication Bandwidth Info": {transport: {...}}}}}}}``; the time fields are summed (how much of the
  collectives' time is waiting), and transit size / time per (transport, rank) give each rank's link
  bandwidth (``extra["link_bandwidth"]``) for the slow-link check.

The profile has no kernels: its device time is 0 and every finding comes from the step split, the
ranks and the collectives.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from opprof_advisor.core import steps
from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.models import StepSplit
from opprof_advisor.readers import columns, csvfile
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile
from opprof_advisor.readers.communication import read_cluster_communication
from opprof_advisor.readers.layouts import COMM_FILE, STEP_FILE, is_cluster_summary, summary_dir

FORMAT = "cluster-summary"


class ClusterSummaryReader:
    """msprof-analyze ``cluster_analysis_output/`` of a multi-rank job."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        return is_cluster_summary(path)

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        folder = summary_dir(path)
        step_file = folder / STEP_FILE
        if not step_file.is_file():
            raise MalformedProfile(f"no {STEP_FILE} in the cluster summary", path=folder,
                                   hint="run msprof-analyze cluster with --export_type text, or point advisor at "
                                        "the ranks' *_ascend_pt folders")
        raw = RawProfile(path=str(path), format=FORMAT, kernels=KernelTable())
        ranks = read_rank_steps(step_file, raw.notes)
        if not ranks:
            raise MalformedProfile("no rank rows (Type = rank) with step figures", path=step_file, line=1,
                                   hint="check that the file is msprof-analyze's cluster_step_trace_time.csv")
        raw.extra["ranks"] = [_summary(rank, split, step_file) for rank, split in ranks.items()]
        typical = steps.mean(list(ranks.values()))
        raw.extra["steps"] = [typical]
        raw.extra["step_source"] = f"mean of {len(ranks)} ranks in {STEP_FILE}"
        raw.versions["ranks"] = str(len(ranks))
        comm_file = folder / COMM_FILE
        if comm_file.is_file():
            totals, bandwidth = read_cluster_communication(comm_file, raw.notes)
            if totals:
                raw.extra["communication"] = totals
            if bandwidth:
                raw.extra["link_bandwidth"] = bandwidth
        else:
            raw.notes.append(f"no {COMM_FILE} beside {STEP_FILE}: waiting and link bandwidth are not judged")
        if progress is not None:
            progress(1, 1)
        return raw


def read_rank_steps(path: Path, notes: list[str] | None = None) -> dict[str, StepSplit]:
    """Each rank's split (steps summed), keyed ``rank<Index>``, in rank order; a figure out of range or not finite
    reads as missing, with a note naming its line."""
    header, rows = csvfile.read_rows(path)
    per_rank: dict[str, list[StepSplit]] = defaultdict(list)
    bad = columns.BadNumbers(path)
    for row, line in zip(rows, rows.lines):
        cells = dict(zip(header, row))
        if (cells.get("Type") or "").strip().lower() != "rank":
            continue
        index = (cells.get("Index") or "").strip()
        values = {column: bad.number(cells.get(column), column, line, columns.STEP_US) for column in steps.TRACE_COLUMNS
                  if column in cells}
        split = steps.from_trace_row((cells.get("Step") or "").strip() or None, values)
        if split is not None and index:
            per_rank[f"rank{index}" if index.isdigit() else index].append(split)
    if notes is not None:
        notes.extend(bad.notes())
    ordered = sorted(per_rank, key=lambda label: (not label[4:].isdigit(), int(label[4:]) if label[4:].isdigit()
                                                  else 0, label))
    return {label: steps.total(per_rank[label]) for label in ordered}


def _summary(rank: str, split: StepSplit, path: Path) -> dict:
    return {"rank": rank, "path": str(path), "device_time_us": None, "error": None,
            "computing_us": round(split.computing_us, 3), "exposed_us": round(split.exposed_us, 3),
            "free_us": round(split.free_us, 3), "stage_us": round(split.stage_us, 3)}
