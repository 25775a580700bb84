"""The step split: where each step's wall time goes (computing, exposed communication, free).

An Ascend engineer reads a profile top-down, and the first question is where the step goes. The
producers answer it in their own tables, which are used when present:

* torch_npu ``step_trace_time.csv`` (and msprof-analyze's ``cluster_step_trace_time.csv``): one row
  per step (and device / rank) with Computing, Communication(Not Overlapped), Overlapped,
  Communication, Free, Stage, Bubble, Preparing in µs. torch_npu derives them from the timeline's
  "Overlap Analysis" events (``_trace_step_time_parser.py``): Stage is the wall time from the first to
  the last of those events in the step (minus Bubble), and Computing + Communication(Not Overlapped)
  + Free = Stage.
* the torch_npu DB's ``OVERLAP_ANALYSIS`` table (type 0 computing, 1 communication, 2 communication
  not overlapped, 3 free; on the real level1 DB its sums equal analysis.db ``StepTraceTime`` exactly),
  split into steps by ``STEP_TIME``;
* the timeline's "Overlap Analysis" process.

Otherwise the split is computed here from the kernels' own intervals (start + duration), the same
way: computing = the union of compute kernels, communication = the union of communication ops,
exposed = communication not covered by computing, stage = first start to last end, free = stage
minus everything busy. Steps are the ``Step Id`` column where the file has one, or the producer's
step windows, else the whole window is one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opprof_advisor.core.models import StepSplit
from opprof_advisor.core.encoded import Coded, encode

#: step_trace_time.csv column -> StepSplit field (FORMATS.md §4.4).
TRACE_COLUMNS: dict[str, str] = {
    "Computing": "computing_us",
    "Communication": "communication_us",
    "Communication(Not Overlapped)": "exposed_us",
    "Overlapped": "overlapped_us",
    "Free": "free_us",
    "Stage": "stage_us",
    "Bubble": "bubble_us",
    "Preparing": "preparing_us",
}


def from_trace_row(step: str | None, values: dict[str, float | None]) -> StepSplit | None:
    """One step from step_trace_time-style columns (µs); None when the row has no usable figure."""
    fields = {field: values.get(column) for column, field in TRACE_COLUMNS.items()}
    if fields["computing_us"] is None and fields["exposed_us"] is None:
        return None
    split = StepSplit(step=step, **{k: v for k, v in fields.items() if v is not None})
    if "Overlapped" not in values and split.communication_us:
        split.overlapped_us = max(0.0, split.communication_us - split.exposed_us)
    if not split.stage_us:
        split.stage_us = split.computing_us + split.exposed_us + split.free_us
    return split


def total(steps: Sequence[StepSplit]) -> StepSplit | None:
    """The steps summed (one StepSplit with ``step=None``), or None without steps."""
    if not steps:
        return None
    summed = StepSplit(step=None)
    for field in ("computing_us", "communication_us", "exposed_us", "overlapped_us", "free_us", "stage_us"):
        setattr(summed, field, sum(getattr(s, field) for s in steps))
    for field in ("bubble_us", "preparing_us"):
        values = [getattr(s, field) for s in steps if getattr(s, field) is not None]
        setattr(summed, field, sum(values) if values else None)
    gaps = [s.largest_gap_us for s in steps if s.largest_gap_us is not None]
    summed.largest_gap_us = max(gaps) if gaps else None
    return summed


def mean(splits: Sequence[StepSplit]) -> StepSplit | None:
    """The mean of several splits (e.g. the typical rank of a job), or None."""
    summed = total(splits)
    if summed is None:
        return None
    for field in ("computing_us", "communication_us", "exposed_us", "overlapped_us", "free_us", "stage_us"):
        setattr(summed, field, getattr(summed, field) / len(splits))
    for field in ("bubble_us", "preparing_us"):
        if getattr(summed, field) is not None:
            setattr(summed, field, getattr(summed, field) / len(splits))
    return summed


# ----------------------------------------------------------------------------------------------
# From intervals
# ----------------------------------------------------------------------------------------------


def from_intervals(starts: Sequence[float], durations: Sequence[float], is_comm: Sequence[bool],
                   steps: "Sequence[str | None] | Coded | None" = None,
                   windows: Sequence[tuple[str, float, float]] | None = None) -> list[StepSplit]:
    """Step splits computed from task intervals (µs); ``steps`` names each task's step (a list, or a Coded
    column), or ``windows`` (step id, start, end) assign tasks by their start; neither → one step for the
    whole window. The columns may be lists or numpy arrays; the unions are numpy's, on views of them."""
    import numpy as np

    starts = np.asarray(starts, dtype=np.float64)
    durations = np.asarray(durations, dtype=np.float64)
    is_comm = np.asarray(is_comm, dtype=bool)
    found = []
    for step, indices in _step_rows(np, starts, steps, windows):
        if len(indices):
            found.append(StepSplit(step=step, **_split(np, starts[indices], durations[indices], is_comm[indices])))
    found.sort(key=lambda s: _step_key(s.step))
    return found


