"""`advisor scan`: static computation analysis of a model's Python source.

Walks a repository (``scan.walk``), parses every ``.py`` file with :mod:`ast` (``scan.source``) and
reports, with file and line, the compute-heavy operators, the operators that risk a CPU / AI CPU
fallback on Ascend, CUDA-only code (custom kernels, Triton, apex, xformers, flash-attn), migration
points (``.cuda()``, CUDA AMP, NCCL) and fusion candidates (hand-written attention, RMSNorm,
SwiGLU, RoPE). Each finding is classified by the sourced support table in
``data/cann_support.yaml`` (see :mod:`opprof_advisor.core.cann_support`).

The findings also become a *pseudo-profile* (:func:`scan_profile`) so the recommender can rank the
knowledge base against code before any NPU profile exists. No time is measured, so no gain is
claimed.
"""

from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from opprof_advisor.core.cann_support import CATEGORIES, SupportTable, load_support_table
from opprof_advisor.core.errors import AdvisorError, ScanError
from opprof_advisor.core.i18n import M_
from opprof_advisor.core.models import OpTypeStat, Profile, Symptom
from opprof_advisor.scan.jobs import FileOutcome, analyse_source, analyse_sources
from opprof_advisor.scan.source import Finding, make_finding
from opprof_advisor.scan.walk import CUDA_SUFFIXES, Walk, check_excludes, collect_files
from opprof_advisor.advice.advisor import open_advisor
from opprof_advisor.advice.recommend import suggestion_to_json

SCHEMA = "opprof-advisor/scan/1"

MAX_SOURCE_BYTES = 2_000_000  # larger .py files are generated tables, not model code
_GENERATED_SUFFIXES = ("_pb2.py", "_pb2_grpc.py")
_GENERATED_MARKERS = re.compile(rb"@generated|do not edit|auto-?generated", re.IGNORECASE)
# Files mentioning none of these cannot produce a finding: they are read, counted and not parsed.
# (Substring tests: several times faster than one alternation regex over a large tree.)
_INTERESTING = (b"torch", b"cuda", b"triton", b"apex", b"amp_C", b"xformers", b"flash_attn", b"nccl")

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


















# --------------------------------------------------------------------------------------------
# Names: imports, aliases and qualified names
# --------------------------------------------------------------------------------------------










# --------------------------------------------------------------------------------------------
# Analysing one file
# --------------------------------------------------------------------------------------------
























# --------------------------------------------------------------------------------------------
# Scanning a path
# --------------------------------------------------------------------------------------------


def scan_path(path: str | os.PathLike, exclude: tuple[str, ...] | list[str] = (), jobs: int | None = None) -> ScanResult:
    """Scan a folder (or one ``.py`` / ``.cu`` file) and return every finding with its location.

    ``jobs``: at most this many processes parse and analyse (default ``scan.jobs.default_jobs()``).
    """
    check_excludes(exclude)  # (before any work: an argument is bounded)
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
    with _without_cycle_collector():
        sources = [(rel, source) for rel, real in walk.python
                   if (source := _read_python(result, rel, real, walk)) is not None]
        for (rel, _), outcome in zip(sources, analyse_sources(sources, table, jobs)):
            _add_outcome(result, rel, outcome)
    for rel, real in walk.cuda:
        result.findings.append(_cuda_finding(table, rel, real))
    result.files_failed.extend(walk.failed)
    _finish(result, walk)
    return result


