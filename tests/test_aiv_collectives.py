"""AIV-mode collectives (FORMATS.md §13): an hcom_* row and its AivKernel twin are one collective, counted once."""

from __future__ import annotations

import pytest

from profile_fixtures import kernel, write_ascend_pt

from opprof_advisor.profiles import load_profile


def _job(tmp_path, lone_vector_kernel: bool = True):
    rows = [
        kernel("Add", "Add", "AI_VECTOR_CORE", 40.0, start=0.0, wait=0.0),
        # the collective and its vector-core twin: same start, same duration; the wait on the twin
        kernel("hcom_reduceScatter__503_0_1", "N/A", "COMMUNICATION", 12.56, start=50.0, wait=0.0),
        kernel("AivKernel", "N/A", "N/A", 12.56, start=50.0, wait=538.37, block=8),
        kernel("hcom_allGather__504_0_1", "N/A", "COMMUNICATION", 30.0, start=70.0, wait=0.0),
        kernel("AivKernel", "N/A", "N/A", 29.5, start=70.25, wait=0.0, block=8),  # inside, a little later
        kernel("MatMulV2", "MatMulV2", "AI_CORE", 100.0, start=110.0, wait=0.0),
    ]
    if lone_vector_kernel:
        rows.append(kernel("AivKernel", "N/A", "N/A", 5.0, start=300.0, wait=0.0))  # no collective around it
    return write_ascend_pt(tmp_path, rows)


def test_a_collective_and_its_aiv_twin_are_counted_once_as_communication(tmp_path):
    raw, profile = load_profile(_job(tmp_path))
    assert profile.communication_time_us == pytest.approx(12.56 + 30.0)
    assert profile.device_time_us == pytest.approx(40.0 + 12.56 + 30.0 + 100.0 + 5.0)
    # the lone AivKernel is a real vector kernel and stays; the twins are gone
    aiv = [row for row in profile.op_types if row.op_type == "AivKernel"]
    assert [(row.count, row.time_us) for row in aiv] == [(1, 5.0)]
    assert "2 AivKernel row(s) are the vector-core twins of AIV-mode collectives (HCCL_OP_EXPANSION_MODE=AIV): " \
           "each collective is counted once, as communication" in profile.notes
    # the twin's wait moved to its collective
    scatter = next(row for row in profile.op_types if row.op_type.startswith("hcom_reduceScatter"))
    assert scatter.wait_us == pytest.approx(538.37)


def test_with_the_twins_gone_the_communication_is_exposed_not_overlapped(tmp_path):
    profile = load_profile(_job(tmp_path, lone_vector_kernel=False))[1]
    [step] = profile.steps
    # (start times of the fixture are 1.7e15 µs + offset: a double there resolves a quarter µs)
    assert step.exposed_us == pytest.approx(12.56 + 30.0, abs=0.25)
    assert step.overlapped_us == pytest.approx(0.0)


def test_a_profile_without_collectives_keeps_its_aivkernel_rows(tmp_path):
    folder = write_ascend_pt(tmp_path, [kernel("AivKernel", "N/A", "N/A", 5.0, start=0.0),
                                        kernel("Add", "Add", "AI_VECTOR_CORE", 4.0, start=10.0)])
    profile = load_profile(folder)[1]
    assert profile.device_time_us == pytest.approx(9.0)
    assert not any("AIV-mode" in note for note in profile.notes)


def test_a_twin_is_matched_on_its_own_device_and_only_the_first_fragment_s_wait_moves():
    from opprof_advisor.readers.base import KernelTable
    from opprof_advisor.readers.collectives import count_collectives_once

    table = KernelTable(name=["hcom_allReduce__1", "AivKernel", "AivKernel", "AivKernel"],
                        op_type=["N/A"] * 4, task_type=["COMMUNICATION", "N/A", "N/A", "N/A"],
                        duration_us=[500.0, 200.0, 250.0, 300.0], start_us=[0.0, 0.0, 240.0, 100.0],
                        wait_us=[0.0, 7.0, 3.0, 0.0], device_id=[0, 0, 0, 1])
    table.present = {"name", "op_type", "task_type", "duration_us", "start_us", "wait_us", "device_id"}
    notes: list[str] = []
    kept = count_collectives_once(table, notes)
    # device 1's AivKernel runs during device 0's collective: a real kernel of another device, kept
    assert kept.name == ["hcom_allReduce__1", "AivKernel"] and kept.device_id == [0, 1]
    assert kept.wait_us == [7.0, 0.0]  # the twin that starts with the collective: its wait; the later fragment's stays out
    assert notes[0].startswith("2 AivKernel row(s)")
