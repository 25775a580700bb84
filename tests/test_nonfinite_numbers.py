"""Non-finite and huge numbers in any input (issue 30): every number from outside is checked finite and in its
plausible range where it is read; a bad one is a note naming file:line (a DB: the row) and column while the rest of
the profile is still judged, and the JSON written is strict (no ``NaN`` / ``Infinity`` token, no OverflowError).

One test per boundary where numbers are read. Every run goes through the CLI with the JSON writer's last-resort
fallback (a non-finite float written as null) turned into a failure, so a document holding a non-finite number fails
here even though the user would get valid JSON.
"""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from hostile import Snapshot, advisor_here, assert_one_error_line, copy_example
from opprof_advisor.core import terminal
from opprof_advisor.core.terminal import dumps_json
from opprof_advisor.readers import columns, csvfile

EXPECTED_US = 4869.1  # device time of data/examples/yolov8_torch_npu
HARDWARE = '{"ph":"M","name":"process_name","pid":1,"args":{"name":"Ascend Hardware"}}'
WRITER_FALLBACK = terminal._finite
MISSING = "such value(s) in that column read as missing"
LEFT_OUT = "row(s) with such a value left out, the rest judged"


@pytest.fixture(autouse=True)
def no_leak(monkeypatch):
    """A document that still holds a non-finite number after the readers is a failure, not a silent null."""
    def leak(value):
        raise AssertionError("a document holds a non-finite number")

    monkeypatch.setattr(terminal, "_finite", leak)


def strict(text: str):
    """``text`` parsed as strict JSON: a NaN / Infinity token fails."""
    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def run_json(*args) -> dict:
    done = advisor_here(*args, "--format", "json")
    assert done.code == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    return strict(done.stdout)


def rewrite_csv(path: Path, line: int, column: str, value: str) -> None:
    """Set ``column`` of the row on ``line`` (1 = the header) to ``value``."""
    rows = list(csv.reader(path.open(encoding="utf-8-sig", newline="")))
    rows[line - 1][rows[0].index(column)] = value
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


def cell(path: Path, line: int, column: str) -> str:
    rows = list(csv.reader(path.open(encoding="utf-8-sig", newline="")))
    return rows[line - 1][rows[0].index(column)]


def note_of(document: dict, where: object) -> str:
    [note] = [n for n in document["notes"] if n.startswith(str(where))]
    return note


@pytest.fixture
def torch_run(tmp_path):
    return copy_example("yolov8_torch_npu", tmp_path / "run_ascend_pt")


@pytest.fixture
def kernels(torch_run):
    return torch_run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"


# ---------------------------------------------------------------------------------------------
# The writer and the one helper every reader checks a number with
# ---------------------------------------------------------------------------------------------


def test_the_json_writer_never_writes_a_token_json_does_not_have(monkeypatch):
    monkeypatch.setattr(terminal, "_finite", WRITER_FALLBACK)  # a float that slipped through: null, never a token
    text = dumps_json({"a": float("inf"), "b": [float("nan"), 1.5], "c": {"d": -float("inf")}, "e": "x"})
    assert strict(text) == {"a": None, "b": [None, 1.5], "c": {"d": None}, "e": "x"}


@pytest.mark.parametrize("cell_text, bounds, expected", [
    ("3.5", columns.DURATION_US, 3.5),
    (" N/A ", columns.DURATION_US, None),
    ("text", columns.DURATION_US, None),
    ("4.9e-324", columns.DURATION_US, 0.0),  # a subnormal is below any resolution: 0, never a divisor to overflow
    ("\u0661\u0662\u0663", columns.COUNT, 123.0),  # Arabic-Indic digits: Python reads them as the number they are
    ("inf", columns.DURATION_US, "bad"),
    ("-Infinity", columns.ANY, "bad"),
    ("nan", columns.RATIO, "bad"),
    ("1e400", columns.ANY, "bad"),
    ("9" * 400, columns.ANY, "bad"),
    ("1e308", columns.DURATION_US, "bad"),
    ("-1", columns.DURATION_US, "bad"),
    ("2.5", columns.RATIO, "bad"),
    (10 ** 400, columns.ANY, "bad"),  # an integer from JSON or SQLite too large for a float
])
def test_one_number_helper_checks_finite_and_range_where_a_cell_is_read(cell_text, bounds, expected):
    value = columns.checked_float(cell_text, bounds)
    if expected == "bad":
        assert isinstance(value, columns.Bad) and value.cell == cell_text
    else:
        assert value == expected
    assert columns.parse_float("1e300") is None and columns.parse_float("inf") is None  # parse_float: finite, bounded


