"""build_profile on small RawProfiles: op-type rows, totals, every symptom and the cannot-judge notes."""

from __future__ import annotations

import pytest

from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.profiles import build_profile
from opprof_advisor.readers.columns import op_type_from_name, unit_of
from opprof_advisor.core.models import StepSplit
from opprof_advisor.readers.base import KernelTable, RawProfile
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.core.vocabulary import SYMPTOMS, UNITS


def _table(kernels: list[dict], pipe_keys=(), present=None) -> KernelTable:
    """kernels: dicts with name, op, task, dur and optional wait, block, dtypes, out, state, formats, <pipe key>."""
    table = KernelTable(
        name=[k.get("name", k["op"]) for k in kernels], op_type=[k["op"] for k in kernels],
        task_type=[k["task"] for k in kernels], duration_us=[k["dur"] for k in kernels],
        wait_us=[k.get("wait", 1.0) for k in kernels], block_dim=[k.get("block", 40) for k in kernels],
        mix_block_dim=[0] * len(kernels), input_shapes=["8,8"] * len(kernels),
        input_dtypes=[k.get("dtypes", "FLOAT16") for k in kernels], input_formats=[k.get("formats", "ND") for k in kernels],
        output_formats=["ND"] * len(kernels), output_dtypes=[k.get("out", "FLOAT16") for k in kernels],
        op_state=[k.get("state") for k in kernels])
    for key in pipe_keys:
        table.pipe[key] = [k.get(key) for k in kernels]
    table.present = set(present if present is not None else
                        {"op_type", "task_type", "wait_us", "block_dim", "input_dtypes", "output_dtypes",
                         "input_formats", "op_state"} | ({"pipe"} if pipe_keys else set()))
    return table


def _profile(kernels, *, pipe_keys=(), present=None, **raw):
    return build_profile(RawProfile(path="p", format=raw.pop("format", "torch-npu-text"),
                                    kernels=_table(kernels, pipe_keys, present), **raw))


def _symptom(profile, symptom_id):
    return next(s for s in profile.symptoms if s.id == symptom_id)


def test_op_type_rows_totals_shares_and_order():
    profile = _profile([
        {"op": "MatMulV2", "task": "AI_CORE", "dur": 60.0, "block": 20},
        {"op": "MatMulV2", "task": "AI_CORE", "dur": 40.0, "block": 20},
        {"op": "Add", "task": "AI_VECTOR_CORE", "dur": 50.0},
        {"op": "hcom_allReduce_", "task": "HCCL", "dur": 50.0, "name": "hcom_allReduce__1_0", "block": 0},
    ])
    assert (profile.device_time_us, profile.compute_time_us, profile.communication_time_us) == (200.0, 150.0, 50.0)
    rows = [(r.op_type, r.family, r.unit, r.count, r.time_us, r.share, r.block_dim) for r in profile.op_types]
    assert rows == [("MatMulV2", "MatMul", "ai_core", 2, 100.0, 0.5, 20),
                    ("Add", "Elementwise", "ai_vector", 1, 50.0, 0.25, 40),
                    ("hcom_allReduce_", "AllReduce", "communication", 1, 50.0, 0.25, 0)]
    assert all(r.unit in UNITS for r in profile.op_types)
    assert all(s.id in SYMPTOMS for s in profile.symptoms)


def test_same_op_type_on_two_units_gives_two_rows():
    profile = _profile([{"op": "Cast", "task": "AI_CPU", "dur": 100.0}, {"op": "Cast", "task": "AI_VECTOR_CORE", "dur": 5.0}])
    assert [(r.op_type, r.unit) for r in profile.op_types] == [("Cast", "ai_cpu"), ("Cast", "ai_vector")]


@pytest.mark.parametrize(("name", "op"), [
    ("aclnnMm_MatMulCommon_MatMulV2", "MatMulV2"), ("trans_TransData_17", "TransData"),
    ("Conv2DBackpropInput5", "Conv2DBackpropInput"), ("hcom_allReduce__868_3_1", "hcom_allReduce"),
    ("aclnnTopk_TopkV2_TopKV2", "TopKV2"), ("ReduceSum7", "ReduceSum"),
])
def test_op_type_from_name(name, op):
    assert op_type_from_name(name) == op


def test_unit_vocabulary():
    assert unit_of("MIX_AIV", "Reduce") == "mix_aiv"
    assert unit_of("N/A".replace("N/A", ""), None) == "unknown"
    assert unit_of("AI_CPU", "AllReduce") == "communication"
    assert unit_of("vector", None) == "ai_vector" and unit_of("mix", None) == "mix_aic"


