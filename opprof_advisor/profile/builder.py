"""Turn a reader's RawProfile into the normalised Profile: op-type rows, totals, step split, device, ranks.

The per-kernel columns (op type, family, unit, duration) are derived once in ``Kernels``; the
symptom checks of ``opprof_advisor.symptoms`` read them. Everything here is deterministic and
explained: where the data cannot support a judgement the profile gets a note ``cannot judge <what>:
<why> (collect with <switch>)`` instead of a guess, with a switch that fits the producer.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from opprof_advisor.core import steps

from opprof_advisor.core import thresholds
from opprof_advisor.profile.families import families_to_json, most_common
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.readers.frame import Frame
from opprof_advisor.core.models import OpTypeStat, Profile, RankSummary, StepSplit, Symptom
from opprof_advisor.core.operators import canonical_family
from opprof_advisor.readers.base import RawProfile, as_list
from opprof_advisor.readers.columns import unit_of
from opprof_advisor.core.vocabulary import UNITS
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.profile.roofline import roofline_to_json

SCHEMA = "opprof-advisor/profile/1"

#: Timeline-only formats (trace_view.json / msprof_*.json) and what to collect instead.
TIMELINE_FORMATS = frozenset({"torch-npu-timeline", "msprof-timeline"})
TIMELINE_SWITCH = N_("kernel_details.csv from the torch_npu profiler, or msprof --export=on for op_summary")
#: Profile format -> the tool that wrote it (vocabulary.PRODUCERS).
PRODUCER_OF_FORMAT: dict[str, str] = {
    "msopprof-device": "msopprof", "msopprof-simulator": "msopprof",
    "msprof-text": "msprof", "msprof-db": "msprof", "msprof-timeline": "msprof",
    "torch-npu-text": "torch_npu", "torch-npu-db": "torch_npu", "torch-npu-timeline": "torch_npu",
    "cluster-summary": "cluster", "mindspore-text": "mindspore", "mindspore-db": "mindspore",
}


def producer_of(raw: RawProfile) -> str:
    """The producer of a RawProfile (a multi-rank folder: that of its ranks)."""
    fmt = raw.extra.get("rank_format") if raw.format == "multi-rank" else raw.format
    return PRODUCER_OF_FORMAT.get(fmt or "", "torch_npu")


#: The "collect with" needs a light export's own note covers: they all come with the per-launch table.
LIGHT_SAYS = frozenset({"level1", "pipe", "shapes", "op_state", "per_block"})


class Kernels:
    """Per-kernel derived columns, the op-type rows and the step split, shared by the symptom checks.

    Columns live in ``frame`` (opprof_advisor/readers/frame.py), encoded: ``ops`` (op type, derived
    from the kernel name at level0), ``units`` (the vocabulary unit), ``names``, and the float
    columns ``duration`` and ``pipe``. The checks ask the frame for masks and tallies over them.
    """

    def __init__(self, raw: RawProfile):
        table = raw.kernels
        self.raw, self.table = raw, table
        frame = self.frame = Frame.of(table)
        self.name_codes = frame.coded("name")
        self.derived = not any(frame.occurring(frame.coded("op_type")))
        self.ops = ops = frame.op_types()
        families = {op: canonical_family(op) for op in frame.occurring(ops)}
        self.family = {op: fam or op for op, fam in families.items()}
        self.units = self._units(frame.coded("task_type"), families)
        self.duration = frame.floats("duration_us")
        self.communication = frame.isin(self.units, {"communication"})
        self.device_time = frame.total(self.duration)
        self.comm_time = frame.total(self.duration, self.communication)
        self.compute_time = self.device_time - self.comm_time
        self.producer = producer_of(raw)
        self.single_kernel = self.producer == "msopprof"
        self.min_duration = 0.0 if self.single_kernel else thresholds.MIN_TASK_DURATION_US
        has_pipes = "pipe" in table.present or not table.present
        self.pipe = {k: frame.floats("pipe:" + k) for k in table.pipe_keys()
                     if has_pipes and k in thresholds.BOUND_THRESHOLDS and frame.has_length("pipe:" + k)}
        self.has_pipes = bool(self.pipe)
        self.working = _working_sides(frame) if self.has_pipes else {}
        self.notes: list[str] = list(raw.notes)
        self.symptoms: list[Symptom] = []
        self.rows: list[OpTypeStat] = []
        self.ranks: list[RankSummary] = []
        self.steps, self.step_source = step_split(self)
        self.step_total = steps.total(self.steps)
        self.light = False  # op types from an op_statistic table, no launches (readers/light.py)
        statistic = raw.extra.get("op_statistic") if not len(table) else None
        if statistic:  # a light export: the op types are all there is (readers/light.py)
            self.rows = statistic_rows(statistic, self.family)
            self.light = True
            self.compute_time = sum(row.time_us for row in self.rows if row.unit != "communication")
            self.comm_time = sum(row.time_us for row in self.rows if row.unit == "communication")
            if not self.comm_time and self.step_total and self.step_total.communication_us:
                # torch_npu's op_statistic lists no collectives: their time is the step split's
                self.comm_time = self.step_total.communication_us
                self.notes.append(M_("communication time is that of {file} (the op_statistic table lists no "
                                     "collectives)", file=raw.extra.get("step_source") or "step_trace_time.csv"))
            self.device_time = self.compute_time + self.comm_time
            for row in self.rows:
                row.share = round(self.share(row.time_us), 6)

    def _units(self, tasks, families: dict[str, str | None]):
        """The unit of each row, decided once per (op type, task type); for an empty op type the first
        such row's name decides (whether it is ``hcom_`` communication)."""
        frame = self.frame
        pairs = frame.pair(self.ops, tasks)
        seen = frame.tally(pairs)
        units = {}
        for (op, task), row in zip(seen.keys, seen.first):
            units[(op, task)] = unit_of(task, families[op], op or frame.value_at(self.name_codes, row))
        return frame.mapped(pairs, units.__getitem__)

    @property
    def op_type(self) -> list[str]:
        """Each row's op type, as a list (for exports; the checks use ``ops``)."""
        return as_list(self.ops)

    @property
    def unit(self) -> list[str]:
        """Each row's unit, as a list (for exports; the checks use ``units``)."""
        return as_list(self.units)

    @property
    def names(self) -> list[str]:
        return as_list(self.name_codes)

    @property
    def timeline(self) -> bool:
        """True for timeline-only inputs, which lack every summary column whatever the level."""
        return self.raw.format in TIMELINE_FORMATS

    def share(self, time_us: float) -> float:
        """Share of device time: at most 1 (an op type's time is rounded to the ns, the total is not)."""
        return min(1.0, time_us / self.device_time) if self.device_time else 0.0

    def step_share(self, time_us: float) -> float:
        """Share of the step's wall time (of device time when there is no step split)."""
        stage = self.step_total.stage_us if self.step_total else 0.0
        return min(1.0, time_us / stage) if stage else self.share(time_us)

    def compute_share(self, time_us: float) -> float:
        return min(1.0, time_us / self.compute_time) if self.compute_time else 0.0

    def symptom(self, symptom_id: str) -> Symptom | None:
        return next((s for s in self.symptoms if s.id == symptom_id), None)

    def note(self, what: str, why: str, need: str) -> None:
        """Add ``cannot judge <what>: <why> (collect with <remedy>)``; ``need`` is a thresholds.REMEDIES key.

        On a light export the per-launch ones are left to its own note, which says what to keep instead."""
        if self.light and need in LIGHT_SAYS:
            return
        note = M_("cannot judge {what}: {why} ({remedy})", what=what, why=why, remedy=self.remedy(need))
        if note not in self.notes:
            self.notes.append(note)

    def remedy(self, need: str) -> str:
        if self.timeline:
            # a timeline never carries the summary columns, whatever the level: ask for the summaries
            extra = thresholds.REMEDIES["pipe"]["torch_npu"] if need == "pipe" else None
            if extra:
                return M_("collect with {switch}", switch=M_("{source}, with {extra}", source=TIMELINE_SWITCH, extra=extra))
            return M_("collect with {switch}", switch=TIMELINE_SWITCH)
        options = thresholds.REMEDIES.get(need, {})
        switch = options.get(self.producer) or options.get("torch_npu") or need
        return M_("collect with {switch}", switch=switch)

    def add(self, symptom_id: str, op_types: Iterable[str], time_us: float, detail: str,
            share: float | None = None, ceiling_us: float | None = None, base: str | None = None,
            rank: str | None = None) -> None:
        ops = list(dict.fromkeys(op_types))
        value = self.share(time_us) if share is None else share
        ceiling = None if ceiling_us is None else round(ceiling_us, 3)
        # a share the check gives itself is of the step where the profile has one (step_share's rule)
        if base is None:
            base = "step" if share is not None and self.step_total and self.step_total.stage_us else "device time"
        self.symptoms.append(Symptom(id=symptom_id, op_types=ops, share=round(value, 6), detail=detail,
                                     time_us=round(time_us, 3), ceiling_us=ceiling, base=base, rank=rank))


