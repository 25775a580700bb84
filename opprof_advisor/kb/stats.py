"""What the knowledge base covers, and its JSON documents: counts, symptom and family coverage, entries, checks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from opprof_advisor.core.errors import Problem
from opprof_advisor.core.models import Entry
from opprof_advisor.core.vocabulary import EVIDENCE_GRADES, KINDS, SYMPTOMS
from opprof_advisor.core.operators import FAMILIES

#: Every vocabulary symptom needs at least this many entries that answer it (`kb stats`, tests).
MIN_ANSWERS = 2


def answers_symptom(entry: Entry, symptom: str) -> bool:
    """True when ``entry`` is advice (not a case) listing ``symptom`` whose ``requires`` can hold when it fires.

    Every ``symptom`` requirement must name it (a list is "any of"); the other requirements (operators,
    units, dtypes, producer ...) are facts of the profile that the symptom does not rule out.
    """
    if entry.kind == "case" or symptom not in entry.symptoms:
        return False
    return all(symptom in item["symptom"] for item in entry.requires if "symptom" in item)


def summarize_entries(entries: Sequence[Entry]) -> dict[str, Any]:
    """Counts by kind, evidence and origin, and the coverage table.

    ``answering``: symptom -> ids of the entries that answer it (``answers_symptom``); ``uncovered_symptoms``:
    symptoms with fewer than ``MIN_ANSWERS`` of them; ``families``: operator family -> ids of the entries
    about it; ``symptoms``: symptom -> entries listing it, by kind.
    """
    def count(values: Iterable[str], order: Iterable[str] = ()) -> dict[str, int]:
        counts = {name: 0 for name in order}
        for value in values:
            counts[value] = counts.get(value, 0) + 1
        return counts

    ordered = sorted(entries, key=lambda e: e.id)
    symptoms = {symptom: {kind: 0 for kind in KINDS} for symptom in SYMPTOMS}
    for entry in ordered:
        for symptom in entry.symptoms:
            if symptom in symptoms:
                symptoms[symptom][entry.kind] += 1
    answering = {symptom: [e.id for e in ordered if answers_symptom(e, symptom)] for symptom in SYMPTOMS}
    families = {family: [e.id for e in ordered if family in e.operators] for family in FAMILIES}
    return {
        "entries": len(entries),
        "by_kind": count((e.kind for e in entries), KINDS),
        "by_evidence": count((e.evidence for e in entries), EVIDENCE_GRADES),
        "by_origin": count(e.origin for e in entries),
        "with_gain": sum(1 for e in entries if e.gain is not None),
        "min_answers": MIN_ANSWERS,
        "symptoms": symptoms,
        "answering": answering,
        "uncovered_symptoms": [s for s, ids in answering.items() if len(ids) < MIN_ANSWERS],
        "families": families,
    }


# ---------------------------------------------------------------------------------------------
# Documents (`advisor show / kb list / kb stats / kb check --format json`, rendered by render/text/kb.py)
# ---------------------------------------------------------------------------------------------

ENTRY_SCHEMA = "opprof-advisor/entry/1"
LIST_SCHEMA = "opprof-advisor/kb-list/1"
STATS_SCHEMA = "opprof-advisor/kb-stats/2"
CHECK_SCHEMA = "opprof-advisor/kb-check/1"
#: The fields of each entry in the kb-list document.
LIST_FIELDS = ("id", "kind", "title", "summary", "evidence", "operators", "symptoms", "tags", "models", "origin", "path",
               "zh")


def entry_to_json(entry: Entry) -> dict[str, Any]:
    """The ``opprof-advisor/entry/1`` document of one entry (front matter, body, file)."""
    return {"schema": ENTRY_SCHEMA, "entry": entry.to_dict()}


def entries_to_json(entries: Sequence[Entry]) -> dict[str, Any]:
    """The ``opprof-advisor/kb-list/1`` document."""
    return {"schema": LIST_SCHEMA, "count": len(entries),
            "entries": [{name: getattr(entry, name) for name in LIST_FIELDS} for entry in entries]}


def stats_to_json(entries: Sequence[Entry]) -> dict[str, Any]:
    """The ``opprof-advisor/kb-stats/2`` document: ``summarize_entries`` with its schema."""
    return {"schema": STATS_SCHEMA, **summarize_entries(entries)}


def check_to_json(files: int, problems: Sequence[Problem], warnings: Sequence[Problem]) -> dict[str, Any]:
    """The ``opprof-advisor/kb-check/1`` document: how many files were checked, every problem and warning."""
    return {
        "schema": CHECK_SCHEMA,
        "files": files,
        "problems": [{"path": p.path, "line": p.line or 1, "message": p.message} for p in problems],
        "warnings": [{"path": p.path, "line": p.line or 1, "message": p.message} for p in warnings],
    }
