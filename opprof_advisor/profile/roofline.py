"""The roofline: each op type's achieved rate against the chip's compute and bandwidth roofs.

Three steps, each explained where it is done:

1. **Peaks** (``peaks.resolve_peaks``): AI Core count and clock from the profile first (info.json,
   msOpProf ``Current Freq``/``Rated Freq``, DB ``AICORE_FREQ``), the exact-SoC table in
   ``readers/chips.py`` for what the profile lacks, then the user file ``$ADVISOR_HOME/peaks.yaml`` and
   ``--peaks FILE.yaml`` on top (measured values win). Cube peak = AI Cores x clock x ops per cycle
   (16*16*16*2 = 8192 FP16/BF16 flop, 16384 INT8 ops per cycle per core). No vector compute rate is
   sourced, so vector-side op types are judged against the bandwidth roof only (they are bytes-bound).
   A figure nobody states stays unknown: the note says what to collect, nothing is guessed.
2. **Work per kernel** (``roofline_work.work_of``): FLOPs and minimum bytes from Input Shapes / Data Types /
   Formats, computed once per distinct (op type, shapes, dtypes, formats) -- never per row. For
   ``msprof op`` output the measured ArithmeticUtilization ``*_fops`` and Memory.csv volumes are used
   instead (``readers/msopprof_metrics.py``). What the shapes cannot tell is "not judged" with the reason.
3. **Per op type** (``compute``): the minimum time of its work on the roofs, t_min = max(flops /
   compute peak, bytes / bandwidth) summed over its launches; efficiency = t_min / measured time
   (= achieved / attainable); headroom = time x (1 - efficiency). Above PLAUSIBLE_MAX of attainable
   the data is wrong (peak, shapes or units), never a gain.

The **model gain** of a hot op type is a band, not the whole gap: the time saved if the kernel went
from its efficiency to MODEL_TARGETS of attainable -- the bands an MFU guide calls "typical" (30-60 %)
and "near the device limit" (> 70 %). It is labelled "model estimate" wherever it is shown and is
used by the ranking only where no sourced KB figure applies.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from opprof_advisor.core.i18n import M_, N_, Message, join_messages
from opprof_advisor.core.models import Profile, Roofline, RooflineRow
from opprof_advisor.core.operators import canonical_family
from opprof_advisor.readers.base import RawProfile
from opprof_advisor.readers.chips import soc_spec
from opprof_advisor.readers.columns import MEMORY_FIELDS, unit_of
from opprof_advisor.core.records import Record
from opprof_advisor.profile.families import most_common
from opprof_advisor.profile.peaks import Peaks, resolve_peaks
from opprof_advisor.profile.roofline_work import NotJudged, Work, work_of
# Only op types with at least HOT_SHARE of compute time get a model gain; launches shorter than
# MIN_TASK_DURATION_US are not judged -- the thresholds the symptom checks use, with their sources.
from opprof_advisor.core.thresholds import HOT_SHARE, MIN_TASK_DURATION_US
from opprof_advisor.readers.frame import Frame
from opprof_advisor.readers.msopprof_metrics import launch_work

#: Above this fraction of attainable a result is a data problem, not a fast kernel (issue 12).
PLAUSIBLE_MAX = 1.10
#: Efficiency the model gain assumes reachable: (low end, high end) of the band. Source: MFU bands of
#: wheel:mindstudio-agent 26.1.3 .../skills/profiler/op-mfu-calculator/SKILL.md (KB-AUDIT N67, grade D):
#: "30-60 % typical", "above 70 %: shape, parallelism and implementation close to the device limit".
MODEL_TARGETS = (0.60, 0.70)
MODEL_TARGET_SOURCE = N_("KB-AUDIT N67 (op-mfu-calculator MFU bands: 30-60 % typical, > 70 % near the device limit)")

_SKIPPED_UNITS = frozenset({"communication", "ai_cpu", "dsa", "other"})

# ------------------------------------------------------------------------------------------------
# Peaks
# ------------------------------------------------------------------------------------------------


def collect_hint(fmt: str) -> str:
    """Where the chip, core count and clock of a run are kept, for the producer of ``fmt``."""
    if fmt.startswith("msopprof"):
        return N_("msprof op, keeping dump/op_basic_info.txt (Run Soc Version, Current Freq) beside the CSVs")
    if fmt.startswith("torch-npu"):
        return N_("the torch_npu profiler with export_type=db (NPU_INFO, AICORE_FREQ), or keep its PROF_* folder "
                  "with device_*/info.json.*")
    return N_("msprof, keeping PROF_*/device_*/info.json.* (ai_core_num, aic_frequency)")


def has_roofs(device: dict[str, Any], peaks_file: str | Path | None = None) -> bool:
    """True when the compute roof of ``device`` is known (SoC table, cores and clock, or a peaks file)."""
    return _missing_peak_note(resolve_peaks(device, peaks_file)[0], "") is None


def _missing_peak_note(peaks: Peaks, fmt: str) -> str | None:
    if peaks.cube_tflops:
        return None  # computed from cores and clock, or given as measured figures
    missing = []
    if not peaks.aic:
        missing.append(N_("AI Core count"))
    if not peaks.freq_mhz:
        missing.append(N_("AI Core clock"))
    if not missing:
        return None
    where = M_("the chip {chip} is not in the SoC table", chip=peaks.chip) if peaks.chip and soc_spec(peaks.chip) is None \
        else (M_("{chip} has no sourced figure for it", chip=peaks.chip) if peaks.chip else N_("the profile names no chip"))
    what = M_("the {a} and {b} are", a=missing[0], b=missing[1]) if len(missing) > 1 else M_("the {a} is", a=missing[0])
    return M_("cannot judge roofline: {what} not in the profile and {where} (collect with {hint}, or give aic / "
              "freq_mhz in --peaks FILE.yaml)", what=what, where=where, hint=collect_hint(fmt))


# ------------------------------------------------------------------------------------------------
# Per op type
# ------------------------------------------------------------------------------------------------


@dataclass
class _Tally(Record):
    """Sums over the judged launches of one (op type, unit)."""

    time: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    t_compute: float = 0.0  # time the work needs on the compute roof
    t_bound: float = 0.0  # sum over groups of max(compute time, bandwidth time)
    # time per value: defaultdicts, made ten times faster than Counters (a profile may hold a million op types)
    t_by_roof: defaultdict = field(default_factory=partial(defaultdict, float))
    kinds: defaultdict = field(default_factory=partial(defaultdict, float))
    dtypes: defaultdict = field(default_factory=partial(defaultdict, float))
    bases: defaultdict = field(default_factory=partial(defaultdict, float))
    reasons: defaultdict = field(default_factory=partial(defaultdict, float))  # reason -> time not judged
    source: str = "shapes"
    has_flops: bool = True


def compute(raw: RawProfile, profile: Profile, peaks_file: str | Path | None = None) -> Roofline:
    """The roofline of a profile; 'cannot judge roofline' notes are also added to ``profile.notes``."""
    peaks, notes = resolve_peaks(profile.device, peaks_file)
    result = Roofline(peaks=peaks.as_dict(), peak_sources=dict(peaks.sources), notes=notes)
    missing = _missing_peak_note(peaks, profile.format)
    if missing:
        result.notes.append(missing)
    elif not peaks.hbm_gbps:
        result.notes.append(M_("cannot judge the bandwidth roof: no sourced HBM bandwidth for {chip} (give hbm_gbps "
                               "in --peaks FILE.yaml); bytes-bound op types are not judged, cube op types only "
                               "against the compute roof", chip=peaks.chip or N_("this chip")))
    if not missing:
        tallies = _measured_tallies(raw, peaks) if raw.format.startswith("msopprof") else _shape_tallies(raw, profile, peaks)
        result.rows = _rows(profile, tallies, peaks)
    elif profile.producer != "cluster" and (not peaks.chip or soc_spec(peaks.chip) is None and _is_family(peaks.chip)):
        result.by_chip = _over_plausible_chips(raw, profile, peaks_file)
    for note in result.notes:
        if note not in profile.notes:
            profile.notes.append(note)
    return result


#: The parts a roofline range is taken over when the profile names no chip (or only the family Ascend910B): the A2
#: parts whose core counts, clock or bandwidth the SoC table sources. A part without a clock in the table is
#: used only when the profile records the clock.
PLAUSIBLE = ("Ascend910B3", "Ascend910B2")


def _is_family(chip: str) -> bool:
    return any(name.startswith(chip) for name in PLAUSIBLE)


def _over_plausible_chips(raw: RawProfile, profile: Profile, peaks_file: str | Path | None) -> dict[str, list[RooflineRow]]:
    """The rows on each plausible part, its table figures under the profile's own facts (clock, cores)."""
    out: dict[str, list[RooflineRow]] = {}
    groups = None  # the launch groups do not depend on the chip: made once
    for chip in PLAUSIBLE:
        peaks, _ = resolve_peaks({**profile.device, "chip": chip}, peaks_file)
        if _missing_peak_note(peaks, profile.format):
            continue
        if raw.format.startswith("msopprof"):
            tallies = _measured_tallies(raw, peaks)
        else:
            groups = groups or _launch_groups(raw)
            tallies = _shape_tallies(raw, profile, peaks, groups)
        out[chip] = _rows(profile, tallies, peaks)
    return out


