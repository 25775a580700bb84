"""The import budget of the commands people run most: what a plain `suggest`, `search` and `profile` may import.

Start-up is most of these commands' time (Typer and the pydantic it converts parameters with were
~0.2 s of a 0.45 s suggest; scikit-learn alone is ~0.7 s), so a module joining the list below is
a decision, not an accident. Measured in a fresh interpreter, with the index and the fitted
matcher already cached, as a user's second command finds them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

EXAMPLE = str(ROOT / "data" / "examples" / "yolov8_torch_npu")

#: Third-party packages (top-level names) each command may import; the standard library is free. The
#: probe's stdout is not a terminal, so the tables are written as plain lines (render/plain.py): no Rich.
THIRD_PARTY = {
    "suggest": set(),
    "profile": set(),
    "search": {"rapidfuzz"},
}

#: Never on these paths: the CLI framework, the matcher's fitting, the build-time parsers, columnar engines,
#: and Rich (~25 ms), which only a terminal needs.
NEVER = {"typer", "click", "pydantic", "pydantic_core", "sklearn", "scipy", "numpy", "pyarrow", "polars",
         "sqlite_utils", "yaml", "markdown_it", "mdit_py_plugins", "filelock", "platformdirs", "dask", "pandas",
         "rich"}

#: Standard-library modules a plain suggest, search or profile has no use for, each a few ms to import:
#: archives are extracted only for an archive, statistics only for recorded outcomes or ranks.
#: dataclasses (with inspect, ast, dis and tokenize behind it, plus an exec per method of every class: ~15 ms of
#: a suggest) is replaced by opprof_advisor/core/records.py on these paths.
NEVER_STDLIB = {"tarfile", "zipfile", "shutil", "tempfile", "bz2", "lzma", "statistics", "fractions", "decimal",
                "concurrent", "logging", "subprocess", "dataclasses", "inspect", "ast", "dis", "tokenize"}
#: Built only for Typer: the str Enums of the choice options.
NEVER_OURS = {"opprof_advisor.cli.choices", "opprof_advisor.cli.app", "opprof_advisor.cli._common"}

#: The readers a plain `suggest` of a torch_npu folder imports: the format is told by names (readers/layouts.py),
#: so the msOpProf, SQLite, timeline, multi-rank and cluster readers stay unloaded (~10 ms of imports).
SUGGEST_READERS = {
    "opprof_advisor.readers", "opprof_advisor.readers.archive", "opprof_advisor.readers.arrowcsv",
    "opprof_advisor.readers.base", "opprof_advisor.readers.chips", "opprof_advisor.readers.columns",
    "opprof_advisor.readers.csvfile", "opprof_advisor.readers.layouts", "opprof_advisor.readers.msprof_text",
    "opprof_advisor.readers.sidefile", "opprof_advisor.readers.torch_npu_text",
}

#: Our modules a plain `suggest` imports.
SUGGEST_MODULES = SUGGEST_READERS | {
    "opprof_advisor", "opprof_advisor.advice.advisor", "opprof_advisor.cli", "opprof_advisor.cli.fast_commands",
    "opprof_advisor.cli.fast_path", "opprof_advisor.cli.options", "opprof_advisor.cli.output",
    "opprof_advisor.cluster", "opprof_advisor.cluster.executors",
    "opprof_advisor.commands.documents", "opprof_advisor.core.errors", "opprof_advisor.profile.families",
    "opprof_advisor.core.i18n", "opprof_advisor.kb", "opprof_advisor.core.kernel_frame", "opprof_advisor.advice.matcher",
    "opprof_advisor.kb.migrations", "opprof_advisor.core.models", "opprof_advisor.core.operators",
    "opprof_advisor.advice.outcomes_store", "opprof_advisor.core.paths",
    "opprof_advisor.profile", "opprof_advisor.profile.builder", "opprof_advisor.profiles",
    # the findings, their gain models and the remedies under them (advice/)
    "opprof_advisor.advice", "opprof_advisor.advice.context", "opprof_advisor.advice.finding",
    "opprof_advisor.advice.remedies", "opprof_advisor.advice.rules_kernel", "opprof_advisor.advice.rules_run",
    "opprof_advisor.advice.suggest",
    "opprof_advisor.commands",  # one function per command, shared with the MCP server
    "opprof_advisor.core",
    "opprof_advisor.render", "opprof_advisor.render.console", "opprof_advisor.render.phrases",
    "opprof_advisor.core.records",  # the data classes' base, instead of dataclasses
    "opprof_advisor.render.plain", "opprof_advisor.render.text.styled",  # the tables without Rich
    "opprof_advisor.render.text", "opprof_advisor.render.text.suggest", "opprof_advisor.render.units",
    "opprof_advisor.render.text.fit",  # the advice table's widths at any terminal width (stdlib only)
    "opprof_advisor.advice.requirements", "opprof_advisor.profile.roofline", "opprof_advisor.profile.roofline_work",
    "opprof_advisor.advice.similar_cases", "opprof_advisor.core.sqlite_files", "opprof_advisor.core.steps", "opprof_advisor.kb.store",
    "opprof_advisor.symptoms", "opprof_advisor.symptoms.kernels", "opprof_advisor.core.terminal",
    "opprof_advisor.core.thresholds", "opprof_advisor.core.vocabulary",
}

_PROBE = """
import contextlib, io, json, sys
before = set(sys.modules)
from opprof_advisor.cli.fast_path import run
with contextlib.redirect_stdout(io.StringIO()):
    code = run(sys.argv[1:])
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
def test_only_the_budgeted_packages_are_imported(name, warm_home):
    modules = imported(COMMANDS[name], warm_home)
    ours = {module.split(".")[0] for module in modules} - set(sys.stdlib_module_names) - {"opprof_advisor"}
    ours = {module for module in ours if not module.startswith(("_cython", "cython_runtime"))}  # rapidfuzz's
    assert ours <= THIRD_PARTY[name], sorted(ours - THIRD_PARTY[name])
    assert not ours & NEVER
    assert not {module.split(".")[0] for module in modules} & NEVER_STDLIB
    assert not modules & NEVER_OURS


def test_a_plain_suggest_imports_only_the_listed_modules(warm_home):
    modules = {module for module in imported(COMMANDS["suggest"], warm_home) if module.startswith("opprof_advisor")}
    assert modules == SUGGEST_MODULES, (sorted(modules - SUGGEST_MODULES), sorted(SUGGEST_MODULES - modules))


def test_without_advisor_home_the_folder_is_found_without_platformdirs(tmp_path):
    # most users set no ADVISOR_HOME: the index is then under ~/.local/share, found without platformdirs
    modules = imported(COMMANDS["search"], tmp_path, as_home=True)
    assert (tmp_path / ".local" / "share" / "opprof-advisor" / "advisor.db").is_file()
    assert "platformdirs" not in {module.split(".")[0] for module in modules}


def test_a_plain_search_builds_no_model_and_no_profile_code(warm_home):
    # search reads the summaries the build wrote: the readers, the recommender and the matcher are not its
    # business (the Entry model comes with the kb package, a few ms within the 0.3 s target)
    modules = imported(COMMANDS["search"], warm_home)
    assert not {"opprof_advisor.advice.recommend", "opprof_advisor.readers", "opprof_advisor.advice.matcher"} & modules
    # its hits, results and KB source records are NamedTuples / slotted classes: no dataclasses (with inspect,
    # ast and dis behind it, ~15 ms of a 0.1 s search)
    assert not {"dataclasses", "inspect"} & modules
