"""The real-profile bench: labelled facts and advice topics for real profiler output (data/real_bench/labels.yaml).

Each labelled profile says what ``advisor profile`` must report (``facts``) and what ``advisor suggest``
must do (``advice``): ``top3`` topics that must all be among the first three suggestions, ``first`` the
topic of the first one, ``never`` topics that must not be in the first three; or an ``error`` the path
must be refused with. A topic is a kind of advice (``Topic``): a suggestion belongs to it by its matched
symptoms, its operators, its entry's tags or its id — words that survive the knowledge base growing.

Scores per profile: hit@3 = every ``top3`` topic present and no ``never`` topic in the first three;
hit@1 = the first suggestion is of ``first`` (else of any ``top3`` topic; with neither, nothing
forbidden in the top three); MRR = 1 / the rank of the first suggestion of a required topic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from opprof_advisor.advice.evaluation import BenchReport
from opprof_advisor.core import plain_yaml
from opprof_advisor.core.errors import AdvisorError, ProfileError
from opprof_advisor.advice.suggest import advise
from opprof_advisor.profiles import read_profile

LABELS_SCHEMA = "opprof-advisor/real-labels/1"
TOP = 5


@dataclass(frozen=True)
class Topic:
    """A kind of advice, by what backs a suggestion."""

    name: str
    symptoms: frozenset[str] = frozenset()  # any of them matched
    only: frozenset[str] = frozenset()  # matched symptoms are all in this set (and there are some)
    operators: frozenset[str] = frozenset()  # any of them among the matched operator families
    tags: frozenset[str] = frozenset()  # any of them among the entry's tags
    entries: frozenset[str] = frozenset()

    def holds(self, row: dict[str, Any]) -> bool:
        """Whether a row of the suggest/2 document (a finding) is of this topic: by its symptoms, its
        operator families, or its lead remedy's tags and id."""
        matched = set(row.get("matched_symptoms") or [])
        lead = (row.get("remedies") or [{}])[0]
        return bool(
            matched & self.symptoms
            or (self.only and matched and matched <= self.only)
            or set(row.get("operators") or []) & self.operators
            or set(lead.get("tags") or []) & self.tags
            or lead.get("id") in self.entries
        )


@dataclass
class Labelled:
    """One labelled real profile."""

    path: str
    reading: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    advice: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class RealResult:
    """How the recommender did on one labelled profile."""

    label: Labelled
    top_ids: list[str]
    top_topics: list[list[str]]  # the topics of each suggestion
    missing: list[str]  # required topics not in the top three
    forbidden: list[str]  # forbidden topics found in the top three
    first_ok: bool
    rank: int | None  # rank of the first suggestion of a required topic
    error: str | None = None  # what went wrong (an unexpected error, or an expected one not raised)
    checks: dict[str, Any] = field(default_factory=dict)  # the ADVICE.md checks (check_rows)

    @property
    def hit3(self) -> bool:
        return not self.error and not self.missing and not self.forbidden

    @property
    def hit1(self) -> bool:
        return self.hit3 and self.first_ok

    @property
    def reciprocal_rank(self) -> float:
        if self.error:
            return 0.0
        if not self.label.advice.get("top3") and not self.label.advice.get("first"):
            return 1.0 if not self.forbidden else 0.0
        return 1.0 / self.rank if self.rank else 0.0


@dataclass
class RealReport(BenchReport):
    """Per-profile results and the overall figures (hit@1, hit@3, MRR as for the synthetic bench)."""

    results: list[RealResult] = field(default_factory=list)  # type: ignore[assignment]


def load_labels(path: Path | str) -> tuple[dict[str, Topic], list[Labelled]]:
    """Topics and labelled profiles of a labels file; raises ProfileError when it is unusable."""
    path = Path(path)
    if not path.is_file():
        raise ProfileError("no real-profile labels file", path=path)
    data = plain_yaml.load_file(path, ProfileError, "fix the labels file")
    if not isinstance(data, dict) or data.get("schema") != LABELS_SCHEMA:
        raise ProfileError(f"not a real-profile labels file (schema must be {LABELS_SCHEMA})", path=path)
    topics = {name: Topic(name, **{key: frozenset(values) for key, values in (spec or {}).items()})
              for name, spec in (data.get("topics") or {}).items()}
    labels = [Labelled(path=item["path"], reading=" ".join(str(item.get("reading", "")).split()),
                       facts=item.get("facts") or {}, advice=item.get("advice") or {}, error=item.get("error"))
              for item in data.get("profiles") or []]
    unknown = sorted({name for label in labels for key in ("top3", "never") for name in label.advice.get(key, [])
                      if name not in topics} | {label.advice["first"] for label in labels
                                                if label.advice.get("first") and label.advice["first"] not in topics})
    if unknown:
        raise ProfileError(f"labels use undefined topics: {', '.join(unknown)}", path=path)
    return topics, labels


