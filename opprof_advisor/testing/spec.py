"""A synthetic workload: kernels (``KernelSpec``) expanded into launches from one seed, and their expected totals."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterable, Mapping

from opprof_advisor.readers import chips as _chips


#: AI Core / AI Vector core counts of the chips the writers know (info.json ``ai_core_num`` / ``aiv_num``).
CHIP_CORES: dict[str, tuple[int, int]] = dict(_chips.CHIP_CORES)


COMMUNICATION_TYPES = frozenset({"HCCL", "COMMUNICATION"})


NS_PER_US = 1000


BASE_NS = 1_736_408_883_704_643_212  # 2025-01-09, like the real torch_npu samples


UINT32_MAX = "4294967295"


FREQ_MHZ = 1800


@dataclass
class KernelSpec:
    """One kernel (op instance) of a synthetic workload, launched ``count`` times.

    ``task_type`` is the op_summary unit (``AI_CORE``, ``AI_VECTOR_CORE``, ``MIX_AIC``, ``MIX_AIV``,
    ``AI_CPU``, ``DSA_SQE``, ``HCCL`` / ``COMMUNICATION``); for msOpProf writers ``cube`` /
    ``vector`` / ``mix`` are accepted too. ``duration_us`` is the mean launch time; with
    ``jitter`` > 0 launches vary but their sum stays ``count * duration_us`` (to the ns).
    ``pipe`` holds 0..1 ratios under the ``readers.base.PIPE_KEYS`` names (``aic_cube``,
    ``aiv_vec``, ``aiv_mte2`` ...); empty means typical defaults for the unit.
    """

    name: str
    op_type: str = ""
    task_type: str = "AI_CORE"
    duration_us: float = 10.0
    count: int = 1
    block_dim: int = 0
    mix_block_dim: int = 0
    wait_us: float = 2.0
    jitter: float = 0.0
    input_shapes: str = ""
    input_dtypes: str = "FLOAT16"
    input_formats: str = "ND"
    output_shapes: str = ""
    output_dtypes: str = "FLOAT16"
    output_formats: str = "ND"
    op_state: str = "static"
    pipe: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.op_type:
            self.op_type = self.name
        if self.count < 1 or self.duration_us < 0:
            raise ValueError(f"kernel {self.name!r}: count must be >= 1 and duration_us >= 0")

    @property
    def is_communication(self) -> bool:
        return self.task_type.upper() in COMMUNICATION_TYPES


@dataclass(frozen=True)
class Launch:
    """One launch of a spec on the device timeline (integer ns, so every format agrees)."""

    spec: KernelSpec
    index: int  # launch number within the spec
    start_ns: int
    dur_ns: int
    wait_ns: int
    pipe: dict[str, float]

    @property
    def duration_us(self) -> float:
        return self.dur_ns / NS_PER_US


def as_specs(kernels: Iterable[KernelSpec | Mapping[str, Any]]) -> list[KernelSpec]:
    """Coerce dicts to KernelSpec (unknown keys are an error, so typos do not pass silently)."""
    names = {f.name for f in fields(KernelSpec)}
    specs = []
    for k in kernels:
        if isinstance(k, KernelSpec):
            specs.append(k)
            continue
        unknown = set(k) - names
        if unknown:
            raise ValueError(f"unknown KernelSpec keys: {sorted(unknown)}")
        specs.append(KernelSpec(**k))
    return specs


def spec_totals(kernels: Iterable[KernelSpec | Mapping[str, Any]]) -> dict[str, float]:
    """Expected total time per op type in µs (what a reader must find)."""
    totals: dict[str, float] = defaultdict(float)
    for s in as_specs(kernels):
        totals[s.op_type] += round(s.count * s.duration_us * NS_PER_US) / NS_PER_US
    return dict(totals)


def expand_launches(kernels: Iterable[KernelSpec | Mapping[str, Any]], *, seed: int = 0,
                    start_ns: int = BASE_NS) -> list[Launch]:
    """Spread every spec's launches over one timeline, as a model's layers interleave."""
    rng = random.Random(seed)
    specs = as_specs(kernels)
    order = sorted(
        ((j + 0.5) / s.count, i, j) for i, s in enumerate(specs) for j in range(s.count)
    )
    durations = {i: _launch_durations(s, rng) for i, s in enumerate(specs)}
    launches: list[Launch] = []
    clock = start_ns
    for _, i, j in order:
        spec = specs[i]
        wait = 0 if not launches else _jittered_ns(spec.wait_us, 0.2, rng)
        start = clock + wait
        dur = durations[i][j]
        launches.append(Launch(spec, j, start, dur, wait, launch_pipe(spec, rng)))
        clock = start + dur
    return launches


def _launch_durations(spec: KernelSpec, rng: random.Random) -> list[int]:
    total = round(spec.count * spec.duration_us * NS_PER_US)
    if spec.jitter <= 0 or spec.count == 1:
        base = [total // spec.count] * spec.count
    else:
        weights = [max(0.05, 1 + rng.gauss(0, spec.jitter)) for _ in range(spec.count)]
        scale = total / sum(weights)
        base = [max(1, int(w * scale)) for w in weights]
    base[-1] += total - sum(base)  # the last launch absorbs rounding: the sum is exact
    return base


def _jittered_ns(us: float, rel: float, rng: random.Random) -> int:
    return max(0, round(us * NS_PER_US * (1 + rng.uniform(-rel, rel))))


_DEFAULT_PIPE = {
    "cube": {"aic_cube": 0.62, "aic_mte1": 0.35, "aic_mte2": 0.41, "aic_fixpipe": 0.18, "aic_scalar": 0.09},
    "vector": {"aiv_vec": 0.48, "aiv_mte2": 0.37, "aiv_mte3": 0.21, "aiv_scalar": 0.12},
}


def unit_sides(task_type: str) -> tuple[str, ...]:
    """Which sub-cores ran a unit: ("cube",), ("vector",), both, or none (AI CPU, comm ...)."""
    t = task_type.upper()
    if t in ("AI_CORE", "CUBE"):
        return ("cube",)
    if t in ("AI_VECTOR_CORE", "VECTOR"):
        return ("vector",)
    if t in ("MIX_AIC", "MIX_AIV", "MIX"):
        return ("cube", "vector")
    return ()


def launch_pipe(spec: KernelSpec, rng: random.Random) -> dict[str, float]:
    ratios: dict[str, float] = {}
    for side in unit_sides(spec.task_type):
        ratios.update(_DEFAULT_PIPE[side])
    ratios.update(spec.pipe)
    return {k: min(1.0, max(0.0, round(v * (1 + rng.uniform(-0.03, 0.03)), 3))) for k, v in ratios.items()}


def with_comm_label(launches: list[Launch], label: str) -> list[Launch]:
    """Communication rows were ``HCCL`` up to early 2025 and ``COMMUNICATION`` since CANN 8.3."""
    out = []
    for l in launches:
        if l.spec.is_communication and l.spec.task_type != label:
            l = replace(l, spec=replace(l.spec, task_type=label))
        out.append(l)
    return out


def seeded_rng(seed: int, kind: str) -> random.Random:
    """A generator per writer kind: one seed gives each producer its own folder letters and ids."""
    return random.Random(f"{seed}:{kind}")
