"""Executors and the rank cache under attack: killed workers, schedulers that never answer, foreign cache files,
signals in the middle of a map (issue 30, class "executors and the rank cache").

Each test is named after the cause it guards. The waits are shortened through the environment variables the
code reads (ADVISOR_CLUSTER_TIMEOUT, ADVISOR_RANK_TIMEOUT), so every test takes a few seconds at most.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.cluster import cache, executors, job, runtime
from opprof_advisor.cluster.executors import ExecutorChoice, run_map
from opprof_advisor.cluster.summary import SCHEMA, summarize_rank
from opprof_advisor.core.errors import AdvisorWarning, ClusterError
from opprof_advisor.testing import KernelSpec, write_torch_npu_job

ROOT = Path(__file__).resolve().parent.parent
KERNELS = [KernelSpec("MatMulV2", "MatMulV2", "AI_CORE", 150.0, 6, block_dim=24),
           KernelSpec("Add", "Add", "AI_VECTOR_CORE", 30.0, 8, block_dim=48)]


def _job(tmp_path: Path, ranks: int = 4) -> tuple[Path, list[Path]]:
    folders = write_torch_npu_job(tmp_path / "job", KERNELS, ranks=ranks)
    return tmp_path / "job", folders


# ------------------------------------------------------------------------------------------------
# Map functions that misbehave in the worker (module level: the workers find them by name)
# ------------------------------------------------------------------------------------------------


def _echo(path: str) -> str:
    return path


def _dies_on_victim(path: str) -> str:
    """Kill the worker's own process (as the OOM killer or `kill -9` would) when mapping $H30_VICTIM; only the first
    time when $H30_ONCE names a marker file (created then)."""
    if path == os.environ.get("H30_VICTIM"):
        marker = os.environ.get("H30_ONCE")
        if not marker or not os.path.exists(marker):
            if marker:
                Path(marker).touch()
            os.kill(os.getpid(), signal.SIGKILL)
    return path


def _hangs_on_victim(path: str) -> str:
    if path == os.environ.get("H30_VICTIM"):
        time.sleep(60)
    return path


def _summary_dies_on_victim(path: str):
    _dies_on_victim(path)
    return summarize_rank(path)


def _dies_at_start(state) -> None:
    os._exit(3)


# ------------------------------------------------------------------------------------------------
# Worker processes
# ------------------------------------------------------------------------------------------------


def test_a_killed_worker_process_loses_its_rank_once_and_the_map_is_whole(tmp_path, monkeypatch):
    items = [str(tmp_path / f"rank{i}") for i in range(6)]
    monkeypatch.setenv("H30_VICTIM", items[2])
    monkeypatch.setenv("H30_ONCE", str(tmp_path / "died-once"))
    ticks = []
    results = run_map(_dies_on_victim, items, ExecutorChoice(name="processes", workers=2), done=lambda: ticks.append(1))
    assert results == items and len(ticks) == len(items)
    assert (tmp_path / "died-once").exists()


def test_a_rank_whose_worker_dies_twice_is_named_in_one_line(tmp_path, runner, monkeypatch):
    path, folders = _job(tmp_path, 3)
    monkeypatch.setenv("H30_VICTIM", str(folders[1]))
    monkeypatch.setattr(job, "summarize_rank", _summary_dies_on_victim)
    result = runner.invoke(app, ["profile", str(path), "--executor", "processes"])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: {folders[1]}: the worker process reading this rank died, twice (killed, or out of memory): the run "
        "stops — read this rank alone with `advisor profile` to see why, or use --executor serial"]


def test_a_rank_over_its_time_is_mapped_again_then_named(tmp_path, monkeypatch):
    items = [str(tmp_path / f"rank{i}") for i in range(3)]
    monkeypatch.setenv("H30_VICTIM", items[0])
    monkeypatch.setenv("ADVISOR_RANK_TIMEOUT", "0.4")
    started = time.monotonic()
    with pytest.raises(ClusterError) as caught:
        run_map(_hangs_on_victim, items, ExecutorChoice(name="processes", workers=2))
    assert time.monotonic() - started < 5
    assert caught.value.path == items[0]
    assert str(caught.value) == (f"{items[0]}: not read within 0.4 s, twice: the rank is left out and the run stops "
                                 "— raise ADVISOR_RANK_TIMEOUT (seconds), or read this rank alone with `advisor "
                                 "profile`")


def test_workers_that_die_before_reading_anything_stop_the_run_with_a_message(tmp_path, monkeypatch):
    monkeypatch.setattr(executors, "_worker_init", _dies_at_start)
    with pytest.raises(ClusterError, match=r"^the worker processes stopped before they read a rank, twice — "):
        run_map(_echo, ["a", "b", "c"], ExecutorChoice(name="processes", workers=2))


def test_worker_processes_that_cannot_start_are_one_line_and_auto_reads_in_this_process(monkeypatch):
    import errno
    import multiprocessing

    def no_fork(process):
        raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))

    monkeypatch.setattr(multiprocessing.get_context().Process, "_Popen", staticmethod(no_fork))
    with pytest.raises(ClusterError) as caught:
        run_map(_echo, ["a", "b"], ExecutorChoice(name="processes", workers=2))
    assert str(caught.value) == ("worker processes cannot start: Resource temporarily unavailable — free some memory "
                                 "or processes, or use --executor serial")
    monkeypatch.setattr(executors, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(executors, "MAX_WORKERS", 2)
    runtime._warned.clear()
    with pytest.warns(AdvisorWarning, match=r"^worker processes cannot start \(Resource temporarily unavailable\): "
                                            r"the ranks are read in this process$"):
        assert run_map(_echo, ["a", "b"], ExecutorChoice(), total_bytes=1) == ["a", "b"]


def test_a_bad_timeout_in_the_environment_warns_and_the_default_is_used(monkeypatch):
    for value in ("nan", "inf", "-1", "0", "1e400", "abc", "9" * 5000):
        monkeypatch.setenv("ADVISOR_RANK_TIMEOUT", value)
        runtime._warned.clear()
        with pytest.warns(AdvisorWarning, match=r"^ADVISOR_RANK_TIMEOUT=.* is not a number of seconds between 0 "
                                                r"and 86400: 1800 s is used instead$"):
            assert executors.rank_timeout() == executors.RANK_TIMEOUT_S
    monkeypatch.setenv("ADVISOR_RANK_TIMEOUT", " 2.5 ")
    assert executors.rank_timeout() == 2.5


# ------------------------------------------------------------------------------------------------
# Signals: SIGTERM / SIGHUP / Ctrl-C stop the map at once, kill the workers, leave no temporary file
# ------------------------------------------------------------------------------------------------

_SLOW_ADVISOR = textwrap.dedent('''
    import sys, time
    import opprof_advisor.cluster.job as job
    from opprof_advisor.cluster.summary import summarize_rank

    def slow(path):
        time.sleep(60)
        return summarize_rank(path)

    if __name__ == "__main__":
        job.summarize_rank = slow
        from opprof_advisor.cli.app import main
        sys.argv[0] = "advisor"
        main()
''')


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop_mid_map(tmp_path: Path, executor: str, send, processes: int) -> tuple[int, float, str, set[int], list]:
    """Run the slow advisor on a 4-rank job; once it has ``processes`` children, ``send(process)``; what was left."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    path, _ = _job(tmp_path, 4)
    script = tmp_path / "slow_advisor.py"
    script.write_text(_SLOW_ADVISOR)
    home = tmp_path / "home"
    env = {**os.environ, "ADVISOR_HOME": str(home), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, str(script), "profile", str(path), "--executor", executor],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while len(_descendants(process.pid)) < processes and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the workers are in the map now
        seen = _descendants(process.pid)
        started = time.monotonic()
        send(process)
        code = process.wait(timeout=10)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    time.sleep(0.2)
    left = {pid for pid in seen if _alive(pid)}
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    temporary = [p for p in home.rglob("*") if p.name.endswith(".tmp")] if home.exists() else []
    return code, took, process.stderr.read().decode(), left, temporary


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_a_process_map_stops_within_a_second_and_leaves_nothing(tmp_path, signum):
    code, took, stderr, left, temporary = _stop_mid_map(tmp_path, "processes", lambda p: p.send_signal(signum), 2)
    assert (code, stderr, left, temporary) == (128 + signum, "", set(), [])  # 143, 129, 130: as a shell reports
    assert took < 1.0


