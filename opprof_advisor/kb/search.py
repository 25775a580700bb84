"""Rank knowledge-base entries for a free-text query.

Three signals, each in 0..1, are blended: FTS5 bm25 over the indexed text (relative to the best
hit), intent (the query names an operator family — ``NonMaxSuppressionV3``, ``nms``,
``non max suppression`` all mean ``NMS`` through operators.canonical_family — or a profile
symptom such as ``launch bound``, and the entry is about it), and rapidfuzz similarity to titles,
ids and tags; a small prior puts recipes before cases when the evidence is otherwise equal. A query word that matches
nothing is corrected to the closest known word first (``nsm`` → ``nms``). User text only ever
reaches FTS5 as quoted alphanumeric terms, so quotes, ``*``, ``AND`` or parentheses cannot break it.
A query with Chinese in it is ranked on the entries' ``zh:`` texts instead (``rank_chinese``).
"""

from __future__ import annotations

import math
from collections import Counter
import re
from typing import Any, NamedTuple

from opprof_advisor.core.errors import KnowledgeBaseError
from opprof_advisor.kb.rows import EntrySummary, Index, suggest_ids
from opprof_advisor.core.operators import canonical_family, FAMILIES, normalise_name
from opprof_advisor.core.vocabulary import SYMPTOMS
from opprof_advisor.kb.fuzzy import FUZZY_FLOOR, fuzzy_scores
from opprof_advisor.kb.zh import HAN_RANGES, LATIN, han_runs, has_han

