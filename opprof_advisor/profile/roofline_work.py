"""How much work one kernel does: FLOPs and minimum HBM bytes from its input shapes, data types and formats.

``work_of(op_type, shapes, dtypes, formats)`` counts a matmul, grouped matmul, convolution or
attention kernel by its formula, and any other kernel as bytes-bound (it reads its inputs and
writes its output once). What the shapes cannot tell raises ``NotJudged`` with the reason, which
``roofline`` reports as "not judged". Computed once per distinct (op type, shapes, dtypes, formats).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from opprof_advisor.core.i18n import M_
from opprof_advisor.core.operators import canonical_family

# ------------------------------------------------------------------------------------------------
# Data types
# ------------------------------------------------------------------------------------------------

#: Profiler dtype spellings (with or without DT_) -> (class, bytes per element).
_DTYPES: dict[str, tuple[str, float]] = {
    "FLOAT16": ("fp16", 2), "HALF": ("fp16", 2), "FP16": ("fp16", 2),
    "BF16": ("bf16", 2), "BFLOAT16": ("bf16", 2),
    "FLOAT": ("fp32", 4), "FLOAT32": ("fp32", 4), "FP32": ("fp32", 4),
    "DOUBLE": ("fp64", 8), "FLOAT64": ("fp64", 8),
    "INT8": ("int8", 1), "UINT8": ("uint8", 1), "INT4": ("int4", 0.5), "BOOL": ("bool", 1),
    "INT16": ("int16", 2), "UINT16": ("uint16", 2), "INT32": ("int32", 4), "UINT32": ("uint32", 4),
    "INT64": ("int64", 8), "UINT64": ("uint64", 8), "COMPLEX64": ("complex64", 8), "COMPLEX128": ("complex128", 16),
    "HIFLOAT8": ("fp8", 1), "FLOAT8_E4M3FN": ("fp8", 1), "FLOAT8_E5M2": ("fp8", 1),
}


def dtype_info(name: str) -> tuple[str, float] | None:
    """(class, bytes per element) of a profiler dtype name (``DT_BF16``, ``FLOAT`` ...), or None."""
    key = name.strip().upper()
    if key.startswith("DT_"):
        key = key[3:]
    return _DTYPES.get(key)


# ------------------------------------------------------------------------------------------------
# Work per kernel (one call per distinct shapes / dtypes / formats)
# ------------------------------------------------------------------------------------------------


class Work(NamedTuple):  # a NamedTuple: built at start-up, ~5x cheaper than a frozen dataclass
    """Work of one launch: flops (None for bytes-bound op types), minimum bytes, and how it was counted."""

    kind: str  # "cube" (compute and bandwidth roofs) or "bytes" (bandwidth roof only)
    flops: float | None
    bytes: float
    dtype: str
    basis: str


#: No tensor holds more elements (2^53, petabytes of data): a shape beyond it is not a measurement.
MAX_ELEMENTS = 2 ** 53


def parse_shapes(text: str) -> list[tuple[int, ...]] | None:
    """``"4096,1024;1024;;"`` -> [(4096, 1024), (1024,), (), ()]; None when not recorded or not numeric."""
    text = (text or "").strip().strip('"').strip()
    if not text or text.upper() in ("N/A", "NA"):
        return None
    shapes = []
    for part in text.split(";"):
        dims = [d.strip() for d in part.split(",") if d.strip()]
        try:
            shape = tuple(int(d) for d in dims)
        except ValueError:
            return None
        if any(d < 0 for d in shape):
            return None  # -1 / -2: dynamic dims, the real size was not recorded
        if _numel(shape) > MAX_ELEMENTS:
            return None  # a corrupt cell: its work would overflow every figure computed from it
        shapes.append(shape)
    while shapes and not shapes[-1]:
        shapes.pop()  # the trailing ';' of the writer
    return shapes


def _split(text: str) -> list[str]:
    return [item.strip() for item in (text or "").split(";")]


def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 0


class NotJudged(Exception):
    """The shapes cannot support a work figure; the message says why."""


#: Bytes-bound families and what their output is: "same" = one output the size of the largest
#: input (elementwise, casts, norms, copies), "none" = outputs are small or written in place
#: (reductions, optimizer updates), counted as inputs only -- a lower bound on bytes either way.
#: Slices, pads and gathers are left out: they read only part of their largest input.
BYTES_BOUND: dict[str, str] = {
    "Elementwise": "same", "Activation": "same", "Cast": "same", "Memcpy": "same", "Softmax": "same",
    "LayerNorm": "same", "RMSNorm": "same", "BatchNorm": "same", "GroupNorm": "same", "RoPE": "same",
    "Transpose": "same", "TransData": "same", "Dropout": "same", "SwiGLU": "none",
    "Reduce": "none", "Optimizer": "none", "Loss": "none",
}
#: Elementwise op types that only write: their input gives the shape, its data is never read.
WRITE_ONLY = frozenset({"zeroslike", "oneslike", "fill", "fills"})
_FUSED_WITH_COMM = ("allreduce", "allgather", "reducescatter", "alltoall")


def work_of(op_type: str, shapes_text: str, dtypes_text: str, formats_text: str = "",
            out_dtypes_text: str = "") -> Work:
    """Work of one launch of ``op_type``; raise NotJudged with the reason when the shapes do not allow it."""
    family = canonical_family(op_type, fuzzy=False) or ""
    if family not in ("MatMul", "GroupedMatMul", "Conv2D", "FlashAttention") and family not in BYTES_BOUND:
        raise NotJudged(M_("no work model for the {family} family", family=family or op_type))
    shapes = parse_shapes(shapes_text)
    if not shapes:
        raise NotJudged(M_("Input Shapes not recorded or not numeric (collect with record_shapes=True)"))
    dtypes = _split(dtypes_text)
    formats = _split(formats_text)
    tensors = []
    for i, shape in enumerate(shapes):
        info = dtype_info(dtypes[i]) if i < len(dtypes) and dtypes[i] else None
        if shape and info is None:
            raise NotJudged(M_("input {i} has no known data type ({dtype})", i=i, dtype=dtypes[i] if i < len(dtypes) else "none"))
        tensors.append((shape, info, formats[i].upper() if i < len(formats) else ""))
    out_dtype = dtype_info(_split(out_dtypes_text)[0]) if out_dtypes_text.strip() else None
    if family == "MatMul":
        if any(word in op_type.lower() for word in _FUSED_WITH_COMM):
            raise NotJudged(M_("fused with communication: its time is not all compute"))
        return _matmul(tensors, out_dtype)
    if family == "GroupedMatMul":
        return _grouped_matmul(tensors, out_dtype)
    if family == "Conv2D":
        return _conv(op_type, tensors)
    if family == "FlashAttention":
        return _attention(op_type, tensors)
    return _bytes_bound(family, op_type, tensors, out_dtype)


def _present(tensors):
    return [t for t in tensors if t[0]]


def _as_matrix(shape: tuple[int, ...], fmt: str) -> tuple[int, ...]:
    """FRACTAL_NZ (..., n1, m1, m0, n0) -> (..., m1*m0, n1*n0); ND as is."""
    if fmt.startswith("FRACTAL_NZ") and len(shape) >= 4:
        *batch, n1, m1, m0, n0 = shape
        return (*batch, m1 * m0, n1 * n0)
    return shape


#: K is the dimension the two inputs share; tried in this order (the first that fits is used, the
#: others are named in the basis when they also fit): A[M,K]B[K,N], B transposed, A transposed, both.
_LAYOUTS = (("A·B", 1, 0), ("A·Bᵀ", 1, 1), ("Aᵀ·B", 0, 0), ("Aᵀ·Bᵀ", 0, 1))


def pair_matmul_dims(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int, int, str]:
    """(M, K, N, layout) of a 2-D matmul from its two input shapes (transpose flags are not recorded)."""
    fits = [(name, a[1 - ka], a[ka], b[1 - kb]) for name, ka, kb in _LAYOUTS if a[ka] == b[kb]]
    if not fits:
        raise NotJudged(M_("no dimension of {a} matches one of {b}: K unknown", a=a, b=b))
    name, m, k, n = fits[0]
    others = sorted({f"{other} (K={ok})" for other, om, ok, on in fits[1:] if om * ok * on != m * k * n})
    how = f"{name}, K={k}" + (f"; also fits {', '.join(others)}" if others else "")
    return m, k, n, how


def _matmul(tensors, out_dtype) -> Work:
    present = _present(tensors)
    if len(present) < 2:
        raise NotJudged(M_("fewer than two input shapes"))
    (sa, da, fa), (sb, db, fb) = present[0], present[1]
    a, b = _as_matrix(sa, fa), _as_matrix(sb, fb)
    if len(a) < 2 or len(b) < 2:
        raise NotJudged(M_("inputs {a} and {b} are not matrices", a=sa, b=sb))
    batch_a, batch_b = math.prod(a[:-2]), math.prod(b[:-2])
    if batch_a > 1 and batch_b > 1 and batch_a != batch_b:
        raise NotJudged(M_("batch dims {a} and {b} do not broadcast", a=a[:-2], b=b[:-2]))
    batch = max(batch_a, batch_b)
    m, k, n, how = pair_matmul_dims(a[-2:], b[-2:])
    out_size = (out_dtype or da)[1]
    bytes_ = _numel(sa) * da[1] + _numel(sb) * db[1] + batch * m * n * out_size
    prefix = f"batch {batch} x " if batch > 1 else ""
    return Work("cube", 2.0 * batch * m * n * k, bytes_, da[0],
                f"{prefix}M={m} N={n} K={k} from the two input shapes ({how})")


def _grouped_matmul(tensors, out_dtype) -> Work:
    present = _present(tensors)
    if len(present) < 2:
        raise NotJudged(M_("fewer than two input shapes"))
    (x, dx, _), (w, dw, _) = present[0], present[1]
    if len(x) != 2 or len(w) != 3:
        raise NotJudged(M_("only one x [M,K] with one weight [E,K,N] is modelled, not {x} and {w}", x=x, w=w))
    m, k = x
    if w[1] == k:
        n = w[2]
    elif w[2] == k:
        n = w[1]
    else:
        raise NotJudged(M_("weight {w} has no dimension K={k}", w=w, k=k))
    bytes_ = _numel(x) * dx[1] + _numel(w) * dw[1] + m * n * (out_dtype or dx)[1]
    return Work("cube", 2.0 * m * n * k, bytes_, dx[0], f"each of M={m} rows through one of {w[0]} experts, K={k} N={n}")


def _conv(op_type: str, tensors) -> Work:
    name = op_type.lower()
    if "backpropinput" not in name:
        what = "the kernel size (filter_sizes value)" if "backpropfilter" in name else "stride and padding"
        raise NotJudged(M_("the work depends on {what}, which Input Shapes do not record", what=what))
    four_plus = [t for t in _present(tensors) if len(t[0]) >= 4]
    weight = next((t for t in four_plus if t[2].startswith("FRACTAL_Z")), None)
    if weight is not None:
        dy = next((t for t in four_plus if t is not weight and len(t[0]) == 5), None)
        if dy is None:
            raise NotJudged(M_("no NC1HWC0 out_backprop beside the FRACTAL_Z filter"))
        (c1hw, n1, n0, c0), (n, _co1, ho, wo, _dc0) = weight[0], dy[0]
        cout, cin_khkw = n1 * n0, c1hw * c0
        basis = f"FRACTAL_Z filter {weight[0]}: Cin*kh*kw={cin_khkw}, Cout={cout} (channels as padded)"
    else:
        if len(four_plus) < 2 or len(four_plus[0][0]) != 4 or len(four_plus[1][0]) != 4:
            raise NotJudged(M_("filter and out_backprop are not both NCHW 4-D tensors"))
        weight, dy = four_plus[0], four_plus[1]
        (cout, cin_g, kh, kw), (n, dcout, ho, wo) = weight[0], dy[0]
        if cout != dcout:
            raise NotJudged(M_("filter {filter} and out_backprop {dy} disagree on the output channels", filter=weight[0], dy=dy[0]))
        cin_khkw = cin_g * kh * kw
        basis = f"NCHW filter {weight[0]}, out_backprop {dy[0]}"
    flops = 2.0 * n * ho * wo * cout * cin_khkw
    bytes_ = _numel(weight[0]) * weight[1][1] + _numel(dy[0]) * dy[1][1]  # dx size is not recorded: a lower bound
    return Work("cube", flops, bytes_, dy[1][0], basis)


def _attention(op_type: str, tensors) -> Work:
    """FLOPs = 2 x B x Sq x Sk x Hq x (1 + Hv/Hk) forward (QKᵀ and PV, grouped KV heads); Grad x 2.5."""
    name = op_type.lower()
    if not name.startswith("flashattentionscore"):
        raise NotJudged(M_("{op_type} layouts (BSH, BNSD, TND ...) are not recorded in the shapes", op_type=op_type))
    present = _present(tensors)
    if len(present) < 3:
        raise NotJudged(M_("fewer than three inputs (query, key, value)"))
    (q, dq, _), (k, _, _), (v, _, _) = tensors[0], tensors[1], tensors[2]
    if not (q and k and v) or len(q) != len(k) or len(q) not in (3, 4):
        raise NotJudged(M_("query {q}, key {k}, value {v} are not 3-D or 4-D tensors of one layout", q=q, k=k, v=v))
    b, sq, sk, hq, hk, hv, how = _attention_dims(q, k, v, tensors[3:])
    forward = 2.0 * b * sq * sk * hq * (1 + hv / hk)
    grad = "grad" in name
    flops = forward * 2.5 if grad else forward
    itemsize = dq[1]
    io = _numel(q) + _numel(k) + _numel(v)
    bytes_ = (2 * io + 2 * _numel(q)) * itemsize if grad else (io + _numel(q)) * itemsize
    basis = (f"B={b} Sq={sq} Sk={sk} Hq={hq} ({how}); full attention counted (sparse_mode is not recorded: a causal "
             f"mask does about half)" + ("; backward = 2.5 x forward" if grad else ""))
    return Work("cube", flops, bytes_, dq[0], basis)


def _attention_dims(q, k, v, rest) -> tuple[int, int, int, int, int, int, str]:
    """Batch, sequence lengths and hidden sizes of q/k/v, the layout proven by the other inputs."""
    stats = next((s for s, _, _ in rest if len(s) == 4 and s[3] == 8), None)  # softmax_max/sum [B,N,Sq,8]
    mask = next((s for s, _, _ in rest if len(s) in (2, 4)), None)
    if len(q) == 3:
        seq_axis = None
        if stats is not None:
            seq_axis = next((i for i in (0, 1) if q[i] == stats[2] and q[1 - i] == stats[0]), None)
            how = f"softmax statistics {stats} give B={stats[0]}, Sq={stats[2]}"
        elif mask is not None:
            fits = [i for i in (0, 1) if q[i] == mask[-2] and k[i] == mask[-1]]
            seq_axis = fits[0] if len(fits) == 1 else None
            how = f"attention mask {mask} gives Sq={mask[-2]}"
        if seq_axis is None:
            raise NotJudged(M_("query {q}: BSH or SBH cannot be told apart (no softmax statistics or matching mask)", q=q))
        b = q[1 - seq_axis]
        layout = "SBH" if seq_axis == 0 else "BSH"
        return b, q[seq_axis], k[seq_axis], q[2], k[2], v[2], f"{layout}; {how}"
    if stats is None:
        raise NotJudged(M_("query {q}: BNSD or BSND cannot be told apart (no softmax statistics)", q=q))
    b, heads, sq = stats[0], stats[1], stats[2]
    if q[2] == sq and q[1] == heads:
        seq_axis, layout = 2, "BNSD"
    elif q[1] == sq and q[2] == heads:
        seq_axis, layout = 1, "BSND"
    else:
        raise NotJudged(M_("query {q} does not match the softmax statistics {stats}", q=q, stats=stats))
    head_axis = 3 - seq_axis
    return (b, sq, k[seq_axis], q[head_axis] * q[3], k[head_axis] * k[3], v[head_axis] * v[3],
            f"{layout}; softmax statistics {stats}")


def _bytes_bound(family: str, op_type: str, tensors, out_dtype) -> Work:
    present = _present(tensors)
    if not present:
        raise NotJudged(M_("no input shape"))
    write_only = op_type.lower().rstrip("0123456789").removesuffix("v") in WRITE_ONLY
    read = 0.0 if write_only else sum(_numel(s) * info[1] for s, info, _ in present)
    written = 0.0
    if BYTES_BOUND[family] == "same":
        largest, info, _ = max(present, key=lambda t: _numel(t[0]))
        written = _numel(largest) * (out_dtype or info)[1]
    if not read + written:
        raise NotJudged(M_("empty tensors: no data to move"))
    what = ("one output the size of the input, nothing read" if write_only else
            "inputs read once + one output the size of the largest input" if written else "inputs read once")
    return Work("bytes", None, read + written, present[0][1][0], f"{what} (a lower bound on traffic)")
