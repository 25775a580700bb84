"""Plain data models shared by the knowledge base, the profile readers and the recommender.

No I/O and no third-party imports here: every other module may import this one. The classes are Records
(opprof_advisor/core/records.py: written-out ``__init__``, dataclass semantics), which every command builds at
start-up far more cheaply than dataclasses.
"""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.records import FrozenRecord, Record


# --------------------------------------------------------------------------------------------
# Knowledge base
# --------------------------------------------------------------------------------------------


class Gain(FrozenRecord):
    """A sourced gain range of a KB entry.

    ``scope`` is ``operators`` (fraction of the matched operators' time the fix recovers; the
    recommender scales it by their share of device time) or ``end_to_end`` (a whole-model result
    observed in a case, shown as "observed in that case", never as the user's expected gain).
    """

    low_pct: float
    high_pct: float
    metric: str  # e.g. "latency", "throughput", "op_time", "step_time", "kernel_time"
    scope: str  # "operators" | "end_to_end"
    source: str  # the source that states the figure
    #: operator families the source measured the figure on (default: the entry's own operators); an
    #: operators-scope figure is applied only to the time of these families' rows
    measured_on: list[str]
    #: the source states the range as an estimate, not a measurement (shown as such, never as observed)
    estimate: bool

    def __init__(self, low_pct: float, high_pct: float, metric: str, scope: str, source: str,
                 measured_on: list[str] | None = None, estimate: bool = False) -> None:
        object.__setattr__(self, "low_pct", low_pct)
        object.__setattr__(self, "high_pct", high_pct)
        object.__setattr__(self, "metric", metric)
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "measured_on", [] if measured_on is None else measured_on)
        object.__setattr__(self, "estimate", estimate)


class Entry(Record):
    """One knowledge-base entry (a markdown file under kb/ or the user KB folder)."""

    id: str
    kind: str  # case | recipe | pattern | tip
    title: str
    summary: str
    operators: list[str]  # canonical families (see operators.py)
    symptoms: list[str]  # ids from vocabulary.SYMPTOMS
    tags: list[str]
    models: list[str]
    hardware: list[str]  # e.g. ["Atlas A2", "Ascend910B"]; empty = any
    cann: str | None  # e.g. ">=8.0"; None = any
    gain: Gain | None
    evidence: str  # A | B | C | D
    sources: list[str]
    related: list[str]
    # Preconditions (vocabulary.REQUIRE_KEYS): one {key: [values]} per item, all must hold;
    # ``min_share`` holds a one-item list with a float.
    requires: list[dict[str, list[Any]]]
    # Where the advice applies (vocabulary.APPLIES_KEYS): key -> the workload values it fits; a key left out
    # means any. A remedy whose workload does not fit is never shown (advice/remedies.py).
    applies_to: dict[str, list[str]]
    # Ids of entries whose advice is the opposite for the same situation: never shown together.
    contradicts: list[str]
    # Chinese texts for zh output: "title", "summary", "first_step" (front matter ``zh:``).
    zh: dict[str, str]
    # cases: family -> weight from its place in the front matter list (1/rank, normalised: kb.op_mix_weights)
    op_mix: dict[str, float]
    body: str
    path: str
    origin: str  # builtin | user

    def __init__(self, id: str, kind: str, title: str, summary: str = "", operators: list[str] | None = None,
                 symptoms: list[str] | None = None, tags: list[str] | None = None, models: list[str] | None = None,
                 hardware: list[str] | None = None, cann: str | None = None, gain: Gain | None = None,
                 evidence: str = "D", sources: list[str] | None = None, related: list[str] | None = None,
                 requires: list[dict[str, list[Any]]] | None = None,
                 applies_to: dict[str, list[str]] | None = None, contradicts: list[str] | None = None,
                 zh: dict[str, str] | None = None, op_mix: dict[str, float] | None = None, body: str = "",
                 path: str = "", origin: str = "builtin") -> None:
        self.id = id
        self.kind = kind
        self.title = title
        self.summary = summary
        self.operators = [] if operators is None else operators
        self.symptoms = [] if symptoms is None else symptoms
        self.tags = [] if tags is None else tags
        self.models = [] if models is None else models
        self.hardware = [] if hardware is None else hardware
        self.cann = cann
        self.gain = gain
        self.evidence = evidence
        self.sources = [] if sources is None else sources
        self.related = [] if related is None else related
        self.requires = [] if requires is None else requires
        self.applies_to = {} if applies_to is None else applies_to
        self.contradicts = [] if contradicts is None else contradicts
        self.zh = {} if zh is None else zh
        self.op_mix = {} if op_mix is None else op_mix
        self.body = body
        self.path = path
        self.origin = origin


