"""The header alias table, the value parsers and the CSV reader on generated files."""

from __future__ import annotations

import csv

import pytest
from profile_fixtures import LEVEL2_HEADER, kernel, write_csv

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers import columns
from opprof_advisor.readers.csvfile import read_kernel_csv


def test_header_aliases_map_every_spelling_onto_one_field():
    old = columns.map_header(["Op Name", "OP Type", "Task Type", "Task Start Time", "Task Duration(us)", "Block Dim",
                              "Mix Block Dim", "mac_ratio", "vec_ratio", "mte2_ratio"])
    new = columns.map_header(["Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Block Num",
                              "Mix Block Num", "aic_mac_ratio", "aiv_vec_ratio", "aic_cube_ratio"])
    assert old == {"name": 0, "op_type": 1, "task_type": 2, "start_us": 3, "duration_us": 4, "block_dim": 5,
                   "mix_block_dim": 6, "pipe:cube": 7, "pipe:vec": 8, "pipe:mte2": 9}
    # aic_mac_ratio (msprof) and aic_cube_ratio (msOpProf) are one pipe: the first column wins.
    assert new == {"name": 0, "op_type": 1, "task_type": 2, "start_us": 3, "duration_us": 4, "block_dim": 5,
                   "mix_block_dim": 6, "pipe:aic_cube": 7, "pipe:aiv_vec": 8}


def test_pmu_columns_that_are_not_pipe_ratios_are_not_mapped():
    mapping = columns.map_header(["aic_mac_fp16_ratio", "aiv_vec_fp32_ratio", "aic_icache_miss_rate", "cube_utilization(%)"])
    assert mapping == {}


@pytest.mark.parametrize(("text", "value"), [
    ("1736408883704643.212\t", 1736408883704643.212), ('"1736413971558972.912\t"', 1736413971558972.912),
    ("165.750000", 165.75), ("N/A", None), ("NA", None), ("", None), ("  ", None), ("abc", None),
])
def test_parse_float_tolerates_profiler_spellings(text, value):
    assert columns.parse_float(text) == value


def test_clean_text_strips_the_literal_quotes_of_shapes():
    assert columns.clean_text('"32,3,224,224"') == "32,3,224,224"
    assert columns.clean_text('"4096,1,2048;;;;2048,2048;;"') == "4096,1,2048;;;;2048,2048;;"
    assert columns.clean_text("N/A") == ""
    assert columns.parse_int("24.0") == 24 and columns.parse_int("NA") is None


def test_reads_crlf_trailing_tab_doubly_quoted_shapes_and_embedded_newlines(tmp_path):
    rows = [kernel("trans_TransData_0", "TransData", "AI_VECTOR_CORE", 53.741, shapes="32,3,224,224", aiv_vec_ratio=0.186),
            kernel("Conv2D1", "Conv2D", "AI_CORE", 313.886, shapes="32,1,\n224", aic_mac_ratio=0.519)]
    path = write_csv(tmp_path / "kernel_details.csv", LEVEL2_HEADER, rows)
    assert b'"""32,3,224,224"""' in path.read_bytes() and b"\r\n" in path.read_bytes()
    table = read_kernel_csv(path)
    assert table.duration_us == [53.741, 313.886]
    assert table.input_shapes == ["32,3,224,224", "32,1,\n224"]
    assert table.pipe["aiv_vec"] == [0.186, None] and table.pipe["aic_cube"] == [None, 0.519]
    assert table.block_dim == [40, 40] and table.op_state == ["dynamic", "dynamic"]
    assert {"op_state", "pipe", "block_dim", "wait_us"} <= table.present


def test_msopprof_trailing_commas_and_na(tmp_path):
    path = tmp_path / "OpBasicInfo.csv"
    path.write_text("Op Name,Op Type,Task Duration(us),Block Dim,Mix Block Dim,Device Id,Pid,Current Freq,Rated Freq,\n"
                    "clamped_swiglu_kernel,vector,2.779944,2,NA,4,18685,1800,1800,\n")
    table = read_kernel_csv(path)
    assert table.name == ["clamped_swiglu_kernel"] and table.duration_us == [2.779944]
    assert table.block_dim == [2] and table.mix_block_dim == [None]


