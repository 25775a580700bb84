"""communication.json: transit / wait / idle totals, the communication_wait symptom and what it ranks first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.readers import read_raw
from opprof_advisor.profiles import read_profile
from opprof_advisor.testing import KernelSpec, write_torch_npu_text

LEVEL1 = "msinsight-torch-npu/text/level1/rank0_ascend_pt"
ST_LEVEL2 = "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt"
FIELDS = ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)", "Idle Time(ms)")
BANDWIDTH_ENTRIES = ("bandwidth-contention-overlap", "comm-buffer-alignment", "small-packet-collectives",
                     "hccl-buffsize")
WAIT_ENTRY = "communication-wait-slow-rank"


def _json_sums(path: Path) -> tuple[dict[str, float], dict[str, float], int]:
    """Per-op sums and "Total Op Info" sums over every step and group, computed here with json alone."""
    document = json.loads(path.read_text())
    per_op = dict.fromkeys(FIELDS, 0.0)
    totals = dict.fromkeys(FIELDS, 0.0)
    ops = 0
    for step in document.values():
        for group in step.values():
            for name, op in group.items():
                info = op["Communication Time Info"]
                target = totals if name == "Total Op Info" else per_op
                ops += name != "Total Op Info"
                for key in FIELDS:
                    target[key] += info[key]
    return per_op, totals, ops


#: The Level2 run's time info gives 0 ms transit for every op; the transfers sit in Idle. Summed by hand from its
#: Bandwidth Info: SDMA transit of the 8 ops that moved data (RDMA moved nothing) = 92.97342 ms.
LINK_TRANSIT = {ST_LEVEL2: 92.97342}


@pytest.mark.parametrize("folder", [LEVEL1, ST_LEVEL2])
def test_reader_sums_communication_json_once(real_profiles, folder):
    path = real_profiles / folder / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    per_op, totals, ops = _json_sums(path)
    raw = read_raw(real_profiles / folder)
    got = raw.extra["communication"]
    assert got["ops"] == ops
    moved = LINK_TRANSIT.get(folder, 0.0)
    expected = {**per_op, "Transit Time(ms)": per_op["Transit Time(ms)"] + moved,
                "Idle Time(ms)": per_op["Idle Time(ms)"] - moved}
    for key in FIELDS:
        assert got[key] == pytest.approx(expected[key], abs=1e-6)
        # The file's own "Total Op Info" rows agree, so they were not added a second time.
        assert got[key] == pytest.approx(totals[key] + expected[key] - per_op[key], abs=1e-3)
    assert any("8 of 15 communication ops give 0 ms transit" in n for n in raw.notes) == bool(moved)


def test_level1_totals_match_the_step_trace_communication(real_profiles):
    raw = read_raw(real_profiles / LEVEL1)
    # step_trace_time.csv Communication (µs) is the collectives' elapse (ms) of communication.json.
    (step,) = raw.extra["steps"]
    assert raw.extra["communication"]["Elapse Time(ms)"] * 1000 == pytest.approx(step.communication_us, rel=1e-6)


def test_level1_exposed_communication_is_mostly_waiting(real_profiles):
    profile = read_profile(real_profiles / LEVEL1)
    symptoms = {s.id: s for s in profile.symptoms}
    assert "communication_exposed" in symptoms
    wait = symptoms["communication_wait"]
    assert wait.op_types == symptoms["communication_exposed"].op_types
    assert "only 3.7 ms is transfer" in wait.detail
    assert "5.9 ms is waiting" in wait.detail and "96.4 ms idle" in wait.detail
    assert "wait ratio 0.62 is above" in wait.detail
    # share = exposed share of the step × the waiting (wait + idle) part of the elapse
    assert wait.share == pytest.approx(symptoms["communication_exposed"].share * (5.9406 + 96.3679) / 105.9919,
                                       rel=1e-3)


def _workload() -> list[KernelSpec]:
    return [KernelSpec("MatMulV2", task_type="AI_CORE", duration_us=100.0, count=10, block_dim=20),
            KernelSpec("hcom_allReduce__1", op_type="hcom_allReduce_", task_type="HCCL", duration_us=300.0, count=4)]


def _communication_json(transit: float, wait: float, idle: float) -> dict:
    info = {"Elapse Time(ms)": transit + wait + idle, "Transit Time(ms)": transit, "Wait Time(ms)": wait,
            "Synchronization Time(ms)": wait / 2, "Idle Time(ms)": idle,
            "Wait Time Ratio": round(wait / (wait + transit), 4), "Synchronization Time Ratio": 0.0}
    op = {"Communication Time Info": info, "Communication Bandwidth Info": {}}
    return {"step1": {"p2p": {}, "collective": {"hcom_allReduce__1_0_1@1": op, "Total Op Info": op}}}


def _profile_dir(tmp_path: Path, comm: dict | None) -> Path:
    root = write_torch_npu_text(tmp_path, _workload(), level="Level1")
    if comm is not None:
        (root / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text(json.dumps(comm))
    return root


def test_missing_communication_json_is_a_note(tmp_path):
    profile = read_profile(_profile_dir(tmp_path, None))
    assert "communication_exposed" in {s.id for s in profile.symptoms}
    assert "communication_wait" not in {s.id for s in profile.symptoms}
    assert ("cannot judge whether exposed communication is waiting or transferring: communication.json is "
            "missing (collect with profiler_level=Level1 (communication.json))") in profile.notes


def test_transit_dominated_communication_is_not_waiting(tmp_path):
    profile = read_profile(_profile_dir(tmp_path, _communication_json(transit=1.0, wait=0.1, idle=0.1)))
    assert "communication_exposed" in {s.id for s in profile.symptoms}
    assert "communication_wait" not in {s.id for s in profile.symptoms}
    assert not any("waiting or transferring" in note for note in profile.notes)


def test_synthetic_wait_dominated_communication_is_waiting(tmp_path):
    profile = read_profile(_profile_dir(tmp_path, _communication_json(transit=0.2, wait=0.3, idle=0.7)))
    wait = next(s for s in profile.symptoms if s.id == "communication_wait")
    assert "only 0.2 ms is transfer" in wait.detail and "83.3% of it" in wait.detail


def _ranking(runner, path: Path) -> list[list[str]]:
    """Each finding's remedies, in rank order."""
    result = runner.invoke(app, ["suggest", "-p", str(path), "-n", "10", "-f", "json"])
    assert result.exit_code == 0, result.output
    return [[r["id"] for r in s["remedies"]] for s in json.loads(result.output)["suggestions"]]


