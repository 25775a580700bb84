"""What one Python file says to `advisor scan`: imports resolved, API calls classified by the support table, fusions found.

``FileScan`` looks up every call, attribute and module against ``cann_support`` (``scan_api``),
then follows local names through each function for hand-written attention, RMSNorm, SwiGLU, RoPE
and Linear/Conv+activation chains (``scan_patterns``). Each hit becomes a ``Finding`` at its line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from opprof_advisor.cann_support import SupportRow, SupportTable
from opprof_advisor.scan_tree import CHILD_FIELDS, all_node_classes, fields_holding, subtree_nodes, walk_tree

_TORCH_ROOTS = frozenset({"torch", "torchvision", "torch_npu"})


_MATMUL_KEYS = frozenset({"torch.matmul", "torch.mm", "torch.bmm", "torch.einsum", "torch.baddbmm", "Tensor.matmul",
                          "Tensor.mm", "Tensor.bmm"})


_SOFTMAX_KEYS = frozenset({"F.softmax", "torch.softmax", "Tensor.softmax"})


_ACTIVATION_CALLS = frozenset({"F.relu", "F.gelu", "F.silu", "torch.relu", "Tensor.relu", "torch.sigmoid", "F.sigmoid"})


_ACTIVATION_MODULES = frozenset({"nn.ReLU", "nn.GELU", "nn.SiLU", "nn.Sigmoid", "nn.LeakyReLU", "nn.Hardswish",
                                 "nn.Mish", "nn.Tanh"})


_CONV_MODULES = frozenset({"nn.Conv1d", "nn.Conv2d", "nn.Conv3d"})


_BN_MODULES = frozenset({"nn.BatchNorm1d", "nn.BatchNorm2d", "nn.BatchNorm3d", "nn.SyncBatchNorm"})


_AMP_CALLS = frozenset({"torch.cuda.amp.autocast", "torch.autocast", "torch.amp.autocast", "torch.cpu.amp.autocast",
                        "torch_npu.npu.amp.autocast", "torch.npu.amp.autocast", "torch.cuda.amp.GradScaler",
                        "torch.amp.GradScaler", "torch_npu.npu.amp.GradScaler", "torch.npu.amp.GradScaler"})


_LOW_PRECISION = frozenset({"torch.float16", "torch.half", "torch.bfloat16", "Tensor.half", "Tensor.bfloat16"})


# The last names of the dtype attributes looked at (float64 / double, and the low-precision ones).
_PRECISION_ATTRS = frozenset({"float64", "double"} | {name.rsplit(".", 1)[1] for name in _LOW_PRECISION})

_UNRESOLVED = object()


# Method names looked up on receivers the scanner cannot resolve (tensors, modules) in torch files.
_METHOD_KEYS: dict[str, str] = {
    "matmul": "Tensor.matmul", "mm": "Tensor.mm", "bmm": "Tensor.bmm", "softmax": "Tensor.softmax",
    "relu": "Tensor.relu", "nonzero": "Tensor.nonzero", "index_put_": "Tensor.index_put_",
    "masked_select": "Tensor.masked_select", "double": "Tensor.double", "half": "Tensor.half",
    "bfloat16": "Tensor.bfloat16",
}


_CUDA_ONLY_IMPORTS: dict[str, str] = {
    "flash_attn": "import flash_attn", "xformers": "import xformers", "apex": "import apex", "amp_C": "import amp_C",
    "triton": "import triton",
}


_PREFIXES = (
    ("torch.nn.functional.", "F."), ("torch.nn.parallel.DataParallel", "nn.DataParallel"),
    ("torch.nn.parallel.", ""), ("torch.nn.", "nn."), ("torch.distributed.", "dist."),
    ("torch.utils.cpp_extension.", "cpp_extension."), ("torch.Tensor.", "Tensor."),
)


@dataclass
class Finding:
    """One thing found in the source, classified by the support table."""

    category: str
    op: str
    path: str  # relative to the scan root, "/" separated
    line: int
    support: str
    replacement: str | None
    source: str
    family: str | None = None
    note: str = ""

    def to_dict(self) -> dict:
        """The JSON form (the seven public fields)."""
        return {key: getattr(self, key) for key in ("category", "op", "path", "line", "support", "replacement", "source")}


def collect_aliases(tree: ast.AST, imports: list[ast.AST] | None = None) -> dict[str, str]:
    """Local name -> fully qualified name for every absolute import in the module (``imports``: its
    Import and ImportFrom nodes in walk order, when already known)."""
    aliases: dict[str, str] = {}
    for node in walk_tree(tree).of_kind(ast.Import) if imports is None else imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    aliases[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def short_name(qualified: str) -> str:
    """The support-table spelling of a qualified name (``torch.nn.functional.relu`` -> ``F.relu``)."""
    for prefix, replacement in _PREFIXES:
        if qualified.startswith(prefix):
            return replacement + qualified[len(prefix):]
    return qualified


_CUDA_DEVICE = re.compile(r"cuda(:\d+)?$")


def _has_cuda_string(node: ast.AST) -> bool:
    for child in subtree_nodes(node):
        if type(child) is ast.Constant and isinstance(child.value, str) and _CUDA_DEVICE.match(child.value):
            return True
    return False


def _is_two(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 2


class FileScan:
    """API look-ups over the whole module, then data-flow patterns inside each scope."""

    def __init__(self, rel: str, tree: ast.Module, table: SupportTable):
        self.rel = rel
        self.tree = tree
        self.table = table
        self.walked = walk_tree(tree)
        self.aliases = collect_aliases(tree, self.walked.of_kind(ast.Import))
        self.torch_file = any(q.split(".")[0] in _TORCH_ROOTS for q in self.aliases.values())
        self.findings: dict[tuple[str, int], Finding] = {}
        self.amp_used = False
        self.low_precision = False
        self.class_attrs: dict[str, dict[str, str]] = {}
        self.is_entry = False
        self.imports_seen: set[str] = set()
        # id(call) -> its key without class context, filled by scan_api so scan_patterns does not resolve it again
        self.call_keys: dict[int, str | None] = {}

    # -- helpers -------------------------------------------------------------------------------

    def qualname(self, node: ast.AST) -> str | None:
        """``torch.nn.functional.relu`` for ``F.relu`` when ``F`` is imported as such; None otherwise."""
        attrs = []
        while type(node) is ast.Attribute:
            attrs.append(node.attr)
            node = node.value
        if type(node) is not ast.Name:
            return None
        base = self.aliases.get(node.id)
        if not attrs or not base:
            return base
        attrs.append(base)
        return ".".join(reversed(attrs))

    def add(self, op: str, line: int, row_key: str | None = None) -> None:
        if (op, line) in self.findings:
            return
        row = self.table.lookup(row_key or op)
        if row is not None:
            self.findings[(op, line)] = make_finding(row, op, self.rel, line)

    def call_key(self, call: ast.Call, cls: str | None = None) -> str | None:
        """The support-table key of what a call invokes, or None; inside class ``cls``, ``self.x(...)``
        is what ``self.x`` was assigned (``self.act = nn.SiLU()``)."""
        key = self.call_keys.get(id(call), _UNRESOLVED)
        if key is _UNRESOLVED:
            key = self._plain_call_key(call)
        if cls:
            func = call.func
            if (type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self"
                    and not self.aliases.get("self")):
                return self.class_attrs.get(cls, {}).get(func.attr) or key
        return key

    def _plain_call_key(self, call: ast.Call) -> str | None:
        func = call.func
        qualified = self.qualname(func)
        if qualified:
            return short_name(qualified)
        if type(func) is ast.Attribute and self.torch_file and self.qualname(func.value) is None:
            return _METHOD_KEYS.get(func.attr)
        return None

    # -- pass 1: API look-ups ------------------------------------------------------------------

    def scan_api(self) -> None:
        """Every import, call, attribute, matmul, decorator, main guard and assignment, by kind."""
        walked = self.walked
        for node in walked.of_kind(ast.Import):
            self._scan_import(node)
        for node in walked.of_kind(ast.Call):
            self._scan_call(node)
        for node in walked.of_kind(ast.Attribute):
            if node.attr in _PRECISION_ATTRS:  # the cheap test first: most attributes are not dtypes
                self._scan_attribute(node)
        if self.torch_file:
            for node in walked.of_kind(ast.BinOp):
                if type(node.op) is ast.MatMult:
                    self.add("@", node.lineno)
        for node in walked.of_kind(ast.FunctionDef):
            if node.decorator_list:
                self._scan_decorators(node)
        for node in walked.of_kind(ast.If):
            if _is_main_guard(node):
                self.is_entry = True
        for node in walked.of_kind(ast.Assign):
            if _assigns_device(node):
                self.add('device="cuda"', node.lineno)

    def _scan_call(self, call: ast.Call) -> None:
        func = call.func
        key = self.call_keys[id(call)] = self._plain_call_key(call)
        line = call.lineno
        if key:
            self._scan_keyed_call(call, key, line)
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and not call.args[1:]:
            if key is None or not key.startswith("torch."):
                self.add(".cuda()", line)
        if isinstance(func, ast.Attribute) and func.attr == "to" and any(_has_cuda_string(a) for a in call.args):
            self.add(".to('cuda')", line, 'device="cuda"')
        for keyword in call.keywords:
            if keyword.arg == "device" and _has_cuda_string(keyword.value):
                self.add('device="cuda"', line)
            if keyword.arg == "backend" and _is_nccl(keyword.value):
                self.add('backend="nccl"', line)

    def _scan_keyed_call(self, call: ast.Call, key: str, line: int) -> None:
        if key in _AMP_CALLS:
            self.amp_used = True
        if key in ("Tensor.half", "Tensor.bfloat16"):
            self.low_precision = True
            return
        if key == "torch.where":
            if len(call.args) == 1 and not call.keywords:
                self.add("torch.where (one argument)", line)
            return
        if key == "torch.device" and any(_has_cuda_string(a) for a in call.args):
            self.add("torch.device('cuda')", line, 'device="cuda"')
            return
        if key in ("torch.autocast", "torch.amp.autocast") and any(_has_cuda_string(a) for a in call.args):
            self.add('device="cuda"', line)
            return
        if key == "dist.init_process_group" and call.args and _is_nccl(call.args[0]):
            self.add('backend="nccl"', line)
            return
        if key == "Tensor.double" and (call.args or call.keywords):
            return
        if key.startswith("torch.cuda.") and not key.startswith("torch.cuda.amp"):
            self.add(key, line, "torch.cuda.*")
            return
        self.add(key, line)

    def _scan_attribute(self, node: ast.Attribute) -> None:
        if not isinstance(node.value, (ast.Name, ast.Attribute)):
            return
        qualified = self.qualname(node)
        if qualified in ("torch.float64", "torch.double"):
            self.add(qualified, node.lineno)
        elif qualified in _LOW_PRECISION:
            self.low_precision = True

    def _scan_import(self, node: ast.Import | ast.ImportFrom) -> None:
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if isinstance(node, ast.ImportFrom) and node.level:
            return
        for module in modules:
            head = module.split(".")[0]
            if head in _CUDA_ONLY_IMPORTS and head not in self.imports_seen:
                self.imports_seen.add(head)  # one finding per library and file
                self.add(_CUDA_ONLY_IMPORTS[head], node.lineno)
                if module.startswith("apex.amp") or (isinstance(node, ast.ImportFrom) and module == "apex"
                                                     and any(a.name == "amp" for a in node.names)):
                    self.amp_used = True
            if module.startswith("torch.utils.cpp_extension"):
                self.add("torch.utils.cpp_extension", node.lineno)
            if module == "torch.utils" and isinstance(node, ast.ImportFrom) and any(
                a.name == "cpp_extension" for a in node.names
            ):
                self.add("torch.utils.cpp_extension", node.lineno)

    def _scan_decorators(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            qualified = self.qualname(target) or ""
            if qualified.startswith("triton.") and qualified.split(".")[-1] in ("jit", "autotune", "heuristics"):
                self.add("triton.jit", decorator.lineno)

    # -- pass 2: data-flow patterns ------------------------------------------------------------

    def scan_patterns(self) -> None:
        if not self.torch_file:
            return
        self._collect_class_attrs()
        self._scan_scope(self.tree.body, None, tag=True)

    def _scan_scope(self, body: list[ast.stmt], cls: str | None, tag: bool) -> None:
        """Tag the statements of one scope (not a class body's) and go into its defs and classes."""
        statements: list[ast.stmt] = []
        defs: list[ast.stmt] = []
        split_scope(body, statements, defs)
        if tag:
            _Scope(self, cls).run(statements)
        for node in defs:
            if type(node) is ast.ClassDef:
                self._scan_sequentials(node)
                self._scan_scope(node.body, node.name, tag=False)
            else:
                self._scan_scope(node.body, cls, tag=True)

    def class_members(self, cls: ast.ClassDef, kind: type) -> list[ast.AST]:
        """The nodes of class ``kind`` (Assign, Call) inside one class, in ``ast.walk(cls)`` order."""
        return self.walked.inside(self._class_positions[id(cls)], kind)

    def module_key(self, call: ast.Call) -> str:
        """The short qualified name of what a call invokes (``nn.SiLU``), or "" (method calls included)."""
        return short_name(self.qualname(call.func) or "")

    def _collect_class_attrs(self) -> None:
        walked = self.walked
        self._class_positions = {id(walked.nodes[i]): i for i in walked.kinds[ast.ClassDef]}
        for node in walked.of_kind(ast.ClassDef):
            attrs: dict[str, str] = {}
            for stmt in node.body:  # class-level defaults, e.g. default_act = nn.SiLU()
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name):
                            attrs[target.id] = self.module_key(stmt.value)
            for sub in self.class_members(node, ast.Assign):
                self._record_self_attr(sub, attrs)
            self.class_attrs[node.name] = {k: v for k, v in attrs.items() if v}

    def _record_self_attr(self, assign: ast.Assign, attrs: dict[str, str]) -> None:
        targets = [target.attr for target in assign.targets if type(target) is ast.Attribute
                   and type(target.value) is ast.Name and target.value.id == "self"]
        if not targets:  # the cheap test first: most assignments are to local names
            return
        value = assign.value.body if isinstance(assign.value, ast.IfExp) else assign.value
        if isinstance(value, ast.Call):
            kind = self.module_key(value)
        elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
            kind = attrs.get(value.attr, "")
        else:
            return
        for attr in targets:
            attrs[attr] = kind

    def _scan_sequentials(self, cls: ast.ClassDef) -> None:
        for node in self.class_members(cls, ast.Call):
            if self.call_key(node) == "nn.Sequential":
                kinds = [self.module_key(a) if isinstance(a, ast.Call) else "" for a in node.args]
                self._scan_module_chain(node.args, kinds)

    def _scan_module_chain(self, args: list[ast.expr], kinds: list[str]) -> None:
        for i, kind in enumerate(kinds):
            nxt = kinds[i + 1] if i + 1 < len(kinds) else ""
            after = kinds[i + 2] if i + 2 < len(kinds) else ""
            if kind in _CONV_MODULES and nxt in _BN_MODULES and after in _ACTIVATION_MODULES:
                self.add("conv+bn+activation", args[i].lineno)
            elif kind in ("nn.Linear", "nn.LazyLinear") and nxt in _ACTIVATION_MODULES:
                self.add("linear+activation", args[i].lineno)


