"""Hand-built JSON documents for the HTML report tests (shapes from the suggest/profile/compare/scan issues).

A YOLOv8-like inference profile where NMS runs on the AI CPU and takes 18 % of device time, the
suggest document whose first finding is that NMS (its lead remedy the NMS recipe), a before/after
compare where NMS moved to the AI Core, and a scan of a small detector. Numbers are written out here, not computed by the
code under test; the keys later versions of the schemas added (the profile's family totals) are filled
in by ``documents.upgrade`` as for any older document.
"""

from __future__ import annotations

import copy

from opprof_advisor.commands.documents import upgrade

DEVICE_US = 48_250.0

#: (op_type, family, unit, count, time_us, bound) of the YOLOv8-like profile; shares are time/DEVICE_US.
YOLO_ROWS = [
    ("Conv2D", "Conv2D", "ai_core", 412, 14_957.5, "cube"),
    ("NonMaxSuppressionV3", "NMS", "ai_cpu", 16, 8_685.0, "unknown"),
    ("Mul", "Elementwise", "ai_vector", 1_248, 5_307.5, "vector"),
    ("Sigmoid", "Activation", "ai_vector", 1_056, 4_825.0, "vector"),
    ("ConcatD", "Concat", "ai_vector", 384, 2_895.0, "mte2"),
    ("TransData", "TransData", "ai_vector", 96, 2_412.5, "mte3"),
    ("ResizeNearestNeighborV2", "Resize", "ai_vector", 32, 1_930.0, "vector"),
    ("TopKV2", "TopK", "ai_core", 16, 1_447.5, "scalar"),
    ("Add", "Elementwise", "ai_vector", 640, 1_447.5, "vector"),
    ("MaxPoolV3", "Pooling", "ai_vector", 48, 965.0, "vector"),
    ("Cast", "Cast", "ai_cpu", 64, 965.0, "unknown"),
    ("StridedSliceD", "Concat", "ai_vector", 256, 723.75, "mte2"),
    ("Transpose", "Transpose", "ai_vector", 64, 723.75, "mte2"),
    ("Cast", "Cast", "ai_vector", 320, 482.5, "vector"),
    ("GatherV2", "Gather", "ai_cpu", 32, 482.5, "unknown"),
]

NMS_NOTE_PIPES = "cannot judge pipe-bound classes of the AI CPU rows: the AI CPU has no pipe counters (collect with --aic-metrics=PipeUtilization)"
NOTE_CORES = "cannot judge block dim against the core count: device info.json is missing (collect with msprof --output and keep device_*/info.json)"

HIASCEND_NMS = "https://www.hiascend.com/document/detail/zh/Pytorch/600/apiref/apilist/ptaoplist_000084.html"
ULTRALYTICS_PR = "https://github.com/ultralytics/ultralytics/pull/25963"


def yolo_profile_doc() -> dict:
    """The `opprof-advisor/profile/1` document of the YOLOv8-like example."""
    op_types = [
        {"op_type": op, "family": fam, "unit": unit, "count": count, "time_us": t, "share": t / DEVICE_US, "bound": bound}
        for op, fam, unit, count, t, bound in YOLO_ROWS
    ]
    return upgrade({
        "schema": "opprof-advisor/profile/1",
        "source": {
            "path": "data/examples/yolov8_torch_npu/yolov8s_ascend_pt",
            "format": "torch-npu-text",
            "versions": {"cann": "8.0.RC2", "torch_npu": "2.1.0.post6", "profiler_level": "Level1"},
            "chip": "Ascend910B3",
        },
        "device_time_us": DEVICE_US,
        "compute_time_us": DEVICE_US,
        "communication_time_us": 0.0,
        "op_types": op_types,
        "symptoms": [
            {"id": "nms_cpu", "op_types": ["NonMaxSuppressionV3"], "share": 0.18,
             "detail": "NonMaxSuppressionV3 runs on the AI CPU: 16 launches, 18.0 % of device time"},
            {"id": "aicpu_fallback", "op_types": ["NonMaxSuppressionV3", "Cast", "GatherV2"], "share": 0.21,
             "detail": "3 op types fall back to the AI CPU"},
            {"id": "transdata_overhead", "op_types": ["TransData"], "share": 0.05,
             "detail": "TransData takes 5.0 % of device time"},
        ],
        "notes": [NMS_NOTE_PIPES, NOTE_CORES],
    })


