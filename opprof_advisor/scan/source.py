"""What one Python file says to `advisor scan`: imports resolved, API calls classified by the support table, fusions found.

``FileScan`` looks up every call, attribute and module against ``cann_support`` (``scan_api``),
then follows local names through each function (``scan.flow.Scope``) for hand-written attention,
RMSNorm, SwiGLU, RoPE and Linear/Conv+activation chains (``scan_patterns``). Each hit becomes a
``Finding`` at its line. The tree is walked once (``scan.tree.walk_tree``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from opprof_advisor.core.cann_support import SupportRow, SupportTable
from opprof_advisor.scan.flow import ACTIVATION_MODULES, BN_MODULES, CONV_MODULES, Scope, split_scope
from opprof_advisor.scan.tree import subtree_nodes, walk_tree

_TORCH_ROOTS = frozenset({"torch", "torchvision", "torch_npu"})


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
            Scope(self, cls).run(statements)
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
            if kind in CONV_MODULES and nxt in BN_MODULES and after in ACTIVATION_MODULES:
                self.add("conv+bn+activation", args[i].lineno)
            elif kind in ("nn.Linear", "nn.LazyLinear") and nxt in ACTIVATION_MODULES:
                self.add("linear+activation", args[i].lineno)


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


def make_finding(row: SupportRow, op: str, rel: str, line: int) -> Finding:
    return Finding(
        category=row.category, op=op, path=rel, line=line, support=row.support, replacement=row.replacement,
        source=row.source_text(), family=row.family, note=row.note,
    )
