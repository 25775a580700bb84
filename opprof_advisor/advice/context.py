"""The workload context: what ran, told once from the profile and shown in the header of the advice.

Producer (one kernel or a whole run), framework, phase, mode, model family, precision, chip and core
counts, and how many devices took part. Each value is what the data allows and ``None`` where it cannot
tell; a remedy's ``applies_to`` (vocabulary.APPLIES_KEYS) is checked against these values, and a value the
profile cannot tell never rules a remedy out (advice/remedies.py).

How each value is told:

* **producer**: ``kernel`` for ``msprof op`` / msopprof output, else ``run``.
* **framework**: ``torch_npu`` for the torch_npu profiler, ``mindspore`` for its profiler, ``vllm-ascend``
  when vLLM's own kernels ran (paged-attention cache writes), ``ascend-c`` for a kernel profile (a custom
  or CANN kernel launched on its own); a system msprof run cannot tell.
* **phase**: ``training`` when backward kernels ran, ``serving`` when vLLM's kernels ran, else ``inference``
  where the profile says so.
* **mode**: ``eager`` for torch_npu runs whose kernels run in dynamic-shape (aclnn, single-op) mode, which a
  captured graph (GE, torchair, ACLGraph) does not report; otherwise unknown.
* **family**: ``detection`` when NMS ran; ``cnn`` when convolutions hold at least CNN_SHARE of computing;
  ``moe`` when grouped matmuls or MoE routing ran; ``transformer`` when attention (fused, or BatchMatMul with
  Softmax) or RMSNorm / RoPE ran; ``multimodal`` when a 2-D / 3-D convolution holding less than CNN_SHARE ran
  beside transformer operators at most 1 / ENCODER_CONV_RATIO as often as their attention and norms (a vision
  or video encoder's patch embedding, not a per-layer convolution of a language model). ``families`` holds
  every one that fits (a detector is also a CNN).
* **precision**: the dtype class of most matrix (cube) time, else of most computing time.
* **chip**, **aic**, **aiv**: as the profile records them; a Mix Block Dim exists only on parts with
  20 or more AI Cores, so ``chips_assumed`` names the A2 / A3 parts a gain range is taken over when the
  chip is unknown.
* **ranks**: ``multi`` when collectives ran or the profile is a folder of ranks.
* **stacks**: the training stack (MindSpeed, torchtitan, FSDP2, verl...) only when the user names it with
  ``--stack`` (advice/suggest.py), with what it runs on; no profile shows it, so an entry written for one ranks
  after those that need no stack until it is named.
"""

from __future__ import annotations

import re
from typing import Any

from opprof_advisor.core.i18n import M_, Message, join_messages
from opprof_advisor.core.models import Profile
from opprof_advisor.core.thresholds import PAUSE_SHARE
from opprof_advisor.core.vocabulary import STACK_IMPLIES

#: Convolutions holding this share of computing make a run a CNN.
CNN_SHARE = 0.2
#: A2 / A3 parts with the core counts a gain range is taken over when the profile names no chip.
PLAUSIBLE_CHIPS: dict[str, tuple[int, int]] = {"Ascend910B1/B2": (24, 48), "Ascend910B3/B4": (20, 40)}

_VLLM_OPS = frozenset({"ReshapeAndCache", "ReshapeAndCacheNdKernel", "PagedAttention", "PagedAttentionOperation"})
_MOE_FAMILIES = frozenset({"GroupedMatMul"})
_MOE_WORDS = ("moe", "groupedmatmul", "moegating", "moefinalize", "moeinitrouting", "moetokenpermute")
_TRANSFORMER_FAMILIES = frozenset({"FlashAttention", "RMSNorm", "RoPE", "SwiGLU"})
#: Convolutions that run in every layer of a language model (Mamba, gated delta nets), not an encoder's stem.
_PER_LAYER_CONV = re.compile(r"conv1d|depthwise", re.IGNORECASE)
#: Families launched once or more per transformer layer, against which an encoder's convolution is counted.
_LAYER_FAMILIES = frozenset({"FlashAttention", "Softmax", "RMSNorm", "LayerNorm"})
#: An encoder's patch embedding launches at most this many times fewer than the layers' attention and norms.
ENCODER_CONV_RATIO = 4
_DTYPE_CLASS = {"BF16": "bf16", "DT_BF16": "bf16", "BFLOAT16": "bf16", "FLOAT16": "fp16", "DT_FLOAT16": "fp16",
                "FLOAT": "fp32", "DT_FLOAT": "fp32", "FLOAT32": "fp32", "INT8": "int8", "DT_INT8": "int8",
                "HF32": "hf32"}
_COMPUTE_UNITS = frozenset({"ai_core", "ai_vector", "mix_aic", "mix_aiv", "unknown"})