def yolo_suggest_doc() -> dict:
    """The `opprof-advisor/suggest/2` document: NMS on the AI CPU first, 18 % × (60–90 %) expected gain, its
    lead remedy the NMS recipe."""
    return upgrade({
        "schema": "opprof-advisor/suggest/2",
        "profile": {"path": "data/examples/yolov8_torch_npu/yolov8s_ascend_pt", "format": "torch-npu-text",
                    "device_time_us": DEVICE_US},
        "context": {"producer": "run", "tool": "torch_npu", "framework": "torch_npu", "phase": "inference",
                    "family": "detection", "precision": "fp16", "chip": "Ascend910B3", "ranks": "single",
                    "line": "torch_npu run · inference · detection (CNN) · fp16 · Ascend910B3 · 1 device"},
        "suggestions": [
            {
                "rank": 1, "id": "aicpu-work", "family": "aicpu",
                "title": "NonMaxSuppressionV3 runs on the AI CPU: 8.69 ms, 18.0 % of device time",
                "evidence": [{"op_type": "NonMaxSuppressionV3", "time_us": 8_685.0, "share": 0.18,
                              "why": "runs on the AI CPU (symptoms nms_cpu, aicpu_fallback)"}],
                "matched_symptoms": ["nms_cpu", "aicpu_fallback"], "stake_us": 8_685.0, "stake_share": 0.18,
                "expected_gain": {"low_us": 5_211.0, "high_us": 7_816.5, "low_pct": 10.8, "high_pct": 16.2,
                                  "model": "model", "of": "device time",
                                  "assumptions": "an AI Core kernel takes 10–40 % of the AI CPU time: 60–90 % of the "
                                                 "NMS time saved (Amdahl bound)",
                                  "saved_us_low": 5_211.0, "saved_us_high": 7_816.5, "kind": "model",
                                  "basis": "an AI Core kernel takes 10–40 % of the AI CPU time: 60–90 % of the NMS "
                                           "time saved (Amdahl bound)"},
                "gain_basis": "model", "confidence": "high",
                "remedies": [
                    {"id": "recipe-nms-on-npu", "kind": "recipe",
                     "title": "Run NMS on the NPU with npu_batch_nms instead of the AI CPU",
                     "first_step": "Replace the per-image NMS call with torch_npu.npu_batch_nms(...)",
                     "why_applies": "NMS on the AI CPU in a detection run", "relevance": 0.71, "evidence_grade": "C",
                     "sources": [HIASCEND_NMS, "Ascend/pytorch torch_npu/contrib/function/nms.py", ULTRALYTICS_PR],
                     "zh": {}},
                    {"id": "tip-nms-single-cpu-call", "kind": "tip",
                     "title": "Fallback when the NPU NMS kernels do not fit: one CPU call per batch",
                     "first_step": "Replace the loop with one torchvision.ops.nms call per batch",
                     "why_applies": "NMS runs once per image", "relevance": 0.4, "evidence_grade": "D",
                     "sources": [], "zh": {}},
                ],
                "first_step": "Replace the per-image NMS call with torch_npu.npu_batch_nms(...)",
                "show": "advisor show recipe-nms-on-npu", "zh": {},
            },
            {
                "rank": 2, "id": "aicpu-dtype", "family": "aicpu",
                "title": "Cast and GatherV2 run on the AI CPU: 1.45 ms, 3.0 % of device time",
                "evidence": [
                    {"op_type": "Cast", "time_us": 965.0, "share": 0.02, "why": "Cast rows on the AI CPU (aicpu_fallback)"},
                    {"op_type": "GatherV2", "time_us": 482.5, "share": 0.01, "why": "GatherV2 on the AI CPU (aicpu_fallback)"},
                ],
                "matched_symptoms": ["aicpu_fallback"], "stake_us": 1_447.5, "stake_share": 0.03,
                "expected_gain": {"low_us": 723.75, "high_us": 1_302.75, "low_pct": 1.5, "high_pct": 2.7,
                                  "model": "sourced", "of": "device time",
                                  "assumptions": "pattern: 50–90 % of the matched operators' time × their share 3.0 %",
                                  "saved_us_low": 723.75, "saved_us_high": 1_302.75, "kind": "sourced",
                                  "basis": "pattern: 50–90 % of the matched operators' time × their share 3.0 %"},
                "gain_basis": "sourced", "confidence": "medium",
                "remedies": [
                    {"id": "pattern-aicpu-int64-cast", "kind": "pattern",
                     "title": "Keep Cast and Gather off the AI CPU: avoid int64 / float64 inputs",
                     "first_step": "Cast the inputs to int32 / float32 before they reach the NPU",
                     "why_applies": "int64 Cast and Gather rows on the AI CPU", "relevance": 0.48,
                     "evidence_grade": "B",
                     "sources": ["https://gitee.com/ascend/pytorch/issues/I8ABCD", "KB-SOURCES.md B1 row 1"], "zh": {}},
                ],
                "first_step": "Cast the inputs to int32 / float32 before they reach the NPU",
                "show": "advisor show pattern-aicpu-int64-cast", "zh": {},
            },
            {
                "rank": 3, "id": "transdata", "family": "transdata",
                "title": "TransData converts formats 96 times: 2.41 ms, 5.0 % of device time",
                "evidence": [{"op_type": "TransData", "time_us": 2_412.5, "share": 0.05,
                              "why": "format conversions take 5.0 % (transdata_overhead)"}],
                "matched_symptoms": ["transdata_overhead"], "stake_us": 2_412.5, "stake_share": 0.05,
                "expected_gain": None, "gain_basis": None, "confidence": "low",
                "remedies": [
                    {"id": "tip-transdata-nd-format", "kind": "tip",
                     "title": "Cut TransData by keeping tensors in one format between convolutions",
                     "first_step": "", "why_applies": "TransData between convolutions", "relevance": 0.31,
                     "evidence_grade": "D", "sources": ["forum post, no link recorded"], "zh": {}},
                ],
                "first_step": "", "show": "advisor show tip-transdata-nd-format", "zh": {},
            },
        ],
        "rest": "nothing else above 3 % of device time",
        "similar_cases": [
            {"id": "case-yolov8s-nms-aicpu", "title": "YOLOv8s inference on Atlas 800I A2 with NMS on the AI CPU", "similarity": 0.83},
            {"id": "case-yolov5-postprocess", "title": "YOLOv5 post-processing moved to the NPU", "similarity": 0.64},
        ],
        "notes": [NMS_NOTE_PIPES, "the matcher used 3 symptom ids and 15 op families from this profile"],
        "left_out": [{"id": "tip-vllm-ascend-graph-mode", "why": "applies to framework vllm-ascend; this run: torch_npu"}],
        "explain": False,
    })