def test_aicpu_fallback_excludes_communication_aicpu_kernels_and_finds_nms():
    profile = _profile([
        {"op": "NonMaxSuppressionV3", "task": "AI_CPU", "dur": 300.0},
        {"op": "Cast", "task": "AI_CPU", "dur": 100.0, "dtypes": "INT32", "out": "UINT64"},
        {"op": "allreduceAicpuKernel", "name": "allreduceAicpuKernel", "task": "AI_CPU", "dur": 500.0},
        {"op": "Conv2D", "task": "AI_CORE", "dur": 600.0},
    ])
    fallback = _symptom(profile, "aicpu_fallback")
    assert fallback.op_types == ["NonMaxSuppressionV3", "Cast"]
    assert fallback.share == pytest.approx(400.0 / 1500.0, abs=1e-6)
    nms = _symptom(profile, "nms_cpu")
    assert nms.op_types == ["NonMaxSuppressionV3"] and nms.share == pytest.approx(0.2)
    double = _symptom(profile, "double_dtype")
    assert double.op_types == ["Cast"]


def test_tiny_ai_cpu_kernels_are_not_a_finding():
    profile = _profile([{"op": "Range", "task": "AI_CPU", "dur": 5.0, "dtypes": "INT64"}] +
                       [{"op": "Conv2D", "task": "AI_CORE", "dur": 1000.0}])
    assert not {"aicpu_fallback", "double_dtype"} & profile.symptom_ids()


def test_level0_table_notes_instead_of_claims():
    profile = _profile([{"op": "", "name": "aclnnMm_MatMulCommon_MatMulV2", "task": "", "dur": 100.0},
                        {"op": "", "name": "trans_Cast_3", "task": "", "dur": 200.0}],
                       present={"op_type", "task_type", "wait_us"})
    assert [r.op_type for r in profile.op_types] == ["Cast", "MatMulV2"]
    assert {r.unit for r in profile.op_types} == {"unknown"}
    assert "aicpu_fallback" not in profile.symptom_ids()
    assert profile.notes[0] == ("op types were derived from kernel names: the Type column is not recorded "
                                "(collect with profiler_level=Level1)")
    assert ("cannot judge the unit of compute kernels (AI Core / AI Vector / AI CPU): Task Type / Accelerator Core "
            "is N/A at profiler level0 (collect with profiler_level=Level1)") in profile.notes
    assert any(n.startswith("cannot judge dynamic shape: the OP State column is missing") for n in profile.notes)
    assert any(n.startswith("cannot judge block dim: Block Dim / Block Num is not recorded") for n in profile.notes)


def test_transdata_overhead_from_five_percent_of_compute():
    small = _profile([{"op": "TransData", "task": "AI_VECTOR_CORE", "dur": 4.0}, {"op": "Conv2D", "task": "AI_CORE", "dur": 96.0}])
    big = _profile([{"op": "TransData", "task": "AI_VECTOR_CORE", "dur": 6.0}, {"op": "Conv2D", "task": "AI_CORE", "dur": 94.0}])
    assert "transdata_overhead" not in small.symptom_ids()
    assert _symptom(big, "transdata_overhead").share == pytest.approx(0.06)


def test_low_block_dim_needs_core_counts():
    kernels = [{"op": "Tril", "task": "AI_VECTOR_CORE", "dur": 100.0, "block": 40},
               {"op": "Gather", "task": "AI_VECTOR_CORE", "dur": 100.0, "block": 94},
               {"op": "MatMulV2", "task": "AI_CORE", "dur": 100.0, "block": 24}]
    without = _profile(kernels)
    assert "low_block_dim" not in without.symptom_ids()
    assert ("cannot judge block dim against the core count: the chip's AI Core count is not in the profile "
            "(collect with export_type=db (NPU_INFO names the chip), or keep PROF_*/device_*/info.json.*)") in without.notes
    with_cores = _profile(kernels, core_counts={"aic": 24, "aiv": 48})
    symptom = _symptom(with_cores, "low_block_dim")
    # 40 blocks on 48 AIV leave 8 of 48 slots idle (17 %); 94 blocks take 2 waves of 48 and idle only 2 % of
    # the slots, a tail too small to report; 24 blocks fill the 24 AI Cores exactly.
    assert symptom.op_types == ["Tril"]
    assert "Tril block dim 40 on 48 AIV cores (1 wave, 17% of core slots idle)" in symptom.detail
    assert symptom.ceiling_us == pytest.approx(100.0 * 8 / 48, abs=1e-3)


def test_one_or_two_blocks_on_a_big_chip_is_low_parallelism():
    kernels = [{"op": "Cumsum", "task": "AI_VECTOR_CORE", "dur": 300.0, "block": 1},
               {"op": "Add", "task": "AI_VECTOR_CORE", "dur": 5.0, "block": 1},  # short: summed, not judged
               {"op": "MatMulV2", "task": "AI_CORE", "dur": 700.0, "block": 20}]
    profile = _profile(kernels, core_counts={"aic": 20, "aiv": 40})
    symptom = _symptom(profile, "low_parallelism")
    assert symptom.op_types == ["Cumsum"] and symptom.time_us == 300.0
    assert symptom.ceiling_us == pytest.approx(300.0 * 39 / 40, abs=1e-3)
    assert "low_block_dim" not in profile.symptom_ids()  # 20 blocks on 20 AI Cores


