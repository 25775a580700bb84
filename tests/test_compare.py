"""`advisor compare` and opprof_advisor.loop.compare: per-family deltas, unit/bound changes, notes, JSON."""

from __future__ import annotations

import json

import pytest

import loop_examples
from opprof_advisor.cli.app import app
from opprof_advisor.loop.compare import (
    SCHEMA,
    compare_profiles,
    comparison_to_json,
    kernel_summary,
    profile_fingerprint,
)
from opprof_advisor.core.models import OpTypeStat, Profile
from opprof_advisor.core.units import TEXT
from opprof_advisor.core.units import TEXT as U


def make_profile(rows, *, path="p", fmt="torch-npu-text", chip=None, kernel=None, versions=None) -> Profile:
    """rows: (op_type, family, unit, time_us, bound)."""
    total = sum(row[3] for row in rows)
    stats = [
        OpTypeStat(op_type=op, family=fam, unit=unit, count=1, time_us=t, share=t / total, bound=bound)
        for op, fam, unit, t, bound in rows
    ]
    stats.sort(key=lambda s: -s.time_us)
    return Profile(path=path, format=fmt, chip=chip, device_time_us=total, compute_time_us=total,
                   op_types=stats, kernel=kernel, versions=versions or {})


DETECTOR = [
    ("Conv2D", "Conv2D", "ai_core", 6000.0, "cube"),
    ("NonMaxSuppressionV3", "NMS", "ai_cpu", 3000.0, "unknown"),
    ("Swish", "Activation", "ai_vector", 800.0, "vector"),
    ("Add", "Elementwise", "ai_vector", 200.0, "mte2"),
]
DETECTOR_NMS_ON_AI_CORE = [
    ("Conv2D", "Conv2D", "ai_core", 6000.0, "cube"),
    ("BatchMultiClassNMS", "NMS", "ai_core", 450.0, "vector"),
    ("Swish", "Activation", "ai_vector", 800.0, "vector"),
    ("Add", "Elementwise", "ai_vector", 200.0, "mte2"),
]


def test_a_profile_compared_with_itself_has_zero_deltas_and_no_notes():
    profile = make_profile(DETECTOR)
    doc = comparison_to_json(compare_profiles(profile, profile))
    assert doc["total"] == {"before_us": 10000.0, "after_us": 10000.0, "delta_pct": 0.0}
    assert [row["delta_pct"] for row in doc["op_types"]] == [0.0, 0.0, 0.0, 0.0]
    assert [row["before_us"] for row in doc["op_types"]] == [row["after_us"] for row in doc["op_types"]]
    assert doc["notes"] == []


def test_json_has_exactly_the_documented_shape():
    doc = comparison_to_json(compare_profiles(make_profile(DETECTOR), make_profile(DETECTOR_NMS_ON_AI_CORE)))
    # compare/1 grows by adding keys only: the first six are the original shape
    assert list(doc) == ["schema", "before", "after", "total", "op_types", "notes", "kernel_rows"]
    assert doc["schema"] == SCHEMA == "opprof-advisor/compare/1"
    assert set(doc["total"]) == {"before_us", "after_us", "delta_pct"}
    for row in doc["op_types"]:
        assert list(row) == ["op_type", "before_us", "after_us", "delta_pct", "unit_before", "unit_after",
                             "before_share", "after_share", "bound_before", "bound_after", "status"]
    assert {"path", "format", "device_time_us"} <= set(doc["before"])


def test_nms_moved_to_ai_core_shows_delta_unit_change_and_end_to_end_change():
    comparison = compare_profiles(make_profile(DETECTOR), make_profile(DETECTOR_NMS_ON_AI_CORE))
    doc = comparison_to_json(comparison)
    nms = next(row for row in doc["op_types"] if row["op_type"] == "NMS")
    assert nms == {"op_type": "NMS", "before_us": 3000.0, "after_us": 450.0, "delta_pct": -85.0,
                   "unit_before": "ai_cpu", "unit_after": "ai_core", "before_share": 0.3,
                   "after_share": round(450 / 7450, 6), "bound_before": "unknown", "bound_after": "vector",
                   "status": "both"}
    assert doc["total"] == {"before_us": 10000.0, "after_us": 7450.0, "delta_pct": -25.5}
    assert "NMS moved from AI CPU to AI Core: 3.00 ms -> 450 µs (-85.0 %)" in doc["notes"]
    conv = comparison.family("Conv2D")
    assert (conv.before_share, round(conv.after_share, 4)) == (0.6, round(6000 / 7450, 4))


