"""The best hits of a query, found through the candidate tables (kb_search_index) instead of scoring all.

rank_candidates returns the first ``top`` hits of kb_search.rank_entries over every entry, in the
same order with the same scores, while scoring only some, and from the compact tables alone (the
summaries of the top hits only are read). A hit's score never decreases when one of its signals
grows (kb_search.blend). The full-text matches (best bm25 first; FTS5 computes every bm25 anyway)
and the entries about a family or symptom the query names (by the intent value of their listing:
the name first or further down a list of how many, kb_search.focus) are merged into one stream,
best known signals first, and scored in batches; the fuzzy hits are found at once when needed.

An entry not yet scored can at most score the blend of its known signals, the highest fuzzy value
it can still have and the highest kind prior. Once the ``top``-th hit scores more than that for the
next entry of the stream (and more than a fuzzy hit found by nothing else can), no other entry can
come before it or tie with it, and the search stops.

An entry is a fuzzy hit when kb_search.fuzzy_scores reaches FUZZY_ONLY_MIN (75). Those entries are
found through keys that every entry scoring 75 or more must have, then checked with the very same
scorers (rapidfuzz's ratio is 2·LCS/(m+n) for strings of lengths m and n, LCS their longest common
subsequence):

- Title, token_set_ratio of the query's words: a title sharing a whole word with the query (found
  through FTS5's title column, which matches stems: a few more); with no word in common the score
  is the ratio of the two sorted token strings, which reaches 75 only when the title's length lies
  within 0.6–5/3 of the query's (length postings).
- Id, partial_ratio of the query's slug (length m ≥ 3): ids no longer than the slug (length
  postings); a longer id has a window w (|w| ≤ m) with 2·LCS/(m+|w|) ≥ 0.75, so LCS ≥ 0.6 m and
  LCS > (|w|+1)/2: two matched characters are adjacent in w, with at most 0.4 m unmatched slug
  characters between them — the id holds one of the slug's bigrams with that gap (bigram postings).
  A slug of fewer than three characters is compared with ratio: ids of 0.6–5/3 of its length.
- Title run together, partial_ratio ≥ 90 of the query run together (five characters or more): at
  most a tenth of the characters of the two aligned strings are unmatched, so the matched ones
  form few runs and one run is three characters long — the title shares a trigram with the query
  (the trigram table), or is shorter than five characters.
- Tags and models: every distinct label is compared (there are far fewer labels than entries).

A query that is not selective (a word in most entries) costs its FTS5 query, which computes the
bm25 of every match, and the scoring of the entries whose bound is not below the ``top``-th hit.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from opprof_advisor.kb.search_index import (
    FAMILY, ID_BIGRAM, ID_LENGTH, JOINED_LENGTH, KIND, LABEL, SYMPTOM, TITLE_SET_LENGTH, SearchTables,
    token_set_length,
)
from opprof_advisor.kb import search as kb_search
from opprof_advisor.kb.search import (
    FUZZY_ONLY_MIN, focus, fts_value, id_scores, label_scores, SearchHit, title_scores, WEIGHT_FTS, WEIGHT_OPERATOR,
)

if TYPE_CHECKING:
    from opprof_advisor.kb.store import Index

#: The fuzzy score an entry needs to be a hit without full-text or intent evidence.
HIT_SCORE = FUZZY_ONLY_MIN
#: How many of the best-placed entries are scored first (at least ``top``).
FIRST_MATCHES = 50
#: At most this many are scored at once before the ``top``-th hit's score is looked at again.
MOST_AT_ONCE = 2000


def rank_candidates(index: "Index", tables: SearchTables, query: str, terms: list[str], *, kind: str | None,
                    family: str | None, top: int) -> list[SearchHit]:
    """The first ``top`` hits of kb_search.rank_entries over the entries of ``kind`` about ``family``."""
    allowed = allowed_rowids(tables, kind, family)
    size = tables.count() if allowed is None else len(allowed)
    if top <= 0 or not size or not terms:
        return []
    families, symptoms, match = kb_search.query_signals(query, terms)
    matches = tables.fts_matches(match)
    best_bm25 = min(matches.values(), default=0.0)
    limit = kb_search.fts_limit(size)
    if len(matches) > limit:  # (filtered only) rank_entries keeps FTS5's best `limit`: the same query says which
        kept = set(tables.rowids_of(index.fts_scores(match, limit=limit)).values())
        matches = {rowid: bm25 for rowid, bm25 in matches.items() if rowid in kept}
    intents = intent_values(tables, families, symptoms)
    stream = best_placed(matches, best_bm25, intents, allowed)
    scorer = _Scorer(tables, terms, matches, best_bm25, intents, allowed)
    prior = max(kb_search.KIND_PRIOR.values())
    fuzzy_left, fuzzy_done = 1.0, False  # the highest fuzzy signal an unscored entry may have
    waiting, batch = None, FIRST_MATCHES
    while True:
        kth = scorer.score_at(top)
        chosen = []
        while len(chosen) < batch:
            waiting = waiting or next(stream, None)
            # the bounds fall along the stream: take those that can still come before the top-th hit
            if waiting is None or (kth is not None and kb_search.blend(*waiting[2:], fuzzy_left, prior) < kth):
                break
            chosen.append(waiting[1])
            waiting = None
        if chosen:
            scorer.add(chosen)
            batch = min(batch * 2, MOST_AT_ONCE)
            continue
        # every entry found by full text or intent that could come before the top-th hit is scored
        if fuzzy_done or (kth is not None and kth > kb_search.blend(0.0, 0.0, 1.0, prior)):
            break
        scorer.add_fuzzy_hits(fuzzy_hits(tables, terms, scorer.label_best))
        fuzzy_left, fuzzy_done = kb_search.fuzzy_value(HIT_SCORE), True  # the others are not fuzzy hits
    return scorer.finish(top)


def intent_values(tables: SearchTables, families: dict[str, float], symptoms: dict[str, float]) -> dict[int, float]:
    """The intent signal of every entry about a named family or symptom, read from the postings alone."""
    intents: dict[int, float] = {}
    for kind, named in ((FAMILY, families), (SYMPTOM, symptoms)):
        for item, weight in named.items():
            for position, count, rowids in tables.listed(kind, item):
                value = weight * focus(position, count)
                for rowid in rowids:
                    if value > intents.get(rowid, 0.0):
                        intents[rowid] = value
    return intents


def best_placed(matches: dict[int, float], best_bm25: float, intents: dict[int, float],
                allowed: set[int] | None) -> Iterator[tuple[float, int, float, float]]:
    """(weighted sum of the known signals, rowid, full-text signal, intent signal) of every full-text match
    and every entry about a named family or symptom, the highest sum first (the matches lazily, in the
    order of their bm25: most of a long list is never looked at)."""
    def known(rowid: int, intent: float) -> tuple[float, int, float, float]:
        fts = fts_value(matches[rowid], best_bm25) if rowid in matches else 0.0
        return WEIGHT_FTS * fts + WEIGHT_OPERATOR * intent, rowid, fts, intent

    about = sorted((known(rowid, intent) for rowid, intent in intents.items()
                    if allowed is None or rowid in allowed), reverse=True)
    plain = (known(rowid, 0.0) for rowid in matches
             if rowid not in intents and (allowed is None or rowid in allowed))
    return heapq.merge(about, plain, key=lambda item: -item[0])


class _Scorer:
    """Scores entries (each once) as kb_search.score_entries does, from the candidate tables alone, and
    keeps the hits in order; the summaries of those that make the top are read at the end (finish)."""

    def __init__(self, tables: SearchTables, terms: list[str], matches: dict[int, float], best_bm25: float,
                 intents: dict[int, float], allowed: set[int] | None):
        self.tables, self.terms, self.matches, self.best_bm25 = tables, terms, matches, best_bm25
        self.intents, self.allowed = intents, allowed
        self.seen: set[int] = set()
        self.hits: list = []
        self.rowid_of: dict[str, int] = {}
        # The best tag or model similarity of every entry that has a similar one (labels repeat: each
        # distinct label is compared once)
        labels = tables.labels()
        self.label_best: dict[int, float] = {}
        for position, score in sorted(label_scores(labels, terms).items(), key=lambda pair: pair[1]):
            self.label_best.update(dict.fromkeys(tables.postings(LABEL, [labels[position]]), score))

    def add(self, rowids) -> None:
        new = [rowid for rowid in rowids if rowid not in self.seen and (self.allowed is None or rowid in self.allowed)]
        if not new:
            return
        self.seen.update(new)
        ids, kinds, titles = self.tables.columns(("id", "kind", "title"), new)
        raw = kb_search.title_scores(titles, self.terms)
        kb_search.keep_best(raw, kb_search.id_scores(ids, self.terms))
        kb_search.keep_best(raw, {position: self.label_best[rowid] for position, rowid in enumerate(new)
                                  if rowid in self.label_best})
        for position, rowid in enumerate(new):
            # the hit condition and the blend of score_entries
            fuzzy, intent, found = raw.get(position, 0.0), self.intents.get(rowid, 0.0), rowid in self.matches
            if not (found or intent > 0 or fuzzy >= kb_search.FUZZY_ONLY_MIN):
                continue
            fts = kb_search.fts_value(self.matches[rowid], self.best_bm25) if found else 0.0
            score = kb_search.blend(fts, intent, kb_search.fuzzy_value(fuzzy), kb_search.KIND_PRIOR.get(kinds[position], 0.0))
            self.hits.append(SearchHit(ids[position], kinds[position], "", score))
            self.rowid_of[ids[position]] = rowid
        self.hits.sort(key=kb_search.hit_order)

    def add_fuzzy_hits(self, found: dict[int, float]) -> None:
        """Score the fuzzy hits (``found``: fuzzy_hits). Those without full-text or intent evidence score by
        their known similarity alone; the others as ``add`` scores them."""
        plain = {rowid for rowid in found if rowid not in self.seen and rowid not in self.matches
                 and rowid not in self.intents and (self.allowed is None or rowid in self.allowed)}
        self.add([rowid for rowid in found if rowid not in plain])
        plain = sorted(plain)
        if not plain:
            return
        self.seen.update(plain)
        ids, kinds = self.tables.columns(("id", "kind"), plain)
        for position, rowid in enumerate(plain):
            # score_entries' blend of a hit found by its fuzzy similarity only
            score = kb_search.blend(0.0, 0.0, kb_search.fuzzy_value(found[rowid]),
                                    kb_search.KIND_PRIOR.get(kinds[position], 0.0))
            self.hits.append(SearchHit(ids[position], kinds[position], "", score))
            self.rowid_of[ids[position]] = rowid
        self.hits.sort(key=kb_search.hit_order)

    def finish(self, top: int) -> list:
        """The first ``top`` hits, completed from their summaries (title, operators, tags)."""
        best = self.hits[:top]
        summaries = {summary[0]: summary for _, summary in self.tables.summaries(self.rowid_of[hit.id] for hit in best)}
        for place, hit in enumerate(best):
            entry_id, kind, title, operators, _, tags, _ = summaries[hit.id]
            best[place] = SearchHit(entry_id, kind, title, hit.score, operators, tags)
        return best

    def score_at(self, place: int) -> float | None:
        """The score of the hit at ``place`` (1 is the best), or None when there are fewer hits."""
        return self.hits[place - 1].score if len(self.hits) >= place else None


def allowed_rowids(tables: SearchTables, kind: str | None, family: str | None) -> set[int] | None:
    """The entries the filters let through (None: no filter)."""
    allowed = None
    if kind is not None:
        allowed = tables.postings(KIND, [kind])
    if family is not None:
        about = tables.about(FAMILY, family)
        allowed = about if allowed is None else allowed & about
    return allowed


# ---------------------------------------------------------------------------------------------
# Fuzzy hits
# ---------------------------------------------------------------------------------------------


def fuzzy_hits(tables: SearchTables, terms: list[str], label_best: dict[int, float]) -> dict[int, float]:
    """The entries whose fuzzy similarity to ``terms`` reaches HIT_SCORE (no other entry does), each with that
    similarity (kb_search.fuzzy_scores' value: the best of its title, id and tag scores, all computed where
    one may reach HIT_SCORE). ``label_best``: the best tag or model score of each entry (_Scorer's)."""
    found = {rowid: score for rowid, score in label_best.items() if score >= HIT_SCORE}
    for candidates, column, scores in ((title_candidates(tables, terms), "title", title_scores),
                                       (id_candidates(tables, terms), "id", id_scores)):
        candidates = sorted(candidates)
        if candidates:
            values = tables.values(column, candidates)
            for position, score in scores(values, terms, HIT_SCORE).items():
                if score > found.get(candidates[position], 0.0):
                    found[candidates[position]] = score
    return found


def title_candidates(tables: SearchTables, terms: list[str]) -> set[int]:
    """Entries whose title may reach HIT_SCORE (a superset: each is checked by the scorer)."""
    found = tables.with_title_words(terms)
    size = token_set_length(" ".join(terms))
    found |= tables.lengths(TITLE_SET_LENGTH, math.floor(size * 0.6), math.ceil(size * 5 / 3))
    joined = "".join(terms)
    if len(joined) >= 5:
        found |= tables.lengths(JOINED_LENGTH, 0, 4)
        sharing = tables.with_trigrams(joined[i:i + 3] for i in range(len(joined) - 2))
        found |= tables.everyone() if sharing is None else sharing
    return found


def id_candidates(tables: SearchTables, terms: list[str]) -> set[int]:
    """Entries whose id may reach HIT_SCORE (a superset: each is checked by the scorer)."""
    slug = "-".join(terms)
    if len("".join(terms)) < 3:
        return tables.lengths(ID_LENGTH, math.floor(len(slug) * 0.6), math.ceil(len(slug) * 5 / 3))
    found = tables.lengths(ID_LENGTH, 0, len(slug))
    return found | tables.postings(ID_BIGRAM, skip_bigrams(slug, 1 + math.floor(0.4 * len(slug))))


def skip_bigrams(text: str, span: int) -> set[str]:
    """Pairs of characters of ``text`` at most ``span`` positions apart, in their order."""
    return {text[i] + text[j] for i in range(len(text)) for j in range(i + 1, min(i + span, len(text) - 1) + 1)}
