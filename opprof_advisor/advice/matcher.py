"""TF-IDF relevance between a profile query and knowledge-base entries.

``EntryMatcher`` follows scikit-learn's estimator conventions: ``__init__`` stores parameters
only, ``fit(entries)`` returns self, fitted state ends in ``_``. It is fitted with scikit-learn's
``TfidfVectorizer`` (the only module of the package that imports sklearn, and only inside
``fit``), but scoring never needs sklearn: the fitted state (vocabulary, idf, the L2-normalised
entry rows) is kept as plain Python data, saved as JSON next to the index (``save`` /
``from_state``), and a query is transformed by a small pure-Python copy of the same analyzer
(lower-case, ``token_pattern`` word tokens, unigrams), sublinear term frequency, idf weighting and
L2 normalisation. ``tests/test_matcher.py`` checks it against the fitted vectorizer to 1e-9.
Importing sklearn costs ~0.7-1 s here, more than the whole ``advisor suggest`` budget.

Field weighting: each entry document is built by repeating field text, so the fields count in
this order — operators and symptoms (``field_weights['operators']`` / ``['symptoms']`` copies,
default 6), then title, tags and models (3 copies), then summary (2) and body (1). With
``sublinear_tf`` a field repeated k times contributes ``1 + ln k`` to a term's weight, so a term
named in the operators list outweighs the same word mentioned often in the body, while the body
still adds recall. One vectorizer over one weighted text keeps the scores a plain cosine.
"""

from __future__ import annotations

import base64
import bisect
import json
import math
import os
import re
import sys
from array import array
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

from opprof_advisor.core.errors import MatcherError
from opprof_advisor.core.models import Entry
from opprof_advisor.core.vocabulary import KINDS

#: Bump when the analyzer or the document layout changes: cached states with another version are refitted.
STATE_VERSION = 2
STATE_SCHEMA = "opprof-advisor/matcher/1"

DEFAULT_FIELD_WEIGHTS: dict[str, int] = {
    "operators": 6,
    "symptoms": 6,
    "title": 3,
    "tags": 3,
    "models": 3,
    "summary": 2,
    "body": 1,
}

DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def entry_document(entry: Entry, field_weights: dict[str, int] | None = None) -> str:
    """The weighted text the matcher indexes for one entry (fields repeated by weight)."""
    weights = field_weights or DEFAULT_FIELD_WEIGHTS
    fields = {
        "operators": " ".join(entry.operators),
        "symptoms": " ".join(entry.symptoms),
        "title": entry.title,
        "tags": " ".join(entry.tags),
        "models": " ".join(entry.models),
        "summary": entry.summary,
        "body": entry.body,
    }
    parts: list[str] = []
    for name, text in fields.items():
        if text:
            parts.extend([text] * int(weights.get(name, 1)))
    return "\n".join(parts)


