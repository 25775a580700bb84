"""Is a new KB entry nearly a copy of one that exists? The closest entry by title and summary.

`advisor add` warns (it does not refuse: two entries may rightly share words) when the new entry's
title + summary scores at least ``NEAR_DUPLICATE`` against an existing entry with rapidfuzz's
``token_set_ratio`` (0..100; case and punctuation kept, so an id-like word must match as written).

Why 75, measured on the 160 shipped entries (``python benchmarks/bench_near_duplicates.py`` prints it):
distinct entries score at most 71.5 against their nearest neighbour (group-norm-silu-fused and
add-layer-norm-fused; the median is 52.7), while near-copies score 98.5–100 (one word in ten
dropped, swapped, added or lower-cased), 81.6–96.2 (the title kept and half the summary rewritten)
and 69.2–92.0 (the title kept, the summary replaced by a new sentence: 98.1 % of them reach 75). 75 is the
lowest round value above every distinct pair, so the shipped KB raises no warning, and it still
catches all of the first two kinds of copy. TF-IDF cosine separates them as well (distinct at most
0.39, copies from 0.9) but its scores move with the corpus' IDF as the KB grows; the token-set score
of two texts depends on those two texts only. A new entry whose words are all inside an existing
entry's scores 100: for a real entry of a title and a summary sentence that is a copy worth a look.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from opprof_advisor.core.models import Entry

if TYPE_CHECKING:
    from opprof_advisor.kb.rows import EntryText

#: token_set_ratio of title + summary at or above which an added entry is reported as a near-duplicate.
NEAR_DUPLICATE = 75.0


def compared_text(entry: Entry | EntryText) -> str:
    """What is compared: the title and the summary, the words a reader judges an entry by."""
    return f"{entry.title} {entry.summary}".strip()


def closest_entry(entry: Entry, others: Iterable[Entry | EntryText], *, threshold: float = NEAR_DUPLICATE
                  ) -> tuple[Entry | EntryText, float] | None:
    """The existing entry (never one with ``entry``'s own id) most like ``entry``, and its score, if it reaches ``threshold``."""
    from rapidfuzz import fuzz, process

    # One C loop over the texts (the first best wins, as in a plain loop): 50,000 entries in ~0.1 s.
    others = [other for other in others if other.id != entry.id]
    best = process.extractOne(compared_text(entry), [compared_text(other) for other in others],
                              scorer=fuzz.token_set_ratio, score_cutoff=threshold)
    return (others[best[2]], best[1]) if best is not None else None


def closest_in_index(entry: Entry, index, *, threshold: float = NEAR_DUPLICATE) -> tuple[EntryText, float] | None:
    """``closest_entry`` against every entry of ``index`` (sorted by id: of two equally close, the first is named)."""
    return closest_entry(entry, index.texts(), threshold=threshold)
