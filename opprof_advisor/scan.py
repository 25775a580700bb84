"""`advisor scan`: static computation analysis of a model's Python source.

Walks a repository, parses every ``.py`` file with :mod:`ast` and reports, with file and line, the
compute-heavy operators, the operators that risk a CPU / AI CPU fallback on Ascend, CUDA-only code
(custom kernels, Triton, apex, xformers, flash-attn), migration points (``.cuda()``, CUDA AMP, NCCL)
and fusion candidates (hand-written attention, RMSNorm, SwiGLU, RoPE). Each finding is classified
by the sourced support table in ``data/cann_support.yaml`` (see :mod:`opprof_advisor.cann_support`).

The findings also become a *pseudo-profile* (:func:`scan_profile`) so the recommender can rank the
knowledge base against code before any NPU profile exists. No time is measured, so no gain is
claimed.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from opprof_advisor.cann_support import CATEGORIES, SupportRow, SupportTable, load_support_table
from opprof_advisor.errors import AdvisorError, ScanError
from opprof_advisor.models import OpTypeStat, Profile, Symptom

SCHEMA = "opprof-advisor/scan/1"

#: Folders never descended into (version control, caches, build output, dependencies).
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", "build", "dist", ".venv", "venv", ".tox", ".nox",
    ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "site-packages",
})
CUDA_SUFFIXES = (".cu", ".cuh")
MAX_SOURCE_BYTES = 2_000_000  # larger .py files are generated tables, not model code
_GENERATED_SUFFIXES = ("_pb2.py", "_pb2_grpc.py")
_GENERATED_MARKERS = re.compile(rb"@generated|do not edit|auto-?generated", re.IGNORECASE)
# Files mentioning none of these cannot produce a finding; they are only parsed.
_INTERESTING = re.compile(rb"torch|triton|apex|amp_C|xformers|flash_attn|cuda|nccl")
_TORCH_ROOTS = frozenset({"torch", "torchvision", "torch_npu"})

#: Static cost weight per operator family: a rough prior of how much device time one occurrence
#: in the source stands for. Cube work (MatMul, Conv2D) weighs 4; a fused attention call 6; NMS 8
#: because torchvision NMS runs on the host with device-host copies around it (KB-SOURCES #1-#3:
#: it dominated YOLOv8 validation batches); grid sampling 3 (ran on the AI CPU in KB-SOURCES #9);
#: index/mask ops 1.0 (element-wise-sized work on small post-processing tensors; their cost is the
#: AI CPU round-trip a profile must confirm); other vector-only work 0.5-1.5.
#: Shares in the pseudo-profile are count × weight, normalised. A prior, not a measurement.
FAMILY_WEIGHTS: dict[str, float] = {
    "MatMul": 4.0, "Conv2D": 4.0, "FlashAttention": 6.0, "NMS": 8.0, "GridSample": 3.0, "NonZero": 1.0,
    "IndexPut": 1.0, "Resize": 1.0, "LayerNorm": 1.0, "BatchNorm": 1.0, "GroupNorm": 1.0, "RMSNorm": 1.5,
    "SwiGLU": 1.5, "RoPE": 1.5, "Softmax": 1.0, "Activation": 0.5, "AllReduce": 2.0, "Optimizer": 1.0,
}
#: Hand-written attention: two batched matmuls and a softmax over seq × seq per occurrence. MindSpeed
#: measured +34 % throughput from fusing it on Llama-2-7B (KB-SOURCES #13): step time fell by
#: 1 - 1/1.34 = 25.4 %, so the unfused attention held at least 25.4 % of the step while the layer's
#: seven projection matmuls (7 × weight 4 = 28) held at most the other 74.6 %. Hence a weight of at
#: least 28 × 0.254 / 0.746 ≈ 9.5 per attention; we use 10.
_UNFUSED_ATTENTION_WEIGHT = 10.0
# Fusion findings that restate operators already counted (the matmul, conv, bn): not counted again.
_NOT_COUNTED = frozenset({"linear+activation", "conv+bn+activation"})

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


@dataclass
class ScanResult:
    """Everything a scan found."""

    root: str
    files_scanned: int = 0
    files_failed: list[tuple[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    amp_used: bool = False
    low_precision_used: bool = False
    entry_points: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Walking the tree
# --------------------------------------------------------------------------------------------


@dataclass
class _Walk:
    root_real: str
    exclude: tuple[str, ...]
    python: list[tuple[str, str]] = field(default_factory=list)  # (relative path, real path)
    cuda: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    seen_dirs: set[str] = field(default_factory=set)
    seen_files: set[str] = field(default_factory=set)
    # Symlinks are followed after the real tree, so a file is reported under its real path.
    deferred: list[tuple[os.DirEntry, str]] = field(default_factory=list)

    following_links: bool = False

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _inside(path_real: str, root_real: str) -> bool:
    return path_real == root_real or path_real.startswith(root_real.rstrip(os.sep) + os.sep)


def _excluded(rel: str, name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(rel + "/", pat)
               for pat in patterns)


def _walk_dir(walk: _Walk, dir_real: str, rel_dir: str) -> None:
    """Visit a folder and everything below it, depth first in name order.

    A loop over a stack of listings, not recursion: a tree 1,000 folders deep is a valid input.
    """
    pending = [iter(_list_dir(walk, dir_real, rel_dir))]
    while pending:
        item = next(pending[-1], None)
        if item is None:
            pending.pop()
            continue
        below = _visit_entry(walk, *item)
        if below is not None:
            pending.append(iter(_list_dir(walk, *below)))


def _list_dir(walk: _Walk, dir_real: str, rel_dir: str) -> list[tuple[os.DirEntry, str]]:
    """The entries of one folder to visit, with their relative paths (none for a loop or a virtualenv)."""
    if dir_real in walk.seen_dirs:
        walk.skip("symlinked folders already visited (loops)")
        return []
    walk.seen_dirs.add(dir_real)
    try:
        with os.scandir(dir_real) as entries:
            listing = sorted(entries, key=lambda e: e.name)
    except OSError as exc:
        walk.failed.append((rel_dir or ".", f"cannot list folder: {exc.strerror or exc}"))
        return []
    if rel_dir and any(e.name == "pyvenv.cfg" for e in listing):
        walk.skip("virtual environments")
        return []
    return [(entry, f"{rel_dir}/{entry.name}" if rel_dir else entry.name) for entry in listing]


def _visit_entry(walk: _Walk, entry: os.DirEntry, rel: str) -> tuple[str, str] | None:
    """Record a file; for a folder to descend into, return its (real path, relative path)."""
    name = entry.name
    if _excluded(rel, name, walk.exclude):
        walk.skip("paths matching --exclude")
        return None
    try:
        is_link = entry.is_symlink()
        is_dir = entry.is_dir()
        is_file = not is_dir and entry.is_file()
    except OSError:
        walk.skip("broken or looping symlinks")
        return None
    if is_link and not walk.following_links:
        walk.deferred.append((entry, rel))
        return None
    real = os.path.realpath(entry.path) if is_link else entry.path
    if is_link and not _inside(real, walk.root_real):
        walk.skip("symlinks pointing outside PATH")
        return None
    if is_dir:
        if name in SKIP_DIRS or name.endswith(".egg-info"):
            walk.skip(f"{name}/ folders" if name in SKIP_DIRS else "*.egg-info folders")
            return None
        return real, rel
    if not is_file:
        if is_link:
            walk.skip("broken or looping symlinks")
        return None
    _add_file(walk, name, rel, real)
    return None


def _add_file(walk: _Walk, name: str, rel: str, real: str) -> None:
    if name.endswith(".py"):
        bucket = walk.python
    elif name.endswith(CUDA_SUFFIXES):
        bucket = walk.cuda
    else:
        return
    if real in walk.seen_files:
        walk.skip("files reached twice through symlinks")
        return
    walk.seen_files.add(real)
    bucket.append((rel, real))


def collect_files(root: Path, exclude: tuple[str, ...] = ()) -> _Walk:
    """List the Python and CUDA files under ``root`` (a folder), honouring the skip rules."""
    root_real = os.path.realpath(root)
    walk = _Walk(root_real=root_real, exclude=tuple(exclude))
    _walk_dir(walk, root_real, "")
    walk.following_links = True
    while walk.deferred:  # following a link may defer more links below it
        pending, walk.deferred = walk.deferred, []
        for entry, rel in pending:
            below = _visit_entry(walk, entry, rel)
            if below is not None:
                _walk_dir(walk, *below)
    return walk


# --------------------------------------------------------------------------------------------
# Names: imports, aliases and qualified names
# --------------------------------------------------------------------------------------------


def collect_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> fully qualified name for every absolute import in the module."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
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


def _has_cuda_string(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str) and re.match(r"cuda(:\d+)?$", child.value):
            return True
    return False


def _is_two(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 2


# --------------------------------------------------------------------------------------------
# Analysing one file
# --------------------------------------------------------------------------------------------


class _FileScan:
    """API look-ups over the whole module, then data-flow patterns inside each scope."""

    def __init__(self, rel: str, tree: ast.Module, table: SupportTable):
        self.rel = rel
        self.tree = tree
        self.table = table
        self.aliases = collect_aliases(tree)
        self.torch_file = any(q.split(".")[0] in _TORCH_ROOTS for q in self.aliases.values())
        self.findings: dict[tuple[str, int], Finding] = {}
        self.amp_used = False
        self.low_precision = False
        self.class_attrs: dict[str, dict[str, str]] = {}
        self.is_entry = False
        self.imports_seen: set[str] = set()

    # -- helpers -------------------------------------------------------------------------------

    def qualname(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def add(self, op: str, line: int, row_key: str | None = None) -> None:
        row = self.table.lookup(row_key or op)
        if row is None or (op, line) in self.findings:
            return
        self.findings[(op, line)] = _finding(row, op, self.rel, line)

    def call_key(self, call: ast.Call, cls: str | None = None) -> str | None:
        """The support-table key of what a call invokes, or None."""
        func = call.func
        qualified = self.qualname(func)
        if qualified:
            return short_name(qualified)
        if isinstance(func, ast.Attribute):
            value = func.value
            if cls and isinstance(value, ast.Name) and value.id == "self":
                attr_type = self.class_attrs.get(cls, {}).get(func.attr)
                if attr_type:
                    return attr_type
            if self.qualname(value) is None and self.torch_file:
                return _METHOD_KEYS.get(func.attr)
        return None

    # -- pass 1: API look-ups ------------------------------------------------------------------

    def scan_api(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self._scan_call(node)
            elif isinstance(node, ast.Attribute):
                self._scan_attribute(node)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and self.torch_file:
                self.add("@", node.lineno)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self._scan_import(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._scan_decorators(node)
            elif isinstance(node, ast.If) and _is_main_guard(node):
                self.is_entry = True
            elif isinstance(node, ast.Assign) and _assigns_device(node):
                self.add('device="cuda"', node.lineno)

    def _scan_call(self, call: ast.Call) -> None:
        func = call.func
        key = self.call_key(call)
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
        _Scope(self, None).run(self.tree.body)
        self._scan_defs(self.tree.body, None)

    def _scan_defs(self, body: list[ast.stmt], cls: str | None) -> None:
        for node in _iter_defs(body):
            if isinstance(node, ast.ClassDef):
                self._scan_sequentials(node)
                self._scan_defs(node.body, node.name)
            else:
                _Scope(self, cls).run(node.body)
                self._scan_defs(node.body, cls)

    def _collect_class_attrs(self) -> None:
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.ClassDef):
                continue
            attrs: dict[str, str] = {}
            for stmt in node.body:  # class-level defaults, e.g. default_act = nn.SiLU()
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name):
                            attrs[target.id] = short_name(self.qualname(stmt.value.func) or "")
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign):
                    self._record_self_attr(sub, attrs)
            self.class_attrs[node.name] = {k: v for k, v in attrs.items() if v}

    def _record_self_attr(self, assign: ast.Assign, attrs: dict[str, str]) -> None:
        value = assign.value.body if isinstance(assign.value, ast.IfExp) else assign.value
        if isinstance(value, ast.Call):
            kind = short_name(self.qualname(value.func) or "")
        elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
            kind = attrs.get(value.attr, "")
        else:
            return
        for target in assign.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                attrs[target.attr] = kind

    def _scan_sequentials(self, cls: ast.ClassDef) -> None:
        for node in ast.walk(cls):
            if isinstance(node, ast.Call) and short_name(self.qualname(node.func) or "") == "nn.Sequential":
                kinds = [short_name(self.qualname(a.func) or "") if isinstance(a, ast.Call) else "" for a in node.args]
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

    def __init__(self, scan: _FileScan, cls: str | None):
        self.scan = scan
        self.cls = cls
        self.env: dict[str, frozenset[str]] = {}

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in _iter_statements(body):
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            tags = self.tags(stmt.value)
            for target in stmt.targets:
                self.bind(target, tags, stmt)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            tags = self.tags(stmt.value) if stmt.value is not None else frozenset()
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                tags |= self.env.get(stmt.target.id, frozenset())
            self.bind(stmt.target, tags, stmt)
        elif isinstance(stmt, ast.For):
            self.bind(stmt.target, self.tags(stmt.iter), stmt)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.tags(child)
                elif isinstance(child, ast.withitem):
                    self.tags(child.context_expr)

    def bind(self, target: ast.AST, tags: frozenset[str], stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = tags
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind(element, tags, stmt)
        elif isinstance(target, ast.Subscript):
            self.tags(target.value)
            if self.is_mask(target.slice):
                self.scan.add("boolean-mask assignment", target.lineno)

    # -- expression tags -----------------------------------------------------------------------

    def tags(self, node: ast.AST) -> frozenset[str]:
        if isinstance(node, ast.Name):
            return self.env.get(node.id, frozenset())
        if isinstance(node, ast.Constant):
            return frozenset()
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Compare):
            self.children(node)
            return frozenset({"mask"})
        if isinstance(node, ast.Subscript):
            value = self.tags(node.value)
            self.tags(node.slice)
            if isinstance(node.ctx, ast.Load) and self.is_mask(node.slice):
                self.scan.add("boolean-mask indexing", node.lineno)
            return value
        if isinstance(node, ast.UnaryOp):
            return self.tags(node.operand)
        if isinstance(node, ast.Attribute):
            return self.tags(node.value)
        return self.children(node)

    def children(self, node: ast.AST) -> frozenset[str]:
        tags: frozenset[str] = frozenset()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                tags |= self.tags(child)
            elif isinstance(child, ast.comprehension):
                tags |= self.tags(child.iter)
            elif isinstance(child, ast.keyword):
                tags |= self.tags(child.value)
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
        args = frozenset().union(*(self.tags(a) for a in node.args)) if node.args else frozenset()
        for keyword in node.keywords:
            args |= self.tags(keyword.value)
        receiver = frozenset()
        if isinstance(node.func, ast.Attribute):
            receiver = self.tags(node.func.value)
        inputs = args | receiver
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
    names = [t.id for t in node.targets if isinstance(t, ast.Name)] + [
        t.attr for t in node.targets if isinstance(t, ast.Attribute)
    ]
    return any("device" in n.lower() for n in names) and isinstance(node.value, (ast.Constant, ast.IfExp)) and (
        _has_cuda_string(node.value)
    )


def _iter_statements(body: list[ast.stmt]):
    """Statements of one scope in source order, entering compound statements but not defs."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield stmt
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _iter_statements(inner)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from _iter_statements(handler.body)