def _step_rows(np, starts, steps, windows) -> list[tuple[str | None, Any]]:
    """(step, row indices) in order of each step's first task."""
    if steps is not None:
        coded = encode(steps)
        labels = [value or None for value in coded.values]
        codes = np.asarray(coded.codes, dtype=np.int64)
        rows = np.arange(len(starts))
    elif windows:
        ordered = sorted(windows, key=lambda w: w[1])
        bounds = np.asarray([w[1] for w in ordered], dtype=np.float64)
        ends = np.asarray([w[2] for w in ordered], dtype=np.float64)
        position = np.searchsorted(bounds, starts, side="right") - 1
        inside = (position >= 0) & (starts < ends[np.maximum(position, 0)])
        labels = [w[0] for w in ordered]
        rows = np.flatnonzero(inside)
        codes = position[rows]
    else:
        return [(None, np.arange(len(starts)))]
    index: dict = {}  # steps that share a name (None and "" alike) are one
    merged = np.asarray([index.setdefault(label, len(index)) for label in labels] or [0], dtype=np.int64)
    names, codes = list(index), merged[codes]
    order = np.argsort(codes, kind="stable")  # rows stay ascending within a step
    rows, codes = rows[order], codes[order]
    cuts = np.flatnonzero(np.diff(codes)) + 1
    firsts = np.concatenate([[0], cuts]).astype(np.int64) if len(rows) else []
    parts = [(names[int(codes[first])], part) for first, part in zip(firsts, np.split(rows, cuts))]
    parts.sort(key=lambda item: int(item[1][0]))  # by the step's first task
    return parts


def _split(np, s, durations, comm) -> dict[str, float]:
    """The split of one step's tasks: starts ``s``, durations, communication flags (numpy arrays)."""
    e = s + durations
    compute_u, comm_u = _union(np, s[~comm], e[~comm]), _union(np, s[comm], e[comm])
    busy = _union(np, np.concatenate([compute_u[0], comm_u[0]]), np.concatenate([compute_u[1], comm_u[1]]))
    computing = float((compute_u[1] - compute_u[0]).sum())
    communication = float((comm_u[1] - comm_u[0]).sum())
    exposed = communication - _overlap(np, comm_u, compute_u)
    gap = float((busy[0][1:] - busy[1][:-1]).max()) if len(busy[0]) > 1 else 0.0
    stage = float(busy[1][-1] - busy[0][0])
    return {"computing_us": computing, "communication_us": communication, "exposed_us": exposed,
            "overlapped_us": communication - exposed, "free_us": max(0.0, stage - computing - exposed),
            "stage_us": stage, "largest_gap_us": gap}


def _union(np, starts, ends):
    """Disjoint sorted (starts, ends) arrays covering the same time."""
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    running = np.maximum.accumulate(ends)
    first = np.flatnonzero(np.concatenate([[True], starts[1:] > running[:-1]]))
    last = np.concatenate([first[1:] - 1, [len(starts) - 1]])
    return starts[first], running[last]


def _overlap(np, a, b) -> float:
    """Length of the intersection of two disjoint sorted interval arrays."""
    if not len(a[0]) or not len(b[0]):
        return 0.0
    b_starts, b_ends = b
    covered = np.concatenate([[0.0], np.cumsum(b_ends - b_starts)])

    def covered_until(x):
        j = np.searchsorted(b_starts, x, side="right") - 1
        k = np.clip(j, 0, None)
        return np.where(j >= 0, covered[k] + np.minimum(x, b_ends[k]) - b_starts[k], 0.0)

    return float((covered_until(a[1]) - covered_until(a[0])).sum())


def _step_key(step: str | None) -> tuple[int, float, str]:
    if step is None:
        return (0, 0.0, "")
    try:
        return (1, float(step), step)
    except ValueError:
        return (2, 0.0, step)


# ----------------------------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------------------------


def split_to_json(split: StepSplit) -> dict[str, Any]:
    """One split with its shares of the stage (the step's wall time)."""
    doc: dict[str, Any] = {"step": split.step}
    for field in ("stage_us", "computing_us", "communication_us", "exposed_us", "overlapped_us", "free_us",
                  "bubble_us", "preparing_us", "largest_gap_us"):
        value = getattr(split, field)
        doc[field] = None if value is None else round(value, 3)
    stage = split.stage_us
    doc["shares"] = {name: round(getattr(split, f"{name}_us") / stage, 6) if stage else None
                     for name in ("computing", "exposed", "free")}
    return doc
