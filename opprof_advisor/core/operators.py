"""Canonical operator families and the alias table that maps profiler op types onto them.

One table serves the profile readers (op type -> family), the knowledge base (an entry's
``operators`` may use any alias) and search (``NonMaxSuppressionV3`` finds the NMS recipe).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: family -> aliases (op types, API names, common spellings). Matching is case-insensitive and
#: ignores ``_``, ``-`` and spaces; a trailing version suffix (``V2``, ``V3``) is also dropped.
FAMILIES: dict[str, tuple[str, ...]] = {
    "MatMul": ("MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "GEMM",
               "MatMulCommon", "Linear", "mm", "bmm", "GemmV2", "FullyConnection", "QuantBatchMatmulV3",
               "WeightQuantBatchMatmulV2", "MatmulAllReduce", "AllGatherMatmul", "MatmulReduceScatter"),
    "GroupedMatMul": ("GroupedMatmul", "GroupedMatMul", "GMM", "npu_gmm"),
    "Conv2D": ("Conv2D", "Conv2DV2", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv2DTranspose",
               "Conv3D", "Conv3DBackpropInput", "Conv3DBackpropFilter", "Convolution", "Conv", "Conv1D",
               "DepthwiseConv2D", "Conv2DBackpropFilterD", "Conv2DBackpropInputD"),
    "FlashAttention": ("FlashAttention", "FlashAttentionScore", "FlashAttentionScoreGrad", "FusedInferAttentionScore",
                       "PromptFlashAttention", "IncreFlashAttention", "npu_fusion_attention", "Attention",
                       "ScaledDotProductAttention", "SDPA", "MultiHeadAttention"),
    "NMS": ("NMS", "NonMaxSuppression", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
            "NonMaxSuppressionV6", "BatchMultiClassNMS", "BatchMultiClassNonMaxSuppression", "BatchedNMS",
            "batched_nms", "npu_batch_nms", "npu_multiclass_nms", "MultiClassNMS", "nms",
            "non max suppression", "non-maximum suppression"),
    "TransData": ("TransData", "TransDataRNN", "FormatConversion", "NpuFormatCast", "trans_TransData"),
    "Cast": ("Cast", "trans_Cast"),
    "Transpose": ("Transpose", "TransposeD", "Permute", "ContiguousTranspose", "AsStrided", "ViewCopy", "Contiguous"),
    "Softmax": ("Softmax", "SoftmaxV2", "SoftmaxGrad", "LogSoftmax", "LogSoftmaxV2", "SoftmaxCrossEntropyWithLogits"),
    "LayerNorm": ("LayerNorm", "LayerNormV3", "LayerNormV4", "LayerNormGrad", "LayerNormBetaGammaBackpropV2",
                  "LayerNormXBackpropV3", "AddLayerNorm"),
    "RMSNorm": ("RmsNorm", "RMSNorm", "RmsNormGrad", "AddRmsNorm", "npu_rms_norm"),
    "BatchNorm": ("BatchNorm", "BNTrainingReduce", "BNTrainingUpdate", "BNTrainingUpdateGrad", "BNTrainingReduceGrad",
                  "BNInfer", "BatchNormV3", "SyncBatchNorm", "BN"),
    "GroupNorm": ("GroupNorm", "GroupNormSilu", "GroupNormGrad", "GroupNormSwish"),
    "SwiGLU": ("SwiGlu", "SwiGLU", "SwiGluGrad", "npu_swiglu", "GeGlu", "GeGLU"),
    "RoPE": ("RotaryMul", "RotaryMulGrad", "RotaryPositionEmbedding", "ApplyRotaryPosEmb", "npu_rotary_mul", "RoPE",
             "rotary embedding"),
    "Activation": ("Relu", "ReluV2", "ReluGrad", "ReluGradV2", "Gelu", "GeluV2", "GeluGrad", "FastGelu", "FastGeluGrad",
                   "Silu", "SiLU", "Swish", "SwishGrad", "Sigmoid", "SigmoidGrad", "Tanh", "TanhGrad", "LeakyRelu",
                   "HardSwish", "Mish", "Elu", "SiluGrad"),
    "Elementwise": ("Add", "AddV2", "Adds", "Sub", "Mul", "Muls", "Div", "RealDiv", "Maximum", "Minimum", "Pow",
                    "Sqrt", "Rsqrt", "Exp", "Log", "Neg", "Abs", "Square", "Axpy", "AxpyV2", "Equal", "NotEqual",
                    "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot",
                    "Select", "SelectV2", "Where", "MaskedFill", "Fill", "Fills", "ZerosLike", "OnesLike",
                    "ClipByValue", "ClipByValueV2", "Reciprocal", "AddN", "AddcMul", "AddcDiv", "Lerp",
                    "ForeachAddList", "ForeachMulScalar", "ForeachAddcdivScalar", "TensorEqual", "Floor", "Round",
                    "Sign", "BiasAdd", "Tile", "BroadcastTo", "Expand"),
    "Reduce": ("ReduceSum", "ReduceSumD", "ReduceMean", "ReduceMeanD", "ReduceMax", "ReduceMaxD", "ReduceMin",
               "ReduceProd", "ReduceAll", "ReduceAny", "ArgMaxV2", "ArgMin", "ArgMaxWithValue", "CumSum", "Cumsum",
               "LpNormV2", "ReduceStd"),
    "Gather": ("GatherV2", "GatherV3", "Gather", "GatherElements", "GatherElementsV2", "GatherNd", "IndexSelect",
               "Index", "EmbeddingDenseGrad", "Embedding", "EmbeddingBag", "ScatterElements", "ScatterNd",
               "ScatterNdUpdate", "Scatter", "ScatterUpdate", "ScatterAdd", "UnsortedSegmentSum", "IndexAdd",
               # MoE token routing: tokens gathered into expert order and back (torch_npu npu_moe_init_routing ...)
               "MoeInitRouting", "MoeFinalizeRouting", "MoeTokenPermute", "MoeTokenUnpermute"),
    "IndexPut": ("IndexPut", "IndexPutV2", "MaskedScatter", "MaskedSelect", "MaskedSelectV2", "BooleanMask"),
    "NonZero": ("NonZero", "NonZeroWithValue", "Unique", "UniqueWithCounts", "UniqueConsecutive"),
    "TopK": ("TopK", "TopKV2", "Sort", "SortV2", "ArgSort", "InTopK", "MoeGatingTopK", "MoeGatingTopKSoftmax"),
    "Resize": ("ResizeBilinearV2", "ResizeNearestNeighborV2", "ResizeBilinearV2Grad", "ResizeNearestNeighborV2Grad",
               "UpsampleNearest2d", "UpsampleBilinear2d", "Resize", "Interpolate", "ResizeD", "UpsampleNearest2D"),
    "GridSample": ("GridSampler2D", "GridSampler3D", "GridSample", "GridSampler2DGrad"),
    "Pooling": ("MaxPool", "MaxPoolV3", "MaxPoolWithArgmaxV1", "MaxPoolGradWithArgmaxV1", "AvgPool", "AvgPoolV2",
                "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool3D", "MaxPool3D", "Pooling"),
    "Concat": ("ConcatD", "ConcatV2", "ConcatV2D", "Concat", "Pack", "Stack", "SplitV", "SplitVD", "SplitD", "Split",
               "Unpack", "Slice", "SliceD", "StridedSlice", "StridedSliceD", "StridedSliceGrad", "Pad", "PadV3",
               "PadD", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Chunk"),
    "Dropout": ("DropOutDoMask", "DropOutDoMaskV3", "DropOutGenMask", "DropOutGenMaskV4", "StatelessDropOutGenMask",
                "Dropout"),
    "Random": ("StatelessRandomUniformV2", "RandomUniform", "StatelessRandomNormalV2", "Multinomial", "RandomStandardNormal"),
    "Optimizer": ("ApplyAdamW", "ApplyAdamWV2", "ApplyAdam", "ApplyAdamD", "ApplyMomentum", "ApplyGradientDescent",
                  "ApplyLamb", "FusedAdamW", "NpuFusedAdamW", "NpuFusedSGD", "ForeachNorm", "ClipGradNorm",
                  "ForeachAddcmulScalar", "ForeachSqrt", "ForeachMulScalarList"),
    "Loss": ("SigmoidCrossEntropyWithLogits", "SigmoidCrossEntropyWithLogitsV2", "SparseSoftmaxCrossEntropyWithLogits",
             "NLLLoss", "NLLLossGrad", "BinaryCrossEntropy", "MseLoss", "SmoothL1Loss", "CrossEntropyLoss"),
    "Memcpy": ("MemCopy", "Memcpy", "MEMCPY_ASYNC", "TensorMove", "Assign", "ViewCopy2", "D2H", "H2D", "Copy"),
    "AllReduce": ("AllReduce", "hcom_allReduce", "HcomAllReduce", "allreduce", "all_reduce", "allreduceAicpuKernel"),
    "AllGather": ("AllGather", "hcom_allGather", "HcomAllGather", "allgather", "all_gather", "allgatherAicpuKernel"),
    "ReduceScatter": ("ReduceScatter", "hcom_reduceScatter", "HcomReduceScatter", "reduce_scatter", "reducescatter"),
    "AlltoAll": ("AlltoAll", "AllToAll", "AlltoAllV", "hcom_alltoall", "hcom_alltoallv", "all_to_all", "alltoallv",
                 # MoE expert-parallel dispatch / combine (MC2 kernels that exchange tokens between ranks)
                 "MoeDistributeDispatch", "MoeDistributeCombine"),
    "Broadcast": ("Broadcast", "hcom_broadcast", "HcomBroadcast"),
    "SendRecv": ("Send", "Receive", "Recv", "hcom_send", "hcom_receive", "BatchSendRecv", "hcom_batchSendRecv"),
}

#: Families that are communication, whatever unit a reader assigned.
COMMUNICATION_FAMILIES = frozenset({"AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "Broadcast", "SendRecv"})

_VERSION_SUFFIX = re.compile(r"(?:v\d+|d)$")


_SEPARATORS = re.compile(r"[\s_\-.]+")


def normalise_name(name: str) -> str:
    """Lower-case a name and drop ``_``, ``-``, spaces and dots, for alias look-ups."""
    return _SEPARATORS.sub("", name).lower()


@lru_cache(maxsize=1)
def _alias_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for family, aliases in FAMILIES.items():
        for alias in (family, *aliases):
            index.setdefault(normalise_name(alias), family)
    return index


def canonical_family(op_type: str, *, fuzzy: bool = True) -> str | None:
    """Return the family of an op type, API name or spelling, or None when nothing matches.

    Exact alias first, then the name without a version suffix (``MatMulV9`` -> ``MatMul``), then
    an ``hcom_<op>_...`` prefix, then (if ``fuzzy``) the closest alias by rapidfuzz.

    A profile may hold a million op types, each asked for by several stages: a look-up costs a few dictionary
    probes and one rapidfuzz call over the aliases whose length can reach the cut-off (never a loop over the
    table), and both answers are kept for CACHED_NAMES names (with and without ``fuzzy`` share one entry).
    """
    if not op_type:
        return None
    family = _exact_family(op_type)
    if family is not None or not fuzzy:
        return family
    return _fuzzy_family(op_type)


#: How many names the answers of canonical_family are kept for: more than the op types of any profile, so that
#: each stage that asks again finds the answer (about 100 bytes a name, only for the names looked up).
CACHED_NAMES = 1 << 20


@lru_cache(maxsize=CACHED_NAMES)
def _exact_family(op_type: str) -> str | None:
    """The family of an alias, of an alias with a version suffix, of ``hcom_<op>...``, or of the longest alias the
    name starts with; None when none of them."""
    index = _alias_index()
    key = normalise_name(op_type)
    if key in index:
        return index[key]
    stripped = _VERSION_SUFFIX.sub("", key)
    if stripped in index:
        return index[stripped]
    if key.startswith("hcom"):
        for alias, family in _hcom_aliases():
            if key.startswith(alias):
                return family
    return _leading_alias(key)


@lru_cache(maxsize=CACHED_NAMES)
def _fuzzy_family(op_type: str) -> str | None:
    """The family of the alias closest to the name (rapidfuzz ratio at least FUZZY_CUTOFF), or None."""
    key = normalise_name(op_type)
    if len(key) < 4:
        return None
    from rapidfuzz import fuzz, process

    best = process.extractOne(key, _fuzzy_candidates(len(key)), scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
    return _alias_index()[best[0]] if best else None


#: rapidfuzz ratio (0..100) an op type needs to an alias to take its family.
FUZZY_CUTOFF = 88


@lru_cache(maxsize=1)
def _hcom_aliases() -> tuple[tuple[str, str], ...]:
    """The ``hcom...`` aliases with their families, in the table's order (the first a name starts with wins)."""
    return tuple((alias, family) for alias, family in _alias_index().items() if alias.startswith("hcom"))