def evaluate_label(label: Labelled, root: Path, topics: dict[str, Topic], entries: list, matcher: Any) -> RealResult:
    """Read one labelled profile and score the advice against its labels."""
    try:
        profile = read_profile(root / label.path)
    except AdvisorError as exc:
        ok = label.error is not None and label.error in str(exc)
        return RealResult(label, [], [], [], [], ok, 1 if ok else None, None if ok else str(exc))
    if label.error is not None:
        return RealResult(label, [], [], [], [], False, None, f"expected an error ({label.error}), got a profile")
    suggestions = advise(profile, entries, top=TOP, matcher=matcher)["suggestions"]
    names = [[name for name, topic in topics.items() if topic.holds(s)] for s in suggestions]
    top3 = {name for found in names[:3] for name in found}
    required = list(label.advice.get("top3") or [])
    first = label.advice.get("first")
    missing = [name for name in required if name not in top3]
    forbidden = [name for name in label.advice.get("never") or [] if name in top3]
    wanted = set(required) | ({first} if first else set())
    rank = next((i for i, found in enumerate(names, start=1) if wanted & set(found)), None)
    if first:
        first_ok = bool(names) and first in names[0]
    else:
        first_ok = not required or (bool(names) and bool(set(required) & set(names[0])))
    return RealResult(label, [s["id"] for s in suggestions], names, missing, forbidden, first_ok, rank,
                      checks=check_rows(suggestions, label.advice, {e.id: e for e in entries}))


def check_rows(rows: list[dict[str, Any]], advice: dict[str, Any], entries: dict[str, Any]) -> dict[str, Any]:
    """The checks of ../shared/ADVICE.md on one profile's rows: gains on the top 3, remedies that cannot
    apply in the top 5 (the label's ``wrong`` ids), repeated diagnoses, contradictions, gains above their
    bound, and whether #1's gain falls in the label's ``gain_pct`` range."""
    top5 = rows[:TOP]
    listed = [r["id"] for row in top5 for r in row.get("remedies") or []]
    wrong = sorted(set(listed) & set(advice.get("wrong") or []))
    keys = [(tuple(sorted(row.get("matched_symptoms") or [])), tuple(sorted(row.get("op_types") or [])))
            for row in top5]
    repeats = len(keys) - len(set(keys))
    contradictions = sorted({f"{a}/{b}" for a in listed for b in listed
                             if a in entries and b in getattr(entries[a], "contradicts", [])})
    above = [row["id"] for row in rows if row.get("expected_gain")
             and row["expected_gain"]["high_us"] > row["stake_us"] + 1e-6]
    gains = [bool(row.get("expected_gain")) for row in rows[:3]]
    expected = advice.get("gain_pct")
    gain_ok = None
    if expected:  # a labelled range and no gain on #1 is a miss
        gain = rows[0].get("expected_gain") if rows else None
        gain_ok = bool(gain) and expected[0] <= gain["high_pct"] and gain["low_pct"] <= expected[1]
    return {"gains_top3": all(gains) if gains else True, "wrong_remedies": wrong, "repeats": repeats,
            "contradictions": contradictions, "above_bound": above, "first_gain_in_range": gain_ok}


def evaluate_real(labels_path: Path | str, root: Path | str, entries: list, matcher: Any,
                  progress: Callable[[int, int], None] | None = None) -> RealReport:
    """Score every labelled profile under ``root`` (the real-profiles folder)."""
    topics, labels = load_labels(labels_path)
    root = Path(root)
    if not root.is_dir():
        raise ProfileError("the real-profiles folder is missing", path=root,
                           hint="give --real-profiles DIR (the folder the labels' paths are relative to)")
    report = RealReport()
    for done, label in enumerate(labels, start=1):
        report.results.append(evaluate_label(label, root, topics, entries, matcher))
        if progress:
            progress(done, len(labels))
    return report


def real_report_to_json(report: RealReport) -> dict[str, Any]:
    """The real-profile half of the ``opprof-advisor/eval/1`` document."""
    return {
        "overall": {"profiles": len(report.results), "hit1": round(report.hit1, 4), "hit3": round(report.hit3, 4),
                    "mrr": round(report.mrr, 4), **_check_totals(report)},
        "profiles": [
            {"path": r.label.path, "hit1": r.hit1, "hit3": r.hit3, "reciprocal_rank": round(r.reciprocal_rank, 4),
             "top": r.top_ids, "topics": r.top_topics, "missing": r.missing, "forbidden": r.forbidden,
             "error": r.error, "expects_error": r.label.error is not None, "checks": r.checks}
            for r in report.results
        ],
    }


def _check_totals(report: RealReport) -> dict[str, Any]:
    """Across the profiles that gave advice: how many pass each check."""
    checked = [r.checks for r in report.results if r.checks]
    return {"gains_top3": sum(c["gains_top3"] for c in checked),
            "wrong_remedies": sum(len(c["wrong_remedies"]) for c in checked),
            "repeats": sum(c["repeats"] for c in checked),
            "contradictions": sum(len(c["contradictions"]) for c in checked),
            "above_bound": sum(len(c["above_bound"]) for c in checked),
            "first_gain_in_range": sum(1 for c in checked if c["first_gain_in_range"]),
            "gain_labelled": sum(1 for c in checked if c["first_gain_in_range"] is not None),
            "checked": len(checked)}