def hostile_suggest_doc() -> dict:
    """The YOLO suggest document with markup injected wherever a KB file or profile supplies text."""
    doc = yolo_suggest_doc()
    first = doc["suggestions"][0]
    lead = first["remedies"][0]
    first["title"] = "<script>alert(1)</script> NMS on the AI CPU"
    first["evidence"][0]["why"] = '<img src="x" onerror="alert(2)">runs on AI CPU'
    first["evidence"][0]["op_type"] = "<b>NonMaxSuppressionV3</b>"
    lead["sources"] = ["javascript:alert(3)", "<script>alert(4)</script>", " JAVASCRIPT:alert(5)",
                       "data:text/html,<script>alert(6)</script>", "https://example.org/a?x=\"><script>alert(7)</script>"]
    lead["why_applies"] = "<style>body{display:none}</style>"
    first["expected_gain"]["assumptions"] = "<iframe src=\"https://evil.example\"></iframe>"
    doc["similar_cases"][0]["title"] = "<svg onload=alert(8)>case"
    doc["notes"].append('cannot judge <a href="http://evil.example">x</a>: <script>alert(9)</script>')
    doc["profile"]["path"] = "</title><script>alert(10)</script>"
    doc["context"]["line"] = "<u>torch_npu</u> run"
    doc["rest"] = "<marquee>nothing else</marquee>"
    return doc


def hostile_profile_doc() -> dict:
    """The YOLO profile with markup in an op type, a symptom detail and the chip."""
    doc = copy.deepcopy(yolo_profile_doc())
    doc["op_types"][1]["op_type"] = "<script>alert(11)</script>"
    doc["op_types"][1]["family"] = "<i>NMS</i>"
    doc["symptoms"][0]["detail"] = "<script>alert(12)</script>"
    doc["source"]["chip"] = '"><link rel="stylesheet" href="https://evil.example/x.css">'
    del doc["families"]
    return upgrade(doc)


def compare_doc() -> dict:
    """Before/after of the YOLO example where NMS moved from the AI CPU to the AI Core."""
    return {
        "schema": "opprof-advisor/compare/1",
        "before": {"path": "data/examples/yolov8_torch_npu/yolov8s_ascend_pt", "format": "torch-npu-text",
                   "device_time_us": DEVICE_US, "chip": "Ascend910B3"},
        "after": {"path": "data/examples/yolov8_npu_nms/yolov8s_ascend_pt", "format": "torch-npu-text",
                  "device_time_us": 41_005.0, "chip": "Ascend910B3"},
        "total": {"before_us": DEVICE_US, "after_us": 41_005.0, "delta_pct": -15.02},
        "op_types": [
            {"op_type": "Conv2D", "before_us": 14_957.5, "after_us": 14_940.0, "delta_pct": -0.12, "unit_before": "ai_core", "unit_after": "ai_core"},
            {"op_type": "NMS", "before_us": 8_685.0, "after_us": 1_440.0, "delta_pct": -83.42, "unit_before": "ai_cpu", "unit_after": "ai_core"},
            {"op_type": "Elementwise", "before_us": 6_755.0, "after_us": 6_760.0, "delta_pct": 0.07, "unit_before": "ai_vector", "unit_after": "ai_vector"},
            {"op_type": "Activation", "before_us": 4_825.0, "after_us": 4_825.0, "delta_pct": 0.0, "unit_before": "ai_vector", "unit_after": "ai_vector"},
            {"op_type": "TransData", "before_us": 2_412.5, "after_us": 2_410.0, "delta_pct": -0.1, "unit_before": "ai_vector", "unit_after": "ai_vector"},
            {"op_type": "Gather", "before_us": 482.5, "after_us": 0.0, "delta_pct": -100.0, "unit_before": "ai_cpu", "unit_after": None},
            {"op_type": "BatchMultiClassNMSPad", "before_us": 0.0, "after_us": 210.0, "delta_pct": None, "unit_before": None, "unit_after": "ai_vector"},
        ],
        "notes": ["both profiles are the same model (yolov8s): deltas are comparable"],
    }


