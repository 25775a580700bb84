"""Regenerate data/examples/: small synthetic profiles in the real on-disk formats.

    python data/make_examples.py [OUT]        # OUT defaults to data/examples

Every example comes from opprof_advisor.testing with a fixed seed, so the output is byte-for-byte
reproducible (tests/test_testing.py regenerates it and compares). The workloads are made up but
shaped like real runs; see data/examples/README.md for what each one should show.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opprof_advisor import testing  # noqa: E402
from opprof_advisor.testing import KernelSpec  # noqa: E402

SEED = 2025
EXAMPLES = ("yolov8_torch_npu", "yolov8_torch_npu_db", "yolov8_torch_npu_nms_on_npu", "matmul_msopprof",
            "system_msprof")

#: NMS time after the fix: torch_npu's batched NMS on the AI Vector cores (made-up, plausible).
NMS_AFTER_US = 160.0


def yolov8_inference() -> list[KernelSpec]:
    """YOLOv8s-like batch-1 640x640 inference: conv-heavy backbone/neck, NMS left on the AI CPU."""
    conv = dict(op_type="Conv2D", task_type="AI_CORE", input_dtypes="FLOAT16;FLOAT16;FLOAT16",
                input_formats="NC1HWC0;FRACTAL_Z;ND", output_dtypes="FLOAT16", output_formats="NC1HWC0",
                jitter=0.15, pipe={"aic_cube": 0.58, "aic_mte2": 0.47, "aic_mte1": 0.33, "aic_fixpipe": 0.21})
    vec = dict(task_type="AI_VECTOR_CORE", input_dtypes="FLOAT16", input_formats="NC1HWC0", output_dtypes="FLOAT16",
               output_formats="NC1HWC0", jitter=0.2)
    return [
        KernelSpec(name="trans_TransData_0", op_type="TransData", task_type="AI_VECTOR_CORE", duration_us=38.0,
                   block_dim=20, input_shapes="1,3,640,640", input_dtypes="FLOAT", input_formats="NCHW",
                   output_shapes="1,1,640,640,16", output_dtypes="FLOAT16", output_formats="NC1HWC0",
                   pipe={"aiv_mte2": 0.71, "aiv_mte3": 0.64, "aiv_vec": 0.12}),
        KernelSpec(name="Conv2D_stem", duration_us=96.0, count=2, block_dim=20,
                   input_shapes="1,1,640,640,16;27,4,16,16;32", output_shapes="1,2,320,320,16", **conv),
        KernelSpec(name="Conv2D_c2f", duration_us=48.0, count=34, block_dim=20,
                   input_shapes="1,4,160,160,16;72,4,16,16;64", output_shapes="1,4,160,160,16", **conv),
        KernelSpec(name="Conv2D_down", duration_us=62.0, count=8, block_dim=16,
                   input_shapes="1,8,80,80,16;288,16,16,16;256", output_shapes="1,16,40,40,16", **conv),
        KernelSpec(name="Conv2D_head", duration_us=27.0, count=20, block_dim=12,
                   input_shapes="1,8,80,80,16;72,4,16,16;64", output_shapes="1,4,80,80,16", **conv),
        KernelSpec(name="aclnnSilu_SiluAiCore_Silu", op_type="Silu", duration_us=7.5, count=57, block_dim=40,
                   input_shapes="1,4,160,160,16", output_shapes="1,4,160,160,16",
                   pipe={"aiv_vec": 0.52, "aiv_mte2": 0.44, "aiv_mte3": 0.31}, **vec),
        KernelSpec(name="aclnnSigmoid_SigmoidAiCore_Sigmoid", op_type="Sigmoid", duration_us=5.2, count=3,
                   block_dim=40, input_shapes="1,80,8400", output_shapes="1,80,8400", **vec),
        KernelSpec(name="aclnnMul_MulAiCore_Mul", op_type="Mul", duration_us=4.1, count=6, block_dim=40,
                   input_shapes="1,4,8400;1,8400", output_shapes="1,4,8400", **vec),
        KernelSpec(name="aclnnCat_ConcatD_ConcatD", op_type="ConcatD", duration_us=9.0, count=19, block_dim=32,
                   input_shapes="1,4,80,80,16;1,4,80,80,16", output_shapes="1,8,80,80,16",
                   pipe={"aiv_mte2": 0.66, "aiv_mte3": 0.61, "aiv_vec": 0.02}, **vec),
        KernelSpec(name="aclnnUpsampleNearest2d_ResizeNearestNeighborV2_ResizeNearestNeighborV2",
                   op_type="ResizeNearestNeighborV2", duration_us=14.0, count=2, block_dim=40,
                   input_shapes="1,32,20,20,16;2", output_shapes="1,32,40,40,16", **vec),
        KernelSpec(name="aclnnMaxPool_MaxPoolV3_MaxPoolV3", op_type="MaxPoolV3", duration_us=8.0, count=3,
                   block_dim=40, input_shapes="1,16,20,20,16", output_shapes="1,16,20,20,16", **vec),
        KernelSpec(name="aclnnSplitWithSize_SplitV_SplitV", op_type="SplitV", duration_us=5.5, count=8,
                   block_dim=16, input_shapes="1,8,80,80,16;2;1", output_shapes="1,4,80,80,16;1,4,80,80,16",
                   **vec),
        KernelSpec(name="aclnnAdd_AddAiCore_Add", op_type="Add", duration_us=3.9, count=6, block_dim=40,
                   input_shapes="1,4,80,80,16;1,4,80,80,16", output_shapes="1,4,80,80,16", **vec),
        KernelSpec(name="trans_TransData_1", op_type="TransData", task_type="AI_VECTOR_CORE", duration_us=21.0,
                   count=3, block_dim=8, input_shapes="1,9,80,80,16", input_dtypes="FLOAT16",
                   input_formats="NC1HWC0", output_shapes="1,144,80,80", output_dtypes="FLOAT16",
                   output_formats="NCHW", pipe={"aiv_mte2": 0.69, "aiv_mte3": 0.58, "aiv_vec": 0.1}),
        KernelSpec(name="NonMaxSuppressionV3", task_type="AI_CPU", duration_us=1150.0, block_dim=1,
                   input_shapes="8400,4;8400;;;", input_dtypes="FLOAT;FLOAT;INT32;FLOAT;FLOAT",
                   input_formats="ND;ND;ND;ND;ND", output_shapes="300", output_dtypes="INT32", output_formats="ND",
                   wait_us=35.0),
    ]


def nms_on_ai_core(specs: list[KernelSpec]) -> list[KernelSpec]:
    """The same specs with NonMaxSuppressionV3 on the AI CPU replaced by a batched NMS kernel on the AI Vector cores."""
    return [
        replace(s, name="BatchMultiClassNMS", op_type="BatchMultiClassNMS", task_type="AI_VECTOR_CORE",
                duration_us=NMS_AFTER_US, block_dim=40)
        if s.op_type == "NonMaxSuppressionV3" else s
        for s in specs
    ]


def transformer_unfused() -> list[KernelSpec]:
    """A 4-layer BERT-base-like encoder (seq 512, batch 8) run as a graph, attention left unfused."""
    mm = dict(op_type="MatMulV2", task_type="AI_CORE", block_dim=24, input_dtypes="FLOAT16;FLOAT16",
              input_formats="FRACTAL_NZ;FRACTAL_NZ", output_dtypes="FLOAT16", output_formats="FRACTAL_NZ",
              pipe={"aic_cube": 0.81, "aic_mte2": 0.44, "aic_mte1": 0.52, "aic_fixpipe": 0.27})
    bmm = dict(op_type="BatchMatMulV2", task_type="AI_CORE", block_dim=24, input_dtypes="FLOAT16;FLOAT16",
               input_formats="FRACTAL_NZ;FRACTAL_NZ", output_dtypes="FLOAT16", output_formats="FRACTAL_NZ",
               pipe={"aic_cube": 0.46, "aic_mte2": 0.71, "aic_mte1": 0.38, "aic_fixpipe": 0.33})
    vec = dict(task_type="AI_VECTOR_CORE", block_dim=48, input_dtypes="FLOAT16", input_formats="ND",
               output_dtypes="FLOAT16", output_formats="ND")
    specs = [
        KernelSpec(name="Cast_mask", op_type="Cast", task_type="AI_CPU", duration_us=160.0, block_dim=1,
                   input_shapes="8,512", input_dtypes="INT64", input_formats="ND", output_shapes="8,512",
                   output_dtypes="FLOAT16", output_formats="ND"),
        KernelSpec(name="GatherV2_embedding", op_type="GatherV2", task_type="AI_CPU", duration_us=210.0, block_dim=1,
                   input_shapes="30522,768;8,512;1", input_dtypes="FLOAT16;INT64;INT64", input_formats="ND;ND;ND",
                   output_shapes="8,512,768", output_dtypes="FLOAT16", output_formats="ND"),
        KernelSpec(name="trans_TransData_embedding", op_type="TransData", duration_us=42.0,
                   input_shapes="8,512,768", output_shapes="8,48,32,16,16",
                   pipe={"aiv_mte2": 0.72, "aiv_mte3": 0.66, "aiv_vec": 0.08}, **{**vec, "output_formats": "FRACTAL_NZ"}),
    ]
    for layer in range(4):
        p = f"encoder/layer_{layer}"
        specs += [
            KernelSpec(name=f"{p}/attention/MatMulV2_qkv", duration_us=210.0, input_shapes="4096,768;768,2304",
                       output_shapes="4096,2304", **mm),
            KernelSpec(name=f"{p}/attention/TransposeD_q", op_type="TransposeD", duration_us=36.0,
                       input_shapes="8,512,12,64", output_shapes="8,12,512,64",
                       pipe={"aiv_mte2": 0.61, "aiv_mte3": 0.57}, **vec),
            KernelSpec(name=f"{p}/attention/BatchMatMulV2_qk", duration_us=118.0, input_shapes="8,12,512,64;8,12,64,512",
                       output_shapes="8,12,512,512", **bmm),
            KernelSpec(name=f"{p}/attention/Mul_scale", op_type="Muls", duration_us=31.0, input_shapes="8,12,512,512",
                       output_shapes="8,12,512,512", pipe={"aiv_vec": 0.34, "aiv_mte2": 0.63}, **vec),
            KernelSpec(name=f"{p}/attention/Add_mask", op_type="Add", duration_us=34.0,
                       input_shapes="8,12,512,512;8,1,1,512", output_shapes="8,12,512,512",
                       pipe={"aiv_vec": 0.31, "aiv_mte2": 0.66}, **vec),
            KernelSpec(name=f"{p}/attention/SoftmaxV2", op_type="SoftmaxV2", duration_us=88.0,
                       input_shapes="8,12,512,512", output_shapes="8,12,512,512",
                       pipe={"aiv_vec": 0.58, "aiv_mte2": 0.49, "aiv_mte3": 0.33}, **vec),
            KernelSpec(name=f"{p}/attention/BatchMatMulV2_pv", duration_us=104.0, input_shapes="8,12,512,512;8,12,512,64",
                       output_shapes="8,12,512,64", **bmm),
            KernelSpec(name=f"{p}/attention/MatMulV2_out", duration_us=74.0, input_shapes="4096,768;768,768",
                       output_shapes="4096,768", **mm),
            KernelSpec(name=f"{p}/attention/LayerNorm", op_type="LayerNorm", duration_us=29.0,
                       input_shapes="8,512,768;768;768", output_shapes="8,512,768",
                       pipe={"aiv_vec": 0.42, "aiv_mte2": 0.38, "aiv_scalar": 0.21}, **vec),
            KernelSpec(name=f"{p}/ffn/MatMulV2_up", duration_us=276.0, input_shapes="4096,768;768,3072",
                       output_shapes="4096,3072", **mm),
            KernelSpec(name=f"{p}/ffn/FastGelu", op_type="FastGelu", duration_us=38.0, input_shapes="4096,3072",
                       output_shapes="4096,3072", pipe={"aiv_vec": 0.55, "aiv_mte2": 0.46}, **vec),
            KernelSpec(name=f"{p}/ffn/MatMulV2_down", duration_us=268.0, input_shapes="4096,3072;3072,768",
                       output_shapes="4096,768", **mm),
            KernelSpec(name=f"{p}/ffn/LayerNorm", op_type="LayerNorm", duration_us=29.0,
                       input_shapes="8,512,768;768;768", output_shapes="8,512,768",
                       pipe={"aiv_vec": 0.42, "aiv_mte2": 0.38, "aiv_scalar": 0.21}, **vec),
        ]
    specs += [
        KernelSpec(name="trans_TransData_pooler", op_type="TransData", duration_us=18.0, input_shapes="8,48,32,16,16",
                   output_shapes="8,512,768", pipe={"aiv_mte2": 0.7, "aiv_mte3": 0.62},
                   **{**vec, "block_dim": 8, "input_formats": "FRACTAL_NZ"}),
        KernelSpec(name="ArgMaxV2_logits", op_type="ArgMaxV2", task_type="AI_CPU", duration_us=95.0, block_dim=1,
                   input_shapes="8,2;", input_dtypes="FLOAT16;INT32", input_formats="ND;ND", output_shapes="8",
                   output_dtypes="INT64", output_formats="ND"),
    ]
    return specs


MATMUL_KERNEL = KernelSpec(
    name="MatMulV3", task_type="mix", duration_us=186.4, block_dim=16, mix_block_dim=32,
    pipe={"aic_cube": 0.36, "aic_mte2": 0.87, "aic_mte1": 0.29, "aic_fixpipe": 0.14, "aic_scalar": 0.11,
          "aiv_vec": 0.18, "aiv_mte2": 0.27, "aiv_mte3": 0.21, "aiv_scalar": 0.08},
)


def make_examples(out: Path) -> list[Path]:
    """Write the examples under ``out`` (their old folders are replaced)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLES:
        shutil.rmtree(out / name, ignore_errors=True)
    yolo = yolov8_inference()
    return [
        testing.write_torch_npu_text(out / "yolov8_torch_npu", yolo, level="Level1", variant="2025-11", seed=SEED),
        testing.write_torch_npu_db(out / "yolov8_torch_npu_db", yolo, level="Level1", seed=SEED).parents[1],
        # the tuning loop's AFTER run: the same workload and seed with the NMS recipe applied
        testing.write_torch_npu_text(out / "yolov8_torch_npu_nms_on_npu", nms_on_ai_core(yolo), level="Level1",
                                       variant="2025-11", seed=SEED),
        testing.write_msopprof_device(out / "matmul_msopprof", MATMUL_KERNEL, chip="Ascend910B2",
                                        generation="2026", imbalance=4.0, seed=SEED),
        testing.write_op_summary(out / "system_msprof", transformer_unfused(), chip="Ascend910B1", seed=SEED),
    ]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "data" / "examples"
    for path in make_examples(target):
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        print(f"{path.relative_to(target.parent) if target.parent in path.parents else path}  {size / 1024:.0f} KB")