class EntryMatcher:
    """TF-IDF cosine relevance of KB entries to a query document."""

    def __init__(
        self,
        *,
        field_weights: dict[str, int] | None = None,
        token_pattern: str = DEFAULT_TOKEN_PATTERN,
        sublinear_tf: bool = True,
        smooth_idf: bool = True,
    ):
        self.field_weights = field_weights
        self.token_pattern = token_pattern
        self.sublinear_tf = sublinear_tf
        self.smooth_idf = smooth_idf

    # -- fitting (needs sklearn) --------------------------------------------------------------

    def fit(self, entries: Sequence[Entry]) -> "EntryMatcher":
        """Fit the vectorizer on the entries' weighted documents; returns self."""
        if not entries:
            raise MatcherError(
                "cannot fit the matcher: the knowledge base has no entries",
                hint="check `advisor kb list`, or rebuild with `advisor kb build --rebuild`",
            )
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer

        docs = [entry_document(e, self.field_weights) for e in entries]
        vectorizer = TfidfVectorizer(
            lowercase=True,
            strip_accents=None,
            token_pattern=self.token_pattern,
            ngram_range=(1, 1),
            sublinear_tf=self.sublinear_tf,
            smooth_idf=self.smooth_idf,
            norm="l2",
            use_idf=True,
            dtype=np.float64,
        )
        try:
            matrix = vectorizer.fit_transform(docs).tocsr()
        except ValueError as exc:  # e.g. "empty vocabulary": every document is blank
            raise MatcherError(f"cannot fit the matcher: {exc}", hint="entries need a title or body") from None
        self.vectorizer_ = vectorizer
        self.entry_ids_ = [e.id for e in entries]
        self.vocabulary_ = {term: int(i) for term, i in vectorizer.vocabulary_.items()}
        self.idf_ = [float(x) for x in vectorizer.idf_]
        columns = matrix.tocsc()
        columns.sort_indices()  # each term's entries in row order, as the scores are summed
        self._columns = (array("q", columns.indptr.tolist()), array("q", columns.indices.tolist()),
                         array("d", columns.data.tolist()))
        return self

    # -- persistence (plain JSON, no pickle) --------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """The fitted state as a JSON-serialisable dict (the posting arrays as base64 of their bytes)."""
        self._check_fitted()
        indptr, rows, weights = self._columns
        return {
            "schema": STATE_SCHEMA,
            "version": STATE_VERSION,
            "params": self._params(),
            "entry_ids": list(self.entry_ids_),
            "vocabulary": self.vocabulary_,
            "idf": self.idf_,
            "byteorder": sys.byteorder,
            "columns": {name: base64.b64encode(values.tobytes()).decode("ascii")
                        for name, values in (("indptr", indptr), ("rows", rows), ("weights", weights))},
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write the fitted state as JSON, atomically (temporary file, then rename)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.to_state(), separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "EntryMatcher":
        """Rebuild a fitted matcher from ``to_state()`` output; raises MatcherError if foreign or stale."""
        if not isinstance(state, dict) or state.get("schema") != STATE_SCHEMA or state.get("version") != STATE_VERSION:
            raise MatcherError("matcher cache has another schema or version", hint="it is refitted automatically")
        if state.get("byteorder") != sys.byteorder:
            raise MatcherError("matcher cache was written on another machine", hint="it is refitted automatically")
        try:
            matcher = cls(**state["params"])
            matcher.vectorizer_ = None  # not needed for scoring; refit to get one
            matcher.entry_ids_ = list(state["entry_ids"])
            matcher.vocabulary_ = {str(t): int(i) for t, i in state["vocabulary"].items()}
            matcher.idf_ = [float(x) for x in state["idf"]]
            matcher._columns = tuple(_array(code, state["columns"][name])
                                     for code, name in (("q", "indptr"), ("q", "rows"), ("d", "weights")))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MatcherError(f"matcher cache is malformed ({exc})", hint="it is refitted automatically") from None
        if not _consistent(matcher):
            raise MatcherError("matcher cache is inconsistent", hint="it is refitted automatically")
        return matcher

    @classmethod
    def load(cls, path: str | os.PathLike) -> "EntryMatcher":
        """Read a state written by ``save``; raises MatcherError when unreadable."""
        try:
            state = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise MatcherError(f"cannot read matcher cache ({exc})", path=path) from None
        return cls.from_state(state)

    # -- scoring (pure Python) ----------------------------------------------------------------

    def analyze(self, text: str) -> list[str]:
        """Tokens of ``text`` exactly as the fitted vectorizer's analyzer produces them."""
        return re.findall(self.token_pattern, text.lower())

    def transform_query(self, query_doc: str) -> dict[int, float]:
        """The L2-normalised TF-IDF vector of a query, as {term index: weight}."""
        self._check_fitted()
        counts = Counter(t for t in self.analyze(query_doc) if t in self.vocabulary_)
        vector: dict[int, float] = {}
        for term, count in counts.items():
            index = self.vocabulary_[term]
            tf = 1.0 + math.log(count) if self.sublinear_tf else float(count)
            vector[index] = tf * self.idf_[index]
        norm = math.sqrt(sum(w * w for w in vector.values()))
        if norm == 0.0:
            return {}
        return {i: w / norm for i, w in vector.items()}

    def score(self, query_doc: str) -> list[float]:
        """Cosine similarity of the query to every entry, in ``entry_ids_`` order."""
        query = self.transform_query(query_doc)
        scores = [0.0] * len(self.entry_ids_)
        indptr, rows, weights = self._columns
        for index, weight in query.items():
            start, end = indptr[index], indptr[index + 1]
            for row, value in zip(rows[start:end], weights[start:end]):
                scores[row] += weight * value
        return scores

    @property
    def matrix_(self) -> list[dict[int, float]]:
        """The entry rows as {term index: weight} (built from the columns on demand; not used to score)."""
        self._check_fitted()
        indptr, rows, weights = self._columns
        matrix: list[dict[int, float]] = [{} for _ in self.entry_ids_]
        for index in range(len(indptr) - 1):
            for position in range(indptr[index], indptr[index + 1]):
                matrix[rows[position]][index] = weights[position]
        return matrix

    def matched_terms(self, query_doc: str, entry_id: str, limit: int = 8) -> list[tuple[str, float]]:
        """The terms that contribute most to one entry's score, with their contributions."""
        query = self.transform_query(query_doc)
        try:
            entry_row = self.entry_ids_.index(entry_id)
        except ValueError:
            return []
        terms = {i: t for t, i in self.vocabulary_.items() if i in query}
        row = {i: value for i in query if (value := self._weight(entry_row, i)) is not None}
        parts = [(terms[i], w * row[i]) for i, w in query.items() if i in row]
        parts.sort(key=lambda item: -item[1])
        return parts[:limit]

    # -- helpers ------------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {
            "field_weights": self.field_weights,
            "token_pattern": self.token_pattern,
            "sublinear_tf": self.sublinear_tf,
            "smooth_idf": self.smooth_idf,
        }

    def _weight(self, entry_row: int, index: int) -> float | None:
        """The weight of term ``index`` in entry ``entry_row``, or None when the entry lacks the term."""
        indptr, rows, weights = self._columns
        start, end = indptr[index], indptr[index + 1]
        position = bisect.bisect_left(rows, entry_row, start, end)
        return weights[position] if position < end and rows[position] == entry_row else None

    def _check_fitted(self) -> None:
        if not hasattr(self, "_columns"):
            raise MatcherError("the matcher is not fitted", hint="call fit(entries) or load_matcher(index) first")