def profile_facts(ctx: Kernels) -> Profile:
    """The Profile's facts from derived kernels: op-type rows, totals, step split, device, ranks.

    Never judges: ``opprof_advisor.symptoms.profile_of`` adds the symptoms, the notes and the roofline.
    Op-type rows already set on ``ctx`` are kept (a job's, summed over its ranks).
    """
    raw = ctx.raw
    ctx.rows = ctx.rows or _op_type_rows(ctx)
    stacks = raw.extra.get("stacks") or {}
    for row in ctx.rows:
        row.stacks = list(stacks.get(row.op_type) or row.stacks)
    ctx.ranks = _rank_summaries(raw)
    profile = Profile(
        path=raw.path, format=raw.format, versions=dict(raw.versions), producer=ctx.producer,
        workload=workload_of(ctx), chip=raw.chip, device=device_facts(raw),
        device_time_us=round(ctx.device_time, 3), compute_time_us=round(ctx.compute_time, 3),
        communication_time_us=round(ctx.comm_time, 3), op_types=ctx.rows, ranks=ctx.ranks,
        steps=ctx.steps, step_source=ctx.step_source,
        kernel=dict(raw.kernel_detail) if raw.kernel_detail else None, memory=raw.extra.get("memory"),
    )
    if raw.core_counts:
        profile.versions.setdefault("cores", ",".join(f"{k}={v}" for k, v in sorted(raw.core_counts.items())))
    if ctx.derived and len(raw.kernels) and not ctx.timeline and not ctx.single_kernel:
        ctx.notes.append(M_("op types were derived from kernel names: the Type column is not recorded ({remedy})",
                            remedy=ctx.remedy("level1")))
    return profile


