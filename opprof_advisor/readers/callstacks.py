"""Where in the user's code each hot operator was launched: Python call stacks of a ``with_stack=True`` capture.

The torch_npu DB links a device task to the Python frames that launched it (FORMATS.md §14; the join Huawei's
advisor makes in msprof-analyze ``advisor/dataset/stack/db_stack_finder.py``): ``TASK.connectionId`` =
``CONNECTION_IDS.connectionId``, ``CONNECTION_IDS.id`` = ``PYTORCH_API.connectionId``, ``PYTORCH_API.callchainId`` =
``PYTORCH_CALLCHAINS.id``, whose rows are the frames (``stack`` -> STRING_IDS ``"<file>(<line>): <function>"``)
by ``stackDepth`` (0 innermost). Frames of torch, torch_npu, the interpreter and its standard library are the
framework's; the rest are the user's (a model library such as torchvision counts as the user's code: it is what
they call). Tasks launched from the task-queue thread carry no chain: only those with one are tied to code.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from typing import Any

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
        task = tasks.setdefault(rowid, [strings[op], max(0, int(end or 0) - int(start or 0)) / 1000.0, []])
        task[2].append(strings[frame])
    grouped: dict[str, dict[tuple[str, ...], list[float]]] = defaultdict(dict)
    for op, time_us, frames in tasks.values():
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