def _unit_index(profile: Profile) -> dict[str, list[tuple[str, float]]]:
    units: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for row in profile.op_types:
        units[row.op_type].append((row.unit, row.time_us))
    return units


class _LaunchGroups(NamedTuple):
    """Launches grouped by (op type, task type, shapes, dtypes, formats): each group's launch count and time, and
    the main-memory bytes a MemoryAccess capture counted for it."""

    groups: dict[tuple, tuple[int, float]]
    measured: dict[tuple, float]


def _launch_groups(raw: RawProfile) -> _LaunchGroups:
    frame = Frame.of(raw.kernels)
    keys = frame.combine(frame.op_types(), *(frame.coded(name) for name in (
        "task_type", "input_shapes", "input_dtypes", "input_formats", "output_dtypes")))
    tally = frame.tally(keys, weights=frame.floats("duration_us"))
    groups = {key: (count, time_us) for key, count, time_us in zip(tally.keys, tally.counts, tally.sums)}
    return _LaunchGroups(groups, _measured_bytes(frame, keys))


def _shape_tallies(raw: RawProfile, profile: Profile, peaks: Peaks,
                   launches: _LaunchGroups | None = None) -> dict[tuple[str, str], _Tally]:
    """Group launches by (op type, task type, shapes, dtypes, formats); compute each group's work once."""
    groups, measured = launches or _launch_groups(raw)
    tallies: dict[tuple[str, str], _Tally] = {}
    units: dict[tuple[str, str], str] = {}
    for key, (count, time_us) in groups.items():
        op, task, shapes, dtypes, formats, out_dtypes = key
        unit = units.get((op, task))
        if unit is None:
            unit = units[(op, task)] = unit_of(task, canonical_family(op), op)
        if unit in _SKIPPED_UNITS or not op:
            continue
        tally = tallies.get((op, unit))
        if tally is None:
            tally = tallies[(op, unit)] = _Tally()
        if time_us < MIN_TASK_DURATION_US * count:
            tally.reasons[SHORT_REASON] += time_us
            continue
        try:
            work = _cached_work(op, shapes, dtypes, formats, out_dtypes)
        except NotJudged as exc:
            if key in measured:  # no work figure from the shapes, but the bytes were counted: judge those
                _add(tally, "bytes", None, measured[key], count, time_us, "", MEASURED_BYTES, peaks)
            else:
                tally.reasons[exc.args[0]] += time_us  # the Message itself: str() would drop its template
            continue
        if key in measured:  # bytes counted by the hardware beat bytes derived from the shapes
            _add(tally, work.kind, work.flops, measured[key], count, time_us, work.dtype,
                 M_("{basis}; bytes measured (MemoryAccess)", basis=work.basis), peaks)
        else:
            _add(tally, work.kind, work.flops, work.bytes * count, count, time_us, work.dtype, work.basis, peaks)
    return tallies