# ---------------------------------------------------------------------------------------------
# Kernel CSVs (kernel_details / op_summary): the stdlib reader, and pyarrow's handing over to it
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("column, value, bounds", [
    ("Wait Time(us)", "inf", "0 to 1e+12"),
    ("Wait Time(us)", "1e308", "0 to 1e+12"),
    ("Block Dim", "1e400", "0 to 4,294,967,295"),
    ("Mix Block Dim", "-1", "0 to 4,294,967,295"),
    ("aic_mac_ratio", "1e300", "0 to 2"),
    ("aiv_vec_ratio", "NaN", "0 to 2"),
    ("Start Time(us)", "-1e308", "0 to 1e+18"),
    ("aicore_time(us)", "Infinity", "0 to 1e+12"),
    ("Device_id", "9" * 30, "0 to 4,294,967,295"),
])
def test_a_bad_number_in_a_kernel_csv_reads_as_missing_with_a_note_naming_file_line_and_column(
        torch_run, kernels, column, value, bounds):
    rewrite_csv(kernels, 4, column, value)
    snapshot = Snapshot(torch_run)
    document = run_json("profile", torch_run)
    assert document["device_time_us"] == EXPECTED_US  # the rest of the profile is judged
    shown = columns.shown(value)
    assert note_of(document, f"{kernels}:4") == (
        f"{kernels}:4: {column} {shown} is not a finite number from {bounds}; 1 {MISSING}")
    assert snapshot.changes() == {}


@pytest.mark.parametrize("values", [{5: "inf"}, {5: "-1e308"}, {5: "1e300"}, {5: "1e308", 7: "1e308"}, {5: "-3.5"}])
def test_a_row_whose_duration_is_not_plausible_is_left_out_with_a_note(torch_run, kernels, values):
    left_out = sum(float(cell(kernels, line, "Duration(us)")) for line in values)
    for line, value in values.items():
        rewrite_csv(kernels, line, "Duration(us)", value)
    document = run_json("profile", torch_run)
    assert document["device_time_us"] == pytest.approx(EXPECTED_US - left_out, abs=0.05)
    first = min(values)
    assert note_of(document, f"{kernels}:{first}") == (
        f"{kernels}:{first}: Duration(us) {columns.shown(values[first])} is not a finite number from 0 to 1e+12; "
        f"{len(values)} {LEFT_OUT}")


def test_a_kernel_csv_without_a_plausible_duration_is_one_line(torch_run, kernels):
    rows = list(csv.reader(kernels.open(encoding="utf-8")))
    for row in rows[1:]:
        row[rows[0].index("Duration(us)")] = "inf"
    with kernels.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    line = assert_one_error_line(advisor_here("profile", torch_run), f"{kernels}:2")
    assert f"no row has a plausible duration: Duration(us) 'inf' is not a finite number from 0 to 1e+12 " \
           f"({len(rows) - 1} such row(s))" in line


@pytest.mark.parametrize("column, value", [("Duration(us)", "inf"), ("aic_mac_ratio", "1e308"),
                                           ("Block Dim", "1e400"), ("Wait Time(us)", "-nan")])
