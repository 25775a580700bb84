"""Generate data/bench/: labelled scenario profiles for `advisor eval` (the recommender's quality benchmark).

Each scenario is a workload written with ``opprof_advisor.testing`` in one of the producer
formats (torch_npu text, torch_npu DB, system msprof op_summary, msprof DB, msOpProf device),
with launch counts, durations and shares taken from the shape of real runs of that kind of model
(one step or one inference batch, sizes noted per scenario). The label (``expect``) is the advice
an Ascend engineer would give first for that profile; a healthy profile expects that nothing
promises more than ``max_gain_pct`` % of device time.

Run from the repository root:  python data/make_bench.py  [--out data/bench]
The output is deterministic (fixed seeds) and small; commit it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opprof_advisor import testing  # noqa: E402
from opprof_advisor.testing import KernelSpec  # noqa: E402

BENCH_SCHEMA = "opprof-advisor/bench/1"

# Pipe ratios of healthy kernels: busy but no pipe dominating (what a tuned fp16 kernel looks like).
BALANCED_CUBE = {"aic_cube": 0.52, "aic_mte1": 0.33, "aic_mte2": 0.38, "aic_fixpipe": 0.14, "aic_scalar": 0.08}
BALANCED_VEC = {"aiv_vec": 0.42, "aiv_mte2": 0.36, "aiv_mte3": 0.22, "aiv_scalar": 0.10}


def k(name: str, op_type: str, task_type: str, duration_us: float, count: int, **kw) -> KernelSpec:
    """A kernel spec; cube/vector pipes default to balanced ratios unless given."""
    if "pipe" not in kw:
        if task_type in ("AI_CORE", "MIX_AIC"):
            kw["pipe"] = dict(BALANCED_CUBE)
        elif task_type in ("AI_VECTOR_CORE", "MIX_AIV"):
            kw["pipe"] = dict(BALANCED_VEC)
    kw.setdefault("jitter", 0.08)
    return KernelSpec(name=name, op_type=op_type, task_type=task_type, duration_us=duration_us, count=count, **kw)


# ------------------------------------------------------------------------------------------------
# Workloads
# ------------------------------------------------------------------------------------------------


def yolov8s_nms_aicpu() -> list[KernelSpec]:
    """YOLOv8s inference, batch 16 at 640x640: backbone/neck convs, then NMS per image on the AI CPU."""
    return [
        k("aclnnConvolution_Conv2D", "Conv2D", "AI_CORE", 182.0, 64, block_dim=20, input_dtypes="FLOAT16;FLOAT16",
          input_formats="NC1HWC0;FRACTAL_Z", input_shapes="16,64,160,160;64,64,3,3"),
        k("aclnnSilu_Swish", "Swish", "AI_VECTOR_CORE", 44.0, 57, block_dim=40),
        k("aclnnCat_ConcatD", "ConcatD", "AI_VECTOR_CORE", 58.0, 13, block_dim=40),
        k("aclnnSplitWithSize_SplitVD", "SplitVD", "AI_VECTOR_CORE", 29.0, 8, block_dim=40),
        k("aclnnUpsampleNearest2d_ResizeNearestNeighborV2", "ResizeNearestNeighborV2", "AI_VECTOR_CORE", 118.0, 2,
          block_dim=40),
        k("aclnnMaxPool2dWithIndices_MaxPoolV3", "MaxPoolV3", "AI_VECTOR_CORE", 81.0, 3, block_dim=40),
        k("aclnnAdd_Add", "Add", "AI_VECTOR_CORE", 24.0, 14, block_dim=40),
        k("aclnnSoftmax_SoftmaxV2", "SoftmaxV2", "AI_VECTOR_CORE", 146.0, 1, block_dim=40),
        k("aclnnSigmoid_Sigmoid", "Sigmoid", "AI_VECTOR_CORE", 88.0, 1, block_dim=40),
        k("aclnnMul_Mul", "Mul", "AI_VECTOR_CORE", 19.0, 10, block_dim=40),
        k("TransData", "TransData", "AI_VECTOR_CORE", 52.0, 6, block_dim=40, input_formats="NCHW",
          output_formats="NC1HWC0"),
        k("NonMaxSuppressionV3", "NonMaxSuppressionV3", "AI_CPU", 262.0, 16, block_dim=1,
          input_dtypes="FLOAT;FLOAT;INT32;FLOAT;FLOAT", input_shapes="8400,4;8400;;;"),
    ]


def resnet50_train_transdata() -> list[KernelSpec]:
    """ResNet-50 training step, batch 256, AMP: NCHW tensors converted to 5HD around every conv."""
    return [
        k("Conv2D", "Conv2D", "AI_CORE", 214.0, 53, block_dim=24, input_formats="NC1HWC0;FRACTAL_Z"),
        k("Conv2DBackpropInput", "Conv2DBackpropInput", "AI_CORE", 262.0, 52, block_dim=24),
        k("Conv2DBackpropFilter", "Conv2DBackpropFilter", "AI_CORE", 241.0, 53, block_dim=24),
        k("BNTrainingReduce", "BNTrainingReduce", "AI_VECTOR_CORE", 38.0, 53, block_dim=48),
        k("BNTrainingUpdate", "BNTrainingUpdate", "AI_VECTOR_CORE", 46.0, 53, block_dim=48),
        k("BNTrainingUpdateGrad", "BNTrainingUpdateGrad", "AI_VECTOR_CORE", 51.0, 53, block_dim=48),
        k("BNTrainingReduceGrad", "BNTrainingReduceGrad", "AI_VECTOR_CORE", 44.0, 53, block_dim=48),
        k("ReluV2", "ReluV2", "AI_VECTOR_CORE", 24.0, 49, block_dim=48),
        k("ReluGradV2", "ReluGradV2", "AI_VECTOR_CORE", 26.0, 49, block_dim=48),
        k("TransData", "TransData", "AI_VECTOR_CORE", 37.0, 224, block_dim=48, input_formats="NCHW",
          output_formats="NC1HWC0"),
        k("MatMulV2", "MatMulV2", "AI_CORE", 41.0, 3, block_dim=24),
        k("ApplyMomentum", "ApplyMomentum", "AI_VECTOR_CORE", 9.0, 161, block_dim=8),
    ]


def layers(n: int, ops: list[tuple]) -> list[KernelSpec]:
    """Kernels of ``n`` identical layers, in launch order within each layer.

    Every spec gets ``count=n``, so the synthetic timeline interleaves them layer by layer in the
    order given (as a real transformer step does), e.g. BatchMatMul -> Softmax -> BatchMatMul.
    """
    return [k(name, op_type, unit, dur, n, **kw) for name, op_type, unit, dur, kw in ops]


def bert_int64_cast() -> list[KernelSpec]:
    """BERT-base fine-tuning forward, batch 32 x 512, with int64 mask casts left on the AI CPU."""
    v, c = "AI_VECTOR_CORE", "AI_CORE"
    return layers(12, [
        ("Cast", "Cast", "AI_CPU", 168.0, {"block_dim": 1, "input_dtypes": "INT64", "output_dtypes": "FLOAT",
                                            "input_shapes": "32,512"}),
        ("aclnnMatmul_MatMulV2_q", "MatMulV2", c, 96.0, {"block_dim": 20}),
        ("aclnnMatmul_MatMulV2_k", "MatMulV2", c, 96.0, {"block_dim": 20}),
        ("aclnnMatmul_MatMulV2_v", "MatMulV2", c, 96.0, {"block_dim": 20}),
        ("aclnnBatchMatmul_BatchMatMulV2_qk", "BatchMatMulV2", c, 88.0, {"block_dim": 20}),
        ("aclnnAdd_Add_mask", "Add", v, 21.0, {"block_dim": 40}),
        ("aclnnSoftmax_SoftmaxV2", "SoftmaxV2", v, 61.0, {"block_dim": 40}),
        ("aclnnDropoutDoMask_DropOutDoMaskV3", "DropOutDoMaskV3", v, 23.0, {"block_dim": 40}),
        ("aclnnBatchMatmul_BatchMatMulV2_av", "BatchMatMulV2", c, 84.0, {"block_dim": 20}),
        ("aclnnMatmul_MatMulV2_o", "MatMulV2", c, 96.0, {"block_dim": 20}),
        ("aclnnLayerNorm_LayerNormV3_1", "LayerNormV3", v, 34.0, {"block_dim": 40}),
        ("aclnnMatmul_MatMulV2_ffn1", "MatMulV2", c, 372.0, {"block_dim": 20}),
        ("aclnnGelu_Gelu", "Gelu", v, 42.0, {"block_dim": 40}),
        ("aclnnMatmul_MatMulV2_ffn2", "MatMulV2", c, 368.0, {"block_dim": 20}),
        ("aclnnLayerNorm_LayerNormV3_2", "LayerNormV3", v, 34.0, {"block_dim": 40}),
        ("Equal", "Equal", "AI_CPU", 74.0, {"block_dim": 1, "input_dtypes": "INT64;INT64", "output_dtypes": "BOOL"}),
    ])


def maskrcnn_index_aicpu() -> list[KernelSpec]:
    """Mask R-CNN training step, batch 8: ROI sampling with NonZero / IndexPut / gather on the AI CPU."""
    return [
        k("Conv2D", "Conv2D", "AI_CORE", 176.0, 70, block_dim=24),
        k("Conv2DBackpropInput", "Conv2DBackpropInput", "AI_CORE", 205.0, 64, block_dim=24),
        k("Conv2DBackpropFilter", "Conv2DBackpropFilter", "AI_CORE", 198.0, 70, block_dim=24),
        k("BNInfer", "BNInfer", "AI_VECTOR_CORE", 31.0, 53, block_dim=48),
        k("ReluV2", "ReluV2", "AI_VECTOR_CORE", 22.0, 60, block_dim=48),
        k("ROIAlign", "ROIAlign", "AI_CORE", 310.0, 4, block_dim=24),
        k("NonZero", "NonZero", "AI_CPU", 420.0, 14, block_dim=1, input_dtypes="BOOL", output_dtypes="INT64",
          op_state="dynamic"),
        k("IndexPutV2", "IndexPutV2", "AI_CPU", 365.0, 10, block_dim=1, input_dtypes="FLOAT;INT64",
          op_state="dynamic"),
        k("GatherV2", "GatherV2", "AI_CPU", 190.0, 18, block_dim=1, input_dtypes="FLOAT;INT64", op_state="dynamic"),
        k("SigmoidCrossEntropyWithLogitsV2", "SigmoidCrossEntropyWithLogitsV2", "AI_VECTOR_CORE", 58.0, 3,
          block_dim=48),
    ]


def llama_unfused_attention() -> list[KernelSpec]:
    """LLaMA-2-7B forward on one card, batch 4 x 4096: attention as BatchMatMul + Softmax per layer."""
    v, c = "AI_VECTOR_CORE", "AI_CORE"
    return layers(32, [
        ("aclnnRmsNorm_RmsNorm_1", "RmsNorm", v, 96.0, {"block_dim": 48}),
        ("aclnnMatmul_MatMulV2_qkv", "MatMulV2", c, 1480.0, {"block_dim": 24}),
        ("aclnnRotaryMul_RotaryMul", "RotaryMul", v, 176.0, {"block_dim": 48}),
        ("aclnnBatchMatmul_BatchMatMulV2_qk", "BatchMatMulV2", c, 1180.0, {"block_dim": 24}),
        ("aclnnMaskedFill_MaskedFill", "MaskedFill", v, 710.0, {"block_dim": 48}),
        ("aclnnSoftmax_SoftmaxV2", "SoftmaxV2", v, 1650.0, {"block_dim": 48}),
        ("aclnnBatchMatmul_BatchMatMulV2_av", "BatchMatMulV2", c, 1160.0, {"block_dim": 24}),
        ("aclnnMatmul_MatMulV2_o", "MatMulV2", c, 495.0, {"block_dim": 24}),
        ("aclnnAdd_Add_1", "Add", v, 61.0, {"block_dim": 48}),
        ("aclnnRmsNorm_RmsNorm_2", "RmsNorm", v, 96.0, {"block_dim": 48}),
        ("aclnnMatmul_MatMulV2_gate_up", "MatMulV2", c, 2650.0, {"block_dim": 24}),
        ("aclnnSwiGlu_SwiGlu", "SwiGlu", v, 310.0, {"block_dim": 48}),
        ("aclnnMatmul_MatMulV2_down", "MatMulV2", c, 1330.0, {"block_dim": 24}),
        ("aclnnAdd_Add_2", "Add", v, 61.0, {"block_dim": 48}),
    ])


def llama_unfused_norm() -> list[KernelSpec]:
    """LLaMA-style prefill, batch 8 x 2048, with RMSNorm / SwiGLU / RoPE written as small vector ops."""
    v, c = "AI_VECTOR_CORE", "AI_CORE"
    rms = [("aclnnPowTensorScalar_Pow", "Pow", v, 38.0, {"block_dim": 48}),
           ("aclnnMean_ReduceMeanD", "ReduceMeanD", v, 41.0, {"block_dim": 48}),
           ("aclnnAdds_Adds", "Adds", v, 9.0, {"block_dim": 48}),
           ("aclnnRsqrt_Rsqrt", "Rsqrt", v, 12.0, {"block_dim": 48}),
           ("aclnnMul_Mul_norm", "Mul", v, 36.0, {"block_dim": 48}),
           ("aclnnMul_Mul_weight", "Mul", v, 36.0, {"block_dim": 48})]
    return layers(32, [
        *[(n + "_1", t, u, d, kw) for n, t, u, d, kw in rms],
        ("aclnnMatmul_MatMulV2_qkv", "MatMulV2", c, 610.0, {"block_dim": 24}),
        ("aclnnNeg_Neg", "Neg", v, 18.0, {"block_dim": 48}),
        ("aclnnCat_ConcatD", "ConcatD", v, 29.0, {"block_dim": 48}),
        ("aclnnMul_Mul_rope", "Mul", v, 31.0, {"block_dim": 48}),
        ("aclnnAdd_Add_rope", "Add", v, 30.0, {"block_dim": 48}),
        ("FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 610.0, {"block_dim": 24, "mix_block_dim": 48}),
        ("aclnnMatmul_MatMulV2_o", "MatMulV2", c, 205.0, {"block_dim": 24}),
        ("aclnnAdd_Add_res1", "Add", v, 34.0, {"block_dim": 48}),
        *[(n + "_2", t, u, d, kw) for n, t, u, d, kw in rms],
        ("aclnnMatmul_MatMulV2_gate_up", "MatMulV2", c, 1090.0, {"block_dim": 24}),
        ("aclnnSilu_Swish", "Swish", v, 71.0, {"block_dim": 48}),
        ("aclnnMul_Mul_glu", "Mul", v, 58.0, {"block_dim": 48}),
        ("aclnnMatmul_MatMulV2_down", "MatMulV2", c, 545.0, {"block_dim": 24}),
        ("aclnnAdd_Add_res2", "Add", v, 34.0, {"block_dim": 48}),
    ])


def vit_fp32_matmul() -> list[KernelSpec]:
    """ViT-B/16 training step, batch 64, run in float32 (no AMP): cube work in FLOAT."""
    fp32 = {"input_dtypes": "FLOAT;FLOAT", "output_dtypes": "FLOAT"}
    return [
        k("MatMulV2", "MatMulV2", "AI_CORE", 640.0, 144, block_dim=24, **fp32),
        k("BatchMatMulV2", "BatchMatMulV2", "AI_CORE", 310.0, 48, block_dim=24, **fp32),
        k("Conv2D", "Conv2D", "AI_CORE", 520.0, 2, block_dim=24, **fp32),
        k("SoftmaxV2", "SoftmaxV2", "AI_VECTOR_CORE", 140.0, 24, block_dim=48, **fp32),
        k("LayerNormV3", "LayerNormV3", "AI_VECTOR_CORE", 66.0, 50, block_dim=48, **fp32),
        k("Gelu", "Gelu", "AI_VECTOR_CORE", 92.0, 24, block_dim=48, **fp32),
        k("Add", "Add", "AI_VECTOR_CORE", 31.0, 96, block_dim=48, **fp32),
    ]


def small_batch_launch_bound() -> list[KernelSpec]:
    """A small MLP recommender model at batch 32: hundreds of 3-8 µs kernels with host gaps between them."""
    gap = {"wait_us": 9.0}
    return [
        k("MatMulV2", "MatMulV2", "AI_CORE", 7.5, 96, block_dim=4, **gap),
        k("Add", "Add", "AI_VECTOR_CORE", 3.1, 192, block_dim=2, **gap),
        k("Mul", "Mul", "AI_VECTOR_CORE", 3.3, 144, block_dim=2, **gap),
        k("Relu", "Relu", "AI_VECTOR_CORE", 2.9, 96, block_dim=2, **gap),
        k("GatherV2", "GatherV2", "AI_VECTOR_CORE", 5.8, 48, block_dim=4, **gap),
        k("ConcatD", "ConcatD", "AI_VECTOR_CORE", 4.2, 48, block_dim=4, **gap),
        k("Sigmoid", "Sigmoid", "AI_VECTOR_CORE", 2.8, 24, block_dim=2, **gap),
    ]


def dynamic_shape_detector() -> list[KernelSpec]:
    """A detection head run with variable box counts: operators compiled again for every new shape."""
    dyn = {"op_state": "dynamic"}
    return [
        k("Conv2D", "Conv2D", "AI_CORE", 165.0, 58, block_dim=24, **dyn),
        k("ReluV2", "ReluV2", "AI_VECTOR_CORE", 21.0, 52, block_dim=48, **dyn),
        k("GatherV2", "GatherV2", "AI_VECTOR_CORE", 64.0, 36, block_dim=48, **dyn),
        k("MaskedSelectV2", "MaskedSelectV2", "AI_VECTOR_CORE", 97.0, 24, block_dim=48, **dyn),
        k("TopKV2", "TopKV2", "AI_VECTOR_CORE", 121.0, 12, block_dim=48, **dyn),
        k("ConcatD", "ConcatD", "AI_VECTOR_CORE", 38.0, 30, block_dim=48, **dyn),
        k("Add", "Add", "AI_VECTOR_CORE", 18.0, 60, block_dim=48, **dyn),
    ]


def low_block_dim_gemm() -> list[KernelSpec]:
    """A small-batch inference service: GEMMs launched on 4-8 of the chip's 24 cube cores."""
    return [
        k("MatMulV2", "MatMulV2", "AI_CORE", 215.0, 192, block_dim=4),
        k("MatMulV3", "MatMulV3", "AI_CORE", 160.0, 64, block_dim=8),
        k("LayerNormV3", "LayerNormV3", "AI_VECTOR_CORE", 22.0, 65, block_dim=48),
        k("FastGelu", "FastGelu", "AI_VECTOR_CORE", 27.0, 32, block_dim=48),
        k("Add", "Add", "AI_VECTOR_CORE", 11.0, 96, block_dim=48),
    ]


