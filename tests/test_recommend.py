"""recommend.suggest: applicability, evidence, Amdahl-bounded gains, ranking, similar cases, notes, JSON."""

from __future__ import annotations

import math

import pytest

from opprof_advisor.core.errors import MatcherError
from opprof_advisor.core.i18n import localize, set_lang
from opprof_advisor.advice.matcher import EntryMatcher
from opprof_advisor.core.models import Entry, Gain, OpTypeStat, Profile, Symptom
from opprof_advisor.advice.recommend import (
    MIN_SIMILARITY,
    build_query,
    case_mix_weights,
    rank_cases,
    suggest,
    suggestions_to_json,
)
from opprof_advisor.render.markdown import suggest_markdown
from opprof_advisor.advice.requirements import cann_matches

SEED = "shared/seeds/000_4c1ddc5ccf4e4a40.txt"


def gain(low, high, scope="operators", metric="op_time"):
    return Gain(low, high, metric, scope, SEED)


def kb() -> list[Entry]:
    return [
        Entry(id="nms-on-npu", kind="recipe", title="Run NMS on the NPU", summary="NMS off the AI CPU.",
              operators=["NMS"], symptoms=["aicpu_fallback", "nms_cpu"], tags=["detection"], models=["yolov8"],
              gain=gain(25, 35), evidence="D", sources=[SEED], body="NonMaxSuppression on AI CPU."),
        Entry(id="aicpu-dtype-cast", kind="recipe", title="Keep Cast and int64 work off the AI CPU",
              operators=["Cast"], symptoms=["aicpu_fallback", "double_dtype"], tags=["dtype"], evidence="C",
              sources=["https://example.org/cast"], body="Cast float64 AI CPU."),
        Entry(id="aicpu-fallback", kind="pattern", title="Operators falling back to the AI CPU",
              symptoms=["aicpu_fallback"], evidence="C", sources=["https://example.org/aicpu"], body="AI CPU fallback."),
        Entry(id="conv2d-tuning", kind="recipe", title="Conv2D padding and layout", operators=["Conv2D"],
              gain=gain(5, 10), evidence="D", sources=[SEED], body="Conv2D padding."),
        Entry(id="matmul-tiling", kind="recipe", title="MatMul tiling", operators=["MatMul"], symptoms=["mte2_bound"],
              gain=gain(10, 15), evidence="D", sources=[SEED], body="MatMul tiles.", hardware=["Atlas A2"], cann=">=8.0"),
        Entry(id="flash-attention", kind="recipe", title="FlashAttention", operators=["FlashAttention", "Softmax", "MatMul"],
              symptoms=["unfused_attention"], gain=gain(20, 30), evidence="D", sources=[SEED], body="Fuse attention."),
        Entry(id="task-queue", kind="tip", title="Enable TASK_QUEUE_ENABLE", symptoms=["launch_bound"], evidence="C",
              sources=["https://example.org/tq"], gain=gain(5, 20, scope="end_to_end", metric="throughput"),
              body="Host dispatch."),
        Entry(id="yolov8s-migration", kind="case", title="YOLOv8s migration", operators=["NMS", "Conv2D"],
              symptoms=["aicpu_fallback", "nms_cpu"], models=["yolov8", "yolov8s"],
              gain=gain(37.8, 37.8, scope="end_to_end", metric="latency"), evidence="D", sources=[SEED],
              op_mix=["Conv2D", "Activation", "Concat", "Resize", "Elementwise", "Pooling", "Softmax", "NMS"]),
        Entry(id="llama-case", kind="case", title="LLaMA fused ops", operators=["FlashAttention"], evidence="D",
              sources=[SEED], op_mix=["MatMul", "FlashAttention", "Elementwise", "RMSNorm"]),
    ]


def row(op_type, family, unit, time_us, device, count=10, dtypes=()):
    return OpTypeStat(op_type, family, unit, count, time_us, time_us / device, dtypes=list(dtypes))