def test_a_bad_number_is_noted_with_its_line_and_the_rest_is_read(tmp_path, kernels, column, value):
    rows = len(csvfile.read_kernel_csv(kernels))
    rewrite_csv(kernels, 30, column, value)
    notes: list[str] = []
    table = csvfile.read_kernel_csv(kernels, notes=notes)
    assert len(notes) == 1 and notes[0].startswith(f"{kernels}:30: {column} ")
    # a bad duration leaves its row out; any other bad cell reads as missing and the row stays
    assert len(table) == (rows - 1 if column == "Duration(us)" else rows)


# ---------------------------------------------------------------------------------------------
# Step tables (torch_npu step_trace_time.csv, msprof-analyze cluster_step_trace_time.csv)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("column, value", [("Computing", "-1e308"), ("Free", "inf"), ("Stage", "1e400"),
                                           ("Communication(Not Overlapped)", "NaN")])
def test_a_bad_figure_of_a_step_table_reads_as_missing_with_a_note(torch_run, column, value):
    path = torch_run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    rewrite_csv(path, 2, column, value)
    document = run_json("profile", torch_run)
    assert document["device_time_us"] == EXPECTED_US
    assert note_of(document, f"{path}:2") == (f"{path}:2: {column} {columns.shown(value)} is not a finite number from "
                                              f"-1e+12 to 1e+12; 1 {MISSING}")


@pytest.mark.parametrize("column, value", [("Stage", "4.9e-324"), ("Computing", "4.9e-324"),
                                           ("Computing", "\u0664\u0668\u0666\u0669.\u0661")])  # Arabic-Indic 4869.1
def test_a_subnormal_or_non_ascii_number_in_a_step_table_is_read_as_the_number_it_is(torch_run, column, value):
    path = torch_run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    rewrite_csv(path, 2, column, value)
    total = run_json("profile", torch_run)["steps"]["total"]  # (a subnormal Stage divided a share into infinity)
    computing = float(value) if column == "Computing" and float(value) > 1 else 0.0 if column == "Computing" \
        else 4869.1
    assert total["computing_us"] == pytest.approx(computing)
    assert total["stage_us"] == pytest.approx(5252.228)  # a Stage of 0: Computing + Free, as torch_npu sums them
    assert total["shares"]["computing"] == pytest.approx(computing / total["stage_us"])


def test_a_bad_figure_of_a_cluster_step_table_reads_as_missing_with_a_note(real_profiles, tmp_path):
    folder = tmp_path / "cluster"
    shutil.copytree(real_profiles / "msprof-analyze-ut" / "cluster_8rank", folder)
    path = folder / "cluster_analysis_output" / "cluster_step_trace_time.csv"
    path.chmod(0o644)
    rewrite_csv(path, 4, "Computing", "1e308")
    document = run_json("profile", folder)
    assert note_of(document, f"{path}:4").endswith(f"Computing '1e308' is not a finite number from -1e+12 to 1e+12; "
                                                   f"1 {MISSING}")


# ---------------------------------------------------------------------------------------------
# Timelines (trace_view.json, msprof_*.json) and the call stacks read from them
# ---------------------------------------------------------------------------------------------


def test_a_timeline_duration_written_as_a_string_is_read_as_its_number(tmp_path):
    folder = tmp_path / "tl_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    (folder / "trace_view.json").write_text(
        f'[{HARDWARE},{{"ph":"X","pid":1,"tid":1,"name":"MatMul_1","ts":"100.0","dur":"5.5"}},'
        f'{{"ph":"X","pid":1,"tid":1,"name":"MatMul_2","ts":"200.0","dur":4.9e-324}}]', encoding="utf-8")
    assert run_json("profile", tmp_path / "tl_ascend_pt")["device_time_us"] == 5.5


@pytest.mark.parametrize("field, token, shown", [("dur", "NaN", "'NaN'"), ("dur", "Infinity", "'Infinity'"),
                                                 ("dur", "1e308", "'1e+308'"), ("dur", '"inf"', "'inf'"),
                                                 ("dur", "-5", "'-5'"), ("ts", '"1e400"', "'1e400'"),
                                                 ("ts", "1e400", "'1e400'"), ("ts", "-1", "'-1'")])
