"""`advisor collect`: finding the profiler, the exact documented command line, output, failures.

The real `msprof op` needs an Ascend NPU; these tests put the stand-in of tests/standin/ first on
PATH (see its docstring: it exists only for tests). It records the argv it receives and writes a
recorded OPPROF_* folder with opprof_advisor.testing.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from opprof_advisor.loop import collect
from opprof_advisor.cli.app import app
from opprof_advisor.core.errors import ToolNotFound

STANDIN = Path(__file__).resolve().parent / "standin" / "opprof_standin.py"


def _executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


class Standin:
    """A stand-in profiler named ``msprof`` or ``msopprof`` first on PATH, and what it saw."""

    def __init__(self, root: Path, name: str):
        self.bin = root / "standin-bin"
        self.bin.mkdir()
        self.argv_file = root / "standin-argv.jsonl"
        self.path = _executable(
            self.bin / name,
            f"#!{sys.executable}\nimport runpy\n"
            f"runpy.run_path({str(STANDIN)!r}, init_globals={{'PROG': {name!r}}}, run_name='__main__')\n",
        )

    def calls(self) -> list[list[str]]:
        if not self.argv_file.exists():
            return []
        return [json.loads(line)["argv"] for line in self.argv_file.read_text().splitlines()]


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A project folder holding ./my_operator, as the current directory, with no CANN around."""
    work = tmp_path / "work"
    work.mkdir()
    _executable(work / "my_operator", "#!/bin/sh\nexit 0\n")
    monkeypatch.chdir(work)
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setattr(collect, "DEFAULT_ROOTS", ())
    return work


def _install(tmp_path, monkeypatch, name: str) -> Standin:
    standin = Standin(tmp_path, name)
    monkeypatch.setenv("PATH", f"{standin.bin}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(tmp_path / "toolkit"))  # as set_env.sh does
    monkeypatch.setenv("STANDIN_ARGV_FILE", str(standin.argv_file))
    return standin


@pytest.fixture
def msprof(tmp_path, monkeypatch, workdir) -> Standin:
    return _install(tmp_path, monkeypatch, "msprof")


def _opprof_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if collect.OPPROF_DIR.match(p.name))


def test_device_mode_passes_exactly_the_documented_msprof_op_arguments(runner, msprof, workdir):
    result = runner.invoke(app, [
        "collect", "--output", "out", "--aic-metrics", "PipeUtilization,Memory", "--kernel-name", "add_custom",
        "--launch-count", "1", "--no-suggest", "--", "./my_operator", "1024", "--batch=4",
    ])
    assert result.exit_code == 0, result.output
    out = (workdir / "out").resolve()
    assert msprof.calls() == [[
        "op", f"--output={out}", "--aic-metrics=PipeUtilization,Memory", "--kernel-name=add_custom",
        "--launch-count=1", "./my_operator", "1024", "--batch=4",
    ]]
    [produced] = _opprof_dirs(out)
    assert (produced / "OpBasicInfo.csv").read_text().startswith("Op Name,Op Type,Task Duration(us),")
    assert str(produced) in result.stdout  # --no-suggest prints the folder for scripts
    assert "[INFO] Kernel launched" in result.output  # the profiler's output is streamed


def test_simulator_mode_runs_msprof_op_simulator_with_defaults(runner, msprof, workdir):
    result = runner.invoke(app, ["collect", "--mode", "simulator", "--no-suggest", "--", "./my_operator"])
    assert result.exit_code == 0, result.output
    assert msprof.calls() == [["op", "simulator", f"--output={workdir.resolve()}", "./my_operator"]]
    [produced] = _opprof_dirs(workdir)
    assert (produced / "simulator").is_dir()


def test_msopprof_binary_takes_the_same_options_without_op(runner, tmp_path, monkeypatch, workdir):
    standin = _install(tmp_path, monkeypatch, "msopprof")
    result = runner.invoke(app, ["collect", "--mode", "simulator", "--soc-version", "Ascend910B1", "--no-suggest",
                                 "--", "./my_operator"])
    assert result.exit_code == 0, result.output
    assert standin.calls() == [["simulator", f"--output={workdir.resolve()}", "--soc-version=Ascend910B1",
                                "./my_operator"]]


def test_a_second_collect_picks_the_new_folder_not_the_old_one(runner, msprof, workdir):
    first = runner.invoke(app, ["collect", "--no-suggest", "--", "./my_operator"])
    second = runner.invoke(app, ["collect", "--no-suggest", "--", "./my_operator"])
    assert first.exit_code == second.exit_code == 0
    dirs = _opprof_dirs(workdir)
    assert len(dirs) == 2
    assert first.stdout.strip() != second.stdout.strip()
    assert {first.stdout.strip(), second.stdout.strip()} == {str(d) for d in dirs}


