"""Real profiler outputs in ../shared/real-profiles (read in place): totals checked with the csv module."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from opprof_advisor.core.errors import ProfileError

from opprof_advisor.readers import detect_format
from opprof_advisor.profiles import read_profile
from opprof_advisor.readers.msprof_text import read_core_counts

KD = "ASCEND_PROFILER_OUTPUT/kernel_details.csv"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        return [dict(zip(header, row)) for row in reader if len(row) == len(header)]


def _duration(row: dict[str, str]) -> float:
    return float(row.get("Duration(us)") or row["Task Duration(us)"])


def _core(row: dict[str, str]) -> str:
    return row.get("Accelerator Core") or row["Task Type"]


def test_pt_train_2023_totals_and_ai_cpu_cast_fallback(real_profiles):
    folder = real_profiles / "msprof-analyze-ut/pt_train_2023_ascend_pt"
    rows = _rows(folder / KD)
    device = sum(map(_duration, rows))
    comm = sum(_duration(r) for r in rows if _core(r) == "HCCL")
    aicpu = [r for r in rows if _core(r) == "AI_CPU"]
    profile = read_profile(folder)
    assert profile.format == "torch-npu-text"
    assert profile.device_time_us == pytest.approx(device, abs=1e-3)
    assert profile.communication_time_us == pytest.approx(comm, abs=1e-3)
    assert profile.compute_time_us == pytest.approx(device - comm, abs=1e-3)
    assert {r["Type"] for r in aicpu} == {"Cast"} and len(aicpu) == 7
    fallback = next(s for s in profile.symptoms if s.id == "aicpu_fallback")
    assert fallback.op_types == ["Cast"]
    assert fallback.share == pytest.approx(sum(map(_duration, aicpu)) / device, abs=1e-6)
    cast_cpu = next(r for r in profile.op_types if r.op_type == "Cast" and r.unit == "ai_cpu")
    assert cast_cpu.count == 7 and cast_cpu.dtypes == ["INT32"]
    # the 2023 PMU set is ArithmeticUtilization: no pipe ratios, so no bound is claimed
    assert {r.bound for r in profile.op_types} == {"unknown"}
    assert any(n.startswith("cannot judge bound class: no pipe ratio columns") for n in profile.notes)


def test_level0_notes_that_the_unit_cannot_be_judged(real_profiles):
    folder = real_profiles / "msinsight-torch-npu/text/level0/rank0_ascend_pt"
    rows = _rows(folder / KD)
    profile = read_profile(folder)
    assert profile.versions["profiler_level"] == "Level0"
    assert profile.device_time_us == pytest.approx(sum(map(_duration, rows)), abs=1e-3)
    assert {r.unit for r in profile.op_types} == {"unknown", "communication"}
    assert "aicpu_fallback" not in profile.symptom_ids()
    assert ("cannot judge AI CPU fallback: the unit (Task Type / Accelerator Core) is not recorded at profiler level0 "
            "(collect with profiler_level=Level1)") in profile.notes
    assert any(n.startswith("cannot judge the unit of compute kernels") for n in profile.notes)
    # op types are derived from names, and said to be
    transdata = next(r for r in profile.op_types if r.op_type == "TransData")
    assert transdata.count == sum(1 for r in rows if re.sub(r"_\d+$", "", r["Name"]).endswith("TransData")) == 57


@pytest.mark.parametrize("level", ["level1", "level2"])
def test_op_type_totals_match_op_statistic(real_profiles, level):
    folder = real_profiles / f"msinsight-torch-npu/text/{level}/rank0_ascend_pt"
    statistic = _rows(folder / "ASCEND_PROFILER_OUTPUT/op_statistic.csv")
    profile = read_profile(folder)
    ours = defaultdict(float)
    for row in profile.op_types:
        ours[row.op_type] += row.time_us
    for stat in statistic:
        assert ours[stat["OP Type"]] == pytest.approx(float(stat["Total Time(us)"]), abs=0.01), stat["OP Type"]
    trace = _rows(folder / "ASCEND_PROFILER_OUTPUT/step_trace_time.csv")[0]
    exposed = next(s for s in profile.symptoms if s.id == "communication_exposed")
    assert exposed.share == pytest.approx(float(trace["Communication(Not Overlapped)"]) / float(trace["Stage"]), abs=1e-6)


def test_st_level2_cann83_counts_units_and_versions(real_profiles):
    folder = real_profiles / "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt"
    rows = _rows(folder / KD)
    profile = read_profile(folder)
    assert profile.versions["torch_npu"] == "2.7.1" and profile.versions["cann"] == "8.3.RC1"
    by_core = defaultdict(float)
    for row in rows:
        by_core[_core(row)] += _duration(row)
    assert profile.communication_time_us == pytest.approx(by_core["COMMUNICATION"], abs=1e-3)
    units = defaultdict(float)
    for row in profile.op_types:
        units[row.unit] += row.time_us
    assert units["mix_aic"] == pytest.approx(by_core["MIX_AIC"], abs=0.01)
    assert units["ai_vector"] == pytest.approx(by_core["AI_VECTOR_CORE"], abs=0.01)
    statistic = _rows(folder / "ASCEND_PROFILER_OUTPUT/op_statistic.csv")
    counts = {(r.op_type, r.unit): r.count for r in profile.op_types}
    assert counts[("MatMulV3", "ai_core")] == int(next(s for s in statistic if s["OP Type"] == "MatMulV3")["Count"])
    # every kernel is dynamic, none static -> dynamic_shape (the OP State column exists here)
    assert "dynamic_shape" in profile.symptom_ids()
    assert [r.time_us for r in profile.op_types] == sorted((r.time_us for r in profile.op_types), reverse=True)


def test_pmu_2025_bound_class_recomputed_from_the_ratios(real_profiles):
    folder = real_profiles / "msprof-analyze-ut/pt_llm_pmu_2025_ascend_pt"
    rows = [r for r in _rows(folder / KD) if r["Type"] == "MatMulV2" and _duration(r) >= 20]
    weight = sum(map(_duration, rows))
    mac = sum(float(r["aic_mac_ratio"]) * _duration(r) for r in rows) / weight
    mte2 = sum(float(r["aic_mte2_ratio"]) * _duration(r) for r in rows) / weight
    expected = "mte2" if mte2 / 0.8 > mac / 0.8 and mte2 >= 0.8 else "cube"
    profile = read_profile(folder)
    matmul = next(r for r in profile.op_types if r.op_type == "MatMulV2")
    assert matmul.bound == expected == "mte2"


def test_server_ut_skips_the_edited_row_and_keeps_the_rest(real_profiles):
    folder = real_profiles / "msinsight-torch-npu/server-ut/test_rank_0"
    rows = _rows(folder / KD)
    profile = read_profile(folder)
    assert profile.device_time_us == pytest.approx(sum(map(_duration, rows)), abs=1e-3)
    assert any(n.startswith("skipped 1 row(s) of") for n in profile.notes)
    assert "aicpu_fallback" in profile.symptom_ids()
    # the NonZero_MemSet rows have Type "0": kept as their own op type, not dropped
    assert any(r.op_type == "0" for r in profile.op_types)


def test_lone_op_summary_csv_with_block_num(real_profiles):
    path = real_profiles / "tilelang-ascend/custom/sigmoid/Sigmoid/trace_data/op_summary.csv"
    rows = _rows(path)
    assert detect_format(path).name == "msprof-text"
    profile = read_profile(path)
    assert profile.device_time_us == pytest.approx(sum(map(_duration, rows)), abs=1e-3)
    (row,) = profile.op_types
    assert (row.op_type, row.unit, row.count, row.block_dim) == ("main_kernel", "mix_aic", len(rows), 96)


def test_parent_of_ascend_pt_folders_of_different_runs_is_refused(real_profiles):
    # Three unrelated runs (Nov 2023, Jan 2024, Jan 2025): their task windows are days apart, so they are
    # not the ranks of one job and must not be merged into a "3-rank job" with a "+191 % slowest rank".
    parent = real_profiles / "msprof-analyze-ut"
    with pytest.raises(ProfileError) as caught:
        read_profile(parent)
    assert str(caught.value).startswith(f"{parent}: the rank folders come from different runs: "
                                        "pt_timeline_2024_ascend_pt starts 54 days after pt_train_2023_ascend_pt ends")


def test_every_folder_of_that_parent_still_reads_on_its_own(real_profiles):
    parent = real_profiles / "msprof-analyze-ut"
    train = sum(map(_duration, _rows(parent / "pt_train_2023_ascend_pt" / KD)))
    pmu = sum(map(_duration, _rows(parent / "pt_llm_pmu_2025_ascend_pt" / KD)))
    assert read_profile(parent / "pt_train_2023_ascend_pt").device_time_us == pytest.approx(train, abs=1e-3)
    assert read_profile(parent / "pt_llm_pmu_2025_ascend_pt").device_time_us == pytest.approx(pmu, abs=1e-3)
    # the timeline-only folder is read from trace_view.json: its Ascend Hardware kernels (copies skipped)
    events = json.loads((parent / "pt_timeline_2024_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json").read_text())
    hardware = next(e["pid"] for e in events if e.get("name") == "process_name" and e["args"]["name"] == "Ascend Hardware")
    timeline = sum(e["dur"] for e in events if e.get("pid") == hardware and e["ph"] == "X" and e["name"] != "MEMCPY_ASYNC")
    assert read_profile(parent / "pt_timeline_2024_ascend_pt").device_time_us == pytest.approx(timeline, abs=1e-3)


def test_core_counts_from_info_json(real_profiles):
    assert read_core_counts(real_profiles / "msprof-ut-devinfo/PROF_000001_20250101000000000_UTDEVINFO") == {"aic": 8, "aiv": 0}


def test_a_prof_folder_without_a_kernel_table_gets_one_clear_line(real_profiles):
    from opprof_advisor.core.errors import AdvisorError

    prof = real_profiles / "msprof-ut-devinfo"
    with pytest.raises(AdvisorError) as caught:
        read_profile(prof)
    assert str(caught.value) == (f"{prof / 'PROF_000001_20250101000000000_UTDEVINFO'}: PROF folder without "
                                 "op_summary_*.csv — export the text summaries: msprof --export=on --output=<PROF folder>")
