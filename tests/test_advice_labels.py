"""`advisor suggest` against the labels of every real profile and bundled example: #1, the gain range of #1,
remedies that cannot apply, repeats, contradictions and gains above their bound (../shared/ADVICE.md §4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opprof_advisor.advice.suggest import advise
from opprof_advisor.advice.advisor import open_advisor
from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.profiles import read_profile
from opprof_advisor.advice.real_bench import check_rows, load_labels

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


def test_an_eager_vllm_serving_rank_idle_between_short_kernels_gets_graph_capture_first(tmp_path, advisor):
    # the LLM serving rank: the device idle ~92 % between ~10 µs kernels; graph capture leads, not OS tuning
    from opprof_advisor.testing import KernelSpec, write_torch_npu_text

    eager = dict(wait_us=110, op_state="dynamic", input_dtypes="DT_BF16")
    path = write_torch_npu_text(tmp_path, [
        KernelSpec("ReshapeAndCache", task_type="AI_VECTOR_CORE", duration_us=8, count=28, block_dim=40, **eager),
        KernelSpec("PagedAttention", task_type="MIX_AIC", duration_us=12, count=28, block_dim=20, **eager),
        KernelSpec("MatMulV2", task_type="AI_CORE", duration_us=11, count=112, block_dim=20, **eager),
        KernelSpec("RmsNorm", task_type="AI_VECTOR_CORE", duration_us=5, count=56, block_dim=40, **eager),
    ], level="Level1")
    doc = advise(read_profile(path), advisor.entries, matcher=advisor.matcher)
    context, first = doc["context"], doc["suggestions"][0]
    assert (context["framework"], context["phase"], context["mode"]) == ("vllm-ascend", "serving", "eager")
    assert first["id"] == "idle-launch" and first["remedies"][0]["id"] == "vllm-ascend-graph-mode"
    free = sum(s.free_us for s in read_profile(path).steps)
    assert first["expected_gain"]["low_us"] == pytest.approx(0.3 * free, rel=1e-3)
    assert first["expected_gain"]["high_us"] == pytest.approx(0.8 * free, rel=1e-3)
    assert [s["id"] for s in doc["suggestions"]].count("idle-launch") == 1  # one row for the one diagnosis


def test_a_mix_kernel_on_one_block_of_an_unknown_chip_names_the_idle_cores(tmp_path, advisor):
    # a Mix Block Dim only exists on parts with 20 or 24 AI Cores: one block leaves 95-96 % of them idle
    from opprof_advisor.testing import KernelSpec, write_msopprof_device

    path = write_msopprof_device(tmp_path, KernelSpec("MyKernel", task_type="mix", duration_us=454.0, block_dim=1,
                                                      mix_block_dim=2, pipe={"aiv_vec": 0.3, "aiv_scalar": 0.5}),
                                 chip="Ascend910_9999")
    doc = advise(read_profile(path), advisor.entries, matcher=advisor.matcher)
    titles = [s["title"] for s in doc["suggestions"]]
    tail = next(s for s in doc["suggestions"] if s["id"].startswith("tail-"))
    assert "Block Dim 1 of MyKernel leaves 95.0 %–95.8 % of the cores idle" in tail["title"], titles
    assert tail["expected_gain"]["high_us"] == pytest.approx(454.0 * 23 / 24, rel=1e-3)
