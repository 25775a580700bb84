"""The numbers of a profiler DB checked where they are read: timestamps, durations and figures in range.

A cell that is text, NULL where a number belongs, not finite, or out of its plausible range is counted in a
``columns.BadNumbers`` note (table, row id and column named) and its row or value is left out; the rest of the DB is
still judged. The common case, a column of plain in-range ints, is checked at C speed (``_plain``).
"""

from __future__ import annotations

import math
import operator
from typing import Any

from opprof_advisor.readers import columns
from opprof_advisor.readers.columns import COUNT


#: Timestamps in ns (an int64 since the epoch).
NS = (0.0, 9.2e18)
#: A task lasts at most this many ns (a wait as long).
MAX_TASK_NS = int(columns.DURATION_US[1] * 1000)
DURATION_NS = (0.0, float(MAX_TASK_NS))
#: An AI Core clock (MHz).
FREQ_MHZ = (1.0, 100_000.0)


def _plain(values: list, bounds: tuple[float, float], kinds: tuple[type, ...] = (int,)) -> bool:
    """True when every value is None or of ``kinds`` and within ``bounds`` (C speed: the common case)."""
    types = set(map(type, values))
    types.discard(type(None))
    if not types <= set(kinds):
        return False
    numbers = [v for v in values if v is not None] if None in values else values
    if not numbers:
        return True
    if float in types and not math.isfinite(sum(numbers)):
        return False
    return bounds[0] <= min(numbers) and max(numbers) <= bounds[1]


def _ns(value: Any) -> int | columns.Bad:
    """A timestamp cell (ns) as an int, or Bad (NULL, text, a REAL that is not finite or not in NS)."""
    if type(value) is int and 0 <= value <= NS[1]:
        return value
    number = columns.checked_float(value, NS) if not isinstance(value, (str, bytes)) else None
    return int(number) if isinstance(number, float) else columns.Bad(value)


def _number(value: Any, bounds: tuple[float, float]) -> float | columns.Bad | None:
    """A numeric cell within ``bounds``; None for NULL; Bad for text, a blob or a number out of ``bounds``."""
    if value is None:
        return None
    number = columns.checked_float(value, bounds) if not isinstance(value, bytes) else None
    return columns.Bad(value) if number is None else number


def _checked(values: list, bounds: tuple[float, float], bad: columns.BadNumbers, column: str, ids: list,
             convert=float) -> list:
    """``values`` converted (None kept); a bad one becomes None, counted under ``column`` (``ids``: the globalTaskId
    of each, named in the note)."""
    if _plain(values, bounds, (int, float)):
        return [None if v is None else convert(v) for v in values]
    out = []
    for value, gid in zip(values, ids):
        number = _number(value, bounds)
        if isinstance(number, columns.Bad):
            bad.add(column, f"globalTaskId {gid}", value, bounds)
            number = None
        out.append(None if number is None else convert(number))
    return out


def _plausible_tasks(rows: list[tuple], bad: columns.BadNumbers, table: str, key: str,
                     longest_ns: int | None = MAX_TASK_NS) -> list[tuple]:
    """The rows (startNs, endNs, ...) whose times are timestamps and whose duration is at most ``longest_ns`` (None:
    any, as for a step window); the others are counted as left out (``key``: the name of the row id, the 4th item
    of each row)."""
    if not rows:
        return rows
    starts, ends = [r[0] for r in rows], [r[1] for r in rows]
    if _plain(starts, NS) and _plain(ends, NS) and None not in starts and None not in ends and \
            (longest_ns is None or max(map(operator.sub, ends, starts)) <= longest_ns):
        return rows
    kept = []
    for row in rows:
        start, end = _ns(row[0]), _ns(row[1])
        where = f"{key} {row[3]}"
        if isinstance(start, columns.Bad):
            bad.add(f"{table}.startNs", where, row[0], NS, dropped=True)
        elif isinstance(end, columns.Bad):
            bad.add(f"{table}.endNs", where, row[1], NS, dropped=True)
        elif longest_ns is not None and end - start > longest_ns:
            bad.add(f"{table}.endNs - startNs", where, f"{end - start} ns", (0.0, longest_ns), dropped=True)
        else:
            kept.append((start, end, *row[2:]))
    return kept


def _plausible_windows(rows: list[tuple], bad: columns.BadNumbers, table: str, key: str) -> list[tuple]:
    """Rows (startNs, endNs, ...) with timestamps for both (a window may be longer than a task)."""
    return _plausible_tasks(rows, bad, table, key, longest_ns=None)



def _communication_rows(rows: list[tuple], bad: columns.BadNumbers, table: str, key: str) -> list[tuple]:
    """(start, end, device, name id, op_type id, wait_ns) of the ops with plausible times; a bad device or wait reads
    as missing (each counted in ``bad``)."""
    # the row id is moved to the 4th place for _plausible_tasks, then back out
    moved = _plausible_tasks([(r[0], r[1], r[2], r[6], r[3], r[4], r[5]) for r in rows], bad, table, key)
    out = []
    for start, end, device, op, name, kind, wait in moved:
        where = f"{key} {op}"
        device = _number(device, COUNT)
        if isinstance(device, columns.Bad):
            bad.add(f"{table} deviceId", where, device.cell, COUNT)
        waited = _number(wait, DURATION_NS)
        if isinstance(waited, columns.Bad):
            bad.add(f"{table}.waitNs", where, wait, DURATION_NS)
        out.append((start, end, int(device) if isinstance(device, float) else None, name, kind,
                    waited if isinstance(waited, float) else None))
    return out
