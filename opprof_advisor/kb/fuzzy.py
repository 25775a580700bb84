"""rapidfuzz similarity of a query to the entries' titles, ids, tags and models: the typo-tolerant signal of
``advisor search`` (kb.search blends it with FTS5's bm25, the operator and symptom signals and the entry's name).
rapidfuzz loops in C over all candidates at once; the scores are 0..100, by the candidate's position."""

from __future__ import annotations

import re

from opprof_advisor.kb.rows import EntrySummary

#: rapidfuzz similarity (0..100) below which a title/id/tag match counts for nothing.
FUZZY_FLOOR = 60.0
#: The query run together (``flashattention``) against titles run together: a partial match of a short
#: query inside a long title (4 of 5 letters somewhere in it) is noise in a KB of 150+ titles, so this
#: comparison needs a near-exact substring.
JOINED_TITLE_MIN = 90.0
#: The query's slug inside an id (``zebra`` in ``zero-redundancy-optimizer`` scores 75): one typo in five letters
#: (``flasj`` in ``flash-attention``: 80) and no more.
ID_PARTIAL_MIN = 80.0
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def fuzzy_scores(candidates: list[EntrySummary], terms: list[str]) -> dict[int, float]:
    """Best rapidfuzz similarity (0..100, at least FUZZY_FLOOR) of the query to each candidate's title, id,
    tags and models, keyed by the candidate's position. rapidfuzz loops in C over all candidates at once.
    """
    best = title_scores([entry.title.lower() for entry in candidates], terms)
    keep_best(best, id_scores([entry.id for entry in candidates], terms))
    labels, owners = [], []
    for position, entry in enumerate(candidates):
        for label in (*entry.tags, *entry.models):
            labels.append(label)
            owners.append(position)
    for position, score in label_scores(labels, terms).items():
        keep_best(best, {owners[position]: score})  # an entry has several labels: the best one counts
    return best


def title_scores(titles: list[str], terms: list[str], cutoff: float = FUZZY_FLOOR) -> dict[int, float]:
    """Best similarity of the query to each lower-case title (its words, and the title run together), by position."""
    best = similarities(" ".join(terms), titles, "token_set_ratio", cutoff)
    joined = "".join(terms)
    if len(joined) >= 5:
        keep_best(best, similarities(joined, [_NOT_ALNUM.sub("", title) for title in titles], "partial_ratio",
                                     max(cutoff, JOINED_TITLE_MIN)))
    return best


def id_scores(ids: list[str], terms: list[str], cutoff: float = FUZZY_FLOOR) -> dict[int, float]:
    """Similarity of the query's slug to each id (anywhere inside it from three characters on), by position."""
    if len("".join(terms)) < 3:
        return similarities("-".join(terms), ids, "ratio", cutoff)
    # anywhere inside an id, a short query finds three of five letters in some id: one typo at most counts
    return similarities("-".join(terms), ids, "partial_ratio", max(cutoff, ID_PARTIAL_MIN))


def label_scores(labels: list[str], terms: list[str], cutoff: float = FUZZY_FLOOR) -> dict[int, float]:
    """Best similarity of a query word to each tag or model (equal, for words under four letters), by position."""
    best: dict[int, float] = {}
    for term in terms:
        keep_best(best, similarities(term, labels, "ratio" if len(term) >= 4 else "exact", cutoff))
    return best


def similarities(query: str, choices: list[str], scorer: str, cutoff: float) -> dict[int, float]:
    """rapidfuzz scores (``scorer`` names one of rapidfuzz.fuzz, or ``exact``: 100 for an equal string) of at least
    ``cutoff`` of ``query`` against ``choices``, by position."""
    if scorer == "exact":
        return {position: 100.0 for position, choice in enumerate(choices) if choice == query}
    from rapidfuzz import fuzz, process

    return {at: score for _, score, at in
            process.extract(query, choices, scorer=getattr(fuzz, scorer), limit=None, score_cutoff=cutoff)}


def keep_best(best: dict[int, float], scores: dict[int, float]) -> None:
    """Raise each score of ``best`` to the one in ``scores`` where that is higher."""
    for position, score in scores.items():
        if score > best.get(position, 0.0):
            best[position] = score
