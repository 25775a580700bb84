"""Reader for ``msprof op`` (msOpProf) device output: ``OPPROF_*/OpBasicInfo*.csv`` + ``PipeUtilization*.csv``.

Layouts (FORMATS.md §1.1): single operator (CSVs directly in ``OPPROF_*``), several operators
(``OPPROF_*/<OpName>/<n>/`` with timestamped names such as ``OpBasicInfo_20240603022812284.csv``)
and several devices (``OPPROF_*/device<N>/<OpName>/<n>/``). Every line of every CSV ends with a
comma; missing values are ``N/A`` (early 2025) or ``NA``; PipeUtilization has three header
generations (2025-03, 2025-12 with ``*_active_bw``, 2026 with scalar-stall columns) plus the
``MemoryDetail`` and 310P variants -- columns are found by name only.

One KernelTable row per launch: ``name`` = ``op_type`` = Op Name (msOpProf records no op type;
``extra["op_type_derived"]`` says so), ``task_type`` = Op Type (``vector`` / ``cube`` / ``mix``),
``duration_us`` = Task Duration(us), Block Dim / Mix Block Dim, and ``pipe`` = the mean ratio of
each pipe over the sub-cores that ran it.

``RawProfile.kernel_detail`` (one launch; with several launches the longest one, and all of them
under ``"launches"``):

* ``kernel`` (Op Name), ``op_type`` (vector/cube/mix), ``task_duration_us``, ``block_dim``,
  ``mix_block_dim`` (None unless mix), ``chip`` (``Run Soc Version`` of dump/op_basic_info.txt or
  None), ``current_freq_mhz``, ``rated_freq_mhz``, ``device_id``, ``source`` (the OpBasicInfo path);
* ``pipe_header``: PipeUtilization generation (``2025-03``, ``2025-12``, ``2026``, ``310P``, with
  ``+MemoryDetail`` when those columns are appended), or None when the file is absent;
* ``pipe_ratio``: {PIPE_KEY: highest ratio on the sub-cores of its side that end last (within
  CRITICAL_SHARE of the longest)} (``pipe_ratio_mean``: the time-weighted mean over every row of the side;
  ``busiest_sub_core``: {side: block, sub-core, time, how many are critical}) (``aic_*`` over cube rows,
  ``aiv_*`` over vector rows); ``pipe_ratio_max``: {PIPE_KEY: max over those rows};
* ``bound_pipe``: {"cube": PIPE_KEY, "vector": PIPE_KEY} -- the pipe with the highest mean ratio
  on each side that ran; ``bound``: the highest of all (key and ratio: ``{"pipe", "ratio"}``);
* ``block_time_us``: {"cube": [...], "vector": [...]} -- ``aic_time(us)`` of each cube row and
  ``aiv_time(us)`` of each vector row, in file order; ``block_ids`` and ``sub_block_ids`` give
  the block_id / sub_block_id (``cube0``, ``vector0``, ``vector1``) of every value;
* ``imbalance``: {"cube"|"vector": {"rows", "mean_us", "max_us", "min_us", "max_over_min"
  (None when min is 0), "max_over_mean", "cv" (population std / mean), "slowest": {"block_id",
  "sub_block_id", "time_us"}, "fastest": {...}}};
* ``metric_files``: names of the metric CSVs found beside OpBasicInfo.

``RawProfile.core_counts`` comes from ``readers.chips`` for the SoC named in op_basic_info.txt
(msOpProf writes no core count). What msOpProf cannot tell is noted, not guessed: AI CPU use and
communication (one kernel only).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import MalformedProfile, ProfileError, UnknownFormat
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.core.i18n import N_
from opprof_advisor.readers import columns
from opprof_advisor.readers.base import PIPE_KEYS, KernelTable, Progress, RawProfile
from opprof_advisor.readers.chips import core_counts_for
from opprof_advisor.readers.layouts import find_launch_dirs, is_basic_info, is_msopprof_device
from opprof_advisor.core.sidefile import SideFileError, open_regular, read_bytes, read_text

FORMAT = "msopprof-device"

_METRIC = re.compile(r"^([A-Za-z0-9]+?)(?:_\d+)?\.csv$")
_OPPROF = re.compile(r"^OPPROF_\d{14}_[A-Z]{16}$")
#: A msOpProf CSV holds one row per launch or per (block, sub-core): a few MB at most. Larger is refused.
MAX_MSOPPROF_CSV_BYTES = 512 * 1024 * 1024
_MISSING = frozenset({"", "N/A", "NA", "n/a", "na"})  # ("nan" is a number that is not finite: noted)
_PIPES = ("cube", "vec", "scalar", "mte1", "mte2", "mte3", "fixpipe")
#: A side (cube or vector sub-cores) counts as working when its slowest sub-core is busy for at least
#: this share of the other side's slowest (profile_builder judges idle sides the same way).
WORKING_SIDE_SHARE = 0.25


class MsopprofDeviceReader:
    """``msprof op`` device-mode output (one or several kernel launches)."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        """True for an OpBasicInfo CSV, or a folder with one within a few levels."""
        return is_msopprof_device(Path(path))

    def read(self, path: Path, progress: Progress | None = None) -> RawProfile:
        """Read every launch under ``path`` into one RawProfile."""
        return read_msopprof_device(Path(path), progress)


def read_msopprof_device(path: Path, progress: Progress | None = None) -> RawProfile:
    """Parse an OPPROF folder (or one OpBasicInfo CSV) into a RawProfile."""
    dirs = [path.parent] if path.is_file() else list(find_launch_dirs(path))
    if not dirs:
        raise UnknownFormat("no OpBasicInfo*.csv found", path=path,
                            hint="point at the OPPROF_* folder written by `msprof op`")
    if path.is_dir():
        _refuse_several_runs(path, dirs)
    details: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, folder in enumerate(dirs):
        basics = [path] if path.is_file() else sorted(p for p in folder.iterdir() if is_basic_info(p.name))
        for basic in basics:
            details.extend(read_launch(basic, notes))
        if progress is not None:
            progress(i + 1, len(dirs))
    return _raw_profile(path, details, notes)


def _refuse_several_runs(path: Path, dirs: list[Path]) -> None:
    """Launches of two or more ``msprof op`` runs (OPPROF_* folders) under ``path`` are not one profile: a "before"
    and an "after" of one kernel would be summed. Refuse, naming each run with its longest kernel."""
    runs: dict[Path, list[Path]] = {}
    for folder in dirs:
        parts = folder.relative_to(path).parts if folder != path else ()
        top = next((index for index, part in enumerate(parts) if _OPPROF.match(part)), None)
        runs.setdefault(path.joinpath(*parts[:top + 1]) if top is not None else path, []).append(folder)
    if len(runs) < 2:
        return
    named = []
    for run, folders in sorted(runs.items()):
        try:
            launches = [launch for folder in folders for basic in sorted(folder.iterdir()) if is_basic_info(basic.name)
                        for launch in read_launch(basic)]
            longest = max(launches, key=lambda launch: launch.get("task_duration_us") or 0.0)
            what = f"{longest.get('kernel') or longest.get('op_type')}, {U.time(longest.get('task_duration_us') or 0.0)}"
        except (ProfileError, OSError, ValueError):
            what = "not readable"
        named.append(f"{run.relative_to(path)} ({what})")
    first, second = (str(run) for run in sorted(runs)[:2])
    raise ProfileError(f"{len(runs)} msprof op runs in one folder: {'; '.join(named)}", path=path,
                       hint=f"give one run (advisor suggest {first}), or compare two: advisor compare "
                            f"{first} {second}")


def read_launch(basic: Path, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The launches of one OpBasicInfo CSV, each with its PipeUtilization detail when present.

    Every number is checked finite and in its range where it is read: a bad one reads as missing (a launch whose
    duration is bad is left out), with a note in ``notes`` naming the file, line and column."""
    notes = notes if notes is not None else []
    header, rows = _read_msopprof_csv(basic)
    for required in ("Op Name", "Task Duration(us)"):
        if required not in header:
            raise MalformedProfile(f"required column {required!r} is missing", path=basic, line=1,
                                   hint="export again with `msprof op`; this is not an OpBasicInfo file")
    if not rows:
        raise MalformedProfile("no data rows (header only)", path=basic, line=1,
                               hint="the msprof op run did not finish; run it again")
    companions = _companions(basic)
    pipe = _pipe_detail(companions.get("PipeUtilization"), notes)
    pipe.update(_memory_detail(companions, set(pipe.get("working_sides") or ("cube", "vector")), notes))
    chip_info = _find_basic_info_txt(basic.parent)
    launches = []
    bad = columns.BadNumbers(basic)
    for line, row in rows:
        values = dict(zip(header, row))
        detail = _basic_detail(basic, line, values, chip_info, bad)
        if detail is None:
            continue
        detail["metric_files"] = sorted(p.name for p in companions.values())
        if len(rows) == 1:  # the metric rows belong to this launch only when there is one
            detail.update(pipe)
        launches.append(detail)
    if not launches:
        raise MalformedProfile(f"no launch with a plausible duration: {bad.summary()}", path=basic,
                               line=bad.first_line(), hint="the file is corrupt or edited; run `msprof op` again")
    notes.extend(bad.notes())
    return launches