_BACKWARD = re.compile(r"Grad|Backprop|BackProp|^Apply(?:Adam|Momentum|Rms|Adagrad)|AdamW")


def workload_of(ctx: Kernels) -> str | None:
    """"training" when backward or optimizer kernels ran, "inference" when compute ran without them."""
    if ctx.single_kernel or ctx.producer == "cluster" or not ctx.compute_time:
        return None
    if ctx.light:
        ops = [row.op_type for row in ctx.rows if row.unit != "communication"]
    else:
        ops = ctx.frame.distinct(ctx.ops, ctx.frame.negate(ctx.communication))
    return "training" if any(_BACKWARD.search(op) for op in ops) else "inference"


def device_facts(raw: RawProfile) -> dict[str, Any]:
    """Chip name, core counts and AI Core clock, where the profile records them."""
    facts: dict[str, Any] = {"chip": raw.chip} if raw.chip else {}
    facts.update({key: value for key, value in raw.core_counts.items() if value})
    if raw.freq_mhz:
        facts["freq_mhz"] = raw.freq_mhz
    return facts


# ----------------------------------------------------------------------------------------------
# Step split
# ----------------------------------------------------------------------------------------------


def step_split(ctx: Kernels) -> tuple[list[StepSplit], str]:
    """The producer's own step split when it wrote one, else one computed from the task intervals."""
    raw, frame = ctx.raw, ctx.frame
    if raw.extra.get("steps"):
        return list(raw.extra["steps"]), str(raw.extra.get("step_source") or "")
    if ctx.single_kernel or not frame.n or not frame.has("start_us"):
        return [], ""
    starts = frame.floats("start_us")
    if frame.count(frame.present(starts)) != frame.n:
        return [], ""
    step_ids = frame.coded("step_id") if frame.has("step_id") else None
    if step_ids is not None and not any(frame.occurring(step_ids)):
        step_ids = None
    split = steps.from_intervals(starts, ctx.duration, ctx.communication, steps=step_ids,
                                 windows=raw.extra.get("step_windows"))
    return split, "task intervals"