def yolo_profile() -> Profile:
    device = 100_000.0
    rows = [
        row("Conv2D", "Conv2D", "ai_core", 48_000, device, 640),
        row("NonMaxSuppressionV3", "NMS", "ai_cpu", 16_000, device, 8),
        row("Swish", "Activation", "ai_vector", 14_000, device, 560),
        row("ConcatD", "Concat", "ai_vector", 8_000, device, 160),
        row("ResizeNearestNeighborV2", "Resize", "ai_vector", 4_000, device, 16),
        row("SoftmaxV2", "Softmax", "ai_vector", 3_000, device, 8),
        row("Add", "Elementwise", "ai_vector", 5_000, device, 300),
        row("Cast", "Cast", "ai_core", 2_000, device, 40),
    ]
    symptoms = [
        Symptom("aicpu_fallback", ["NonMaxSuppressionV3"], 0.16, "1 op type on AI CPU"),
        Symptom("nms_cpu", ["NonMaxSuppressionV3"], 0.16, "NMS on AI CPU"),
    ]
    return Profile("yolo/", "torch-npu-text", chip="Ascend910B3", versions={"cann": "8.0.RC2"},
                   device_time_us=device, op_types=rows, symptoms=symptoms, notes=["cannot judge X: Y is missing"])


@pytest.fixture(scope="module")
def entries() -> list[Entry]:
    return kb()


@pytest.fixture(scope="module")
def matcher(entries) -> EntryMatcher:
    return EntryMatcher().fit(entries)


def ids(result):
    return [s.entry.id for s in result.suggestions]


def test_nms_recipe_first_with_amdahl_gain(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher)
    first = result.suggestions[0]
    assert first.entry.id == "nms-on-npu"
    # 25-35 % of NMS time, NMS holds 16 % of device time -> 4.0-5.6 % of device time.
    assert first.expected_gain.low_pct == pytest.approx(25 * 0.16)
    assert first.expected_gain.high_pct == pytest.approx(35 * 0.16)
    assert first.expected_gain.saved_us_high == pytest.approx(0.35 * 16_000)
    assert [e.op_type for e in first.evidence] == ["NonMaxSuppressionV3"]
    assert first.matched_symptoms == ["aicpu_fallback", "nms_cpu"]


def test_cases_are_similar_cases_not_suggestions(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher)
    assert "yolov8s-migration" not in ids(result)
    # The LLaMA case shares too little of the op mix to be said to resemble a detector.
    assert [c.id for c in result.similar_cases] == ["yolov8s-migration"]
    assert result.similar_cases[0].similarity > 0.8
    ranked = rank_cases(yolo_profile(), entries)
    assert [c.id for c in ranked] == ["yolov8s-migration", "llama-case"]
    assert ranked[1].similarity < MIN_SIMILARITY


def test_a_profile_like_no_case_says_so_and_names_the_closest(entries, matcher):
    profile = yolo_profile()
    profile.symptoms = []
    for row in profile.op_types:  # keep one small detector family (Resize, 4 %); the rest become communication
        if row.family != "Resize":
            row.family, row.unit = "AllGather", "communication"
    closest = rank_cases(profile, entries)
    assert closest and closest[0].similarity < MIN_SIMILARITY
    result = suggest(profile, entries, matcher=matcher)
    assert result.similar_cases == []
    assert f"no case study resembles this profile closely (closest: {closest[0].id}," in " ".join(result.notes)


def test_kind_case_suggests_cases_with_observed_note(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, kind="case")
    assert ids(result) == ["yolov8s-migration"]
    assert result.suggestions[0].expected_gain is None
    assert any(n.startswith("yolov8s-migration: observed in that case: 37.8–37.8 % latency") for n in result.notes)


def test_entry_without_evidence_is_not_suggested(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, top=20)
    # No MatMul, FlashAttention or launch-bound evidence in this profile.
    assert not {"matmul-tiling", "task-queue"} & set(ids(result))
    # The attention recipe names Softmax too: the DFL softmax (3 %) makes it loosely related; the cast recipe
    # (Cast on the AI Core, 2 %) too. The smallest loose stakes come last.
    assert ids(result)[-2:] == ["flash-attention", "aicpu-dtype-cast"]
    attention = result.suggestions[-2]
    assert attention.evidence_kind == "loose" and attention.stake_share == pytest.approx(0.03)
    # Cast runs on the AI Core here: the cast recipe is loosely related (operators only) and below NMS.
    assert ids(result).index("aicpu-dtype-cast") > ids(result).index("nms-on-npu")


def test_symptom_backed_outranks_loosely_related(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, top=20)
    by_id = {s.entry.id: s for s in result.suggestions}
    conv = by_id["conv2d-tuning"]
    # 48 % of device time but no symptom: its 5-10 % figure (mid 3.6 ms) counts a fiftieth
    assert conv.evidence_kind == "loose" and conv.value_us == pytest.approx(48_000 * 0.075 * 0.02)
    assert conv.expected_gain.basis.endswith("holds only if it applies")
    pattern = by_id["aicpu-fallback"]
    assert pattern.evidence_kind == "problem" and pattern.value_us == pytest.approx(16_000 * 0.30)
    # NMS: 25-35 % of its 16 ms (mid 4.8 ms) and the generic AI CPU pattern (16 ms x 0.30) tie on time;
    # relevance puts the NMS recipe first. Only two entries are backed, so the loose one takes third place.
    assert ids(result)[:3] == ["nms-on-npu", "aicpu-fallback", "conv2d-tuning"]


