"""MindSpore 1.x per-op summaries (FORMATS.md §11.2), found by their headers, totalled as the spec says."""

from __future__ import annotations

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.profiles import read_profile

CONV = "Default/network-WithLossCell/_backbone-ResNet/conv1-Conv2d/Conv2D-op1"
CAST = "Default/network-WithLossCell/_backbone-ResNet/Cast-op7"


def _write(folder, name, lines):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_1x_profiler_folder_totals_time_times_frequency_per_op_type(tmp_path):
    profiler = tmp_path / "profiler"
    _write(profiler, "aicore_intermediate_0_detail.csv",
           ["full_op_name,execution_time,execution_frequency", f"{CONV},0.5,10", f"{CAST},0.3267,20"])
    _write(profiler, "framework_raw_0.csv", ["task_id,stream_id,block_dim,full_op_name,op_name,op_type,subgraph,op_info",
                                             f"1,1,32,{CONV},Conv2D-op1,Conv2D,Default,{{}}",
                                             f"2,1,8,{CAST},Cast-op7,Cast,Default,{{}}"])
    _write(profiler, "aicpu_intermediate_0.csv", ["serial_number,op_type,total_time,dispatch_time,execution_time,"
                                                  "run_start,run_end", "1,TopK,2.0,0.5,1.5,0,0"])
    profile = read_profile(tmp_path)
    assert (profile.format, profile.producer) == ("mindspore-text", "mindspore")
    rows = {(r.op_type, r.unit): (r.count, r.time_us) for r in profile.op_types}
    assert rows[("Conv2D", "ai_core")] == (10, pytest.approx(5000.0))
    assert rows[("Cast", "ai_core")] == (20, pytest.approx(6534.0))
    assert rows[("TopK", "ai_cpu")] == (1, pytest.approx(1500.0))
    assert profile.device_time_us == pytest.approx(13034.0)
    assert "aicpu_fallback" in profile.symptom_ids()  # TopK on the AI CPU: 11.5 % of compute time
    assert any(n.startswith("MindSpore 1.x per-op summaries") for n in profile.notes)


def test_the_two_column_table_is_per_step_and_names_give_types_without_framework_raw(tmp_path):
    _write(tmp_path, "resnet_ops.csv", ["full_op_name,execution_time", f"{CONV},1.25"])  # renamed: found by header
    profile = read_profile(tmp_path)
    assert [(r.op_type, r.count, r.time_us) for r in profile.op_types] == [("Conv2D", 1, pytest.approx(1250.0))]
    assert any("(per step: the two-column 1.0-1.2 table)" in n for n in profile.notes)
    assert "framework_raw_<id>.csv is missing: op types are taken from the op names" in profile.notes


def test_a_broken_row_is_one_line_naming_file_and_line(tmp_path, runner):
    _write(tmp_path / "profiler", "aicore_intermediate_0_detail.csv",
           ["full_op_name,execution_time,execution_frequency", f"{CONV},0.5,10", f"{CAST},fast,20"])
    result = runner.invoke(app, ["profile", str(tmp_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert f"{tmp_path / 'profiler' / 'aicore_intermediate_0_detail.csv'}:3" in line


STEP_HEADER = "step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,fp_and_bp,tail"


def test_the_1x_step_trace_gives_the_steps_free_time_before_each_forward_pass(tmp_path):
    # units of 10 ns (MindSpore's step_trace_parser.py); the last row is the average, step "-"
    profiler = tmp_path / "profiler"
    _write(profiler, "aicore_intermediate_0_detail.csv",
           ["full_op_name,execution_time,execution_frequency", f"{CONV},0.5,10"])
    _write(profiler, "step_trace_raw_0_detail_time.csv", [
        STEP_HEADER + ",stream_5_0,stream_5_0_start_point,stream_5_0_end_point",
        "1,0,1000000,1000000,400000,900000,400000,500000,100000,50000,900000,950000",
        "2,1000000,2000000,1000000,1400000,1900000,400000,500000,100000,50000,1900000,1950000",
        "-,500000,1500000,1000000,900000,1400000,400000,500000,100000,50000,1400000,1450000"])
    profile = read_profile(tmp_path)
    assert [(s.step, s.computing_us, s.free_us, s.stage_us) for s in profile.steps] == [
        ("1", 6000.0, 4000.0, 10000.0), ("2", 6000.0, 4000.0, 10000.0)]
    host = next(s for s in profile.symptoms if s.id == "host_bound")  # 8 ms of 20 ms idle before forward passes
    assert host.share == pytest.approx(0.4) and host.base == "step"
    assert any("and the steps (step_trace_raw" in n for n in profile.notes)


def test_an_inference_step_trace_counts_the_forward_time(tmp_path):
    _write(tmp_path, "aicore_intermediate_0_detail.csv", ["full_op_name,execution_time,execution_frequency",
                                                          f"{CONV},0.5,10"])
    _write(tmp_path, "renamed_steps.csv", ["step_num,start_point,end_point,total,fp_point,iteration_interval,fp",
                                           "1,0,100000,100000,10000,10000,90000"])
    profile = read_profile(tmp_path)
    assert [(s.computing_us, s.free_us, s.stage_us) for s in profile.steps] == [(900.0, 100.0, 1000.0)]


def test_a_broken_step_row_names_its_line(tmp_path, runner):
    _write(tmp_path, "aicore_intermediate_0_detail.csv", ["full_op_name,execution_time,execution_frequency",
                                                          f"{CONV},0.5,10"])
    _write(tmp_path, "step_trace_raw_0_detail_time.csv", [STEP_HEADER, "1,0,10,10,2,8,2,six,2"])
    result = runner.invoke(app, ["profile", str(tmp_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{tmp_path / 'step_trace_raw_0_detail_time.csv'}:2" in result.stderr