def _array(code: str, text: str) -> array:
    values = array(code)
    values.frombytes(base64.b64decode(text.encode("ascii"), validate=True))
    return values


def _consistent(matcher: EntryMatcher) -> bool:
    """Whether restored arrays describe a matrix of len(entry_ids) rows by len(vocabulary) terms."""
    indptr, rows, weights = matcher._columns
    terms = len(matcher.vocabulary_)
    if len(matcher.idf_) != terms or len(indptr) != terms + 1 or len(rows) != len(weights):
        return False
    if indptr[0] != 0 or indptr[-1] != len(rows) or any(a > b for a, b in zip(indptr, indptr[1:])):
        return False
    if matcher.vocabulary_ and not 0 <= min(matcher.vocabulary_.values()) <= max(matcher.vocabulary_.values()) < terms:
        return False
    return not rows or (min(rows) >= 0 and max(rows) < len(matcher.entry_ids_))


# --------------------------------------------------------------------------------------------
# A fitted matcher per index content hash
# --------------------------------------------------------------------------------------------

_MEMO: dict[str, EntryMatcher] = {}


def cache_path(index: Any) -> Path:
    """Where the fitted state of ``index`` is kept: beside the index, keyed by its content hash."""
    db_path = Path(index.db_path)
    return db_path.with_name(f"{db_path.stem}.matcher-{str(index.content_hash)[:16]}.json")


def load_matcher(index: Any) -> EntryMatcher:
    """A matcher fitted on ``index.entries()``: from memory, else the JSON cache, else fit and save it."""
    key = f"{index.db_path}:{index.content_hash}"
    if key in _MEMO:
        return _MEMO[key]
    path = cache_path(index)
    matcher: EntryMatcher | None = None
    if path.is_file():
        try:
            matcher = EntryMatcher.load(path)
        except MatcherError:
            matcher = None  # stale or foreign cache: refit below
    if matcher is None:
        matcher = EntryMatcher().fit(index.entries())
        _save_quietly(matcher, path)
    _MEMO[key] = matcher
    return matcher


def _save_quietly(matcher: EntryMatcher, path: Path) -> None:
    # A read-only data directory only costs a refit next time; it must not fail the command.
    try:
        matcher.save(path)
    except OSError:
        return
    for old in path.parent.glob(f"{path.name.split('.matcher-')[0]}.matcher-*.json"):
        if old != path:
            try:
                old.unlink()
            except OSError:
                pass


def clear_memo() -> None:
    """Forget in-process fitted matchers (tests)."""
    _MEMO.clear()


def fit_matcher(entries: Iterable[Entry]) -> EntryMatcher:
    """Fit a fresh matcher on ``entries`` (no cache)."""
    return EntryMatcher().fit(list(entries))


def ready_matcher(entries: Sequence[Entry], kind: str | None, matcher: Any = None) -> Any:
    """``matcher``, or one fitted on ``entries``; MatcherError when there are no entries or ``kind`` is unknown."""
    if not entries:
        raise MatcherError("the knowledge base has no entries", hint="check `advisor kb list`")
    if kind is not None and kind not in KINDS:
        raise MatcherError(f"unknown kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    return fit_matcher(entries) if matcher is None else matcher