def scan_doc() -> dict:
    """The `opprof-advisor/scan/1` document of a small YOLO-like detector repository."""
    return {
        "schema": "opprof-advisor/scan/1",
        "root": "tests/data/scan_repo",
        "files_scanned": 7,
        "files_failed": [{"path": "tests/data/scan_repo/broken.py", "error": "SyntaxError: invalid syntax (line 3)"}],
        "findings": [
            {"category": "nms", "op": "torchvision.ops.nms", "path": "detector/postprocess.py", "line": 41,
             "support": "cpu_fallback_risk", "replacement": "torch_npu.npu_batch_nms", "source": HIASCEND_NMS},
            {"category": "convolution", "op": "nn.Conv2d", "path": "detector/backbone.py", "line": 12,
             "support": "native", "replacement": None, "source": "KB-SOURCES.md A3"},
            {"category": "convolution", "op": "nn.Conv2d", "path": "detector/backbone.py", "line": 18,
             "support": "native", "replacement": None, "source": "KB-SOURCES.md A3"},
            {"category": "attention", "op": "softmax(q @ k.T) @ v", "path": "detector/neck.py", "line": 77,
             "support": "needs_replacement", "replacement": "torch_npu.npu_fusion_attention", "source": "KB-SOURCES.md C2"},
            {"category": "custom_kernel", "op": "torch.utils.cpp_extension.load", "path": "ops/build.py", "line": 5,
             "support": "porting_risk", "replacement": None, "source": "KB-SOURCES.md B4"},
        ],
        "suggestions": [
            {"rank": 1, "id": "recipe-nms-on-npu", "kind": "recipe",
             "title": "Run NMS on the NPU with npu_batch_nms instead of the AI CPU", "tags": ["nms"],
             "operators": ["NMS"], "score": 0.52,
             "evidence": [{"op_type": "NMS", "time_us": None, "share": None, "why": "torchvision.ops.nms at detector/postprocess.py:41"}],
             "expected_gain": None, "evidence_grade": "C", "sources": [HIASCEND_NMS]},
        ],
        "notes": ["no expected gain is claimed from a static scan",
                  "profile next: python -m torch_npu ... then advisor suggest --profile ./prof"],
    }


def kernel_compare_doc() -> dict:
    """Two msopprof runs of one MatMul kernel (two tilings): kernel figures and pipe ratios side by side."""
    def side(path: str, duration: float, block_dim: int, ratios: dict) -> dict:
        return {"path": path, "format": "msopprof-device", "device_time_us": duration, "chip": "Ascend910B3",
                "versions": {}, "kernel": {"mode": "device", "kernel": "MatmulCustom", "op_type": "mix", "chip": "Ascend910B3",
                                           "task_duration_us": duration, "block_dim": block_dim, "block_imbalance": 1.21,
                                           "bound_pipe": "aic_mte2", "pipe_ratios": ratios}}
    return {
        "schema": "opprof-advisor/compare/1",
        "before": side("runs/tiling_a/OPPROF_20250109074803_AAAA", 1_840.0, 8,
                       {"aic_cube": 0.41, "aic_mte2": 0.93, "aiv_vec": 0.05}),
        "after": side("runs/tiling_b/OPPROF_20250109081512_BBBB", 1_012.0, 24,
                      {"aic_cube": 0.88, "aic_mte2": 0.52, "aiv_vec": 0.06}),
        "total": {"before_us": 1_840.0, "after_us": 1_012.0, "delta_pct": -45.0},
        "op_types": [{"op_type": "MatMul", "before_us": 1_840.0, "after_us": 1_012.0, "delta_pct": -45.0,
                      "unit_before": "mix_aic", "unit_after": "mix_aic"}],
        "notes": [],
    }