def test_level1_suggests_the_wait_pattern_before_bandwidth_advice(runner, real_profiles):
    # 96 % of the exposed communication waits: the first finding is the wait, with the wait pattern among its
    # first two remedies and no bandwidth advice under it (faster transfers cannot shorten a wait)
    first, *rest = _ranking(runner, real_profiles / LEVEL1)
    assert WAIT_ENTRY in first[:2]
    assert not set(first) & set(BANDWIDTH_ENTRIES)
    flat = first + [entry for remedies in rest for entry in remedies]
    assert all(flat.index(WAIT_ENTRY) < flat.index(e) for e in BANDWIDTH_ENTRIES if e in flat)


def test_transit_dominated_profile_does_not_lead_with_the_wait_pattern(runner, tmp_path):
    ranking = _ranking(runner, _profile_dir(tmp_path, _communication_json(transit=1.0, wait=0.1, idle=0.1)))
    flat = [entry for remedies in ranking for entry in remedies]
    ranked_bandwidth = [flat.index(e) for e in BANDWIDTH_ENTRIES if e in flat]
    assert ranked_bandwidth and ranking[0][0] in BANDWIDTH_ENTRIES
    assert WAIT_ENTRY not in flat or flat.index(WAIT_ENTRY) > min(ranked_bandwidth)


def test_a_folder_of_ranks_judges_waiting_from_the_ranks_mean(real_profiles, tmp_path):
    import shutil

    single = read_profile(real_profiles / LEVEL1)
    for rank in ("rank0_ascend_pt", "rank1_ascend_pt"):  # two identical ranks: the mean is the rank itself
        shutil.copytree(real_profiles / LEVEL1, tmp_path / rank,
                        ignore=shutil.ignore_patterns("trace_view.json", "operator_details.csv"))
    job = read_profile(tmp_path)
    assert job.format == "multi-rank"
    [one] = [s for s in single.symptoms if s.id == "communication_wait"]
    [both] = [s for s in job.symptoms if s.id == "communication_wait"]
    assert both.detail == one.detail
    assert not any("waiting or transferring" in n for n in job.notes)
