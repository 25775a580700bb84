"""The pyarrow fast path for large CSVs gives exactly the stdlib reader's table, and defers to it on bad input."""

from __future__ import annotations

import pytest
from profile_fixtures import LEVEL2_HEADER, kernel, write_csv

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers import arrowcsv, csvfile

pytest.importorskip("pyarrow.csv")

FIELDS = ("name", "op_type", "task_type", "duration_us", "wait_us", "block_dim", "mix_block_dim", "input_shapes",
          "input_dtypes", "input_formats", "output_formats", "output_dtypes", "op_state")


def _rows(n: int) -> list[dict[str, str]]:
    rows = []
    for i in range(n):
        if i % 5 == 0:
            rows.append(kernel(f"trans_Cast_{i}", "Cast", "AI_CPU", 100.0 + i, dtypes="INT32", shapes="", state="N/A"))
            rows[-1]["Block Dim"] = "N/A"  # a missing integer: None in both readers
        elif i % 5 == 1:
            rows.append(kernel(f"hcom_allReduce__{i}", "hcom_allReduce_", "HCCL", 50.5, block=0, shapes="N/A"))
        else:
            rows.append(kernel(f"MatMul{i}", "MatMulV2", "AI_CORE", 10.25 * i, dtypes="DT_BF16;DT_BF16",
                               shapes="4096,1,2048;;2048", aic_mac_ratio=round(i % 97 / 100, 2), aic_mte2_ratio=0.5))
    return rows


@pytest.fixture
def arrow_for_all_sizes(monkeypatch):
    monkeypatch.setattr(arrowcsv, "BLOCK_BYTES", 4096)  # many streamed blocks even for a small file


def test_the_table_holds_the_cells_as_written_and_missing_ones_as_none(tmp_path, arrow_for_all_sizes):
    path = write_csv(tmp_path / "kernel_details.csv", LEVEL2_HEADER, _rows(300))
    table = csvfile.read_kernel_csv(path)
    assert len(table) == 300 and table.op_type[:3] == ["Cast", "hcom_allReduce_", "MatMulV2"]
    assert table.duration_us[2] == pytest.approx(20.5) and table.input_dtypes[2] == "DT_BF16;DT_BF16"
    assert table.op_state[0] is None and table.input_shapes[1] == "" and table.pipe["aic_cube"][0] is None
    assert table.block_dim[:2] == [None, 0]


#: A damaged cell of row 20 (line 22) -> (column, value); the columnar reader must leave each to the stdlib one.
DAMAGE = {"negative": ("Duration(us)", "-1.5"), "text": ("Duration(us)", "slow"), "huge": ("Duration(us)", "5e12"),
          "inf_ratio": ("aic_mac_ratio", "inf"), "inf_block": ("Block Dim", "1e400"),
          "nan_ratio": ("aic_mac_ratio", "-nan")}


@pytest.mark.parametrize("damage", [*DAMAGE, "short_row"])
def test_bad_large_files_fall_back_to_the_exact_stdlib_report(tmp_path, arrow_for_all_sizes, damage):
    rows = _rows(50)
    if damage in DAMAGE:
        column, value = DAMAGE[damage]
        rows[20][column] = value
    path = write_csv(tmp_path / "kernel_details.csv", LEVEL2_HEADER, rows)
    if damage == "short_row":
        lines = path.read_bytes().split(b"\r\n")
        lines[21] = lines[21].rsplit(b",", 3)[0]
        path.write_bytes(b"\r\n".join(lines))
        notes: list[str] = []
        table = csvfile.read_kernel_csv(path, notes=notes)
        assert len(table) == 49 and notes[0].endswith("(first at line 22)")
        return
    if damage == "text":  # text where a duration belongs: one error naming the line
        with pytest.raises(MalformedProfile) as caught:
            csvfile.read_kernel_csv(path)
        assert caught.value.line == 22
        return
    # a number out of range or not finite: the stdlib reader notes its line and reads the rest
    notes = []
    table = csvfile.read_kernel_csv(path, notes=notes)
    assert len(table) == (49 if column == "Duration(us)" else 50) and f"kernel_details.csv:22: {column}" in notes[-1]
