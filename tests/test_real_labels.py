"""Every real profile under ../shared/real-profiles against its labels (data/real_bench/labels.yaml):
the facts we summed by hand, and the advice topics its top three must and must not hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from opprof_advisor.core import steps
from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.advice.matcher import fit_matcher
from opprof_advisor.core.paths import real_labels_path
from opprof_advisor.profiles import read_profile
from opprof_advisor.advice.real_bench import evaluate_label, load_labels

TOPICS, LABELS = load_labels(real_labels_path())
FACTS = [label for label in LABELS if label.facts or label.error]
#: Relative tolerance of the step split against the hand sums (floats of µs timestamps near 1.7e15).
STEP_TOLERANCE = 0.01


@pytest.fixture(scope="module")
def kb():
    from opprof_advisor.kb import load_entries
    from opprof_advisor.core.paths import builtin_kb_dir

    entries = load_entries([builtin_kb_dir()])
    return entries, fit_matcher(entries)


def _path(real_profiles: Path, label) -> Path:
    path = real_profiles / label.path
    if not path.exists():
        pytest.skip(f"{label.path} is not in this copy of real-profiles")
    return path


@pytest.mark.parametrize("label", FACTS, ids=[label.path for label in FACTS])
def test_profile_facts_match_the_hand_sums(real_profiles, label):
    path = _path(real_profiles, label)
    if label.error:
        with pytest.raises(AdvisorError) as caught:
            read_profile(path)
        assert label.error in str(caught.value)
        return
    facts = label.facts
    profile = read_profile(path)
    assert profile.format == facts["format"]
    if "device_time_us" in facts:
        assert profile.device_time_us == pytest.approx(facts["device_time_us"], abs=1e-2)
    if "steps" in facts:
        total = steps.total(profile.steps)
        assert total is not None, "no step split"
        expected = dict(facts["steps"])
        if "source" in expected:
            assert profile.step_source == expected.pop("source")
        for field, value in expected.items():
            assert getattr(total, field) == pytest.approx(value, rel=STEP_TOLERANCE, abs=1.0), field
    if "top_op" in facts:
        top = profile.op_types[0]
        for key, value in facts["top_op"].items():
            got = getattr(top, key)
            assert (got == pytest.approx(value, abs=1e-4)) if key == "share" else got == value, key
    for hot in facts.get("hot", []):
        rows = [r for r in profile.op_types if all(getattr(r, k) == v for k, v in hot.items()
                                                   if k in ("op_type", "unit"))]
        assert rows, f"no row {hot}"
        for key in ("bound", "busiest_pipe"):
            if key in hot:
                assert getattr(rows[0], key) == hot[key], (rows[0].op_type, key)
    for key, value in (facts.get("device") or {}).items():
        assert profile.device.get(key) == value, key
    found = profile.symptom_ids()
    assert set(facts.get("symptoms_must", [])) <= found
    assert not set(facts.get("symptoms_must_not", [])) & found
    for text in facts.get("notes_must", []):
        assert any(text in note for note in profile.notes), text


@pytest.mark.parametrize("label", [label for label in LABELS if label.facts], ids=lambda label: label.path)
def test_every_op_type_has_a_bound_class_or_says_why(real_profiles, label):
    profile = read_profile(_path(real_profiles, label))
    for row in profile.op_types:
        if row.bound == "unknown" and row.unit != "communication":
            assert row.bound_why, row.op_type  # the row says why (profile --format json: bound_why)
            # and a note says it in the table's words: the reason, or the missing pipe columns
            assert any(row.bound_why in note or note.startswith("cannot judge bound class") for note in profile.notes), \
                row.op_type


@pytest.mark.parametrize("label", LABELS, ids=[label.path for label in LABELS])
def test_advice_has_the_labelled_topics_in_its_top_three(real_profiles, kb, label):
    _path(real_profiles, label)
    entries, matcher = kb
    result = evaluate_label(label, real_profiles, TOPICS, entries, matcher)
    assert result.error is None, result.error
    assert result.missing == [], (result.top_ids, result.top_topics)
    assert result.forbidden == [], (result.top_ids, result.top_topics)
    assert result.first_ok, (label.advice.get("first"), result.top_ids[:1], result.top_topics[:1])


def test_the_labels_cover_every_real_profile_folder(real_profiles):
    labelled = {label.path for label in LABELS}
    # every folder that holds profiler output, one or two levels below each source
    expected = {
        "catlass-msprof-op/device/02_fp32_cm_gemv_aiv", "catlass-msprof-op/device/02_fp32_rm_gemv_aiv",
        "catlass-msprof-op/simulator/01_fp16_cm_gemv_aiv", "msprof-analyze-ut/cluster_8rank",
        "msprof-analyze-ut/pt_llm_pmu_2025_ascend_pt", "msprof-analyze-ut/pt_timeline_2024_ascend_pt",
        "msprof-analyze-ut/pt_train_2023_ascend_pt", "msprof-ut-devinfo",
        "msinsight-torch-npu/text/level0/rank0_ascend_pt", "msinsight-torch-npu/text/level1/rank0_ascend_pt",
        "msinsight-torch-npu/text/level2/rank0_ascend_pt", "msinsight-torch-npu/db/level1/rank0_ascend_pt",
        "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt", "msinsight-torch-npu/server-ut/test_rank_0",
        "msinsight-torch-npu/server-ut/full_db",
    }
    present = {p for p in expected if (real_profiles / p).exists()}
    assert present <= labelled
