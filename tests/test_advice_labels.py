"""`advisor suggest` against the labels of every real profile and bundled example: #1, the gain range of #1,
remedies that cannot apply, repeats, contradictions and gains above their bound (../shared/ADVICE.md §4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opprof_advisor.advice.suggest import advise
from opprof_advisor.advisor import open_advisor
from opprof_advisor.errors import AdvisorError
from opprof_advisor.profiles import read_profile
from opprof_advisor.real_bench import check_rows, load_labels

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real-profiles"
SETS = [(ROOT / "data/real_bench/labels.yaml", REAL), (ROOT / "data/real_bench/examples.yaml", ROOT / "data/examples")]
CASES = [(labels, root, label) for labels, root in SETS for label in load_labels(labels)[1]
         if label.error is None]


@pytest.fixture(scope="module")
def advisor(tmp_path_factory):
    return open_advisor(tmp_path_factory.mktemp("kb") / "advisor.db", outcomes=False)


@pytest.mark.parametrize("labels,root,label", CASES, ids=[c[2].path for c in CASES])
def test_advice_meets_its_label(labels, root, label, advisor):
    if not (root / label.path).exists():
        pytest.skip(f"{root / label.path} is not here")
    topics, _ = load_labels(labels)
    doc = advise(read_profile(root / label.path), advisor.entries, matcher=advisor.matcher, top=5)
    rows = doc["suggestions"]
    first = label.advice.get("first")
    if first:
        assert rows and topics[first].holds(rows[0]), (label.path, [r["id"] for r in rows])
    for topic in label.advice.get("top3") or []:
        assert any(topics[topic].holds(r) for r in rows[:3]), (label.path, topic, [r["id"] for r in rows])
    for topic in label.advice.get("never") or []:
        assert not any(topics[topic].holds(r) for r in rows[:3]), (label.path, topic, [r["id"] for r in rows])
    checks = check_rows(rows, label.advice, {e.id: e for e in advisor.entries})
    assert checks["wrong_remedies"] == [], label.path
    assert checks["repeats"] == 0 and checks["contradictions"] == [] and checks["above_bound"] == [], checks
    if label.advice.get("gain_pct"):
        low, high = label.advice["gain_pct"]
        gain = rows[0]["expected_gain"]
        assert gain is not None and gain["low_pct"] <= high and gain["high_pct"] >= low, (label.path, gain)
        assert gain["model"] in ("model", "sourced", "measured") and gain["assumptions"]
    for row in rows:  # every gain within what the row covers, in % of the same reference
        if row["expected_gain"]:
            assert 0 <= row["expected_gain"]["low_us"] <= row["expected_gain"]["high_us"] <= row["stake_us"] + 1e-6


def test_yolo_example_first_row_is_nms_with_a_modelled_gain(advisor):
    doc = advise(read_profile(ROOT / "data/examples/yolov8_torch_npu"), advisor.entries, matcher=advisor.matcher)
    first = doc["suggestions"][0]
    assert first["id"] == "aicpu-nms"
    assert first["remedies"][0]["id"] == "nms-on-npu"
    # NMS holds 1.15 ms of a 5.25 ms step; an NPU kernel saves 50-90 % of it
    assert first["expected_gain"]["low_us"] == pytest.approx(575.0)
    assert first["expected_gain"]["high_us"] == pytest.approx(1035.0)
    assert all(s["expected_gain"] for s in doc["suggestions"])
    assert doc["context"]["families"] == ["detection", "cnn"]
    listed = {r["id"] for s in doc["suggestions"] for r in s["remedies"]}
    assert not listed & {"vllm-ascend-graph-mode", "torchair-reduce-overhead", "flash-attention"}


def test_kernel_at_its_roof_gets_no_tiling_advice(advisor):
    doc = advise(read_profile(ROOT / "data/examples/matmul_msopprof"), advisor.entries, matcher=advisor.matcher)
    rows = doc["suggestions"]
    assert [r["id"] for r in rows] == ["limit-mte2_bound"]
    assert rows[0]["expected_gain"] is None and rows[0]["measure"]
    assert not {"matmul-tiling", "block-dim-core-multiple", "per-block-imbalance"} & {
        r["id"] for r in rows[0]["remedies"]}
    assert "nothing else above 3 %" in doc["rest"]


def test_top_is_a_maximum_and_the_rest_is_summed_up(advisor):
    profile = read_profile(ROOT / "data/examples/system_msprof")
    one = advise(profile, advisor.entries, matcher=advisor.matcher, top=1)
    assert len(one["suggestions"]) == 1 and "raise --top" in one["rest"]


def test_a_remedy_outside_its_workload_is_left_out_with_why(advisor):
    doc = advise(read_profile(ROOT / "data/examples/yolov8_torch_npu"), advisor.entries, matcher=advisor.matcher,
                 explain=True)
    why = {item["id"]: str(item["why"]) for item in doc["left_out"]}
    assert "torchair-reduce-overhead" in why and "family" in why["torchair-reduce-overhead"]