def test_bound_classes_per_op_type_with_thresholds():
    kernels = [
        {"op": "MatMulV2", "task": "AI_CORE", "dur": 100.0, "aic_cube": 0.85, "aic_mte2": 0.5},
        {"op": "Add", "task": "AI_VECTOR_CORE", "dur": 100.0, "aiv_vec": 0.3, "aiv_mte2": 0.75},
        {"op": "Gelu", "task": "AI_VECTOR_CORE", "dur": 100.0, "aiv_vec": 0.3, "aiv_mte2": 0.3},
        {"op": "Mul", "task": "AI_VECTOR_CORE", "dur": 10.0, "aiv_vec": 0.99, "aiv_mte2": 0.1},  # too short to judge
    ]
    profile = _profile(kernels, pipe_keys=("aic_cube", "aic_mte2", "aiv_vec", "aiv_mte2"))
    bounds = {r.op_type: r.bound for r in profile.op_types}
    assert bounds == {"MatMulV2": "cube", "Add": "mte2", "Gelu": "none", "Mul": "unknown"}
    assert _symptom(profile, "cube_bound").op_types == ["MatMulV2"]
    assert _symptom(profile, "mte2_bound").op_types == ["Add"]
    assert _symptom(profile, "no_bound").op_types == ["Gelu"]


def test_no_pipe_ratios_note_names_the_switch():
    profile = _profile([{"op": "Add", "task": "AI_VECTOR_CORE", "dur": 100.0}], format="msprof-text")
    assert ("cannot judge bound class: no pipe ratio columns (aic_mac_ratio, aiv_vec_ratio ...) in the profile "
            "(collect with msprof --aic-metrics=PipeUtilization)") in profile.notes


def test_block_imbalance_from_msopprof_kernel_detail():
    detail = {"name": "FP32CMGemvAiv", "block_time_us": {"vector": [386.8, 20.0, 20.0, 4.9]},
              "block_ids": {"vector": [0, 1, 2, 18]}}
    profile = _profile([{"op": "FP32CMGemvAiv", "task": "mix", "dur": 494.24}], kernel_detail=detail,
                       format="msopprof-device")
    symptom = _symptom(profile, "block_imbalance")
    mean = (386.8 + 20 + 20 + 4.9) / 4
    assert symptom.detail.startswith(f"vector blocks: slowest 387 µs (block 0) vs mean {U.time(mean)}")
    balanced = _profile([{"op": "K", "task": "vector", "dur": 10.0}],
                        kernel_detail={"block_time_us": {"vector": [10.0, 9.5, 9.8]}})
    assert "block_imbalance" not in balanced.symptom_ids()


def test_dynamic_shape_only_when_the_column_exists_and_nothing_is_static():
    kernels = [{"op": "Add", "task": "AI_VECTOR_CORE", "dur": 10.0, "state": "dynamic"},
               {"op": "Mul", "task": "AI_VECTOR_CORE", "dur": 10.0, "state": None}]
    assert _symptom(_profile(kernels), "dynamic_shape").op_types == ["Add"]
    mixed = kernels + [{"op": "Conv2D", "task": "AI_CORE", "dur": 10.0, "state": "static"}]
    assert "dynamic_shape" not in _profile(mixed).symptom_ids()
    no_column = _profile(kernels, present={"op_type", "task_type"})
    assert "dynamic_shape" not in no_column.symptom_ids()
    assert any(n.startswith("cannot judge dynamic shape") for n in no_column.notes)


def test_launch_bound_many_short_kernels_with_long_gaps():
    short = [{"op": "Mul", "task": "AI_VECTOR_CORE", "dur": 3.0, "wait": 10.0} for _ in range(60)]
    busy = [{"op": "Mul", "task": "AI_VECTOR_CORE", "dur": 3.0, "wait": 0.5} for _ in range(60)]
    assert _symptom(_profile(short), "launch_bound").op_types == ["Mul"]
    assert "launch_bound" not in _profile(busy).symptom_ids()
    assert "launch_bound" not in _profile(short[:40]).symptom_ids()  # too few kernels to say