def test_missing_profiler_is_one_line_saying_what_to_source(runner, tmp_path, monkeypatch, workdir):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = runner.invoke(app, ["collect", "--", "./my_operator"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: no operator profiler found (msprof / msopprof) — install the CANN toolkit")
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in lines[0]
    assert "Traceback" not in result.output


def test_msprof_without_the_toolkit_environment_says_to_source_set_env(runner, msprof, monkeypatch, workdir):
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME")
    result = runner.invoke(app, ["collect", "--", "./my_operator"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"error: {msprof.path} is on PATH but ASCEND_TOOLKIT_HOME is not set, so `msprof op` cannot find msopprof"
        " — run `source /usr/local/Ascend/ascend-toolkit/set_env.sh` (or the set_env.sh of your CANN install)"
    )
    assert msprof.calls() == []


def test_profiler_failure_shows_its_last_lines_and_exit_code(runner, msprof, monkeypatch, workdir):
    monkeypatch.setenv("STANDIN_EXIT_CODE", "3")
    result = runner.invoke(app, ["collect", "--", "./my_operator"])
    assert result.exit_code == 1
    err = result.stderr.splitlines()
    assert "--- last 4 line(s) of msprof (exit code 3) ---" in err
    tail = err[err.index("--- last 4 line(s) of msprof (exit code 3) ---") + 1:]
    assert tail[:4] == [
        "[INFO] Start profiling ./my_operator (device)",
        "[INFO] Kernel launched",
        "[ERROR] Operator profiling failed: device 0 is busy",
        "[ERROR] Profiling data is not generated",
    ]
    assert err[-1].startswith("error: msprof exited with code 3")
    assert _opprof_dirs(workdir) == []


def test_missing_application_names_the_path(runner, msprof, workdir):
    result = runner.invoke(app, ["collect", "--", "./no_such_operator"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: ./no_such_operator: application not found — check the path of the program to profile"
    )
    assert msprof.calls() == []  # the profiler was not started


def test_without_application_is_a_usage_error(runner, msprof):
    result = runner.invoke(app, ["collect", "--no-suggest"])
    assert result.exit_code == 2


def test_profiler_found_under_the_cann_toolkit_layout(tmp_path):
    root = tmp_path / "ascend-toolkit" / "latest"
    worker = root / "tools" / "msopprof" / "bin" / "msopprof"
    worker.parent.mkdir(parents=True)
    _executable(worker, "#!/bin/sh\n")
    env = {"PATH": str(tmp_path / "nothing"), "ASCEND_HOME_PATH": str(root)}
    assert collect.find_profiler(env, roots=()) == collect.Profiler("msopprof", str(worker))


def test_cann_8_layout_and_default_roots_are_searched(tmp_path):
    root = tmp_path / "cann8"
    worker = root / "tools" / "msopt" / "bin" / "msopprof"
    worker.parent.mkdir(parents=True)
    _executable(worker, "#!/bin/sh\n")
    found = collect.find_profiler({"PATH": ""}, roots=[str(root)])
    assert found == collect.Profiler("msopprof", str(worker))
    with pytest.raises(ToolNotFound):
        collect.find_profiler({"PATH": ""}, roots=[str(tmp_path / "elsewhere")])


def test_msprof_on_path_wins_over_a_toolkit_root(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = _executable(bin_dir / "msprof", "#!/bin/sh\n")
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    _executable(root / "bin" / "msopprof", "#!/bin/sh\n")
    env = {"PATH": str(bin_dir), "ASCEND_HOME_PATH": str(root), "ASCEND_TOOLKIT_HOME": str(root)}
    assert collect.find_profiler(env, roots=()) == collect.Profiler("msprof", str(launcher))
    # without the toolkit environment the launcher cannot work: the worker binary is used instead
    del env["ASCEND_TOOLKIT_HOME"]
    assert collect.find_profiler(env, roots=()) == collect.Profiler("msopprof", str(root / "bin" / "msopprof"))


def test_collect_then_suggest_prints_advice_for_the_new_folder(runner, msprof, monkeypatch, workdir):
    pytest.importorskip("opprof_advisor.readers.msopprof_device")
    pytest.importorskip("opprof_advisor.advice.recommend")
    result = runner.invoke(app, ["collect", "--", "./my_operator"])
    assert result.exit_code == 0, result.output
    [produced] = _opprof_dirs(workdir)
    assert f"profile written to {produced}" in result.stderr
    # The stand-in's MatMul kernel has its slowest block 8x its fastest, but its bytes already move at the HBM
    # roof: balancing the blocks cannot make it faster, so the advice is the roof's (move fewer bytes), and
    # advice about using the cores better is not listed under it.
    advice = result.stdout
    assert "Near the roof (MatMulV3 at" in advice and "(mte2-bound-kernels, recipe)" in advice
    assert "per-block-imbalance" not in advice
    assert f"{produced}  msopprof-device" in advice  # the advice is about the new folder


# --------------------------------------------------------------------------------------------
# A profiler that hangs, leaves helpers behind, or outlives advisor: stopped, never waited for
# --------------------------------------------------------------------------------------------


def _alive(pid: int, grace: float = 3.0) -> bool:
    """True when ``pid`` still runs ``grace`` seconds from now (a signal takes a moment to land)."""
    import time

    deadline = time.monotonic() + grace
    while True:
        try:
            os.kill(pid, 0)
            status = Path(f"/proc/{pid}/stat").read_text()
        except (ProcessLookupError, FileNotFoundError):
            return False
        if status.rsplit(")", 1)[1].split()[0] == "Z":
            return False  # a zombie is dead for our purposes (its new parent has not reaped it yet)
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)


def _pid_from(path: Path, timeout: float = 10.0) -> int:
    import time

    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, "the stand-in never started"
        time.sleep(0.05)
    return int(path.read_text())


def _fake_profiler(tmp_path, monkeypatch, script: str) -> Path:
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    _executable(folder / "msopprof", "#!/bin/sh\n" + script)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return folder


def test_the_cli_default_timeout_is_the_core_default():
    import inspect

    from opprof_advisor.cli.loop_commands import collect_command

    assert inspect.signature(collect_command).parameters["timeout"].default == collect.DEFAULT_TIMEOUT_S


def test_a_hung_profiler_is_stopped_at_the_timeout_with_what_it_started(runner, tmp_path, monkeypatch, workdir):
    import time

    pids = tmp_path / "pids"
    _fake_profiler(tmp_path, monkeypatch, f"echo working\n(sleep 600) & echo $! > {pids}\nsleep 600\n")
    started = time.monotonic()
    result = runner.invoke(app, ["collect", "--timeout", "1", "--", "./my_operator"])
    assert time.monotonic() - started < 10
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == ("error: msopprof did not finish within 1 s; it was stopped, with what "
                                              "it started — raise --timeout (0 = no limit), or see its last lines "
                                              "above for what it waits for")
    assert "--- last 1 line(s) of msopprof (stopped after 1 s) ---" in result.stderr
    assert not _alive(_pid_from(pids))


def test_a_helper_left_holding_the_output_is_not_waited_for(runner, tmp_path, monkeypatch, workdir):
    import time

    pids = tmp_path / "pids"
    _fake_profiler(tmp_path, monkeypatch, f"(sleep 30) &\necho $! > {pids}\nexit 0\n")
    started = time.monotonic()
    result = runner.invoke(app, ["collect", "--", "./my_operator"])
    assert time.monotonic() - started < 5
    assert "finished but wrote no OPPROF_* folder" in result.stderr
    assert not _alive(_pid_from(pids))


def test_a_profiler_that_ignores_sigterm_is_killed(tmp_path, monkeypatch):
    import time

    monkeypatch.setattr(collect, "KILL_GRACE_S", 0.5)
    script = _executable(tmp_path / "stubborn", "#!/bin/sh\ntrap '' TERM\necho $$ > pid\nwhile :; do sleep 1; done\n")
    started = time.monotonic()
    with pytest.raises(collect.ProfilerTimedOut):
        collect.run_profiler([str(script)], cwd=tmp_path, timeout=1)
    assert time.monotonic() - started < 5
    assert not _alive(_pid_from(tmp_path / "pid"))


@pytest.mark.parametrize("signum, code", [(15, 143), (2, 130), (1, 129)])
def test_a_signal_to_advisor_stops_the_profiler_too(tmp_path, workdir, signum, code):
    import subprocess
    import time

    from conftest import ROOT

    pids = tmp_path / "pids"
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    _executable(folder / "msopprof", f"#!/bin/sh\necho $$ > {pids}\nsleep 600\n")
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    process = subprocess.Popen([sys.executable, "-m", "opprof_advisor", "collect", "--", "./my_operator"],
                               cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # like a batch scheduler's kill of one pid
    profiler = _pid_from(pids)
    process.send_signal(signum)
    started = time.monotonic()
    out, err = process.communicate(timeout=20)
    assert time.monotonic() - started < 10
    assert process.returncode == code, err
    assert err.splitlines()[-1].startswith(f"error: stopped by SIG")
    assert not _alive(profiler)


def test_a_line_without_end_is_passed_on_in_pieces():
    pieces = []
    rest = collect._emit_lines("a\r\nb\n" + "x" * (collect.MAX_LINE_CHARS * 2 + 5), pieces.append)
    assert pieces == ["a", "b", "x" * collect.MAX_LINE_CHARS, "x" * collect.MAX_LINE_CHARS]
    assert rest == "xxxxx"
