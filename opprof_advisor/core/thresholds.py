"""The sourced thresholds of the symptom checks, the unit sets they use, and what to collect when data is missing."""

from __future__ import annotations

import re

from opprof_advisor.core.i18n import N_


#: In whole-model profiles, kernels shorter than this are not judged one by one for bound class or
#: block dim: msprof-analyze's ``_MIN_TASK_DURATION = 20`` (operator_bound_checker.py; FORMATS.md §6;
#: KB-SOURCES #5, #50). They are summed instead (``small_kernels``). ``msprof op`` kernels are always
#: judged: the user chose that kernel.
MIN_TASK_DURATION_US = 20.0
#: A pipe is "bound" when its time-weighted ratio reaches the threshold of its side. msprof-analyze:
#: ``operator_bound_ratio = 0.8`` (config.ini, FORMATS.md §1.6) for the AI Core pipes; its vector
#: rules use 0.7 for vec / mte2 / mte3 and FA fixpipe 0.75 (aicore_performance.yaml, KB-SOURCES #50).
BOUND_THRESHOLDS: dict[str, float] = {
    "aic_cube": 0.8, "aic_scalar": 0.8, "aic_mte2": 0.8, "aic_mte3": 0.8, "aic_fixpipe": 0.75,
    "aiv_vec": 0.7, "aiv_scalar": 0.8, "aiv_mte2": 0.7, "aiv_mte3": 0.7,
    "cube": 0.8, "vec": 0.7, "scalar": 0.8, "mte2": 0.8, "mte3": 0.8,
}
#: Pipe key -> bound class (mte1 moves data inside the core and has no class of its own).
PIPE_CLASS: dict[str, str] = {
    "aic_cube": "cube", "cube": "cube", "aiv_vec": "vector", "vec": "vector",
    "aic_scalar": "scalar", "aiv_scalar": "scalar", "scalar": "scalar",
    "aic_mte2": "mte2", "aiv_mte2": "mte2", "mte2": "mte2",
    "aic_mte3": "mte3", "aiv_mte3": "mte3", "mte3": "mte3", "aic_fixpipe": "fixpipe",
}
#: An op type counts as "hot" (worth a bound / block-dim / fp32 symptom) from this share of compute
#: time: msprof-analyze's fusible-sequence rule uses 1 % (KB-SOURCES #51).
HOT_SHARE = 0.01
#: AI CPU and float64 findings need one kernel of at least MIN_TASK_DURATION_US (msprof-analyze
#: flags AI_CPU tasks above 20 us, KB-SOURCES #5) or this share of compute time in total.
AICPU_MIN_SHARE = 0.01
#: TransData / format conversion is reported from 5 % of compute time: msprof-analyze ranks an
#: issue >= 5 % of the step as high priority (KB-SOURCES #71).
TRANSDATA_SHARE = 0.05
#: Exposed (not overlapped) communication is reported from 5 % of the step (KB-SOURCES #71).
COMM_EXPOSED_SHARE = 0.05
#: Free (idle) device time is reported from 10 % of the step: Huawei's MindStudio profiling case
#: calls Free under 10 % normal and above 30 % a sign of other load on the host (KB-SOURCES #9, hiascend
#: mindstudio 830 toolsample6_091). MindSpeed-LLM's FSDP2 guide asks for under 3 % (KB-AUDIT N17): that
#: is a target for a tuned LLM job, not the point where idle time becomes the thing to fix first.
FREE_SHARE = 0.10
FREE_HIGH_SHARE = 0.30
#: Free time computed from task intervals is not called host-bound when one idle gap holds at least this
#: share of the window: dispatch gaps are many and short; one long gap is an excerpt or a paused run
#: (checkpoint, evaluation, a blocking sync), which the host-bound remedies do not address.
PAUSE_SHARE = 0.5
#: launch_bound: at least this many compute kernels, at least half of them shorter than
#: MIN_TASK_DURATION_US, and the median gap before a short kernel at least its median duration.
LAUNCH_MIN_KERNELS = 50
LAUNCH_SHORT_FRACTION = 0.5
#: small_kernels: kernels too short to judge one by one that add up to this share of compute time.
#: This project's threshold: a tenth of the compute time is worth a fusion or graph-capture pass.
SMALL_KERNEL_SHARE = 0.10
#: block_imbalance: slowest block >= 1.5 x the mean block (a kernel lasts as long as its slowest
#: block, so the mean/max ratio bounds what rebalancing can recover; FORMATS.md §1.6 example).
IMBALANCE_RATIO = 1.5
#: A side of a mix kernel (cube or vector sub-cores) is judged for imbalance only when its slowest
#: sub-core is busy for at least this share of the task: an idle side says nothing about balance.
WORKING_SIDE_SHARE = 0.25
#: Block dim: a launch leaves cores idle in its last wave when the block count is not a multiple of
#: the core count (msprof-analyze block_dim_checker, FORMATS.md §6, KB-SOURCES #43). Reported when at
#: least this share of the core slots is idle (this project's threshold: a smaller tail is noise).
IDLE_SLOT_SHARE = 0.05
#: low_parallelism: one or two blocks on a chip with at least this many cores of the unit.
FEW_BLOCKS = 2
FEW_BLOCKS_MIN_CORES = 8
#: shape_recompile: online compilation (opCompile-style host APIs) of at least this share of the step
#: (msprof's best practice on compile latency shows Free at 22 % from frequent online compilation,
#: KB-AUDIT N22; 5 % as for every other high-priority issue, KB-SOURCES #71).
COMPILE_SHARE = 0.05
#: setup_in_window: input generation (random-number kernels), or a first step at least WARMUP_RATIO x
#: the median of the others, taking this share of the window. This project's threshold: at a tenth
#: of the window the profile no longer describes the steady state.
SETUP_SHARE = 0.10
WARMUP_RATIO = 2.0
WARMUP_MIN_STEPS = 3
#: slow_rank: the slowest rank computes longer than the fastest by this share of the step
#: (msprof-analyze's slow-rank / slow-link analyzers flag a gap ratio above 5 %, KB-AUDIT §3.1).
SLOW_RANK_GAP = 0.05
#: slow_link: a rank's bandwidth on one transport below this share of the median rank's, for links that
#: carried at least SLOW_LINK_MIN_MB per rank (this project's threshold; small transfers are latency, not
#: bandwidth). msprof-analyze's slow-link analyzer compares the same per-transport bandwidths.
SLOW_LINK_SHARE = 0.8
SLOW_LINK_MIN_MB = 1.0
#: memory_fragmentation: reserved − allocated at the memory peak above this share of the reserved peak and
#: MEMORY_MIN_BYTES (this project's thresholds: a tenth of the peak is worth an allocator setting).
FRAGMENTATION_SHARE = 0.10
#: memory_outside_allocator: the process's HBM beyond the allocator's reserved peak above this share of it.
OUTSIDE_SHARE = 0.10
MEMORY_MIN_BYTES = 64 * 1024 * 1024
#: memory_optimizer_temporaries: the optimizer's multi-tensor (``_foreach_*``) operators hold this share of the
#: reserved peak at the peak, and MEMORY_MIN_BYTES (this project's threshold: below it the for-loop's slower step
#: is not worth the memory).
OPTIMIZER_TEMPORARY_SHARE = 0.05
#: memory_activations: tensors the forward pass allocated and the backward pass freed hold this share of the reserved
#: peak at the peak, and MEMORY_MIN_BYTES (this project's threshold: a fifth of the peak is worth recomputing).
ACTIVATION_SHARE = 0.20
#: The fraction of those activations recomputation gives back (GAIN-MODELS.md "Memory: activations": low … high).
RECOMPUTE_SAVES = (0.3, 0.7)
#: memory_static: memory allocated before the profiled window and still held at the peak (weights, gradients and
#: optimizer states in training) above this share of the reserved peak, and MEMORY_MIN_BYTES (this project's
#: threshold, as for activations: a fifth of the peak is worth sharding).
STATIC_SHARE = 0.20
#: The share of a training run's static memory that sharding Adam's state over d data-parallel ranks gives back, at
#: d = 2 and as d grows: two thirds of the bytes per parameter are optimizer state both for fp32 parameters whose
#: gradients come and go each step (4 bytes of parameter, 8 of Adam's two moments: "at least twice the model size",
#: https://pytorch.org/tutorials/recipes/zero_redundancy_optimizer.html) and for 16-bit parameters with fp32
#: gradients and master weights (18 bytes -> 6 + 12/d,
#: NVIDIA/Megatron-LM@40ce7c8ac2d292200a90e6e2ee3d762d297c3130:docs/source/distrib_optimizer.md).
DISTRIBUTED_OPTIMIZER_SAVES = (1 / 3, 2 / 3)
#: memory_near_capacity: the device's HBM peak at or above this share of the part's memory (this project's
#: threshold: a tenth left is what one more activation or a fragmentation spike can take).
NEAR_CAPACITY = 0.90
#: ub_bank_conflict: vector cycles stalled on UB bank / bank-group conflicts (ResourceConflictRatio,
#: time-weighted). This project's threshold: one cycle in twenty.
BANK_CONFLICT_RATIO = 0.05
#: l2_cache_miss: read hit rate of the working side below this while MTE2 is the busiest pipe. This
#: project's threshold: most loads then go out to HBM (L2 is ~4x faster than GM, KB-AUDIT N50).
L2_HIT_RATE = 0.5
#: communication_wait fires when waiting (Wait, which includes Synchronization) plus Idle time is at least
#: this share of the collectives' elapsed time in communication.json. This project's threshold ("mostly" =
#: at least half). CANN's documented slow-rank cue is a Wait Time Ratio = wait / (wait + transit) above 0.2
#: (hiascend CANN profiling guide, "Performance Tuning Suggestions", atlasprofiling_16_2260); it leaves out
#: Idle = elapse - transit - wait, which the same guide calls the op's dispatch time (atlasprofiling_16_0027),
#: i.e. time lost to the host, so it is reported in the detail line rather than used alone.
COMM_WAIT_SHARE = 0.5
CANN_WAIT_RATIO = 0.2
#: Kernels looked back / ahead from a Softmax for a BatchMatMul (unfused attention chain).
ATTENTION_WINDOW = 4