def allreduce_exposed() -> list[KernelSpec]:
    """Data-parallel GPT-2 medium step on 8 cards: gradient all-reduce not overlapped with backward."""
    return [
        k("MatMulV2", "MatMulV2", "AI_CORE", 410.0, 288, block_dim=24),
        k("FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 520.0, 24, block_dim=24, mix_block_dim=48),
        k("FlashAttentionScoreGrad", "FlashAttentionScoreGrad", "MIX_AIC", 1040.0, 24, block_dim=24,
          mix_block_dim=48),
        k("LayerNormV3", "LayerNormV3", "AI_VECTOR_CORE", 45.0, 98, block_dim=48),
        k("FastGelu", "FastGelu", "AI_VECTOR_CORE", 61.0, 48, block_dim=48),
        k("Add", "Add", "AI_VECTOR_CORE", 23.0, 192, block_dim=48),
        k("hcom_allReduce__514_0_1", "hcom_allReduce_", "HCCL", 6850.0, 12, block_dim=0),
    ]


def resnet50_healthy() -> list[KernelSpec]:
    """ResNet-50 inference, batch 64, fp16, static shapes, formats kept internal: nothing stands out."""
    return [
        k("Conv2D", "Conv2D", "AI_CORE", 92.0, 53, block_dim=24, input_formats="NC1HWC0;FRACTAL_Z"),
        k("ReluV2", "ReluV2", "AI_VECTOR_CORE", 12.0, 49, block_dim=48),
        k("Add", "Add", "AI_VECTOR_CORE", 14.0, 16, block_dim=48),
        k("MaxPoolV3", "MaxPoolV3", "AI_VECTOR_CORE", 35.0, 1, block_dim=48),
        k("AvgPoolV2", "AvgPoolV2", "AI_VECTOR_CORE", 18.0, 1, block_dim=48),
        k("MatMulV2", "MatMulV2", "AI_CORE", 26.0, 1, block_dim=24),
        k("TransData", "TransData", "AI_VECTOR_CORE", 21.0, 2, block_dim=48),
    ]


def unet_float64_aicpu() -> list[KernelSpec]:
    """A UNet segmentation step fed float64 tensors from numpy: element-wise work falls to the AI CPU."""
    f64 = {"input_dtypes": "DOUBLE;DOUBLE", "output_dtypes": "DOUBLE"}
    return [
        k("Conv2D", "Conv2D", "AI_CORE", 230.0, 46, block_dim=24),
        k("Conv2DTranspose", "Conv2DTranspose", "AI_CORE", 280.0, 4, block_dim=24),
        k("BNInfer", "BNInfer", "AI_VECTOR_CORE", 30.0, 46, block_dim=48),
        k("ReluV2", "ReluV2", "AI_VECTOR_CORE", 22.0, 46, block_dim=48),
        k("ConcatD", "ConcatD", "AI_VECTOR_CORE", 55.0, 4, block_dim=48),
        k("Mul", "Mul", "AI_CPU", 640.0, 6, block_dim=1, **f64),
        k("RealDiv", "RealDiv", "AI_CPU", 590.0, 4, block_dim=1, **f64),
        k("Cast", "Cast", "AI_CPU", 310.0, 4, block_dim=1, input_dtypes="DOUBLE", output_dtypes="FLOAT"),
    ]


# msOpProf single kernels (``msprof op`` on one operator, Ascend910B3: 20 AIC / 40 AIV, so the
# kernels launch 20 cube or 40 vector blocks): the pipe ratios decide the bound class.


def kernel_matmul_mte2() -> KernelSpec:
    """A 4096x4096x1024 fp16 GEMM whose tiles are too small: MTE2 loads dominate."""
    return k("MatmulCustom", "MatMul", "MIX_AIC", 612.0, 1, block_dim=20, mix_block_dim=40,
             pipe={"aic_cube": 0.41, "aic_mte1": 0.28, "aic_mte2": 0.93, "aic_fixpipe": 0.12, "aic_scalar": 0.07,
                   "aiv_vec": 0.05, "aiv_mte2": 0.08, "aiv_mte3": 0.06, "aiv_scalar": 0.04})


def kernel_matmul_cube() -> KernelSpec:
    """A large square fp16 GEMM already near the cube roofline."""
    return k("MatmulLeakyRelu", "MatMul", "AI_CORE", 1840.0, 1, block_dim=20,
             pipe={"aic_cube": 0.94, "aic_mte1": 0.46, "aic_mte2": 0.52, "aic_fixpipe": 0.21, "aic_scalar": 0.06})


def kernel_add_vector() -> KernelSpec:
    """An Ascend C element-wise kernel doing several vector ops per element: the vector pipe saturates."""
    return k("AddCustom", "Add", "AI_VECTOR_CORE", 96.0, 1, block_dim=40,
             pipe={"aiv_vec": 0.91, "aiv_mte2": 0.42, "aiv_mte3": 0.30, "aiv_scalar": 0.12})


def kernel_imbalanced() -> KernelSpec:
    """A GEMV-style kernel whose tail block gets much more work than the others."""
    return k("GemvCustom", "MatMul", "AI_VECTOR_CORE", 210.0, 1, block_dim=40,
             pipe={"aiv_vec": 0.46, "aiv_mte2": 0.55, "aiv_mte3": 0.18, "aiv_scalar": 0.20})


def kernel_fixpipe() -> KernelSpec:
    """A GEMM writing fp32 results through the fixpipe with a tiny K: write-out limits it."""
    return k("MatmulSmallK", "MatMul", "AI_CORE", 145.0, 1, block_dim=20,
             pipe={"aic_cube": 0.38, "aic_mte1": 0.22, "aic_mte2": 0.35, "aic_fixpipe": 0.90, "aic_scalar": 0.09})


def kernel_scalar() -> KernelSpec:
    """A vector kernel with per-element branches and address arithmetic: the scalar pipe is busiest."""
    return k("ScatterCustom", "ScatterElements", "AI_VECTOR_CORE", 380.0, 1, block_dim=40,
             pipe={"aiv_vec": 0.14, "aiv_mte2": 0.21, "aiv_mte3": 0.17, "aiv_scalar": 0.88})


def kernel_mte3() -> KernelSpec:
    """A broadcast/expand kernel that writes far more than it reads: stores (MTE3) limit it."""
    return k("ExpandCustom", "BroadcastTo", "AI_VECTOR_CORE", 130.0, 1, block_dim=40,
             pipe={"aiv_vec": 0.18, "aiv_mte2": 0.15, "aiv_mte3": 0.92, "aiv_scalar": 0.09})


# ------------------------------------------------------------------------------------------------
# Scenarios: (name, writer, workload, writer options, expected advice, model hint, about)
# ------------------------------------------------------------------------------------------------

SCENARIOS = [
    ("yolov8s-nms-aicpu", "torch_npu_text", yolov8s_nms_aicpu, {}, "nms-on-npu", None,
     "YOLOv8s inference with NMS on the AI CPU"),
    ("resnet50-train-transdata", "op_summary", resnet50_train_transdata, {"chip": "Ascend910B1"},
     "transdata-internal-format", None, "ResNet-50 training with TransData around every conv"),
    ("bert-int64-cast-aicpu", "torch_npu_db", bert_int64_cast, {}, "aicpu-dtype-cast", None,
     "BERT fine-tuning with int64 casts on the AI CPU"),
    ("maskrcnn-index-aicpu", "op_summary", maskrcnn_index_aicpu, {"layout": "cann7", "chip": "Ascend910B2"},
     "index-ops-to-ai-core", None, "Mask R-CNN with NonZero / IndexPut / Gather on the AI CPU"),
    ("llama2-unfused-attention", "torch_npu_text", llama_unfused_attention, {"variant": "2026"},
     "flash-attention", "llama2-7b", "LLaMA-2-7B with attention as BatchMatMul + Softmax"),
    ("llama-unfused-norm", "msprof_db", llama_unfused_norm, {}, "rmsnorm-swiglu-rope-fusion", None,
     "LLaMA-style prefill with RMSNorm / SwiGLU / RoPE as small vector kernels"),
    ("vit-fp32-cube", "op_summary", vit_fp32_matmul, {"block_header": "Block Num"}, "amp-and-hf32", None,
     "ViT-B/16 training in float32"),
    ("mlp-launch-bound", "torch_npu_text", small_batch_launch_bound, {"variant": "2025-01"},
     "host-bound-dispatch", None, "small MLP: thousands of tiny kernels with host gaps"),
    ("detector-dynamic-shape", "op_summary", dynamic_shape_detector, {"compile_us": 6000.0},
     "static-shape-compile-mode", None, "detection head recompiled online for every new box count"),
    ("gemm-low-block-dim", "op_summary", low_block_dim_gemm, {"chip": "Ascend910B1", "slices": 2},
     "block-dim-core-multiple", None,
     "GEMMs launched on a fraction of the cube cores"),
    ("gpt2-allreduce-exposed", "torch_npu_text", allreduce_exposed, {}, "exposed-communication", None,
     "data-parallel step with exposed all-reduce"),
    ("resnet50-infer-healthy", "op_summary", resnet50_healthy, {"chip": "Ascend910B1"}, None, None,
     "healthy fp16 ResNet-50 inference: no large gain to promise"),
    ("unet-float64-aicpu", "torch_npu_db", unet_float64_aicpu, {}, "aicpu-dtype-cast", None,
     "UNet fed float64 tensors: element-wise ops on the AI CPU"),
    ("kernel-matmul-mte2", "msopprof", kernel_matmul_mte2, {"generation": "2026"}, "mte2-bound-kernels", None,
     "msprof op: GEMM limited by MTE2 loads"),
    ("kernel-matmul-cube", "msopprof", kernel_matmul_cube, {"generation": "2025-12"}, "matmul-tiling", None,
     "msprof op: GEMM at the cube roofline"),
    ("kernel-add-vector", "msopprof", kernel_add_vector, {"generation": "2025-03"}, "vector-mte3-bound-kernels", None,
     "msprof op: vector-bound element-wise kernel"),
    ("kernel-gemv-imbalance", "msopprof", kernel_imbalanced, {"imbalance": 4.0}, "per-block-imbalance", None,
     "msprof op: one block gets far more work"),
    ("kernel-matmul-fixpipe", "msopprof", kernel_fixpipe, {}, "fixpipe-bound-cube-kernels", None,
     "msprof op: write-out through the fixpipe limits a small-K GEMM"),
    ("kernel-scatter-scalar", "msopprof", kernel_scalar, {}, "scalar-bound-kernels", None,
     "msprof op: scalar pipe busiest"),
    ("kernel-expand-mte3", "msopprof", kernel_mte3, {}, "vector-mte3-bound-kernels", None,
     "msprof op: stores (MTE3) limit a broadcast kernel"),
]

FORMAT_NAMES = {
    "torch_npu_text": "torch-npu-text",
    "torch_npu_db": "torch-npu-db",
    "op_summary": "msprof-text",
    "msprof_db": "msprof-db",
    "msopprof": "msopprof-device",
}


def write_scenario(out: Path, name: str, writer: str, workload, options: dict, seed: int) -> Path:
    """Write one scenario under out/<name>/ and return the path `advisor suggest --profile` takes."""
    folder = out / name
    folder.mkdir(parents=True)
    kernels = workload()
    if writer == "torch_npu_text":
        return testing.write_torch_npu_text(folder, kernels, seed=seed, **options)
    if writer == "torch_npu_db":
        return testing.write_torch_npu_db(folder, kernels, seed=seed, **options)
    if writer == "op_summary":
        return testing.write_op_summary(folder, kernels, seed=seed, **options)
    if writer == "msprof_db":
        return testing.write_msprof_db(folder, kernels, seed=seed, **options)
    if writer == "msopprof":
        return testing.write_msopprof_device(folder, kernels, seed=seed, **options)
    raise ValueError(f"unknown writer {writer}")


def make_bench(out: Path) -> list[dict]:
    """Regenerate every scenario under ``out`` and write scenarios.json; returns the labels."""
    out.mkdir(parents=True, exist_ok=True)
    for name, *_ in SCENARIOS:  # only our own folders: never clear a directory we did not write
        if (out / name).is_dir():
            shutil.rmtree(out / name)
    labels = []
    for seed, (name, writer, workload, options, expect, model, about) in enumerate(SCENARIOS, start=1):
        path = write_scenario(out, name, writer, workload, options, seed)
        labels.append({
            "name": name,
            "path": path.relative_to(out).as_posix(),
            "format": FORMAT_NAMES[writer],
            "expect": expect,
            "model": model,
            "max_gain_pct": 10.0 if expect is None else None,
            "about": about,
        })
    document = {"schema": BENCH_SCHEMA, "scenarios": labels}
    (out / "scenarios.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "bench")
    args = parser.parse_args()
    labels = make_bench(args.out)
    print(f"wrote {len(labels)} scenarios to {args.out}")


if __name__ == "__main__":
    main()
