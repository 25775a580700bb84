"""Synthetic profile writers: exact real headers, deterministic output, totals equal to the specs."""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from opprof_advisor import testing

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "data" / "examples"

WORKLOAD = [
    dict(name="Conv2D_1", op_type="Conv2D", task_type="AI_CORE", duration_us=120.0, count=8, block_dim=20,
         jitter=0.25, input_shapes="1,3,640,640;16,3,3,3", input_formats="NC1HWC0;FRACTAL_Z"),
    dict(name="aclnnSilu_SiluAiCore_Silu", op_type="Silu", task_type="AI_VECTOR_CORE", duration_us=6.0, count=8,
         block_dim=40),
    dict(name="NonMaxSuppressionV3", task_type="AI_CPU", duration_us=900.0, block_dim=1),
    dict(name="hcom_allReduce_", task_type="HCCL", duration_us=200.0, count=2),
]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def first_line(path: Path) -> str:
    with path.open(newline="") as fh:
        return fh.readline().rstrip("\r\n")


# ------------------------------------------------------------------------------------------------
# Launch expansion
# ------------------------------------------------------------------------------------------------


def test_launches_are_deterministic_and_keep_totals():
    a = testing.expand_launches(WORKLOAD, seed=3)
    b = testing.expand_launches(WORKLOAD, seed=3)
    c = testing.expand_launches(WORKLOAD, seed=4)
    assert [(l.start_ns, l.dur_ns) for l in a] == [(l.start_ns, l.dur_ns) for l in b]
    assert [l.dur_ns for l in a] != [l.dur_ns for l in c]  # jitter depends on the seed
    per_type: dict[str, int] = defaultdict(int)
    for launch in a:
        per_type[launch.spec.op_type] += launch.dur_ns
    assert per_type == {"Conv2D": 960_000, "Silu": 48_000, "NonMaxSuppressionV3": 900_000, "hcom_allReduce_": 400_000}
    assert len({l.dur_ns for l in a if l.spec.op_type == "Conv2D"}) > 1
    assert a[0].wait_ns == 0
    assert all(l2.start_ns >= l1.start_ns + l1.dur_ns for l1, l2 in zip(a, a[1:]))


def test_dict_specs_reject_unknown_keys():
    with pytest.raises(ValueError, match="durationus"):
        testing.as_specs([{"name": "x", "durationus": 3}])


# ------------------------------------------------------------------------------------------------
# Headers equal to the real files
# ------------------------------------------------------------------------------------------------

REAL_TEXT = "msinsight-torch-npu/text/{level}/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
REAL_ST = "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt/ASCEND_PROFILER_OUTPUT/{name}"


@pytest.mark.parametrize("level,variant,real", [
    ("Level0", "2025-01", REAL_TEXT.format(level="level0")),
    ("Level1", "2025-01", REAL_TEXT.format(level="level1")),
    ("Level2", "2025-11", REAL_ST.format(name="kernel_details.csv")),
])
def test_kernel_details_header_is_the_real_one(tmp_path, real_profiles, level, variant, real):
    root = testing.write_torch_npu_text(tmp_path, WORKLOAD, level=level, variant=variant)
    ours = root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    assert first_line(ours) == first_line(real_profiles / real)
    assert (b"\r\n" in ours.read_bytes()) == (variant == "2025-01")  # Python-written files use CRLF


def test_other_torch_npu_headers_are_the_real_ones(tmp_path, real_profiles):
    root = testing.write_torch_npu_text(tmp_path, WORKLOAD, variant="2025-11")
    for name in ("op_statistic.csv", "step_trace_time.csv"):
        assert first_line(root / "ASCEND_PROFILER_OUTPUT" / name) == first_line(real_profiles / REAL_ST.format(name=name))
    info = json.loads((root / "profiler_info_0.json").read_text())
    assert info["config"]["experimental_config"]["_profiler_level"] == "Level2"
    assert info["cann_version"] == "8.3.RC1" and info["rank_id"] == "0"


