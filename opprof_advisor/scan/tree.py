"""One breadth-first walk of a parsed module for `advisor scan`: its nodes by kind and each class's members.

``ast.walk`` costs more than the parse that made the tree (a generator per node, ``iter_fields`` over
every field, a visit to every ``Load`` / ``Store`` context and operator). This walk reads only the
fields that can hold nodes, skips the context and operator singletons (no finding is made of them),
and files the nodes the scanner looks at by kind as it goes, so nothing walks the tree again.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from dataclasses import dataclass

# ASDL types whose values are nodes worth visiting; expr_context, operator, unaryop, cmpop and boolop
# are singletons without children, and identifier / string / constant / int are plain values.
_NODE_TYPES = frozenset({"expr", "stmt", "keyword", "arg", "arguments", "alias", "withitem", "comprehension",
                         "excepthandler", "match_case", "pattern", "type_param"})
_SIGNATURE_FIELD = re.compile(r"(\w+)[*?]? (\w+)")

#: The node kinds a scan handles, filed in walk order (Import and ImportFrom share one list: the first
#: import of a library counts, whichever form it has; likewise plain and async defs).
KINDS: tuple[tuple[type, ...], ...] = (
    (ast.Import, ast.ImportFrom), (ast.Call,), (ast.Attribute,), (ast.BinOp,),
    (ast.FunctionDef, ast.AsyncFunctionDef), (ast.If,), (ast.Assign,), (ast.ClassDef,),
)


def _signature(cls: type) -> dict[str, str] | None:
    """Field -> ASDL type name, from the signature Python puts in each node class's docstring
    (``Call(expr func, expr* args, keyword* keywords)``); None if the docstring does not read so."""
    name, bracket, rest = (cls.__doc__ or "").partition("(")
    if name.strip() != cls.__name__:
        return None
    types = {field: kind for kind, field in _SIGNATURE_FIELD.findall(rest)} if bracket else {}
    return types if set(types) == set(cls._fields) else None


def fields_holding(cls: type, kinds: frozenset[str]) -> tuple[str, ...] | None:
    """The fields of an AST class whose ASDL type is one of ``kinds``, in ``_fields`` order; None when
    its signature cannot be read (abstract and deprecated classes, which parsing does not produce)."""
    types = _signature(cls)
    if types is None:
        return None
    return tuple(field for field in cls._fields if types[field] in kinds)


def all_node_classes() -> list[type]:
    """``ast.AST`` and every class below it."""
    found, pending = [], [ast.AST]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


#: Node class -> the fields to read; a class not listed has its fields tested one by one. ``None`` is
#: listed too: ``Dict.keys`` and ``arguments.kw_defaults`` hold it for ``**spread`` and keyword-only
#: arguments without a default.
CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    cls: fields for cls in all_node_classes() if (fields := fields_holding(cls, _NODE_TYPES)) is not None
}
CHILD_FIELDS[type(None)] = ()
_PLAN: dict[type, tuple[tuple[str, ...], list[int] | None]] = {cls: (fields, None) for cls, fields in CHILD_FIELDS.items()}


def _generic_children(node: ast.AST, fields: tuple[str, ...]) -> list:
    children = []
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            children.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


@dataclass
class Tree:
    """A module's nodes in breadth-first order, their kinds, and where each node's children start.

    ``nodes`` also holds the ``None`` of a dict spread's missing key and of a keyword-only argument
    without a default, where a list field has it; ``of_kind`` and ``inside`` never return it.
    """

    nodes: list
    starts: list[int]  # nodes[starts[i]:starts[i + 1]] are the children of nodes[i]
    kinds: dict[type, list[int]]  # node class -> positions in ``nodes``, in walk order

    def of_kind(self, cls: type) -> list:
        """The nodes of one class (or of its kind group), in walk order."""
        nodes = self.nodes
        return [nodes[i] for i in self.kinds[cls]]

    def inside(self, position: int, cls: type) -> list:
        """The nodes of class ``cls`` below ``nodes[position]``, in the order ``ast.walk`` of that node gives.

        A subtree is one contiguous run of each level of a breadth-first walk, so its members of one
        kind are found by bisecting that kind's positions level by level, in the walk's order.
        """
        nodes, starts, positions = self.nodes, self.starts, self.kinds[cls]
        found: list = []
        low, high = starts[position], starts[position + 1]
        while low < high:
            first, last = bisect_left(positions, low), bisect_left(positions, high)
            found.extend(nodes[i] for i in positions[first:last])
            low, high = starts[low], starts[high]
        return found


def walk_tree(root: ast.AST) -> Tree:
    """Walk ``root`` once, breadth first like ``ast.walk`` (without context and operator nodes)."""
    nodes: list = [root]
    starts: list[int] = []
    kinds: dict[type, list[int]] = {}
    plan = _PLAN.copy()  # class -> (fields to read, this walk's position list for its kind or None)
    for group in KINDS:
        positions: list[int] = []
        for cls in group:
            kinds[cls] = positions
            plan[cls] = (CHILD_FIELDS[cls], positions)
    append, extend, mark = nodes.append, nodes.extend, starts.append
    for node in nodes:  # the list grows as it is read: that is the breadth-first queue
        mark(len(nodes))
        try:
            fields, positions = plan[type(node)]
        except KeyError:  # a class without a readable signature (parsing does not make them)
            extend(_generic_children(node, type(node)._fields))
            continue
        for name in fields:
            value = getattr(node, name)
            if type(value) is list:
                extend(value)
            elif value is not None:
                append(value)
        if positions is not None:
            positions.append(len(starts) - 1)
    mark(len(nodes))
    return Tree(nodes=nodes, starts=starts, kinds=kinds)


def subtree_nodes(root: ast.AST) -> list:
    """Every node under ``root`` (itself included), breadth first, without context and operator nodes
    (``Tree.nodes`` of its walk: small subtrees, such as the arguments of one call)."""
    return walk_tree(root).nodes