FLOAT64_DTYPE = re.compile(r"\b(?:DT_)?(?:DOUBLE|FLOAT64)\b", re.I)
INT64_DTYPE = re.compile(r"\b(?:DT_)?U?INT64\b", re.I)
FP32_DTYPE = re.compile(r"^(?:DT_)?FLOAT(?:32)?$", re.I)
#: Kernels that generate input data (torch.randn / rand on the NPU run on the DSA engine); the dropout
#: masks (DSAGenBitMask, DSAStatelessGenBitMask) are steady-state work and do not count.
INPUT_GENERATION = re.compile(r"^(?:DSA)?(?:Stateless)?Random|^DSA(?:Stateless)?(?:Normal|Uniform|TruncatedNormal)",
                               re.I)
CUBE_FAMILIES = frozenset({"MatMul", "GroupedMatMul", "Conv2D"})
AIC_UNITS = frozenset({"ai_core", "mix_aic", "mix_aiv"})
AIV_UNITS = frozenset({"ai_vector", "mix_aic", "mix_aiv"})
NO_PIPE_UNITS = frozenset({"ai_cpu", "communication", "dsa", "other"})

#: What to collect for a missing piece of data, per producer (msopprof, msprof, torch_npu). A note's
#: remedy always fits the tool that wrote the profile: msprof op has no profiler_level.
REMEDIES: dict[str, dict[str, str]] = {
    "level1": {"torch_npu": N_("profiler_level=Level1"), "msprof": N_("msprof --task-time=l1"),
               "mindspore": N_("mindspore.Profiler(profiler_level=ProfilerLevel.Level1)")},
    "shapes": {"torch_npu": N_("profiler_level=Level1 and record_shapes=True"), "msprof": N_("msprof --task-time=l1"),
               "mindspore": N_("mindspore.profiler.profile(record_shapes=True) at ProfilerLevel.Level1")},
    "op_state": {"torch_npu": N_("profiler_level=Level1 on CANN >= 8.0"), "msprof": N_("msprof on CANN >= 8.0"),
                 "mindspore": N_("mindspore.Profiler(profiler_level=ProfilerLevel.Level1) on CANN >= 8.0")},
    "pipe": {"torch_npu": N_("experimental_config aic_metrics=AiCMetrics.PipeUtilization"),
             "msprof": N_("msprof --aic-metrics=PipeUtilization"), "msopprof": N_("msprof op --aic-metrics=PipeUtilization"),
             "mindspore": N_("mindspore.Profiler(aicore_metrics=AicoreMetrics.PipeUtilization)")},
    "cores": {"torch_npu": N_("export_type=db (NPU_INFO names the chip), or keep PROF_*/device_*/info.json.*"),
              "msprof": N_("the PROF_*/device_*/info.json.* files kept beside the export"),
              "msopprof": N_("the dump/op_basic_info.txt of the OPPROF_* folder kept (Run Soc Version)"),
              "mindspore": N_("the PROF_* folder kept inside the *_ascend_ms folder (device_*/info.json.*)")},
    "steps": {"torch_npu": N_("the torch_npu profiler, which writes ASCEND_PROFILER_OUTPUT/step_trace_time.csv"),
              "msprof": N_("msprof --task-time=l1 (task start times in op_summary) or the msprof DB export")},
    "communication_json": {"torch_npu": N_("profiler_level=Level1 (communication.json)"),
                           "mindspore": N_("mindspore.Profiler(profiler_level=ProfilerLevel.Level1) (communication.json)"),
                           "msprof": N_("the torch_npu profiler at Level1 (communication.json), or msprof-analyze "
                                     "cluster over all ranks")},
    "api_statistic": {"torch_npu": N_("profiler_level=Level1 (api_statistic.csv)"),
                      "msprof": N_("msprof --export=on (api_statistic_*.csv) or the msprof DB export (CANN_API)")},
    "whole_run": {"msopprof": N_("the whole run profiled with msprof or the torch_npu profiler")},
    "steady_state": {"torch_npu": N_("a profiler schedule (wait, warmup, active) that records whole steady-state steps"),
                     "msprof": N_("a profile of whole steady-state iterations (msprof --delay / --duration)")},
    "per_block": {"msopprof": N_("msprof op --aic-metrics=PipeUtilization, keeping every launch folder")},
}