#: Where a roofline row's bytes come from when a MemoryAccess capture counted them (FORMATS.md §12).
MEASURED_BYTES = N_("measured: kernel_details *_read/write_main_memory_datas(KB), 1 KB = 1024 bytes")


def _measured_bytes(frame, keys) -> dict[tuple, float]:
    """Per launch group, the main-memory bytes a MemoryAccess capture counted (read + written by both sides,
    KB x 1024), where every launch of the group has them; {} without those columns."""
    present = [name for name in MEMORY_FIELDS if frame.has(name)]
    if not present:
        return {}
    columns = [frame.floats(name) for name in present]
    total = frame.plus(columns[0], frame.lookup(keys, [0.0] * len(keys.values)))  # (not recorded: 0)
    for column in columns[1:]:
        total = frame.plus(total, column)
    counted = frame.either(*(frame.present(column) for column in columns))  # a side that ran recorded its bytes
    sums = frame.tally(keys, counted, total)
    launches = frame.tally(keys).count_by_key()
    return {key: kb * 1024.0 for key, kb, count in zip(sums.keys, sums.sums, sums.counts)
            if count == launches.get(key) and kb > 0}


#: Launches shorter than thresholds.MIN_TASK_DURATION_US on average are not judged (msprof-analyze's
#: _MIN_TASK_DURATION = 20 us): their time is launch and setup, not work against a roof.
SHORT_REASON = M_("kernels shorter than 20 µs on average: launch overhead, not a roof, sets their time")
#: (Reasons are Messages: a report says them in Chinese, the document keeps the English.)
NO_HBM_REASON = M_("no sourced HBM bandwidth for this chip (give hbm_gbps in --peaks FILE.yaml)")
NO_MEMORY_REASON = M_("Memory.csv (main-memory volumes) not collected (collect with msprof op --aic-metrics=Default)")

