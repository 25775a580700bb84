"""HCCL collectives in AIV mode counted once (FORMATS.md §13, ``HCCL_OP_EXPANSION_MODE=AIV``).

A collective expanded onto the AI Vector cores shows twice in kernel_details: its ``hcom_*`` row (Accelerator
Core ``COMMUNICATION``) and an ``AivKernel`` row (Type and Accelerator Core ``N/A``) with the same start and
duration. Counting both doubled its time ("device time 5.52 ms" where it is 5.16) and, the twin being taken for
computing, made fully exposed communication look overlapped. The rule CANN's own breakdown script follows
(``hicann/cann-recipes-infer`` ``analyze_kernels.py`` @fbc225d2): an ``AivKernel`` row whose start lies inside a
``hcom_*`` row's [start, start + duration] is a fragment of that collective and is dropped (its wait time moves
to the collective); an ``AivKernel`` with no collective around it is a real vector kernel and stays.
"""

from __future__ import annotations

from bisect import bisect_right

from opprof_advisor.readers.base import KernelTable
from opprof_advisor.readers.frame import Frame

#: The name torch_npu gives the vector-core twin of an AIV-mode collective.
AIV_TWIN = "AivKernel"
#: Start times are printed to the nanosecond; a twin a rounding step before its collective is still inside.
TOLERANCE_US = 0.002


def count_collectives_once(table: KernelTable, notes: list[str]) -> KernelTable:
    """``table`` without the ``AivKernel`` twins of its AIV-mode collectives (the same table when it has none).

    A twin is matched with a collective of its own device (and step, where recorded) only; the wait time moves
    from the twin that starts with the collective (the one the profiler printed first), not from later fragments,
    whose gaps lie inside the collective."""
    frame = Frame.of(table)
    if not frame.n or not frame.has("start_us"):
        return table
    names = frame.coded("name")
    if AIV_TWIN not in names.values or not any(str(value).startswith("hcom_") for value in names.values):
        return table
    starts, durations = frame.floats("start_us"), frame.floats("duration_us")
    devices = frame.coded("device_id") if frame.has("device_id") else None
    step_ids = frame.coded("step_id") if frame.has("step_id") else None

    def place(row) -> tuple:
        return (frame.value_at(devices, row) if devices is not None else None,
                frame.value_at(step_ids, row) if step_ids is not None else None)

    by_place: dict[tuple, list[tuple[float, float, int]]] = {}
    for i in frame.rows(frame.isin(names, lambda name: str(name).startswith("hcom_"))):
        start = float(starts[i])
        by_place.setdefault(place(i), []).append((start, start + float(durations[i]), int(i)))
    index: dict[tuple, tuple[list, list, list]] = {}
    for key, collectives in by_place.items():
        collectives.sort()
        reach = []  # the latest end of the collectives opened so far: none further back can hold a later start
        for _, end, _ in collectives:
            reach.append(max(end, reach[-1]) if reach else end)
        index[key] = (collectives, [start for start, _, _ in collectives], reach)
    twins: dict[int, int] = {}  # twin row -> its collective's row
    for row in frame.rows(frame.isin(names, {AIV_TWIN})):
        found = index.get(place(row))
        if found is None:
            continue
        collectives, opened, reach = found
        start = float(starts[row])
        at = bisect_right(opened, start + TOLERANCE_US) - 1
        while at >= 0 and reach[at] + TOLERANCE_US >= start:
            if collectives[at][1] + TOLERANCE_US >= start:
                twins[int(row)] = collectives[at][2]
                break
            at -= 1
    if not twins:
        return table
    if frame.has("wait_us"):
        waits = list(table.wait_us)
        for twin, collective in twins.items():
            if waits[twin] and abs(float(starts[twin]) - float(starts[collective])) <= TOLERANCE_US:
                waits[collective] = (waits[collective] or 0.0) + waits[twin]
        table.wait_us = waits
    kept = table.take([row for row in range(frame.n) if row not in twins])
    notes.append(f"{len(twins)} AivKernel row(s) are the vector-core twins of AIV-mode collectives "
                 "(HCCL_OP_EXPANSION_MODE=AIV): each collective is counted once, as communication")
    return kept
