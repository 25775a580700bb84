"""Chinese queries of `advisor search`: character n-grams over the entries' ``zh:`` texts.

SQLite's FTS5 ``unicode61`` tokenizer keeps a run of Han characters as one token, so "非极大值抑制"
matches only that exact run and "通信" nothing inside "通信未掩盖". Chinese is matched here instead,
on character bigrams (and single characters, weighted down), the usual dictionary-free way to
index Chinese: every two-character term of the hiascend docs (算子, 融合, 下发, 通信, 掩盖 …) is a
bigram, and nothing has to be segmented. jieba was measured against it and not taken: its
dictionary costs about a second to load on first use (a third of a minute to build its cache on a
cold machine), several times the search's whole budget, for no better ranking on 60–5,000 short
entries whose terms are two or four characters long.

A query is routed here when it holds a Han character. Each query gram weighs its inverse document
frequency over the candidate entries; an entry scores the share of the query's weight it holds
(0–1), 80 % for holding it anywhere in its zh texts and 20 % for holding it in its Chinese title. Latin words in the query (``NMS 回退``) are matched
as whole lower-case words of the entry's English and Chinese texts.

Through the index's candidate tables (rank_chinese_candidates) the entries holding a character or a Latin word come
from their postings, and a pair is looked for only in the lines of the entries holding both characters
(zh_holders), with the result of rank_chinese over every entry.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from opprof_advisor.kb.search import SearchHit
    from opprof_advisor.kb.store import Index

#: The code points read as Han (CJK unified ideographs, extension A, compatibility ideographs).
HAN_RANGES = ((0x3400, 0x9FFF), (0xF900, 0xFAFF))
_HAN_PATTERN = "[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in HAN_RANGES) + "]+"
#: The Latin words of a text (lower-case), as grams finds them.
LATIN = re.compile(r"[a-z0-9_]+")
#: A single character says much less than a pair: 加 / 速 alone match half the knowledge base.
UNIGRAM_WEIGHT = 0.25
#: Below this share of the query's weight an entry is not a hit.
MIN_SCORE = 0.34
TITLE_REPEAT = 3
#: Of the score, the part the query earns in the zh title alone (orders entries that all hold the query).
TITLE_SHARE = 0.2


@cache
def _han():
    # compiled on first use: a class this wide takes ~5 ms to compile, and most queries are ASCII
    return re.compile(_HAN_PATTERN)


def has_han(text: str) -> bool:
    """True when ``text`` holds a Chinese (Han) character."""
    return not text.isascii() and bool(_han().search(text))


def han_runs(text: str) -> list[str]:
    """The runs of Han characters of ``text``, in order."""
    return _han().findall(text) if not text.isascii() else []


def grams(text: str) -> Counter[str]:
    """Character bigrams and unigrams of the Han runs of ``text``, and its lower-case Latin words."""
    found: Counter[str] = Counter()
    for run in han_runs(text):
        found.update(run)
        found.update(run[i:i + 2] for i in range(len(run) - 1))
    found.update(LATIN.findall(text.lower()))
    return found


def entry_text(entry) -> str:
    """What a Chinese query is matched against: the zh title (weighted), zh summary and first step, the title."""
    zh = entry.zh or {}
    return " ".join([zh.get("title", "")] * TITLE_REPEAT + [zh.get("summary", ""), zh.get("first_step", ""),
                                                             entry.title, " ".join(entry.operators),
                                                             " ".join(entry.tags)])


def rank_chinese(index: "Index", candidate_ids: Iterable[str], query: str, top: int) -> list["SearchHit"]:
    """The entries among ``candidate_ids`` that hold the query's Chinese, best first, as search hits."""
    from opprof_advisor.kb.search import SearchHit

    wanted = set(candidate_ids)
    entries = [e for e in index.entries() if e.id in wanted]
    if not entries:
        return []
    texts = {e.id: set(grams(entry_text(e))) for e in entries}
    query_grams = grams(query)
    weights = {g: _weight(g) * math.log(1 + len(entries) / (1 + sum(g in t for t in texts.values())))
               for g in query_grams}
    total = sum(weights.values()) or 1.0
    scored = []
    for entry in entries:
        share = sum(w for g, w in weights.items() if g in texts[entry.id]) / total
        if share >= MIN_SCORE:
            title = grams((entry.zh or {}).get("title", ""))
            in_title = sum(w for g, w in weights.items() if g in title) / total
            scored.append((round((1 - TITLE_SHARE) * share + TITLE_SHARE * in_title, 4), entry))
    scored.sort(key=lambda pair: (-pair[0], pair[1].id))
    return [SearchHit(e.id, e.kind, e.title, score, list(e.operators), list(e.tags), zh={"title": e.zh["title"]}
                      if e.zh.get("title") else {}) for score, e in scored[:max(top, 0)]]