_WORK_CACHE: dict[tuple, Work | NotJudged] = {}


def _cached_work(*key: str) -> Work:
    hit = _WORK_CACHE.get(key)
    if hit is None:
        try:
            hit = work_of(*key)
        except NotJudged as exc:
            hit = exc
        if len(_WORK_CACHE) > 100_000:
            _WORK_CACHE.clear()
        _WORK_CACHE[key] = hit
    if isinstance(hit, NotJudged):
        raise hit
    return hit


def _add(tally: _Tally, kind: str, flops_each: float | None, bytes_total: float, count: int, time_us: float,
         dtype: str, basis: str, peaks: Peaks) -> None:
    """Add ``count`` launches of one work figure to a tally, or record why they cannot be judged."""
    compute_peak = peaks.cube_tflops.get(dtype) if kind == "cube" else None
    if kind == "cube" and compute_peak is None:
        tally.reasons[M_("no sourced cube rate for {dtype} (give cube_tflops.{dtype} in --peaks FILE.yaml)", dtype=dtype)] += time_us
        return
    if kind == "bytes" and not peaks.hbm_gbps:
        tally.reasons[NO_HBM_REASON] += time_us
        return
    t_compute = (flops_each or 0.0) * count / (compute_peak * 1e12) * 1e6 if compute_peak else 0.0
    t_bandwidth = bytes_total / (peaks.hbm_gbps * 1e9) * 1e6 if peaks.hbm_gbps else 0.0
    tally.time += time_us
    tally.flops += (flops_each or 0.0) * count
    tally.bytes += bytes_total
    tally.t_compute += t_compute
    tally.t_bound += max(t_compute, t_bandwidth)
    tally.t_by_roof["compute" if t_compute >= t_bandwidth else "bandwidth"] += time_us
    tally.kinds[kind] += time_us
    tally.dtypes[dtype] += time_us
    tally.bases[basis] += time_us
    tally.has_flops = tally.has_flops and kind == "cube"


