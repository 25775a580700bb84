"""Data-flow tags of local names inside one scope, for `advisor scan`'s fusion and mask findings.

``Scope`` follows what each local name holds through the statements of one function (or the
module body): a matmul's result, a softmax of it (attention weights), squares and their mean and
(r)sqrt (RMSNorm), SiLU outputs (SwiGLU), comparisons (masks), Linear / Conv / BatchNorm outputs.
The scan (``scan.source.FileScan``) resolves calls and records the findings.
"""

from __future__ import annotations

import ast
from typing import Protocol

from opprof_advisor.scan.tree import CHILD_FIELDS, all_node_classes, fields_holding


class FileScan(Protocol):
    """What a scope asks of the file's scan (``scan.source.FileScan``): a Protocol, so this module needs no
    import of scan.source, which imports this one."""

    def add(self, op: str, line: int, row_key: str | None = None) -> None: ...

    def call_key(self, call: ast.Call, cls: str | None = None) -> str | None: ...

# Support-table keys of the calls whose results the tags follow.
MATMUL_KEYS = frozenset({"torch.matmul", "torch.mm", "torch.bmm", "torch.einsum", "torch.baddbmm", "Tensor.matmul",
                         "Tensor.mm", "Tensor.bmm"})
SOFTMAX_KEYS = frozenset({"F.softmax", "torch.softmax", "Tensor.softmax"})
ACTIVATION_CALLS = frozenset({"F.relu", "F.gelu", "F.silu", "torch.relu", "Tensor.relu", "torch.sigmoid", "F.sigmoid"})
ACTIVATION_MODULES = frozenset({"nn.ReLU", "nn.GELU", "nn.SiLU", "nn.Sigmoid", "nn.LeakyReLU", "nn.Hardswish",
                                "nn.Mish", "nn.Tanh"})
CONV_MODULES = frozenset({"nn.Conv1d", "nn.Conv2d", "nn.Conv3d"})
BN_MODULES = frozenset({"nn.BatchNorm1d", "nn.BatchNorm2d", "nn.BatchNorm3d", "nn.SyncBatchNorm"})


