"""Reader for ``msprof op simulator`` output: ``OPPROF_*/simulator/core<N>.<sub>/`` CSVs and ``trace.json``.

Per simulated sub-core (``core0.cubecore0``, ``core1.veccore0`` ...) it reads
``*_instr_exe*.csv`` (one row per static instruction, quoted ``detail``, no trailing comma) and the
Chrome trace: per-core ``trace.json`` (2025, ``schemaVersion`` 1, one numeric ``pid`` per pipe named
by ``process_name`` metadata) or the merged ``simulator/trace.json`` (2026, ``schemaVersion`` 2,
``pid`` = core name, ``tid`` = pipe name). ``ts``/``dur`` are µs floats (FORMATS.md §2.4).

Per-pipe busy time of a core = length of the union of its X intervals on that pipe (issue slots
overlap, so plain sums would double count); a core's span = last end - first start; the kernel
time = the longest core span, or longer when a sub-core without trace events ran longer.

Sub-cores without a trace (the per-core trace.json of a busy core is often dropped: it runs to
megabytes) are timed from ``dump/core<N>_summary_log``. That log is plain text, one section per
sub-core of AI Core N that finished, in order of completion, naming the core number but not the
sub-core (real catlass 2025, three sections for core0 = cube + two vector sub-cores)::

    kernal total ticks : 64101
    system total ticks : 75974
    ++++core: 0, start: 11873, tick: 75975, kernal: 0, blkID 0 of blkdim 20, streamId 0, ... done++++.

``kernal total ticks`` = ``tick`` - ``start`` - 1 are simulated clock cycles (``start`` 11869 at
~1850 MHz = 6.41 µs, where that core's first trace event lies). An untraced sub-core of core N
therefore ran at most the longest section of its log, and the kernel ran at least that long (the
section is some sub-core of the same kernel), so the kernel time is raised to it. The
instr_exe ``cycles`` can not stand in: they sum per-instruction latencies of overlapping
instructions (26,655 cycles on a core whose trace spans 1.33 µs = ~2,460 cycles).

Ticks become µs with the simulated clock the files carry: the median ``cycles / running_time(us)``
of instr_exe rows with at least ``MIN_RUNNING_TIME_US`` (``running_time(us)`` is rounded to
0.01 µs and 0 on cores with a trace; 1,851.8 MHz on the catlass run, where single-issue
instructions also give cycles / trace ``dur`` = 1,850 MHz). With no such rows, or no log for an
untraced core, or fewer core folders than the block dim needs (a mix / cube kernel runs one AI Core
per block, a vector-only one up to two vector sub-cores per core), the kernel time is a lower
bound: ``kernel_time_complete`` is False and a "cannot judge kernel time" note says why.

One KernelTable row (``name`` = ``op_type`` = the OPPROF folder name, since the simulator records
no kernel name; ``task_type`` vector / cube / mix from the sub-cores present) and
``RawProfile.kernel_detail``:

* ``simulator``: True; ``trace_schema``: 1, 2 or None; ``kernel_time_us``; ``slowest_core``;
  ``block_dim``: from ``dump/core*_summary_log`` (``blkID 0 of blkdim 20``) or None;
  ``kernel_time_complete``: False when the kernel time is only a lower bound, and then
  ``kernel_time_gap``: why; ``clock_mhz`` (None when the files carry none); ``summary_log``: the
  log sections [{"core", "start", "end", "ticks", "block_dim"}];
* ``cores``: {core: {"kind": "cube"|"vector", "span_us", "start_us", "end_us", "pipe_busy_us":
  {PIPE: µs}, "pipe_busy_ratio": {PIPE: busy/span}, "instructions", "pipe_cycles": {PIPE: cycles
  from instr_exe}, "hot_instructions": [...], "has_trace": bool, and for untraced cores with a log
  "log_ticks": [ticks of its core's sections], "time_bound_us"}} -- PIPE is the simulator's
  name (SCALAR, SCALARLDST, VECTOR, CUBE, MTE1, MTE2, MTE3, FIXP, FLOWCTRL, CACHEMISS, ...);
* ``pipe_ratio``: {PIPE_KEY: mean busy ratio over the cores of that side} (CUBE -> aic_cube,
  VECTOR -> aiv_vec, MTE2 -> aic_mte2 / aiv_mte2, SCALAR+SCALARLDST -> aic_scalar / aiv_scalar ...);
* ``hot_instructions``: the ``HOT_INSTRUCTIONS`` rows with most cycles over all cores, each
  {"core", "instr", "addr", "pipe", "call_count", "cycles", "running_time_us"};
* ``block_time_us`` / ``block_ids``: {"cube"|"vector": spans / core numbers} of traced cores, for the
  sides whose cores all have a trace.

What the simulator cannot tell is noted: the device Task Duration (launch overhead, real memory
latency), AI CPU use and communication.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Iterable

from opprof_advisor.core.errors import MalformedProfile, UnknownFormat
from opprof_advisor.core.i18n import M_, N_, Message, join_messages
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile
from opprof_advisor.readers.layouts import CORE_DIR, core_dirs, find_simulator_dir, is_msopprof_simulator
from opprof_advisor.core.sidefile import SideFileError, open_regular, read_text
from opprof_advisor.readers import columns
from opprof_advisor.core.units import TEXT as U

#: trace.json and *_instr_exe.csv above this are refused (json.load needs several times the size in memory).
MAX_TRACE_BYTES = 1024 ** 3

FORMAT = "msopprof-simulator"
HOT_INSTRUCTIONS = 10

_BLOCK_DIM = re.compile(r"blkdim\s+(\d+)")
_LOG_TICKS = re.compile(r"kernal total ticks\s*:\s*(\d+)")
_LOG_DONE = re.compile(r"core:\s*(\d+),\s*start:\s*(\d+),\s*tick:\s*(\d+).*?blkdim\s+(\d+)")
#: instr_exe rows shorter than this are left out of the clock estimate: running_time(us) has two decimals.
MIN_RUNNING_TIME_US = 1.0
#: simulator pipe -> PIPE_KEYS suffix; the prefix comes from the sub-core kind.
_PIPE_KEY = {"CUBE": "cube", "VECTOR": "vec", "SCALAR": "scalar", "SCALARLDST": "scalar", "MTE1": "mte1",
             "MTE2": "mte2", "MTE3": "mte3", "FIXP": "fixpipe", "FIXPIPE": "fixpipe"}


class MsopprofSimulatorReader:
    """``msprof op simulator`` output."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        """True for a folder holding ``simulator/core*.*`` sub-core folders (or such a folder itself)."""
        return is_msopprof_simulator(Path(path))

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        """Read the simulated cores under ``path``."""
        return read_msopprof_simulator(Path(path), progress)


def read_msopprof_simulator(path: Path, progress: Progress | None = None) -> RawProfile:
    """Parse simulator output into a RawProfile with per-core pipe busy times and hot instructions."""
    sim = find_simulator_dir(path)
    if sim is None:
        raise UnknownFormat("no simulator/core*.* folders found", path=path,
                            hint="point at the OPPROF_* folder written by `msprof op simulator`")
    cores_found = core_dirs(sim)
    bad: list[columns.BadNumbers] = []  # numbers out of range or not finite, per file: left out, with a note
    merged, schema = _read_merged_trace(sim / "trace.json", bad)
    cores: dict[str, dict[str, Any]] = {}
    for i, folder in enumerate(cores_found):
        intervals = merged.get(folder.name)
        if intervals is None and (folder / "trace.json").is_file():
            per_core, schema = _read_trace(folder / "trace.json", folder.name, bad)
            intervals = per_core.get(folder.name, {})
        cores[folder.name] = _core_summary(folder, intervals, bad)
        if progress is not None:
            progress(i + 1, len(cores_found))
    root = sim.parent
    log = read_summary_logs(root / "dump", bad)
    raw = _raw_profile(path, root, cores, schema, _block_dim(root / "dump", bad), log)
    raw.notes[:0] = [note for found in bad for note in found.notes()]
    return raw


# ------------------------------------------------------------------------------------------------
# trace.json
# ------------------------------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    """The trace document; a number JSON does not allow (NaN, 1e400) decodes as ``columns.Bad`` (its event is left
    out with a note, see ``_read_trace``)."""
    try:
        return json.loads(read_text(path, limit=MAX_TRACE_BYTES), **columns.LENIENT_JSON_NUMBERS)
    except OSError as exc:
        raise MalformedProfile(f"cannot read: {exc.strerror or exc}", path=path) from None
    except RecursionError:
        raise MalformedProfile("not valid JSON (JSON nested too deeply)", path=path,
                               hint="the simulator was interrupted; run `msprof op simulator` again") from None
    except ValueError as exc:  # SideFileError included: not a regular file, too large, not UTF-8
        raise MalformedProfile(f"not valid JSON ({exc})", path=path,
                               hint="the simulator was interrupted; run `msprof op simulator` again") from None


def _read_merged_trace(path: Path, bad: list | None = None) -> tuple[dict[str, dict[str, list]], int | None]:
    if not path.is_file():
        return {}, None
    return _read_trace(path, None, bad)


def _read_trace(path: Path, default_core: str | None, bad: list | None = None
                ) -> tuple[dict[str, dict[str, list]], int | None]:
    """{core: {pipe: [(start, end), ...]}} from a Chrome trace, whichever schema it uses; an event whose ts or dur is
    not finite or not plausible is left out (counted in ``bad``)."""
    data = _load_json(path)
    found = columns.BadNumbers(path)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise MalformedProfile("no traceEvents list", path=path, hint="run `msprof op simulator` again")
    schema = data.get("schemaVersion") if isinstance(data, dict) else None
    process, thread = _trace_names(events)
    out: dict[str, dict[str, list]] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        core, pipe = _locate(e, process, thread, default_core)
        if core is None:
            continue
        start = columns.checked_float(e.get("ts"), columns.NON_NEGATIVE)
        dur = columns.checked_float(e.get("dur", 0.0), columns.DURATION_US)
        for field, value, bounds in (("ts", start, columns.NON_NEGATIVE), ("dur", dur, columns.DURATION_US)):
            if isinstance(value, columns.Bad):
                found.add(f'"{field}"', None, value.cell, bounds, dropped=True)
        if not isinstance(start, float) or not isinstance(dur, float):
            continue  # absent, text (as before), or bad
        out.setdefault(core, {}).setdefault(pipe, []).append((start, start + dur))
    if found and bad is not None:
        bad.append(found)
    return out, schema


def _trace_names(events: Iterable[Any]) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    process: dict[Any, str] = {}
    thread: dict[tuple[Any, Any], str] = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M":
            name = (e.get("args") or {}).get("name")
            if e.get("name") == "process_name" and name:
                process[e.get("pid")] = str(name)
            elif e.get("name") == "thread_name" and name:
                thread[(e.get("pid"), e.get("tid"))] = str(name)
    return process, thread


def _locate(e: dict, process: dict, thread: dict, default_core: str | None) -> tuple[str | None, str]:
    """(core, pipe) of an event: 2026 merged traces name the core by pid, 2025 ones the pipe."""
    pid, tid = e.get("pid"), e.get("tid")
    pname = process.get(pid, pid if isinstance(pid, str) else None)
    if pname and CORE_DIR.match(str(pname)):
        pipe = tid if isinstance(tid, str) else thread.get((pid, tid), str(tid))
        return str(pname), re.sub(r"_\d+$", "", str(pipe))
    return default_core, str(pname if pname is not None else pid)


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by a set of [start, end) intervals."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        elif end > cur_end:
            cur_end = end
    if cur_end is not None:
        total += cur_end - cur_start
    return total


# ------------------------------------------------------------------------------------------------
# Per core
# ------------------------------------------------------------------------------------------------


def _core_summary(folder: Path, intervals: dict[str, list] | None, bad: list | None = None) -> dict[str, Any]:
    kind = "cube" if "cubecore" in folder.name else "vector"
    instr = _read_instr(folder, bad)
    summary: dict[str, Any] = {"kind": kind, "has_trace": bool(intervals), "instructions": len(instr)}
    cycles: dict[str, int] = {}
    for row in instr:
        cycles[row["pipe"]] = cycles.get(row["pipe"], 0) + row["cycles"]
    summary["pipe_cycles"] = cycles
    summary["hot_instructions"] = instr[:HOT_INSTRUCTIONS]
    summary["timed_rows"] = [r for r in instr if r["running_time_us"] >= MIN_RUNNING_TIME_US]
    if intervals:
        starts = [s for spans in intervals.values() for s, _ in spans]
        ends = [e for spans in intervals.values() for _, e in spans]
        span = max(ends) - min(starts)
        busy = {pipe: union_length(spans) for pipe, spans in intervals.items()}
        summary.update(start_us=min(starts), end_us=max(ends), span_us=span, pipe_busy_us=busy,
                       pipe_busy_ratio={p: (b / span if span > 0 else 0.0) for p, b in busy.items()})
    return summary


def _read_instr(folder: Path, bad: list | None = None) -> list[dict[str, Any]]:
    files = sorted(folder.glob("*_instr_exe*.csv"))
    if not files:
        return []
    path = files[0]
    try:
        with open_regular(path, MAX_TRACE_BYTES) as fh:
            rows = list(csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")))
    except (OSError, csv.Error, SideFileError) as exc:
        raise MalformedProfile(f"cannot read instruction CSV ({exc})", path=path) from None
    out = []
    found = columns.BadNumbers(path)  # a count, cycle count or time out of range or not finite: the row is left out
    for n, row in enumerate(rows, start=2):
        cells = {"call_count": (row.get("call_count") or 0, columns.COUNT),
                 "cycles": (row.get("cycles"), columns.NON_NEGATIVE),
                 "running_time(us)": (row.get("running_time(us)") or 0.0, columns.DURATION_US)}
        values = {column: columns.checked_float(cell, bounds) for column, (cell, bounds) in cells.items()}
        wrong = [column for column, value in values.items() if isinstance(value, columns.Bad)]
        if wrong:
            found.add(wrong[0], n, cells[wrong[0]][0], cells[wrong[0]][1], dropped=True)
            continue
        if "instr" not in row or None in values.values():
            raise MalformedProfile("instr or cycles column missing or not a number", path=path, line=n,
                                   hint="run `msprof op simulator` again") from None
        out.append({"instr": row["instr"], "addr": row.get("addr", ""), "pipe": row.get("pipe", ""),
                    "call_count": int(values["call_count"]), "cycles": int(values["cycles"]),
                    "running_time_us": values["running_time(us)"]})
    if found and bad is not None:
        bad.append(found)
    out.sort(key=lambda r: -r["cycles"])
    return out


#: Ticks, cores and block dims of a summary log have at most this many digits (1e18 ticks: 17 years at 2 GHz).
MAX_LOG_DIGITS = 18


def read_summary_logs(dump: Path, bad: list | None = None) -> list[dict[str, int]]:
    """Sections of ``dump/core*_summary_log``: [{"core", "start", "end", "ticks", "block_dim"}]; a section holding a
    number of more than MAX_LOG_DIGITS digits is left out (counted in ``bad``)."""
    sections: list[dict[str, int]] = []
    for log in sorted(dump.glob("core*_summary_log")):
        try:
            text = read_text(log, errors="replace")
        except (OSError, ValueError):
            continue
        ticks = None
        found = columns.BadNumbers(log)
        for n, line in enumerate(text.splitlines(), start=1):
            m = _LOG_TICKS.search(line) or _LOG_DONE.search(line)
            if m and any(len(g) > MAX_LOG_DIGITS for g in m.groups()):
                found.add("ticks" if m.re is _LOG_TICKS else "core / start / tick / blkdim", n,
                          max(m.groups(), key=len), (0.0, 10.0 ** MAX_LOG_DIGITS), dropped=True)
                ticks = None
            elif m and m.re is _LOG_TICKS:
                ticks = int(m.group(1))
            elif m:
                core, start, end, block_dim = (int(g) for g in m.groups())
                sections.append({"core": core, "start": start, "end": end, "block_dim": block_dim,
                                 "ticks": ticks if ticks is not None else end - start - 1})
                ticks = None
        if found and bad is not None:
            bad.append(found)
    return sections


def clock_mhz(cores: dict[str, dict[str, Any]]) -> float | None:
    """Simulated clock: median cycles / running_time(us) of instr_exe rows of at least MIN_RUNNING_TIME_US."""
    ratios = sorted(row["cycles"] / row["running_time_us"] for c in cores.values() for row in c.get("timed_rows", [])
                    if row["running_time_us"] >= MIN_RUNNING_TIME_US)
    if not ratios:
        return None
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2


def _block_dim(dump: Path, bad: list) -> int | None:
    """The block dim the first summary log records; a number out of the count range is left out, with a note."""
    for log in sorted(dump.glob("core*_summary_log")):
        try:
            m = _BLOCK_DIM.search(read_text(log, errors="replace"))
        except (OSError, ValueError):
            continue
        if m:
            found = columns.BadNumbers(log)
            number = found.number(m.group(1), "blkdim", None, columns.COUNT)
            if found:
                bad.append(found)
            return None if number is None else int(number)
    return None


# ------------------------------------------------------------------------------------------------
# RawProfile
# ------------------------------------------------------------------------------------------------


def _side_ratios(cores: dict[str, dict[str, Any]]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for c in cores.values():
        if not c["has_trace"]:
            continue
        prefix = "aic" if c["kind"] == "cube" else "aiv"
        per_key: dict[str, float] = {}
        for pipe, ratio in c["pipe_busy_ratio"].items():
            suffix = _PIPE_KEY.get(pipe)
            if suffix:
                key = f"{prefix}_{suffix}"
                per_key[key] = max(per_key.get(key, 0.0), ratio)  # SCALAR and SCALARLDST: the busier
        for key, ratio in per_key.items():
            sums.setdefault(key, []).append(ratio)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def _raw_profile(path: Path, root: Path, cores: dict[str, dict[str, Any]], schema: int | None,
                 block_dim: int | None, log: list[dict[str, int]]) -> RawProfile:
    clock = clock_mhz(cores)
    for c in cores.values():
        c.pop("timed_rows", None)
    _bound_untraced(cores, log, clock)
    timed = {name: c["span_us"] if c["has_trace"] else c.get("time_bound_us") for name, c in cores.items()}
    timed = {name: t for name, t in timed.items() if t is not None}
    slowest = max(timed, key=lambda n: timed[n]) if timed else None
    kernel_time = timed[slowest] if slowest else 0.0
    gaps = _time_gaps(cores, log, clock, block_dim)
    traced = {name: c for name, c in cores.items() if c["has_trace"]}
    kinds = {c["kind"] for c in cores.values()}
    task_type = "mix" if kinds == {"cube", "vector"} else kinds.pop()
    ratios = _side_ratios(cores)
    hot = sorted(({"core": name, **row} for name, c in cores.items() for row in c["hot_instructions"]),
                 key=lambda r: -r["cycles"])[:HOT_INSTRUCTIONS]
    detail: dict[str, Any] = {
        "simulator": True, "trace_schema": schema, "kernel_time_us": kernel_time, "slowest_core": slowest,
        "kernel_time_complete": not gaps, "clock_mhz": clock, "summary_log": log,
        "block_dim": block_dim, "cores": cores, "pipe_ratio": ratios, "hot_instructions": hot,
        "block_time_us": {}, "block_ids": {},
    }
    if gaps:
        detail["kernel_time_gap"] = join_messages(gaps, "; ")  # a Message: compare says it in Chinese
    blind = {c["kind"] for c in cores.values() if not c["has_trace"]}  # an untimed block hides any imbalance
    for name, c in traced.items():
        if c["kind"] in blind:
            continue
        detail["block_time_us"].setdefault(c["kind"], []).append(c["span_us"])
        detail["block_ids"].setdefault(c["kind"], []).append(int(CORE_DIR.match(name).group(1)))
    table = KernelTable(name=[root.name], op_type=[root.name], task_type=[task_type], duration_us=[kernel_time],
                        wait_us=[None], block_dim=[block_dim], mix_block_dim=[None], input_shapes=[""],
                        input_dtypes=[""], input_formats=[""], output_formats=[""], op_state=[None],
                        pipe={k: [v] for k, v in ratios.items()})
    table.present = {"name", "task_type", "duration_us"} | ({"pipe"} if ratios else set()) | \
        ({"block_dim"} if block_dim else set())
    return RawProfile(path=str(path), format=FORMAT, kernels=table, kernel_detail=detail,
                      versions={"trace_schema": str(schema)} if schema else {},
                      notes=_notes(cores, detail, gaps), extra={"op_type_derived": True})


def _core_number(name: str) -> int:
    return int(CORE_DIR.match(name).group(1))


def _bound_untraced(cores: dict[str, dict[str, Any]], log: list[dict[str, int]], clock: float | None) -> None:
    """Give each untraced sub-core the ticks of its core's log and, with a clock, their longest in µs."""
    for name, c in cores.items():
        ticks = [s["ticks"] for s in log if s["core"] == _core_number(name)]
        if c["has_trace"] or not ticks:
            continue
        c["log_ticks"] = ticks
        if clock:
            c["time_bound_us"] = max(ticks) / clock


