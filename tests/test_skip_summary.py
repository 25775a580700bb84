"""The test command reports skips as one line with their reasons; README and CI run the same command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from skip_summary import skip_summary_line

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


class Report:
    def __init__(self, reason: str):
        self.longrepr = ("tests/test_x.py", 3, f"Skipped: {reason}")


def test_one_line_counts_the_skips_by_reason_most_frequent_first():
    reports = [Report("../shared/real-profiles is not beside the project")] * 3 + [Report("needs root")]
    assert skip_summary_line(reports) == \
        "skipped 4: ../shared/real-profiles is not beside the project (3); needs root (1)"
    assert skip_summary_line([]) is None
    many = [Report(f"reason {n}") for n in range(6)]
    assert skip_summary_line(many).endswith("; and 2 more reason(s) (-rs lists every skipped test)")


def test_a_run_with_skips_prints_one_summary_line_and_no_skipped_lines(tmp_path):
    (tmp_path / "conftest.py").write_text("from skip_summary import pytest_terminal_summary  # noqa: F401\n")
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', range(5))\n"
        "def test_needs_shared(n):\n    pytest.skip('../shared/real-profiles is not beside the project')\n\n"
        "def test_passes():\n    assert 1 + 1 == 2\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -rfEX\n")  # as pyproject.toml's addopts
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert not [line for line in lines if line.startswith("SKIPPED")]
    assert [line for line in lines if line.startswith("skipped ")] == [
        "skipped 5: ../shared/real-profiles is not beside the project (5)"]


def test_the_project_asks_pytest_for_failures_only_in_the_short_summary():
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["addopts"] == "-rfEX"


def test_the_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    development = (ROOT / "docs" / "development.md").read_text()
    command = "python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && .venv/bin/python -m pytest -q"
    assert command in readme and command in development  # the quick start and the development page
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in ci