class Scope:
    """Flow-insensitive tags of local names inside one function (or the module body).

    Tags: ``mm`` (result of a matmul), ``prob:<line>`` (softmax of a matmul, i.e. attention
    weights), ``sq`` / ``ms`` / ``rsqrt_ms`` / ``sqrt_ms`` (square, mean of squares, its (r)sqrt),
    ``silu`` (an SiLU output), ``mask`` (a comparison result), ``lin`` / ``conv`` / ``bn`` (outputs
    of Linear / Conv / BatchNorm modules).
    """

    def __init__(self, scan: FileScan, cls: str | None):
        self.scan = scan
        self.cls = cls
        self.env: dict[str, frozenset[str]] = {}

    def run(self, statements: list[ast.stmt]) -> None:
        """Tag the statements of the scope, in source order (``split_scope``)."""
        for stmt in statements:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        kind = type(stmt)
        if kind is ast.Assign:
            tags = self.tags(stmt.value)
            for target in stmt.targets:
                self.bind(target, tags, stmt)
        elif kind is ast.AugAssign or kind is ast.AnnAssign:
            tags = self.tags(stmt.value) if stmt.value is not None else _NONE
            if kind is ast.AugAssign and type(stmt.target) is ast.Name:
                tags |= self.env.get(stmt.target.id, _NONE)
            self.bind(stmt.target, tags, stmt)
        elif kind is ast.For:
            self.bind(stmt.target, self.tags(stmt.iter), stmt)
        elif kind is ast.Expr:  # the commonest others without a look-up of their fields
            self.tags(stmt.value)
        elif kind is ast.If:
            self.tags(stmt.test)
        elif kind is ast.Return:
            if stmt.value is not None:
                self.tags(stmt.value)
        else:  # the expressions of any other statement (a with's context managers, an assert's test ...)
            for child in _children(stmt, _STATEMENT_EXPR_FIELDS):
                if type(child) is ast.withitem:
                    self.tags(child.context_expr)
                elif type(child) in _EXPRESSIONS:
                    self.tags(child)

    def bind(self, target: ast.AST, tags: frozenset[str], stmt: ast.stmt) -> None:
        kind = type(target)
        if kind is ast.Name:
            self.env[target.id] = tags
        elif kind is ast.Tuple or kind is ast.List:
            for element in target.elts:
                self.bind(element, tags, stmt)
        elif kind is ast.Subscript:
            self.tags(target.value)
            if self.is_mask(target.slice):
                self.scan.add("boolean-mask assignment", target.lineno)

    # -- expression tags -----------------------------------------------------------------------

    def tags(self, node: ast.AST) -> frozenset[str]:
        kind = type(node)
        if kind is ast.Name:  # the commonest nodes first, then one dict look-up
            return self.env.get(node.id, _NONE)
        if kind is ast.Constant:
            return _NONE
        tagger = _TAGGERS.get(kind)
        return self.children(node) if tagger is None else tagger(self, node)

    def compare(self, node: ast.Compare) -> frozenset[str]:
        self.children(node)
        return _MASK

    def subscript(self, node: ast.Subscript) -> frozenset[str]:
        value = self.tags(node.value)
        self.tags(node.slice)
        if type(node.ctx) is ast.Load and self.is_mask(node.slice):
            self.scan.add("boolean-mask indexing", node.lineno)
        return value

    def children(self, node: ast.AST) -> frozenset[str]:
        env, tags = self.env, _NONE
        for child in _children(node, CHILD_FIELDS):
            kind = type(child)
            if kind is ast.Name:
                found = env.get(child.id, _NONE)
            elif kind is ast.Constant:
                continue
            elif kind in _EXPRESSIONS:
                found = self.tags(child)
            elif kind is ast.comprehension:
                found = self.tags(child.iter)
            elif kind is ast.keyword:
                found = self.tags(child.value)
            else:
                continue
            if found:
                tags = tags | found if tags else found
        return tags

    def binop(self, node: ast.BinOp) -> frozenset[str]:
        left, right = self.tags(node.left), self.tags(node.right)
        both = left | right
        line = node.lineno
        if isinstance(node.op, ast.MatMult):
            self.consume_probs(both)
            return _drop_probs(both) | {"mm"}
        if isinstance(node.op, ast.Pow) and _is_two(node.right):
            return left | {"sq"}
        if isinstance(node.op, ast.Mult):
            if "rsqrt_ms" in both:
                self.scan.add("hand-written RMSNorm", line)
                both -= _NORM_TAGS  # the normalised tensor is a new value, not another RMSNorm
            if "silu" in left or "silu" in right:
                self.scan.add("hand-written SwiGLU", line)
            if isinstance(node.left, ast.Name) and isinstance(node.right, ast.Name) and node.left.id == node.right.id:
                return both | {"sq"}
        if isinstance(node.op, ast.Div) and "sqrt_ms" in right:
            self.scan.add("hand-written RMSNorm", line)
            both -= _NORM_TAGS
        if isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            return both
        return both - {"mask", "silu"}

    def call(self, node: ast.Call) -> frozenset[str]:
        key = self.scan.call_key(node, self.cls)
        env, inputs = self.env, _NONE
        operands = [*node.args, *[keyword.value for keyword in node.keywords]]
        if type(node.func) is ast.Attribute:
            operands.append(node.func.value)
        for operand in operands:
            kind = type(operand)  # names and constants inline: most operands are one or the other
            if kind is ast.Constant:
                continue
            found = env.get(operand.id, _NONE) if kind is ast.Name else self.tags(operand)
            if found:
                inputs = inputs | found if inputs else found
        special = self.special_call(node, key, inputs)
        if special is not None:
            return special
        return inputs - {"mask", "silu", "lin", "conv", "bn"}

    def special_call(self, node: ast.Call, key: str | None, inputs: frozenset[str]) -> frozenset[str] | None:
        line = node.lineno
        # Method names only count when the receiver is not a known module (math.sqrt is not a tensor op).
        attr = node.func.attr if key is None and isinstance(node.func, ast.Attribute) else ""
        if key in MATMUL_KEYS:
            self.consume_probs(inputs)
            return _drop_probs(inputs) | {"mm"}
        if key in SOFTMAX_KEYS or key in ("nn.Softmax",):
            return frozenset({f"prob:{line}"}) if "mm" in inputs else _drop_probs(inputs)
        if key in ("torch.mean", "Tensor.mean") or attr == "mean":
            return inputs | {"ms"} if "sq" in inputs else inputs
        if key in ("torch.pow", "Tensor.pow") or attr == "pow":
            power = node.args[-1] if node.args else None
            return inputs | {"sq"} if power is not None and _is_two(power) else inputs
        if key in ("torch.square",) or attr == "square":
            return inputs | {"sq"}
        if key in ("torch.rsqrt",) or attr == "rsqrt":
            return inputs | {"rsqrt_ms"} if "ms" in inputs else inputs
        if key in ("torch.sqrt",) or attr == "sqrt":
            return inputs | {"sqrt_ms"} if "ms" in inputs else inputs
        if key in ("torch.cat", "torch.concat", "torch.stack") and node.args and _has_negated_element(node.args[0]):
            self.scan.add("hand-written RoPE", line)
            return inputs
        return self.module_call(node, key, inputs)

    def module_call(self, node: ast.Call, key: str | None, inputs: frozenset[str]) -> frozenset[str] | None:
        line = node.lineno
        if key in ("nn.Linear", "nn.LazyLinear", "F.linear"):
            return frozenset({"lin"})
        if key in CONV_MODULES or key in ("F.conv1d", "F.conv2d", "F.conv3d"):
            return frozenset({"conv"})
        if key in BN_MODULES or key == "F.batch_norm":
            return frozenset({"bn"}) if "conv" in inputs else frozenset()
        if key in ("F.silu", "nn.SiLU"):
            self.fused_activation(inputs, line)
            return frozenset({"silu"})
        if key in ACTIVATION_CALLS or key in ACTIVATION_MODULES:
            self.fused_activation(inputs, line)
            return frozenset()
        if key in ("nn.Mask",) or (key is None and isinstance(node.func, ast.Attribute)
                                    and node.func.attr in ("bool", "logical_and", "logical_or", "logical_not")):
            return frozenset({"mask"}) | (inputs & {"mask"})
        return None

    def fused_activation(self, inputs: frozenset[str], line: int) -> None:
        if "bn" in inputs:
            self.scan.add("conv+bn+activation", line)
        elif "lin" in inputs:
            self.scan.add("linear+activation", line)

    def consume_probs(self, tags: frozenset[str]) -> None:
        for tag in tags:
            if tag.startswith("prob:"):
                self.scan.add("hand-written attention", int(tag[5:]))

    def is_mask(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Tuple):
            return any(self.is_mask(element) for element in node.elts)
        if isinstance(node, ast.Compare):
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self.is_mask(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            return self.is_mask(node.left) or self.is_mask(node.right)
        if isinstance(node, ast.Name):
            return "mask" in self.env.get(node.id, frozenset())
        return False


_NORM_TAGS = frozenset({"sq", "ms", "rsqrt_ms", "sqrt_ms"})


def _drop_probs(tags: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in tags if not t.startswith("prob:"))


def _has_negated_element(node: ast.AST) -> bool:
    if not isinstance(node, (ast.Tuple, ast.List)):
        return False
    return any(isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) for e in node.elts)


