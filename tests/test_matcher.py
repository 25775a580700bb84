"""EntryMatcher: estimator conventions, field weighting, the pure-Python scorer equals sklearn, the JSON cache."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from opprof_advisor.core.errors import MatcherError
from opprof_advisor.advice.matcher import EntryMatcher, cache_path, clear_memo, entry_document, load_matcher
from opprof_advisor.core.models import Entry


def make_entries() -> list[Entry]:
    return [
        Entry(id="nms-on-npu", kind="recipe", title="Run NMS on the NPU", summary="Move non-max suppression off the AI CPU.",
              operators=["NMS"], symptoms=["aicpu_fallback", "nms_cpu"], tags=["detection"], models=["yolov8"],
              body="NMS falls back to the AI CPU. Use npu_batch_nms. The cube unit is idle meanwhile."),
        Entry(id="matmul-tiling", kind="recipe", title="Tile MatMul for the cube unit", summary="Pick tiles that fill L0.",
              operators=["MatMul"], symptoms=["mte2_bound"], tags=["gemm"],
              body="Large MatMul kernels bound by MTE2 loads benefit from bigger base blocks."),
        Entry(id="flash-attention", kind="recipe", title="Use FlashAttention", summary="Fuse attention.",
              operators=["FlashAttention", "Softmax"], symptoms=["unfused_attention"], tags=["llm"],
              body="BatchMatMul plus Softmax chains should become npu_fusion_attention. NMS is unrelated here."),
        Entry(id="cast-on-aicpu", kind="recipe", title="Keep Cast off the AI CPU", summary="Avoid int64 and float64.",
              operators=["Cast"], symptoms=["aicpu_fallback", "double_dtype"], tags=["dtype"],
              body="Cast from float64 runs on the AI CPU. NMS NMS NMS NMS NMS NMS NMS NMS mentioned often in prose."),
    ]


QUERIES = [
    "NMS NMS NMS aicpu_fallback aicpu_fallback nms_cpu aicpu cpu",
    "MatMul MatMul MatMul MatMul mte2_bound cube float16",
    "FlashAttention Softmax Softmax unfused_attention llm",
    "Cast Cast aicpu_fallback double_dtype float64 int64",
    "words the vocabulary has never seen",
    "",
    "Conv2D conv2d CONV2D MatMul yolov8 yolov8",
]


@pytest.fixture(scope="module")
def fitted() -> EntryMatcher:
    return EntryMatcher().fit(make_entries())


def test_init_stores_parameters_only():
    matcher = EntryMatcher(sublinear_tf=False)
    assert matcher.sublinear_tf is False
    assert not [name for name in vars(matcher) if name.endswith("_")]


def test_fit_returns_self_with_fitted_state(fitted):
    assert fitted.entry_ids_ == ["nms-on-npu", "matmul-tiling", "flash-attention", "cast-on-aicpu"]
    assert fitted.vectorizer_ is not None
    assert len(fitted.matrix_) == 4
    assert len(fitted.idf_) == len(fitted.vocabulary_)


def test_empty_entries_raise_named_error():
    with pytest.raises(MatcherError, match="no entries"):
        EntryMatcher().fit([])


def test_unfitted_matcher_raises_named_error():
    with pytest.raises(MatcherError, match="not fitted"):
        EntryMatcher().score("nms")


@pytest.mark.parametrize("query", QUERIES)
def test_pure_python_scores_equal_sklearn(fitted, query):
    from sklearn.metrics.pairwise import linear_kernel

    docs = [entry_document(e) for e in make_entries()]
    expected = linear_kernel(fitted.vectorizer_.transform([query]), fitted.vectorizer_.transform(docs))[0]
    got = fitted.score(query)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert abs(a - b) < 1e-9


def test_restored_state_scores_like_the_fitted_one(fitted):
    restored = EntryMatcher.from_state(json.loads(json.dumps(fitted.to_state())))
    assert restored.vectorizer_ is None
    for query in QUERIES:
        assert restored.score(query) == pytest.approx(fitted.score(query), abs=1e-12)


def test_operator_field_outweighs_body_mentions(fitted):
    # cast-on-aicpu says "NMS" eight times in its body; the NMS recipe lists NMS as its operator.
    scores = dict(zip(fitted.entry_ids_, fitted.score("NMS")))
    assert scores["nms-on-npu"] > scores["cast-on-aicpu"] > scores["flash-attention"]
    assert scores["matmul-tiling"] == 0.0


def test_title_outweighs_body():
    entries = [
        Entry(id="a", kind="tip", title="cube utilisation", body="nothing else"),
        Entry(id="b", kind="tip", title="other words", body="cube utilisation"),
    ]
    matcher = EntryMatcher().fit(entries)
    a, b = matcher.score("cube")
    assert a > b > 0


def test_matched_terms_lists_contributions(fitted):
    terms = dict(fitted.matched_terms("NMS aicpu_fallback MatMul", "nms-on-npu"))
    assert set(terms) == {"nms", "aicpu_fallback"}
    total = sum(terms.values())
    assert total == pytest.approx(fitted.score("NMS aicpu_fallback MatMul")[0], abs=1e-12)


def test_foreign_state_is_refused(fitted):
    state = fitted.to_state()
    state["version"] = 999
    with pytest.raises(MatcherError):
        EntryMatcher.from_state(state)


def test_load_matcher_caches_json_keyed_by_content_hash(tmp_path):
    clear_memo()
    entries = make_entries()
    index = SimpleNamespace(db_path=tmp_path / "advisor.db", content_hash="abc123", entries=lambda: entries)
    first = load_matcher(index)
    path = cache_path(index)
    assert path.name == "advisor.matcher-abc123.json"
    assert json.loads(path.read_text())["entry_ids"] == first.entry_ids_
    clear_memo()
    # A cached state is read back without fitting: entries() must not even be called.
    index_cached = SimpleNamespace(db_path=index.db_path, content_hash="abc123", entries=lambda: pytest.fail("refitted"))
    again = load_matcher(index_cached)
    assert again.vectorizer_ is None
    assert again.score(QUERIES[0]) == pytest.approx(first.score(QUERIES[0]), abs=1e-12)


def test_new_content_hash_refits_and_drops_stale_cache(tmp_path):
    clear_memo()
    entries = make_entries()
    old = SimpleNamespace(db_path=tmp_path / "advisor.db", content_hash="old", entries=lambda: entries)
    load_matcher(old)
    new = SimpleNamespace(db_path=tmp_path / "advisor.db", content_hash="new", entries=lambda: entries[:2])
    matcher = load_matcher(new)
    assert matcher.entry_ids_ == ["nms-on-npu", "matmul-tiling"]
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["advisor.matcher-new.json"]


def test_corrupt_cache_is_refitted(tmp_path):
    clear_memo()
    index = SimpleNamespace(db_path=tmp_path / "advisor.db", content_hash="h", entries=make_entries)
    cache_path(index).write_text("{not json", encoding="utf-8")
    matcher = load_matcher(index)
    assert matcher.vectorizer_ is not None
    assert json.loads(cache_path(index).read_text())["schema"] == "opprof-advisor/matcher/1"


def test_pure_python_equals_sklearn_on_the_real_kb_and_profile_queries():
    from sklearn.metrics.pairwise import linear_kernel

    from opprof_advisor.kb import load_entry, find_kb_files
    from opprof_advisor.core.models import OpTypeStat, Profile, Symptom
    from opprof_advisor.core.paths import builtin_kb_dir
    from opprof_advisor.advice.recommend import build_query

    entries = [load_entry(path) for path in find_kb_files([builtin_kb_dir()])]
    matcher = EntryMatcher().fit(entries)
    rows = [OpTypeStat("Conv2D", "Conv2D", "ai_core", 64, 5000.0, 0.5, dtypes=["FLOAT16"]),
            OpTypeStat("NonMaxSuppressionV3", "NMS", "ai_cpu", 1, 2000.0, 0.2, dtypes=["FLOAT", "INT32"]),
            OpTypeStat("MatmulLeakyRelu", "MatmulLeakyRelu", "ai_core", 1, 3000.0, 0.3)]
    profile = Profile("p", "torch-npu-text", device_time_us=10_000.0, op_types=rows,
                      symptoms=[Symptom("aicpu_fallback", ["NonMaxSuppressionV3"], 0.2, "NMS on AI CPU"),
                                Symptom("launch_bound", [], 0.1, "gaps")])
    queries = [build_query(profile), build_query(profile, model="yolov8s"), build_query(Profile("e", "x"))]
    docs = matcher.vectorizer_.transform([entry_document(e) for e in entries])
    for query in queries:
        expected = linear_kernel(matcher.vectorizer_.transform([query]), docs)[0]
        got = matcher.score(query)
        assert max(abs(a - b) for a, b in zip(got, expected)) < 1e-9


@pytest.mark.parametrize("damage", [
    lambda state: state["columns"].update(weights="not base64!"),
    lambda state: state["columns"].update(rows=state["columns"]["rows"][:8]),
    lambda state: state["columns"].update(indptr=""),
    lambda state: state["vocabulary"].update(extra=10_000),
    lambda state: state.update(byteorder="middle"),
    lambda state: state.pop("columns"),
])
def test_a_damaged_cached_state_is_refused_not_used(fitted, damage):
    state = json.loads(json.dumps(fitted.to_state()))
    damage(state)
    with pytest.raises(MatcherError):
        EntryMatcher.from_state(state)


def test_the_cached_state_restores_every_weight_exactly(fitted):
    restored = EntryMatcher.from_state(json.loads(json.dumps(fitted.to_state())))
    assert restored.matrix_ == fitted.matrix_
    for query in QUERIES:
        assert restored.score(query) == fitted.score(query)
