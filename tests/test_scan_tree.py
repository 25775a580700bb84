"""The scanner's one walk per file (scan.tree) visits what ``ast.walk`` visits, in the same order."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import pytest

from opprof_advisor.scan import scan_path
from opprof_advisor.scan.tree import KINDS, subtree_nodes, walk_tree

PACKAGE = Path(__file__).resolve().parent.parent / "opprof_advisor"
FIXTURE = Path(__file__).parent / "scan_fixture_repo"

# Every construct whose fields are unusual: match patterns, try/except*, f-strings with format specs,
# dict spreads (a None key), keyword-only arguments without defaults (a None default), walrus,
# lambdas, comprehensions, decorators, async forms, nested classes, global / nonlocal names.
CONSTRUCTS = '''
import torch, torch.nn as nn
from torch.nn import functional as F
@decorate(1, key=2)
class Outer(nn.Module, metaclass=Meta):
    x: int = 3
    class Inner:
        def __init__(self):
            self.act = nn.SiLU()
            y = [i * 2 for i in range(3) if i]
    def __init__(self, a, /, b, *args, c, d=4, **kw):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3) if a else nn.Identity()
        self.seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    async def forward(self, x, *, mask):
        global G
        async with ctx() as c, other():
            async for item in stream():
                z = {**item, "k": (w := x @ x)}
        try:
            pass
        except* ValueError as error:
            raise RuntimeError("bad") from error
        match x:
            case {"a": 1, **rest}:
                pass
            case [1, *others] | Point(x=0, y=_):
                pass
            case str() as s if s:
                pass
        return f"{x!r:>{width}} {(lambda q: q + 1)(2)}" or -x[~mask]
def outer():
    v = 1
    def inner():
        nonlocal v
        v += 1
    return {k: v for k, v in zip("ab", "cd")}, {s for s in "xy"}, (g for g in ())
'''

SKIPPED = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.type_ignore)


def sources() -> list[tuple[str, ast.Module]]:
    """Parsed trees: the construct sample, the scanner's fixture repository and the scanner's own modules."""
    trees = [("constructs", ast.parse(CONSTRUCTS))]
    for path in sorted([*FIXTURE.rglob("*.py"), *(PACKAGE / "scan").glob("*.py"), PACKAGE / "advice" / "recommend.py"]):
        try:
            trees.append((str(path), ast.parse(path.read_bytes())))
        except SyntaxError:
            continue  # the fixture holds a file with a syntax error on purpose
    return trees


def expected_walk(node: ast.AST) -> list[ast.AST]:
    return [child for child in ast.walk(node) if not isinstance(child, SKIPPED)]


SOURCES = sources()


@pytest.mark.parametrize(("name", "tree"), SOURCES, ids=[Path(name).name for name, _ in SOURCES])
def test_the_walk_is_ast_walk_without_contexts_and_operators(name, tree):
    walked = walk_tree(tree)
    assert [node for node in walked.nodes if node is not None] == expected_walk(tree)
    for group in KINDS:
        assert walked.of_kind(group[0]) == [node for node in ast.walk(tree) if isinstance(node, group)]


@pytest.mark.parametrize(("name", "tree"), SOURCES, ids=[Path(name).name for name, _ in SOURCES])
def test_class_members_are_those_of_a_walk_of_the_class(name, tree):
    walked = walk_tree(tree)
    for position in walked.kinds[ast.ClassDef]:
        cls = walked.nodes[position]
        for kind in (ast.Assign, ast.Call, ast.Attribute):
            assert walked.inside(position, kind) == [node for node in ast.walk(cls) if isinstance(node, kind)]


def test_constructs_cover_nested_classes_and_none_fields():
    walked = walk_tree(ast.parse(CONSTRUCTS))
    names = [cls.name for cls in walked.of_kind(ast.ClassDef)]
    assert names == ["Outer", "Inner"]
    assert None in walked.nodes  # the dict spread's key and c's missing default are read, not visited
    inner = walked.nodes[walked.kinds[ast.ClassDef][1]]
    assert [ast.unparse(node) for node in walked.inside(walked.kinds[ast.ClassDef][1], ast.Call)] == [
        "nn.SiLU()", "range(3)"]
    assert [node for node in subtree_nodes(inner) if node is not None] == expected_walk(inner)


def test_the_cycle_collector_is_back_on_after_a_scan(tmp_path):
    (tmp_path / "model.py").write_text("import torch\nx = torch.randn(2).cuda()\n")
    assert gc.isenabled()
    result = scan_path(tmp_path)
    assert [finding.op for finding in result.findings] == [".cuda()"]
    assert gc.isenabled()
    gc.disable()
    try:
        scan_path(tmp_path)
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()
