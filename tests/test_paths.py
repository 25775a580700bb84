"""The per-user folder without ADVISOR_HOME is the one platformdirs names, whether or not it is asked."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from platformdirs import user_data_dir

from opprof_advisor.core import paths


@pytest.mark.parametrize("env", [
    {"HOME": "/home/ada"}, {"HOME": "/home/ada/"}, {"HOME": "/root", "XDG_DATA_HOME": ""},
    {"HOME": "/home/ada", "XDG_DATA_HOME": "/data/xdg"}, {"HOME": "/home/ada", "XDG_DATA_HOME": "relative/xdg"},
    {"HOME": "/home/ada", "XDG_DATA_HOME": "   "},
])
def test_the_home_folder_is_platformdirs_own(env, monkeypatch):
    monkeypatch.delenv("ADVISOR_HOME", raising=False)
    for name in ("HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert paths.home_dir() == Path(user_data_dir("opprof-advisor", appauthor=False))


@pytest.mark.skipif(sys.platform != "linux", reason="the shortcut is taken on Linux only")
def test_the_common_linux_case_does_not_import_platformdirs(monkeypatch):
    monkeypatch.delenv("ADVISOR_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", "/home/ada")
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # importing it now raises ImportError
    assert paths.home_dir() == Path("/home/ada/.local/share/opprof-advisor")
