"""The facts an Ascend engineer checks first: the step split, free time, small kernels, set-up, recompilation,
per-block balance on the working side, and where the data comes from."""

from __future__ import annotations

import shutil

import pytest

from opprof_advisor.core import steps
from opprof_advisor.core.models import StepSplit
from opprof_advisor.profiles import build_profile
from opprof_advisor.readers import read_raw
from opprof_advisor.profiles import read_profile
from opprof_advisor.readers.base import KernelTable, RawProfile
from opprof_advisor.testing import KernelSpec, write_msopprof_device, write_op_summary

LEVEL1_TEXT = "msinsight-torch-npu/text/level1/rank0_ascend_pt"
LEVEL1_DB = "msinsight-torch-npu/db/level1/rank0_ascend_pt"


# ----------------------------------------------------------------------------------------------
# The step split from intervals
# ----------------------------------------------------------------------------------------------


def test_split_from_intervals_by_hand():
    # compute 0-10 and 20-30; communication 5-25: 5-10 and 20-25 overlap, 10-20 is exposed; idle 30-40 is
    # not in the window (it ends with the last task), so free is 0 and the stage is 30 us.
    split, = steps.from_intervals([0.0, 20.0, 5.0], [10.0, 10.0, 20.0], [False, False, True])
    assert (split.computing_us, split.communication_us, split.exposed_us, split.overlapped_us) == (20.0, 20.0, 10.0, 10.0)
    assert (split.free_us, split.stage_us, split.largest_gap_us) == (0.0, 30.0, 0.0)
    gap, = steps.from_intervals([0.0, 50.0], [10.0, 10.0], [False, False])
    assert (gap.computing_us, gap.free_us, gap.stage_us, gap.largest_gap_us) == (20.0, 40.0, 60.0, 40.0)


def test_split_per_step_from_step_ids_and_from_windows():
    by_id = steps.from_intervals([0.0, 5.0, 100.0], [5.0, 5.0, 1.0], [False] * 3, steps=["2", "2", "3"])
    assert [(s.step, s.computing_us) for s in by_id] == [("2", 10.0), ("3", 1.0)]
    by_window = steps.from_intervals([0.0, 5.0, 100.0], [5.0, 5.0, 1.0], [False] * 3,
                                     windows=[("7", -1.0, 50.0), ("8", 50.0, 200.0)])
    assert [(s.step, s.computing_us) for s in by_window] == [("7", 10.0), ("8", 1.0)]


def test_intervals_reproduce_the_producers_own_step_tables(real_profiles):
    # The real level1 run has both: its kernel intervals give torch_npu's step_trace_time.csv to the
    # float resolution of its µs timestamps (0.25 us at 1.7e15), and the DB export's OVERLAP_ANALYSIS too.
    for folder in (LEVEL1_TEXT, LEVEL1_DB):
        raw = read_raw(real_profiles / folder)
        produced = steps.total(raw.extra["steps"])
        table = raw.kernels
        comm = [t in ("HCCL", "COMMUNICATION") for t in table.task_type]
        computed = steps.total(steps.from_intervals(table.start_us, table.duration_us, comm))
        for field in ("computing_us", "exposed_us", "free_us", "stage_us"):
            assert getattr(computed, field) == pytest.approx(getattr(produced, field), rel=1e-3), (folder, field)


