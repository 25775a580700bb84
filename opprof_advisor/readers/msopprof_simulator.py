"""Reader for ``msprof op simulator`` output: ``OPPROF_*/simulator/core<N>.<sub>/`` CSVs and ``trace.json``.

Per simulated sub-core (``core0.cubecore0``, ``core1.veccore0`` ...) it reads
``*_instr_exe*.csv`` (one row per static instruction, quoted ``detail``, no trailing comma) and the
Chrome trace: per-core ``trace.json`` (2025, ``schemaVersion`` 1, one numeric ``pid`` per pipe named
by ``process_name`` metadata) or the merged ``simulator/trace.json`` (2026, ``schemaVersion`` 2,
``pid`` = core name, ``tid`` = pipe name). ``ts``/``dur`` are µs floats (FORMATS.md §2.4).

Per-pipe busy time of a core = length of the union of its X intervals on that pipe (issue slots
overlap, so plain sums would double count); a core's span = last end - first start; the kernel
time = the longest core span.

One KernelTable row (``name`` = ``op_type`` = the OPPROF folder name, since the simulator records
no kernel name; ``task_type`` vector / cube / mix from the sub-cores present) and
``RawProfile.kernel_detail``:

* ``simulator``: True; ``trace_schema``: 1, 2 or None; ``kernel_time_us``; ``slowest_core``;
  ``block_dim``: from ``dump/core*_summary_log`` (``blkID 0 of blkdim 20``) or None;
* ``cores``: {core: {"kind": "cube"|"vector", "span_us", "start_us", "end_us", "pipe_busy_us":
  {PIPE: µs}, "pipe_busy_ratio": {PIPE: busy/span}, "instructions", "pipe_cycles": {PIPE: cycles
  from instr_exe}, "hot_instructions": [...], "has_trace": bool}} -- PIPE is the simulator's
  name (SCALAR, SCALARLDST, VECTOR, CUBE, MTE1, MTE2, MTE3, FIXP, FLOWCTRL, CACHEMISS, ...);
* ``pipe_ratio``: {PIPE_KEY: mean busy ratio over the cores of that side} (CUBE -> aic_cube,
  VECTOR -> aiv_vec, MTE2 -> aic_mte2 / aiv_mte2, SCALAR+SCALARLDST -> aic_scalar / aiv_scalar ...);
* ``hot_instructions``: the ``HOT_INSTRUCTIONS`` rows with most cycles over all cores, each
  {"core", "instr", "addr", "pipe", "call_count", "cycles"};
* ``block_time_us`` / ``block_ids``: {"cube"|"vector": spans / core numbers} of traced cores.

What the simulator cannot tell is noted: the device Task Duration (launch overhead, real memory
latency), AI CPU use and communication.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any, Iterable

from opprof_advisor.errors import MalformedProfile, UnknownFormat
from opprof_advisor.readers.base import KernelTable, Progress, RawProfile

FORMAT = "msopprof-simulator"
HOT_INSTRUCTIONS = 10

_CORE_DIR = re.compile(r"^core(\d+)\.(cubecore|veccore)(\d+)$")
_BLOCK_DIM = re.compile(r"blkdim\s+(\d+)")
#: simulator pipe -> PIPE_KEYS suffix; the prefix comes from the sub-core kind.
_PIPE_KEY = {"CUBE": "cube", "VECTOR": "vec", "SCALAR": "scalar", "SCALARLDST": "scalar", "MTE1": "mte1",
             "MTE2": "mte2", "MTE3": "mte3", "FIXP": "fixpipe", "FIXPIPE": "fixpipe"}


class MsopprofSimulatorReader:
    """``msprof op simulator`` output."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        """True for a folder holding ``simulator/core*.*`` sub-core folders (or such a folder itself)."""
        path = Path(path)
        return path.is_dir() and find_simulator_dir(path) is not None

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        """Read the simulated cores under ``path``."""
        return read_msopprof_simulator(Path(path), progress)


def find_simulator_dir(path: Path) -> Path | None:
    """The ``simulator`` folder at, inside, or one OPPROF_* level below ``path``."""
    for candidate in (path, path / "simulator", *sorted(path.glob("OPPROF_*/simulator"))):
        if candidate.is_dir() and _core_dirs(candidate):
            return candidate
    return None


def _core_dirs(sim: Path) -> list[Path]:
    try:
        dirs = [p for p in sim.iterdir() if p.is_dir() and _CORE_DIR.match(p.name)]
    except OSError:
        return []
    return sorted(dirs, key=_core_key)


def _core_key(p: Path) -> tuple[int, str, int]:
    m = _CORE_DIR.match(p.name)
    return (int(m.group(1)), m.group(2), int(m.group(3))) if m else (0, p.name, 0)


def read_msopprof_simulator(path: Path, progress: Progress | None = None) -> RawProfile:
    """Parse simulator output into a RawProfile with per-core pipe busy times and hot instructions."""
    sim = find_simulator_dir(path)
    if sim is None:
        raise UnknownFormat("no simulator/core*.* folders found", path=path,
                            hint="point at the OPPROF_* folder written by `msprof op simulator`")
    core_dirs = _core_dirs(sim)
    merged, schema = _read_merged_trace(sim / "trace.json")
    cores: dict[str, dict[str, Any]] = {}
    for i, folder in enumerate(core_dirs):
        intervals = merged.get(folder.name)
        if intervals is None and (folder / "trace.json").is_file():
            per_core, schema = _read_trace(folder / "trace.json", folder.name)
            intervals = per_core.get(folder.name, {})
        cores[folder.name] = _core_summary(folder, intervals)
        if progress is not None:
            progress(i + 1, len(core_dirs))
    root = sim.parent
    return _raw_profile(path, root, cores, schema, _block_dim(root / "dump"))


# ------------------------------------------------------------------------------------------------
# trace.json
# ------------------------------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        with path.open("rb") as fh:
            return json.load(fh)
    except OSError as exc:
        raise MalformedProfile(f"cannot read: {exc.strerror or exc}", path=path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedProfile(f"not valid JSON ({exc})", path=path,
                               hint="the simulator was interrupted; run `msprof op simulator` again") from None


def _read_merged_trace(path: Path) -> tuple[dict[str, dict[str, list]], int | None]:
    if not path.is_file():
        return {}, None
    return _read_trace(path, None)


def _read_trace(path: Path, default_core: str | None) -> tuple[dict[str, dict[str, list]], int | None]:
    """{core: {pipe: [(start, end), ...]}} from a Chrome trace, whichever schema it uses."""
    data = _load_json(path)
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
        try:
            start, dur = float(e["ts"]), float(e.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            continue
        out.setdefault(core, {}).setdefault(pipe, []).append((start, start + dur))
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
    if pname and _CORE_DIR.match(str(pname)):
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


def _core_summary(folder: Path, intervals: dict[str, list] | None) -> dict[str, Any]:
    kind = "cube" if "cubecore" in folder.name else "vector"
    instr = _read_instr(folder)
    summary: dict[str, Any] = {"kind": kind, "has_trace": bool(intervals), "instructions": len(instr)}
    cycles: dict[str, int] = {}
    for row in instr:
        cycles[row["pipe"]] = cycles.get(row["pipe"], 0) + row["cycles"]
    summary["pipe_cycles"] = cycles
    summary["hot_instructions"] = instr[:HOT_INSTRUCTIONS]
    if intervals:
        starts = [s for spans in intervals.values() for s, _ in spans]
        ends = [e for spans in intervals.values() for _, e in spans]
        span = max(ends) - min(starts)
        busy = {pipe: union_length(spans) for pipe, spans in intervals.items()}
        summary.update(start_us=min(starts), end_us=max(ends), span_us=span, pipe_busy_us=busy,
                       pipe_busy_ratio={p: (b / span if span > 0 else 0.0) for p, b in busy.items()})
    return summary


def _read_instr(folder: Path) -> list[dict[str, Any]]:
    files = sorted(folder.glob("*_instr_exe*.csv"))
    if not files:
        return []
    path = files[0]
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error) as exc:
        raise MalformedProfile(f"cannot read instruction CSV ({exc})", path=path) from None
    out = []
    for n, row in enumerate(rows, start=2):
        try:
            out.append({"instr": row["instr"], "addr": row.get("addr", ""), "pipe": row.get("pipe", ""),
                        "call_count": int(row.get("call_count") or 0), "cycles": int(float(row["cycles"]))})
        except (KeyError, TypeError, ValueError):
            raise MalformedProfile("instr or cycles column missing or not a number", path=path, line=n,
                                   hint="run `msprof op simulator` again") from None
    out.sort(key=lambda r: -r["cycles"])
    return out


def _block_dim(dump: Path) -> int | None:
    for log in sorted(dump.glob("core*_summary_log")):
        try:
            m = _BLOCK_DIM.search(log.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if m:
            return int(m.group(1))
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
                 block_dim: int | None) -> RawProfile:
    traced = {name: c for name, c in cores.items() if c["has_trace"]}
    slowest = max(traced, key=lambda n: traced[n]["span_us"]) if traced else None
    kernel_time = traced[slowest]["span_us"] if slowest else 0.0
    kinds = {c["kind"] for c in cores.values()}
    task_type = "mix" if kinds == {"cube", "vector"} else kinds.pop()
    ratios = _side_ratios(cores)
    hot = sorted(({"core": name, **row} for name, c in cores.items() for row in c["hot_instructions"]),
                 key=lambda r: -r["cycles"])[:HOT_INSTRUCTIONS]
    detail: dict[str, Any] = {
        "simulator": True, "trace_schema": schema, "kernel_time_us": kernel_time, "slowest_core": slowest,
        "block_dim": block_dim, "cores": cores, "pipe_ratio": ratios, "hot_instructions": hot,
        "block_time_us": {}, "block_ids": {},
    }
    for name, c in traced.items():
        detail["block_time_us"].setdefault(c["kind"], []).append(c["span_us"])
        detail["block_ids"].setdefault(c["kind"], []).append(int(_CORE_DIR.match(name).group(1)))
    table = KernelTable(name=[root.name], op_type=[root.name], task_type=[task_type], duration_us=[kernel_time],
                        wait_us=[None], block_dim=[block_dim], mix_block_dim=[None], input_shapes=[""],
                        input_dtypes=[""], input_formats=[""], output_formats=[""], op_state=[None],
                        pipe={k: [v] for k, v in ratios.items()})
    table.present = {"name", "task_type", "duration_us"} | ({"pipe"} if ratios else set()) | \
        ({"block_dim"} if block_dim else set())
    return RawProfile(path=str(path), format=FORMAT, kernels=table, kernel_detail=detail,
                      versions={"trace_schema": str(schema)} if schema else {},
                      notes=_notes(cores), extra={"op_type_derived": True})


def _notes(cores: dict[str, dict[str, Any]]) -> list[str]:
    notes = ["cannot judge device task duration: the simulator reports simulated core time only, without "
             "launch overhead (profile on the device with `msprof op`)",
             "cannot judge AI CPU fallback or communication: the simulator runs one kernel "
             "(collect a whole run with msprof or the torch_npu profiler)"]
    untraced = [name for name, c in cores.items() if not c["has_trace"]]
    if untraced:
        notes.append(f"cannot judge pipe busy time of {', '.join(untraced)}: no trace events for "
                     f"{'it' if len(untraced) == 1 else 'them'} (keep simulator/trace.json or the per-core trace.json)")
    if len(untraced) == len(cores):
        notes.append("cannot judge kernel time: no trace.json under simulator/ (keep the simulator's trace.json)")
    return notes
