"""Link bandwidth against what the chip's links should reach (msprof's standard links, Huawei's guide), and the
communication.json quirk of a 0 ms transit beside links that moved data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.profiles import read_profile
from opprof_advisor.readers import chips
from opprof_advisor.testing import KernelSpec, write_device_info, write_torch_npu_text

ST_LEVEL2 = "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt"


def _job(tmp_path: Path, *, packet_mb: float, packets: int, hccs_ms: float, chip: str | None) -> Path:
    """One rank: 10 MatMuls and 4 AllReduces of 2.5 ms; communication.json moves packets x packet_mb over HCCS in
    hccs_ms (SDMA repeats it, as torch_npu writes)."""
    kernels = [KernelSpec("MatMulV2", task_type="AI_CORE", duration_us=100.0, count=10, block_dim=20),
               KernelSpec("hcom_allReduce__1", op_type="hcom_allReduce_", task_type="HCCL", duration_us=2500.0,
                          count=4)]
    root = write_torch_npu_text(tmp_path, kernels, level="Level1")
    size = packet_mb * packets
    link = {"Transit Size(MB)": size, "Transit Time(ms)": hccs_ms, "Bandwidth(GB/s)": round(size / hccs_ms, 4),
            "Large Packet Ratio": 0.0, "Size Distribution": {str(packet_mb): [packets, hccs_ms]}}
    info = {"Elapse Time(ms)": 10.0, "Transit Time(ms)": hccs_ms, "Wait Time(ms)": 0.5,
            "Synchronization Time(ms)": 0.5, "Idle Time(ms)": 9.5 - hccs_ms, "Wait Time Ratio": 0.05,
            "Synchronization Time Ratio": 0.05}
    op = {"Communication Time Info": info, "Communication Bandwidth Info": {"HCCS": link, "SDMA": dict(link)}}
    (root / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text(
        json.dumps({"step1": {"p2p": {}, "collective": {"hcom_allReduce__1_0_1@1": op}}}))
    if chip:
        write_device_info(root / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP", chip)
    return root


def test_a_large_transfer_below_what_the_link_reaches_is_a_slow_link_with_a_gain(runner, tmp_path):
    root = _job(tmp_path, packet_mb=40.0, packets=2, hccs_ms=8.0, chip="Ascend910B3")
    profile = read_profile(root)
    link = next(s for s in profile.symptoms if s.id == "slow_link")
    # 80 MB in 8 ms = 10 GB/s; the floor is the lower of 0.8 x 28 (msprof) and 17 (the guide, inline reduce)
    assert chips.link_floor("HCCS", chips.standard_links("Ascend910B3")["HCCS"]) == 17.0
    assert link.detail == ("HCCS moved 80 MB in 8.00 ms = 10.0 GB/s (large packets 100%), below the 17 GB/s a large "
                           "transfer reaches on Atlas A2 / A3 (Ascend910B, Ascend910_93) (msprof's standard 28 GB/s); at 17 GB/s it "
                           "takes 4.71 ms")
    assert link.ceiling_us == pytest.approx((8.0 - 80 / 17) * 1000, rel=1e-6)
    result = runner.invoke(app, ["suggest", "-p", str(root), "-n", "10", "-f", "json"])
    assert result.exit_code == 0, result.output
    row = next(r for r in json.loads(result.output)["suggestions"] if r["id"] == "slow-link")
    exposed = next(s for s in profile.symptoms if s.id == "communication_exposed").time_us
    saved = min(link.ceiling_us, exposed)
    assert row["expected_gain"]["high_us"] == pytest.approx(saved, rel=1e-3)
    assert row["expected_gain"]["low_us"] == pytest.approx(saved * exposed / profile.communication_time_us, rel=1e-3)


def test_the_chip_generation_comes_from_info_json_when_no_name_is_written(tmp_path):
    root = _job(tmp_path, packet_mb=40.0, packets=2, hccs_ms=8.0, chip="Ascend910B3")
    raw_profile = read_profile(root)
    assert raw_profile.device.get("chip") in (None, "")  # text exports name no chip: info.json's platform_version does
    assert "on Atlas A2 / A3" in next(s for s in raw_profile.symptoms if s.id == "slow_link").detail
    assert chips.generation_name("5") == "Atlas A2 / A3 (Ascend910B, Ascend910_93)" and chips.generation_name("9") is None


def test_small_packets_below_the_floor_are_a_note_not_a_slow_link(tmp_path):
    profile = read_profile(_job(tmp_path, packet_mb=1.0, packets=80, hccs_ms=8.0, chip="Ascend910B3"))
    assert "slow_link" not in {s.id for s in profile.symptoms}
    assert any(note.startswith("HCCS moved 80 MB at 10.0 GB/s, below the 17 GB/s large transfers reach, but only 0% "
                               "of its packets are large") for note in profile.notes)


def test_a_link_at_what_large_transfers_reach_is_not_slow(tmp_path):
    profile = read_profile(_job(tmp_path, packet_mb=40.0, packets=2, hccs_ms=4.0, chip="Ascend910B3"))  # 20 GB/s
    assert "slow_link" not in {s.id for s in profile.symptoms}


def test_without_the_chip_the_comparison_is_a_note_naming_both_generations(tmp_path):
    profile = read_profile(_job(tmp_path, packet_mb=40.0, packets=2, hccs_ms=8.0, chip=None))
    assert "slow_link" not in {s.id for s in profile.symptoms}
    note = next(n for n in profile.notes if n.startswith("cannot judge link bandwidth against the expected"))
    assert "HCCS moved 80 MB at 10.0 GB/s" in note and "28 GB/s on Atlas A2 / A3" in note and "18 GB/s on Ascend 910" in note


def test_a_real_level2_run_without_a_chip_is_not_called_slow(real_profiles):
    # HCCS moved 1767 MB at 19.0 GB/s with large packets: above the guide's 17 GB/s for reduces on any generation
    profile = read_profile(real_profiles / ST_LEVEL2)
    assert "slow_link" not in {s.id for s in profile.symptoms}
    assert any("HCCS moved 1767 MB at 19.0 GB/s" in n for n in profile.notes)
    wait = next(s for s in profile.symptoms if s.id == "communication_wait")
    assert "only 93.0 ms is transfer" in wait.detail  # the links' transit, not the time info's 0


@pytest.mark.parametrize("chip, generation, hccs", [("Ascend910B1", None, 28.0), ("Ascend910_9362", None, 28.0),
                                                     ("Ascend910B", None, 28.0), ("Ascend910ProA", None, 18.0),
                                                     (None, "5", 28.0), (None, "1", 18.0), ("Ascend310P3", None, None)])
def test_standard_links_by_name_or_generation(chip, generation, hccs):
    assert chips.standard_links(chip, generation).get("HCCS") == hccs


def test_one_slow_pair_in_the_matrix_is_named(tmp_path):
    root = _job(tmp_path, packet_mb=40.0, packets=2, hccs_ms=4.0, chip=None)  # the transport's total is fine
    links = {f"0-{dst}": {"Transport Type": "HCCS", "Transit Size(MB)": 100.0, "Transit Time(ms)": ms,
                          "Bandwidth(GB/s)": round(100.0 / ms, 4), "Op Name": "hcom_allReduce__1_0_1"}
             for dst, ms in ((1, 5.0), (2, 5.0), (3, 10.0))}
    links["0-0"] = {"Transport Type": "LOCAL", "Transit Size(MB)": 100.0, "Transit Time(ms)": 50.0,
                    "Bandwidth(GB/s)": 2.0, "Op Name": "hcom_allReduce__1_0_1"}  # a copy inside the device
    (root / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").write_text(
        json.dumps({"step1": {"collective": {"allreduce-top1@1": links}}}))
    link = next(s for s in read_profile(root).symptoms if s.id == "slow_link")
    assert link.detail == "link 0-3 HCCS 10.0 GB/s against a median link 20.0 GB/s"
    assert link.ceiling_us == pytest.approx((10.0 - 100.0 / 20.0) * 1000, rel=1e-6)


def test_the_matrix_counts_each_collective_once_from_its_total_entry(real_profiles):
    from opprof_advisor.readers.communication import read_matrix

    path = real_profiles / ST_LEVEL2 / "ASCEND_PROFILER_OUTPUT"
    links = {(src, dst, transport): size for src, dst, transport, size, _ in read_matrix(
        path / "communication_matrix.json", [])}
    # torch_npu writes -top1/-middle/-bottom* and their -total: the totals alone. By hand from the -total entries'
    # 0-1 HCCS sizes; communication.json's HCCS for the rank is 1767 MB, the same transfers
    total = 0.0
    for step in json.loads((path / "communication_matrix.json").read_text()).values():
        for kind in step.values():
            for name, op in kind.items():
                if name.split("@")[0].endswith("-total") and "0-1" in op:
                    total += op["0-1"]["Transit Size(MB)"]
    assert links[("0", "1", "HCCS")] == pytest.approx(total, rel=1e-9)
    assert 1700 < links[("0", "1", "HCCS")] < 1800


def test_the_cluster_file_does_not_count_total_op_info_again(tmp_path):
    from opprof_advisor.readers.communication import read_cluster_communication

    op = {"Communication Time Info": {"Elapse Time(ms)": 10.0, "Transit Time(ms)": 4.0, "Wait Time(ms)": 6.0,
                                      "Synchronization Time(ms)": 1.0, "Idle Time(ms)": 0.0},
          "Communication Bandwidth Info": {"HCCS": {"Transit Size(MB)": 80.0, "Transit Time(ms)": 4.0,
                                                    "Size Distribution": {"40": [2, 4.0]}}}}
    document = {"group": {"step1": {"hcom_allReduce__1@1": {"0": op, "1": op}, "Total Op Info": {"0": op, "1": op}}}}
    path = tmp_path / "cluster_communication.json"
    path.write_text(json.dumps(document))
    totals, bandwidth = read_cluster_communication(path, [])
    assert totals["Elapse Time(ms)"] == 20.0 and totals["ops"] == 1.0
    assert bandwidth["HCCS"]["rank0"] == [80.0, 4.0, 2.0, 2.0]


def test_a_job_of_equally_slow_ranks_is_as_slow_as_one_of_them(tmp_path):
    from opprof_advisor.testing import write_torch_npu_job

    def slow_link(ranks):
        folder = tmp_path / f"job{ranks}"
        roots = write_torch_npu_job(folder, [KernelSpec("MatMulV2", task_type="AI_CORE", duration_us=100.0, count=10,
                                                        block_dim=20)], ranks=ranks, allreduces=4,
                                    allreduce_us=8000.0, transfer_mb=40.0)
        for root in roots:
            write_device_info(root / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP", "Ascend910B3")
            path = root / "ASCEND_PROFILER_OUTPUT" / "communication.json"
            document = json.loads(path.read_text())
            for op in document["step1"]["collective"].values():
                for link in op["Communication Bandwidth Info"].values():
                    if link["Transit Size(MB)"]:
                        link["Size Distribution"] = {"40.0": [1, 8.0]}
            path.write_text(json.dumps(document))
        return next(s for s in read_profile(folder).symptoms if s.id == "slow_link")

    two, four = slow_link(2), slow_link(4)
    # 40 MB in 8 ms = 5 GB/s per AllReduce, 4 a step: 32 ms against 160 MB / 17 GB/s on every rank at once
    assert two.ceiling_us == pytest.approx((32.0 - 160.0 / 17.0) * 1000, rel=1e-6)
    assert four.ceiling_us == pytest.approx(two.ceiling_us, rel=1e-9)
