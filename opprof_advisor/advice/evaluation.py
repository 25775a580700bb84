"""Quality benchmark of the recommender: hit@1, hit@3 and MRR over labelled scenario profiles.

A bench folder (``data/bench/``, written by ``data/make_bench.py``) holds ``scenarios.json``::

    {"schema": "opprof-advisor/bench/1",
     "scenarios": [{"name": ..., "path": <relative to the folder>, "format": ..., "expect": <entry id>
                    or null, "model": <hint> or null, "max_gain_pct": <float> or null, "about": ...}]}

``expect`` names the advice that must appear in the top 3. A scenario with ``expect: null`` is a
healthy profile: it counts as a hit (rank 1) when no suggestion promises more than
``max_gain_pct`` percent of device time, and as a miss otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from opprof_advisor.core.errors import AdvisorError, ProfileError
from opprof_advisor.core.models import Entry
from opprof_advisor.advice.suggest import advise
from opprof_advisor.profiles import read_profile

BENCH_SCHEMA = "opprof-advisor/bench/1"
EVAL_SCHEMA = "opprof-advisor/eval/1"
TOP = 5


@dataclass
class Scenario:
    """One labelled profile of the bench."""

    name: str
    path: Path
    format: str
    expect: str | None
    model: str | None = None
    max_gain_pct: float | None = None
    about: str = ""


@dataclass
class ScenarioResult:
    """How the recommender did on one scenario."""

    scenario: Scenario
    rank: int | None  # rank of the expected entry (1-based), None when absent from the top TOP
    top_ids: list[str]
    max_gain_pct: float  # largest expected high_pct among the suggestions
    gain_within_share: bool  # every suggestion's gain <= its matched share
    error: str | None = None

    @property
    def hit1(self) -> bool:
        return self.rank == 1

    @property
    def hit3(self) -> bool:
        return self.rank is not None and self.rank <= 3

    @property
    def reciprocal_rank(self) -> float:
        return 1.0 / self.rank if self.rank else 0.0


@dataclass
class BenchReport:
    """Per-scenario results and the overall figures."""

    results: list[ScenarioResult] = field(default_factory=list)

    def _mean(self, values: Sequence[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    @property
    def hit1(self) -> float:
        return self._mean([float(r.hit1) for r in self.results])

    @property
    def hit3(self) -> float:
        return self._mean([float(r.hit3) for r in self.results])

    @property
    def mrr(self) -> float:
        return self._mean([r.reciprocal_rank for r in self.results])


def load_scenarios(bench_dir: Path | str) -> list[Scenario]:
    """Read ``scenarios.json`` of a bench folder; raises ProfileError when missing or malformed."""
    bench_dir = Path(bench_dir)
    path = bench_dir / "scenarios.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProfileError("no scenarios.json in the bench folder", path=bench_dir,
                           hint="generate it with `python data/make_bench.py`") from None
    except (OSError, ValueError) as exc:
        raise ProfileError(f"cannot read the bench labels ({exc})", path=path) from None
    if not isinstance(data, dict) or data.get("schema") != BENCH_SCHEMA:
        raise ProfileError(f"not a bench file (schema must be {BENCH_SCHEMA})", path=path)
    try:
        return [
            Scenario(
                name=s["name"], path=bench_dir / s["path"], format=s.get("format", ""), expect=s.get("expect"),
                model=s.get("model"), max_gain_pct=s.get("max_gain_pct"), about=s.get("about", ""),
            )
            for s in data["scenarios"]
        ]
    except (KeyError, TypeError) as exc:
        raise ProfileError(f"malformed scenario ({exc!r} missing)", path=path) from None


def evaluate_scenario(scenario: Scenario, entries: list[Entry], matcher: Any) -> ScenarioResult:
    """Read one scenario's profile, suggest, and find the rank of the expected entry."""
    try:
        profile = read_profile(scenario.path)
    except AdvisorError as exc:
        return ScenarioResult(scenario, None, [], 0.0, True, error=str(exc))
    rows = advise(profile, entries, top=TOP, model=scenario.model, matcher=matcher)["suggestions"]
    # a finding holds the expected entry when it is its lead remedy or one of the alternatives under it
    remedies = [[r["id"] for r in s["remedies"]] for s in rows]
    ids = [found[0] if found else s["id"] for s, found in zip(rows, remedies)]
    gains = [s["expected_gain"]["high_pct"] for s in rows if s["expected_gain"]]
    within = all(
        s["expected_gain"] is None or s["expected_gain"]["high_us"] <= s["stake_us"] + 1e-6 for s in rows
    )
    top_gain = max(gains, default=0.0)
    if scenario.expect is None:
        limit = scenario.max_gain_pct if scenario.max_gain_pct is not None else 10.0
        rank = 1 if top_gain <= limit else None
    else:
        rank = next((i for i, found in enumerate(remedies, start=1) if scenario.expect in found), None)
    return ScenarioResult(scenario, rank, ids, top_gain, within)


def evaluate_bench(
    bench_dir: Path | str,
    entries: list[Entry],
    matcher: Any,
    progress: Callable[[int, int], None] | None = None,
) -> BenchReport:
    """Evaluate every scenario of a bench folder."""
    scenarios = load_scenarios(bench_dir)
    report = BenchReport()
    for done, scenario in enumerate(scenarios, start=1):
        report.results.append(evaluate_scenario(scenario, entries, matcher))
        if progress:
            progress(done, len(scenarios))
    return report


def report_to_json(report: BenchReport) -> dict[str, Any]:
    """The ``opprof-advisor/eval/1`` document."""
    return {
        "schema": EVAL_SCHEMA,
        "overall": {
            "scenarios": len(report.results),
            "hit1": round(report.hit1, 4),
            "hit3": round(report.hit3, 4),
            "mrr": round(report.mrr, 4),
        },
        "scenarios": [
            {
                "name": r.scenario.name,
                "format": r.scenario.format,
                "expect": r.scenario.expect,
                "rank": r.rank,
                "hit1": r.hit1,
                "hit3": r.hit3,
                "reciprocal_rank": round(r.reciprocal_rank, 4),
                "top": r.top_ids,
                "max_gain_pct": round(r.max_gain_pct, 3),
                "gain_within_share": r.gain_within_share,
                "error": r.error,
                "gain_limit_pct": r.scenario.max_gain_pct,
            }
            for r in report.results
        ],
    }