def rank_chinese_candidates(tables, allowed: set[int] | None, size: int, query: str, top: int) -> list["SearchHit"]:
    """rank_chinese over the entries ``allowed`` (every entry when None; ``size`` of them), from the
    candidate tables: only the entries holding a query gram are looked at, only the hits' texts read."""
    from opprof_advisor.kb.search import SearchHit

    if not size:
        return []
    query_grams = grams(query)
    holders = zh_holders(tables, query_grams)
    if allowed is not None:
        holders = {gram: rowids & allowed for gram, rowids in holders.items()}
    weights = {g: _weight(g) * math.log(1 + size / (1 + len(holders[g]))) for g in query_grams}
    total = sum(weights.values()) or 1.0
    held: dict[int, list[float]] = {}  # the weights of the grams each entry holds, in the order of weights
    for gram, weight in weights.items():
        for rowid in holders[gram]:
            held.setdefault(rowid, []).append(weight)
    shares = {}
    for rowid, gram_weights in held.items():
        share = sum(gram_weights) / total  # summed in rank_chinese's order: the same float
        if share >= MIN_SCORE:
            shares[rowid] = share
    scored = []
    for rowid, entry_id, zh in tables.zh_rows(shares):
        title = grams(zh.get("title", ""))
        in_title = sum(w for g, w in weights.items() if g in title) / total
        scored.append((round((1 - TITLE_SHARE) * shares[rowid] + TITLE_SHARE * in_title, 4), entry_id, rowid, zh))
    scored.sort(key=lambda item: (-item[0], item[1]))
    best = scored[:max(top, 0)]
    summaries = {rowid: summary for rowid, summary in tables.summaries(rowid for _, _, rowid, _ in best)}
    hits = []
    for score, _, rowid, zh in best:
        entry_id, kind, title, operators, _, tags, _ = summaries[rowid]
        hits.append(SearchHit(entry_id, kind, title, score, list(operators), list(tags),
                              zh={"title": zh["title"]} if zh.get("title") else {}))
    return hits


def zh_holders(tables, query_grams: Iterable[str]) -> dict[str, set[int]]:
    """The rowids whose ``zh_texts`` line (kb_search_index.zh_text, lower-case) holds each of ``query_grams`` in its
    grams, from the index's Chinese postings: a character's or a Latin word's holders are its posting, a pair's the
    lines of both characters' postings that hold it (its characters are Han, so they lie in one run)."""
    from opprof_advisor.kb.search_index import HAN, ZH_WORD

    query_grams = list(query_grams)
    found = tables.posted(HAN, [gram for gram in query_grams if len(gram) == 1 and has_han(gram)])
    found.update(tables.posted(ZH_WORD, [gram for gram in query_grams if not has_han(gram)]))
    pairs = {gram: found[gram[0]] & found[gram[1]] for gram in query_grams if len(gram) == 2 and has_han(gram)}
    lines = tables.zh_lines(set().union(*pairs.values()))
    for pair, rowids in pairs.items():
        found[pair] = {rowid for rowid in rowids if pair in lines[rowid]}
    return found


def _weight(gram: str) -> float:
    return UNIGRAM_WEIGHT if len(gram) == 1 and has_han(gram) else 1.0