# --------------------------------------------------------------------------------------------
# Profiles
# --------------------------------------------------------------------------------------------


class OpTypeStat(Record):
    """Time of one (op type, unit) pair in a profile."""

    op_type: str
    family: str  # canonical family, or the op type itself when unknown
    unit: str  # see vocabulary.UNITS
    count: int
    time_us: float
    share: float  # of device_time_us, 0..1
    bound: str  # see vocabulary.BOUND_CLASSES
    dtypes: list[str]
    formats: list[str]
    block_dim: int | None  # the most common block dim of its launches
    wait_us: float | None  # summed wait time before its launches, where recorded
    busiest_pipe: str | None  # the pipe with the highest time-weighted ratio (readers.base.PIPE_KEYS)
    busiest_ratio: float | None
    bound_why: str  # why the bound class is unknown (every launch too short, no pipe counters ...)

    def __init__(self, op_type: str, family: str, unit: str, count: int, time_us: float, share: float,
                 bound: str = "unknown", dtypes: list[str] | None = None, formats: list[str] | None = None,
                 block_dim: int | None = None, wait_us: float | None = None, busiest_pipe: str | None = None,
                 busiest_ratio: float | None = None, bound_why: str = "") -> None:
        self.op_type = op_type
        self.family = family
        self.unit = unit
        self.count = count
        self.time_us = time_us
        self.share = share
        self.bound = bound
        self.dtypes = [] if dtypes is None else dtypes
        self.formats = [] if formats is None else formats
        self.block_dim = block_dim
        self.wait_us = wait_us
        self.busiest_pipe = busiest_pipe
        self.busiest_ratio = busiest_ratio
        self.bound_why = bound_why


class Symptom(Record):
    """A deterministic finding about a profile, from vocabulary.SYMPTOMS."""

    id: str
    op_types: list[str]
    share: float  # share of device time of the op types concerned (of the step for step-split findings), 0..1
    detail: str
    time_us: float  # time of what the symptom concerns
    ceiling_us: float | None  # the most fixing it can save, where the profile bounds it

    def __init__(self, id: str, op_types: list[str], share: float, detail: str, time_us: float = 0.0,
                 ceiling_us: float | None = None) -> None:
        self.id = id
        self.op_types = op_types
        self.share = share
        self.detail = detail
        self.time_us = time_us
        self.ceiling_us = ceiling_us


class StepSplit(Record):
    """Where one step's wall time went (µs); ``step`` None for a whole window or a total."""

    step: str | None
    computing_us: float
    communication_us: float
    exposed_us: float  # communication not overlapped by computing
    overlapped_us: float
    free_us: float  # the device busy with neither (host-bound, idle)
    stage_us: float  # the step's wall time: first task start to last task end
    bubble_us: float | None  # pipeline-parallel receive wait, where the producer records it
    preparing_us: float | None  # step start to its first device task, where recorded
    largest_gap_us: float | None  # longest idle gap between tasks (splits computed from task intervals)

    def __init__(self, step: str | None, computing_us: float = 0.0, communication_us: float = 0.0,
                 exposed_us: float = 0.0, overlapped_us: float = 0.0, free_us: float = 0.0, stage_us: float = 0.0,
                 bubble_us: float | None = None, preparing_us: float | None = None,
                 largest_gap_us: float | None = None) -> None:
        self.step = step
        self.computing_us = computing_us
        self.communication_us = communication_us
        self.exposed_us = exposed_us
        self.overlapped_us = overlapped_us
        self.free_us = free_us
        self.stage_us = stage_us
        self.bubble_us = bubble_us
        self.preparing_us = preparing_us
        self.largest_gap_us = largest_gap_us