# ----------------------------------------------------------------------------------------------
# Op-type rows
# ----------------------------------------------------------------------------------------------


def _op_type_rows(ctx: Kernels) -> list[OpTypeStat]:
    frame = ctx.frame
    groups = frame.pair(ctx.ops, ctx.units)
    tally = frame.tally(groups, weights=ctx.duration)
    order = {key: index for index, key in enumerate(tally.keys)}  # group code -> tally position
    index_of = [order[key] for key in groups.values]
    dtypes = _top_values(frame, groups, index_of, "input_dtypes")
    formats = _top_values(frame, groups, index_of, "input_formats")
    blocks = _most_common(frame, groups, index_of, "block_dim")
    waits = None
    if frame.has("wait_us"):
        values = frame.floats("wait_us")
        waits = frame.tally(groups, frame.present(values), values).sum_by_key()
    bounds = _bounds(ctx, groups, tally.keys)
    rows = []
    for position, ((op_type, unit), count, time_us) in enumerate(zip(tally.keys, tally.counts, tally.sums)):
        bound, pipe, ratio, why = bounds[position]
        rows.append(OpTypeStat(
            op_type=op_type or "(unknown)", family=ctx.family.get(op_type) or op_type or "(unknown)", unit=unit,
            count=count, time_us=round(time_us, 3), share=round(ctx.share(time_us), 6), bound=bound,
            dtypes=dtypes[position], formats=formats[position], block_dim=blocks[position],
            wait_us=round(waits.get((op_type, unit), 0.0), 3) if waits is not None else None,
            busiest_pipe=pipe, busiest_ratio=None if ratio is None else round(ratio, 4), bound_why=why,
        ))
    rows.sort(key=lambda r: (-r.time_us, r.op_type, r.unit))
    return rows


def statistic_rows(statistic: list[dict[str, Any]], families: dict[str, str]) -> list[OpTypeStat]:
    """Op-type rows of an op_statistic table (readers/light.py): count and time per (op type, unit), nothing per
    launch, so no bound class; shares are set by the caller once the device time is known."""
    merged: dict[tuple[str, str], OpTypeStat] = {}
    for item in statistic:
        op_type = str(item["op_type"])
        family = canonical_family(op_type)
        unit = unit_of(str(item["core_type"]), family, op_type)
        families.setdefault(op_type, family or op_type)
        row = merged.setdefault((op_type, unit), OpTypeStat(
            op_type=op_type, family=family or op_type, unit=unit, count=0, time_us=0.0, share=0.0,
            bound_why=N_("an op_statistic table has no launches to judge")))
        row.count += int(item["count"])
        row.time_us = round(row.time_us + float(item["total_us"]), 3)
    rows = list(merged.values())
    rows.sort(key=lambda r: (-r.time_us, r.op_type, r.unit))
    return rows


def _top_values(frame, groups, index_of: list[int], name: str, limit: int = 4) -> list[list[str]]:
    """Per group, the ``limit`` most common items of a ``;``-separated column (whole cells counted first)."""
    if not frame.has(name):
        return [[] for _ in index_of]
    position = {group: index_of[code] for code, group in enumerate(groups.values)}
    tally = frame.tally(frame.pair(groups, frame.coded(name)))
    items_of: dict[str, list[str]] = {}  # cell -> its items (a cell recurs across groups)
    counts: list[dict[str, int] | None] = [None] * len(index_of)  # item -> launches (dicts: a million are cheap)
    for (group, cell), times in zip(tally.keys, tally.counts):
        items = items_of.get(cell)
        if items is None:
            items = items_of[cell] = [item for item in map(str.strip, cell.split(";")) if item]
        at = position[group]
        counter = counts[at]
        if counter is None:
            counter = counts[at] = {}
        for item in items:
            counter[item] = counter.get(item, 0) + times
    return [[] if counter is None else [key for key, _ in most_common(counter, limit)] for counter in counts]


