"""Light exports (FORMATS.md §12): op_statistic / step_trace_time without kernel_details, found by their headers.

The real files come from ../shared/real-profiles (read in place, or copied into a temporary folder to make the
light layouts users have); every total is checked against a sum taken with the csv module.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.profiles import load_profile
from opprof_advisor.readers import detect_format

RANK = "msinsight-torch-npu/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def light(tmp_path, real_profiles) -> Path:
    """A torch_npu folder that kept only op_statistic.csv and step_trace_time.csv."""
    out = tmp_path / "run_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    for name in ("op_statistic.csv", "step_trace_time.csv"):
        shutil.copy(real_profiles / RANK / name, out / name)
    return tmp_path / "run_ascend_pt"


def test_a_light_torch_npu_folder_gives_its_op_types_and_step_split(light, real_profiles):
    statistic = _rows(real_profiles / RANK / "op_statistic.csv")
    trace = _rows(real_profiles / RANK / "step_trace_time.csv")
    raw, profile = load_profile(light)
    assert detect_format(light).name == "light-export" and profile.format == "torch-npu-text"
    compute = sum(float(row["Total Time(us)"]) for row in statistic)
    communication = sum(float(row["Communication"]) for row in trace)
    assert profile.compute_time_us == pytest.approx(compute, rel=1e-9)
    # op_statistic lists no collectives: their time is the step table's, as in the full export's device time
    assert profile.communication_time_us == pytest.approx(communication, rel=1e-9)
    top = profile.op_types[0]
    best = max(statistic, key=lambda row: float(row["Total Time(us)"]))
    assert (top.op_type, top.count) == (best["OP Type"], int(best["Count"]))
    assert top.share == pytest.approx(float(best["Total Time(us)"]) / (compute + communication), abs=1e-6)
    assert profile.workload == "training"  # Conv2DBackpropFilter ran
    assert {"communication_exposed", "host_bound", "transdata_overhead"} <= set(profile.symptom_ids())
    assert any(note.startswith("a light export (op_statistic.csv, step_trace_time.csv): op types and the step "
                               "split are judged") for note in profile.notes)
    # what the light export cannot have is said once, not as a Level1 / PipeUtilization switch to flip
    assert not any("aic_metrics" in note or "profiler_level=Level1)" in note for note in profile.notes)


def test_the_full_export_and_its_light_part_agree_on_the_step_and_the_op_types(light, real_profiles):
    full = load_profile(real_profiles / RANK)[1]
    part = load_profile(light)[1]
    assert part.steps == full.steps
    full_ops = {(r.op_type, r.count): r.time_us for r in full.op_types if r.unit != "communication"}
    part_ops = {(r.op_type, r.count): r.time_us for r in part.op_types}
    assert part_ops.keys() == full_ops.keys()
    assert all(part_ops[key] == pytest.approx(full_ops[key], abs=0.01) for key in part_ops)


def test_an_op_statistic_table_saved_as_op_summary_is_read_by_its_header(tmp_path, real_profiles):
    renamed = tmp_path / "op_summary.csv"
    shutil.copy(real_profiles / RANK / "op_statistic.csv", renamed)
    for path in (renamed, tmp_path):
        raw, profile = load_profile(path)
        assert profile.op_types and profile.op_types[0].op_type == "ForeachAddList"
        assert "op_summary.csv was read as an op_statistic table (its header says so): op types with counts and " \
               "total times, no launches" in profile.notes
        assert any("no step_trace_time.csv" in note for note in profile.notes)


def test_a_renamed_step_table_alone_still_gives_the_step_split(tmp_path, real_profiles):
    shutil.copy(real_profiles / RANK / "step_trace_time.csv", tmp_path / "steps-rank0.csv")
    profile = load_profile(tmp_path)[1]
    assert profile.steps and profile.steps[0].free_us == pytest.approx(25744.05, rel=1e-9)
    assert "host_bound" in profile.symptom_ids()


def test_a_broken_op_statistic_row_is_one_line_naming_file_and_line(tmp_path, runner, real_profiles):
    lines = (real_profiles / RANK / "op_statistic.csv").read_text(encoding="utf-8").splitlines()
    lines[3] = "Mul,AI_VECTOR_CORE,many,12.0,1,1,1,1"
    (tmp_path / "op_statistic.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["profile", str(tmp_path / "op_statistic.csv")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert f"{tmp_path / 'op_statistic.csv'}:4" in line and "row without an op type, a count or a total time" in line


def test_a_statistic_saved_as_kernel_details_and_a_prof_tree_of_one_statistic_are_light(tmp_path, real_profiles):
    statistic = real_profiles / RANK / "op_statistic.csv"
    out = tmp_path / "c_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copy(statistic, out / "kernel_details.csv")
    prof = tmp_path / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP" / "mindstudio_profiler_output"
    prof.mkdir(parents=True)
    shutil.copy(statistic, prof / "op_statistic_20250101000000.csv")
    compute = sum(float(row["Total Time(us)"]) for row in _rows(statistic))
    for path in (tmp_path / "c_ascend_pt", prof.parent):
        profile = load_profile(path)[1]
        assert profile.compute_time_us == pytest.approx(compute, rel=1e-9), path


def test_a_folder_of_light_ranks_gives_each_rank_its_device_time(tmp_path, real_profiles):
    for rank in (0, 1):
        out = tmp_path / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        for name in ("op_statistic.csv", "step_trace_time.csv"):
            shutil.copy(real_profiles / RANK / name, out / name)
    single = load_profile(tmp_path / "rank0_ascend_pt")[1]
    job = load_profile(tmp_path)[1]
    assert [r.device_time_us for r in job.ranks] == [pytest.approx(single.device_time_us)] * 2
    assert job.device_time_us == pytest.approx(2 * single.device_time_us)