def test_unfused_attention_chain():
    chain = [{"op": "BatchMatMulV2", "task": "AI_CORE", "dur": 30.0}, {"op": "Muls", "task": "AI_VECTOR_CORE", "dur": 2.0},
             {"op": "SoftmaxV2", "task": "AI_VECTOR_CORE", "dur": 10.0}, {"op": "BatchMatMulV2", "task": "AI_CORE", "dur": 30.0}]
    profile = _profile(chain + [{"op": "Add", "task": "AI_VECTOR_CORE", "dur": 28.0}])
    symptom = _symptom(profile, "unfused_attention")
    assert symptom.op_types == ["BatchMatMulV2", "SoftmaxV2"] and symptom.share == pytest.approx(70.0 / 100.0)
    softmax_alone = _profile([{"op": "SoftmaxV2", "task": "AI_VECTOR_CORE", "dur": 10.0}])
    assert "unfused_attention" not in softmax_alone.symptom_ids()


def test_unfused_rmsnorm_chain_and_fused_kernel_suppresses_it():
    chain = [{"op": op, "task": "AI_VECTOR_CORE", "dur": 5.0} for op in ("Cast", "Pow", "ReduceMean", "Adds", "Rsqrt", "Mul")]
    symptom = _symptom(_profile(chain), "unfused_norm")
    assert symptom.op_types == ["Pow", "ReduceMean", "Rsqrt"] and symptom.share == pytest.approx(15.0 / 30.0)
    assert symptom.detail.startswith("RMSNorm built from separate small kernels")
    fused = chain + [{"op": "RmsNorm", "task": "AI_VECTOR_CORE", "dur": 5.0}]
    assert "unfused_norm" not in _profile(fused).symptom_ids()


def test_fp32_compute_on_the_cube_unit():
    profile = _profile([{"op": "MatMulV2", "task": "AI_CORE", "dur": 50.0, "dtypes": "FLOAT;FLOAT"},
                        {"op": "Conv2D", "task": "AI_CORE", "dur": 50.0, "dtypes": "FLOAT16;FLOAT16"}])
    symptom = _symptom(profile, "fp32_compute")
    assert symptom.op_types == ["MatMulV2"] and symptom.share == pytest.approx(0.5)


def test_communication_exposed_from_step_trace():
    kernels = [{"op": "hcom_allReduce_", "task": "HCCL", "dur": 80.0}, {"op": "Conv2D", "task": "AI_CORE", "dur": 100.0}]
    split = StepSplit("1", computing_us=100.0, exposed_us=30.0, communication_us=80.0, overlapped_us=50.0,
                      free_us=20.0, stage_us=150.0)
    profile = _profile(kernels, extra={"steps": [split], "step_source": "step_trace_time.csv"})
    exposed = _symptom(profile, "communication_exposed")
    assert exposed.share == pytest.approx(0.2) and exposed.ceiling_us == 30.0
    assert _symptom(profile, "host_bound").share == pytest.approx(20.0 / 150.0, abs=1e-6)
    without = _profile(kernels)
    assert any(n.startswith("cannot judge exposed communication and free time: the profile has no step table")
               for n in without.notes)


def test_profile_to_json_shape():
    profile = _profile([{"op": "Add", "task": "AI_VECTOR_CORE", "dur": 25.0}, {"op": "MatMulV2", "task": "AI_CORE", "dur": 75.0}],
                       versions={"cann": "8.3.RC1"}, chip="Ascend910B3")
    document = profile_to_json(profile)
    assert list(document) == ["schema", "source", "device_time_us", "compute_time_us", "communication_time_us",
                              "op_types", "symptoms", "notes", "device", "steps", "roofline",  # roofline: issue 12
                              "families", "op_types_total"]  # family totals for every renderer: issue 15
    assert document["device"] == {"chip": "Ascend910B3"}  # no core counts or clock in this profile
    assert document["schema"] == "opprof-advisor/profile/1"
    assert document["source"] == {"path": "p", "format": "torch-npu-text", "producer": "torch_npu",
                                  "workload": "inference", "cann": "8.3.RC1", "chip": "Ascend910B3"}
    assert document["op_types"][0] == {"op_type": "MatMulV2", "family": "MatMul", "unit": "ai_core", "count": 1,
                                       "time_us": 75.0, "share": 0.75, "bound": "unknown", "busiest_pipe": None,
                                       "busiest_ratio": None, "block_dim": 40,
                                       "bound_why": "the profile has no pipe ratio columns"}
    assert all(set(s) == {"id", "op_types", "share", "detail", "time_us", "ceiling_us"} for s in document["symptoms"])
    assert document["steps"] is None  # no step table and no start times
    assert document["families"] == [
        {"family": "MatMul", "time_us": 75.0, "share": 0.75, "count": 1, "unit": "ai_core", "bound": "unknown",
         "class_shares": {"AI Core": 0.75}},
        {"family": "Elementwise", "time_us": 25.0, "share": 0.25, "count": 1, "unit": "ai_vector", "bound": "unknown",
         "class_shares": {"AI Vector": 0.25}}]
    assert document["op_types_total"] == 2