def _is_two(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 2


def split_scope(body: list[ast.stmt], statements: list[ast.stmt], defs: list[ast.stmt]) -> None:
    """Append a scope's statements in source order (entering compound statements: their body, else
    and finally blocks, then their handlers) to ``statements``, and the defs and classes directly in
    the scope (also those inside if / try blocks) to ``defs``."""
    for stmt in body:
        kind = type(stmt)
        if kind in _DEFS:
            defs.append(stmt)
            continue
        statements.append(stmt)
        blocks = _BLOCKS.get(kind)
        if blocks:
            for name in blocks:
                inner = getattr(stmt, name)
                if inner:
                    split_scope(inner, statements, defs)
            for handler in getattr(stmt, "handlers", ()):
                split_scope(handler.body, statements, defs)


def _children(node: ast.AST, fields_of: dict[type, tuple[str, ...]]) -> list:
    """The child nodes of ``node`` in the fields ``fields_of`` lists for its class (all its node fields
    for a class not listed), in field order."""
    fields = fields_of.get(type(node))
    if fields is None:
        return [child for child in ast.iter_child_nodes(node)]
    children = []
    for name in fields:
        value = getattr(node, name)
        if type(value) is list:
            children.extend(value)
        elif value is not None:
            children.append(value)
    return children


_DEFS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
# Per compound statement class: its blocks of statements, in the order they are entered (a try's
# handlers come after them, through its ``handlers`` field).
_BLOCKS: dict[type, tuple[str, ...]] = {
    cls: blocks for cls in all_node_classes() if issubclass(cls, ast.stmt) and cls not in _DEFS
    and (blocks := tuple(name for name in ("body", "orelse", "finalbody") if name in cls._fields))
}
_EXPRESSIONS = frozenset(cls for cls in all_node_classes() if issubclass(cls, ast.expr))
_STATEMENT_EXPR_FIELDS: dict[type, tuple[str, ...]] = {
    cls: fields for cls in all_node_classes() if issubclass(cls, ast.stmt)
    and (fields := fields_holding(cls, frozenset({"expr", "withitem"}))) is not None
}
_NONE: frozenset[str] = frozenset()
_MASK = frozenset({"mask"})
_TAGGERS = {
    ast.BinOp: Scope.binop, ast.Call: Scope.call, ast.Compare: Scope.compare, ast.Subscript: Scope.subscript,
    ast.UnaryOp: lambda scope, node: scope.tags(node.operand), ast.Attribute: lambda scope, node: scope.tags(node.value),
}
