"""The fixed vocabularies shared by the knowledge base, the profile readers and the recommender.

Keep every controlled word here: a KB entry may only name symptoms listed in SYMPTOMS, and the
readers may only emit those ids.
"""

from __future__ import annotations

from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.core.i18n import M_, N_

#: Profile symptoms: id -> one-line meaning. KB entries reference these ids in ``symptoms``.
SYMPTOMS: dict[str, str] = {
    "aicpu_fallback": N_("compute operators run on the AI CPU instead of AI Core / AI Vector"),
    "double_dtype": N_("float64 / int64 work that forces AI CPU kernels or slow paths"),
    "transdata_overhead": N_("TransData / format-conversion kernels take a visible share of device time"),
    "low_block_dim": N_("kernels launch fewer blocks than the chip has cores (or not a multiple of them)"),
    "block_imbalance": N_("per-block (per-core) time is uneven inside one kernel"),
    "cube_bound": N_("the cube (matrix) pipe is the busiest pipe of the hot kernels"),
    "vector_bound": N_("the vector pipe is the busiest pipe of the hot kernels"),
    "mte2_bound": N_("loads from global memory (MTE2) limit the hot kernels"),
    "mte3_bound": N_("stores to global memory (MTE3) limit the hot kernels"),
    "scalar_bound": N_("the scalar pipe limits the hot kernels (control flow, address arithmetic)"),
    "fixpipe_bound": N_("the fixpipe (L0C to GM/L1 write-out) limits the hot cube kernels"),
    "no_bound": N_("hot kernels long enough to matter keep every pipe below the bound threshold"),
    "dynamic_shape": N_("operators run in dynamic-shape mode (OP State = dynamic)"),
    "launch_bound": N_("many short kernels whose gaps are comparable to their durations (host dispatch bound)"),
    "unfused_attention": N_("attention computed as separate BatchMatMul / Softmax kernels instead of a fused kernel"),
    "unfused_norm": N_("normalisation or activation built from chains of small vector kernels (RMSNorm, SwiGLU, RoPE)"),
    "fp32_compute": N_("matrix work runs in float32 on the cube unit (no AMP / HF32)"),
    "communication_exposed": N_("communication time not hidden behind computation"),
    "communication_wait": N_("exposed communication is mostly waiting for other ranks or the host, not transferring data"),
    "nms_cpu": N_("non-maximum suppression runs on the AI CPU / host"),
    "host_bound": N_("the device idles (Free time) for a large share of the step: the host does not keep it fed"),
    "small_kernels": N_("many kernels too short to judge one by one add up to a large share of device time (latency bound)"),
    "low_parallelism": N_("kernels launch only one or two blocks, so almost every core of the chip idles"),
    "setup_in_window": N_("the profiled window is dominated by set-up work (input generation, one-off copies, warm-up), not the steady state"),
    "shape_recompile": N_("operators are compiled again for new shapes during the run (dynamic shapes with online compilation)"),
    "slow_rank": N_("one rank computes longer than its peers, which wait for it inside collectives"),
    "slow_link": N_("one communication link or transport moves data well below the bandwidth of the others"),
    "ub_bank_conflict": N_("vector instructions stall on Unified Buffer bank or bank-group conflicts"),
    "l2_cache_miss": N_("the kernel's L2 cache hit rate is low, so its loads go out to HBM"),
    "memory_fragmentation": N_("at the memory peak the allocator holds reserved memory no tensor uses (fragmentation, "
                               "cached blocks)"),
    "serving_batch_small": N_("serving: the decode batch follows the few requests the clients keep in flight while the "
                              "KV cache has room for more"),
    "serving_kv_exhausted": N_("serving: the KV cache runs out (blocks nearly all used, requests swapped or preempted)"),
    "serving_prefill_stall": N_("serving: prefill in the same iterations stretches the decode step (TPOT tail)"),
    "serving_host_gap": N_("serving: the device waits for the scheduler between forwards"),
    "memory_near_capacity": N_("the device's memory peaks near the part's capacity: little headroom before running "
                               "out"),
    "memory_outside_allocator": N_("the process holds device memory outside the framework's allocator "
                                   "(communication buffers, runtime, workspaces)"),
    "memory_optimizer_temporaries": N_("at the memory peak the optimizer step's multi-tensor (foreach) operators hold "
                                       "temporaries as large as a share of the parameters"),
    "memory_activations": N_("at the memory peak, activations the forward pass saved for the backward pass hold "
                             "much of the memory"),
    "memory_static": N_("at the memory peak, memory allocated before the profiled window and held throughout (static "
                        "memory: weights, gradients, optimizer states) holds much of it"),
}

