"""Where in the user's code each hot operator was launched: Python call stacks of a ``with_stack=True`` capture.

The torch_npu DB links a device task to the Python frames that launched it (FORMATS.md §14; the join Huawei's
advisor makes in msprof-analyze ``advisor/dataset/stack/db_stack_finder.py``): ``TASK.connectionId`` =
``CONNECTION_IDS.connectionId``, ``CONNECTION_IDS.id`` = ``PYTORCH_API.connectionId``, ``PYTORCH_API.callchainId`` =
``PYTORCH_CALLCHAINS.id``, whose rows are the frames (``stack`` -> STRING_IDS ``"<file>(<line>): <function>"``)
by ``stackDepth`` (0 innermost). Frames of torch, torch_npu, the interpreter and its standard library are the
framework's; the rest are the user's (a model library such as torchvision counts as the user's code: it is what
they call). In the DB, tasks launched from the task-queue or autograd threads carry no chain: only those with
one are tied to code; a text export's trace_view.json follows those hand-offs (``trace_call_stacks``), so a
backward kernel is tied to the forward line it differentiates.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import defaultdict
from typing import Any

from opprof_advisor.core.sidefile import SideFileError, read_bytes
from opprof_advisor.readers import columns

#: Tables the join needs.
STACK_TABLES = ("CONNECTION_IDS", "PYTORCH_API", "PYTORCH_CALLCHAINS")
#: A frame of the framework or of the interpreter, never "where" in the user's code.
FRAMEWORK_FRAME = re.compile(r"(?:site-packages|dist-packages)/(?:torch|torch_npu|torchair)/|/lib/python3\.\d+/(?!site-"
                             r"packages|dist-packages)|^<string>|^<frozen ")
#: Stacks kept per op type (the ones with the most time) and user frames kept per stack (innermost first).
TOP_STACKS, TOP_FRAMES = 3, 4


def user_frames(frames: list[str]) -> list[str]:
    """The frames of ``frames`` (innermost first) that are the user's code."""
    return [frame for frame in frames if frame and not FRAMEWORK_FRAME.search(frame)]


def db_call_stacks(con: sqlite3.Connection, tables: set[str], strings: Any) -> dict[str, list[dict[str, Any]]]:
    """Per op type, the user-code call stacks of its launches with their time: {op type: [{"where", "frames",
    "time_us", "count"}, ...]} (the most time first); {} when the DB has no call chains."""
    if not set(STACK_TABLES) <= tables:
        return {}
    try:
        rows = con.execute(
            "SELECT t.rowid, c.opType, t.startNs, t.endNs, cc.stack FROM TASK t "
            "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
            "JOIN CONNECTION_IDS ci ON ci.connectionId = t.connectionId "
            "JOIN PYTORCH_API a ON a.connectionId = ci.id "
            "JOIN PYTORCH_CALLCHAINS cc ON cc.id = a.callchainId "
            "WHERE a.callchainId IS NOT NULL ORDER BY t.rowid, cc.stackDepth").fetchall()
    except sqlite3.Error:
        return {}
    tasks: dict[int, list] = {}
    for rowid, op, start, end, frame in rows:
        if type(start) is not int or type(end) is not int or end - start > columns.DURATION_US[1] * 1000:
            continue  # NULL, text, a REAL (inf), an absurd span: a task the DB reader left out (with a note)
        task = tasks.setdefault(rowid, [strings[op], max(0, end - start) / 1000.0, []])
        task[2].append(strings[frame])
    return _ranked(tasks.values())


#: trace_view.json files above this are not parsed for stacks (a whole-run trace can be gigabytes; the DB export
#: ties kernels to code without it).
MAX_TRACE_BYTES = 256 * 1024 * 1024


