"""A scan over several processes gives exactly what one process gives."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

import opprof_advisor.scan.jobs as scan_jobs
from opprof_advisor.scan import scan_path, scan_to_json

FIXTURE = Path(__file__).parent / "scan_fixture_repo"


def test_split_by_size_balances_and_keeps_file_order():
    shares = scan_jobs.split_by_size([5, 1, 9, 3, 3, 2], 2)
    assert shares == [[1, 2, 5], [0, 3, 4]]  # totals 12 and 11
    assert sorted(i for share in shares for i in share) == list(range(6))
    assert scan_jobs.split_by_size([4], 3) == [[0], [], []]


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="workers are forked")
def test_forked_workers_give_the_single_process_document(monkeypatch):
    alone = scan_to_json(scan_path(FIXTURE, jobs=1))
    monkeypatch.setattr(scan_jobs, "PARALLEL_FROM_BYTES", 0)  # the fixture is small: fork anyway
    monkeypatch.setattr(scan_jobs, "_other_threads_running", lambda: False)  # other tests may leave threads
    forked = []
    real = scan_jobs._analyse_in_workers
    monkeypatch.setattr(scan_jobs, "_analyse_in_workers", lambda *args: forked.append(args[2]) or real(*args))
    together = scan_to_json(scan_path(FIXTURE, jobs=3))
    assert forked == [3]
    assert together == alone
    assert alone["files_failed"] and alone["findings"]  # a syntax error and findings both came back


def test_the_jobs_variable_and_small_trees_stay_in_one_process(monkeypatch):
    monkeypatch.setenv(scan_jobs.JOBS_VARIABLE, "1")
    assert scan_jobs.default_jobs() == 1
    monkeypatch.setenv(scan_jobs.JOBS_VARIABLE, "not a number")
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.setattr(scan_jobs.os, "getloadavg", lambda: (0.05, 0.1, 0.1))
    assert scan_jobs.default_jobs() == min(cpus, 8)  # an idle machine: every CPU
    monkeypatch.setattr(scan_jobs.os, "getloadavg", lambda: (cpus + 3.0, 0.1, 0.1))
    assert scan_jobs.default_jobs() == 1  # every CPU busy with other work: one process
    monkeypatch.setattr(scan_jobs, "_analyse_in_workers", lambda *args: pytest.fail("forked for a small tree"))
    assert scan_path(FIXTURE, jobs=4).findings


def test_no_fork_while_other_threads_run(monkeypatch):
    import threading

    monkeypatch.setattr(scan_jobs, "PARALLEL_FROM_BYTES", 0)
    monkeypatch.setattr(scan_jobs, "_analyse_in_workers", lambda *args: pytest.fail("forked beside a thread"))
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert scan_path(FIXTURE, jobs=2).findings
    finally:
        release.set()
        worker.join()