def _time_gaps(cores: dict[str, dict[str, Any]], log: list[dict[str, int]], clock: float | None,
               block_dim: int | None) -> list[str]:
    """Why the kernel time is only a lower bound (empty when it is not)."""
    gaps = []
    untraced = [name for name, c in cores.items() if not c["has_trace"]]
    no_log = [n for n in untraced if "log_ticks" not in cores[n]]
    if no_log:
        gaps.append(Message(N_("{cores} has no trace events and no dump/core<N>_summary_log") if len(no_log) == 1
                            else N_("{cores} have no trace events and no dump/core<N>_summary_log"),
                            cores=", ".join(no_log)))
    no_clock = [n for n in untraced if "log_ticks" in cores[n] and "time_bound_us" not in cores[n]]
    if no_clock:
        gaps.append(M_("the ticks of {cores} cannot be turned into µs: no instr_exe row has a running_time(us) of "
                       "{limit:g} µs or more and the simulator clock is not known", cores=", ".join(no_clock),
                       limit=MIN_RUNNING_TIME_US))
    numbers = {_core_number(name) for name in cores}
    if block_dim:
        has_cube = any(c["kind"] == "cube" for c in cores.values())
        needed = block_dim if has_cube else -(-block_dim // 2)
        if len(numbers) < needed:
            held = "core" + ", core".join(map(str, sorted(numbers)))
            template = (N_("simulator/ holds {count} AI Core folder ({held}) of the {needed} that block dim "
                           "{block_dim} runs on") if len(numbers) == 1 else
                        N_("simulator/ holds {count} AI Core folders ({held}) of the {needed} that block dim "
                           "{block_dim} runs on"))
            gaps.append(Message(template, count=len(numbers), held=held, needed=needed, block_dim=block_dim))
    return gaps


def _notes(cores: dict[str, dict[str, Any]], detail: dict[str, Any], gaps: list[str]) -> list[str]:
    notes = [N_("cannot judge device task duration: the simulator reports simulated core time only, without "
                "launch overhead (profile on the device with `msprof op`)")]
    untraced = [name for name, c in cores.items() if not c["has_trace"]]
    if untraced:
        template = (N_("cannot judge pipe busy time of {cores}: no trace events for it (keep simulator/trace.json or "
                       "the per-core trace.json)") if len(untraced) == 1 else
                    N_("cannot judge pipe busy time of {cores}: no trace events for them (keep simulator/trace.json "
                       "or the per-core trace.json)"))
        notes.append(Message(template, cores=", ".join(untraced)))
    slowest = detail["slowest_core"]
    if slowest and not cores[slowest]["has_trace"]:
        c = cores[slowest]
        notes.append(M_("kernel time {time} from dump/core{number}_summary_log: {core} has no trace events, and its "
                        "core's longest sub-core ran {ticks:,} ticks at {clock:,.1f} MHz (median instr_exe cycles / "
                        "running_time(us))", time=U.time(detail["kernel_time_us"]), number=_core_number(slowest),
                        core=slowest, ticks=max(c["log_ticks"]), clock=detail["clock_mhz"]))
    if gaps:
        notes.append(M_("cannot judge kernel time: {gaps} — {time} is a lower bound (keep every simulator/core* "
                        "folder with its trace.json, and dump/core*_summary_log)", gaps=join_messages(gaps, "; "),
                        time=U.time(detail["kernel_time_us"])))
    return notes