#: Keys of an entry's ``requires:`` front matter: conditions that must all hold for the entry to apply
#: (the recommender never suggests an entry whose requirement fails; ``--explain`` says which). Each item
#: is a one-key mapping; a list value means "any of these".
REQUIRE_KEYS: dict[str, str] = {
    "symptom": "one of these symptom ids was found in the profile",
    "operator": "one of these operator families ran in the profile",
    "unit": "the kernels the entry addresses ran on one of these units (vocabulary UNITS)",
    "dtype": "the kernels the entry addresses have one of these input data types (DTYPES)",
    "producer": "the profile was written by one of these tools (PRODUCERS)",
    "workload": "the run is training (backward kernels present) or inference (none)",
    "min_share": "what the entry addresses holds at least this share of device time (0..1)",
}

#: Keys of an entry's ``applies_to:`` front matter (required, with ``producer``): the workloads its advice
#: fits, checked against the workload context detected from the profile (advice/context.py). A key left
#: out means any; a context value the profile cannot tell does not rule an entry out.
APPLIES_KEYS: dict[str, tuple[str, ...]] = {
    # kernel: one operator under msprof op / msopprof; run: a whole application (msprof, torch_npu, cluster)
    "producer": ("kernel", "run"),
    "framework": ("torch_npu", "mindspore", "vllm-ascend", "mindie", "triton-ascend", "ascend-c"),
    "phase": ("training", "inference", "serving"),
    "mode": ("eager", "ge-graph", "torchair", "aclgraph"),
    "family": ("cnn", "detection", "transformer", "moe", "multimodal", "recommendation"),
    "ranks": ("single", "multi"),
    # the training or RL stack above torch_npu: no profile shows it, so only the user's --stack confirms it
    "stack": ("megatron", "mindspeed", "mindspeed-llm", "mindspeed-mm", "mindspeed-rl", "torchtitan", "fsdp2", "verl"),
}

#: What a stack given with --stack also is: MindSpeed's suites run on MindSpeed core, itself on Megatron;
#: torchtitan shards with FSDP2.
STACK_IMPLIES: dict[str, tuple[str, ...]] = {
    "torchtitan": ("fsdp2",),
    "mindspeed": ("megatron",),
    "mindspeed-llm": ("mindspeed", "megatron"),
    "mindspeed-mm": ("mindspeed", "megatron"),
    "mindspeed-rl": ("mindspeed-llm", "mindspeed", "megatron"),
}

#: Tools that write profiles, for ``requires: producer`` (profile formats map onto these).
PRODUCERS: dict[str, str] = {
    "msopprof": "msprof op / msopprof, one operator on the device or in the simulator",
    "msprof": "system msprof (op_summary, msprof DB, msprof timeline)",
    "torch_npu": "the torch_npu profiler (kernel_details, ascend_pytorch_profiler DB, trace_view)",
    "cluster": "msprof-analyze cluster summary (cluster_analysis_output)",
    "mindspore": "the MindSpore profiler, 2.3+ (``*_ascend_ms`` kernel_details, ascend_mindspore_profiler DB)",
}

#: Canonical input data types for ``requires: dtype`` (profile spellings are normalised onto these:
#: DT_FLOAT / FLOAT32 -> FLOAT, BFLOAT16 -> BF16, FLOAT64 -> DOUBLE).
DTYPES: tuple[str, ...] = ("FLOAT", "FLOAT16", "BF16", "HF32", "DOUBLE", "INT8", "INT16", "INT32", "INT64",
                           "UINT8", "UINT64", "BOOL", "INT4")

#: Workload kinds for ``requires: workload``.
WORKLOADS: tuple[str, ...] = ("training", "inference")