@lru_cache(maxsize=256)
def _fuzzy_candidates(length: int) -> list[str]:
    """The aliases, in the table's order, that a name of ``length`` characters can reach FUZZY_CUTOFF against:
    ratio is at most 200 * shorter / (sum of the lengths), so the others cannot match and are not compared."""
    return [alias for alias in _alias_index()
            if 200 * min(length, len(alias)) >= FUZZY_CUTOFF * (length + len(alias))]


#: Shortest alias a custom kernel's name may start with to inherit its family (shorter ones, such as
#: "add" or "mul", begin too many unrelated names).
MIN_PREFIX_ALIAS = 5


@lru_cache(maxsize=1)
def _prefix_aliases() -> tuple[tuple[int, ...], dict[str, str]]:
    """The lengths of the aliases a kernel name may start with, longest first, and those aliases -> family."""
    aliases = {alias: family for alias, family in _alias_index().items() if len(alias) >= MIN_PREFIX_ALIAS}
    return tuple(sorted({len(alias) for alias in aliases}, reverse=True)), aliases


def _leading_alias(key: str) -> str | None:
    """The family of the longest alias a custom kernel's name starts with (``MatmulLeakyRelu`` -> MatMul).

    One dictionary probe per alias length (a few dozen), whatever the size of the table."""
    lengths, aliases = _prefix_aliases()
    for length in lengths:
        if length <= len(key):
            family = aliases.get(key[:length])
            if family is not None:
                return family
    return None


def family_or_self(op_type: str) -> str:
    """The family of ``op_type``, or ``op_type`` itself when it belongs to no known family."""
    return canonical_family(op_type) or op_type