def test_score_follows_documented_formula(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, top=20)
    for s in result.suggestions:
        confidence = {"problem": 1.0, "descriptive": 0.1, "loose": 0.02}[s.evidence_kind]
        value = (s.expected_gain.mid_us if s.expected_gain else 0.3 * s.stake_us) * confidence
        assert s.specificity == (1.0 if not s.matched_symptoms or s.matched_operators else 0.85)
        assert s.value_us == pytest.approx(value, abs=1e-3)
        assert s.score == pytest.approx(value * (0.8 + 0.4 * s.relevance * s.specificity) * s.hardware, rel=1e-5)
    # the clean top three first, then everything else in score order
    rest = result.suggestions[3:]
    assert [s.score for s in rest] == sorted((s.score for s in rest), reverse=True)


def test_gain_never_exceeds_matched_share(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, top=20)
    gains = [s for s in result.suggestions if s.expected_gain]
    assert gains
    for s in gains:
        assert s.expected_gain.high_pct <= s.stake_share * 100 + 1e-9


def test_gains_off(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, gains=False)
    assert all(s.expected_gain is None for s in result.suggestions)
    assert not any("no sourced gain" in n for n in result.notes)


def test_no_gain_is_said_in_notes(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, top=20)
    assert "aicpu-fallback: no sourced gain figure, so no expected gain is given" in result.notes
    assert result.notes[0] == "cannot judge X: Y is missing"  # the profile's notes come first


def test_aicpu_cast_profile_prefers_cast_recipe(entries, matcher):
    device = 50_000.0
    rows = [row("MatMulV2", "MatMul", "ai_core", 30_000, device, dtypes=["FLOAT16"]),
            row("Cast", "Cast", "ai_cpu", 12_000, device, 400, dtypes=["INT64"]),
            row("Add", "Elementwise", "ai_vector", 8_000, device)]
    profile = Profile("p", "torch-npu-text", device_time_us=device, op_types=rows,
                      symptoms=[Symptom("aicpu_fallback", ["Cast"], 0.24, "Cast on AI CPU")])
    result = suggest(profile, entries, matcher=matcher)
    assert ids(result)[:2] == ["aicpu-dtype-cast", "aicpu-fallback"]
    assert result.suggestions[0].evidence[0].op_type == "Cast"
    assert "nms-on-npu" not in ids(result)  # aicpu_fallback concerns Cast, not NMS


def test_hardware_and_cann_mismatch_stated(entries, matcher):
    device = 10_000.0
    profile = Profile("p", "msprof-text", chip="Ascend310P3", versions={"cann": "7.0.0"}, device_time_us=device,
                      op_types=[row("MatMulV2", "MatMul", "ai_core", 9_000, device)],
                      symptoms=[Symptom("mte2_bound", ["MatMulV2"], 0.9, "MTE2 busiest")])
    result = suggest(profile, entries, matcher=matcher)
    first = result.suggestions[0]
    assert first.entry.id == "matmul-tiling" and first.hardware == 0.8
    assert ("matmul-tiling: written for Atlas A2; this profile ran on Ascend310P3; applies to CANN >=8.0; "
            "this profile used CANN 7.0.0 — check that it applies") in result.notes
    note = next(n for n in result.notes if n.startswith("matmul-tiling: written for"))
    set_lang("zh")
    try:
        assert localize(note) == ("matmul-tiling：针对 Atlas A2 编写；本 profile 运行在 Ascend310P3 上; 适用于 CANN >=8.0；"
                                  "本 profile 使用的是 CANN 7.0.0，请确认它是否适用")
    finally:
        set_lang("en")