def _measured_tallies(raw: RawProfile, peaks: Peaks) -> dict[tuple[str, str], _Tally]:
    """msOpProf: the launches' measured fops and main-memory volumes (ArithmeticUtilization, Memory)."""
    detail = raw.kernel_detail or {}
    launches = detail.get("launches") or [detail]
    tallies: dict[tuple[str, str], _Tally] = {}
    for launch in launches:
        op = str(launch.get("kernel") or "")
        unit = unit_of(str(launch.get("op_type") or ""), None, op)
        if not op or unit in _SKIPPED_UNITS:
            continue
        tally = tallies.setdefault((op, unit), _Tally(source="measured"))
        time_us = float(launch.get("task_duration_us") or 0.0)
        if time_us < MIN_TASK_DURATION_US:
            tally.reasons[SHORT_REASON] += time_us
            continue
        work = launch_work(launch["source"]) if launch.get("source") else {}
        read, write = work.get("read_bytes"), work.get("write_bytes")
        if read is None or write is None:
            tally.reasons[NO_MEMORY_REASON] += time_us
            continue
        cube = work.get("cube_fops") or 0.0
        kind, dtype = ("cube", work.get("cube_dtype") or "fp16") if cube > 0 else ("bytes", "")
        basis = (N_("measured: ArithmeticUtilization aic_cube_fops, Memory.csv read/write_main_memory_datas")
                 if kind == "cube" else N_("measured: Memory.csv read/write_main_memory_datas (no cube work)"))
        _add(tally, kind, cube or None, read + write, 1, time_us, dtype, basis, peaks)
    return tallies


def _rows(profile: Profile, tallies: dict[tuple[str, str], _Tally], peaks: Peaks) -> list[RooflineRow]:
    compute_time = profile.compute_time_us or profile.device_time_us
    rows = []
    for stat in profile.op_types:
        tally = tallies.get((stat.op_type, stat.unit))
        hot = compute_time > 0 and stat.time_us / compute_time >= HOT_SHARE
        if tally is None or (not tally.time and not hot):
            continue
        rows.append(_row(stat.op_type, stat.unit, stat.time_us, stat.share, tally, peaks, hot))
    return rows


def _row(op: str, unit: str, time_us: float, share: float, tally: _Tally, peaks: Peaks, hot: bool) -> RooflineRow:
    row = RooflineRow(op_type=op, unit=unit, time_us=round(time_us, 3), share=share, status="not_judged",
                      work_source=tally.source)
    if not tally.time:
        row.reason = most_common(tally.reasons, 1)[0][0] if tally.reasons else M_("no launch could be judged")
        return row
    row.judged_time_us = round(tally.time, 3)
    row.dtype = most_common(tally.dtypes, 1)[0][0]
    row.roof = most_common(tally.t_by_roof, 1)[0][0]
    seconds = tally.time * 1e-6
    row.bytes = tally.bytes
    row.achieved_gbps = _round(tally.bytes / seconds / 1e9)
    efficiency = tally.t_bound / tally.time
    if tally.has_flops:
        row.flops = tally.flops
        row.achieved_tflops = _round(tally.flops / seconds / 1e12)
        row.intensity = _round(tally.flops / tally.bytes) if tally.bytes else None
        row.attainable_tflops = _round(row.achieved_tflops / efficiency) if efficiency else None
    row.efficiency = _round(efficiency, 4)
    basis = most_common(tally.bases, 1)[0][0]
    uncovered = [M_("{share:.0%} of the time not judged: {reason}", share=t / time_us, reason=r)
                 for r, t in most_common(tally.reasons, 2)]
    clauses = [basis, *uncovered]
    row.basis = join_messages(clauses, "; ")
    if efficiency > PLAUSIBLE_MAX:
        row.status = "implausible"
        from_l2 = row.roof == "bandwidth" and bool(peaks.l2_mb)
        values = {"efficiency": efficiency, "limit": PLAUSIBLE_MAX, "l2_mb": peaks.l2_mb}
        row.reason = M_("{efficiency:.0%} of attainable is above {limit:.0%}: peak, shapes or units wrong (or the data "
                        "came from the {l2_mb:g} MB L2, not HBM); not a gain", **values) if from_l2 else \
            M_("{efficiency:.0%} of attainable is above {limit:.0%}: peak, shapes or units wrong; not a gain", **values)
        return row
    row.status = "judged"
    row.headroom_us = round(tally.time * max(0.0, 1.0 - efficiency), 3)
    if hot:
        clauses.append(_model_gain(row, efficiency, tally.time / time_us if time_us else 0.0))
        row.basis = join_messages(clauses, "; ")
    return row