def test_a_timeline_task_with_a_bad_dur_or_ts_is_left_out_with_a_note(tmp_path, field, token, shown):
    folder = tmp_path / "tl_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    good = '{"ph":"X","pid":1,"tid":1,"name":"MatMul_1","ts":"100.0","dur":5}'
    bad = {"ph": "X", "pid": 1, "tid": 1, "name": "MatMul_2", "ts": "200.0", "dur": 7}
    bad[field] = "@"
    path = folder / "trace_view.json"
    path.write_text(f"[{HARDWARE},\n{good},\n" + json.dumps(bad).replace('"@"', token) + "\n]", encoding="utf-8")
    document = run_json("profile", tmp_path / "tl_ascend_pt")
    assert document["device_time_us"] == 5.0
    assert note_of(document, f"{path}:3") == (f'{path}:3: "{field}" {shown} is not a finite number from 0 to '
                                              f'{"1e+12" if field == "dur" else "1e+18"}; 1 {LEFT_OUT}')


def test_a_bad_dur_in_the_trace_beside_a_kernel_table_reaches_no_figure(real_profiles, tmp_path):
    run = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real_profiles / "msinsight-torch-npu" / "text" / "level1" / "rank0_ascend_pt", run)
    trace = run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    trace.chmod(0o644)
    events = json.loads(trace.read_text(encoding="utf-8"))
    expected = run_json("profile", run)
    for event in events:  # every device task: the call stacks are read from these
        if event.get("ph") == "X" and "cat" not in event:
            event["dur"] = "@"
    trace.write_text(json.dumps(events).replace('"@"', "Infinity"), encoding="utf-8")
    document = run_json("profile", run)
    assert document["device_time_us"] == expected["device_time_us"]  # kernel_details.csv's figures, untouched


# ---------------------------------------------------------------------------------------------
# Profiler DBs (ascend_pytorch_profiler*.db, msprof_*.db)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def db_run(tmp_path):
    run = copy_example("yolov8_torch_npu_db", tmp_path / "db_ascend_pt")
    [database] = run.rglob("*.db")
    return run, database


def _update(database: Path, statement: str) -> None:
    conn = sqlite3.connect(database)
    conn.execute(statement)
    conn.commit()
    conn.close()


def _duration_of(database: Path, rowid: int) -> float:
    conn = sqlite3.connect(database)
    start, end = conn.execute("SELECT startNs, endNs FROM TASK WHERE rowid = ?", (rowid,)).fetchone()
    conn.close()
    return (end - start) / 1000.0


@pytest.mark.parametrize("value, shown", [("9e999", "'inf'"), ("'Infinity'", "'Infinity'"), ("1e308", "'1e+308'"),
                                          ("'yesterday'", "'yesterday'"), ("NULL", "'None'"), ("-1", "'-1'")])
def test_a_task_with_a_bad_time_in_a_db_is_left_out_with_a_note_naming_its_row(db_run, value, shown):
    run, database = db_run
    left_out = _duration_of(database, 3)
    _update(database, f"UPDATE TASK SET endNs = {value} WHERE rowid = 3")
    document = run_json("profile", run)
    assert document["device_time_us"] == pytest.approx(EXPECTED_US - left_out, abs=0.05)
    [note] = [n for n in document["notes"] if n.startswith(f"{database} (globalTaskId ")]
    assert note.endswith(f"TASK.endNs {shown} is not a finite number from 0 to 9.2e+18; 1 {LEFT_OUT}")