@contextmanager
def _without_cycle_collector():
    """Pause the cyclic garbage collector while files are parsed and analysed.

    A parse allocates a node object per token or so, and every 700 allocations the collector
    traverses the young objects, which here are the tree being built: ~10 % of a parse, for trees
    that hold no reference cycles (each is freed by reference counting when the next file starts).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _scan_single_file(file: Path, table: SupportTable) -> ScanResult:
    name = file.name
    result = ScanResult(root=str(file.parent))
    walk = Walk(root_real=os.path.realpath(file.parent), exclude=())
    if name.endswith(".py"):
        source = _read_python(result, name, str(file), walk)
        if source is not None:
            _add_outcome(result, name, analyse_source(name, source, table))
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
    return make_finding(table.lookup("CUDA source file"), f".{suffix} file", rel, line)


def _read_python(result: ScanResult, rel: str, real: str, walk: Walk) -> bytes | None:
    """The source of a file to parse; None (counted, skipped or listed as failed) for one not to parse."""
    try:
        with open(real, "rb") as handle:
            source = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        result.files_failed.append((rel, f"cannot read: {exc.strerror or exc}"))
        return None
    if len(source) > MAX_SOURCE_BYTES:
        walk.skip(f"files over {MAX_SOURCE_BYTES // 1_000_000} MB (likely generated)")
        return None
    if b"\0" in source:
        walk.skip("binary files with a .py name")
        return None
    if rel.endswith(_GENERATED_SUFFIXES) or _GENERATED_MARKERS.search(source[:300]):
        walk.skip("generated files")
        return None
    if not can_hold_finding(source):
        # Nothing in it can become a finding, so it is not parsed (parsing is ~90 % of a scan's time
        # otherwise); a syntax error in it goes unreported, as it changes nothing the scan says.
        result.files_scanned += 1
        return None
    return source


def _add_outcome(result: ScanResult, rel: str, outcome: FileOutcome) -> None:
    if outcome.error is not None:
        result.files_failed.append((rel, outcome.error))
        return
    result.files_scanned += 1
    result.findings.extend(outcome.findings)
    result.amp_used |= outcome.amp_used
    result.low_precision_used |= outcome.low_precision
    if outcome.is_entry:
        result.entry_points.append(rel)


def can_hold_finding(source: bytes) -> bool:
    """Whether ``source`` names anything a finding is made of (torch, CUDA, Triton, apex ...).

    Every finding comes from a call, import, attribute or string naming one of these words, so a file
    without any of them cannot hold one (tests/test_scan.py analyses every file to check it).
    """
    return any(word in source for word in _INTERESTING)


def _finish(result: ScanResult, walk: Walk) -> None:
    order = {category: i for i, category in enumerate(CATEGORIES)}
    result.findings.sort(key=lambda f: (order.get(f.category, 99), f.path, f.line, f.op))
    result.files_failed.sort()
    result.notes.extend(build_notes(result, walk))


# --------------------------------------------------------------------------------------------
# Notes and the pseudo-profile
# --------------------------------------------------------------------------------------------


def build_notes(result: ScanResult, walk: Walk) -> list[str]:
    """What the scan skipped, what it could not judge, and how to profile next (Messages: said in Chinese too)."""
    notes: list[str] = []
    if result.files_scanned == 0 and not walk.cuda:
        template = ("no Python files could be parsed under {root} — point advisor scan at the model's source folder"
                    if result.files_failed else
                    "no Python files found under {root} — point advisor scan at the model's source folder")
        notes.append(M_(template, root=result.root))
    if walk.skipped:
        parts = ", ".join(f"{count} {why}" for why, count in sorted(walk.skipped.items()))
        notes.append(M_("skipped: {parts}", parts=parts))
    if result.files_failed:
        notes.append(M_("{count} file(s) could not be read or parsed; they are listed under files_failed",
                        count=len(result.files_failed)))
    notes.extend(_precision_notes(result))
    if any(f.family for f in result.findings):
        notes.append(M_(
            "no expected gains from a static scan: the ranking uses a static estimate (occurrences × a per-family "
            "cost weight), not measured time; profile the model to get gains"
        ))
        notes.append(M_("cannot judge communication overlap: a static scan does not see timing (collect a profile)"))
    notes.extend(profiling_notes(result))
    return notes


def _precision_notes(result: ScanResult) -> list[str]:
    heavy = any(f.family in ("MatMul", "Conv2D") for f in result.findings)
    if not heavy or result.amp_used:
        return []
    if result.low_precision_used:
        return [M_("AMP not used: no autocast/GradScaler found, though fp16/bf16 tensors appear; consider "
                   "torch_npu.npu.amp.autocast (or torch.autocast(device_type='npu'))")]
    return [M_("AMP not used: no autocast/GradScaler and no fp16/bf16 found, so matmuls and convolutions run in "
               "float32; consider torch_npu.npu.amp.autocast (or torch.autocast(device_type='npu'))")]


def profiling_notes(result: ScanResult) -> list[str]:
    """The exact commands to collect a profile of this model and feed it to ``advisor suggest``."""
    entry = _pick_entry(result.entry_points)
    with_profiler = (
        "`with torch_npu.profiler.profile(activities=[torch_npu.profiler.ProfilerActivity.CPU, "
        "torch_npu.profiler.ProfilerActivity.NPU], schedule=torch_npu.profiler.schedule(wait=1, warmup=1, active=2, "
        "repeat=1), on_trace_ready=torch_npu.profiler.tensorboard_trace_handler('./npu_prof'), record_shapes=True, "
        "with_stack=True, experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level="
        "torch_npu.profiler.ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization)) as "
        "prof:`")
    msprof = f"`msprof --output=./msprof_out --task-time=on --ai-core=on --aicpu=on python {entry}`"
    return [
        M_("profile next (torch_npu): wrap the training loop in {code} and call {step} after each step; then run "
           "{suggest}", code=with_profiler, step="`prof.step()`", suggest="`advisor suggest ./npu_prof`"),
        M_("profile next (msprof): {code}; then run {suggest}", code=msprof,
           suggest="`advisor suggest ./msprof_out`"),
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
    # The details are Messages, so a report says them in Chinese; the document keeps the English.
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
        symptom("nms_cpu", nms, M_("torchvision NMS has no NPU kernel and runs on the host")),
        symptom("aicpu_fallback", fallback, M_("operators listed as AI CPU / CPU fallback risks")),
        symptom("unfused_attention", attention, M_("softmax(q·kᵀ)·v written as separate matmul and softmax calls")),
        symptom("unfused_norm", norm, M_("RMSNorm / SwiGLU / RoPE written as chains of small tensor ops")),
    ]
    if double:
        candidates.append(Symptom(id="double_dtype", op_types=sorted({f.op for f in double}), share=0.0,
                                  detail=M_("{count} float64 use(s) in the source", count=len(double))))
    if cube and not result.amp_used and not result.low_precision_used:
        candidates.append(symptom("fp32_compute", cube, M_("no autocast / GradScaler / fp16 / bf16 in the source")))
    return [s for s in candidates if s is not None]


# --------------------------------------------------------------------------------------------
# Ranked advice
# --------------------------------------------------------------------------------------------


def rank_advice(result: ScanResult, *, top: int = 5, db_path: str | os.PathLike | None = None) -> tuple[list[dict], list[str]]:
    """Knowledge-base suggestions for the scan (``suggest/1`` items, ``expected_gain`` null) and notes.

    Only entries backed by a symptom the scan found are kept: entries matched on operator families
    alone are about runtime behaviour (pipe bounds, tiling, formats) that source code cannot show.
    """
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
        notes.append(M_("no ranked advice: no knowledge-base entry is backed by a symptom the scan found"))
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