def test_utf8_bom_is_read(tmp_path):
    path = write_csv(tmp_path / "kernel_details.csv", LEVEL2_HEADER, [kernel("Add", "Add", "AI_VECTOR_CORE", 3.5)],
                     encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert read_kernel_csv(path).name == ["Add"]


def test_gbk_text_is_decoded(tmp_path):
    # Decision: UTF-8 first, then GBK (spreadsheet tools on Chinese-locale Windows re-save CSVs as GBK).
    path = write_csv(tmp_path / "kernel_details.csv", LEVEL2_HEADER,
                     [kernel("自定义算子_1", "Add", "AI_VECTOR_CORE", 3.5)], encoding="gbk")
    with pytest.raises(UnicodeDecodeError):
        path.read_bytes().decode("utf-8")
    assert read_kernel_csv(path).name == ["自定义算子_1"]


def test_undecodable_bytes_name_the_file(tmp_path):
    path = tmp_path / "kernel_details.csv"
    path.write_bytes(b"Name,Duration(us)\n\xff\xff\xff,1.0\n")
    with pytest.raises(MalformedProfile) as caught:
        read_kernel_csv(path)
    assert str(caught.value) == f"{path}:2: not UTF-8 or GBK text (undecodable byte 0xff) — re-save the file as UTF-8"


def test_rows_with_a_wrong_field_count_are_skipped_and_reported(tmp_path):
    path = write_csv(tmp_path / "kernel_details.csv", LEVEL2_HEADER,
                     [kernel("A", "Add", "AI_CORE", 1.0), kernel("B", "Add", "AI_CORE", 2.0), kernel("C", "Add", "AI_CORE", 4.0)])
    lines = path.read_bytes().decode().split("\r\n")
    broken = lines[2].split(",")
    del broken[9]  # a hand-edited row missing its duration, as in msinsight's server-ut sample
    lines[2] = ",".join(broken)
    path.write_bytes("\r\n".join(lines).encode())
    notes: list[str] = []
    table = read_kernel_csv(path, notes=notes)
    assert table.name == ["A", "C"] and sum(table.duration_us) == 5.0
    assert notes == [f"skipped 1 row(s) of {path} whose field count differs from the header (first at line 3)"]


def test_large_file_is_read_in_chunks_with_progress(tmp_path):
    rows = [kernel(f"k{i}", "Mul", "AI_VECTOR_CORE", float(i % 7 + 1)) for i in range(20000)]
    path = write_csv(tmp_path / "kernel_details.csv", LEVEL2_HEADER, rows)
    seen: list[tuple[int, int]] = []
    table = read_kernel_csv(path, progress=lambda done, total: seen.append((done, total)))
    with path.open(newline="") as handle:
        expected = sum(float(r["Duration(us)"]) for r in csv.DictReader(handle))
    assert len(table) == 20000 and sum(table.duration_us) == pytest.approx(expected)
    assert seen[-1] == (path.stat().st_size, path.stat().st_size) and len(seen) >= 3
    # repeated values are stored once (keeps 400k-row files small), and read back as one object
    assert table.array("op_type").dictionary.to_pylist() == ["Mul"]
    ops = table.op_type
    assert ops[0] is ops[-1]


def test_missing_duration_column_is_an_error_naming_the_column(tmp_path):
    path = tmp_path / "op_summary.csv"
    path.write_text("Op Name,OP Type,Task Type\nAdd,Add,AI_CORE\n")
    with pytest.raises(MalformedProfile) as caught:
        read_kernel_csv(path)
    assert caught.value.line == 1 and "'Task Duration(us) / Duration(us)'" in caught.value.message
