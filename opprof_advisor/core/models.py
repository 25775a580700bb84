"""Plain data models shared by the knowledge base, the profile readers and the recommender.

No I/O and no third-party imports here: every other module may import this one. The classes are dataclasses
with the Record mixin (opprof_advisor/core/records.py: ``to_dict`` and ``replace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opprof_advisor.core.records import Record


# --------------------------------------------------------------------------------------------
# Knowledge base
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gain(Record):
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
    measured_on: list[str] = field(default_factory=list)
    #: the source states the range as an estimate, not a measurement (shown as such, never as observed)
    estimate: bool = False
    #: the chips the figure was measured on (default: the entry's ``hardware``); a figure measured on some chips
    #: is used as a profile's expected gain only when the profile ran on one of them (GAIN-MODELS.md: the scope fits)
    hardware: list[str] = field(default_factory=list)


@dataclass
class Entry(Record):
    """One knowledge-base entry (a markdown file under kb/ or the user KB folder)."""

    id: str
    kind: str  # case | recipe | pattern | tip
    title: str
    summary: str = ""
    operators: list[str] = field(default_factory=list)  # canonical families (see operators.py)
    symptoms: list[str] = field(default_factory=list)  # ids from vocabulary.SYMPTOMS
    tags: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    hardware: list[str] = field(default_factory=list)  # e.g. ["Atlas A2", "Ascend910B"]; empty = any
    cann: str | None = None  # e.g. ">=8.0"; None = any
    gain: Gain | None = None
    evidence: str = "D"  # A | B | C | D
    sources: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    # Preconditions (vocabulary.REQUIRE_KEYS): one {key: [values]} per item, all must hold;
    # ``min_share`` holds a one-item list with a float.
    requires: list[dict[str, list[Any]]] = field(default_factory=list)
    # Where the advice applies (vocabulary.APPLIES_KEYS): key -> the workload values it fits; a key left out
    # means any. A remedy whose workload does not fit is never shown (advice/remedies.py).
    applies_to: dict[str, list[str]] = field(default_factory=dict)
    # Ids of entries whose advice is the opposite for the same situation: never shown together.
    contradicts: list[str] = field(default_factory=list)
    # Chinese texts for zh output: "title", "summary", "first_step" (front matter ``zh:``).
    zh: dict[str, str] = field(default_factory=dict)
    # cases: family -> weight from its place in the front matter list (1/rank, normalised: kb.op_mix_weights)
    op_mix: dict[str, float] = field(default_factory=dict)
    body: str = ""
    path: str = ""
    origin: str = "builtin"  # builtin | user


# --------------------------------------------------------------------------------------------
# Profiles
# --------------------------------------------------------------------------------------------


@dataclass
class OpTypeStat(Record):
    """Time of one (op type, unit) pair in a profile."""

    op_type: str
    family: str  # canonical family, or the op type itself when unknown
    unit: str  # see vocabulary.UNITS
    count: int
    time_us: float
    share: float  # of device_time_us, 0..1
    bound: str = "unknown"  # see vocabulary.BOUND_CLASSES
    dtypes: list[str] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    block_dim: int | None = None  # the most common block dim of its launches
    wait_us: float | None = None  # summed wait time before its launches, where recorded
    busiest_pipe: str | None = None  # the pipe with the highest time-weighted ratio (readers.base.PIPE_KEYS)
    busiest_ratio: float | None = None
    bound_why: str = ""  # why the bound class is unknown (every launch too short, no pipe counters ...)
    stacks: list[dict[str, Any]] = field(default_factory=list)  # where in the user's code (readers/callstacks.py)


@dataclass
class Symptom(Record):
    """A deterministic finding about a profile, from vocabulary.SYMPTOMS."""

    id: str
    op_types: list[str]
    share: float  # share of ``base`` of what the symptom concerns, 0..1
    detail: str
    time_us: float = 0.0  # time of what the symptom concerns
    ceiling_us: float | None = None  # the most fixing it can save, where the profile bounds it
    base: str = "device time"  # what ``share`` is a share of: "device time" or "step" (the step's wall time)
    rank: str | None = None  # the rank a job-level symptom names (slow_rank: the rank the others wait for)


@dataclass
class StepSplit(Record):
    """Where one step's wall time went (µs); ``step`` None for a whole window or a total."""

    step: str | None
    computing_us: float = 0.0
    communication_us: float = 0.0
    exposed_us: float = 0.0  # communication not overlapped by computing
    overlapped_us: float = 0.0
    free_us: float = 0.0  # the device busy with neither (host-bound, idle)
    stage_us: float = 0.0  # the step's wall time: first task start to last task end
    bubble_us: float | None = None  # pipeline-parallel receive wait, where the producer records it
    preparing_us: float | None = None  # step start to its first device task, where recorded
    largest_gap_us: float | None = None  # longest idle gap between tasks (splits computed from task intervals)