def test_ctrl_c_at_the_terminal_reaches_the_workers_too_and_none_of_them_prints(tmp_path):
    code, took, stderr, left, temporary = _stop_mid_map(
        tmp_path, "processes", lambda p: os.killpg(p.pid, signal.SIGINT), 2)
    assert (code, stderr, left, temporary) == (130, "", set(), [])
    assert took < 1.0


def test_a_signal_during_a_local_dask_map_stops_within_a_second_and_leaves_nothing(tmp_path):
    pytest.importorskip("distributed")
    code, took, stderr, left, temporary = _stop_mid_map(
        tmp_path, "dask", lambda p: os.killpg(p.pid, signal.SIGTERM), 3)  # the resource tracker, 2 workers
    assert (code, stderr, left, temporary) == (143, "", set(), [])
    assert took < 1.0


# ------------------------------------------------------------------------------------------------
# Dask: a scheduler that never answers or has no workers, workers that die, a busy dashboard port
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def mute_server():
    """A TCP server that accepts connections and never answers (tcp://127.0.0.1:PORT)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    server.close()


def test_a_scheduler_that_never_answers_is_a_timeout_with_a_message(tmp_path, runner, monkeypatch, mute_server):
    pytest.importorskip("distributed")
    path, _ = _job(tmp_path, 2)
    monkeypatch.setenv("ADVISOR_CLUSTER_TIMEOUT", "1")
    started = time.monotonic()
    result = runner.invoke(app, ["profile", str(path), "--scheduler", mute_server])
    assert time.monotonic() - started < 6
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith(f"error: cannot reach the Dask scheduler at {mute_server}: ")
    assert line.endswith(" — check the address (tcp://host:8786) and that the scheduler is running")


@pytest.fixture
def empty_scheduler(tmp_path):
    """A Dask scheduler with no workers, in a process of its own."""
    pytest.importorskip("distributed")
    file = tmp_path / "scheduler.json"
    process = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                "--port", "0", "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(file)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        yield json.loads(file.read_text())["address"]
    finally:
        process.kill()
        process.wait()


def test_a_scheduler_with_no_workers_is_a_timeout_with_a_message(tmp_path, runner, monkeypatch, empty_scheduler):
    path, _ = _job(tmp_path, 2)
    monkeypatch.setenv("ADVISOR_CLUSTER_TIMEOUT", "1")
    started = time.monotonic()
    result = runner.invoke(app, ["profile", str(path), "--scheduler", empty_scheduler])
    assert time.monotonic() - started < 6
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: the Dask scheduler at {empty_scheduler} has had no workers for 1 s (2 ranks not mapped) — start "
        f"workers (`dask worker {empty_scheduler}`), or raise ADVISOR_CLUSTER_TIMEOUT (seconds)"]


def test_a_local_dask_rank_whose_workers_die_each_time_is_named(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    items = [str(tmp_path / f"rank{i}") for i in range(2)]
    monkeypatch.setenv("H30_VICTIM", items[1])
    with pytest.raises(ClusterError) as caught:
        run_map(_dies_on_victim, items, ExecutorChoice(name="dask", workers=1))
    assert str(caught.value) == (
        f"{items[1]}: the Dask workers reading this rank died each time it was tried (killed, or out of memory): the "
        "run stops — see the workers' logs, read this rank alone with `advisor profile`, or use --executor processes")


def test_a_local_cluster_that_fails_to_start_is_tried_again_then_named(monkeypatch):
    pytest.importorskip("distributed")
    from opprof_advisor.cluster import dask_map

    starts = []

    class Failing:
        def __init__(self, **kwargs):
            starts.append(kwargs)

        def __await__(self):
            raise RuntimeError("Nanny failed to start.")
            yield  # noqa: unreachable - a generator, as __await__ must be

        async def close(self):
            return None

    monkeypatch.setattr(dask_map, "LocalCluster", Failing)
    with pytest.raises(ClusterError) as caught:
        run_map(_echo, ["a", "b"], ExecutorChoice(name="dask", workers=2))
    assert str(caught.value) == ("the local Dask cluster did not start, twice: Nanny failed to start. — see whether "
                                 "the system kills its workers (memory, process limits), or use --executor processes")
    # two tries, each on 127.0.0.1 only, its HTTP server on a free port (never a busy 8787), one retry per rank
    assert len(starts) == 2
    assert starts[0]["host"] == "127.0.0.1"
    assert starts[0]["scheduler_kwargs"] == {"dashboard_address": "127.0.0.1:0", "allowed_failures": 1}


def test_a_busy_dashboard_port_prints_nothing(capfd):
    pytest.importorskip("distributed")
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    except OSError:
        pass  # busy already: the case itself
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert run_map(_echo, ["a", "b"], ExecutorChoice(name="dask", workers=1)) == ["a", "b"]
    finally:
        holder.close()
    assert [str(w.message) for w in caught] == []
    assert capfd.readouterr() == ("", "")  # nor from the workers, nor Dask's log lines


def test_a_summary_of_another_kind_from_a_worker_is_refused_with_the_rank(tmp_path, monkeypatch):
    path, folders = _job(tmp_path, 2)
    monkeypatch.setattr(job, "summarize_rank", lambda name: {"schema": "opprof-advisor/rank-summary/1", "path": name})
    with pytest.raises(ClusterError) as caught:
        job.map_ranks([str(f) for f in folders], None, ExecutorChoice(name="serial"))
    assert str(caught.value) == (
        f"{folders[0]}: the worker that mapped this rank sent a summary of another kind (opprof-advisor/rank-summary/1; "
        f"this advisor reads {SCHEMA}) — install the same opprof-advisor on the Dask workers as here")


def test_a_scheduler_address_past_any_length_is_refused():
    with pytest.raises(ClusterError, match=r"^--scheduler takes an address such as tcp://host:8786, not 5000 "):
        ExecutorChoice(scheduler="a" * 5000)


# ------------------------------------------------------------------------------------------------
# The cache: a file that is not ours is never read through, replaced or removed
# ------------------------------------------------------------------------------------------------


def _cold(tmp_path, runner) -> tuple[Path, str, list[Path]]:
    path, _ = _job(tmp_path, 2)
    first = runner.invoke(app, ["profile", str(path), "--executor", "serial", "--format", "json"])
    assert first.exit_code == 0, first.output
    files = sorted(cache.cache_dir().rglob("*.parquet"))
    assert len(files) == 2
    return path, first.output, files


def _foreign_parquet(target: Path, metadata: dict[bytes, bytes]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1, 2]}).replace_schema_metadata(metadata), target)


def _state(target: Path):
    """What is at ``target``, to compare before and after: kind, bytes or link target."""
    if target.is_symlink():
        return "link", os.readlink(target)
    if target.is_dir():
        return "dir", sorted(os.listdir(target))
    if target.is_fifo():
        return "fifo", None
    return "file", hashlib.sha256(target.read_bytes()).hexdigest()


FOREIGN = {
    "parquet-with-list-metadata": lambda t, o: _foreign_parquet(t, {b"opprof_advisor.summary": b"[1, 2]"}),
    "parquet-with-dict-metadata": lambda t, o: _foreign_parquet(t, {b"opprof_advisor.summary": b'{"error": null}'}),
    "parquet-of-another-program": lambda t, o: _foreign_parquet(t, {b"pandas": b"{}"}),
    "random-bytes": lambda t, o: t.write_bytes(os.urandom(5000)),
    "directory": lambda t, o: t.mkdir(),
    "link-to-a-file-outside": lambda t, o: t.symlink_to(o),
    "fifo": lambda t, o: os.mkfifo(t),
}


@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_cache_file_that_is_not_ours_is_left_as_it_is_and_the_rank_read_again(tmp_path, runner, kind):
    path, cold, files = _cold(tmp_path, runner)
    outside = tmp_path / "precious.txt"
    outside.write_text("precious\n")
    target = files[0]
    target.unlink()
    FOREIGN[kind](target, outside)
    before = _state(target)
    mapped = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(job, "summarize_rank", lambda name: mapped.append(name) or summarize_rank(name))
        with pytest.warns(AdvisorWarning) as warned:
            again = runner.invoke(app, ["profile", str(path), "--executor", "serial", "--format", "json"])
    assert again.exit_code == 0, again.output
    assert again.output == cold
    assert len(mapped) == 1  # only the rank whose summary is not there
    assert _state(target) == before and outside.read_text() == "precious\n"
    assert [str(w.message) for w in warned] == [
        f"{target} is not a rank summary advisor wrote: it is left as it is, and this rank is read again on every "
        "run (move it away to cache the rank again)"]


def test_a_damaged_summary_of_ours_is_mapped_again_and_replaced(tmp_path, runner):
    import pyarrow.parquet as pq

    path, cold, files = _cold(tmp_path, runner)
    table = pq.read_table(files[0])
    meta = dict(table.schema.metadata)
    summary = json.loads(meta[b"opprof_advisor.summary"])
    summary["device_time_us"] = 1e300  # edited: the digest no longer matches
    meta[b"opprof_advisor.summary"] = json.dumps(summary).encode()
    pq.write_table(table.replace_schema_metadata(meta), files[0])
    assert cache.load(files[0].stem) is None
    again = runner.invoke(app, ["profile", str(path), "--executor", "serial", "--format", "json"])
    assert again.exit_code == 0 and again.output == cold
    assert cache.load(files[0].stem) is not None  # ours: rewritten whole


def test_pruning_never_removes_a_file_that_is_not_ours(tmp_path, runner, monkeypatch):
    _cold(tmp_path, runner)
    folder = cache.cache_dir() / "00"
    folder.mkdir(exist_ok=True)  # a summary of the job may land there too (its key starts 00 once in 256)
    theirs = folder / ("0" * 64 + ".parquet")
    _foreign_parquet(theirs, {b"pandas": b"{}"})
    os.utime(theirs, ns=(1, 1))  # the least recently used of all
    ours = cache.cache_dir() / "ff" / ("f" * 64 + ".parquet")
    ours.parent.mkdir(exist_ok=True)
    cache.store("f" * 64, {"schema": SCHEMA, "error": None, "ops": []})
    os.utime(ours, ns=(2, 2))
    monkeypatch.setenv("ADVISOR_CACHE_MB", "0")
    assert cache.prune(set()) == 3  # the job's two summaries and ours above
    assert theirs.exists() and not ours.exists()


def test_a_bad_cache_size_in_the_environment_warns_and_the_default_is_used(monkeypatch):
    for value in ("²", "9" * 5000, "-5", "1.5", "١٢"):
        monkeypatch.setenv("ADVISOR_CACHE_MB", value)
        runtime._warned.clear()
        with pytest.warns(AdvisorWarning, match=r"^ADVISOR_CACHE_MB=.* is not a whole number of MiB: the cache keeps "
                                                r"to 256 MiB$"):
            assert cache.limit_bytes() == 256 * 1024 ** 2


def test_a_sigterm_while_a_summary_is_written_leaves_no_temporary_file(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    real = pq.write_table

    def interrupted(table, where, **kwargs):
        real(table, where, **kwargs)
        raise runtime.Stopped(signal.SIGTERM)  # the handler raises here, after the C call returns

    monkeypatch.setattr(pq, "write_table", interrupted)
    with pytest.raises(runtime.Stopped):
        cache.store("a" * 64, {"schema": SCHEMA, "error": None, "ops": []})
    assert [p.name for p in cache.cache_dir().rglob("*")] == ["aa"]