def test_op_summary_2026_header_is_the_real_one(tmp_path, real_profiles):
    root = testing.write_op_summary(tmp_path, WORKLOAD, block_header="Block Num")
    ours = next((root / "mindstudio_profiler_output").glob("op_summary_*.csv"))
    real = real_profiles / "tilelang-ascend/custom/sigmoid/Sigmoid/trace_data/op_summary.csv"
    assert first_line(ours) == first_line(real)


def test_msopprof_headers_are_the_real_ones(tmp_path, real_profiles):
    catlass = real_profiles / "catlass-msprof-op/device/02_fp32_cm_gemv_aiv/prof/OPPROF_20250304172135_UZXJVIHHTTNZFAJD"
    tilelang = real_profiles / ("tilelang-ascend/custom/sigmoid/perf_tuning/msprof_output_iter1_after/"
                                "OPPROF_20260803154619_ETRNHYWCPRERQANJ")
    spec = dict(name="k", task_type="mix", block_dim=4, mix_block_dim=8)
    old = testing.write_msopprof_device(tmp_path / "old", spec, generation="2025-03")
    new = testing.write_msopprof_device(tmp_path / "new", spec, generation="2026")
    for csv_file in catlass.glob("*.csv"):
        assert first_line(old / csv_file.name) == first_line(csv_file), csv_file.name
    assert first_line(new / "PipeUtilization.csv") == first_line(tilelang / "PipeUtilization.csv")
    keys = [line.split("=")[0] for line in (tilelang / "dump/op_basic_info.txt").read_text().splitlines()]
    assert [line.split("=")[0] for line in (new / "dump/op_basic_info.txt").read_text().splitlines()] == keys


def test_db_schema_columns_are_the_real_ones(tmp_path, real_profiles):
    real = real_profiles / "msinsight-torch-npu/db/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
    ours = testing.write_torch_npu_db(tmp_path, WORKLOAD, schema="2025")

    def columns(db: Path, table: str) -> list[str]:
        con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
        try:
            return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        finally:
            con.close()

    for table in ("COMPUTE_TASK_INFO", "TASK", "TASK_PMU_INFO", "COMMUNICATION_OP", "STRING_IDS", "NPU_INFO",
                  "PYTORCH_API", "STEP_TIME"):
        assert columns(ours, table) == columns(real, table), table


# ------------------------------------------------------------------------------------------------
# Content
# ------------------------------------------------------------------------------------------------


def test_kernel_details_values_follow_the_quirks(tmp_path):
    root = testing.write_torch_npu_text(tmp_path, WORKLOAD, variant="2025-11")
    path = root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    text = path.read_text()
    assert '"""1,3,640,640;16,3,3,3"""' in text  # shapes doubly quoted
    _, rows = read_csv(path)
    assert all(r["Start Time(us)"].endswith("\t") for r in rows)
    comm = [r for r in rows if r["Accelerator Core"] == "COMMUNICATION"]
    assert [r["Name"] for r in comm] == ["hcom_allReduce__0_1", "hcom_allReduce__1_1"]
    assert comm[0]["Task ID"] == "N/A" and comm[0]["aic_mac_ratio"] == "N/A"
    totals: dict[str, float] = defaultdict(float)
    for r in rows:
        totals[r["Type"]] += float(r["Duration(us)"])
    assert totals == pytest.approx(testing.spec_totals(WORKLOAD), abs=1e-6)


