"""Folders of ranks as map → cache → reduce: the slow rank, identical results on every executor, the cache, errors."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.cluster import cache, executors, job
from opprof_advisor.cluster.executors import ExecutorChoice
from opprof_advisor.cluster.summary import summarize_rank
from opprof_advisor.core.errors import ClusterError, ProfileError
from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.profiles import read_profile
from opprof_advisor.readers import read_raw
from opprof_advisor.readers.multirank import rank_summary
from opprof_advisor.testing import KernelSpec, write_torch_npu_job
from opprof_advisor.core.units import TEXT as U

LEVEL1 = "msinsight-torch-npu/text/level1/rank0_ascend_pt"
LEVEL2 = "msinsight-torch-npu/text/level2/rank0_ascend_pt"
KERNELS = [KernelSpec("MatMulV2", "MatMulV2", "AI_CORE", 150.0, 6, block_dim=24),
           KernelSpec("Add", "Add", "AI_VECTOR_CORE", 30.0, 8, block_dim=48),
           KernelSpec("Cast", "Cast", "AI_CPU", 50.0, 2)]


def _job(tmp_path, ranks: int, slow: int | None = 5):
    folders = write_torch_npu_job(tmp_path / "job", KERNELS, ranks=ranks, slow_rank=slow, slow_factor=1.5)
    return tmp_path / "job", folders


def _json(path, executor: str) -> dict:
    return profile_to_json(read_profile(path, executor=ExecutorChoice(name=executor, workers=2)))


def test_a_128_rank_job_names_the_rank_that_computes_longest(tmp_path):
    path, _ = _job(tmp_path, 128, slow=77)
    profile = read_profile(path, executor=ExecutorChoice(name="serial"))
    assert len(profile.ranks) == 128 and profile.versions["ranks"] == "128"
    # device time is equal on every rank (the peers wait in AllReduce); computing names the slow rank
    assert len({r.device_time_us for r in profile.ranks}) == 1
    slow = next(s for s in profile.symptoms if s.id == "slow_rank")
    compute = 6 * 150.0 + 8 * 30.0 + 2 * 50.0
    assert slow.detail.startswith(f"the slowest rank by computation, rank77 ({U.time(1.5 * compute)} of computing")
    assert slow.time_us == pytest.approx(0.5 * compute)
    assert "its extra computation is in MatMulV2 (+450 µs over the median rank)" in slow.detail
    assert profile.cluster["slow_rank"] == "rank77" and profile.cluster["fast_rank"] == "rank0"
    top = profile.cluster["dispersion"][0]
    assert (top["op_type"], top["max_rank"], top["slow_excess_us"]) == ("MatMulV2", "rank77", 450.0)
    # op types summed over ranks, as the concatenated kernels were
    matmul = next(r for r in profile.op_types if r.op_type == "MatMulV2")
    assert (matmul.count, matmul.time_us) == (128 * 6, pytest.approx(127 * 900.0 + 1350.0))


def test_a_balanced_job_has_no_slow_rank(tmp_path):
    path, _ = _job(tmp_path, 4, slow=None)
    profile = read_profile(path)
    assert "slow_rank" not in profile.symptom_ids()
    assert any(n.startswith("computation is balanced across 4 ranks") for n in profile.notes)


def test_serial_processes_and_a_two_worker_local_dask_cluster_give_the_same_json(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    path, _ = _job(tmp_path, 6)
    monkeypatch.setattr(cache, "store", lambda key, summary: None)  # every executor maps every rank
    serial = _json(path, "serial")
    assert serial["cluster"]["slow_rank"] == "rank5"
    assert _json(path, "processes") == serial
    assert _json(path, "dask") == serial


def test_a_warm_run_reads_no_rank_and_a_changed_rank_is_read_again(tmp_path, monkeypatch):
    path, folders = _job(tmp_path, 4)
    cold = _json(path, "serial")
    mapped = []
    monkeypatch.setattr(job, "summarize_rank", lambda name: mapped.append(name) or summarize_rank(name))
    assert _json(path, "serial") == cold and mapped == []
    step_trace = folders[2] / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    os.utime(step_trace, ns=(1, 1))
    assert _json(path, "serial") == cold and mapped == [str(folders[2])]
    assert len(list(cache.cache_dir().rglob("*.parquet"))) == 5  # the touched rank under its new fingerprint


def test_an_unwritable_cache_warns_and_the_job_is_still_read(tmp_path, monkeypatch):
    path, _ = _job(tmp_path, 2)
    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("")
    monkeypatch.setattr(cache, "cache_dir", lambda: blocker / "rank-summaries")
    with pytest.warns(UserWarning, match="rank summaries are not cached"):
        profile = read_profile(path)
    assert len(profile.ranks) == 2


def test_a_real_rank_summarised_keeps_its_figures_and_op_types(real_profiles):
    source = real_profiles / LEVEL1
    summary = summarize_rank(str(source))
    alone = read_profile(source)
    assert summary["error"] is None and summary["label"] == "rank0"
    assert summary["figures"] == rank_summary("rank0", str(source), read_raw(source))
    assert [(r["op_type"], r["unit"], r["count"], r["time_us"], r["bound"]) for r in summary["ops"]] == [
        (r.op_type, r.unit, r.count, r.time_us, r.bound) for r in alone.op_types]
    # communication.json: HCCS bandwidth per rank for the slow-link check
    size, time_ms, packets, large = summary["transports"]["HCCS"]
    assert size > 0 and time_ms > 0 and packets >= large >= 0
    assert summary["matrix"] and {link[2] for link in summary["matrix"]} >= {"HCCS"}


def test_real_ranks_of_different_runs_are_refused(tmp_path, real_profiles):
    for name, source in (("rank0_ascend_pt", LEVEL1), ("rank1_ascend_pt", LEVEL2)):
        (tmp_path / name).symlink_to(real_profiles / source, target_is_directory=True)  # read in place
    with pytest.raises(ProfileError, match="the rank folders come from different runs"):
        read_profile(tmp_path)


def test_dask_not_installed_says_how_to_install_it(tmp_path, runner, monkeypatch):
    path, _ = _job(tmp_path, 2)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if absent
    result = runner.invoke(app, ["profile", str(path), "--executor", "dask"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: --executor dask needs Dask, which is not installed — pip install 'opprof-advisor[cluster]'"]


def test_an_unreachable_scheduler_is_one_line_and_exit_1(tmp_path, runner, monkeypatch):
    pytest.importorskip("distributed")
    path, _ = _job(tmp_path, 2)
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1.0)
    result = runner.invoke(app, ["profile", str(path), "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the Dask scheduler at tcp://127.0.0.1:9: ")


def test_a_scheduler_with_another_executor_is_a_usage_error(tmp_path, runner):
    result = runner.invoke(app, ["profile", str(tmp_path), "--executor", "serial", "--scheduler", "tcp://x:1"])
    assert result.exit_code == 2 and "runs the map on Dask" in result.output
    with pytest.raises(ClusterError, match="--scheduler runs the map on Dask"):
        ExecutorChoice(name="processes", scheduler="tcp://x:1")


def test_auto_uses_processes_only_when_it_pays(monkeypatch):
    monkeypatch.setattr(executors, "MAX_WORKERS", 2)
    auto = ExecutorChoice()
    assert auto.resolve(128, executors.PARALLEL_MIN_BYTES) == "processes"
    assert auto.resolve(128, executors.PARALLEL_MIN_BYTES - 1) == "serial"
    assert auto.resolve(1, 1 << 40) == "serial"
    assert ExecutorChoice(scheduler="tcp://h:8786").resolve(2, 0) == "dask"


def test_profile_and_suggest_show_the_rank_table_slowest_first_and_cut_long_jobs(tmp_path, runner):
    path, _ = _job(tmp_path, 24, slow=9)
    shown = runner.invoke(app, ["profile", str(path)])
    assert shown.exit_code == 0, shown.output
    rows = [line.split()[0] for line in shown.output.splitlines() if re.match(r"rank\d+ ", line)]
    assert rows[0] == "rank9" and rows.count("rank9") == 1 and len(rows) == 20  # 15 slowest, 5 fastest
    assert "5 more ranks (--format json lists all)" in shown.output
    assert "██████████" in next(line for line in shown.output.splitlines() if line.startswith("rank9 "))
    suggested = runner.invoke(app, ["suggest", "-p", str(path), "--top", "1"])
    assert suggested.exit_code == 0 and "ranks, slowest computation first" in suggested.output
    report = tmp_path / "report.html"
    assert runner.invoke(app, ["profile", str(path), "-f", "html", "-o", str(report)]).exit_code == 0
    html = report.read_text()
    assert "Ranks by computation" in html and "Showing the 15 slowest and the 5 fastest of 24 ranks" in html
    assert html.index(">rank9") < html.index(">rank0")


def test_the_json_carries_the_cluster_block_and_a_single_profile_has_none(tmp_path, runner, real_profiles):
    path, _ = _job(tmp_path, 3, slow=1)
    document = json.loads(runner.invoke(app, ["profile", str(path), "-f", "json"]).output)
    assert document["cluster"]["slow_rank"] == "rank1"
    # SDMA is the sum of HCCS, PCIE and SIO: left out where they are given
    assert [link["transport"] for link in document["cluster"]["links"]] == ["HCCS"]
    single = json.loads(runner.invoke(app, ["profile", str(real_profiles / LEVEL1), "-f", "json"]).output)
    assert "cluster" not in single


def test_the_cache_drops_the_least_recently_used_summaries_beyond_its_limit_but_never_the_jobs_own(tmp_path,
                                                                                                  monkeypatch):
    old, _ = _job(tmp_path / "old", 3)
    _json(old, "serial")
    files = sorted(cache.cache_dir().rglob("*.parquet"))
    assert len(files) == 3
    for age, path in enumerate(files):
        os.utime(path, ns=(age + 1, age + 1))  # long unused, the first one longest
    size = files[0].stat().st_size
    monkeypatch.setenv("ADVISOR_CACHE_MB", "0")  # nothing may stay but the job just read
    new, _ = _job(tmp_path / "new", 2)
    _json(new, "serial")
    left = sorted(cache.cache_dir().rglob("*.parquet"))
    assert len(left) == 2 and not set(left) & set(files)
    # a warm run stores nothing and so removes nothing; a hit is marked as used
    monkeypatch.setenv("ADVISOR_CACHE_MB", "1")
    assert cache.prune(set()) == 0 and size < 1024 ** 2
    assert all(path.stat().st_mtime_ns > 10 for path in left)


def test_ranks_inside_an_extracted_archive_are_read_but_not_cached(tmp_path):
    import shutil

    path, _ = _job(tmp_path, 3, slow=2)
    # made as `tar -czf job.tar.gz -C job .` makes it: the folder itself is the member "."
    archive = shutil.make_archive(str(tmp_path / "job"), "gztar", root_dir=path)
    profile = read_profile(archive)
    assert len(profile.ranks) == 3 and profile.cluster["slow_rank"] == "rank2"
    assert list(cache.cache_dir().rglob("*.parquet")) == []  # its temporary path never comes back


def test_exporting_a_job_writes_its_ranks_and_says_it_keeps_no_kernel_rows(tmp_path, runner):
    import sqlite3

    path, _ = _job(tmp_path, 3, slow=1)
    target = tmp_path / "job.sqlite"
    result = runner.invoke(app, ["profile", str(path), "--export", str(target)])
    assert result.exit_code == 0, result.output
    assert "3 ranks (a job keeps no kernel rows: export one rank's folder for its kernels)" in result.stderr
    with sqlite3.connect(target) as conn:
        ranks = dict(conn.execute("select rank, computing_us from ranks").fetchall())
    assert sorted(ranks) == ["rank0", "rank1", "rank2"] and ranks["rank1"] == pytest.approx(1.5 * ranks["rank0"])


def test_a_folder_of_ranks_read_raw_lists_its_ranks_and_a_nested_job_is_named(tmp_path):
    path, folders = _job(tmp_path, 2, slow=None)
    raw = read_raw(path)  # the reader parses only: mapping the ranks is the cluster's job
    assert raw.format == "multi-rank" and len(raw.kernels) == 0
    assert [p.name for p in raw.extra["rank_dirs"]] == sorted(f.name for f in folders)
    # a job inside a rank's folder is named as such in the rank table, not read as one empty rank
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "a_ascend_pt").symlink_to(path, target_is_directory=True)
    (outer / "b_ascend_pt").symlink_to(folders[0], target_is_directory=True)
    summary = summarize_rank(str(outer / "a_ascend_pt"))
    assert "a folder of ranks inside a folder of ranks" in summary["error"]


def test_a_job_is_advised_per_rank_so_no_share_of_the_step_exceeds_the_step(tmp_path, runner):
    # op types are summed over ranks, the step split is the mean rank's: advice divides the sums by the ranks read
    kernels = [*KERNELS, KernelSpec("hcom_allReduce_", "hcom_allReduce_", "HCCL", 400.0, 3)]
    write_torch_npu_job(tmp_path / "job", kernels, ranks=8, slow_rank=3, slow_factor=1.5)
    result = runner.invoke(app, ["suggest", "--profile", str(tmp_path / "job"), "--format", "json", "--explain",
                                 "--db", str(tmp_path / "advisor.db")])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    profile = read_profile(tmp_path / "job")
    assert doc["profile"]["per_rank_of"] == 8
    assert doc["profile"]["device_time_us"] == pytest.approx(profile.device_time_us / 8, abs=1e-3)
    shares = [float(m) for m in re.findall(r"([\d.]+) % of the step", result.stdout)]
    assert len(shares) >= 3 and max(shares) <= 100.0
