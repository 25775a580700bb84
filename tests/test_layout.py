"""The shape of the package: which layer may import typer and rich, and every file saying its job."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "opprof_advisor"


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def importers(library: str) -> set[str]:
    """The package-relative folders/files of every module importing ``library`` (at any indentation)."""
    pattern = re.compile(rf"^\s*(?:import {library}\b|from {library}(?:\.| import))", re.M)
    return {path.relative_to(PACKAGE).as_posix() for path in modules() if pattern.search(path.read_text("utf-8"))}


def test_only_the_cli_imports_typer():
    found = importers("typer")
    assert found and all(name.startswith("cli/") for name in found), sorted(found)


def test_only_the_cli_and_the_renderers_import_rich():
    found = importers("rich")
    assert found and all(name.startswith(("cli/", "render/")) for name in found), sorted(found)


def test_the_cli_package_itself_imports_nothing():
    import ast

    body = ast.parse((PACKAGE / "cli" / "__init__.py").read_text("utf-8")).body
    assert [type(node).__name__ for node in body] == ["Expr"]  # the docstring only


def test_every_file_opens_with_a_line_that_says_its_job():
    silent = []
    for path in modules():
        first = path.read_text("utf-8").split("\n", 1)[0]
        words = first.strip('"').strip()
        if not first.startswith('"""') or len(words.split()) < 4:
            silent.append(path.relative_to(PACKAGE).as_posix())
    assert silent == []


def test_no_module_is_longer_than_a_newcomer_can_hold_in_mind():
    long = {path.relative_to(PACKAGE).as_posix(): n for path in modules()
            if (n := len(path.read_text("utf-8").splitlines())) > 650}
    assert long == {}


#: What a renderer may import besides render/ itself: words, the safe-output rules, errors, the schema ids.
RENDER_MAY_IMPORT = {"opprof_advisor", "opprof_advisor.core.vocabulary", "opprof_advisor.core.cann_support",
                     "opprof_advisor.core.errors", "opprof_advisor.core.terminal", "opprof_advisor.core.outputs",
                     "opprof_advisor.core.documents", "opprof_advisor.core.units", "opprof_advisor.core.i18n"}


def test_the_renderers_compute_nothing_they_import_no_core_logic():
    pattern = re.compile(r"^\s*(?:from (opprof_advisor[\w.]*) import|import (opprof_advisor[\w.]*))", re.M)
    found = {name for path in (PACKAGE / "render").rglob("*.py") for pair in pattern.findall(path.read_text("utf-8"))
             for name in pair if name and not name.startswith("opprof_advisor.render")}
    assert "opprof_advisor.core.vocabulary" in found and found <= RENDER_MAY_IMPORT, sorted(found - RENDER_MAY_IMPORT)

