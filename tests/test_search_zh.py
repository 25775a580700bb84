"""Chinese search through the ``entries_zh`` FTS5 table ranks as scoring every entry's grams directly would.

The reference below reads every entry and takes the grams of its text (kb.zh) to find the entries holding each
query gram; the search finds them in FTS5 instead, and both rank them with kb.search.rank_chinese. Equal documents
mean the table's tokens are the grams (Han pairs and characters, Latin words with ``_`` and digits kept whole).
"""

from __future__ import annotations

import pytest

from conftest import ROOT
from opprof_advisor.kb import search as kb_search
from opprof_advisor.kb import store
from opprof_advisor.kb.rows import EntrySummary
from opprof_advisor.kb.zh import entry_text, gram_text, grams


@pytest.fixture(scope="module")
def kb_index(tmp_path_factory):
    """The shipped KB's index, built once for the module."""
    return store.build_index(tmp_path_factory.mktemp("zh") / "index.db", kb_dirs=[ROOT / "kb"], rebuild=True)


class ScanningIndex:
    """The index, except that the entries holding a gram are found by reading every entry's grams (no FTS5)."""

    def __init__(self, index):
        self.index = index
        self.grams = {e.id: set(grams(entry_text(e.zh, e.title, e.operators, e.tags))) for e in index.entries()}

    def __getattr__(self, name):
        return getattr(self.index, name)

    def zh_holders(self, wanted):
        return {gram: {entry_id for entry_id, held in self.grams.items() if gram in held} for gram in wanted}


def reference(index, query: str, kind: str | None = None, family: str | None = None, top: int = 10) -> list:
    hits = kb_search.run_search(ScanningIndex(index), query, kind=kind, operator=family, top=top).hits
    return [(hit.score, hit.id) for hit in hits]


@pytest.mark.parametrize("query", ["非极大值抑制", "通信未掩盖", "NMS 回退", "算", "算子算子融合", "大大", "aicpu 回退",
                                   "launch_bound 下发", "下发 瓶颈 host", "降频", "豈", "融合 算子 matmul"])
def test_chinese_queries_rank_as_scoring_every_entry(kb_index, query):
    for top in (1, 10, 200):
        found = [(hit.score, hit.id) for hit in kb_search.run_search(kb_index, query, top=top).hits]
        assert found == reference(kb_index, query, top=top), (query, top)


@pytest.mark.parametrize("options", [{"kind": "recipe"}, {"family": "NMS"}, {"kind": "case", "family": "MatMul"}])
def test_filtered_chinese_queries_rank_as_scoring_every_entry(kb_index, options):
    for query in ("非极大值抑制", "融合 算子", "NMS 回退"):
        hits = kb_search.run_search(kb_index, query, kind=options.get("kind"), operator=options.get("family")).hits
        assert [(hit.score, hit.id) for hit in hits] == reference(kb_index, query, **options), (query, options)


def test_an_entry_holds_its_grams_as_whole_tokens():
    text = gram_text({"title": "非极大值抑制回退"}, "NMS falls back to AI_CPU", ["NMS"], ["ai_cpu", "yolov8"])
    tokens = text.split()
    assert {"非极", "抑制", "回退", "非", "nms", "ai_cpu", "yolov8"} <= set(tokens)
    assert "ai" not in tokens and len(tokens) == len(set(tokens))


def test_an_entry_scores_by_its_best_tag():
    entry = EntrySummary("os-tuning", "tip", "Tune the operating system", [], [], ["zzzz", "host", "hostel"], [])
    assert kb_search.fuzzy_scores([entry], ["host"]) == {0: 100.0}
