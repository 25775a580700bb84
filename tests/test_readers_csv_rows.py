"""The one CSV reader (pyarrow, every size) on what hand-edited and odd kernel CSVs do: which rows it keeps, in
which order, what it notes and what it refuses — each case one the stdlib reader it replaced got right."""

from __future__ import annotations

from pathlib import Path

import pytest

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers import arrowcsv, csvfile

HEADER = "Op Name,OP Type,Task Type,Task Duration(us),Block Dim,Input Shapes"


@pytest.fixture(params=[1 << 20, 64], ids=["one-block", "many-blocks"])
def blocks(request, monkeypatch):
    """Each case read in one block and in blocks of a few rows (rows straddling blocks)."""
    monkeypatch.setattr(arrowcsv, "BLOCK_BYTES", request.param)
    monkeypatch.setattr(arrowcsv, "GROUP_BYTES", request.param * 2)


def _read(tmp_path: Path, text: str) -> tuple[list, list[str]]:
    path = tmp_path / "op_summary.csv"
    path.write_text(text, encoding="utf-8")
    notes: list = []
    table = csvfile.read_kernel_csv(path, notes=notes)
    return list(zip(table.name, table.duration_us, table.input_shapes)), [str(n) for n in notes]


def test_some_lines_with_a_trailing_comma_keep_file_order_and_skip_only_the_row_with_an_extra_value(tmp_path, blocks):
    # the first data line ends with a comma, two do not, one carries a value in the extra field
    rows, notes = _read(tmp_path, f'{HEADER}\nk1,Add,AI_CORE,10,8,"1",\nk2,Mul,AI_CORE,20,8,"2"\n'
                                  f'k3,Sub,AI_CORE,30,8,"3",x\nk4,Div,AI_CORE,40,8,"4",\nk5,Exp,AI_CORE,50,8,"5"\n')
    assert rows == [("k1", 10.0, "1"), ("k2", 20.0, "2"), ("k4", 40.0, "4"), ("k5", 50.0, "5")]
    assert notes == [f"skipped 1 row(s) of {tmp_path / 'op_summary.csv'} whose field count differs from the header "
                     "(first at line 4)"]


def test_every_line_with_a_trailing_comma_skips_and_notes_a_row_whose_extra_field_holds_a_value(tmp_path, blocks):
    # msOpProf ends every line with a comma; a row with something after it does not fit the header
    rows, notes = _read(tmp_path, f'{HEADER},\nk1,Add,AI_CORE,10,8,"1",\nk2,Mul,AI_CORE,20,8,"2",x\n'
                                  f'k3,Sub,AI_CORE,30,8,"3",\n')
    assert rows == [("k1", 10.0, "1"), ("k3", 30.0, "3")]
    assert len(notes) == 1 and notes[0].endswith("(first at line 3)")


def test_a_header_without_rows_or_final_newline_is_said_to_be_header_only(tmp_path):
    for name, text in (("bare", HEADER), ("newline", HEADER + "\n"), ("blank-lines", HEADER + "\n\n\n")):
        path = tmp_path / f"{name}.csv"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(MalformedProfile) as caught:
            csvfile.read_kernel_csv(path)
        assert (caught.value.message, caught.value.line) == ("no data rows (header only)", 1), name


def test_a_header_cell_holding_a_quoted_newline_is_one_record(tmp_path, blocks):
    rows, notes = _read(tmp_path, 'Op Name,"OP\nType",Task Type,Task Duration(us),Block Dim,Input Shapes\n'
                                  'k1,Add,AI_CORE,10,8,"1"\nk2,Mul,AI_CORE,20,8,"2"\n')
    assert rows == [("k1", 10.0, "1"), ("k2", 20.0, "2")] and notes == []


def test_a_quoted_newline_in_a_row_beside_trailing_commas_keeps_its_line_numbers(tmp_path, blocks):
    rows, notes = _read(tmp_path, f'{HEADER}\nk1,Add,AI_CORE,10,8,"1\nz"\nk2,Mul,AI_CORE,20,8,"2",\n'
                                  f'k3,Sub,AI_CORE,30,8,"3",x\nk4,Div,AI_CORE,40,8,"4"\n')
    assert rows == [("k1", 10.0, "1\nz"), ("k2", 20.0, "2"), ("k4", 40.0, "4")]
    assert notes[0].endswith("(first at line 5)")  # the quoted newline makes k3 start on line 5


def test_a_row_longer_than_the_line_limit_refuses_the_file_naming_its_line(tmp_path):
    # the stdlib reader that names lines cannot read it: reading around it would misplace every later note
    line = b"k2,Add,AI_CORE,30,8," + b"y" * (csvfile.MAX_LINE_CHARS + 10) + b"\n"
    path = tmp_path / "op_summary.csv"
    path.write_bytes(f'{HEADER}\nk0,Add,AI_CORE,10,8,"1"\nk1,Add,AI_CORE,20,8,"2",\n'.encode() + line
                     + b'k3,Add,AI_CORE,40,8,"4",\n')
    with pytest.raises(MalformedProfile) as caught:
        csvfile.read_kernel_csv(path)
    assert (caught.value.message, caught.value.line) == (
        "a line is longer than 16,777,216 characters; not a profiler CSV", 4)


def test_the_line_limit_counts_characters_not_bytes(tmp_path):
    # 9 M two-byte characters are 18 MB on a line the stdlib reader reads whole: the file is read
    path = tmp_path / "op_summary.csv"
    path.write_bytes(b"Op Name,Task Duration(us)\n" + "é".encode() * 9_000_000 + b",1\nk1,2\n")
    table = csvfile.read_kernel_csv(path)
    assert len(table.name[0]) == 9_000_000 and table.duration_us == [1.0, 2.0]


def test_a_header_without_rows_missing_a_required_column_says_which(tmp_path):
    path = tmp_path / "op_summary.csv"
    path.write_bytes(b"foo,bar")
    with pytest.raises(MalformedProfile) as caught:
        csvfile.read_kernel_csv(path)
    assert caught.value.message == "required column 'Op Name / Name' is missing"