@pytest.mark.parametrize("statement, column, shown, bounds", [
    ("UPDATE COMPUTE_TASK_INFO SET blockDim = 9e999 WHERE rowid = 3", "COMPUTE_TASK_INFO.blockDim", "'inf'",
     "0 to 4,294,967,295"),
    ("UPDATE COMPUTE_TASK_INFO SET blockDim = 'abc' WHERE rowid = 3", "COMPUTE_TASK_INFO.blockDim", "'abc'",
     "0 to 4,294,967,295"),
    ("UPDATE TASK SET deviceId = -1 WHERE rowid = 3", "TASK.deviceId", "'-1'", "0 to 4,294,967,295"),
])
def test_a_bad_number_in_a_db_column_reads_as_missing_with_a_note_naming_its_row(db_run, statement, column, shown,
                                                                                 bounds):
    run, database = db_run
    _update(database, statement)
    document = run_json("profile", run)
    assert document["device_time_us"] == EXPECTED_US
    [note] = [n for n in document["notes"] if n.startswith(f"{database} (globalTaskId ")]
    assert note.endswith(f"{column} {shown} is not a finite number from {bounds}; 1 {MISSING}")


@pytest.mark.parametrize("statement, column", [
    ("UPDATE TASK_PMU_INFO SET value = 9e999 WHERE rowid = 1", "TASK_PMU_INFO.value"),
    ("UPDATE AICORE_FREQ SET freq = 1e308", "AICORE_FREQ.freq"),
    ("UPDATE STEP_TIME SET endNs = 9e999", "STEP_TIME.endNs"),
])
def test_a_bad_side_figure_of_a_db_is_a_note_and_the_kernels_are_judged(db_run, statement, column):
    run, database = db_run
    _update(database, statement)
    document = run_json("profile", run)
    assert document["device_time_us"] == EXPECTED_US
    assert any(n.startswith(str(database)) and f"{column}" in n and "is not a finite number" in n
               for n in document["notes"]), document["notes"]


# ---------------------------------------------------------------------------------------------
# Memory tables (memory_record.csv, operator_memory.csv; MEMORY_RECORD, OP_MEMORY ...)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def memory_run(tmp_path):
    from test_memory import _text_run

    return _text_run(tmp_path)


@pytest.mark.parametrize("name, column, value, line, outcome", [
    ("memory_record.csv", "Total Reserved(MB)", "inf", 3, f"0 to 1e+15; 1 {MISSING}"),
    ("memory_record.csv", "Total Allocated(MB)", "1e300", 3, f"0 to 1e+15; 1 {MISSING}"),
    ("memory_record.csv", "Timestamp(us)", "1e308", 3, f"0 to 1e+18; 1 {LEFT_OUT}"),
    ("memory_record.csv", "Timestamp(us)", "nan", 3, f"0 to 1e+18; 1 {LEFT_OUT}"),
    ("operator_memory.csv", "Size(KB)", "inf", 2, f"0 to 1e+15; 1 {LEFT_OUT}"),
    ("operator_memory.csv", "Release Time(us)", "-1e308", 2, f"0 to 1e+18; 1 {MISSING}"),
])
def test_a_bad_memory_figure_is_a_note_naming_file_line_and_column(memory_run, name, column, value, line, outcome):
    path = memory_run / "ASCEND_PROFILER_OUTPUT" / name
    rewrite_csv(path, line, column, value)
    document = run_json("memory", memory_run)
    assert document["peak"] is not None  # still judged
    [note] = [n for n in document["notes"] if n.startswith(f"{path}:{line}: ")]
    assert note.startswith(f"{path}:{line}: {column} ") and note.endswith(outcome)


def test_a_number_pyarrow_does_not_parse_in_a_memory_table_is_read_as_the_number_it_is(memory_run):
    path = memory_run / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    expected = run_json("memory", memory_run)["peak"]
    arabic = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")
    rewrite_csv(path, 3, "Total Allocated(MB)", cell(path, 3, "Total Allocated(MB)").translate(arabic))
    assert run_json("memory", memory_run)["peak"] == expected  # the same figure, in Arabic-Indic digits
    rewrite_csv(path, 3, "Total Allocated(MB)", "seven")  # text where a figure belongs: still one line
    assert assert_one_error_line(advisor_here("memory", memory_run), f"{path}:3", "not a readable records table")


