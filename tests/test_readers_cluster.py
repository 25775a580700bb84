"""msprof-analyze's cluster_analysis_output/: per-rank splits, the job's mean split, waiting, the slow rank."""

from __future__ import annotations

import csv
import json

import pytest

from opprof_advisor.core.units import TEXT as U

from opprof_advisor.readers import detect_format
from opprof_advisor.profiles import read_profile

CLUSTER = "msprof-analyze-ut/cluster_8rank"


def _rank_rows(real_profiles) -> list[dict[str, str]]:
    path = real_profiles / CLUSTER / "cluster_analysis_output" / "cluster_step_trace_time.csv"
    with path.open(newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["Type"] == "rank"]


def test_cluster_summary_is_read_with_every_rank(real_profiles):
    rows = _rank_rows(real_profiles)
    assert detect_format(real_profiles / CLUSTER).name == "cluster-summary"
    profile = read_profile(real_profiles / CLUSTER)
    assert [r.rank for r in profile.ranks] == [f"rank{i}" for i in range(8)]
    for rank, row in zip(profile.ranks, rows):
        assert rank.computing_us == pytest.approx(float(row["Computing"]), abs=1e-3)
        assert rank.exposed_us == pytest.approx(float(row["Communication(Not Overlapped)"]), abs=1e-3)
        assert rank.free_us == pytest.approx(float(row["Free"]), abs=1e-3)
        assert rank.stage_us == pytest.approx(float(row["Stage"]), abs=1e-3)
    # the job's split is the mean rank's (the "stage" row holds maxima and is not a rank)
    (step,) = profile.steps
    assert step.free_us == pytest.approx(sum(float(r["Free"]) for r in rows) / 8, abs=1e-3)
    assert step.stage_us == pytest.approx(sum(float(r["Stage"]) for r in rows) / 8, abs=1e-3)


def test_cluster_free_time_and_waiting_are_found_and_compute_is_balanced(real_profiles):
    profile = read_profile(real_profiles / CLUSTER)
    found = {s.id: s for s in profile.symptoms}
    # Free is 56-87 % per rank (68.8 % for the mean rank): the devices mostly idle
    assert found["host_bound"].share == pytest.approx(0.688, abs=1e-3)
    assert found["communication_exposed"].share == pytest.approx(0.265, abs=1e-3)
    assert "communication_wait" in found
    # ranks compute 80.08-81.66 ms: a 1.6 ms gap of a 1.7 s step is no slow computing rank ...
    assert any(n.startswith("computation is balanced across 8 ranks: the slowest by computation, rank4 ")
               for n in profile.notes)
    # ... but free time spreads 893-1489 ms and exposed communication 133-756 ms: the rank idling longest arrives
    # last at the collectives and the others wait for it
    slow = found["slow_rank"]
    ranks = {r.rank: r for r in profile.ranks}
    late = max(ranks.values(), key=lambda r: r.computing_us + r.free_us)
    early = min(ranks.values(), key=lambda r: r.computing_us + r.free_us)
    assert slow.detail.startswith(f"the rank the others wait for, {late.rank}, reaches the collectives")
    assert slow.time_us == pytest.approx(late.computing_us + late.free_us - early.computing_us - early.free_us)
    assert "host work or data loading on that rank, not its kernels" in slow.detail
    exposed = [r.exposed_us for r in ranks.values()]
    assert f"exposed communication ranges {U.time(min(exposed))}–{U.time(max(exposed))}" in slow.detail
    # HCCS / SDMA / PCIE carried kilobytes: far too little to judge link bandwidth
    assert "slow_link" not in found


def test_cluster_communication_sums_match_the_json(real_profiles):
    from opprof_advisor.readers import read_raw

    path = real_profiles / CLUSTER / "cluster_analysis_output" / "cluster_communication.json"
    document = json.loads(path.read_text())
    infos = [info["Communication Time Info"] for group in document.values() for step in group.values()
             for op in step.values() for info in op.values()]
    raw = read_raw(real_profiles / CLUSTER)
    assert raw.extra["communication"]["Wait Time(ms)"] == pytest.approx(sum(i["Wait Time(ms)"] for i in infos))
    assert raw.extra["communication"]["ops"] == 2.0


def test_a_slow_link_and_a_slow_rank_are_named(tmp_path):
    out = tmp_path / "cluster_analysis_output"
    out.mkdir()
    header = ("Step,Type,Index,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
              "Communication(Not Overlapped and Exclude Receive)")
    lines = [header] + [f",rank,{i},{computing},{1000 - computing},0,{1000 - computing},0,1000,0,0"
                        for i, computing in enumerate((500, 500, 650, 500))]
    (out / "cluster_step_trace_time.csv").write_text("\n".join(lines) + "\n")
    link = lambda size, time_ms: {"Transit Size(MB)": size, "Transit Time(ms)": time_ms}  # noqa: E731
    ranks = {str(i): {"Communication Time Info": {"Elapse Time(ms)": 1.0, "Transit Time(ms)": 0.5, "Wait Time(ms)": 0.5,
                                                  "Synchronization Time(ms)": 0.0, "Idle Time(ms)": 0.0},
                      "Communication Bandwidth Info": {"HCCS": link(100.0, 5.0 if i != 1 else 10.0)}}
             for i in range(4)}
    (out / "cluster_communication.json").write_text(json.dumps({"(0, 1, 2, 3)": {"step1": {"hcom_allReduce__1@1": ranks}}}))
    profile = read_profile(tmp_path)
    found = {s.id: s for s in profile.symptoms}
    assert found["slow_rank"].detail.startswith("the slowest rank by computation, rank2 (650 µs of computing)")
    assert found["slow_rank"].share == pytest.approx(0.15)
    assert found["slow_link"].detail == "rank1 HCCS 10.0 GB/s against a median 20.0 GB/s"