@dataclass
class RankSummary(Record):
    """One rank of a multi-rank folder."""

    rank: str  # "rank<rank_id>" where the profile records its rank id, else the folder name
    path: str
    device_time_us: float | None
    error: str | None = None
    computing_us: float | None = None  # from the rank's step split (or its compute kernels)
    exposed_us: float | None = None  # communication not overlapped
    free_us: float | None = None
    stage_us: float | None = None


@dataclass
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
    reason: str = ""
    work_source: str = ""  # "shapes" (formula over Input Shapes) or "measured" (msOpProf counters)
    dtype: str = ""  # dtype class the compute roof is for: fp16, bf16, int8, fp32 ...
    roof: str = ""  # limiting roof: "compute" or "bandwidth"
    judged_time_us: float = 0.0  # time of the launches whose work could be computed
    flops: float | None = None
    bytes: float | None = None
    achieved_tflops: float | None = None
    achieved_gbps: float | None = None
    intensity: float | None = None  # flop per byte
    attainable_tflops: float | None = None
    efficiency: float | None = None  # achieved / attainable
    headroom_us: float | None = None  # judged time x (1 - efficiency)
    model_gain_low: float | None = None  # model estimate, fraction of the op type's time
    model_gain_high: float | None = None
    basis: str = ""  # how the work was counted; for a gain: "model estimate: ..."


@dataclass
class Roofline(Record):
    """The chip's roofs as used (``peaks``: figure -> value, ``peak_sources``: figure -> where from) and one row per op type."""

    peaks: dict[str, Any] = field(default_factory=dict)
    peak_sources: dict[str, str] = field(default_factory=dict)
    rows: list[RooflineRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: when the profile names no chip whose roofs are known: the rows on each plausible part (roofline.PLAUSIBLE)
    by_chip: dict[str, list[RooflineRow]] = field(default_factory=dict)

    def row(self, op_type: str, unit: str | None = None) -> RooflineRow | None:
        """The row of an op type (and unit), or None."""
        return next((r for r in self.rows if r.op_type == op_type and unit in (None, r.unit)), None)


@dataclass
class Profile(Record):
    """The normalised operator profile every reader returns."""

    path: str
    format: str  # e.g. "msopprof-device", "msopprof-simulator", "msprof-text", "msprof-db", "torch-npu-text", "torch-npu-db", "multi-rank"
    versions: dict[str, str] = field(default_factory=dict)  # cann, torch_npu, profiler_level, ...
    producer: str = ""  # vocabulary.PRODUCERS: msopprof, msprof, torch_npu, cluster
    workload: str | None = None  # "training" (backward kernels ran), "inference", None when it cannot be told
    chip: str | None = None
    # What the profile says about the device: "chip", "aic" / "aiv" (core counts), "freq_mhz" (AI Core clock)
    device: dict[str, Any] = field(default_factory=dict)
    device_time_us: float = 0.0
    compute_time_us: float = 0.0
    communication_time_us: float = 0.0
    op_types: list[OpTypeStat] = field(default_factory=list)  # sorted by time, descending
    symptoms: list[Symptom] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # "cannot judge <what>: <why> (collect with <switch>)"
    ranks: list[RankSummary] = field(default_factory=list)
    steps: list[StepSplit] = field(default_factory=list)  # per step, in step order
    step_source: str = ""  # which table or method the step split came from
    kernel: dict[str, Any] | None = None  # msopprof single-kernel detail: pipe ratios, block imbalance ...
    roofline: Roofline | None = None  # op types against the chip's roofs (opprof_advisor/profile/roofline.py)
    # A folder of ranks: slow / fast rank, per-op-type dispersion, links (opprof_advisor/cluster/reduce.py)
    cluster: dict[str, Any] | None = None
    # The memory summary (peaks per allocator component, the gap, holders at the peak; readers/memory.py)
    memory: dict[str, Any] | None = None

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