def test_a_bad_memory_figure_in_a_db_is_a_note_naming_its_row(real_profiles, tmp_path):
    run = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real_profiles / "msinsight-torch-npu" / "db" / "level1" / "rank0_ascend_pt", run)
    [database] = run.rglob("ascend_pytorch_profiler_0.db")
    for path in run.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    _update(database, "UPDATE MEMORY_RECORD SET totalReserved = 9e999 WHERE rowid = 5")
    _update(database, "UPDATE OP_MEMORY SET size = 'Infinity' WHERE rowid = 5")
    document = run_json("memory", run)
    assert document["peak"] is not None
    notes = [n for n in document["notes"] if n.startswith(f"{database} (")]
    assert f"{database} (MEMORY_RECORD rowid 5): MEMORY_RECORD.totalReserved 'inf' is not a finite number from 0 " \
           f"to 1e+15; 1 {MISSING}" in notes
    assert f"{database} (OP_MEMORY rowid 5): OP_MEMORY.size 'Infinity' is not a finite number from 0 to 1e+15; " \
           f"1 {LEFT_OUT}" in notes


# ---------------------------------------------------------------------------------------------
# Serving tables, communication.json, msOpProf metric files, op_statistic of a light export, peaks files
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, column, value", [("request.csv", "execution_time(ms)", "inf"),
                                                 ("batch.csv", "kvcache_usage_rate", "1e400"),
                                                 ("forward.csv", "during_time(ms)", "-1e308"),
                                                 ("batch.csv", "batch_size", "-4")])
def test_a_bad_number_in_a_serving_table_is_a_note_naming_file_line_and_column(tmp_path, name, column, value):
    from test_serving import _write

    folder = _write(tmp_path / "run", clients=4, requests=8, tokens=10, step_ms=20.0, kv_peak=0.2)
    rewrite_csv(folder / name, 3, column, value)
    document = run_json("serving", folder)
    assert document["figures"]["requests"] == 8
    assert f"{folder / name}:3: {column} {columns.shown(value)} is not a finite number from 0 to 1e+18; " \
           f"1 {MISSING}" in document["notes"]


@pytest.mark.parametrize("token, shown", [("1e400", "'1e400'"), ("NaN", "'NaN'"), ("1" + "0" * 400, None),
                                          ("1e308", "'1e+308'")])
def test_a_number_json_does_not_allow_in_communication_json_is_a_note_on_its_field(torch_run, token, shown):
    path = torch_run / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    op = '"hcom_allReduce_%d":{"Communication Time Info":{"Elapse Time(ms)": %s, "Wait Time(ms)": 1.5}}'
    path.write_text('{"s":{"collective":{\n' + op % (1, token) + ",\n" + op % (2, "2.5") + "}}}", encoding="utf-8")
    document = run_json("profile", torch_run)
    note = note_of(document, f"{path}:2")
    shown = shown or columns.shown(token)
    assert note == f'{path}:2: "Elapse Time(ms)" {shown} is not a finite number from -1e+12 to 1e+12; 1 {MISSING}'


@pytest.mark.parametrize("name, column, value", [("PipeUtilization.csv", "aic_time(us)", "1e308"),
                                                 ("PipeUtilization.csv", "aic_cube_ratio", "inf"),
                                                 ("OpBasicInfo.csv", "Current Freq", "1e308"),
                                                 ("OpBasicInfo.csv", "Block Dim", "-1")])