#: Knowledge-base entry kinds and the body sections each kind is expected to have.
KINDS: dict[str, tuple[str, ...]] = {
    "case": ("Symptoms", "Diagnosis", "Fix", "Result"),
    "recipe": ("When to use", "Steps", "Pitfalls"),
    "pattern": ("Signature", "Why it happens", "What to do"),
    "tip": ("When", "How", "Caveats"),
}

#: Evidence grades (after the case-evidence policy of Huawei's agent knowledge base).
EVIDENCE_GRADES: dict[str, str] = {
    "A": N_("primary source with measured numbers"),
    "B": N_("primary source without numbers"),
    "C": N_("official guide or sample"),
    "D": N_("second-hand"),
}

#: Scope of a gain range in a KB entry.
GAIN_SCOPES: dict[str, str] = {
    "operators": "fraction of the matched operators' time the fix recovers",
    "end_to_end": "whole-model result observed in the case; not a promise for another model",
}

#: Execution units a kernel can run on (normalised from Task Type / Accelerator Core / Op Type).
UNITS: dict[str, str] = {
    "ai_core": "AI Core (cube)",
    "ai_vector": "AI Vector",
    "mix_aic": "mixed cube+vector, AIC led",
    "mix_aiv": "mixed cube+vector, AIV led",
    "ai_cpu": "AI CPU",
    "communication": "communication (HCCL)",
    "dsa": "DSA engine",
    "other": "other engine (DVPP, SDMA, ...)",
    "unknown": "unit not recorded (e.g. level0 profile)",
}

#: The four display classes of a unit (used for colours and coarse grouping).
UNIT_CLASS: dict[str, str] = {
    "ai_core": "AI Core",
    "mix_aic": "AI Core",
    "mix_aiv": "AI Vector",
    "ai_vector": "AI Vector",
    "ai_cpu": "AI CPU",
    "communication": "communication",
    "dsa": "other",
    "other": "other",
    "unknown": "unknown",
}

#: Pipe-bound classes of an operator.
BOUND_CLASSES: tuple[str, ...] = ("cube", "vector", "mte2", "mte3", "scalar", "fixpipe", "none", "unknown")

#: Bound class -> the symptom id that reports it.
BOUND_SYMPTOM: dict[str, str] = {
    "cube": "cube_bound",
    "vector": "vector_bound",
    "mte2": "mte2_bound",
    "mte3": "mte3_bound",
    "scalar": "scalar_bound",
    "fixpipe": "fixpipe_bound",
    "none": "no_bound",
}

#: Descriptive symptoms: they say how kernels run, not what went wrong. The bound classes say which pipe limits
#: the hot kernels, ``dynamic_shape`` how the run executes (binary kernels report OP State "dynamic" in healthy
#: runs, KB-SOURCES #30). Ranking weighs them below problems; similar-case matching leaves them out.
DESCRIPTIVE_SYMPTOMS = frozenset(BOUND_SYMPTOM.values()) | {"dynamic_shape"}


_DTYPE_ALIASES = {"FLOAT32": "FLOAT", "FP32": "FLOAT", "FP16": "FLOAT16", "HALF": "FLOAT16", "BFLOAT16": "BF16",
                  "FLOAT64": "DOUBLE", "FP64": "DOUBLE", "HIFLOAT32": "HF32"}


def canonical_dtype(name: str) -> str:
    """``DT_FLOAT`` / ``float32`` -> ``FLOAT``, ``DT_BF16`` / ``bfloat16`` -> ``BF16`` (see DTYPES)."""
    text = name.strip().upper()
    if text.startswith("DT_"):
        text = text[3:]
    if text.startswith("TORCH."):
        text = text[6:]
    return _DTYPE_ALIASES.get(text, text)


def check_stack(stack: str | None) -> None:
    """AdvisorError (usage) unless ``stack`` is None or a training stack the knowledge base writes for."""
    if stack is not None and stack not in APPLIES_KEYS["stack"]:
        raise AdvisorError(M_("unknown stack {stack}", stack=repr(stack)),
                           hint=M_("use one of {stacks}", stacks=", ".join(APPLIES_KEYS["stack"])))