def test_text_and_db_exports_give_their_own_step_table_within_3_percent(real_profiles):
    import csv
    import sqlite3

    text = read_profile(real_profiles / LEVEL1_TEXT)
    with (real_profiles / LEVEL1_TEXT / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").open(newline="") as f:
        row = next(csv.DictReader(f))
    split = steps.total(text.steps)
    assert split.computing_us == pytest.approx(float(row["Computing"]), rel=0.03)
    assert split.exposed_us == pytest.approx(float(row["Communication(Not Overlapped)"]), rel=0.03)
    assert split.free_us == pytest.approx(float(row["Free"]), rel=0.03)
    db = read_profile(real_profiles / LEVEL1_DB)
    con = sqlite3.connect(real_profiles / LEVEL1_DB / "ASCEND_PROFILER_OUTPUT" / "analysis.db")
    computing, exposed, free, stage = con.execute(
        "SELECT computing, communication_not_overlapped, free, stage FROM StepTraceTime").fetchone()
    con.close()
    split = steps.total(db.steps)
    assert db.step_source == "OVERLAP_ANALYSIS"
    assert (split.computing_us, split.exposed_us, split.free_us) == pytest.approx((computing, exposed, free), rel=0.03)
    assert split.stage_us == pytest.approx(stage, rel=0.03)
    # both exports reach the same verdicts
    for profile in (text, db):
        assert {"communication_exposed", "communication_wait", "host_bound"} <= profile.symptom_ids()


def test_op_summary_without_a_step_table_gets_its_split_from_task_intervals(tmp_path):
    prof = write_op_summary(tmp_path, [KernelSpec("MatMulV2", task_type="AI_CORE", duration_us=100.0, count=10,
                                                  block_dim=24, wait_us=60.0),
                                       KernelSpec("hcom_allReduce__1", op_type="hcom_allReduce_",
                                                  task_type="COMMUNICATION", duration_us=300.0, count=2, wait_us=0.0)])
    profile = read_profile(prof)
    assert profile.step_source == "task intervals"
    split = steps.total(profile.steps)
    assert split.computing_us == pytest.approx(1000.0, abs=0.01)
    assert split.stage_us > split.computing_us


# ----------------------------------------------------------------------------------------------
# Free time, pauses, set-up, recompilation
# ----------------------------------------------------------------------------------------------


def _raw(kernels: list[tuple[str, str, float, float]], **extra) -> RawProfile:
    """kernels: (op type, task type, start µs, duration µs)."""
    ops, tasks, starts, durations = (list(column) for column in zip(*kernels)) if kernels else ([], [], [], [])
    table = KernelTable(name=ops, op_type=ops, task_type=tasks, start_us=starts, duration_us=durations)
    table.present = {"op_type", "task_type", "start_us"}
    return RawProfile(path="p", format="msprof-text", kernels=table, extra=dict(extra))


def test_free_time_is_host_bound_when_spread_over_many_gaps():
    kernels = [("Add" if i % 2 else "Mul", "AI_VECTOR_CORE", 100.0 * i, 70.0) for i in range(20)]  # 30 us idle after each
    profile = build_profile(_raw(kernels))
    host = next(s for s in profile.symptoms if s.id == "host_bound")
    assert host.share == pytest.approx(570.0 / 1970.0, abs=1e-6)


def test_one_long_gap_is_a_pause_or_an_excerpt_not_dispatch():
    kernels = [("Add", "AI_VECTOR_CORE", 0.0, 50.0), ("Mul", "AI_VECTOR_CORE", 60.0, 50.0),
               ("Add", "AI_VECTOR_CORE", 100_000.0, 50.0)]
    profile = build_profile(_raw(kernels))
    assert "host_bound" not in profile.symptom_ids()
    assert any(n.startswith("cannot judge host-bound dispatch: the device is idle 99.9% of the window, but one gap of "
                            "99.9 ms holds 100% of it") for n in profile.notes)


def test_input_generation_in_the_window_is_set_up():
    kernels = [("DSARandomNormal", "DSA_SQE", 0.0, 530.0), ("DSAGenBitMask", "DSA_SQE", 530.0, 100.0),
               ("MatMulV2", "AI_CORE", 700.0, 370.0)]
    profile = build_profile(_raw(kernels))
    setup = next(s for s in profile.symptoms if s.id == "setup_in_window")
    assert setup.op_types == ["DSARandomNormal"]  # the dropout mask is steady-state work
    assert setup.share == pytest.approx(0.53, abs=1e-6)


def test_a_warm_up_step_in_the_window_is_set_up():
    split = [StepSplit(str(i), computing_us=100.0, stage_us=100.0) for i in range(1, 5)]
    split[0].stage_us = split[0].computing_us = 400.0
    raw = _raw([("Add", "AI_VECTOR_CORE", 0.0, 10.0)], steps=split, step_source="step_trace_time.csv")
    setup = next(s for s in build_profile(raw).symptoms if s.id == "setup_in_window")
    assert "step 1 takes 400 µs, 4.0x the median 100 µs of the other 3 steps" in setup.detail
    assert setup.share == pytest.approx(300.0 / 700.0, abs=1e-6)


def test_dynamic_shape_is_descriptive_unless_compilation_shows(real_profiles):
    # the level1 run: every kernel is "dynamic" (aclnn eager), and opCompile takes 0.37 ms of a 137 ms step
    profile = read_profile(real_profiles / "msinsight-torch-npu/text/level2/rank0_ascend_pt")
    assert "dynamic_shape" in profile.symptom_ids() and "shape_recompile" not in profile.symptom_ids()
    level1 = read_raw(real_profiles / LEVEL1_TEXT)
    assert level1.extra["compile_us"] == pytest.approx(372.94) and level1.extra["compile_calls"] == 19
    recompiling = _raw([("Add", "AI_VECTOR_CORE", 0.0, 1000.0)], compile_us=200.0, compile_calls=40)
    recompiling.kernels.op_state = ["dynamic"]
    recompiling.kernels.present.add("op_state")
    found = {s.id: s for s in build_profile(recompiling).symptoms}
    assert found["shape_recompile"].share == pytest.approx(0.2)
    assert found["shape_recompile"].detail.startswith("40 online operator compilation call(s) take 200 µs")


def test_small_kernels_are_summed_and_always_noted():
    kernels = [("Mul", "AI_VECTOR_CORE", 20.0 * i, 5.0) for i in range(30)] + [("MatMulV2", "AI_CORE", 700.0, 600.0)]
    profile = build_profile(_raw(kernels))
    small = next(s for s in profile.symptoms if s.id == "small_kernels")
    assert small.op_types == ["Mul"] and small.time_us == 150.0
    assert any(n.startswith("30 kernel launch(es) shorter than 20 µs (1 op types, 20.0% of device time) are not "
                            "judged one by one") for n in profile.notes)


# ----------------------------------------------------------------------------------------------
# msprof op: the working side, per-launch data, conflicts
# ----------------------------------------------------------------------------------------------


def test_msprof_op_kernel_is_judged_however_short(tmp_path):
    made = write_msopprof_device(tmp_path, KernelSpec("tiny_kernel", task_type="vector", duration_us=2.9, block_dim=2,
                                                       pipe={"aiv_vec": 0.2, "aiv_mte2": 0.556, "aiv_scalar": 0.3}))
    profile = read_profile(made)
    (row,) = profile.op_types
    assert row.bound == "none" and row.busiest_pipe == "aiv_mte2"
    assert "low_parallelism" in profile.symptom_ids()  # 2 blocks on 40 AIV cores of the Ascend910B3
    assert not any("profiler_level" in note for note in profile.notes)


def test_imbalance_is_judged_on_the_side_that_works(real_profiles):
    cm = read_profile(real_profiles / "catlass-msprof-op/device/02_fp32_cm_gemv_aiv")
    assert "block_imbalance" in cm.symptom_ids()  # vector blocks run 2.8-490 us
    rm = read_profile(real_profiles / "catlass-msprof-op/device/02_fp32_rm_gemv_aiv")
    # the cube side runs 1-6.5 us of 269 us; the vector blocks are balanced (max/mean 1.09)
    assert "block_imbalance" not in rm.symptom_ids()
    assert [s.id for s in rm.symptoms] == ["mte2_bound"]
    assert any(n.startswith("UB bank conflicts stall 25.1% of vector cycles, but the vector pipe is not the busiest")
               for n in rm.notes)


def test_multi_launch_folder_uses_the_launch_that_has_per_block_times(tmp_path):
    made = write_msopprof_device(tmp_path, [KernelSpec("a_kernel", task_type="vector", duration_us=100.0, block_dim=8),
                                            KernelSpec("b_kernel", task_type="vector", duration_us=300.0, block_dim=8)],
                                 imbalance=4.0)
    for pipe in (made / "b_kernel").rglob("PipeUtilization*.csv"):
        pipe.unlink()  # the longest launch has no per-block times; the other one does
    profile = read_profile(made)
    assert "block_imbalance" in profile.symptom_ids()
    assert not any(n.startswith("cannot judge block imbalance") for n in profile.notes)


def test_a_renamed_op_summary_in_a_folder_is_found_by_its_header(tmp_path, real_profiles):
    source = real_profiles / "tilelang-ascend/custom/sigmoid/Sigmoid/trace_data/op_summary.csv"
    shutil.copy(source, tmp_path / "a003-op_summary.csv")  # a temporary copy of the user's renamed file
    assert read_profile(tmp_path).device_time_us == pytest.approx(read_profile(source).device_time_us)


def test_where_an_op_ran_comes_from_its_task_type_only():
    # a Cast on the AI Vector cores is not an AI CPU fallback, whatever its name
    profile = build_profile(_raw([("Cast", "AI_VECTOR_CORE", 0.0, 500.0), ("MatMulV2", "AI_CORE", 500.0, 500.0)]))
    assert "aicpu_fallback" not in profile.symptom_ids()
    assert {r.op_type: r.unit for r in profile.op_types} == {"Cast": "ai_vector", "MatMulV2": "ai_core"}


def _union_by_hand(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def test_split_of_random_tasks_equals_a_union_by_hand():
    import random

    rng = random.Random(7)
    starts = sorted(rng.uniform(0, 10_000) for _ in range(3000))
    durations = [rng.uniform(0, 30) for _ in starts]
    comm = [rng.random() < 0.2 for _ in starts]
    split, = steps.from_intervals(starts, durations, comm)
    compute = _union_by_hand((s, s + d) for s, d, c in zip(starts, durations, comm) if not c)
    communication = _union_by_hand((s, s + d) for s, d, c in zip(starts, durations, comm) if c)
    busy = _union_by_hand([*map(tuple, compute), *map(tuple, communication)])
    hidden = sum(max(0.0, min(a[1], b[1]) - max(a[0], b[0])) for a in communication for b in compute)
    expected = {"computing_us": sum(e - s for s, e in compute), "communication_us": sum(e - s for s, e in communication),
                "stage_us": busy[-1][1] - busy[0][0],
                "largest_gap_us": max(b[0] - a[1] for a, b in zip(busy, busy[1:]))}
    expected["exposed_us"] = expected["communication_us"] - hidden
    expected["free_us"] = expected["stage_us"] - expected["computing_us"] - expected["exposed_us"]
    for field, value in expected.items():
        assert getattr(split, field) == pytest.approx(value, rel=1e-9, abs=1e-9), field
    assert 0 < split.exposed_us < split.communication_us  # the random tasks do overlap, in part


def test_one_operator_launched_in_a_loop_is_a_benchmark_not_host_bound():
    kernels = [("main_kernel", "MIX_AIC", 100.0 * i, 70.0) for i in range(11)]  # a benchmark harness's gaps
    profile = build_profile(_raw(kernels))
    assert "host_bound" not in profile.symptom_ids()
    assert any(n.startswith("the device is idle 28.0% of the window between launches of one operator "
                            "(main_kernel x11): a benchmark loop") for n in profile.notes)