class _Scope:
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
        if key in _MATMUL_KEYS:
            self.consume_probs(inputs)
            return _drop_probs(inputs) | {"mm"}
        if key in _SOFTMAX_KEYS or key in ("nn.Softmax",):
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
        if key in _CONV_MODULES or key in ("F.conv1d", "F.conv2d", "F.conv3d"):
            return frozenset({"conv"})
        if key in _BN_MODULES or key == "F.batch_norm":
            return frozenset({"bn"}) if "conv" in inputs else frozenset()
        if key in ("F.silu", "nn.SiLU"):
            self.fused_activation(inputs, line)
            return frozenset({"silu"})
        if key in _ACTIVATION_CALLS or key in _ACTIVATION_MODULES:
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


def _is_nccl(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "nccl"


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


def _assigns_device(node: ast.Assign) -> bool:
    if type(node.value) is not ast.Constant and type(node.value) is not ast.IfExp:
        return False  # the cheap test first: few assignments are of a constant or a conditional
    names = [t.id for t in node.targets if isinstance(t, ast.Name)] + [
        t.attr for t in node.targets if isinstance(t, ast.Attribute)
    ]
    return any("device" in n.lower() for n in names) and _has_cuda_string(node.value)


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
    ast.BinOp: _Scope.binop, ast.Call: _Scope.call, ast.Compare: _Scope.compare, ast.Subscript: _Scope.subscript,
    ast.UnaryOp: lambda scope, node: scope.tags(node.operand), ast.Attribute: lambda scope, node: scope.tags(node.value),
}


def make_finding(row: SupportRow, op: str, rel: str, line: int) -> Finding:
    return Finding(
        category=row.category, op=op, path=rel, line=line, support=row.support, replacement=row.replacement,
        source=row.source_text(), family=row.family, note=row.note,
    )