def test_a_bad_number_in_an_msopprof_file_is_a_note_naming_file_line_and_column(tmp_path, name, column, value):
    run = copy_example("matmul_msopprof", tmp_path / "OPPROF_20250109074803_CRSSMJMJOQUPVBYV")
    path = run / name
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index(column)] = value
    lines[1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    document = run_json("profile", run)
    assert document["device_time_us"] == 186.4
    note = note_of(document, f"{path}:2")
    assert note.startswith(f"{path}:2: {column} {columns.shown(value)} is not a finite number")


def test_a_bad_row_of_a_light_op_statistic_is_left_out_with_a_note(torch_run):
    (torch_run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").unlink()
    path = torch_run / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv"
    left_out = float(cell(path, 3, "Total Time(us)"))
    before = run_json("profile", torch_run)["device_time_us"]
    rewrite_csv(path, 3, "Total Time(us)", "inf")
    document = run_json("profile", torch_run)
    assert document["device_time_us"] == pytest.approx(before - left_out)
    assert note_of(document, f"{path}:3") == (f"{path}:3: Total Time(us) 'inf' is not a finite number from 0 to 1e+12; "
                                              f"1 {LEFT_OUT}")


@pytest.mark.parametrize("line, message", [
    ("hbm_gbps: 1.0e+300", "'hbm_gbps' must be a positive number (0.001 to 1,000,000), not 1e+300"),
    ("freq_mhz: .inf", "'freq_mhz' must be a positive number (1 to 100,000), not inf"),
    ("aic: 0.0000001", "'aic' must be a positive number (1 to 10,000), not 1e-07"),
    ("aic: 20.5", "'aic' must be a whole number of cores, not 20.5"),
    ("cube_tflops:\n  bf16: 1e308", "'cube_tflops.bf16' must be a positive number (0.001 to 1,000,000), not '1e308'"),
])
def test_an_absurd_figure_in_a_peaks_file_is_one_line_naming_the_key(torch_run, tmp_path, line, message):
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text(f"chip: Ascend910B3\n{line}\n", encoding="utf-8")
    assert assert_one_error_line(advisor_here("profile", torch_run, "--peaks", peaks), peaks) == \
        f"error: {peaks}: {message}"


def test_a_peak_written_without_a_dot_is_read_as_the_number(torch_run, tmp_path):
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text("chip: Ascend910B3\nhbm_gbps: 1e3\n", encoding="utf-8")
    assert run_json("profile", torch_run, "--peaks", peaks)["roofline"]["peaks"]["hbm_gbps"] == 1000.0


def _simulator_run(real_profiles: Path, tmp_path: Path) -> Path:
    """A writable copy of the real msOpProf simulator run."""
    source = next((real_profiles / "catlass-msprof-op" / "simulator").rglob("OPPROF_*"))
    run = tmp_path / source.name
    shutil.copytree(source, run)
    for path in run.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return run


def test_a_bad_number_in_an_msopprof_simulator_file_is_left_out_with_a_note(real_profiles, tmp_path):
    run = _simulator_run(real_profiles, tmp_path)
    instr = next((run / "simulator" / "core0.cubecore0").glob("*_instr_exe.csv"))
    rewrite_csv(instr, 3, "cycles", "inf")
    trace = run / "simulator" / "core0.cubecore0" / "trace.json"
    document = json.loads(trace.read_text(encoding="utf-8"))
    next(e for e in document["traceEvents"] if e.get("ph") == "X")["dur"] = "@"
    trace.write_text(json.dumps(document).replace('"@"', "NaN"), encoding="utf-8")
    notes = run_json("profile", run)["notes"]
    assert f"{instr}:3: cycles 'inf' is not a finite number from 0 to 1e+18; 1 {LEFT_OUT}" in notes
    assert f"{trace}: \"dur\" 'NaN' is not a finite number from 0 to 1e+12; 1 {LEFT_OUT}" in notes


def test_an_absurd_block_dim_in_a_simulator_log_is_left_out_with_a_note(real_profiles, tmp_path):
    run = _simulator_run(real_profiles, tmp_path)
    log = run / "dump" / "core0_summary_log"
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "blkdim 20" in text
    log.write_text(text.replace("blkdim 20", "blkdim 99999999999999999999"), encoding="utf-8")
    document = run_json("profile", run)
    assert any(note.startswith(f"{log}: blkdim '99999") and MISSING in note for note in document["notes"])
    assert document["device_time_us"] > 0


def test_an_absurd_input_shape_is_not_judged_instead_of_overflowing(tmp_path):
    run = copy_example("system_msprof", tmp_path / "PROF_000001_20250109074803704_KTISEBQRKVNDESIC")
    [summary] = run.rglob("op_summary_*.csv")
    rows = list(csv.reader(summary.open(encoding="utf-8")))
    line = next(n for n, row in enumerate(rows[1:], start=2) if "MatMul" in row[rows[0].index("OP Type")])
    rewrite_csv(summary, line, "Input Shapes", ";".join(["9" * 300 + "," + "9" * 300] * 2))
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text("chip: Ascend910B3\n", encoding="utf-8")
    assert run_json("profile", run, "--peaks", peaks)["device_time_us"] > 0
    assert run_json("roofline", run, "--peaks", peaks)["op_types"]


def test_a_bad_number_in_a_mindspore_1x_table_leaves_its_row_out_with_a_note(tmp_path):
    conv = "Default/network-WithLossCell/_backbone-ResNet/conv1-Conv2d/Conv2D-op1"
    cast = "Default/network-WithLossCell/_backbone-ResNet/Cast-op7"
    path = tmp_path / "profiler" / "aicore_intermediate_0_detail.csv"
    path.parent.mkdir()
    path.write_text(f"full_op_name,execution_time,execution_frequency\n{conv},0.5,10\n{cast},inf,20\n"
                    f"{cast},0.3,1e400\n", encoding="utf-8")
    document = run_json("profile", tmp_path)
    assert document["device_time_us"] == pytest.approx(5000.0)
    assert f"{path}:3: execution_time 'inf' is not a finite number from 0 to 1,000,000,000; 1 {LEFT_OUT}" in \
        document["notes"]
    assert f"{path}:4: execution_frequency '1e400' is not a finite number from 0 to 4,294,967,295; 1 {LEFT_OUT}" in \
        document["notes"]


def test_a_bad_number_in_a_raw_serving_db_is_a_note_naming_its_row(tmp_path):
    from test_serving import _spans

    folder = tmp_path / "0105-1200" / "Trace_Service"
    folder.mkdir(parents=True)
    database = folder / "ms_service_host-1.db"
    conn = sqlite3.connect(database)
    conn.execute("CREATE TABLE slice (id INTEGER, timestamp INTEGER, duration INTEGER, name TEXT, depth INTEGER, "
                 "track_id INTEGER, cat TEXT, args TEXT, cname TEXT, end_time INTEGER, flag_id TEXT, pid INTEGER, "
                 "tid INTEGER)")
    rows = [(i, start, end - start, name, json.dumps(args), end, 1) for i, (name, start, end, args) in
            enumerate(_spans(4, 10, 20.0))]
    conn.executemany("INSERT INTO slice (id, timestamp, duration, name, args, end_time, pid) VALUES (?,?,?,?,?,?,?)",
                     rows)
    conn.execute("UPDATE slice SET end_time = 9e999 WHERE rowid = 6")
    conn.execute("UPDATE slice SET args = '{\"TotalBlocks=\": 1000, \"FreeBlocks=\": NaN}' WHERE name = 'KVCacheStatus'"
                 " AND rowid = 7")
    conn.commit()
    conn.close()
    notes = run_json("serving", tmp_path / "0105-1200")["notes"]
    assert f"{database} (slice rowid 6): slice.end_time 'inf' is not a finite number from 0 to 9.2e+18; 1 " \
           f"{LEFT_OUT}" in notes
    assert f"{database} (slice rowid 7): slice.args 'NaN' is not a finite number from -1e+18 to 1e+18; 1 {MISSING}" \
        in notes
