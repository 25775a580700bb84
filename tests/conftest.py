"""Shared fixtures: every test runs with its own ADVISOR_HOME, so no test touches a real home."""

from __future__ import annotations

import os
from pathlib import Path

# The suite pins what it reads from the environment before the package is imported (the consoles fix
# their width at import), so it passes in any terminal, locale and CI runner: COLUMNS=40 or 137, a tmux
# TERM, FORCE_COLOR or NO_COLOR exported, a Chinese locale.
for _name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "LINES", "LC_ALL", "LC_MESSAGES", "LANGUAGE",
              "ADVISOR_LANG", "ADVISOR_DEBUG", "ADVISOR_DB"):
    os.environ.pop(_name, None)
os.environ.update(COLUMNS="200", TERM="dumb", LANG="C.UTF-8")

import pytest
from typer.testing import CliRunner

from skip_summary import pytest_terminal_summary  # noqa: F401 - the skips as one line (see skip_summary.py)

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


@pytest.fixture(autouse=True)
def english_by_default(monkeypatch):
    """Tests read English unless they ask for Chinese: no locale or ADVISOR_LANG of the machine leaks in."""
    for name in ("ADVISOR_LANG", "LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        monkeypatch.delenv(name, raising=False)
    from opprof_advisor.core.i18n import set_lang

    set_lang("en")
    yield
    set_lang("en")
