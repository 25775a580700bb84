"""What the commands people run most (`suggest`, `profile`, `search`) import: none of the heavy libraries their
plain forms have no use for.

scikit-learn alone is ~0.7 s of imports: a plain `suggest` reads the fitted matcher from its JSON cache. A kernel
table is read with pyarrow whatever its size (one CSV reader, issue 27), so the commands that read a profile import
pyarrow and numpy (~80 ms); `search` does not. Measured in a fresh interpreter, with the index and the fitted
matcher already cached, as a user's second command finds them. The start-up itself is measured against its target
(0.5 s) by benchmarks/bench_suggest.py, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

EXAMPLE = str(ROOT / "data" / "examples" / "yolov8_torch_npu")

#: Never on these paths: the matcher's fitting, the columnar engines, the build-time parsers, Dask, pandas.
NEVER = {"sklearn", "scipy", "numpy", "pyarrow", "polars", "sqlite_utils", "yaml", "markdown_it", "mdit_py_plugins",
         "dask", "pandas"}
#: Of the rest, only search's fuzzy matcher.
ONLY = {"suggest": set(), "profile": set(), "search": {"rapidfuzz"}}
#: What reading a profile's kernel table takes (readers/arrowcsv.py).
READS_PROFILE = {"numpy", "pyarrow"}
TAKES = {"suggest": READS_PROFILE, "profile": READS_PROFILE, "search": set()}
FUZZY = {"rapidfuzz"}

_PROBE = """
import contextlib, io, json, sys
before = set(sys.modules)
from opprof_advisor.cli.app import app
code = 0
with contextlib.redirect_stdout(io.StringIO()):
    try:
        app(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code or 0
print(json.dumps({"code": code, "modules": sorted(set(sys.modules) - before)}))
"""

COMMANDS = {"suggest": ["suggest", "--profile", EXAMPLE], "profile": ["profile", EXAMPLE], "search": ["search", "nms"]}


def imported(argv: list[str], home, *, as_home: bool = False) -> set[str]:
    """The modules ``argv`` imports with ADVISOR_HOME ``home`` (``as_home``: no ADVISOR_HOME, $HOME ``home``)."""
    env = {**os.environ, "ADVISOR_HOME": str(home)}
    if as_home:
        env = {**{k: v for k, v in os.environ.items() if k not in ("ADVISOR_HOME", "XDG_DATA_HOME")}, "HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["code"] == 0, done.stderr
    return set(report["modules"])


@pytest.fixture(scope="module")
def warm_home(tmp_path_factory):
    """One home for the module, with the index built and the matcher fitted by a first suggest."""
    home = tmp_path_factory.mktemp("budget-home")
    imported(COMMANDS["suggest"], home)
    return home


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_heavy_library_is_imported(name, warm_home):
    tops = {module.split(".")[0] for module in imported(COMMANDS[name], warm_home)}
    assert not tops & (NEVER - TAKES[name]), sorted(tops & (NEVER - TAKES[name]))
    assert tops & FUZZY <= ONLY[name]


def test_without_advisor_home_the_folder_is_found_without_platformdirs(tmp_path):
    # most users set no ADVISOR_HOME: the index is then under ~/.local/share, found without platformdirs
    modules = imported(COMMANDS["search"], tmp_path, as_home=True)
    assert (tmp_path / ".local" / "share" / "opprof-advisor" / "advisor.db").is_file()
    assert "platformdirs" not in {module.split(".")[0] for module in modules}
