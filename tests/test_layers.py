"""The house rules of ../shared/ARCHITECTURE.md, as an AST pass over the package: stages import one way, no
cycles, few function-level imports.

Every module has a layer: its package's, or for the three modules left at the package root (``ROOT_MODULES``:
the public API and ``profiles``) their own. A module imports only from its own layer or lower ones. What
breaks a rule today is listed (``ALLOWED_UPWARD``, ``ALLOWED_CYCLES``, ``FUNCTION_LEVEL_IMPORTS``); each list may
only shrink: a new violation fails, and so does a listed one that is gone (take it off the list). Imports inside
functions and under ``if TYPE_CHECKING`` count like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "opprof_advisor"

#: The one-way order (ARCHITECTURE.md): a module imports only from layers at or below its own.
LAYERS = {"core": 0, "readers": 1, "kb": 1, "render": 1, "profile": 2, "symptoms": 3, "cluster": 4, "profiles": 5,
          "loop": 5, "advice": 6, "scan": 7, "commands": 8, "cli": 9, "mcp": 9, "api": 10, "testing": 10}

#: Packages that exist today, and the layer of each root module: the package it moves to.
PACKAGES = {"core": "core", "readers": "readers", "kb": "kb", "render": "render", "profile": "profile", "symptoms": "symptoms",
            "cluster": "cluster", "loop": "loop", "advice": "advice", "scan": "scan", "commands": "commands",
            "cli": "cli", "mcp": "mcp", "testing": "testing"}
ROOT_MODULES = {"profiles": "profiles", "__init__": "api", "__main__": "api"}

#: Imports against the order today (importer, imported): may only shrink.
ALLOWED_UPWARD: set[tuple[str, str]] = set()

#: Import cycles today (each a set of modules): may only shrink.
ALLOWED_CYCLES: list[set[str]] = []

#: Imports inside functions today (the target is under 60, each for an optional or heavy dependency).
FUNCTION_LEVEL_IMPORTS = 50


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)
        found[name] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports() -> tuple[dict[str, set[str]], int]:
    """Module -> the package modules it imports (at any depth, TYPE_CHECKING included); imports inside functions."""
    known = modules()
    graph: dict[str, set[str]] = {}
    in_functions = 0
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = ["opprof_advisor", *package.split(".")] if package else ["opprof_advisor"]
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                # ``from pkg import sub`` imports the module ``pkg.sub``; ``from pkg import name`` reads ``pkg``
                subs = [f"{base}.{alias.name}" for alias in node.names]
                in_package = [s for s in subs if s.startswith("opprof_advisor.") and s[len("opprof_advisor."):] in known]
                wanted = in_package + ([base] if len(in_package) < len(subs) else [])
            else:
                continue
            for target in wanted:
                if target.startswith("opprof_advisor."):
                    found = _resolve(target[len("opprof_advisor."):], known)
                    if found and found != name:
                        targets.add(found)
                        targets.update(_packages_run_first(found, name, known))
        graph[name] = targets
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                in_functions += sum(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(function)
                                    if n is not function)
    return graph, in_functions


def _packages_run_first(target: str, importer: str, known: dict[str, Path]) -> list[str]:
    """The packages whose ``__init__`` Python runs to import ``target`` from ``importer``: every package above
    ``target`` that is not also above (or equal to) ``importer``, whose own package is initialised already."""
    parts = target.split(".")
    mine = importer.split(".")
    return [package for size in range(1, len(parts)) if (package := ".".join(parts[:size])) in known
            and mine[:size] != parts[:size]]


def layer_of(module: str) -> str:
    head = module.split(".")[0]
    return PACKAGES.get(head) or ROOT_MODULES[head]


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in modules() if m.split(".")[0] not in PACKAGES and m.split(".")[0] not in ROOT_MODULES)
    assert unplaced == [], "put new modules in a package of ARCHITECTURE.md, or name their layer in ROOT_MODULES"


def test_modules_import_only_from_their_layer_or_below():
    graph, _ = imports()
    upward = {(a, b) for a, targets in graph.items() for b in targets
              if LAYERS[layer_of(b)] > LAYERS[layer_of(a)]}
    assert sorted(upward - ALLOWED_UPWARD) == [], "an import against the one-way order"
    assert sorted(ALLOWED_UPWARD - upward) == [], "fixed: take these off ALLOWED_UPWARD"


def test_no_new_import_cycle():
    graph, _ = imports()
    found = sorted(sorted(c) for c in cycles(graph))
    assert found == sorted(sorted(c) for c in ALLOWED_CYCLES), "a cycle appeared, or one shrank: update ALLOWED_CYCLES"


def test_function_level_imports_only_go_down():
    _, count = imports()
    assert count <= FUNCTION_LEVEL_IMPORTS, f"{count} imports inside functions (budget {FUNCTION_LEVEL_IMPORTS})"


def test_the_advice_package_imports_nothing_above_it():
    graph, _ = imports()
    above = sorted((a, b) for a, targets in graph.items() if a.startswith("advice.") for b in targets
                   if LAYERS[layer_of(b)] > LAYERS["advice"])
    assert above == []


def test_the_check_sees_a_cycle_and_the_order():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert LAYERS[layer_of("cli.app")] > LAYERS[layer_of("advice.suggest")] > LAYERS[layer_of("profile.builder")]


#: The modules that sequence the stages (ARCHITECTURE.md: ``commands/``, and ``profiles.py``'s load_profile).
SEQUENCERS = {"commands", "profiles"}


def _stages_entered(run) -> list[str]:
    """The stages ``run()`` enters from a sequencer, in order, a stage called again right away counted once."""
    import sys

    marker = f"{PACKAGE.name}/"

    def stage(filename: str) -> str | None:
        if marker not in filename:
            return None
        head = filename.replace("\\", "/").rsplit(marker, 1)[1].split("/", 1)[0].removesuffix(".py")
        return PACKAGES.get(head) or ROOT_MODULES.get(head)

    entered: list[str] = []

    def watch(frame, event, _arg):
        if event != "call":
            return
        callee = stage(frame.f_code.co_filename)
        if callee in (None, "core") or callee in SEQUENCERS:
            return
        caller = frame.f_back
        while caller is not None and stage(caller.f_code.co_filename) is None:  # through library frames
            caller = caller.f_back
        if caller is not None and stage(caller.f_code.co_filename) in SEQUENCERS:
            if not entered or entered[-1] != callee:
                entered.append(callee)

    sys.setprofile(watch)
    try:
        run()
    finally:
        sys.setprofile(None)
    return entered


def test_following_a_profile_through_suggest_enters_each_stage_once(tmp_path):
    import shutil

    from opprof_advisor import commands

    example = PACKAGE.parent / "data" / "examples" / "yolov8_torch_npu"
    ranks = tmp_path / "job"
    for rank in range(2):  # two ranks of one job: the cluster stage reads and reduces them
        for folder in example.iterdir():
            shutil.copytree(folder, ranks / f"{folder.name.removesuffix('_ascend_pt')}{rank}_ascend_pt")
    db = tmp_path / "advisor.db"
    commands.suggest(example, db=db)  # the index built first, untraced
    single = _stages_entered(lambda: commands.suggest(example, db=db))
    assert single == ["readers", "profile", "symptoms", "advice"]
    job = _stages_entered(lambda: commands.suggest(ranks, db=db))
    assert job == ["readers", "cluster", "advice"]
