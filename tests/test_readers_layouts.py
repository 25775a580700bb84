"""Directory layouts: PROF_* trees (new, sliced, old device_N/summary), lone CSVs, ranks read in a process pool."""

from __future__ import annotations

import json

import pytest
from profile_fixtures import OP_SUMMARY_HEADER, as_op_summary, kernel, write_ascend_pt, write_csv

from opprof_advisor.cluster import executors
from opprof_advisor.profiles import read_profile
from opprof_advisor.readers import detect_format

PROF = "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP"


def _info_json(device_dir, aic=24, aiv=48):
    device_dir.mkdir(parents=True, exist_ok=True)
    (device_dir / "info.json.0").write_text(json.dumps({"DeviceInfo": [{"ai_core_num": aic, "aiv_num": aiv}]}))


def test_prof_tree_with_slices_and_core_counts(tmp_path):
    prof = tmp_path / PROF
    out = prof / "mindstudio_profiler_output"
    first = [kernel(f"Tril{i}", "Tril", "AI_VECTOR_CORE", 100.0, block=40) for i in range(3)]
    second = [kernel("MatMulV3", "MatMulV3", "AI_CORE", 50.0, block=24)]
    write_csv(out / "op_summary_slice_0_20250101000000.csv", OP_SUMMARY_HEADER, as_op_summary(first), newline="\n")
    write_csv(out / "op_summary_slice_1_20250101000000.csv", OP_SUMMARY_HEADER, as_op_summary(second), newline="\n")
    _info_json(prof / "device_0")
    assert detect_format(prof).name == "msprof-text"
    profile = read_profile(prof)
    assert profile.device_time_us == 350.0
    assert [(r.op_type, r.count) for r in profile.op_types] == [("Tril", 3), ("MatMulV3", 1)]
    assert profile.versions["cores"] == "aic=24,aiv=48"
    low = next(s for s in profile.symptoms if s.id == "low_block_dim")
    assert low.op_types == ["Tril"] and "Tril block dim 40 on 48 AIV cores (1 wave, 17% of core slots idle)" in low.detail
    # the parent folder of the PROF tree is read the same way
    assert read_profile(tmp_path).device_time_us == 350.0


def test_old_device_summary_layout(tmp_path):
    prof = tmp_path / PROF
    rows = as_op_summary([kernel("Add", "Add", "AI_VECTOR_CORE", 7.5), kernel("Cast", "Cast", "AI_CPU", 30.0)])
    write_csv(prof / "device_0" / "summary" / "op_summary_0_1_1_20230628101435.csv", OP_SUMMARY_HEADER, rows)
    profile = read_profile(prof)
    assert profile.format == "msprof-text" and profile.device_time_us == 37.5
    assert "aicpu_fallback" in profile.symptom_ids()


def test_prof_tree_without_summaries_says_how_to_export(tmp_path):
    prof = tmp_path / PROF
    _info_json(prof / "device_0")
    with pytest.raises(Exception) as caught:
        read_profile(prof)
    assert str(caught.value) == (f"{prof}: PROF folder without op_summary_*.csv — export the text summaries: "
                                 f"msprof --export=on --output=<PROF folder>")


def test_lone_kernel_details_csv_keeps_its_folder_context(tmp_path):
    folder = write_ascend_pt(tmp_path, [kernel("Add", "Add", "AI_VECTOR_CORE", 7.5)])
    path = folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    profile = read_profile(path)
    assert profile.format == "torch-npu-text" and profile.versions["cann"] == "8.3.RC1"


def test_renamed_lone_csv_is_detected_by_its_header(tmp_path):
    path = write_csv(tmp_path / "my_run.csv", OP_SUMMARY_HEADER, as_op_summary([kernel("Add", "Add", "AI_CORE", 2.0)]))
    assert read_profile(path).device_time_us == 2.0


@pytest.mark.parametrize("parallel", [False, True])
def test_ranks_read_serially_and_in_a_process_pool(tmp_path, monkeypatch, parallel):
    monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0 if parallel else 1 << 40)
    monkeypatch.setattr(executors, "MAX_WORKERS", 2)
    for rank, duration in ((0, 100.0), (1, 160.0), (2, 120.0)):
        write_ascend_pt(tmp_path, [kernel("MatMulV2", "MatMulV2", "AI_CORE", duration), kernel("Add", "Add", "AI_VECTOR_CORE", 10.0)],
                        step_trace={"Computing": duration + 10.0, "Communication(Not Overlapped)": 40.0, "Free": 0.0,
                                    "Stage": 150.0 + duration},
                        name=f"node_{rank}_rank_{rank}_ascend_pt", rank_id=rank)
    broken = tmp_path / "node_3_rank_3_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    broken.mkdir(parents=True)
    (broken / "kernel_details.csv").write_bytes(b"")
    profile = read_profile(tmp_path)
    assert profile.format == "multi-rank"
    assert [(r.rank, r.device_time_us, r.computing_us) for r in profile.ranks] == [
        ("rank0", 110.0, 110.0), ("rank1", 170.0, 170.0), ("rank2", 130.0, 130.0), ("rank3", None, None)]
    assert profile.ranks[3].error == f"{broken / 'kernel_details.csv'}: empty file (0 bytes)"
    assert profile.device_time_us == 410.0
    assert any(n.startswith("rank rank3 not read: ") for n in profile.notes)
    # the job's step split is the typical (mean) rank's: exposed 40 of a mean stage of 276.7 us
    exposed = next(s for s in profile.symptoms if s.id == "communication_exposed")
    assert exposed.share == pytest.approx(40.0 / ((250 + 310 + 270) / 3), abs=1e-6)
    slow = next(s for s in profile.symptoms if s.id == "slow_rank")
    assert slow.detail.startswith("the slowest rank by computation, rank1 (170 µs of computing, device time "
                                  "170 µs), computes 60.0 µs")
    assert slow.ceiling_us == 60.0


def test_multi_rank_with_no_readable_rank_is_an_error(tmp_path):
    for rank in (0, 1):
        out = tmp_path / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        (out / "kernel_details.csv").write_bytes(b"")
    with pytest.raises(Exception) as caught:
        read_profile(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path}: none of the 2 ranks could be read (rank rank0 not read: ")


def test_real_level1_tree_linked_twice_is_one_rank_not_two(tmp_path, real_profiles):
    # Two names for one folder (a `latest_ascend_pt` link beside the run) are one rank: counting it
    # twice doubled the device time and named a "slowest rank" that does not exist.
    source = real_profiles / "msinsight-torch-npu/text/level1/rank0_ascend_pt"
    for rank in ("rank0_ascend_pt", "latest_ascend_pt"):
        (tmp_path / rank).symlink_to(source, target_is_directory=True)  # read in place, never copied
    single = read_profile(source)
    linked = read_profile(tmp_path)
    assert linked.device_time_us == pytest.approx(single.device_time_us, abs=1e-3)
    assert linked.versions["profiler_level"] == "Level1" and "ranks" not in linked.versions
