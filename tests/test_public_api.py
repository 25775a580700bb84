"""The small public API of ``opprof_advisor``: a few names, imported only when used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import opprof_advisor

EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "examples" / "yolov8_torch_npu"


def test_the_public_names_are_the_documented_ones_whatever_was_imported_before():
    import importlib
    import pkgutil

    # Importing a submodule binds its name on the package: no public name may be a module's name.
    for module in pkgutil.walk_packages(opprof_advisor.__path__, "opprof_advisor."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    assert opprof_advisor.__all__ == ["__version__", "read_profile", "open_index", "search", "advise", "suggest",
                                      "open_advisor", "scan_path"]
    assert all(callable(getattr(opprof_advisor, name)) for name in opprof_advisor.__all__[1:])


def test_importing_the_package_loads_none_of_the_core():
    code = ("import sys, opprof_advisor; print(sorted(m for m in sys.modules if m.startswith('opprof_advisor.') "
            "or m.split('.')[0] in ('sklearn', 'sqlite_utils', 'rich', 'typer', 'pyarrow')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_open_advisor_ranks_a_profile_as_advisor_suggest_does(tmp_path):
    from opprof_advisor import open_advisor, read_profile

    advisor = open_advisor(tmp_path / "advisor.db")
    document = advisor.advise(read_profile(EXAMPLE), top=3)
    assert document["schema"] == "opprof-advisor/suggest/2"
    assert [r["id"] for r in document["suggestions"][0]["remedies"]] == ["nms-on-npu", "nms-single-cpu-call"]
    # the entry ranking `advisor scan` uses is there too
    result = advisor.suggest(read_profile(EXAMPLE), top=3)
    assert [s.entry.id for s in result.suggestions][:2] == ["nms-on-npu", "nms-single-cpu-call"]
    assert advisor.warnings == [] and advisor.outcomes == {}