def test_level0_hides_units(tmp_path):
    root = testing.write_torch_npu_text(tmp_path, WORKLOAD, level="Level0", variant="2025-01")
    _, rows = read_csv(root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv")
    assert {r["Accelerator Core"] for r in rows} == {"N/A", "HCCL"}
    assert {r["Block Dim"] for r in rows} == {"0"}
    assert not (root / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").exists()


def test_op_statistic_excludes_communication(tmp_path):
    root = testing.write_torch_npu_text(tmp_path, WORKLOAD)
    _, rows = read_csv(root / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv")
    assert [r["OP Type"] for r in rows] == ["Conv2D", "NonMaxSuppressionV3", "Silu"]  # by total, descending
    assert sum(float(r["Ratio(%)"]) for r in rows) == pytest.approx(100, abs=0.01)
    assert rows[0]["Count"] == "8" and float(rows[0]["Total Time(us)"]) == pytest.approx(960.0)


def test_op_summary_slices_and_device_info(tmp_path):
    root = testing.write_op_summary(tmp_path, WORKLOAD, slices=3, chip="Ascend910B3")
    slices = sorted((root / "mindstudio_profiler_output").glob("op_summary_slice_*_*.csv"))
    assert [p.name.split("_")[3] for p in slices] == ["0", "1", "2"]
    rows = [r for p in slices for r in read_csv(p)[1]]
    assert len(rows) == 8 + 8 + 1 + 2
    assert sum(float(r["Task Duration(us)"]) for r in rows) == pytest.approx(sum(testing.spec_totals(WORKLOAD).values()))
    info = json.loads((root / "device_0" / "info.json.0").read_text())["DeviceInfo"][0]
    assert (info["ai_core_num"], info["aiv_num"]) == (20, 40)
    assert root.name.startswith("PROF_000001_")


def test_cann7_layout(tmp_path):
    root = testing.write_op_summary(tmp_path, WORKLOAD, layout="cann7")
    assert len(list((root / "device_0" / "summary").glob("op_summary_0_1_*.csv"))) == 1


def test_producer_dir_rule(tmp_path):
    named = tmp_path / "worker_1_20250110_ascend_pt"
    assert testing.write_torch_npu_text(named, WORKLOAD) == named
    made = testing.write_torch_npu_text(tmp_path / "out", WORKLOAD)
    assert made.parent == tmp_path / "out" and made.name.endswith("_ascend_pt")
    opprof = testing.write_msopprof_device(tmp_path, WORKLOAD[0])
    assert opprof.name.startswith("OPPROF_") and len(opprof.name) == len("OPPROF_20250304172135_UZXJVIHHTTNZFAJD")


def test_writers_are_deterministic(tmp_path):
    a = testing.write_op_summary(tmp_path / "a", WORKLOAD, seed=5)
    b = testing.write_op_summary(tmp_path / "b", WORKLOAD, seed=5)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files_a)


# ------------------------------------------------------------------------------------------------
# The committed examples
# ------------------------------------------------------------------------------------------------


def test_examples_are_small_and_reproducible(tmp_path):
    if not EXAMPLES.is_dir():
        pytest.skip("data/examples not generated")
    subprocess.run([sys.executable, str(ROOT / "data" / "make_examples.py"), str(tmp_path)], check=True,
                   cwd=ROOT, capture_output=True)
    committed = sorted(p.relative_to(EXAMPLES) for p in EXAMPLES.rglob("*") if p.is_file() and p.name != "README.md")
    regenerated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert committed == regenerated
    for rel in committed:
        if rel.suffix != ".db":  # SQLite pages may differ byte-wise; their rows are checked in test_readers_db
            assert (EXAMPLES / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel
    for example in EXAMPLES.iterdir():
        if example.is_dir():
            size = sum(p.stat().st_size for p in example.rglob("*") if p.is_file())
            assert size < 200 * 1024, example.name


def test_write_all_formats_reads_back_equal(tmp_path):
    from opprof_advisor.readers import read_raw

    paths = testing.write_all_formats(tmp_path, WORKLOAD, seed=11, chip="Ascend910B3")
    assert sorted(paths) == ["msprof-db", "msprof-text", "torch-npu-db", "torch-npu-text"]
    for fmt, path in paths.items():
        raw = read_raw(path)
        assert raw.format == fmt
        totals: dict[str, float] = defaultdict(float)
        for op_type, dur in zip(raw.kernels.op_type, raw.kernels.duration_us):
            totals[op_type] += dur
        assert totals == pytest.approx(testing.spec_totals(WORKLOAD), abs=1e-6), fmt
