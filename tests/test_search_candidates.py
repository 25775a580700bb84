"""Search through the candidate tables gives the very ranking of scoring every entry.

A KB of 2,000 entries generated from the real ones (benchmarks/bench_kb.py's generator: each a copy
of a real entry with its own id, a varied title and an added paragraph) is searched both ways for
many queries, filters and ``top`` values; the documents must be equal. The filters' keys (why an
entry can be a fuzzy hit only when it has one of them) are checked on random strings too.
"""

from __future__ import annotations

import importlib.util
import math
import random
import sqlite3
from pathlib import Path

import pytest

from opprof_advisor.kb import search as kb_search

from opprof_advisor.kb import search_index as kb_search_index

from opprof_advisor.kb import store
from opprof_advisor.kb.search_candidates import HIT_SCORE, skip_bigrams
from opprof_advisor.kb.search_index import token_set_length

ROOT = Path(__file__).resolve().parent.parent
ENTRIES = 2_000


def load_bench_kb():
    spec = importlib.util.spec_from_file_location("bench_kb", ROOT / "benchmarks" / "bench_kb.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def big_index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("big-kb")
    bench = load_bench_kb()
    bench.write_kb(folder / "kb", ENTRIES)
    index = store.build_index(folder / "big.db", kb_dirs=[ROOT / "kb", folder / "kb"])
    assert kb_search_index.open_tables(index) is not None
    return index, bench


def both_ways(index, monkeypatch, query, **options):
    """The search document through the candidate tables, and by scoring every entry."""
    fast = kb_search.search_to_json(kb_search.run_search(index, query, **options))
    with monkeypatch.context() as patched:
        patched.setattr(kb_search_index, "open_tables", lambda _index: None)
        slow = kb_search.search_to_json(kb_search.run_search(index, query, **options))
    return fast, slow


QUERIES = [
    # operator names and their spellings
    "nms", "NMS", "nsm", "non max suppression", "non-maximum suppression", "NonMaxSuppressionV3", "batched_nms",
    "matmul", "MatMulV2", "bmm", "FlashAttentionScore", "flash attention", "flashattention", "conv2d", "gemm",
    # symptoms
    "launch bound", "host bound", "aicpu fallback", "memory bound", "exposed communication",
    # English words, common and rare, and misspellings
    "npu", "the tiling", "performance", "tiling", "overlap", "recompute", "quantization", "quantisation",
    "kv cache", "torch.compile", "double buffer", "allreduce", "hccl", "atention", "tilling", "memroy",
    # short, long and odd queries
    "ai", "x y", "q", "oom", "how do i make flash attention faster on ascend npu with torch",
    "zzzzqqq", 'AND ("', "title:nms", "512B alignment",
]


@pytest.mark.parametrize("query", QUERIES)
def test_candidates_rank_like_scoring_every_entry(big_index, monkeypatch, query):
    index, _ = big_index
    for top in (1, 10, 60):
        fast, slow = both_ways(index, monkeypatch, query, top=top)
        assert fast == slow, (query, top)


def test_selective_queries_rank_like_scoring_every_entry(big_index, monkeypatch):
    index, bench = big_index
    for number in (0, 7, ENTRIES // 2, ENTRIES - 1):
        for query in (bench.letters(number), bench.letters(number)[:-1] + "q"):
            fast, slow = both_ways(index, monkeypatch, query, top=10)
            assert fast == slow, query


@pytest.mark.parametrize("kind", ["recipe", "case", "pattern", "tip"])
@pytest.mark.parametrize("query", ["nms", "tiling", "launch bound", "npu", "nsm", "memory"])
def test_kind_filter_ranks_like_scoring_every_entry(big_index, monkeypatch, kind, query):
    fast, slow = both_ways(big_index[0], monkeypatch, query, kind=kind, top=10)
    assert fast == slow


@pytest.mark.parametrize("operator", ["NMS", "MatMul", "bmm", "Conv2D", "FlashAttention", "AllReduce"])
@pytest.mark.parametrize("query", ["nms", "tune shapes", "npu", "zzzzqqq", "fusion"])
def test_operator_filter_ranks_like_scoring_every_entry(big_index, monkeypatch, operator, query):
    fast, slow = both_ways(big_index[0], monkeypatch, query, operator=operator, top=10)
    assert fast == slow


def test_a_long_hit_list_ranks_like_scoring_every_entry(big_index, monkeypatch):
    for query in ("nms", "npu", "launch bound"):
        fast, slow = both_ways(big_index[0], monkeypatch, query, top=5_000)
        assert fast == slow
        assert len(fast["results"]) > 100


@pytest.mark.parametrize("query", ["非极大值抑制", "通信未掩盖", "NMS 回退", "算", "算子算子融合", "大大", "aicpu 回退",
                                   "launch_bound 下发", "nms", "非极大值抑制 nms-on-npu", "下发 瓶颈 host"])
def test_chinese_queries_rank_alike(big_index, monkeypatch, query):
    for top in (1, 10, 200):
        fast, slow = both_ways(big_index[0], monkeypatch, query if query != "nms" else "nms 回退", top=top)
        assert fast == slow, (query, top)
        assert fast["results"] or query not in ("非极大值抑制", "通信未掩盖", "NMS 回退")


@pytest.mark.parametrize("query", ["非极大值抑制", "通信未掩盖", "算", "算子算子融合", "大大", "下发 瓶颈", "降频", "豈",
                                   "NMS 回退", "launch_bound 下发", "非极大值抑制 nms-on-npu", "aicpu 回退 zzqq", "回退 ai"])
def test_chinese_postings_rank_like_scoring_every_entry(big_index, monkeypatch, query):
    # The holders of characters and words from their postings, of pairs from the lines of the blob's parts.
    looked_up = []
    original = kb_search_index.SearchTables.zh_lines
    monkeypatch.setattr(kb_search_index.SearchTables, "zh_lines",
                        lambda self, rowids: looked_up.append(len(rowids)) or original(self, rowids))
    fast, slow = both_ways(big_index[0], monkeypatch, query, top=60)
    assert fast == slow, query
    assert looked_up and (max(looked_up) > 0) == (query not in ("算", "豈"))  # lines are read for pairs only
    assert fast["results"] or query not in ("非极大值抑制", "通信未掩盖", "降频", "NMS 回退", "下发 瓶颈")


@pytest.mark.parametrize("options", [{"kind": "recipe"}, {"operator": "NMS"}, {"kind": "case", "operator": "MatMul"}])
def test_filtered_chinese_queries_rank_alike(big_index, monkeypatch, options):
    for query in ("非极大值抑制", "融合 算子", "NMS 回退"):
        fast, slow = both_ways(big_index[0], monkeypatch, query, top=10, **options)
        assert fast == slow, (query, options)


def test_a_query_scores_a_few_entries_only(big_index, monkeypatch):
    from opprof_advisor.kb import search_candidates as kb_search_candidates

    index, bench = big_index
    scored = []
    original = kb_search_candidates._Scorer.add
    monkeypatch.setattr(kb_search_candidates._Scorer, "add",
                        lambda self, rowids: scored.extend(rowids) or original(self, rowids))
    tag = bench.letters(ENTRIES // 2)
    for query, first in (("nms", "nms-on-npu"), (tag, f"-{tag}")):
        scored.clear()
        hits = kb_search.search(index, query)
        assert hits[0].id.startswith(first) or hits[0].id.endswith(first)
        assert 0 < len(set(scored)) < len(index.ids()) / 4, query


def test_tables_of_other_content_are_not_used(big_index, tmp_path, monkeypatch):
    index, _ = big_index
    copy = tmp_path / "copy.db"
    with sqlite3.connect(index.db_path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    with sqlite3.connect(copy) as conn:
        conn.execute("update meta set value = 'another build' where key = ?", (kb_search_index.STAMP_KEY,))
    stale = store.Index(copy, *store._open_snapshot(copy))
    assert kb_search_index.open_tables(stale) is None
    assert [hit.id for hit in kb_search.search(stale, "nms")] == [hit.id for hit in kb_search.search(index, "nms")]


# ---------------------------------------------------------------------------------------------
# The keys every fuzzy hit has (kb_search_candidates' docstring), on random strings
# ---------------------------------------------------------------------------------------------


def random_words(rng: random.Random, count: int, alphabet: str = "abcdenmos") -> list[str]:
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(count)]


def mutate(rng: random.Random, word: str) -> str:
    """``word`` with one character inserted, deleted or replaced."""
    at = rng.randrange(len(word) + 1)
    return rng.choice([word[:at] + rng.choice("abcdenmos") + word[at:], word[:at] + word[at + 1:],
                       word[:at] + rng.choice("abcdenmos") + word[at + 1:]]) or word


def test_an_id_scoring_75_holds_a_skip_bigram_of_the_slug():
    from rapidfuzz import fuzz

    rng = random.Random(18)
    checked = 0
    for _ in range(40_000):
        slug = "-".join(random_words(rng, rng.randint(1, 3), "abcnm"))
        if len(slug.replace("-", "")) < 3:
            continue
        entry_id = "-".join(random_words(rng, rng.randint(1, 5), "abcnm-"))
        if len(entry_id) <= len(slug) or fuzz.partial_ratio(slug, entry_id) < HIT_SCORE:
            continue
        checked += 1
        grams = skip_bigrams(slug, 1 + math.floor(0.4 * len(slug)))
        assert any(entry_id[i:i + 2] in grams for i in range(len(entry_id) - 1)), (slug, entry_id)
    assert checked > 500


def test_a_title_scoring_75_shares_a_word_or_has_a_close_length():
    from rapidfuzz import fuzz

    rng = random.Random(19)
    checked = 0
    for _ in range(20_000):
        terms = random_words(rng, rng.randint(1, 3))
        # each word changed a little, and sometimes one more: close titles that share no word
        words = [mutate(rng, term) for term in terms] + random_words(rng, rng.randint(0, 1))
        title = " ".join(rng.sample(words, len(words)))
        if fuzz.token_set_ratio(" ".join(terms), title) < HIT_SCORE or set(terms) & set(title.split()):
            continue
        checked += 1
        size = token_set_length(" ".join(terms))
        assert math.floor(0.6 * size) <= token_set_length(title) <= math.ceil(size * 5 / 3), (terms, title)
    assert checked > 500


def test_a_title_run_together_scoring_90_shares_a_trigram():
    from rapidfuzz import fuzz

    rng = random.Random(20)
    checked = 0
    for _ in range(20_000):
        joined = "".join(random_words(rng, rng.randint(1, 3), "abcnm"))
        title = "".join(random_words(rng, rng.randint(0, 2), "abcnm") + [mutate(rng, joined)]
                        + random_words(rng, rng.randint(0, 2), "abcnm"))
        if len(joined) < 5 or len(title) < 5 or fuzz.partial_ratio(joined, title) < kb_search.JOINED_TITLE_MIN:
            continue
        checked += 1
        assert any(joined[i:i + 3] in title for i in range(len(joined) - 2)), (joined, title)
    assert checked > 500


def test_skip_bigrams_pair_characters_within_the_span():
    assert skip_bigrams("abcd", 1) == {"ab", "bc", "cd"}
    assert skip_bigrams("abcd", 2) == {"ab", "bc", "cd", "ac", "bd"}
    assert skip_bigrams("a", 3) == set()


def test_an_entry_scores_by_its_best_tag():
    from opprof_advisor.kb.store import EntrySummary

    entry = EntrySummary("os-tuning", "tip", "Tune the operating system", [], [], ["zzzz", "host", "hostel"], [])
    assert kb_search.fuzzy_scores([entry], ["host"]) == {0: 100.0}


def test_tables_of_another_layout_are_not_used(big_index, tmp_path, monkeypatch):
    index, _ = big_index
    monkeypatch.setattr(kb_search_index, "LAYOUT", "0")
    assert kb_search_index.open_tables(index) is None
