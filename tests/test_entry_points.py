"""Both entry points (the Typer app and the Typer-free fast path) end every run with one line or quietly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from opprof_advisor.cli import fast_commands, fast_path

EXAMPLE = ROOT / "data" / "examples" / "yolov8_torch_npu"


def test_the_fast_path_turns_an_unexpected_exception_into_one_line(monkeypatch, capsys):
    def broken(options):
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(fast_commands, "run_search", broken)
    assert fast_path.run(["search", "nms"]) == 1
    captured = capsys.readouterr()
    assert captured.err == ("error: internal error (RuntimeError: something\\nunexpected) — rerun with --debug "
                            "and report it\n")


def test_the_fast_path_exits_130_on_ctrl_c(monkeypatch, capsys):
    def interrupted(options):
        raise KeyboardInterrupt

    monkeypatch.setattr(fast_commands, "run_search", interrupted)
    assert fast_path.run(["search", "nms"]) == 130
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("args", [
    ["profile", str(EXAMPLE)], ["suggest", "--profile", str(EXAMPLE)], ["kb", "list"], ["search", "nms"],
    ["profile", str(EXAMPLE), "--format", "json"], ["suggest", "--profile", str(EXAMPLE), "--format", "markdown"],
])
def test_a_reader_that_stops_early_is_not_a_failure(args, advisor_home):
    # `advisor ... | head -1` under `set -o pipefail`: the reader has what it wanted.
    command = f"set -o pipefail; {sys.executable} -m opprof_advisor {' '.join(map(repr, args))} | head -c 1 >/dev/null"
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
