"""The entry point ends every run with one line or quietly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from opprof_advisor import commands
from opprof_advisor.cli.app import app

EXAMPLE = ROOT / "data" / "examples" / "yolov8_torch_npu"


def test_an_unexpected_exception_is_one_line(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(commands, "search", broken)
    with pytest.raises(SystemExit) as exit_:
        app(["search", "nms"])
    assert exit_.value.code == 1
    assert capsys.readouterr().err == ("error: internal error (RuntimeError: something\\nunexpected) — rerun with "
                                       "--debug and report it\n")


def test_ctrl_c_exits_130_quietly(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "search", interrupted)
    with pytest.raises(SystemExit) as exit_:
        app(["search", "nms"])
    assert exit_.value.code == 130
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