def workload_context(profile: Profile, stack: str | None = None) -> dict[str, Any]:
    """The context of one profile as a plain dict (the ``context`` of the suggest document); ``stack`` is the
    training stack the user named (no profile shows it), with what it runs on (vocabulary.STACK_IMPLIES)."""
    ops = [row for row in profile.op_types if row.time_us > 0]
    families = {row.family for row in ops}
    names = {row.op_type for row in ops}
    kernel = profile.producer == "msopprof"
    vllm = bool(names & _VLLM_OPS)
    compute_us = sum(row.time_us for row in ops if row.unit != "communication") or 1.0
    conv_us = sum(row.time_us for row in ops if row.family == "Conv2D")

    fams: list[str] = []
    if "NMS" in families:
        fams.append("detection")
    if conv_us / compute_us >= CNN_SHARE:
        fams.append("cnn")
    if families & _MOE_FAMILIES or any(w in row.op_type.lower() for row in ops for w in _MOE_WORDS):
        fams.append("moe")
    if families & _TRANSFORMER_FAMILIES or {"Softmax", "MatMul"} <= families and _has_batch_matmul(names):
        fams.append("transformer")
        if "cnn" not in fams and _encoder_convolution(ops):
            fams.append("multimodal")

    if kernel:
        framework = "ascend-c"
    elif vllm:
        framework = "vllm-ascend"
    elif profile.producer == "torch_npu":
        framework = "torch_npu"
    elif profile.producer == "mindspore" or profile.format.startswith("mindspore"):
        framework = "mindspore"
    else:
        framework = None
    phase = "serving" if vllm else profile.workload
    mode = "eager" if profile.producer == "torch_npu" and "dynamic_shape" in profile.symptom_ids() else None
    multi = bool(profile.ranks) or profile.producer == "cluster" or profile.communication_time_us > 0 or any(
        row.unit == "communication" for row in ops)
    chip = profile.device.get("chip") or profile.chip
    aic, aiv = profile.device.get("aic"), profile.device.get("aiv")
    excerpt = _excerpt(profile)
    context = {
        "producer": "kernel" if kernel else "run",
        "tool": profile.producer,
        "framework": framework,
        "phase": phase,
        "mode": mode,
        "family": fams[0] if fams else None,
        "families": fams,
        "precision": _precision(ops),
        "chip": chip,
        "aic": aic,
        "aiv": aiv,
        "chips_assumed": [] if aic else list(PLAUSIBLE_CHIPS),
        "ranks": "multi" if multi else "single",
        # the run's compute kernels are recorded (not a cluster summary): absent operators did not run
        "kernels_seen": any(row.unit != "communication" for row in ops),
        "excerpt": excerpt,
    }
    if stack:
        context["stacks"] = [stack, *STACK_IMPLIES.get(stack, ())]
    context["line"] = context_line(context)
    return context


def _encoder_convolution(ops) -> bool:
    """A 2-D / 3-D convolution launched far less often than the layers' attention or norms: a vision or video
    encoder's patch embedding, once per forward (a Conv1D, depthwise or per-layer convolution, as in Mamba or
    gated-delta-net layers, is part of a language model)."""
    convs = [row for row in ops if row.family == "Conv2D" and not _PER_LAYER_CONV.search(row.op_type)]
    layers = sum(row.count for row in ops if row.family in _LAYER_FAMILIES)
    return bool(convs) and sum(row.count for row in convs) * ENCODER_CONV_RATIO <= layers


def _has_batch_matmul(names: set[str]) -> bool:
    return any(name.startswith("BatchMatMul") for name in names)


def _precision(ops) -> str | None:
    """The dtype class of most cube time, else of most computing time."""
    def tally(rows) -> dict[str, float]:
        out: dict[str, float] = {}
        for row in rows:
            for dtype in row.dtypes[:1]:
                cls = _DTYPE_CLASS.get(str(dtype).upper())
                if cls:
                    out[cls] = out.get(cls, 0.0) + row.time_us
        return out
    cube = tally(r for r in ops if r.family in ("MatMul", "GroupedMatMul", "Conv2D", "FlashAttention"))
    found = cube or tally(r for r in ops if r.unit in _COMPUTE_UNITS)
    return max(found, key=found.get) if found else None


def _excerpt(profile: Profile) -> bool:
    """True when one idle gap holds most of the window's free time: an excerpt of a run or a pause, so
    shares are taken of device time rather than of the window."""
    free = sum(s.free_us for s in profile.steps)
    gaps = [s.largest_gap_us for s in profile.steps if s.largest_gap_us]
    return bool(profile.device_time_us > 0 and free and gaps and max(gaps) >= PAUSE_SHARE * free
                and free > profile.device_time_us)


def context_line(context: dict[str, Any]) -> Message:
    """``torch_npu run · inference · eager · detection, cnn · fp16 · chip unknown · 1 device``."""
    parts: list[Any] = []
    what = context.get("framework") or context.get("tool") or ""
    parts.append(M_("one kernel ({tool})", tool=what) if context["producer"] == "kernel"
                 else M_("{tool} run", tool=what))
    for key in ("phase", "mode"):
        if context.get(key):
            parts.append(context[key])
    if context.get("families"):
        parts.append(", ".join(context["families"]))
    if context.get("stacks"):
        parts.append(context["stacks"][0])
    if context.get("precision"):
        parts.append(context["precision"])
    if context.get("chip") or context.get("aic"):
        cores = f" ({context['aic']} AIC / {context['aiv']} AIV)" if context.get("aic") else ""
        parts.append(f"{context.get('chip') or ''}{cores}".strip())
    else:
        parts.append(M_("chip unknown"))
    parts.append(M_("several devices") if context["ranks"] == "multi" else M_("one device"))
    if context.get("excerpt"):
        parts.append(M_("an excerpt of the run"))
    return join_messages(parts, " · ")