def trace_call_stacks(path, op_type_of: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """``db_call_stacks`` from a text export's trace_view.json (FORMATS.md §14): an ``async_npu`` flow starts inside
    the Python op that launched a kernel (``s`` on the Python process) and ends at the kernel's start on Ascend
    Hardware (``f``); the ``Call stack`` of the innermost op around the start is the kernel's. A kernel launched from
    the task-queue thread is traced back through the ``async_task_queue`` flow of the Dequeue that ran it to its
    Enqueue on the launching thread, and the op around that. ``op_type_of`` maps kernel names to op types (from
    kernel_details)."""
    try:
        data = read_bytes(path, MAX_TRACE_BYTES)
    except (OSError, SideFileError):
        return {}
    if b'"Call stack"' not in data:
        return {}
    try:  # NaN / Infinity decode as columns.Bad: the event holding one is skipped (_ts, _dur), not the file
        events = json.loads(data, **columns.LENIENT_JSON_NUMBERS)
    except (ValueError, RecursionError):
        return {}
    events = events.get("traceEvents", []) if isinstance(events, dict) else events
    if not isinstance(events, list):
        return {}
    ops: dict[Any, list[tuple[float, float, str]]] = defaultdict(list)  # (pid, tid) -> (start, end, stack)
    kernels: dict[tuple, str] = {}  # (pid, tid, ts) -> kernel name
    durations: dict[tuple, float] = {}  # (pid, tid, ts) -> its duration (µs)
    starts, ends = {}, {}
    spans: dict[tuple, list[tuple[float, float]]] = defaultdict(list)  # (pid, tid) -> every cpu_op's span
    origins: dict[tuple, tuple] = {}  # (cat, flow id) -> (pid, tid, ts) where a hand-off flow starts
    incoming: dict[tuple, list[tuple[float, tuple]]] = defaultdict(list)  # (pid, tid) -> (ts, flow) arriving there
    for event in events:
        if not isinstance(event, dict):
            continue
        phase, args = event.get("ph"), event.get("args") if isinstance(event.get("args"), dict) else {}
        try:
            if phase == "X" and "Call stack" in args:
                start = _ts(event["ts"])
                ops[(event.get("pid"), event.get("tid"))].append((start, start + _dur(event.get("dur")),
                                                                   str(args["Call stack"])))
            elif phase == "X":
                place = (event.get("pid"), event.get("tid"), str(event.get("ts")))
                duration = _dur(event.get("dur"))
                kernels[place] = str(event.get("name") or "")
                durations[place] = duration
                if event.get("cat") == "cpu_op":
                    start = _ts(event["ts"])
                    spans[(event.get("pid"), event.get("tid"))].append((start, start + duration))
            elif phase in ("s", "f") and event.get("cat") == "async_npu":
                (starts if phase == "s" else ends)[str(event.get("id"))] = event
            elif phase == "s" and event.get("cat") in HAND_OFFS:
                origins[(event.get("cat"), str(event.get("id")))] = (event.get("pid"), event.get("tid"),
                                                                      _ts(event["ts"]))
            elif phase == "f" and event.get("cat") in HAND_OFFS:
                incoming[(event.get("pid"), event.get("tid"))].append(
                    (_ts(event["ts"]), (event.get("cat"), str(event.get("id")))))
        except (KeyError, TypeError, ValueError):
            continue
    tasks: list[tuple[str, float, list[str]]] = []
    for flow, start in starts.items():
        end = ends.get(flow)
        if end is None:
            continue
        key = (end.get("pid"), end.get("tid"), str(end.get("ts")))
        name = kernels.get(key)
        try:
            at = _ts(start["ts"])
        except (KeyError, TypeError, ValueError):
            continue
        thread = (start.get("pid"), start.get("tid"))
        around = _around(ops, thread, at)
        if not around:  # launched on another thread (task queue, autograd): follow the hand-off that started its op
            around = _handed_off(ops, spans, origins, incoming, thread, at)
        if name not in op_type_of or not around:  # (MEMCPY_ASYNC and other tasks kernel_details does not list)
            continue
        stack = min(around, key=lambda op: op[1] - op[0])[2]  # the innermost op with a stack
        frames = [frame.strip() for frame in stack.replace("\r", "").split(";") if frame.strip()]
        tasks.append((op_type_of[name] or name, durations.get(key, 0.0), frames))
    return _ranked(tasks)


def _ts(value: Any) -> float:
    """An event's ``ts`` (µs); ValueError when it is not a timestamp (not finite, negative, absurd, text): the event
    is skipped."""
    number = columns.checked_float(value, columns.NON_NEGATIVE)
    if not isinstance(number, float):
        raise ValueError(value)
    return number


def _dur(value: Any) -> float:
    """An event's ``dur`` (µs, 0 when absent); ValueError when it is not a plausible duration: the event is skipped."""
    number = columns.checked_float(value, columns.DURATION_US) if value is not None else 0.0
    if not isinstance(number, float):
        raise ValueError(value)
    return number


#: Flows that hand work from the thread with the user's call stack to another: the task queue (Enqueue ->
#: Dequeue) and autograd (a forward op -> its backward function, whose kernels are the forward line's backward).
HAND_OFFS = ("async_task_queue", "fwdbwd")


def _handed_off(ops: dict, spans: dict, origins: dict, incoming: dict, thread: tuple, at: float) -> list:
    """The stacked ops around where a hand-off flow started, for a launch at ``at`` on ``thread``: the latest flow
    arriving on ``thread`` inside the outermost op that holds the launch."""
    holding = [span for span in spans.get(thread, ()) if span[0] <= at <= span[1]]
    if not holding:
        return []
    outer = min(span[0] for span in holding)
    for ts, flow in sorted((item for item in incoming.get(thread, ()) if outer <= item[0] <= at), reverse=True):
        origin = origins.get(flow)
        found = _around(ops, origin[:2], origin[2]) if origin else []
        if found:
            return found
    return []


def _around(ops: dict, thread: tuple, at: float) -> list[tuple[float, float, str]]:
    """The ops with a call stack on ``thread`` whose span holds ``at``."""
    return [op for op in ops.get(thread, ()) if op[0] <= at <= op[1]]


def _ranked(tasks) -> dict[str, list[dict[str, Any]]]:
    """Per op type, its launches' user-code stacks (``(op type, µs, frames innermost first)`` each) with their
    time and count, the most time first, TOP_STACKS of them."""
    grouped: dict[str, dict[tuple[str, ...], list[float]]] = defaultdict(dict)
    for op, time_us, frames in tasks:
        mine = tuple(user_frames(frames)[:TOP_FRAMES])
        if mine:
            total = grouped[op].setdefault(mine, [0.0, 0])
            total[0] += time_us
            total[1] += 1
    found = {}
    for op, stacks in grouped.items():
        best = sorted(stacks.items(), key=lambda item: (-item[1][0], item[0]))[:TOP_STACKS]
        found[op] = [{"where": frames[0], "frames": list(frames), "time_us": round(time_us, 3), "count": count}
                     for frames, (time_us, count) in best]
    return found