def _iter_defs(body: list[ast.stmt]):
    """Function and class definitions directly in a scope (including inside if/try blocks)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield stmt
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _iter_defs(inner)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from _iter_defs(handler.body)


def _finding(row: SupportRow, op: str, rel: str, line: int) -> Finding:
    return Finding(
        category=row.category, op=op, path=rel, line=line, support=row.support, replacement=row.replacement,
        source=row.source_text(), family=row.family, note=row.note,
    )


# --------------------------------------------------------------------------------------------
# Scanning a path
# --------------------------------------------------------------------------------------------


def scan_path(path: str | os.PathLike, exclude: tuple[str, ...] | list[str] = ()) -> ScanResult:
    """Scan a folder (or one ``.py`` / ``.cu`` file) and return every finding with its location."""
    root = Path(path)
    if not root.exists() and not root.is_symlink():
        raise ScanError("no such file or folder", path=root, hint="check the path and try again")
    if root.is_symlink() and not root.exists():
        raise ScanError("broken or looping symlink", path=root, hint="point advisor scan at a real folder")
    if not root.is_dir() and not root.is_file():  # a FIFO, a device, a socket
        raise ScanError("not a Python file or a folder", path=root, hint="give a folder or a .py file")
    table = load_support_table()
    if root.is_file():
        return _scan_single_file(root, table)
    walk = collect_files(root, tuple(exclude))
    result = ScanResult(root=str(root))
    for rel, real in walk.python:
        _scan_python(result, rel, real, table, walk)
    for rel, real in walk.cuda:
        result.findings.append(_cuda_finding(table, rel, real))
    result.files_failed.extend(walk.failed)
    _finish(result, walk)
    return result


def _scan_single_file(file: Path, table: SupportTable) -> ScanResult:
    name = file.name
    result = ScanResult(root=str(file.parent))
    walk = _Walk(root_real=os.path.realpath(file.parent), exclude=())
    if name.endswith(".py"):
        _scan_python(result, name, str(file), table, walk)
    elif name.endswith(CUDA_SUFFIXES):
        result.findings.append(_cuda_finding(table, name, str(file)))
    else:
        raise ScanError("not a Python file or a folder", path=file,
                        hint="give a folder or a .py file (a .cu/.cuh file is also accepted)")
    _finish(result, walk)
    return result


def _cuda_finding(table: SupportTable, rel: str, real: str) -> Finding:
    """A CUDA source file, located at its first ``__global__`` kernel (line 1 if none or unreadable)."""
    line = 1
    try:
        with open(real, "rb") as handle:
            for number, text in enumerate(handle, start=1):
                if b"__global__" in text:
                    line = number
                    break
    except OSError:
        pass
    suffix = rel.rsplit(".", 1)[-1]
    return _finding(table.lookup("CUDA source file"), f".{suffix} file", rel, line)


def _scan_python(result: ScanResult, rel: str, real: str, table: SupportTable, walk: _Walk) -> None:
    try:
        with open(real, "rb") as handle:
            source = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        result.files_failed.append((rel, f"cannot read: {exc.strerror or exc}"))
        return
    if len(source) > MAX_SOURCE_BYTES:
        walk.skip(f"files over {MAX_SOURCE_BYTES // 1_000_000} MB (likely generated)")
        return
    if b"\0" in source:
        walk.skip("binary files with a .py name")
        return
    if rel.endswith(_GENERATED_SUFFIXES) or _GENERATED_MARKERS.search(source[:300]):
        walk.skip("generated files")
        return
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        result.files_failed.append((rel, f"line {exc.lineno or '?'}: {exc.msg}"))
        return
    except (ValueError, RecursionError, MemoryError) as exc:
        result.files_failed.append((rel, f"cannot parse: {exc.__class__.__name__}: {exc}"))
        return
    result.files_scanned += 1
    if not _INTERESTING.search(source):
        return
    _analyse_tree(result, rel, tree, table)


def _analyse_tree(result: ScanResult, rel: str, tree: ast.Module, table: SupportTable) -> None:
    scan = _FileScan(rel, tree, table)
    scan.scan_api()
    scan.scan_patterns()
    swiglu_lines = {line for (op, line) in scan.findings if op == "hand-written SwiGLU"}
    for (op, line), finding in sorted(scan.findings.items(), key=lambda item: (item[0][1], item[0][0])):
        if op == "linear+activation" and line in swiglu_lines:
            continue  # silu(w1(x)) * w3(x) is reported once, as SwiGLU
        result.findings.append(finding)
    result.amp_used |= scan.amp_used
    result.low_precision_used |= scan.low_precision
    if scan.is_entry:
        result.entry_points.append(rel)


def _finish(result: ScanResult, walk: _Walk) -> None:
    order = {category: i for i, category in enumerate(CATEGORIES)}
    result.findings.sort(key=lambda f: (order.get(f.category, 99), f.path, f.line, f.op))
    result.files_failed.sort()
    result.notes.extend(build_notes(result, walk))


# --------------------------------------------------------------------------------------------
# Notes and the pseudo-profile
# --------------------------------------------------------------------------------------------


def build_notes(result: ScanResult, walk: _Walk) -> list[str]:
    """What the scan skipped, what it could not judge, and how to profile next."""
    notes: list[str] = []
    if result.files_scanned == 0 and not walk.cuda:
        what = "no Python files could be parsed" if result.files_failed else "no Python files found"
        notes.append(f"{what} under {result.root} — point advisor scan at the model's source folder")
    if walk.skipped:
        parts = ", ".join(f"{count} {why}" for why, count in sorted(walk.skipped.items()))
        notes.append(f"skipped: {parts}")
    if result.files_failed:
        notes.append(f"{len(result.files_failed)} file(s) could not be read or parsed; they are listed under files_failed")
    notes.extend(_precision_notes(result))
    if any(f.family for f in result.findings):
        notes.append(
            "no expected gains from a static scan: the ranking uses a static estimate (occurrences × a per-family "
            "cost weight), not measured time; profile the model to get gains"
        )
        notes.append("cannot judge communication overlap: a static scan does not see timing (collect a profile)")
    notes.extend(profiling_notes(result))
    return notes


def _precision_notes(result: ScanResult) -> list[str]:
    heavy = any(f.family in ("MatMul", "Conv2D") for f in result.findings)
    if not heavy or result.amp_used:
        return []
    if result.low_precision_used:
        return ["AMP not used: no autocast/GradScaler found, though fp16/bf16 tensors appear; consider "
                "torch_npu.npu.amp.autocast (or torch.autocast(device_type='npu'))"]
    return ["AMP not used: no autocast/GradScaler and no fp16/bf16 found, so matmuls and convolutions run in "
            "float32; consider torch_npu.npu.amp.autocast (or torch.autocast(device_type='npu'))"]


def profiling_notes(result: ScanResult) -> list[str]:
    """The exact commands to collect a profile of this model and feed it to ``advisor suggest``."""
    entry = _pick_entry(result.entry_points)
    return [
        "profile next (torch_npu): wrap the training loop in "
        "`with torch_npu.profiler.profile(activities=[torch_npu.profiler.ProfilerActivity.CPU, "
        "torch_npu.profiler.ProfilerActivity.NPU], schedule=torch_npu.profiler.schedule(wait=1, warmup=1, active=2, "
        "repeat=1), on_trace_ready=torch_npu.profiler.tensorboard_trace_handler('./npu_prof'), record_shapes=True, "
        "with_stack=True, experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level="
        "torch_npu.profiler.ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization)) as "
        "prof:` and call `prof.step()` after each step; then run `advisor suggest --profile ./npu_prof`",
        f"profile next (msprof): `msprof --output=./msprof_out --task-time=on --ai-core=on --aicpu=on "
        f"python {entry}`; then run `advisor suggest --profile ./msprof_out`",
    ]


def _pick_entry(entry_points: list[str]) -> str:
    for preferred in ("train", "main", "run"):
        for rel in sorted(entry_points):
            if Path(rel).stem.startswith(preferred):
                return rel
    return sorted(entry_points)[0] if entry_points else "<your entry script>.py"


def scan_profile(result: ScanResult) -> Profile:
    """The findings as a pseudo-profile: op types weighted by count × family weight, as shares."""
    weights: dict[tuple[str, str, str], list[float]] = {}
    for finding in result.findings:
        if not finding.family or finding.op in _NOT_COUNTED or finding.category in ("migration", "custom_kernel"):
            continue
        weight = _UNFUSED_ATTENTION_WEIGHT if finding.op == "hand-written attention" else FAMILY_WEIGHTS.get(
            finding.family, 1.0)
        key = (finding.op, finding.family, _unit_of(finding))
        weights.setdefault(key, [0, 0.0])
        weights[key][0] += 1
        weights[key][1] += weight
    total = sum(w for _count, w in weights.values()) or 1.0
    op_types = [
        OpTypeStat(op_type=op, family=family, unit=unit, count=int(count), time_us=0.0, share=w / total)
        for (op, family, unit), (count, w) in weights.items()
    ]
    op_types.sort(key=lambda row: (-row.share, row.op_type))
    profile = Profile(path=result.root, format="static-scan", producer="torch_npu", op_types=op_types)
    profile.symptoms = _scan_symptoms(result, op_types)
    profile.notes = list(result.notes)
    return profile


def _unit_of(finding: Finding) -> str:
    if finding.support == "cpu_fallback_risk":
        return "ai_cpu"
    if finding.category == "distributed":
        return "communication"
    if finding.family in ("MatMul", "Conv2D", "FlashAttention"):
        return "ai_core"
    return "ai_vector"


def _scan_symptoms(result: ScanResult, op_types: list[OpTypeStat]) -> list[Symptom]:
    def symptom(symptom_id: str, rows: list[OpTypeStat], detail: str) -> Symptom | None:
        if not rows:
            return None
        return Symptom(id=symptom_id, op_types=[r.op_type for r in rows], share=sum(r.share for r in rows), detail=detail)

    nms = [r for r in op_types if r.family == "NMS"]
    fallback = [r for r in op_types if r.unit == "ai_cpu" and r.family != "Cast"]
    attention = [r for r in op_types if r.op_type == "hand-written attention"]
    norm = [r for r in op_types if r.op_type in ("hand-written RMSNorm", "hand-written SwiGLU", "hand-written RoPE")]
    double = [f for f in result.findings if f.op in ("torch.float64", "torch.double", "Tensor.double")]
    cube = [r for r in op_types if r.family in ("MatMul", "Conv2D")]
    candidates = [
        symptom("nms_cpu", nms, "torchvision NMS has no NPU kernel and runs on the host"),
        symptom("aicpu_fallback", fallback, "operators listed as AI CPU / CPU fallback risks"),
        symptom("unfused_attention", attention, "softmax(q·kᵀ)·v written as separate matmul and softmax calls"),
        symptom("unfused_norm", norm, "RMSNorm / SwiGLU / RoPE written as chains of small tensor ops"),
    ]
    if double:
        candidates.append(Symptom(id="double_dtype", op_types=sorted({f.op for f in double}), share=0.0,
                                  detail=f"{len(double)} float64 use(s) in the source"))
    if cube and not result.amp_used and not result.low_precision_used:
        candidates.append(symptom("fp32_compute", cube, "no autocast / GradScaler / fp16 / bf16 in the source"))
    return [s for s in candidates if s is not None]


# --------------------------------------------------------------------------------------------
# Ranked advice
# --------------------------------------------------------------------------------------------


def rank_advice(result: ScanResult, *, top: int = 5, db_path: str | os.PathLike | None = None) -> tuple[list[dict], list[str]]:
    """Knowledge-base suggestions for the scan (``suggest/1`` items, ``expected_gain`` null) and notes.

    Only entries backed by a symptom the scan found are kept: entries matched on operator families
    alone are about runtime behaviour (pipe bounds, tiling, formats) that source code cannot show.
    """
    from opprof_advisor.advisor import open_advisor
    from opprof_advisor.recommend import suggestion_to_json

    profile = scan_profile(result)
    if not profile.op_types and not profile.symptoms:
        return [], ["no ranked advice: the scan found no operators to rank the knowledge base against"]
    try:
        advisor = open_advisor(db_path, outcomes=False)
        ranked = advisor.suggest(profile, top=len(advisor.entries), gains=False)
    except AdvisorError as exc:  # a broken knowledge base must not hide the findings
        return [], [f"cannot rank advice: {exc}"]
    backed = [s for s in ranked.suggestions if s.matched_symptoms][: max(0, top)]
    items = []
    for rank, suggestion in enumerate(backed, start=1):
        suggestion.rank = rank
        items.append(suggestion_to_json(suggestion))
    notes = []
    if not backed:
        notes.append("no ranked advice: no knowledge-base entry is backed by a symptom the scan found")
    return items, notes


# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------


def scan_to_json(result: ScanResult, suggestions: list[dict] | None = None) -> dict:
    """The ``opprof-advisor/scan/1`` document (paths relative to ``root``)."""
    return {
        "schema": SCHEMA,
        "root": result.root,
        "files_scanned": result.files_scanned,
        "files_failed": [{"path": path, "error": error} for path, error in result.files_failed],
        "findings": [finding.to_dict() for finding in result.findings],
        "suggestions": list(suggestions or []),
        "notes": list(result.notes),
    }
