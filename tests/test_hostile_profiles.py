"""Hostile profile inputs, generated from the examples: each class ends with the right figures, or with one
line naming the file, within the deadline, and the profile is left exactly as it was."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from hostile import Snapshot, advisor, advisor_here, assert_one_error_line, copy_example

HARDWARE = '{"ph":"M","name":"process_name","pid":1,"args":{"name":"Ascend Hardware"}}'


def profile_json(path, run=advisor_here) -> dict:
    done = run("profile", path, "--format", "json")
    assert done.code == 0, done.stderr
    return json.loads(done.stdout)


def device_time(path, run=advisor_here) -> float:
    return profile_json(path, run)["device_time_us"]


@pytest.fixture
def torch_run(tmp_path):
    return copy_example("yolov8_torch_npu", tmp_path / "run_ascend_pt")


@pytest.fixture
def prof_run(tmp_path):
    return copy_example("system_msprof", tmp_path / "PROF_000001_20250109074803704_KTISEBQRKVNDESIC")


@pytest.fixture
def opprof_run(tmp_path):
    return copy_example("matmul_msopprof", tmp_path / "OPPROF_20250109074803_CRSSMJMJOQUPVBYV")


@pytest.fixture
def db_run(tmp_path):
    return copy_example("yolov8_torch_npu_db", tmp_path / "db_ascend_pt")


def rewrite_csv(path: Path, change) -> None:
    rows = list(csv.reader(path.open(encoding="utf-8")))
    change(rows)
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


# ---------------------------------------------------------------------------------------------
# Side files: wrong types, hostile JSON, FIFOs. The profile is read; the side file is ignored.
# ---------------------------------------------------------------------------------------------

SIDE_JSON = {
    "config is text": '{"config": "oops"}',
    "experimental_config is a list": '{"config": {"experimental_config": [1, 2]}}',
    "_aic_metrics are numbers": '{"config": {"experimental_config": {"_aic_metrics": [1, 2]}}}',
    "nested 100,000 deep": "[" * 100_000,
    "NaN": '{"torch_npu_version": NaN}',
}


@pytest.mark.parametrize("name", sorted(SIDE_JSON))
def test_a_hostile_profiler_info_is_ignored(torch_run, name):
    expected = device_time(torch_run)
    (torch_run / "profiler_info_0.json").write_text(SIDE_JSON[name], encoding="utf-8")
    snapshot = Snapshot(torch_run)
    document = profile_json(torch_run)
    assert document["device_time_us"] == expected
    if name in ("nested 100,000 deep", "NaN"):
        assert any(note.startswith(f"ignored {torch_run / 'profiler_info_0.json'}: not readable JSON")
                   for note in document["notes"])
    assert snapshot.changes() == {}


@pytest.mark.parametrize("text, reason", [
    ('{"a":' * 50_000 + "1" + "}" * 50_000, "JSON nested too deeply"),
])  # (a number that does not fit, 1e400 or 401 digits, is a note on its field: test_nonfinite_numbers.py)
def test_a_hostile_communication_json_is_ignored_with_a_note(torch_run, text, reason):
    path = torch_run / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    path.write_text(text, encoding="utf-8")
    assert f"ignored {path}: not readable JSON ({reason})" in profile_json(torch_run)["notes"]


@pytest.mark.parametrize("text", ['{"DeviceInfo": [1]}', '{"DeviceInfo": "abc"}', "[" * 100_000,
                                  json.dumps({"DeviceInfo": [{"ai_core_num": "9" * 5000}]})])
def test_a_hostile_device_info_is_ignored(prof_run, text):
    expected = device_time(prof_run)
    [info] = prof_run.glob("device_*/info.json.0")
    info.write_text(text, encoding="utf-8")
    assert device_time(prof_run) == expected


@pytest.mark.parametrize("layout, relative", [
    ("torch", "profiler_info_0.json"), ("opprof", "PipeUtilization.csv"), ("opprof", "dump/op_basic_info.txt"),
    ("prof", "device_0/info.json.0"), ("torch", "ASCEND_PROFILER_OUTPUT/communication.json"),
])
def test_a_fifo_in_place_of_a_side_file_does_not_hang(torch_run, opprof_run, prof_run, layout, relative):
    root = {"torch": torch_run, "opprof": opprof_run, "prof": prof_run}[layout]
    side = root / relative
    expected = device_time(root)
    side.unlink(missing_ok=True)
    os.mkfifo(side)
    started = time.monotonic()
    assert device_time(root, run=advisor) == expected  # a subprocess: a regression must not hang pytest
    assert time.monotonic() - started < 10


# ---------------------------------------------------------------------------------------------
# Numbers that are not finite or not plausible: notes naming file:line and column, the rest judged
# (test_nonfinite_numbers.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("events, message", [
    ("[" + "[" * 200_000 + "]" * 200_000 + "]", "nested too deeply"),
    ("[" + '{"a":' * 100_000 + "1" + "}" * 100_000 + "]", "nested too deeply"),
    (f'[{HARDWARE},{{"ph":"X","pid":1,"tid":1,"name":"MatMul_1","ts":"100.0","dur":NaN}}]', "NaN"),
    (f'[{HARDWARE},{{"ph":"X","pid":1,"tid":1,"name":"MatMul_1","ts":"100.0","dur":Infinity}}]', "Infinity"),
    (f'[{HARDWARE},{{"ph":"X","pid":1,"tid":1,"name":"MatMul_1","ts":"100.0","dur":1e308}}]',
     "no device task with plausible times"),
    ('[{"ph":"M","name":"process_name","pid":1,"args":[1]}]', "no device kernels"),
    ('[{"ph":"M","name":"process_name","pid":[1],"args":{"name":"Ascend Hardware"}}]', "no device kernels"),
])
def test_a_hostile_timeline_is_one_line(tmp_path, events, message):
    folder = tmp_path / "tl_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    path = folder / "trace_view.json"
    path.write_text(events, encoding="utf-8")
    assert_one_error_line(advisor_here("profile", tmp_path / "tl_ascend_pt"), path, message)


def test_event_args_of_the_wrong_type_are_taken_as_absent(tmp_path):
    folder = tmp_path / "tl_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    (folder / "trace_view.json").write_text(
        f'[{HARDWARE},{{"ph":"X","pid":1,"tid":1,"name":"MatMul_1","ts":"100.0","dur":5,"args":[1]}}]')
    assert device_time(tmp_path / "tl_ascend_pt") == 5.0


def test_blanks_between_events_are_skipped_fast(tmp_path):
    folder = tmp_path / "tl_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    with (folder / "trace_view.json").open("w") as handle:
        handle.write(f"[{HARDWARE}," + " " * (100 << 20) + '{"ph":"X","pid":1,"tid":1,"name":"MatMul_1",'
                     '"ts":"100.0","dur":5}]')
    started = time.monotonic()
    assert device_time(tmp_path / "tl_ascend_pt") == 5.0
    assert time.monotonic() - started < 8  # 100 MB of blanks took 12 s character by character


# ---------------------------------------------------------------------------------------------
# Archives
# ---------------------------------------------------------------------------------------------


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as bundle:
        for name, text in members.items():
            bundle.writestr(name, text)
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: _zip(p / "clash.zip", {"a": "x", "a/b_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv": "x"}),
     "cannot extract the archive: Not a directory"),
    (lambda p: _zip(p / "dot.zip", {".": "x"}), "unsafe member path '.'"),
    (lambda p: (p / "x.tar.gz").write_bytes(b"\x1f\x8b\x08garbage") and p / "x.tar.gz", "damaged archive"),
])
def test_a_broken_archive_is_one_line_and_leaves_no_temporary_folder(tmp_path, make, message):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    archive = make(tmp_path)
    assert_one_error_line(advisor("profile", archive, env={"TMPDIR": str(scratch)}), archive, message)
    assert list(scratch.iterdir()) == []


def test_an_archive_on_a_full_temporary_folder_is_one_line(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as bundle:
        with bundle.open("run_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv", "w", force_zip64=True) as out:
            for _ in range(64):
                out.write(b"0" * (1 << 20))
    small = tmp_path / "small"
    small.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(small)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        assert_one_error_line(advisor("profile", bomb, env={"TMPDIR": str(small)}), bomb,
                              "no space left in the temporary folder")
        assert list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


# ---------------------------------------------------------------------------------------------
# Ranks reached through links, a DB with its -wal, huge and misleading files
# ---------------------------------------------------------------------------------------------


def test_ranks_linked_to_their_parent_are_no_ranks_and_do_not_hang(tmp_path):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for name in ("a_ascend_pt", "b_ascend_pt"):
        (ranks / name).symlink_to(".")
    assert_one_error_line(advisor("profile", ranks), ranks, "no profiler output found")


def test_a_latest_link_is_not_an_extra_rank(tmp_path):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    rank0 = copy_example("yolov8_torch_npu", ranks / "rank0_ascend_pt")
    alone = device_time(rank0)
    (ranks / "latest_ascend_pt").symlink_to(".")
    assert device_time(ranks) == alone
    rank1 = copy_example("yolov8_torch_npu_nms_on_npu", ranks / "rank1_ascend_pt")
    (ranks / "latest_ascend_pt").unlink()
    (ranks / "latest_ascend_pt").symlink_to("rank1_ascend_pt")
    document = profile_json(ranks)
    assert document["device_time_us"] == pytest.approx(alone + device_time(rank1), abs=0.05)
    assert len(document["source"]["ranks"]) == 2


def test_committed_data_in_a_wal_is_read_and_the_profile_untouched(tmp_path, db_run):
    [database] = db_run.rglob("*.db")
    code = ("import shutil, sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('pragma journal_mode=wal'); c.execute('pragma wal_autocheckpoint=0')\n"
            "c.execute('update TASK set endNs = startNs + (endNs - startNs) * 10')\n"
            "print(c.execute('select sum(endNs - startNs) / 1000.0 from TASK t join COMPUTE_TASK_INFO c "
            "on t.globalTaskId = c.globalTaskId').fetchone()[0])\n"
            "shutil.copytree(sys.argv[2], sys.argv[3])\n")  # copied while the writer holds it open
    copied = tmp_path / "copied_ascend_pt"
    done = subprocess.run([sys.executable, "-c", code, str(database), str(db_run), str(copied)], capture_output=True,
                          text=True, check=True)
    assert any(p.name.endswith("-wal") for p in copied.rglob("*"))
    snapshot = Snapshot(copied)
    document = profile_json(copied)
    assert document["device_time_us"] == pytest.approx(float(done.stdout), abs=0.05)
    assert any("-wal beside the DB held committed changes" in note for note in document["notes"])
    assert snapshot.changes() == {}


def test_a_huge_sparse_csv_is_refused_without_being_read(opprof_run):
    basic = opprof_run / "OpBasicInfo.csv"
    os.truncate(basic, 3 << 30)
    started = time.monotonic()
    assert_one_error_line(advisor("profile", opprof_run), basic, "binary data, not a CSV text file")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_a_utf16_csv_is_named_as_such(torch_run, encoding):
    path = torch_run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    path.write_bytes(path.read_text(encoding="utf-8").encode(encoding))
    line = assert_one_error_line(advisor_here("profile", torch_run), path, "UTF-16 text")
    assert line.endswith("re-save the file as UTF-8 CSV")


def test_rows_that_all_have_extra_fields_are_named_as_such(torch_run):
    path = torch_run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0]] + [line + ",x,y" for line in lines[1:]]) + "\n", encoding="utf-8")
    width = len(lines[0].split(","))
    assert_one_error_line(advisor_here("profile", torch_run), f"{path}:2",
                          f"no row has the header's {width} fields ({len(lines) - 1} row(s) have {width + 2})")