class RankSummary(Record):
    """One rank of a multi-rank folder."""

    rank: str  # "rank<rank_id>" where the profile records its rank id, else the folder name
    path: str
    device_time_us: float | None
    error: str | None
    computing_us: float | None  # from the rank's step split (or its compute kernels)
    exposed_us: float | None  # communication not overlapped
    free_us: float | None
    stage_us: float | None

    def __init__(self, rank: str, path: str, device_time_us: float | None, error: str | None = None,
                 computing_us: float | None = None, exposed_us: float | None = None, free_us: float | None = None,
                 stage_us: float | None = None) -> None:
        self.rank = rank
        self.path = path
        self.device_time_us = device_time_us
        self.error = error
        self.computing_us = computing_us
        self.exposed_us = exposed_us
        self.free_us = free_us
        self.stage_us = stage_us


class RooflineRow(Record):
    """One op type against the chip's roofs (see opprof_advisor/profile/roofline.py for every rule).

    ``status``: ``judged`` (efficiency computed), ``implausible`` (above 110 % of attainable: the
    peak, the shapes or the units are wrong; never a gain) or ``not_judged`` (``reason`` says why).
    Fractions are 0..1 of the op type's time; rates are TFLOP/s and GB/s; times µs.
    """

    op_type: str
    unit: str
    time_us: float
    share: float  # of device time
    status: str
    reason: str
    work_source: str  # "shapes" (formula over Input Shapes) or "measured" (msOpProf counters)
    dtype: str  # dtype class the compute roof is for: fp16, bf16, int8, fp32 ...
    roof: str  # limiting roof: "compute" or "bandwidth"
    judged_time_us: float  # time of the launches whose work could be computed
    flops: float | None
    bytes: float | None
    achieved_tflops: float | None
    achieved_gbps: float | None
    intensity: float | None  # flop per byte
    attainable_tflops: float | None
    efficiency: float | None  # achieved / attainable
    headroom_us: float | None  # judged time x (1 - efficiency)
    model_gain_low: float | None  # model estimate, fraction of the op type's time
    model_gain_high: float | None
    basis: str  # how the work was counted; for a gain: "model estimate: ..."

    def __init__(self, op_type: str, unit: str, time_us: float, share: float, status: str, reason: str = "",
                 work_source: str = "", dtype: str = "", roof: str = "", judged_time_us: float = 0.0,
                 flops: float | None = None, bytes: float | None = None, achieved_tflops: float | None = None,
                 achieved_gbps: float | None = None, intensity: float | None = None,
                 attainable_tflops: float | None = None, efficiency: float | None = None,
                 headroom_us: float | None = None, model_gain_low: float | None = None,
                 model_gain_high: float | None = None, basis: str = "") -> None:
        self.op_type = op_type
        self.unit = unit
        self.time_us = time_us
        self.share = share
        self.status = status
        self.reason = reason
        self.work_source = work_source
        self.dtype = dtype
        self.roof = roof
        self.judged_time_us = judged_time_us
        self.flops = flops
        self.bytes = bytes
        self.achieved_tflops = achieved_tflops
        self.achieved_gbps = achieved_gbps
        self.intensity = intensity
        self.attainable_tflops = attainable_tflops
        self.efficiency = efficiency
        self.headroom_us = headroom_us
        self.model_gain_low = model_gain_low
        self.model_gain_high = model_gain_high
        self.basis = basis


class Roofline(Record):
    """The chip's roofs as used (``peaks``: figure -> value, ``peak_sources``: figure -> where from) and one row per op type."""

    peaks: dict[str, Any]
    peak_sources: dict[str, str]
    rows: list[RooflineRow]
    notes: list[str]
    #: when the profile names no chip whose roofs are known: the rows on each plausible part (roofline.PLAUSIBLE)
    by_chip: dict[str, list[RooflineRow]]

    def __init__(self, peaks: dict[str, Any] | None = None, peak_sources: dict[str, str] | None = None,
                 rows: list[RooflineRow] | None = None, notes: list[str] | None = None,
                 by_chip: dict[str, list[RooflineRow]] | None = None) -> None:
        self.peaks = {} if peaks is None else peaks
        self.peak_sources = {} if peak_sources is None else peak_sources
        self.rows = [] if rows is None else rows
        self.notes = [] if notes is None else notes
        self.by_chip = {} if by_chip is None else by_chip

    def row(self, op_type: str, unit: str | None = None) -> RooflineRow | None:
        """The row of an op type (and unit), or None."""
        return next((r for r in self.rows if r.op_type == op_type and unit in (None, r.unit)), None)