def _most_common(frame, groups, index_of: list[int], name: str) -> list[int | None]:
    """Per group, the most common recorded value of column ``name`` (the first seen among equals)."""
    found: list[int | None] = [None] * len(index_of)
    if not frame.has(name):
        return found
    best: list[int] = [0] * len(index_of)
    position = {group: index_of[code] for code, group in enumerate(groups.values)}
    tally = frame.tally(frame.pair(groups, frame.coded(name)))
    for (group, value), times in zip(tally.keys, tally.counts):
        at = position[group]
        if value is not None and times > best[at]:
            found[at], best[at] = value, times
    return found


def _pipes_for(unit: str, keys: Iterable[str]) -> list[str]:
    return [k for k in keys if (k.startswith("aic_") and unit in thresholds.AIC_UNITS | {"unknown"})
            or (k.startswith("aiv_") and unit in thresholds.AIV_UNITS | {"unknown"})
            or not k.startswith(("aic_", "aiv_"))]


def _bounds(ctx: Kernels, groups, keys: list) -> list[tuple[str, str | None, float | None, str]]:
    """Per op-type row (``keys``: (op type, unit) in tally order), (bound class, busiest pipe, its
    time-weighted ratio, why the class is unknown).

    The busiest pipe is the one closest to (or furthest over) its bound threshold. A side of a mix
    kernel that barely ran (aicore_time a few µs beside hundreds of µs of aiv_time) is left out: its
    ratios describe an idle core, not the work.
    """
    frame = ctx.frame
    found: list = [None] * len(keys)
    pending = []
    for position, (_, unit) in enumerate(keys):
        if unit in thresholds.NO_PIPE_UNITS:
            found[position] = ("unknown", None, None, M_("ran on {unit}, which has no pipe counters", unit=UNITS[unit]))
        elif not ctx.has_pipes:
            found[position] = ("unknown", None, None, N_("the profile has no pipe ratio columns"))
        else:
            pending.append(position)
    if not pending:
        return found
    long = frame.at_least(ctx.duration, ctx.min_duration)
    longs = frame.tally(groups, long).count_by_key()
    weights, totals = {}, {}
    for key, column in ctx.pipe.items():
        side = key[:3]
        mask = frame.both(long, frame.present(column), *([ctx.working[side]] if side in ctx.working else []))
        weights[key] = frame.tally(groups, mask, ctx.duration).sum_by_key()
        totals[key] = frame.tally(groups, mask, frame.product(column, ctx.duration)).sum_by_key()
    all_short = ("unknown", None, None,
                 M_("every launch is shorter than {limit}", limit=U.time_tick(thresholds.MIN_TASK_DURATION_US)))
    for position in pending:
        group = keys[position]
        if not longs.get(group):
            found[position] = all_short
            continue
        best, best_score, busiest, busiest_score, busiest_ratio = "none", 0.0, None, -1.0, None
        for key in _pipes_for(group[1], ctx.pipe):
            weight = weights[key].get(group, 0.0)
            if not weight:
                continue
            ratio = totals[key][group] / weight
            score = ratio / thresholds.BOUND_THRESHOLDS[key]
            if score > busiest_score:
                busiest, busiest_score, busiest_ratio = key, score, ratio
            if score >= 1.0 and score > best_score:
                best, best_score = thresholds.PIPE_CLASS[key], score
        if busiest is None:
            found[position] = ("unknown", None, None, N_("its pipe ratios are N/A (the PMU did not sample these launches)"))
        else:
            found[position] = (best, busiest, busiest_ratio, "")
    return found


def _working_sides(frame) -> dict[str, Any]:
    """Per launch, whether its cube (``aic``) and vector (``aiv``) sides did real work (aicore_time / aiv_time)."""
    if not (frame.has("aic_time_us") and frame.has("aiv_time_us")):
        return {}
    aic, aiv = frame.floats("aic_time_us"), frame.floats("aiv_time_us")
    share = thresholds.WORKING_SIDE_SHARE
    np = frame.np
    busiest = np.where(aic > aiv, aic, aiv)
    unknown = np.isnan(aic) | np.isnan(aiv)
    return {"aic": unknown | (aic >= share * busiest), "aiv": unknown | (aiv >= share * busiest)}