def _read_msopprof_csv(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and (line, cells) rows; the trailing comma's empty cell is dropped."""
    try:
        # the head first: a 3 GB sparse file is refused as binary without being read whole
        with open_regular(path, limit=1 << 62) as handle:
            if b"\x00" in handle.read(65536):
                raise MalformedProfile("binary data, not a CSV text file", path=path,
                                       hint="point at the OPPROF_* folder written by `msprof op`")
        raw = read_bytes(path, MAX_MSOPPROF_CSV_BYTES)
    except OSError as exc:
        raise MalformedProfile(f"cannot read: {exc.strerror or exc}", path=path) from None
    except SideFileError as exc:
        raise MalformedProfile(str(exc), path=path, hint="point at the OPPROF_* folder written by `msprof op`") from None
    if not raw.strip():
        raise MalformedProfile("empty file (0 bytes)" if not raw else "empty file", path=path,
                               hint="the msprof op run did not finish; run it again")
    if b"\x00" in raw[:65536]:
        raise MalformedProfile("binary data, not a CSV text file", path=path,
                               hint="point at the OPPROF_* folder written by `msprof op`")
    text = _decode(path, raw)
    lines = text.splitlines()
    header = _cells(lines[0])
    rows = [(n, _cells(line)) for n, line in enumerate(lines[1:], start=2) if line.strip()]
    return header, rows


def _decode(path: Path, raw: bytes) -> str:
    for encoding in ("utf-8-sig", "gbk"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise MalformedProfile("not UTF-8 or GBK text", path=path, hint="re-save the file as UTF-8")


def _cells(line: str) -> list[str]:
    # msOpProf never quotes (FORMATS.md §1.2), so a plain split is exact and fast.
    cells = [c.strip() for c in line.split(",")]
    return cells[:-1] if len(cells) > 1 and cells[-1] == "" else cells


def _companions(basic: Path) -> dict[str, Path]:
    """Metric CSVs of the same launch: same folder; paired by suffix when a folder holds several."""
    suffix = basic.name[len("OpBasicInfo"):]
    found: dict[str, Path] = {}
    for p in sorted(basic.parent.iterdir()):
        m = _METRIC.match(p.name)
        if not m or p == basic or m.group(1) == "OpBasicInfo" or not p.is_file():  # a FIFO would block
            continue
        exact = p.name.endswith(suffix)
        if exact or m.group(1) not in found:
            found[m.group(1)] = p
    return found


def _find_basic_info_txt(folder: Path) -> dict[str, str]:
    """dump/op_basic_info.txt of the launch folder, else of the enclosing OPPROF_* folders."""
    for candidate in (folder, *list(folder.parents)[:3]):
        info = _read_basic_info_txt(candidate / "dump" / "op_basic_info.txt")
        if info or _OPPROF.match(candidate.name):
            return info
    return {}


def _read_basic_info_txt(path: Path) -> dict[str, str]:
    try:
        text = read_text(path, errors="replace")
    except (OSError, ValueError):  # absent, or a FIFO / device / oversized file
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


#: An AI Core clock (MHz).
FREQ_MHZ = (1.0, 100_000.0)


def _number(value: str | None, bounds: tuple[float, float] = columns.ANY, bad: columns.BadNumbers | None = None,
            column: str = "", line: int | None = None) -> float | None:
    """A cell's number within ``bounds``; None when missing or text, and when out of ``bounds`` or not finite (then
    counted in ``bad`` under ``column``, at ``line``)."""
    if value is None or value.strip() in _MISSING:
        return None
    number = columns.checked_float(value, bounds)
    if isinstance(number, columns.Bad):
        if bad is not None:
            bad.add(column, line, value, bounds)
        return None
    return number


def _integer(value: str | None, bad: columns.BadNumbers | None = None, column: str = "",
             line: int | None = None) -> int | None:
    number = _number(value, columns.COUNT, bad, column, line)
    return None if number is None else int(number)


def _basic_detail(basic: Path, line: int, values: dict[str, str], chip_info: dict[str, str],
                  bad: columns.BadNumbers | None = None) -> dict[str, Any] | None:
    """One launch of OpBasicInfo; None when its duration is a number out of range or not finite (counted in ``bad``)."""
    raw = values.get("Task Duration(us)", "")
    duration = columns.checked_float(raw, columns.DURATION_US) if raw.strip() not in _MISSING else None
    if isinstance(duration, columns.Bad):
        if bad is None:
            bad = columns.BadNumbers(basic)
        bad.add("Task Duration(us)", line, raw, columns.DURATION_US, dropped=True)
        return None
    if duration is None:
        raise MalformedProfile(f"Task Duration(us) {raw!r} is not a non-negative number", path=basic, line=line,
                               hint="the file is corrupt or edited; run `msprof op` again")
    op_type = values.get("Op Type", "").strip()

    def cell(*names: str) -> tuple[str | None, str]:
        name = next((n for n in names if values.get(n)), names[0])
        return values.get(name), name

    def integer(*names: str) -> int | None:
        value, name = cell(*names)
        return _integer(value, bad, name, line)

    def freq(name: str) -> float | None:
        return _number(values.get(name), FREQ_MHZ, bad, name, line)

    return {
        "kernel": values.get("Op Name", ""),
        "op_type": op_type,
        "task_duration_us": duration,
        "block_dim": integer("Block Dim", "Block Num"),
        "mix_block_dim": integer("Mix Block Dim", "Mix Block Num"),
        "chip": chip_info.get("Run Soc Version") or None,
        "current_freq_mhz": freq("Current Freq"),
        "rated_freq_mhz": freq("Rated Freq"),
        "device_id": integer("Device Id"),
        "source": str(basic),
        "pipe_header": None,
    }


# ------------------------------------------------------------------------------------------------
# PipeUtilization
# ------------------------------------------------------------------------------------------------


def pipe_generation(header: list[str]) -> str:
    """Which PipeUtilization header generation (FORMATS.md §1.5) a header is."""
    cols = set(header)
    if "block_id" not in cols:
        label = "310P"
    elif "aic_scalar_single_time(us)" in cols or "aiv_scalar_single_time(us)" in cols:
        label = "2026"
    elif "aic_mte3_active_bw(GB/s)" in cols or "aiv_mte2_active_bw(GB/s)" in cols:
        label = "2025-12"
    else:
        label = "2025-03"
    # MemoryDetail appends aic_mte1/mte2_active_bw after every aiv_* column (pipeDbiFor910B_)
    if {"aic_mte2_active_bw(GB/s)", "aiv_time(us)"} <= cols and \
            header.index("aic_mte2_active_bw(GB/s)") > header.index("aiv_time(us)"):
        label += "+MemoryDetail"
    return label


def _pipe_columns(header: list[str]) -> dict[str, int]:
    """PIPE_KEY -> column of its ratio (``aic_vec_ratio`` of 310P counts as the unprefixed ``vec``)."""
    found = {}
    for i, col in enumerate(header):
        m = re.fullmatch(r"(aic|aiv)_(cube|mac|vec|scalar|mte1|mte2|mte3|fixpipe)_ratio", col)
        if not m:
            continue
        pipe = "cube" if m.group(2) == "mac" else m.group(2)
        key = f"{m.group(1)}_{pipe}"
        found[key if key in PIPE_KEYS else pipe] = i
    return found


def _pipe_detail(path: Path | None, notes: list[str] | None = None) -> dict[str, Any]:
    if path is None:
        return {}
    header, rows = _read_msopprof_csv(path)
    bad = columns.BadNumbers(path)
    ratio_cols = _pipe_columns(header)
    index = {c: i for i, c in enumerate(header)}
    sides = {"cube": ("aic", index.get("aic_time(us)")), "vector": ("aiv", index.get("aiv_time(us)"))}
    times: dict[str, list[float]] = {"cube": [], "vector": []}
    blocks: dict[str, list[int]] = {"cube": [], "vector": []}
    subs: dict[str, list[str]] = {"cube": [], "vector": []}
    ratios: dict[str, list[tuple[float, float]]] = {k: [] for k in ratio_cols}  # (sub-core time, ratio)
    rows_of: dict[str, list[dict[str, float]]] = {"cube": [], "vector": []}  # each sub-core row's ratios
    for n, (line, row) in enumerate(rows):
        for side, (prefix, time_col) in sides.items():
            t = _number(row[time_col], columns.DURATION_US, bad, header[time_col], line) \
                if time_col is not None and time_col < len(row) else None
            if t is None:
                continue
            times[side].append(t)
            blocks[side].append(_integer(_cell(row, index.get("block_id")), bad, "block_id", line)
                                if "block_id" in index else n)
            subs[side].append(_cell(row, index.get("sub_block_id")) or ("cube0" if side == "cube" else "vector0"))
            own: dict[str, float] = {}
            for key, col in ratio_cols.items():
                if key.startswith(prefix) or (prefix == "aic" and "_" not in key):
                    value = _number(_cell(row, col), columns.RATIO, bad, header[col], line)
                    if value is not None:
                        ratios[key].append((t, value))
                        own[key] = value
            rows_of[side].append(own)
    if notes is not None:
        notes.extend(bad.notes())
    return _summarise_pipe(pipe_generation(header), times, blocks, subs, ratios, rows_of)


def _cell(row: list[str], col: int | None) -> str | None:
    return row[col] if col is not None and col < len(row) else None


#: Sub-cores ending within this share of a side's longest one are on the critical path (timing noise aside).
CRITICAL_SHARE = 0.95


def _summarise_pipe(generation: str, times, blocks, subs, ratios, rows_of) -> dict[str, Any]:
    # A kernel lasts as long as its busiest sub-cores, so the bound is read on them (each pipe's highest ratio over
    # the sub-cores that end last), never on an average that hides one (two vector sub-cores of one Mix block: 97 %
    # scalar and 20 % average to 58 %); the time-weighted mean over every sub-core stays beside it. A side whose slowest sub-core is far below the other
    # side's (the cube of a vector-only mix kernel) did no real work and its ratios are left out.
    busy = {side: max(values) for side, values in times.items() if values}
    top_busy = max(busy.values(), default=0.0)
    working = {side for side, value in busy.items() if value >= WORKING_SIDE_SHARE * top_busy}
    mean, busiest = {}, {}
    for key, pairs in ratios.items():
        side = "vector" if key.startswith("aiv_") else "cube"
        weight = sum(t for t, _ in pairs)
        if pairs and side in working:
            mean[key] = sum(t * v for t, v in pairs) / weight if weight else sum(v for _, v in pairs) / len(pairs)
    busiest_sub = {}
    for side in working:
        # the sub-cores that end last (within CRITICAL_SHARE of the side's longest) set the kernel's time: each
        # pipe's ratio is its highest on them
        critical = [at for at, t in enumerate(times[side]) if t >= CRITICAL_SHARE * busy[side]]
        for at in critical:
            for key, value in rows_of[side][at].items():
                busiest[key] = max(value, busiest.get(key, value))
        at = times[side].index(busy[side])
        busiest_sub[side] = {"block_id": blocks[side][at], "sub_block_id": subs[side][at],
                             "time_us": times[side][at], "critical": len(critical)}
    mean, average = {key: busiest.get(key, value) for key, value in mean.items()}, mean
    bound_pipe = {}
    for side, prefix in (("cube", "aic_"), ("vector", "aiv_")):
        side_keys = {k: v for k, v in mean.items() if k.startswith(prefix) or (side == "cube" and "_" not in k)}
        if times[side] and side_keys:
            bound_pipe[side] = max(side_keys, key=side_keys.get)
    top = max(mean, key=mean.get) if mean else None
    present = [s for s in ("cube", "vector") if times[s]]
    return {
        "pipe_header": generation,
        "pipe_ratio": mean,
        "pipe_ratio_mean": average,
        "busiest_sub_core": busiest_sub,
        "pipe_ratio_max": {k: max(v for _, v in pairs) for k, pairs in ratios.items() if pairs},
        "bound_pipe": bound_pipe,
        "bound": {"pipe": top, "ratio": mean[top]} if top else None,
        "working_sides": sorted(working),
        "block_time_us": {s: times[s] for s in present},
        "block_ids": {s: blocks[s] for s in present},
        "sub_block_ids": {s: subs[s] for s in present},
        "imbalance": {s: block_imbalance(times[s], blocks[s], subs[s]) for s in present},
    }


def _memory_detail(companions: dict[str, Path], working: set[str], notes: list[str] | None = None) -> dict[str, Any]:
    """UB bank conflicts (ResourceConflictRatio) and the L2 read hit rate (L2Cache) of the working sides."""
    found: dict[str, Any] = {}
    notes = notes if notes is not None else []
    conflicts = companions.get("ResourceConflictRatio")
    if conflicts is not None and "vector" in working:
        header, rows = _read_msopprof_csv(conflicts)
        index = {c: i for i, c in enumerate(header)}
        weight = stalled = 0.0
        bad = columns.BadNumbers(conflicts)
        for line, row in rows:
            t = _number(_cell(row, index.get("aiv_time(us)")), columns.DURATION_US, bad, "aiv_time(us)", line)
            parts = [_number(_cell(row, index.get(c)), columns.RATIO, bad, c, line)
                     for c in ("aiv_vec_bankgroup_cflt_ratio", "aiv_vec_bank_cflt_ratio")]
            if t is None or all(p is None for p in parts):
                continue
            weight += t
            stalled += t * sum(p or 0.0 for p in parts)
        notes.extend(bad.notes())
        if weight:
            found["bank_conflict_ratio"] = stalled / weight
    l2 = companions.get("L2Cache")
    if l2 is not None:
        header, rows = _read_msopprof_csv(l2)
        index = {c: i for i, c in enumerate(header)}
        hits = misses = 0.0
        bad = columns.BadNumbers(l2)
        for prefix, side in (("aic", "cube"), ("aiv", "vector")):
            if side not in working:
                continue
            for line, row in rows:
                for port in ("r0", "r1"):
                    names = (f"{prefix}_{port}_read_cache_hit", f"{prefix}_{port}_read_cache_miss_allocate")
                    hit, miss = (_number(_cell(row, index.get(name)), columns.NON_NEGATIVE, bad, name, line)
                                 for name in names)
                    if hit is not None and miss is not None:
                        hits, misses = hits + hit, misses + miss
        notes.extend(bad.notes())
        if hits + misses:
            found["l2_read_hit_rate"] = hits / (hits + misses)
    return found


def block_imbalance(times: list[float], blocks: list[int], subs: list[str]) -> dict[str, Any]:
    """Spread of per-(block, sub-core) busy times: max/min, max/mean, coefficient of variation."""
    n = len(times)
    mean = sum(times) / n
    hi = max(range(n), key=times.__getitem__)
    lo = min(range(n), key=times.__getitem__)
    std = math.sqrt(sum((t - mean) ** 2 for t in times) / n)
    return {
        "rows": n,
        "mean_us": mean,
        "max_us": times[hi],
        "min_us": times[lo],
        "max_over_min": times[hi] / times[lo] if times[lo] > 0 else None,
        "max_over_mean": times[hi] / mean if mean > 0 else None,
        "cv": std / mean if mean > 0 else None,
        "slowest": {"block_id": blocks[hi], "sub_block_id": subs[hi], "time_us": times[hi]},
        "fastest": {"block_id": blocks[lo], "sub_block_id": subs[lo], "time_us": times[lo]},
    }


# ------------------------------------------------------------------------------------------------
# RawProfile
# ------------------------------------------------------------------------------------------------


def _raw_profile(path: Path, details: list[dict[str, Any]], bad_notes: list[str] | None = None) -> RawProfile:
    pipe_keys = sorted({k for d in details for k in d.get("pipe_ratio", {})})
    empty = [""] * len(details)
    table = KernelTable(
        name=[d["kernel"] for d in details], op_type=[d["kernel"] for d in details],
        task_type=[d["op_type"] for d in details], duration_us=[d["task_duration_us"] for d in details],
        wait_us=[None] * len(details), block_dim=[d["block_dim"] for d in details],
        mix_block_dim=[d["mix_block_dim"] for d in details], input_shapes=empty, input_dtypes=empty,
        input_formats=empty, output_formats=empty, op_state=[None] * len(details),
        pipe={k: [d.get("pipe_ratio", {}).get(k) for d in details] for k in pipe_keys})
    table.present = {"name", "op_type", "task_type", "duration_us", "block_dim"}
    if any(d["mix_block_dim"] is not None for d in details):
        table.present.add("mix_block_dim")
    if pipe_keys:
        table.present.add("pipe")
    longest = max(details, key=lambda d: d["task_duration_us"])
    detail = dict(longest)
    if len(details) > 1:
        detail["launches"] = details
    chips = sorted({d["chip"] for d in details if d["chip"]})
    notes = [*(bad_notes or []), *_notes(details)]
    return RawProfile(
        path=str(path), format=FORMAT, kernels=table, chip=chips[0] if chips else None,
        core_counts=core_counts_for(chips[0]) if len(chips) == 1 else {},
        freq_mhz=longest.get("current_freq_mhz") or longest.get("rated_freq_mhz"),
        versions={"pipe_utilization_header": longest["pipe_header"]} if longest["pipe_header"] else {},
        notes=notes, kernel_detail=detail, extra={"op_type_derived": True},
    )


def _notes(details: list[dict[str, Any]]) -> list[str]:
    # Whole-run questions, a missing PipeUtilization.csv and an unknown chip are noted by the builder,
    # with remedies for msprof op; only what this reader alone can tell is said here.
    if not any(d["pipe_header"] for d in details):
        return [N_("PipeUtilization.csv is missing from the OPPROF output (--aic-metrics did not include it)")]
    return []
