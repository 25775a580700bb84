"""Timelines: torch_npu ``trace_view.json`` and system msprof ``msprof_<ts>.json`` (FORMATS.md §3.5, §4.4).

Users often share only the timeline. It is read only when no kernel table sits beside it
(kernel_details.csv, op_summary_*.csv or a DB win: they carry op types, units and pipe ratios).

What is taken from the Chrome-trace array (processes found by their ``process_name`` metadata):

* "Ascend Hardware" ``ph:"X"`` events = device tasks (name = kernel name, ``ts`` a string of µs,
  ``dur`` float µs, ``args["Task Type"]`` in the hardware vocabulary). Tasks that are not kernels
  are skipped (``NON_KERNEL_TASK_TYPES`` / ``NON_KERNEL_NAMES``): event record/wait, notify wait,
  write value, place holders and SDMA / PCIe memcpy. Why memcpy too: kernel_details.csv of the same
  run lists none of them (real msinsight level1: its 187 compute rows are exactly the timeline's
  AI_CORE + MIX_AIV + DSA_SQE tasks; its 72 SDMA, 112 Notify Wait, 112 Write Value tasks are the
  all-reduce's own sub-tasks), so counting them would double-count communication.
* "HCCL" ``X`` events on the "Group <n> Communication" threads = communication ops
  (``hcom_allReduce__586_0_1`` ...; the same rows kernel_details.csv labels HCCL). The "Plane <n>"
  threads hold their sub-tasks and are skipped. Without an HCCL process, ``hcom_*`` hardware tasks
  are the communication ops.
* "Overlap Analysis" threads Computing / Communication / Communication(Not Overlapped) / Free,
  summed into one step split (``extra["steps"]``, the same columns as step_trace_time.csv; on the
  level1 sample both agree to 0.01 µs). Stage is first to last of those events, as torch_npu
  computes it.

Unit: the timeline says ``AI_CORE`` for AI Vector kernels too (FORMATS.md §3.3), so only task types
that name the unit unambiguously are kept as ``task_type`` (``UNIT_TASK_TYPES``: AI CPU, DSA);
every other compute kernel has an unknown unit and the profile says so in a note.
Op type: derived from the kernel name (``readers.columns.op_type_from_name``: the last ``_`` token
without launch ids; on the two 2025 real kernel_details files it gives the Type column, or its
family, for every compute kernel; on the 2023 file for 463 of 591).
Wait time: the gap since the end of the previous kept task on the same stream (thread); on the
level1 sample this equals kernel_details' Wait Time for 178 of 187 kernels.

Memory: the file is decoded event by event (``json.JSONDecoder.raw_decode`` over 1 MiB chunks), and
only compact tuples of device-side events are kept, so memory follows the device tasks, not the
file size (the 635 KB real trace holds 3,670 events of which 276 are device tasks). Files above
``MAX_TIMELINE_BYTES`` are refused with one line: parsing them would take minutes.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from opprof_advisor.core import steps
from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.i18n import N_
from opprof_advisor.core.models import StepSplit
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile
from opprof_advisor.readers.csvfile import read_head
from opprof_advisor.readers.layouts import MSPROF_TIMELINE, OUTPUT_DIR, TORCH_TIMELINE, is_timeline, timeline_files
from opprof_advisor.readers.msprof_text import read_device_info
from opprof_advisor.core.sidefile import dig
from opprof_advisor.readers.torch_npu_text import read_profiler_info  # versions read one way only
from opprof_advisor.readers import columns
from opprof_advisor.readers.columns import op_type_from_name

#: Largest timeline read. Measured here: a 100 MB trace_view.json (455k events) in 1.4 s wall and
#: 77 MB peak RSS (json.load alone needs 463 MB), so 1 GiB is ~15 s; anything larger (or a 2 GB
#: sparse file) is refused before a byte is decoded.
MAX_TIMELINE_BYTES = 1 << 30
READ_CHUNK = 1 << 20
#: Longest single event accepted; a longer one means a corrupt file, not a trace event.
MAX_EVENT_CHARS = 16 << 20
#: The next character that is not a JSON blank (between events).
_NOT_BLANK = re.compile(r"[^ \t\r\n]")

HARDWARE, HCCL, OVERLAP = "Ascend Hardware", "HCCL", "Overlap Analysis"
_WANTED = frozenset({HARDWARE, HCCL, OVERLAP})
#: Hardware task types that are not kernels (upper-cased; FORMATS.md §3.3 hardware vocabulary).
NON_KERNEL_TASK_TYPES = frozenset({
    "EVENT_RECORD_SQE", "EVENT_WAIT_SQE", "NOTIFY WAIT", "NOTIFY_WAIT_SQE", "NOTIFY_RECORD_SQE",
    "WRITE VALUE", "WRITE_VALUE_SQE", "PLACE_HOLDER_SQE", "SDMA", "SDMA_SQE", "PCIE_DMA_SQE",
})
#: Task names that are not kernels, for timelines whose Task Type is only "Other" (2024 torch_npu).
NON_KERNEL_NAMES = frozenset({
    "MEMCPY_ASYNC", "EVENT_RECORD", "EVENT_WAIT", "Notify Wait", "Notify Record", "Write Value", "SDMA",
    "PROFILING_ENABLE", "PROFILING_DISABLE",
})
#: Hardware task types that say the unit without doubt -> KernelTable.task_type label.
UNIT_TASK_TYPES = {"AI_CPU": "AI_CPU", "KERNEL_AICPU": "AI_CPU", "DSA_SQE": "DSA_SQE"}
COLLECT = "collect kernel_details.csv with the torch_npu profiler / msprof --export"
UNIT_NOTE = N_("cannot judge the unit of compute kernels (AI Core / AI Vector / mix): the timeline labels AI Vector "
               "kernels AI_CORE too (collect kernel_details.csv with the torch_npu profiler / msprof --export)")
DERIVED_NOTE = N_("op types were derived from kernel names: the timeline has no Type column (collect "
                  "kernel_details.csv with the torch_npu profiler / msprof --export)")

#: One kept event: (pid, tid, name, ts string, dur µs, hardware task type).
_Event = tuple[int, int, str, str, float, str]


# ----------------------------------------------------------------------------------------------
# Finding the timeline
# ----------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------
# Streaming the events
# ----------------------------------------------------------------------------------------------


def check_size(path: Path) -> int:
    """Size of a timeline file; raise MalformedProfile when it is empty, binary or above the cap."""
    size, head = read_head(path, 64 * 1024)
    if size > MAX_TIMELINE_BYTES:
        raise MalformedProfile(f"timeline of {size / 2**30:.1f} GB is above the {MAX_TIMELINE_BYTES >> 30} GB "
                               "this reader parses", path=path, hint=COLLECT)
    if b"\x00" in head:
        raise MalformedProfile("binary data, not a JSON timeline", path=path, hint=COLLECT)
    return size


def iter_events(path: Path, progress: Progress | None = None, done: int = 0, total: int = 0,
                lines: list | None = None) -> Iterator[dict]:
    """Yield the events of a Chrome-trace JSON array one by one; raise MalformedProfile naming file:line.

    With ``lines`` (a list), ``lines[0]`` is set to a function giving the line the last event yielded starts on."""
    decoder = json.JSONDecoder(**columns.LENIENT_JSON_NUMBERS)  # NaN ... : columns.Bad, noted per event
    with path.open("r", encoding="utf-8-sig", errors="strict") as handle:
        reader = _Chunks(handle, path)
        if lines is not None:
            lines[:] = [reader.event_line]
        reader.expect("[")
        while True:
            char = reader.next_char()
            if char == "]":
                return
            if char == ",":
                reader.pos += 1
                continue
            if char is None:
                raise reader.problem("truncated: the JSON array is not closed")
            event = reader.decode(decoder)
            if isinstance(event, dict):
                yield event
            if progress is not None and reader.fresh:
                reader.fresh = False
                progress(done + min(reader.read_chars, total - done), total)


class _Chunks:
    """A growing text window over a file with the line count of what was dropped (for messages)."""

    def __init__(self, handle, path: Path):
        self.handle, self.path = handle, path
        self.buf, self.pos, self.line, self.eof = "", 0, 1, False
        self.start = 0  # where the last decoded event starts in ``buf``
        self.read_chars, self.fresh = 0, False

    def more(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.handle.read(READ_CHUNK)
        except UnicodeDecodeError as exc:
            raise MalformedProfile(f"not UTF-8 text ({exc.reason})", path=self.path,
                                   hint="re-export the timeline") from None
        if not chunk:
            self.eof = True
            return False
        if self.pos:
            self.line += self.buf.count("\n", 0, self.pos)
            self.buf = self.buf[self.pos:]
            self.pos = 0
        self.buf += chunk
        self.read_chars += len(chunk)
        self.fresh = True
        return True

    def next_char(self) -> str | None:
        while True:
            # a regex skips the blanks between events at C speed (100 MB of them took 12 s char by char)
            found = _NOT_BLANK.search(self.buf, self.pos)
            if found is not None:
                self.pos = found.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
            if not self.more():
                return None

    def expect(self, char: str) -> None:
        if self.next_char() != char:
            raise self.problem("not a trace event array (expected the file to start with '[')")
        self.pos += 1

    def event_line(self) -> int:
        """The line the last decoded event starts on (counted only when asked: a note's line)."""
        return self.line + self.buf.count("\n", 0, self.start)

    def decode(self, decoder: json.JSONDecoder) -> object:
        while True:
            try:
                self.start = self.pos
                value, end = decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise self.problem("an event is nested too deeply to be a trace event") from None
            except json.JSONDecodeError as exc:
                # the event may continue in the next chunk; only a complete window is an error
                if len(self.buf) - self.pos < MAX_EVENT_CHARS and self.more():
                    continue
                self.pos = min(exc.pos, len(self.buf))
                raise self.problem(f"not valid JSON ({exc.msg})") from None
            self.pos = end
            return value

    def problem(self, message: str) -> MalformedProfile:
        line = self.line + self.buf.count("\n", 0, self.pos)
        return MalformedProfile(message, path=self.path, line=line,
                                hint="the file is cut or edited; re-export it, or " + COLLECT)


# ----------------------------------------------------------------------------------------------
# Selecting device tasks
# ----------------------------------------------------------------------------------------------


class _Collected:
    """Device-side X events grouped by pid, and the process / thread names.

    The ``ts`` and ``dur`` of each kept event are checked where they are read: an event whose start is not a
    plausible timestamp or whose duration is not finite, negative or over MAX_DURATION_US is left out, counted
    in ``bad`` (one note per field names the first one's line)."""

    def __init__(self) -> None:
        self.process: dict[int, str] = {}
        self.thread: dict[tuple[int, int], str] = {}
        self.events: dict[int, list[_Event]] = defaultdict(list)
        self.bad: dict[Path, columns.BadNumbers] = {}
        self.file: Path | None = None
        self.line = lambda: None  # the line of the event being added (set by the reader)

    def add(self, event: dict) -> None:
        phase, pid = event.get("ph"), event.get("pid")
        if not isinstance(pid, (int, str)):
            return  # a list or object as pid: not an event of any process
        if phase == "M":
            self._add_meta(event, pid)
        elif phase == "X":
            # host events (Python cpu_op, python_function, enqueue ...) carry a ``cat``; device
            # tasks do not (real samples): skipping them early keeps memory to the device side.
            known = self.process.get(pid)
            if known is None and "cat" in event or known is not None and known not in _WANTED:
                return
            ts, dur = _timestamp(event.get("ts")), event.get("dur")
            if isinstance(ts, columns.Bad):
                self._bad("ts", ts.cell, columns.NON_NEGATIVE)
                return
            checked = columns.checked_float(dur, columns.DURATION_US)
            if isinstance(checked, columns.Bad):
                self._bad("dur", checked.cell, columns.DURATION_US)
                return
            ts = ts or ""  # no ts: "a task has a non-numeric ts" if the task is kept
            args = event.get("args")
            args = args if isinstance(args, dict) else {}
            self.events[pid].append((pid, event.get("tid"), str(event.get("name", "")), ts,
                                     checked if isinstance(checked, float) else dur,  # "5.0" as 5.0
                                     str(args.get("Task Type", ""))))

    def _bad(self, field: str, value: object, bounds: tuple[float, float]) -> None:
        bad = self.bad.setdefault(self.file, columns.BadNumbers(self.file))
        bad.add(f'"{field}"', self.line() if f'"{field}"' not in bad.found else None, value, bounds, dropped=True)

    def notes(self) -> list[str]:
        return [note for bad in self.bad.values() for note in bad.notes()]

    def _add_meta(self, event: dict, pid: object) -> None:
        name = dig(event, "args", "name")
        if event.get("name") == "process_name" and isinstance(name, str):
            self.process[pid] = name
            if name not in _WANTED:
                self.events.pop(pid, None)
        elif event.get("name") == "thread_name" and isinstance(name, str):
            self.thread[(pid, event.get("tid"))] = name

    def of(self, process: str) -> list[_Event]:
        return [e for pid, name in self.process.items() if name == process for e in self.events.get(pid, [])]


_TIMESTAMP = re.compile(r"\d{1,18}(?:\.\d*)?")


def _timestamp(value: object) -> str | columns.Bad | None:
    """An event's ``ts`` as the decimal text ``_ns`` reads (µs, a string or a number); None when absent,
    ``columns.Bad`` when it is not a plausible timestamp (not finite, negative, over columns.MAX_FIGURE)."""
    if value is None or isinstance(value, columns.Bad):
        return value
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and _TIMESTAMP.fullmatch(text) and text.isascii():
        return text  # the usual case, kept exact
    number = columns.checked_float(value, columns.NON_NEGATIVE)
    if number is None:  # text (or a list ...): not a timestamp at all
        return columns.Bad(value) if value != "" else None
    return number if isinstance(number, columns.Bad) else f"{number:.3f}"


def _ns(ts: str) -> int:
    """``"1736408883704643.212"`` µs -> integer ns (float64 would lose ~0.25 µs at this magnitude)."""
    whole, _, frac = ts.strip().partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def _is_kernel(event: _Event) -> bool:
    return event[5].upper() not in NON_KERNEL_TASK_TYPES and event[2] not in NON_KERNEL_NAMES


def select_kernels(collected: _Collected, path: Path) -> tuple[list[_Event], list[_Event]]:
    """(compute kernels, communication ops) by the rules in the module docstring."""
    hardware = [e for e in collected.of(HARDWARE) if _is_kernel(e)]
    comm = [e for e in collected.of(HCCL) if "Communication" in collected.thread.get((e[0], e[1]), "")]
    if comm:
        hardware = [e for e in hardware if not e[2].startswith("hcom_")]
    else:
        comm = [e for e in hardware if e[2].startswith("hcom_")]
        hardware = [e for e in hardware if not e[2].startswith("hcom_")]
    for event in hardware + comm:
        if isinstance(event[4], bool) or not isinstance(event[4], (int, float)):
            raise MalformedProfile(f"task {event[2]!r} has no valid duration (dur={event[4]!r})", path=path,
                                   hint="re-export the timeline, or " + COLLECT)
    return hardware, comm


def _table(compute: list[_Event], comm: list[_Event], path: Path) -> KernelTable:
    # rows in start-time order (the chain checks read neighbours); waits per (side, stream)
    try:
        timed = sorted([(_ns(e[3]), False, e) for e in compute] + [(_ns(e[3]), True, e) for e in comm],
                       key=lambda item: item[0])
    except ValueError:
        raise MalformedProfile("a task has a non-numeric ts", path=path, hint=COLLECT) from None
    columns: dict[str, list] = {name: [] for name in ("name", "op_type", "task_type", "duration_us", "start_us",
                                                      "wait_us")}
    previous_end: dict[tuple[bool, object], int] = {}
    for start, comm_side, event in timed:
        end = previous_end.get((comm_side, event[1]))
        previous_end[(comm_side, event[1])] = start + round(event[4] * 1000)
        columns["name"].append(event[2])
        columns["op_type"].append(torch_op_type(event[2]))
        columns["task_type"].append("COMMUNICATION" if comm_side else UNIT_TASK_TYPES.get(event[5].upper(), ""))
        columns["duration_us"].append(float(event[4]))
        columns["start_us"].append(start / 1000.0)
        columns["wait_us"].append(None if end is None else max(0, start - end) / 1000)
    return KernelTable(present={"wait_us", "start_us"}, **columns)


def torch_op_type(name: str) -> str:
    """Op type of a kernel name (the builder's rule: ``aclnnMm_MatMulCommon_MatMulV2`` -> MatMulV2)."""
    return op_type_from_name(name)


def _step_split(collected: _Collected) -> StepSplit | None:
    """The "Overlap Analysis" events summed into one step (torch_npu's own rule for step_trace_time)."""
    pids = [pid for pid, name in collected.process.items() if name == OVERLAP]
    totals: dict[str, float] = {}
    first, last = None, None
    for pid in pids:
        for event in collected.events.get(pid, []):
            name = collected.thread.get((pid, event[1]))
            if name is None or not isinstance(event[4], (int, float)):
                continue
            totals[name] = totals.get(name, 0.0) + event[4]
            start = _ns(event[3]) / 1000.0
            first = start if first is None else min(first, start)
            last = start + event[4] if last is None else max(last, start + event[4])
    if not totals.keys() & {"Computing", "Communication(Not Overlapped)"}:
        return None
    totals.setdefault("Stage", (last or 0.0) - (first or 0.0))
    return steps.from_trace_row(None, totals)


# ----------------------------------------------------------------------------------------------
# The readers
# ----------------------------------------------------------------------------------------------


class TimelineReader:
    """A torch_npu ``trace_view.json`` or msprof ``msprof_*.json`` timeline with no kernel table beside it."""

    name = "torch-npu-timeline"
    torch_format = TORCH_TIMELINE
    msprof_format = MSPROF_TIMELINE

    def detect(self, path: Path) -> bool:
        return is_timeline(path)

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        fmt, files = timeline_files(path)
        files = [f for f in files if f.stat().st_size] or files  # 0-byte slice placeholders
        sizes = [check_size(f) for f in files]
        collected, done, lines = _Collected(), 0, []
        for file, size in zip(files, sizes):
            collected.file = file
            for event in iter_events(file, progress, done, sum(sizes), lines):
                collected.line = lines[0]
                collected.add(event)
            done += size
        compute, comm = select_kernels(collected, files[0])
        if not compute and not comm:
            if collected.bad:
                bad = next(iter(collected.bad.values()))
                raise MalformedProfile(f"no device task with plausible times: {bad.summary()}", path=bad.path,
                                       line=bad.first_line(), hint="re-export the timeline, or " + COLLECT)
            raise MalformedProfile("no device kernels in the timeline (no \"Ascend Hardware\" tasks)", path=files[0],
                                   hint="profile with ProfilerActivity.NPU, or " + COLLECT)
        raw = RawProfile(path=str(path), format=fmt, kernels=_table(compute, comm, files[0]))
        raw.notes.extend(collected.notes())
        raw.notes.extend([DERIVED_NOTE, UNIT_NOTE])
        raw.extra["op_type_derived"] = True
        raw.extra["timeline_task_types"] = dict(Counter(e[5] for e in compute))
        split = _step_split(collected)
        if split is not None:
            raw.extra["steps"], raw.extra["step_source"] = [split], "timeline Overlap Analysis"
        root = _run_root(files[0])
        raw.versions.update(read_profiler_info(root, raw.notes))
        counts, raw.freq_mhz = read_device_info(root)
        raw.core_counts.update(counts)
        if len(files) > 1:
            raw.extra["files"] = [str(f) for f in files]
        return raw


def _run_root(file: Path) -> Path:
    """The ``*_ascend_pt`` or ``PROF_*`` folder a timeline file belongs to (for profiler_info / info.json)."""
    for parent in file.parents:
        if parent.name.startswith("PROF_") or parent.name.endswith(("_ascend_pt", "_ascend_ms")):
            return parent
    return file.parent.parent if file.parent.name in (OUTPUT_DIR, "mindstudio_profiler_output") else file.parent