# ----------------------------------------------------------------------------------------------
# Ranks
# ----------------------------------------------------------------------------------------------


def _rank_summaries(raw: RawProfile) -> list[RankSummary]:
    return [RankSummary(**rank) for rank in raw.extra.get("ranks") or []]


# ----------------------------------------------------------------------------------------------
# Exports and JSON
# ----------------------------------------------------------------------------------------------


def kernel_rows(raw: RawProfile) -> Iterable[dict[str, Any]]:
    """The normalised kernels of a RawProfile, one dict per launch (for exports)."""
    ctx = Kernels(raw)
    table = ctx.table
    optional = {f: values for f in ("wait_us", "block_dim", "mix_block_dim", "input_shapes", "input_dtypes",
                                    "input_formats", "output_formats", "output_dtypes", "op_state")
                if (values := table.column(f)) is not None}
    pipes = {key: values for key, values in table.pipe.items() if len(values) == len(table)}
    names, ops, units, durations = ctx.names, ctx.op_type, ctx.unit, table.duration_us
    tasks = table.task_type or [""] * len(table)
    for i in range(len(table)):
        row = {"seq": i, "name": names[i], "op_type": ops[i], "family": ctx.family.get(ops[i]),
               "unit": units[i], "task_type": tasks[i], "duration_us": durations[i]}
        for field, values in optional.items():
            row[field] = values[i]
        for key, values in pipes.items():
            row[f"{key}_ratio"] = values[i]
        yield row


def steps_to_json(profile: Profile) -> dict[str, Any] | None:
    """The ``steps`` block: the source, the total split and each step's."""
    total = steps.total(profile.steps)
    if total is None:
        return None
    return {"source": profile.step_source, "total": steps.split_to_json(total),
            "per_step": [steps.split_to_json(s) for s in profile.steps]}


def profile_to_json(profile: Profile) -> dict[str, Any]:
    """The ``opprof-advisor/profile/1`` JSON document of a profile (shared by CLI, suggest and reports)."""
    source: dict[str, Any] = {"path": profile.path, "format": profile.format, "producer": profile.producer,
                              "workload": profile.workload, **profile.versions}
    if profile.chip:
        source["chip"] = profile.chip
    if profile.ranks:
        source["ranks"] = [
            {"rank": r.rank, "path": r.path, "device_time_us": r.device_time_us, "error": r.error,
             "computing_us": r.computing_us, "exposed_us": r.exposed_us, "free_us": r.free_us,
             "stage_us": r.stage_us}
            for r in profile.ranks
        ]
    document = {
        "schema": SCHEMA,
        "source": source,
        "device_time_us": profile.device_time_us,
        "compute_time_us": profile.compute_time_us,
        "communication_time_us": profile.communication_time_us,
        "op_types": [
            {"op_type": r.op_type, "family": r.family, "unit": r.unit, "count": r.count, "time_us": r.time_us,
             "share": r.share, "bound": r.bound, "busiest_pipe": r.busiest_pipe, "busiest_ratio": r.busiest_ratio,
             "block_dim": r.block_dim, "bound_why": r.bound_why or None, **({"stacks": r.stacks} if r.stacks else {})}
            for r in profile.op_types
        ],
        "symptoms": [{"id": s.id, "op_types": s.op_types, "share": s.share, "detail": s.detail,
                      "time_us": s.time_us, "ceiling_us": s.ceiling_us, "base": s.base,
                      **({"rank": s.rank} if s.rank else {})}  # slow_rank: the rank the others wait for
                     for s in profile.symptoms],
        "notes": list(profile.notes),
        "device": dict(profile.device),
        "steps": steps_to_json(profile),
        "roofline": roofline_to_json(profile.roofline),
        "families": families_to_json(profile.op_types),
        "op_types_total": len(profile.op_types),
    }
    if profile.cluster is not None:
        document["cluster"] = profile.cluster  # a folder of ranks: slow / fast rank, dispersion, links
    if profile.memory is not None:
        document["memory"] = profile.memory  # bytes and µs (readers/memory.py)
    return document