def _model_gain(row: RooflineRow, efficiency: float, coverage: float) -> Message:
    """Set the model-estimate band (fractions of the op type's time, see MODEL_TARGETS); return its basis clause."""
    low_target, high_target = MODEL_TARGETS
    if efficiency >= high_target:
        return M_("no model gain: already at {efficiency:.0%} of attainable (>= {target:.0%})", efficiency=efficiency,
                  target=high_target)
    row.model_gain_low = round(coverage * max(0.0, 1.0 - efficiency / low_target), 4)
    row.model_gain_high = round(coverage * (1.0 - efficiency / high_target), 4)
    return M_("model estimate: from {efficiency:.1%} to {low:.0%}-{high:.0%} of attainable saves "
              "{gain_low:.0%}-{gain_high:.0%} of its time ({source})", efficiency=efficiency, low=low_target,
              high=high_target, gain_low=row.model_gain_low, gain_high=row.model_gain_high, source=MODEL_TARGET_SOURCE)


def _round(value: float | None, digits: int = 3) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


# ------------------------------------------------------------------------------------------------
# What other modules use
# ------------------------------------------------------------------------------------------------


class ModelGain(NamedTuple):  # a NamedTuple: built at start-up, ~5x cheaper than a frozen dataclass
    """A model-estimate gain band for some op types, as fractions of their combined time."""

    low: float
    high: float
    time_us: float  # the combined time of the op types the band is for
    basis: str


def model_gain_for(profile: Profile, op_types: Iterable[str]) -> ModelGain | None:
    """The time-weighted model gain of ``op_types`` (rows without a band count as 0), or None if none has one."""
    if profile.roofline is None:
        return None
    wanted = set(op_types)
    rows = [r for r in profile.roofline.rows if r.op_type in wanted]
    banded = [r for r in rows if r.model_gain_high is not None]
    if not banded:
        return None
    total = sum(r.time_us for r in rows)
    low = sum((r.model_gain_low or 0.0) * r.time_us for r in rows) / total
    high = sum((r.model_gain_high or 0.0) * r.time_us for r in rows) / total
    named = join_messages([M_("{op} at {efficiency:.0%}", op=r.op_type, efficiency=r.efficiency) for r in banded[:3]])
    basis = M_("model estimate: {named} of attainable; to {low:.0%}-{high:.0%} ({source})", named=named,
               low=MODEL_TARGETS[0], high=MODEL_TARGETS[1], source=MODEL_TARGET_SOURCE)
    return ModelGain(round(low, 4), round(high, 4), round(total, 3), basis)


def roofline_to_json(roofline: Roofline | None) -> dict[str, Any] | None:
    """The ``roofline`` block of the profile JSON: peaks (with sources), one row per op type, notes."""
    if roofline is None:
        return None
    return {
        "peaks": dict(roofline.peaks),
        "peak_sources": dict(roofline.peak_sources),
        "plausible_max": PLAUSIBLE_MAX,
        "model_targets": list(MODEL_TARGETS),
        "op_types": [row.to_dict() for row in roofline.rows],
        "notes": list(roofline.notes),
    }


#: Schema of the `advisor roofline --format json` document.
SCHEMA = "opprof-advisor/roofline/1"


def roofline_document(profile: Profile) -> dict[str, Any]:
    """The ``opprof-advisor/roofline/1`` document: the profile's source and times plus its roofline block."""
    source: dict[str, Any] = {"path": profile.path, "format": profile.format, **profile.versions}
    if profile.chip:
        source["chip"] = profile.chip
    block = roofline_to_json(profile.roofline) or {"peaks": {}, "peak_sources": {}, "op_types": [], "notes": []}
    return {"schema": SCHEMA, "source": source, "device_time_us": profile.device_time_us,
            "compute_time_us": profile.compute_time_us, "device": dict(profile.device), **block}