def test_bound_class_symptom_is_tier_one_and_unknown_family_counts():
    entries = kb() + [Entry(id="mte2-pattern", kind="pattern", title="MTE2-bound kernels", operators=["MatMul"],
                            symptoms=["mte2_bound"], evidence="C", sources=["https://example.org/mte2"])]
    matcher = EntryMatcher().fit(entries)
    device = 600.0
    # msprof op names the kernel, not its type: the family is unknown, the symptom still applies.
    profile = Profile("k", "msopprof-device", device_time_us=device,
                      op_types=[row("MatmulCustom", "MatmulCustom", "mix_aic", 600.0, device, 1)],
                      symptoms=[Symptom("mte2_bound", ["MatmulCustom"], 1.0, "aic_mte2 0.93")])
    result = suggest(profile, entries, matcher=matcher)
    assert set(ids(result)) == {"matmul-tiling", "mte2-pattern"}
    assert {s.evidence_kind for s in result.suggestions} == {"descriptive"}
    # matmul-tiling's 10-15 % figure is about MatMul time; the custom kernel's family is unknown
    tiling = next(s for s in result.suggestions if s.entry.id == "matmul-tiling")
    assert tiling.expected_gain is None and tiling.value_us == pytest.approx(600.0 * 0.03)


def test_symptom_without_op_types_uses_its_share(entries, matcher):
    device = 10_000.0
    profile = Profile("p", "torch-npu-text", device_time_us=device,
                      op_types=[row("Add", "Elementwise", "ai_vector", 10_000, device, 5000)],
                      symptoms=[Symptom("launch_bound", [], 0.4, "gaps as long as kernels")])
    result = suggest(profile, entries, matcher=matcher)
    assert ids(result) == ["task-queue"]
    s = result.suggestions[0]
    assert s.stake_share == pytest.approx(0.4)
    assert s.expected_gain is None  # end_to_end gain: observed, not expected
    assert s.evidence[0].op_type is None and s.evidence[0].time_us == pytest.approx(4000)


def test_query_weights_families_by_share_and_adds_hints():
    query = build_query(yolo_profile(), model="YOLOv8s").split()
    assert query.count("Conv2D") == 1 + round(20 * 0.48)
    assert query.count("NMS") == 1 + round(20 * 0.16)
    assert query.count("aicpu_fallback") == 2 + round(20 * 0.16)
    assert query.count("yolov8s") == 4 and query.count("yolov8") == 4


def test_case_mix_weights_rank_rule():
    weights = case_mix_weights(["A", "B", "C"])
    total = 1 + 1 / 2 + 1 / 3
    assert weights == pytest.approx({"A": 1 / total, "B": 0.5 / total, "C": (1 / 3) / total})
    # The loader's mapping form (already weighted by rank) gives the same weights.
    assert case_mix_weights({"A": 0.5455, "B": 0.2727, "C": 0.1818}) == pytest.approx(weights)


@pytest.mark.parametrize("version,spec,ok", [
    ("8.0.RC2", ">=8.0", True), ("7.0.0", ">=8.0", False), ("8.3.RC1", ">=7.0,<8.3", False),
    ("8.2.RC1", ">=7.0,<8.3", True), ("unknown", ">=8.0", None),
])
def test_cann_matches(version, spec, ok):
    assert cann_matches(version, spec) is ok


def test_empty_entries_and_unknown_kind_raise(matcher):
    with pytest.raises(MatcherError):
        suggest(yolo_profile(), [], matcher=matcher)
    with pytest.raises(MatcherError, match="unknown kind"):
        suggest(yolo_profile(), kb(), matcher=matcher, kind="recipes")


def test_json_shape(entries, matcher):
    doc = suggestions_to_json(suggest(yolo_profile(), entries, matcher=matcher, top=3))
    assert doc["schema"] == "opprof-advisor/suggest/1"
    assert doc["profile"] == {"path": "yolo/", "format": "torch-npu-text", "device_time_us": 100_000.0,
                              "reference": "device time", "reference_us": 100_000.0}
    first = doc["suggestions"][0]
    # the /1 fields first, then what explains the ranking (added, never removed)
    assert list(first)[:11] == ["rank", "id", "kind", "title", "tags", "operators", "score", "evidence",
                                "expected_gain", "evidence_grade", "sources"]
    assert {"stake_us", "stake_share", "matched_symptoms", "requirements", "gain_basis", "score_parts",
            "first_step", "show"} <= set(first)
    assert (first["stake_us"], first["stake_share"], first["gain_basis"]) == (16_000.0, 0.16, "sourced")
    assert first["matched_symptoms"] == ["aicpu_fallback", "nms_cpu"]
    assert first["score_parts"]["evidence_kind"] == "problem" and first["show"] == "advisor show nms-on-npu"
    assert list(first["expected_gain"])[:5] == ["low_pct", "high_pct", "saved_us_low", "saved_us_high", "basis"]
    assert first["evidence"][0] == {"op_type": "NonMaxSuppressionV3", "time_us": 16000, "share": 0.16,
                                    "why": "NMS on ai_cpu, 8 launches; aicpu_fallback: 1 op type on AI CPU; "
                                           "nms_cpu: NMS on AI CPU"}
    assert [s["rank"] for s in doc["suggestions"]] == [1, 2, 3]
    assert list(doc["similar_cases"][0])[:3] == ["id", "title", "similarity"]
    assert doc["similar_cases"][0]["why"][0].startswith("op mix ")