SEARCH_SCHEMA = "opprof-advisor/search/1"
WEIGHT_FTS = 0.45
WEIGHT_OPERATOR = 0.30
WEIGHT_FUZZY = 0.25
#: The entry the query names: its id is the query, or the operator family the query names (``flash attention``,
#: ``attention`` -> flash-attention), or begins with the query (``oom`` -> oom-first-checks), or has the query's words
#: in its title (``out of memory``): half as much; not a case.
WEIGHT_NAME = 0.20
#: A hit needs at least this score unless full-text search found it.
FUZZY_ONLY_MIN = 75.0
KIND_ORDER = {"recipe": 0, "pattern": 1, "case": 2, "tip": 3}
#: A small prior for actionable kinds: with equal evidence of relevance, the recipe comes before the case.
KIND_PRIOR = {"recipe": 0.04, "pattern": 0.03, "tip": 0.02, "case": 0.0}
#: Scores are divided by the best possible sum so they lie in 0..1.
MAX_SCORE = WEIGHT_FTS + WEIGHT_OPERATOR + WEIGHT_FUZZY + WEIGHT_NAME + max(KIND_PRIOR.values())
STOPWORDS = frozenset(
    "a an and are as at be by do does for from how i in is it me my of on or not the to use using what when "
    "where which why with".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


class SearchHit(NamedTuple):
    """One ranked entry."""

    id: str
    kind: str
    title: str
    score: float
    operators: list[str] = []  # never mutated: each hit is built whole
    tags: list[str] = []
    zh: dict[str, str] = {}  # the zh title, on hits of a Chinese query

    def to_dict(self) -> dict[str, Any]:
        data = self._asdict()
        data["operators"], data["tags"] = list(self.operators), list(self.tags)
        if self.zh:
            data["zh"] = dict(self.zh)
        else:
            del data["zh"]  # English hits keep the document they always had
        return data


class SearchResult:
    """Hits plus what the CLI tells the user: the corrected query and did-you-mean suggestions."""

    __slots__ = ("query", "hits", "corrected", "suggestions", "cut_from")

    def __init__(self, query: str, hits: list[SearchHit], corrected: str | None = None,
                 suggestions: list[str] | None = None, cut_from: int | None = None) -> None:
        self.query = query
        self.hits = hits
        self.corrected = corrected  # the query as searched, when a word was corrected
        self.suggestions = suggestions if suggestions is not None else []  # when there are no hits
        self.cut_from = cut_from  # the length of the query given, when it was cut to MAX_QUERY_CHARS

    def __repr__(self) -> str:
        return (f"SearchResult(query={self.query!r}, hits={self.hits!r}, corrected={self.corrected!r}, "
                f"suggestions={self.suggestions!r}, cut_from={self.cut_from!r})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SearchResult) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)


def search_to_json(result: SearchResult) -> dict[str, Any]:
    """The ``opprof-advisor/search/1`` document: the query, the ranked hits, the correction and close words (and,
    for a query cut to MAX_QUERY_CHARS, ``query_cut_from``: how many characters it had; ``query`` is what was
    searched)."""
    document = {"schema": SEARCH_SCHEMA, "query": result.query, "results": [hit.to_dict() for hit in result.hits],
                "corrected": result.corrected, "did_you_mean": list(result.suggestions)}
    if result.cut_from is not None:
        document["query_cut_from"] = result.cut_from
    return document


def search(index: Index, query: str, kind: str | None = None, operator: str | None = None,
           top: int = 10) -> list[SearchHit]:
    """Ranked hits for ``query``, optionally only of one kind and about one operator family."""
    return run_search(index, query, kind=kind, operator=operator, top=top).hits


#: The longest query searched, in characters: a question or a pasted error line fits. A longer one (a log pasted
#: whole) is cut at the last word boundary before it and the result says so (``cut_from``): a search costs what
#: this many characters cost, whatever was pasted (a 300 kB query took 17 s, 1 MB minutes).
MAX_QUERY_CHARS = 1000


def bounded_query(query: str) -> str:
    """``query`` itself when it has at most MAX_QUERY_CHARS characters, else its first ones up to its last whole
    word (a query without spaces, as Chinese is, at MAX_QUERY_CHARS); padding around it counts for nothing."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    query = query.strip()
    if len(query) <= MAX_QUERY_CHARS:
        return query
    head = query[:MAX_QUERY_CHARS]
    if not head[-1].isspace() and not query[MAX_QUERY_CHARS].isspace():
        words = head.rsplit(None, 1)
        if len(words) == 2:  # the last word would be cut: leave it out
            head = words[0]
    return head.rstrip()


def run_search(index: Index, query: str, *, kind: str | None = None, operator: str | None = None,
               top: int = 10) -> SearchResult:
    """Like ``search`` but also return the corrected query and suggestions for zero hits; a query longer than
    MAX_QUERY_CHARS is cut first (``SearchResult.cut_from`` says how long it was)."""
    searched = bounded_query(query)
    result = _ranked_search(index, searched, kind=kind, operator=operator, top=top)
    if len(query.strip()) > MAX_QUERY_CHARS:  # (padding dropped is no cut)
        result.cut_from = len(query)
    return result


def _ranked_search(index: Index, query: str, *, kind: str | None, operator: str | None, top: int) -> SearchResult:
    family = resolve_operator(operator)
    candidates = filter_entries(index.summaries(), kind=kind, family=family)
    if has_han(query):  # FTS5 cannot split Chinese words: matched on character grams instead (kb.zh)
        return SearchResult(query, rank_chinese(index, candidates, query, top))
    words = query_words(query)
    if not words:
        return SearchResult(query, [])
    terms, corrected = correct_words(index, words)
    hits = rank_entries(index, candidates, query, terms)[:max(top, 0)]
    result = SearchResult(query, hits, " ".join(terms) if corrected else None)
    if not hits:
        result.suggestions = did_you_mean(index, query, terms, filtered=bool(kind or operator))
    return result


def resolve_operator(operator: str | None) -> str | None:
    """The family named by an ``--operator`` value; raise KnowledgeBaseError when there is none."""
    if not operator:
        return None
    family = canonical_family(operator)
    if family is None:
        close = suggest_ids(operator, FAMILIES)
        hint = f"did you mean {', '.join(close)}?" if close else "use a family such as MatMul, Conv2D, NMS"
        raise KnowledgeBaseError(f"unknown operator {operator!r}", hint=hint)
    return family


def filter_entries(entries: list[EntrySummary], *, kind: str | None, family: str | None) -> list[EntrySummary]:
    """Entries of ``kind`` about ``family`` (either filter may be None)."""
    return [e for e in entries if (kind is None or e.kind == kind) and (family is None or family in e.operators)]


def query_words(query: str) -> list[str]:
    """Lower-case alphanumeric words of the query without stopwords."""
    words = _WORD.findall(query.lower())
    return [word for word in words if word not in STOPWORDS]


# ---------------------------------------------------------------------------------------------
# Correction
# ---------------------------------------------------------------------------------------------


def correct_words(index: Index, words: list[str]) -> tuple[list[str], bool]:
    """Replace words that match nothing by the closest known word (of every entry's); return (terms, corrected?)."""
    vocabulary: dict[str, int] | None = None
    terms, corrected = [], False
    for word in words:
        if canonical_family(word, fuzzy=False) or index.term_exists(fts_term(word)):
            terms.append(word)
            continue
        if vocabulary is None:
            vocabulary = known_words(index)
        replacement = closest_word(word, vocabulary)
        terms.append(replacement or word)
        corrected = corrected or bool(replacement)
    return terms, corrected


def known_words(index: Index) -> dict[str, int]:
    """Words of ids, titles, tags, models, symptoms and operator aliases, with their frequency."""
    counts: dict[str, int] = {}
    for entry in index.summaries():
        text = " ".join([entry.id, entry.title, *entry.tags, *entry.models, *entry.symptoms, *entry.operators])
        for word in _WORD.findall(text.lower()):
            counts[word] = counts.get(word, 0) + 1
    return with_aliases(counts)


def with_aliases(counts: dict[str, int]) -> dict[str, int]:
    """``counts`` plus every operator alias (count 1 unless the entries use it)."""
    for family, aliases in FAMILIES.items():
        for alias in (family, *aliases):
            counts.setdefault(normalise_name(alias), 1)
    return counts


def closest_word(word: str, vocabulary: dict[str, int]) -> str | None:
    """The known word within a small edit distance (transpositions count once), or None."""
    from rapidfuzz import distance as edits, process

    if len(word) < 3:
        return None
    limit = 1 if len(word) <= 4 else 2
    best: tuple | None = None
    # rapidfuzz measures every word in C; the loop below sees only those within the limit
    for candidate, distance, _ in process.extract(word, list(vocabulary), scorer=edits.OSA.distance, limit=None,
                                                  score_cutoff=limit):
        if len(candidate) < 3 or abs(len(candidate) - len(word)) > limit:
            continue
        key = (distance, candidate[0] != word[0], -vocabulary[candidate], candidate)
        if best is None or key < best:
            best = key
    return best[3] if best else None


def did_you_mean(index: Index, query: str, terms: list[str], *, filtered: bool) -> list[str]:
    """Up to three suggestions for a query without hits: ids, or hits without the filters."""
    if filtered:
        unfiltered = rank_entries(index, index.summaries(), query, terms)[:3]
        if unfiltered:
            return [hit.id for hit in unfiltered]
    return suggest_ids("-".join(terms) or query, index.ids())


# ---------------------------------------------------------------------------------------------
# Ranking
# ---------------------------------------------------------------------------------------------


def fts_term(word: str) -> str:
    """A quoted FTS5 term (prefix match from three characters); words are alphanumeric already."""
    return f'"{word}"*' if len(word) >= 3 else f'"{word}"'


def query_families(query: str, terms: list[str]) -> dict[str, float]:
    """Operator families the query names, with the confidence of each (whole phrase 1.0, one word 0.7)."""
    families: dict[str, float] = {}
    raw_words = _WORD.findall(query.lower())
    phrases = [(query, 1.0), (" ".join(terms), 1.0)]
    for size in (3, 2):
        phrases += [(" ".join(raw_words[i:i + size]), 1.0) for i in range(len(raw_words) - size + 1)]
    phrases += [(term, 1.0 if len(terms) == 1 else 0.7) for term in terms]
    for phrase, weight in phrases:
        family = canonical_family(phrase.strip()) if phrase.strip() else None
        if family and weight > families.get(family, 0.0):
            families[family] = weight
    return families


def rank_entries(index: Index, candidates: list[EntrySummary], query: str, terms: list[str]) -> list[SearchHit]:
    """Score every candidate and return the hits, best first."""
    if not candidates or not terms:
        return []
    families, symptoms, match = query_signals(query, terms)
    bm25 = index.fts_scores(match, limit=fts_limit(len(candidates)))
    return score_entries(candidates, terms, families, symptoms, bm25, min(bm25.values(), default=0.0),
                         phrase=" ".join(_WORD.findall(query.lower())))


def fts_limit(candidates: int) -> int:
    """How many FTS5 matches, best first, count as full-text evidence when there are ``candidates``."""
    return max(500, candidates)


def query_signals(query: str, terms: list[str]) -> tuple[dict[str, float], dict[str, float], str]:
    """The families and symptoms the query names, and its FTS5 query (its words or the families' names)."""
    families = query_families(query, terms)
    symptoms = query_symptoms(terms)
    fts_words = list(dict.fromkeys([*terms, *(family.lower() for family in families)]))
    return families, symptoms, " OR ".join(fts_term(word) for word in fts_words)


def score_entries(candidates: list[EntrySummary], terms: list[str], families: dict[str, float],
                  symptoms: dict[str, float], bm25: dict[str, float], best_bm25: float, *, phrase: str = ""
                  ) -> list[SearchHit]:
    """The hits among ``candidates``, best first, given the FTS5 bm25 of those full-text search found; ``phrase``:
    the query's words, which name an entry when its title holds them in that order (``out of memory``)."""
    phrase = f" {phrase} " if len(phrase.split()) >= 2 else ""
    fuzzy_raw = fuzzy_scores(candidates, terms)
    named = {normalise_name("".join(terms)), *(normalise_name(f) for f, weight in families.items() if weight >= 1.0)}
    prefix = "-".join(terms) + "-"
    hits = []
    for position, entry in enumerate(candidates):
        # The query names an operator family or a profile symptom the entry is about.
        operator = max(operator_score(entry, families), symptom_score(entry, symptoms))
        raw = fuzzy_raw.get(position, 0.0)
        if not (entry.id in bm25 or operator > 0 or raw >= FUZZY_ONLY_MIN):
            continue
        fts = fts_value(bm25[entry.id], best_bm25) if entry.id in bm25 else 0.0
        fuzzy = fuzzy_value(raw)
        # (a case begins with its topic too, but is one instance of it: only the exact name counts for a case)
        name = 1.0 if normalise_name(entry.id) in named else \
            0.5 if entry.kind != "case" and (entry.id.startswith(prefix) or _titled(entry.title, phrase)) else 0.0
        score = blend(fts, operator, fuzzy, KIND_PRIOR.get(entry.kind, 0.0), name)
        hits.append(SearchHit(entry.id, entry.kind, entry.title, score, entry.operators, entry.tags))
    hits.sort(key=hit_order)
    return hits


def _titled(title: str, phrase: str) -> bool:
    """The title holds the query's words (two or more) one after another."""
    return bool(phrase) and phrase in f" {' '.join(_WORD.findall(title.lower()))} "


def blend(fts: float, operator: float, fuzzy: float, prior: float, name: float = 0.0) -> float:
    """The score of a hit (0..1, four decimals); it never decreases when one of its signals grows."""
    return round((WEIGHT_FTS * fts + WEIGHT_OPERATOR * operator + WEIGHT_FUZZY * fuzzy + WEIGHT_NAME * name + prior)
                 / MAX_SCORE, 4)


def fts_value(bm25: float, best_bm25: float) -> float:
    """The full-text signal of a match: its bm25 relative to the best match's."""
    return bm25 / best_bm25 if best_bm25 < 0 else 1.0


def fuzzy_value(raw: float) -> float:
    """The fuzzy signal of a rapidfuzz similarity: 0 at FUZZY_FLOOR and below, 1 at 100."""
    return max(0.0, (raw - FUZZY_FLOOR) / (100.0 - FUZZY_FLOOR))


def hit_order(hit: SearchHit) -> tuple:
    """Best score first; with equal scores recipes before cases, then by id."""
    return -hit.score, KIND_ORDER.get(hit.kind, 9), hit.id


def query_symptoms(terms: list[str]) -> dict[str, float]:
    """Symptoms the query names: all words of the symptom id present (``launch bound``), or the id itself."""
    words = set(terms)
    joined = "_".join(terms)
    found = {}
    for symptom in SYMPTOMS:
        parts = symptom.split("_")
        if joined == symptom or set(parts) <= words:
            found[symptom] = 1.0 if len(parts) == len(terms) else 0.7
    return found


def symptom_score(entry: EntrySummary, symptoms: dict[str, float]) -> float:
    """How much the entry is about a symptom the query names (like operator_score, on ``symptoms``)."""
    return _focus_score(entry.symptoms, symptoms)


def operator_score(entry: EntrySummary, families: dict[str, float]) -> float:
    """How much the entry is about a family the query names: 1 when it is the entry's first and only family."""
    return _focus_score(entry.operators, families)


def _focus_score(listed: list[str], named: dict[str, float]) -> float:
    best = 0.0
    for item, weight in named.items():
        if item in listed:
            best = max(best, weight * focus(listed.index(item), len(listed)))
    return best


def focus(position: int, count: int) -> float:
    """How much an entry listing ``count`` families (or symptoms) is about the one at ``position``."""
    # The first listed item is the entry's subject; each further item dilutes the focus a little.
    return (1.0 if position == 0 else 0.6) / (1.0 + 0.1 * (count - 1))


# ---------------------------------------------------------------------------------------------
# Chinese queries
# ---------------------------------------------------------------------------------------------
#
# FTS5's tokenizer cannot split Chinese, and the entries' bodies are English: a Chinese query is matched on the
# character grams of each entry's zh title, summary and first step and the Latin words of those and of its English
# title, operators and tags (kb.zh; the ``entries_zh`` FTS5 table finds the entries holding each gram). Four
# signals are blended:
#
# - coverage: the share of the query's weight the entry holds anywhere, each query gram weighing its inverse
#   document frequency (a rare gram such as 空泡 says more than 优化), a single character a quarter of a pair,
#   and so does a pair that only joins two words (信掩 of 通信掩盖); below ZH_MIN_SCORE an entry is no hit;
# - fields: the same weights, each gram counting by where and how often the entry holds it — the zh title (its
#   head, before the colon, most) more than the summary, the summary more than the first step, a repeat less than
#   the first mention (ZH_FIELDS); this orders the entries that all hold the whole query;
# - phrase: the whole query, or else some of its space-separated parts, appears as one piece in a field, best in
#   the title's head (``流水线空泡：…``);
# - intent: a Latin word of the query names an operator family the entry is about (``TransData 过多``).
#
# Equal scores are ordered as English hits are (recipes first, then by id). Question words (怎么, 为什么 …) only
# separate the query's terms; variant spellings are read as the KB's word (通讯 → 通信), and a few everyday words
# also match the word the KB uses (内存 also 显存, 减少 also 降低 / 节省).

#: A single character says much less than a pair: 加 / 速 alone match half the knowledge base.
UNIGRAM_WEIGHT = 0.25
#: Below this share of the query's weight an entry is not a hit.
ZH_MIN_SCORE = 0.34
#: A pair inside a longer run held by fewer than this share of the entries holding its rarer character joins two
#: words (信掩 of 通信掩盖) rather than names one: it weighs as a single character.
ZH_JOIN_COHESION = 0.3
#: How much one mention of a gram counts in each field (the head of the zh title most, then the rest of the title);
#: mentions add up, saturating (n / (n + ZH_SATURATION)), so the fields signal is 0..1.
ZH_FIELDS = {"head": 1.0, "rest": 0.7, "summary": 0.5, "first_step": 0.25, "english": 0.5}
ZH_SATURATION = 0.5
#: How much the query appearing as one piece counts in each field (the phrase signal); in the title's head (before
#: its colon) it counts ZH_PHRASE_HEAD, up to 1 as the query is all of the head.
ZH_PHRASE_FIELD = {"title": 0.6, "summary": 0.4, "first_step": 0.15, "english": 0.4}
ZH_PHRASE_HEAD = 0.7
ZH_WEIGHT_COVERAGE = 0.25
ZH_WEIGHT_FIELDS = 0.45
ZH_WEIGHT_PHRASE = 0.20
ZH_WEIGHT_OPERATOR = 0.15
ZH_MAX_SCORE = ZH_WEIGHT_COVERAGE + ZH_WEIGHT_FIELDS + ZH_WEIGHT_PHRASE + ZH_WEIGHT_OPERATOR + max(KIND_PRIOR.values())
#: Words of a question that say nothing of its topic: they only split the query into terms.
ZH_QUESTION_WORDS = ("为什么", "怎么样", "怎么办", "有没有", "能不能", "是不是", "怎么", "怎样", "如何", "为何", "什么",
                     "哪些", "哪个", "是否", "请问", "应该", "可以", "一下", "吗", "呢", "吧", "的", "了")
#: Variant spellings read as the word the KB uses.
ZH_VARIANTS = {"通讯": "通信", "气泡": "空泡", "延迟": "时延", "溢出": "不足"}
#: Words that also match the words the KB uses for them: each gram of the word is held where one of them is.
ZH_ALSO = {"内存": ("显存",), "减少": ("降低", "节省", "减小"), "降低": ("减少", "节省"), "节省": ("减少", "降低"),
           "矩阵乘": ("matmul",), "混合精度": ("amp",), "注意力": ("attention",)}
_NOT_WORD: re.Pattern[str] | None = None


class ChineseQuery(NamedTuple):
    """A Chinese query as matched: its text, its grams with their weights and alternatives, its Latin words."""

    text: str
    weights: dict[str, float]
    alternatives: dict[str, tuple[str, ...]]
    inner: set[str]  # the pairs inside runs of three or more characters (which may join two words)
    latin: list[str]


def rank_chinese(index: Index, candidates: list[EntrySummary], query: str, top: int) -> list[SearchHit]:
    """The ``candidates`` that hold the query's Chinese, best first (see the comment above). Only the entries
    holding a query gram are looked at, only the hits' zh texts read."""
    parsed = parse_chinese(query)
    if not candidates or not parsed.weights:
        return []
    by_id = {entry.id: entry for entry in candidates}
    others = {other for grams in parsed.alternatives.values() for other in grams} - parsed.weights.keys()
    holders = {gram: ids & by_id.keys() for gram, ids in index.zh_holders([*parsed.weights, *others]).items()}
    weights = gram_weights(parsed, holders, len(by_id))
    coverage = _coverage(parsed, holders, weights)
    zh = index.zh_texts(coverage)
    families = query_families(" ".join(parsed.latin), [w for w in parsed.latin if w not in STOPWORDS])
    hits = []
    for entry_id, share in coverage.items():
        entry, texts = by_id[entry_id], zh.get(entry_id, {})
        fields = zh_fields(entry, texts)
        score = round((ZH_WEIGHT_COVERAGE * share + ZH_WEIGHT_FIELDS * _field_score(parsed, weights, fields)
                       + ZH_WEIGHT_PHRASE * _phrase(parsed.text, fields)
                       + ZH_WEIGHT_OPERATOR * operator_score(entry, families) + KIND_PRIOR.get(entry.kind, 0.0))
                      / ZH_MAX_SCORE, 4)
        hits.append(SearchHit(entry.id, entry.kind, entry.title, score, list(entry.operators), list(entry.tags),
                              zh={"title": texts["title"]} if texts.get("title") else {}))
    hits.sort(key=hit_order)
    return hits[:max(top, 0)]


def parse_chinese(query: str) -> ChineseQuery:
    """The grams of a Chinese query (kb.zh: Han pairs and characters, Latin words), after question words are
    dropped and variant spellings read as the KB's."""
    text = query.lower()
    for word in ZH_QUESTION_WORDS:
        text = text.replace(word, " ")
    for variant, word in ZH_VARIANTS.items():
        text = text.replace(variant, word)
    weights: dict[str, float] = {}
    alternatives: dict[str, tuple[str, ...]] = {}
    inner: set[str] = set()
    for run in han_runs(text):
        pairs = [run[i:i + 2] for i in range(len(run) - 1)]
        weights.update((gram, 1.0) for gram in pairs)
        for char in run:
            weights.setdefault(char, UNIGRAM_WEIGHT)
        if len(run) >= 3:
            inner.update(pairs)
        for word, others in ZH_ALSO.items():
            if word in run:
                for gram in (*(word[i:i + 2] for i in range(len(word) - 1)), *word):
                    alternatives[gram] = tuple(dict.fromkeys([*alternatives.get(gram, ()), *others]))
    latin = LATIN.findall(text)
    weights.update((word, 1.0) for word in latin)
    return ChineseQuery(plain_text(text), weights, alternatives, inner, latin)


def plain_text(text: str) -> str:
    """``text`` (lower-case) as its Han runs and Latin words separated by single spaces: punctuation and spacing
    do not keep a phrase from matching."""
    global _NOT_WORD
    if _NOT_WORD is None:  # compiled on first use, as kb.zh's Han pattern is
        _NOT_WORD = re.compile("[^a-z0-9_" + "".join(f"{chr(low)}-{chr(high)}" for low, high in HAN_RANGES) + "]+")
    return " ".join(_NOT_WORD.sub(" ", text).split())


def zh_fields(entry: EntrySummary, zh: dict[str, str]) -> dict[str, str]:
    """The texts a Chinese query is matched in (plain_text): the zh title, its head (before its first colon: what the
    entry is about) and the rest of it, the zh summary and first step, the English title, operators and tags."""
    title = zh.get("title", "").lower()
    head, _, rest = title.replace("：", ":").partition(":")
    texts = {"title": title, "head": head, "rest": rest, "summary": zh.get("summary", "").lower(),
             "first_step": zh.get("first_step", "").lower(),
             "english": " ".join([entry.title, *entry.operators, *entry.tags]).lower()}
    return {name: plain_text(text) for name, text in texts.items()}


def gram_weights(parsed: ChineseQuery, holders: dict[str, set[str]], count: int) -> dict[str, float]:
    """Each query gram's weight: its idf over the ``count`` candidates (held where it or an alternative is), times
    its own weight — a single character's, for a pair that joins two words."""
    weights = {}
    for gram, weight in parsed.weights.items():
        if gram in parsed.inner and len(holders[gram]) < ZH_JOIN_COHESION * min(len(holders[gram[0]]),
                                                                                  len(holders[gram[1]])):
            weight = UNIGRAM_WEIGHT
        held = holders[gram].union(*(holders[other] for other in parsed.alternatives.get(gram, ())))
        weights[gram] = weight * math.log(1 + count / (1 + len(held)))
    return weights


def _coverage(parsed: ChineseQuery, holders: dict[str, set[str]], weights: dict[str, float]) -> dict[str, float]:
    """The share of the query's weight each entry holds, for the entries holding at least ZH_MIN_SCORE of it."""
    total = sum(weights.values()) or 1.0
    held: dict[str, float] = {}
    for gram, weight in weights.items():  # summed in the order of the query's grams, for every entry alike
        for entry_id in holders[gram].union(*(holders[other] for other in parsed.alternatives.get(gram, ()))):
            held[entry_id] = held.get(entry_id, 0.0) + weight
    return {entry_id: weight / total for entry_id, weight in held.items() if weight / total >= ZH_MIN_SCORE}


def _field_score(parsed: ChineseQuery, weights: dict[str, float], fields: dict[str, str]) -> float:
    """Where and how often the entry holds the query's grams (0..1): each gram's mentions weighted by their field
    (ZH_FIELDS) and saturating, times the gram's weight, over the query's weight."""
    words = {name: Counter(LATIN.findall(fields[name])) for name in ZH_FIELDS}
    total = sum(weights.values()) or 1.0
    score = 0.0
    for gram, weight in weights.items():
        mentions = 0.0
        for name, field_weight in ZH_FIELDS.items():
            for form in (gram, *parsed.alternatives.get(gram, ())):
                mentions += field_weight * (words[name][form] if form.isascii() else fields[name].count(form))
        score += weight * mentions / (mentions + ZH_SATURATION)
    return score / total


def _phrase(text: str, fields: dict[str, str]) -> float:
    """How much of the query appears as one piece in the entry's fields (0..1): the whole query, or else (at half
    the value) each of its space-separated parts by its share of the query's characters. A piece in the title's
    head (before its first colon: what the entry is about) counts most, the more so the more of the head it is."""
    texts = {name: fields[name] for name in ZH_PHRASE_FIELD if fields.get(name)}
    head = fields.get("head", "")

    def found(piece: str) -> float:
        if head and piece in head:
            return ZH_PHRASE_HEAD + (1.0 - ZH_PHRASE_HEAD) * len(piece) / len(head)
        return max((ZH_PHRASE_FIELD[name] for name, field in texts.items() if piece in field), default=0.0)

    parts = text.split()
    whole = found(text)
    if len(parts) < 2 or whole >= ZH_PHRASE_HEAD:
        return whole
    return max(whole, 0.5 * sum(len(part) * found(part) for part in parts) / sum(map(len, parts)))
