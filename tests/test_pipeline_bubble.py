"""step_trace_time's Bubble (FORMATS.md §4.4): the pipeline-parallel receive wait is named inside exposed communication."""

from __future__ import annotations

from profile_fixtures import kernel, write_ascend_pt

from opprof_advisor.profiles import read_profile

SPLIT = {"Computing": 400.0, "Communication(Not Overlapped)": 500.0, "Overlapped": 0.0, "Communication": 500.0,
         "Free": 100.0, "Stage": 1000.0}


def _exposed(tmp_path, bubble):
    split = {**SPLIT, **({"Bubble": bubble} if bubble is not None else {})}
    folder = write_ascend_pt(tmp_path, [kernel("MatMulV2", "MatMulV2", "AI_CORE", 400.0),
                                        kernel("hcom_send__1", "N/A", "HCCL", 500.0, start=400.0)], step_trace=split)
    return next(s for s in read_profile(folder).symptoms if s.id == "communication_exposed")


def test_the_bubble_is_named_as_the_pipeline_s_and_not_the_collectives(tmp_path):
    exposed = _exposed(tmp_path, 300.0)
    assert exposed.time_us == 500.0
    assert ("300 µs of it (30.0% of the step) is the pipeline bubble: stages waiting to receive from their "
            "neighbours") in exposed.detail


def test_without_a_bubble_nothing_is_said_of_pipelines(tmp_path):
    assert "pipeline bubble" not in _exposed(tmp_path, 0.0).detail
    assert "pipeline bubble" not in _exposed(tmp_path / "none", None).detail