class Profile(Record):
    """The normalised operator profile every reader returns."""

    path: str
    format: str  # e.g. "msopprof-device", "msopprof-simulator", "msprof-text", "msprof-db", "torch-npu-text", "torch-npu-db", "multi-rank"
    versions: dict[str, str]  # cann, torch_npu, profiler_level, ...
    producer: str  # vocabulary.PRODUCERS: msopprof, msprof, torch_npu, cluster
    workload: str | None  # "training" (backward kernels ran), "inference", None when it cannot be told
    chip: str | None
    # What the profile says about the device: "chip", "aic" / "aiv" (core counts), "freq_mhz" (AI Core clock)
    device: dict[str, Any]
    device_time_us: float
    compute_time_us: float
    communication_time_us: float
    op_types: list[OpTypeStat]  # sorted by time, descending
    symptoms: list[Symptom]
    notes: list[str]  # "cannot judge <what>: <why> (collect with <switch>)"
    ranks: list[RankSummary]
    steps: list[StepSplit]  # per step, in step order
    step_source: str  # which table or method the step split came from
    kernel: dict[str, Any] | None  # msopprof single-kernel detail: pipe ratios, block imbalance ...
    roofline: Roofline | None  # op types against the chip's roofs (opprof_advisor/profile/roofline.py)
    # A folder of ranks: slow / fast rank, per-op-type dispersion, links (opprof_advisor/cluster/reduce.py)
    cluster: dict[str, Any] | None

    def __init__(self, path: str, format: str, versions: dict[str, str] | None = None, producer: str = "",
                 workload: str | None = None, chip: str | None = None, device: dict[str, Any] | None = None,
                 device_time_us: float = 0.0, compute_time_us: float = 0.0, communication_time_us: float = 0.0,
                 op_types: list[OpTypeStat] | None = None, symptoms: list[Symptom] | None = None,
                 notes: list[str] | None = None, ranks: list[RankSummary] | None = None,
                 steps: list[StepSplit] | None = None, step_source: str = "", kernel: dict[str, Any] | None = None,
                 roofline: Roofline | None = None, cluster: dict[str, Any] | None = None) -> None:
        self.path = path
        self.format = format
        self.versions = {} if versions is None else versions
        self.producer = producer
        self.workload = workload
        self.chip = chip
        self.device = {} if device is None else device
        self.device_time_us = device_time_us
        self.compute_time_us = compute_time_us
        self.communication_time_us = communication_time_us
        self.op_types = [] if op_types is None else op_types
        self.symptoms = [] if symptoms is None else symptoms
        self.notes = [] if notes is None else notes
        self.ranks = [] if ranks is None else ranks
        self.steps = [] if steps is None else steps
        self.step_source = step_source
        self.kernel = kernel
        self.roofline = roofline
        self.cluster = cluster

    def symptom_ids(self) -> set[str]:
        return {s.id for s in self.symptoms}

    @property
    def reference_us(self) -> float:
        """The time shares of the advice are taken of: the step's wall time where the profile has a step split,
        else device time."""
        stage = sum(s.stage_us for s in self.steps)
        return stage if stage > 0 else self.device_time_us

    @property
    def reference(self) -> str:
        """What ``reference_us`` is: "step" or "device time"."""
        return "step" if sum(s.stage_us for s in self.steps) > 0 else "device time"

    def family_shares(self) -> dict[str, float]:
        """Share of device time per family (summed over units)."""
        shares: dict[str, float] = {}
        for row in self.op_types:
            shares[row.family] = shares.get(row.family, 0.0) + row.share
        return shares
