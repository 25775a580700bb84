"""Shared fixtures: every test runs with its own ADVISOR_HOME, so no test touches a real home."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REAL_PROFILES = SHARED / "real-profiles"


@pytest.fixture(autouse=True)
def advisor_home(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("advisor-home")
    monkeypatch.setenv("ADVISOR_HOME", str(home))
    monkeypatch.delenv("ADVISOR_DB", raising=False)
    monkeypatch.delenv("ADVISOR_DEBUG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return home


@pytest.fixture
def runner() -> CliRunner:
    """A CliRunner with a wide terminal so Rich does not wrap what tests assert on."""
    return CliRunner(env={"COLUMNS": "200", "TERM": "dumb"})


@pytest.fixture
def real_profiles() -> Path:
    """The real profiler outputs in ../shared/real-profiles (read in place, never copied)."""
    if not REAL_PROFILES.is_dir():
        pytest.skip("../shared/real-profiles is not beside the project")
    return REAL_PROFILES