def test_markdown_lists_gain_and_cases(entries, matcher):
    result = suggest(yolo_profile(), entries, matcher=matcher, top=2, explain=True)
    text = suggest_markdown(suggestions_to_json(result))
    assert "## 1. Run NMS on the NPU" in text
    assert "- expected gain: 4.0–5.6 % (4.00–5.60 ms)" in text
    assert "your profile resembles yolov8s-migration" in text


def test_similar_case_blends_op_mix_and_defect_symptoms():
    from opprof_advisor.advice.recommend import similar_cases

    mix = ["Conv2D", "Activation", "NMS"]
    cases = [
        Entry(id="loop-case", kind="case", title="NMS loop", symptoms=["launch_bound", "no_bound"], op_mix=mix,
              evidence="D", sources=[SEED]),
        Entry(id="fallback-case", kind="case", title="NMS fallback", symptoms=["aicpu_fallback", "mte2_bound"],
              op_mix=mix, evidence="D", sources=[SEED]),
    ]
    found = similar_cases(yolo_profile(), cases)
    assert [c.id for c in found] == ["fallback-case", "loop-case"]
    # Same op mix, so the same cosine; bound classes (no_bound, mte2_bound) are left out of the overlap.
    assert found[0].mix_cosine == found[1].mix_cosine
    assert (found[0].symptom_overlap, found[1].symptom_overlap) == (pytest.approx(1 / 2), 0.0)
    assert found[0].similarity == pytest.approx(0.8 * found[0].mix_cosine + 0.2 * 0.5, abs=1e-4)


def test_an_operators_gain_applies_only_to_the_families_it_was_measured_on():
    """A figure measured on MatMul kernels is not applied to Add kernels the entry also matches."""
    measured = Gain(57, 57, "kernel_time", "operators", "https://example.org/catlass", measured_on=["MatMul"])
    entries = [Entry(id="low-parallelism", kind="pattern", title="Kernels on one or two blocks",
                     operators=["MatMul", "Elementwise"], symptoms=["low_parallelism"], gain=measured,
                     evidence="C", sources=["https://example.org/catlass"], body="Block dim 1.")]
    matcher = EntryMatcher().fit(entries)
    device = 100_000.0
    rows = [row("Add", "Elementwise", "ai_vector", 60_000, device, 600),
            row("MatMulV2", "MatMul", "ai_core", 10_000, device, 100)]
    profile = Profile("p", "torch-npu-text", device_time_us=device, op_types=rows,
                      symptoms=[Symptom("low_parallelism", ["Add", "MatMulV2"], 0.7, "block dim 1 on 24 cores")])
    (s,) = suggest(profile, entries, matcher=matcher).suggestions
    # 57 % of the 10 ms of MatMul, not of the 70 ms of MatMul and Add
    assert s.expected_gain.saved_us_high == pytest.approx(5_700.0)
    assert "MatMulV2" in s.expected_gain.basis and "Add" not in s.expected_gain.basis
    only_add = Profile("p", "torch-npu-text", device_time_us=device, op_types=rows[:1],
                       symptoms=[Symptom("low_parallelism", ["Add"], 0.6, "block dim 1 on 24 cores")])
    (s,) = suggest(only_add, entries, matcher=matcher).suggestions
    assert s.expected_gain is None  # no measured figure for vector kernels: ranked by the prior
    assert s.value_us == pytest.approx(60_000 * 0.3)


def test_an_estimate_is_never_called_observed():
    from opprof_advisor.advice.gains import gain_note
    from opprof_advisor.render.phrases import entry_gain_line

    card = Entry(id="conv2d-tuning", kind="recipe", title="Conv2D", operators=["Conv2D"], evidence="D",
                 gain=Gain(5, 10, "latency", "end_to_end", SEED, estimate=True), sources=[SEED])
    assert "unmeasured estimate" in gain_note(card) and "observed" not in gain_note(card)
    shown = entry_gain_line(card.gain.to_dict())  # `advisor show` renders the entry document's gain
    assert "unmeasured estimate" in shown and "observed" not in shown