def test_same_unit_class_is_not_a_unit_change():
    add = ("Add", "Elementwise", "ai_vector", 50.0, "vector")
    before = make_profile([("MatMulV2", "MatMul", "ai_core", 100.0, "cube"), add])
    after = make_profile([("MatMulV3", "MatMul", "mix_aic", 80.0, "cube"), add])
    comparison = compare_profiles(before, after)
    assert not comparison.family("MatMul").unit_changed
    assert not any("moved from" in note for note in comparison.notes)


def test_appeared_vanished_and_bound_changes_are_noted():
    before = make_profile([("MatMul", "MatMul", "ai_core", 500.0, "mte2"),
                           ("TransData", "TransData", "ai_core", 100.0, "mte3"),
                           ("Add", "Elementwise", "ai_vector", 100.0, "vector")])
    after = make_profile([("MatMul", "MatMul", "ai_core", 300.0, "cube"), ("Cast", "Cast", "ai_vector", 20.0, "vector"),
                          ("Add", "Elementwise", "ai_vector", 100.0, "vector")])
    comparison = compare_profiles(before, after)
    assert comparison.family("TransData").status == "vanished"
    assert comparison.family("TransData").delta_pct == -100.0
    assert comparison.family("Cast").status == "appeared"
    assert comparison.family("Cast").delta_pct is None
    assert "MatMul bound class changed: mte2 -> cube" in comparison.notes
    assert "appeared: Cast (20.0 µs, AI Vector)" in comparison.notes
    assert "vanished: TransData (100 µs, AI Core)" in comparison.notes
    doc = comparison_to_json(comparison)
    cast = next(row for row in doc["op_types"] if row["op_type"] == "Cast")
    assert (cast["before_us"], cast["delta_pct"], cast["unit_before"]) == (0.0, None, None)


def test_profiles_of_different_models_are_compared_but_flagged():
    llm = make_profile([("FlashAttentionScore", "FlashAttention", "mix_aic", 5000.0, "cube"),
                        ("MatMulV2", "MatMul", "ai_core", 4000.0, "cube"),
                        ("RmsNorm", "RMSNorm", "ai_vector", 1000.0, "vector")])
    comparison = compare_profiles(make_profile(DETECTOR), llm)
    assert comparison.notes[0].startswith("the profiles look like different workloads: only 0% of the time")
    assert comparison.total_delta_pct == 0.0  # both 10,000 us: still compared
    same = compare_profiles(make_profile(DETECTOR), make_profile(DETECTOR_NMS_ON_AI_CORE))
    assert not any("different workloads" in note for note in same.notes)


def test_chip_and_version_differences_are_noted():
    before = make_profile(DETECTOR, chip="Ascend910B3", versions={"cann": "8.0.RC3"})
    after = make_profile(DETECTOR, chip="Ascend910B1", versions={"cann": "8.2.RC1"})
    notes = compare_profiles(before, after).notes
    assert "different chips: Ascend910B3 vs Ascend910B1 — part of the delta is the hardware" in notes
    assert "different cann versions: 8.0.RC3 vs 8.2.RC1" in notes


def test_missing_pipe_ratios_give_a_cannot_judge_note():
    blind = [(op, fam, unit, t, "unknown") for op, fam, unit, t, _ in DETECTOR]
    notes = compare_profiles(make_profile(blind), make_profile(DETECTOR)).notes
    assert ("cannot judge bound-class changes: BEFORE has no pipe ratios (collect with "
            "--aic-metrics=PipeUtilization)") in notes


def _kernel(duration, block_dim, vector_times, vec_ratio, mte2_ratio):
    return {
        "kernel": "add_custom", "op_type": "vector", "task_duration_us": duration, "block_dim": block_dim,
        "mix_block_dim": None, "chip": "Ascend910B3",
        "pipe_ratio": {"aiv_vec": vec_ratio, "aiv_mte2": mte2_ratio},
        "bound": {"pipe": "aiv_mte2" if mte2_ratio > vec_ratio else "aiv_vec", "ratio": max(vec_ratio, mte2_ratio)},
        "block_time_us": {"vector": vector_times},
    }


