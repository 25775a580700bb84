"""msprof / torch_npu SQLite readers: real msinsight DBs, the block-dim column history, bad files."""

from __future__ import annotations

import csv
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from opprof_advisor import testing
from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers.msprof_db import MsprofDbReader, read_msprof_db

TORCH_DB_DIR = "msinsight-torch-npu/db/level1/rank0_ascend_pt"
TORCH_DB = TORCH_DB_DIR + "/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
MSPROF_DB = "msinsight-torch-npu/server-ut/full_db/msprof_0.db"


def query(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def totals_by(raw, field: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for key, dur in zip(getattr(raw.kernels, field), raw.kernels.duration_us):
        out[key] += dur
    return dict(out)


# ------------------------------------------------------------------------------------------------
# Real files
# ------------------------------------------------------------------------------------------------


def test_torch_npu_db_totals_match_sql(real_profiles):
    db = real_profiles / TORCH_DB
    raw = read_msprof_db(real_profiles / TORCH_DB_DIR)
    compute_ns = query(db, "SELECT SUM(t.endNs - t.startNs) FROM TASK t "
                           "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId")[0][0]
    comm_ns = query(db, "SELECT SUM(endNs - startNs) FROM COMMUNICATION_OP")[0][0]
    per_unit = dict(query(db, "SELECT s.value, SUM(t.endNs - t.startNs) / 1000.0 FROM TASK t "
                              "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
                              "JOIN STRING_IDS s ON s.id = c.taskType GROUP BY s.value"))
    units = totals_by(raw, "task_type")
    assert raw.format == "torch-npu-db" and raw.chip == "Ascend910B"
    assert units.pop("COMMUNICATION") == pytest.approx(comm_ns / 1000)
    assert units == pytest.approx(per_unit)
    assert sum(raw.kernels.duration_us) == pytest.approx((compute_ns + comm_ns) / 1000)
    assert len(raw.kernels) == 187 + 4
    assert raw.versions["profiler_level"] == "Level1"
    assert raw.versions["compute_task_info_block_column"] == "blockDim"
    assert "op_state" not in raw.kernels.present  # the 2025 schema has no opState column


def test_torch_npu_db_rows_carry_strings_blocks_and_pmu(real_profiles):
    db = real_profiles / TORCH_DB
    first = query(db, "SELECT n.value, o.value, s.value, c.blockDim, c.globalTaskId FROM COMPUTE_TASK_INFO c "
                      "JOIN TASK t ON t.globalTaskId = c.globalTaskId JOIN STRING_IDS n ON n.id = c.name "
                      "JOIN STRING_IDS o ON o.id = c.opType JOIN STRING_IDS s ON s.id = c.inputShapes "
                      "ORDER BY t.startNs LIMIT 1")[0]
    mte2 = query(db, "SELECT p.value FROM TASK_PMU_INFO p JOIN STRING_IDS s ON s.id = p.name "
                     f"WHERE s.value = 'aiv_mte2_ratio' AND p.globalTaskId = {first[4]}")[0][0]
    raw = read_msprof_db(db)
    k = raw.kernels
    assert (k.name[0], k.op_type[0], k.block_dim[0]) == first[:2] + (first[3],)
    assert k.input_shapes[0] == first[2].strip('"')  # stored with literal quotes
    assert k.pipe["aiv_mte2"][0] == pytest.approx(mte2)
    assert k.wait_us[0] == 0.0
    assert "aiv_cube" not in k.pipe  # aiv_mac_ratio is not a pipe of the vector core


def test_msprof_db_with_migrated_schema(real_profiles):
    db = real_profiles / MSPROF_DB
    compute = query(db, "SELECT SUM(t.endNs - t.startNs) / 1000.0, COUNT(*) FROM TASK t "
                        "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId")[0]
    span = query(db, "SELECT (MAX(t.endNs) - MIN(t.startNs)) / 1000.0 FROM COMMUNICATION_TASK_INFO c "
                     "JOIN TASK t ON t.globalTaskId = c.globalTaskId")[0][0]
    raw = read_msprof_db(db)
    units = totals_by(raw, "task_type")
    assert raw.format == "msprof-db"
    assert units["AI_VECTOR_CORE"] == pytest.approx(compute[0])
    assert raw.kernels.task_type.count("AI_VECTOR_CORE") == compute[1]
    assert units["COMMUNICATION"] == pytest.approx(span)  # COMMUNICATION_OP is empty here
    assert any(n.startswith("communication ops were rebuilt") for n in raw.notes)
    assert any(n.startswith("cannot judge pipe-bound class") for n in raw.notes)
    assert raw.kernels.block_dim[:3] == [r[0] for r in query(
        db, "SELECT c.blockDim FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId "
            "ORDER BY t.startNs LIMIT 3")]


def test_detection_of_db_folders(real_profiles):
    reader = MsprofDbReader()
    assert reader.detect(real_profiles / TORCH_DB_DIR)
    assert reader.detect(real_profiles / "msinsight-torch-npu/server-ut/full_db")
    # analysis.db holds no kernels; a text-only rank is not a DB profile
    assert not reader.detect(real_profiles / "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt")
    assert not reader.detect(real_profiles / "msinsight-torch-npu/text/level1/rank0_ascend_pt")


# ------------------------------------------------------------------------------------------------
# Synthetic: the column history
# ------------------------------------------------------------------------------------------------

WORKLOAD = [
    dict(name="Conv2D_1", op_type="Conv2D", task_type="AI_CORE", duration_us=80.0, count=6, block_dim=20,
         jitter=0.3, pipe={"aic_cube": 0.7}),
    dict(name="aclnnMul_MulAiCore_Mul", op_type="Mul", task_type="AI_VECTOR_CORE", duration_us=3.5, count=12,
         block_dim=40, op_state="dynamic"),
    dict(name="NonMaxSuppressionV3", task_type="AI_CPU", duration_us=400.0, count=1, block_dim=1),
    dict(name="hcom_allReduce_", task_type="HCCL", duration_us=150.0, count=2),
]


@pytest.mark.parametrize("schema,block", [("2023", "block_dim"), ("2025", "blockDim"), ("2026", "blockNum")])
def test_schema_history_round_trip(tmp_path, schema, block):
    db = testing.write_msprof_db(tmp_path, WORKLOAD, schema=schema)
    raw = read_msprof_db(db.parent)
    totals = totals_by(raw, "op_type")
    assert totals == pytest.approx(testing.spec_totals(WORKLOAD))
    assert raw.versions["compute_task_info_block_column"] == block
    assert ("op_state" in raw.kernels.present) == (schema == "2026")
    assert raw.kernels.block_dim[raw.kernels.op_type.index("Conv2D")] == 20
    assert raw.kernels.pipe["aic_cube"][raw.kernels.op_type.index("Conv2D")] == pytest.approx(0.7, rel=0.04)
    if schema == "2026":
        assert raw.kernels.op_state[raw.kernels.op_type.index("Mul")] == "dynamic"
    # stored waitNs (2025) or the gap to the previous task (2023, 2026): the same timeline either way
    launches = testing.expand_launches(WORKLOAD)
    assert raw.kernels.wait_us == pytest.approx([l.wait_ns / 1000 for l in launches])
    assert raw.kernels.name[:3] == [l.spec.name for l in launches[:3]]


def test_torch_db_and_text_give_the_same_totals(tmp_path):
    text_root = testing.write_torch_npu_text(tmp_path / "text", WORKLOAD, seed=7)
    db = testing.write_torch_npu_db(tmp_path / "db", WORKLOAD, seed=7)
    with (text_root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").open(newline="") as fh:
        text: dict[str, float] = defaultdict(float)
        for row in csv.DictReader(fh):
            text[row["Type"]] += float(row["Duration(us)"])
    raw = read_msprof_db(db.parents[1])
    assert raw.format == "torch-npu-db"
    assert totals_by(raw, "op_type") == pytest.approx(dict(text), abs=1e-6)
    waits = [w for w, t in zip(raw.kernels.wait_us, raw.kernels.task_type) if t != "COMMUNICATION"]
    assert waits[0] == 0.0 and all(w >= 0 for w in waits)


# ------------------------------------------------------------------------------------------------
# Bad files
# ------------------------------------------------------------------------------------------------


def test_not_sqlite(tmp_path):
    db = tmp_path / "msprof_20250101000000.db"
    db.write_text("Device_id,Op Name\n0,x\n")
    assert MsprofDbReader().detect(db)  # claimed by name, so the user hears what is wrong with it
    with pytest.raises(MalformedProfile) as err:
        read_msprof_db(db)
    assert str(err.value).startswith(f"{db}: not an SQLite database")


def test_zero_byte_db(tmp_path):
    db = tmp_path / "ascend_pytorch_profiler_0.db"
    db.write_bytes(b"")
    with pytest.raises(MalformedProfile) as err:
        read_msprof_db(db)
    assert err.value.path == str(db) and "empty" in err.value.message


def test_sqlite_without_the_tables(tmp_path):
    db = tmp_path / "msprof_1.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE TASK (startNs INTEGER, endNs INTEGER)")
    con.execute("CREATE TABLE StepTraceTime (x INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(MalformedProfile) as err:
        read_msprof_db(db)
    assert err.value.path == str(db)
    assert "COMPUTE_TASK_INFO, STRING_IDS missing" in err.value.message


def test_truncated_sqlite(tmp_path):
    db = testing.write_msprof_db(tmp_path / "msprof_2.db", WORKLOAD)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    with pytest.raises(MalformedProfile) as err:
        read_msprof_db(db)
    assert err.value.path == str(db)


# ------------------------------------------------------------------------------------------------
# Through the registry
# ------------------------------------------------------------------------------------------------


def test_registry_reads_db_folders(real_profiles):
    from opprof_advisor.readers import detect_format
    from opprof_advisor.profiles import read_profile

    db_dir = real_profiles / TORCH_DB_DIR
    comm_ns = query(real_profiles / TORCH_DB, "SELECT SUM(endNs - startNs) FROM COMMUNICATION_OP")[0][0]
    assert detect_format(db_dir).name == "msprof-db"
    profile = read_profile(db_dir)
    assert profile.format == "torch-npu-db"
    assert profile.communication_time_us == pytest.approx(comm_ns / 1000)


def test_example_text_and_db_exports_agree_through_read_profile():
    from opprof_advisor.profiles import read_profile

    examples = Path(__file__).resolve().parent.parent / "data" / "examples"
    if not (examples / "yolov8_torch_npu_db").is_dir():
        pytest.skip("data/examples not generated")
    text = read_profile(examples / "yolov8_torch_npu")
    db = read_profile(examples / "yolov8_torch_npu_db")
    assert (text.format, db.format) == ("torch-npu-text", "torch-npu-db")
    per_type = lambda p: {(r.op_type, r.unit): (r.count, round(r.time_us, 3)) for r in p.op_types}  # noqa: E731
    assert per_type(db) == per_type(text)
    assert db.device_time_us == pytest.approx(text.device_time_us)
    assert {"aicpu_fallback", "nms_cpu"} <= db.symptom_ids()