def test_two_single_kernel_runs_are_shown_side_by_side():
    before = make_profile([("add_custom", "add_custom", "ai_vector", 120.0, "mte2")], fmt="msopprof-device",
                          kernel=_kernel(120.0, 8, [110.0, 30.0, 30.0, 30.0], 0.3, 0.85))
    after = make_profile([("add_custom", "add_custom", "ai_vector", 60.0, "vector")], fmt="msopprof-device",
                         kernel=_kernel(60.0, 40, [50.0, 50.0, 50.0, 50.0], 0.7, 0.5))
    comparison = compare_profiles(before, after)
    rows = {row.metric: (row.before, row.after) for row in comparison.kernel_rows}
    assert rows["task duration (µs)"] == (120.0, 60.0)
    assert rows["task duration change"] == (None, "-50.0 %")
    assert rows["block dim"] == (8, 40)
    assert rows["block imbalance (slowest / mean block)"] == (round(110 / 50, 3), 1.0)
    assert rows["aiv_mte2 ratio"] == (0.85, 0.5)
    assert rows["busiest pipe"] == ("aiv_mte2", "aiv_vec")
    assert "add_custom bound class changed: mte2 -> vector" in comparison.notes
    doc = comparison_to_json(comparison)
    assert doc["before"]["kernel"]["block_dim"] == 8 and doc["after"]["kernel"]["block_dim"] == 40


def test_kernel_detail_on_one_side_only_is_a_note():
    before = make_profile(DETECTOR)
    after = make_profile(DETECTOR, kernel=_kernel(60.0, 40, [50.0, 50.0], 0.7, 0.5))
    assert kernel_summary(None) is None
    notes = compare_profiles(before, after).notes
    assert any(note.startswith("cannot judge kernel detail side by side: only AFTER") for note in notes)


def test_fingerprint_ignores_the_path_but_not_the_times():
    a = make_profile(DETECTOR, path="/one")
    b = make_profile(DETECTOR, path="/two")
    c = make_profile(DETECTOR_NMS_ON_AI_CORE, path="/one")
    assert profile_fingerprint(a) == profile_fingerprint(b) != profile_fingerprint(c)
    assert len(profile_fingerprint(a)) == 16


# --------------------------------------------------------------------------------------------
# Through the CLI, on profiles written in real formats
# --------------------------------------------------------------------------------------------

@pytest.fixture
def yolo_pair(tmp_path):
    return loop_examples.write_pair(tmp_path)


def test_cli_compare_of_the_yolov8_example_with_nms_on_ai_core_in_json(runner, yolo_pair):
    before, after = yolo_pair
    result = runner.invoke(app, ["compare", str(before), str(after), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    old_specs = loop_examples.yolo_specs()
    new_specs = loop_examples.nms_on_ai_core(old_specs)
    old_total, new_total = loop_examples.total_us(old_specs), loop_examples.total_us(new_specs)
    assert doc["total"]["before_us"] == pytest.approx(old_total, abs=0.01)
    assert doc["total"]["after_us"] == pytest.approx(new_total, abs=0.01)
    assert doc["total"]["delta_pct"] == pytest.approx((new_total - old_total) / old_total * 100, abs=0.01)
    nms_old, nms_new = loop_examples.nms_before_us(), loop_examples.NMS_AFTER_US
    nms = next(row for row in doc["op_types"] if row["op_type"] == "NMS")
    assert (nms["before_us"], nms["after_us"]) == (pytest.approx(nms_old, abs=0.01), pytest.approx(nms_new, abs=0.01))
    assert nms["delta_pct"] == pytest.approx((nms_new - nms_old) / nms_old * 100, abs=0.01)
    assert (nms["unit_before"], nms["unit_after"]) == ("ai_cpu", "ai_vector")
    conv = next(row for row in doc["op_types"] if row["op_type"] == "Conv2D")
    assert conv["delta_pct"] == pytest.approx(0.0, abs=1e-6)
    assert any(note.startswith("NMS moved from AI CPU to AI Vector") for note in doc["notes"])
    assert not any("different workloads" in note for note in doc["notes"])


def test_cli_compare_table_shows_the_nms_row_and_the_total(runner, yolo_pair):
    before, after = yolo_pair
    result = runner.invoke(app, ["compare", str(before), str(after)])
    assert result.exit_code == 0, result.output
    old_specs = loop_examples.yolo_specs()
    old_total = loop_examples.total_us(old_specs)
    new_total = loop_examples.total_us(loop_examples.nms_on_ai_core(old_specs))
    change = (new_total - old_total) / old_total * 100
    assert f"device time: {TEXT.time(old_total)} -> {TEXT.time(new_total)} ({change:+.1f} %)" in result.stdout
    nms_old, nms_new = loop_examples.nms_before_us(), loop_examples.NMS_AFTER_US
    nms_line = next(line for line in result.stdout.splitlines() if line.strip().startswith("NMS"))
    assert TEXT.time(nms_old) in nms_line and TEXT.time(nms_new) in nms_line
    assert f"{(nms_new - nms_old) / nms_old * 100:+.1f} %" in nms_line
    assert "AI CPU -> AI Vector" in nms_line


def test_cli_compare_with_itself_is_all_zero(runner):
    example = loop_examples.EXAMPLE
    result = runner.invoke(app, ["compare", str(example), str(example), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["total"]["delta_pct"] == 0.0
    assert {row["delta_pct"] for row in doc["op_types"]} == {0.0}
    assert doc["notes"] == []


def test_cli_compare_names_the_unreadable_side(runner, yolo_pair, tmp_path):
    before, _ = yolo_pair
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, ["compare", str(before), str(missing)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"error: {missing}: cannot read the AFTER profile: no such file or directory — check the path"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["compare", str(empty), str(before)])
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert line.startswith(f"error: {empty}: cannot read the BEFORE profile: empty folder — ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_device_and_simulator_runs_of_one_kernel_side_by_side(runner, tmp_path):
    from opprof_advisor import testing
    kernel = {"name": "MatMulV3", "task_type": "mix", "duration_us": 180.0, "block_dim": 20, "mix_block_dim": 40,
              "pipe": {"aic_cube": 0.7, "aic_mte2": 0.4, "aiv_vec": 0.2}}
    device = testing.write_msopprof_device(tmp_path / "device", kernel, imbalance=2.0)
    # all 20 AI Cores of block dim 20 simulated: the simulated time is complete and may be compared in %
    simulated = testing.write_msopprof_simulator(tmp_path / "sim", {**kernel, "duration_us": 150.0}, cores=20)
    result = runner.invoke(app, ["compare", str(device), str(simulated), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["before"]["kernel"]["mode"], doc["after"]["kernel"]["mode"]) == ("device", "simulator")
    assert doc["before"]["kernel"]["task_duration_us"] == pytest.approx(180.0, abs=0.01)
    assert doc["before"]["kernel"]["block_dim"] == 20
    # one kernel: the simulator's unnamed row is compared with the device row, not flagged as another model
    [row] = doc["op_types"]
    assert (row["op_type"], row["before_us"], row["after_us"]) == ("MatMul", pytest.approx(180.0, abs=0.01),
                                                                 pytest.approx(150.0, abs=0.01))
    assert not any("different workloads" in note for note in doc["notes"])
    assert any(note.startswith("device vs simulator: the simulated time is the span") for note in doc["notes"])
    table = runner.invoke(app, ["compare", str(device), str(simulated)])
    assert table.exit_code == 0, table.output
    mode_line = next(line for line in table.stdout.splitlines() if line.strip().startswith("mode"))
    assert mode_line.replace("│", " ").split() == ["mode", "device", "simulator"]
    assert any(line.split()[:3] == ["task", "duration", "(µs)"] and "180.000" in line
               for line in table.stdout.splitlines())
    assert any(line.split()[:3] == ["task", "duration", "change"] and f"{(150 - 180) / 180 * 100:+.1f} %" in line
               for line in table.stdout.splitlines())


def test_device_vs_an_incomplete_simulation_gives_no_percentage(runner, real_profiles):
    device = real_profiles / "catlass-msprof-op" / "device" / "02_fp32_cm_gemv_aiv"
    simulated = real_profiles / "catlass-msprof-op" / "simulator" / "01_fp16_cm_gemv_aiv"
    result = runner.invoke(app, ["compare", str(device), str(simulated), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["before"]["kernel"]["task_duration_us"] == pytest.approx(_task_duration(device), abs=1e-3)
    sim_us = doc["after"]["device_time_us"]
    # core0's summary log: the longest sub-core ran tens of thousands of ticks (> 30 us at any clock <= 2 GHz)
    log = next(simulated.rglob("core0_summary_log")).read_text()
    ticks = max(int(line.split(":")[1]) for line in log.splitlines() if line.startswith("kernal total ticks"))
    assert sim_us >= ticks / 2000
    assert doc["total"]["delta_pct"] is None and [row["delta_pct"] for row in doc["op_types"]] == [None]
    [note] = [n for n in doc["notes"] if n.startswith("cannot judge the speed-up")]
    assert f"the simulated kernel time of AFTER ({U.time(sim_us)}) is a lower bound" in note
    assert note.endswith("no percentage change is given")
    table = runner.invoke(app, ["compare", str(device), str(simulated)])
    assert table.exit_code == 0, table.output
    assert f"device time: {TEXT.time(_task_duration(device))} -> {TEXT.time(sim_us)} (-)" in table.stdout
    assert "%" not in table.stdout.split("kernel (msOpProf)")[1].split("note:")[0]  # no 'task duration change' row


def _task_duration(opprof_dir) -> float:
    """Task Duration(us) of a real OpBasicInfo.csv, read independently of the readers."""
    import csv

    [csv_path] = list(opprof_dir.rglob("OpBasicInfo*.csv"))
    with open(csv_path, newline="") as handle:
        [row] = list(csv.DictReader(handle))
    return float(row["Task Duration(us)"])


def test_two_real_catlass_kernels_side_by_side(runner, real_profiles):
    device = real_profiles / "catlass-msprof-op" / "device"
    before, after = device / "02_fp32_rm_gemv_aiv", device / "02_fp32_cm_gemv_aiv"
    result = runner.invoke(app, ["compare", str(before), str(after), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    old, new = _task_duration(before), _task_duration(after)
    assert doc["before"]["kernel"]["task_duration_us"] == pytest.approx(old, abs=1e-3)
    assert doc["after"]["kernel"]["task_duration_us"] == pytest.approx(new, abs=1e-3)
    assert doc["total"]["delta_pct"] == pytest.approx((new - old) / old * 100, abs=1e-3)
    assert (doc["before"]["kernel"]["kernel"], doc["after"]["kernel"]["kernel"]) == ("FP32RMGemvAiv", "FP32CMGemvAiv")
    assert "the two msOpProf runs profiled different kernels (FP32RMGemvAiv vs FP32CMGemvAiv)" in doc["notes"]
    assert not any("different workloads" in note for note in doc["notes"])


def test_a_level0_profile_without_units_is_not_a_unit_change():
    blind = [(op, fam, "unknown", t, "unknown") for op, fam, _, t, _ in DETECTOR]
    notes = compare_profiles(make_profile(blind), make_profile(DETECTOR)).notes
    assert not any("moved from" in note for note in notes)
    assert ("cannot judge unit changes: BEFORE has no unit column (level0 profile; collect with "
            "profiler_level=Level1)") in notes


def test_cli_compare_writes_the_html_report(runner, yolo_pair, tmp_path):
    before, after = yolo_pair
    out = tmp_path / "compare.html"
    result = runner.invoke(app, ["compare", str(before), str(after), "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"wrote {out.absolute()}"
    page = out.read_text(encoding="utf-8")
    assert "NMS" in page and "NMS moved from AI CPU to AI Vector" in page
    misuse = runner.invoke(app, ["compare", str(before), str(after), "--output", str(out)])
    assert misuse.exit_code == 2


def test_no_outcome_is_recorded_from_an_incomplete_simulation(runner, real_profiles):
    device = real_profiles / "catlass-msprof-op" / "device" / "02_fp32_cm_gemv_aiv"
    simulated = real_profiles / "catlass-msprof-op" / "simulator" / "01_fp16_cm_gemv_aiv"
    result = runner.invoke(app, ["compare", str(device), str(simulated), "--applied", "per-block-imbalance"])
    assert result.exit_code == 1
    assert result.stderr == ("error: no outcome of per-block-imbalance recorded: the comparison gives no percentage "
                             "change (a simulated kernel time is incomplete) — record outcomes from two device "
                             "profiles (msprof op, msprof or torch_npu)\n")
    listed = runner.invoke(app, ["outcomes", "list", "--format", "json"])
    assert json.loads(listed.stdout)["entries"] == []
