"""Outputs under attack (issue 30): journals beside an export, another program holding it, over-long names,
signals in the middle of a write, paths that are not UTF-8, documents that are not what they claim.

A write is complete or absent; a file another program holds, a device or a FIFO is refused, not replaced;
SIGTERM and Ctrl-C stop a write at once and leave no temporary file; a bad document is one line naming it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from hostile import Snapshot, advisor, advisor_here, assert_one_error_line, copy_example

EXAMPLE = ROOT / "data" / "examples" / "yolov8_torch_npu"


def tables(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
        names = [row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")]
        return {name: conn.execute(f'select count(*) from "{name}"').fetchone()[0] for name in names}
    finally:
        conn.close()


def killed_writer(path: Path, sql: str) -> None:
    """A program that commits ``sql`` to ``path`` in WAL mode and is killed before any checkpoint: a -wal is left."""
    code = (f"import os, sqlite3; c = sqlite3.connect({str(path)!r}); c.execute('pragma journal_mode=wal');"
            f"c.execute('pragma wal_autocheckpoint=0'); c.executescript({sql!r}); c.commit(); os.kill(os.getpid(), 9)")
    subprocess.run([sys.executable, "-c", code], check=False)
    assert path.with_name(path.name + "-wal").stat().st_size > 0


def export(target: Path, *extra: object, profile: Path = EXAMPLE):
    return advisor_here("profile", profile, "--export", target, *extra)


# ---------------------------------------------------------------------------------------------
# SQLite journals and other programs
# ---------------------------------------------------------------------------------------------


def test_an_export_over_a_file_with_a_stale_wal_keeps_every_committed_row(tmp_path):
    ours = tmp_path / "ours.db"
    assert export(ours).code == 0
    killed_writer(ours, "create table mine (note); insert into mine values ('kept'); delete from kernels;")
    run = export(ours)
    assert (run.code, run.stderr) == (0, f"wrote 173 kernels and 11 op types to {ours}\n")
    assert tables(ours)["kernels"] == 173 and tables(ours)["mine"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ours.db"]  # no -wal read as part of the new file
    theirs = tmp_path / "theirs.db"
    killed_writer(theirs, "create table notes2 (note); insert into notes2 values ('thesis');")
    assert export(theirs, "--force").code == 0
    assert tables(theirs)["notes2"] == 1 and tables(theirs)["kernels"] == 173
    assert not theirs.with_name("theirs.db-wal").exists()


def test_a_journal_beside_a_target_that_is_no_database_is_refused(tmp_path):
    source = tmp_path / "gone.db"
    killed_writer(source, "create table t (x); insert into t values (1);")
    orphan = tmp_path / "new.db-wal"
    source.with_name("gone.db-wal").rename(orphan)  # the database it belonged to is gone
    for name in ("gone.db", "gone.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    snapshot = Snapshot(tmp_path)
    assert_one_error_line(export(tmp_path / "new.db"), tmp_path / "new.db", "an SQLite journal of another database",
                          "new.db-wal")
    assert snapshot.changes() == {}


def test_a_fifo_as_the_journal_of_the_target_is_refused_without_waiting(tmp_path):
    target = tmp_path / "out.db"
    assert export(target).code == 0
    os.mkfifo(tmp_path / "out.db-journal")
    snapshot = Snapshot(tmp_path)
    started = time.monotonic()
    assert_one_error_line(export(target), target, "out.db-journal beside it is not a regular file")
    assert time.monotonic() - started < 10 and snapshot.changes() == {}


HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "wal":
    conn.execute("pragma journal_mode=wal")
conn.execute("create table if not exists theirs (x)")
conn.execute("insert into theirs values ('committed')")
print("ready", flush=True)
sys.stdin.read()
conn.execute("insert into theirs values ('after')")
"""


@pytest.mark.parametrize("mode", ["rollback", "wal"])
def test_a_file_another_program_holds_open_is_refused_and_its_rows_kept(tmp_path, mode):
    target = tmp_path / "held.db"
    assert export(target).code == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(target), mode], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "ready\n"
        for extra in ((), ("--force",)):
            assert_one_error_line(export(target, *extra), target, f"is open in another program (process {holder.pid})",
                                  "close that program first")
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0
    assert tables(target)["theirs"] == 2 and tables(target)["kernels"] == 173


# ---------------------------------------------------------------------------------------------
# Names and paths
# ---------------------------------------------------------------------------------------------


def test_over_long_names_and_paths_are_one_line_naming_them(tmp_path):
    long_name = tmp_path / ("a" * 300 + ".db")
    assert_one_error_line(export(long_name), long_name, "a name in it is 303 bytes long, over the 255 bytes")
    long_path = tmp_path.joinpath(*["b" * 200] * 25, "report.html")
    run = advisor_here("profile", EXAMPLE, "--format", "html", "--output", long_path)
    assert_one_error_line(run, long_path, f"the path is {len(str(long_path)):,} bytes long, over the 4,095 bytes")
    longest = tmp_path / ("c" * 252 + ".db")  # fits, and so must the temporary file beside it and its journal
    assert export(longest).code == 0 and tables(longest)["kernels"] == 173
    assert sorted(p.name for p in tmp_path.iterdir()) == [longest.name]


def test_a_device_or_fifo_as_the_output_is_refused_even_with_force(tmp_path):
    fifo = tmp_path / "out.db"
    os.mkfifo(fifo)
    targets = [fifo]
    try:
        os.mknod(tmp_path / "device", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # a /dev/null of our own
        targets.append(tmp_path / "device")
    except (PermissionError, OSError):
        pass
    snapshot = Snapshot(tmp_path)
    for target in targets:
        for args in (("--export", target, "--force"), ("--format", "html", "--output", target, "--force")):
            assert_one_error_line(advisor_here("profile", EXAMPLE, *args), target,
                                  "is not a regular file (a device, FIFO or socket); advisor never replaces one")
    assert snapshot.changes() == {}


def test_a_profile_path_that_is_not_utf8_is_written_with_its_bytes_shown(tmp_path):
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/bad\xff"))
    profile = copy_example("yolov8_torch_npu", folder / "run_ascend_pt")
    database = tmp_path / "out.db"
    # (a subprocess: how a terminal shows such a path is the environment's matter, not the file's)
    run = advisor("profile", profile, "--export", database)
    assert run.code == 0, run.stderr
    source = json.loads(sqlite3.connect(database).execute("select json from source").fetchone()[0])
    assert source["source"]["path"] == str(profile)  # the JSON escape \\udcff: read back as the path it was
    report = tmp_path / "report.html"
    for command in (("profile", profile), ("suggest", "--profile", profile)):
        run = advisor(*command, "--format", "html", "--output", report)
        assert (run.code, run.stdout) == (0, f"wrote {report}\n"), run.stderr
        assert "bad\\xff/run_ascend_pt" in report.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Signals in the middle of a write
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slow_profile(tmp_path_factory) -> Path:
    """The example with its kernels repeated 400 times (69,200 launches): its export takes seconds."""
    profile = copy_example("yolov8_torch_npu", tmp_path_factory.mktemp("slow") / "run_ascend_pt")
    kernels = profile / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    header, *rows = kernels.read_text(encoding="utf-8").splitlines()
    kernels.write_text(header + "\n" + "\n".join(rows * 400) + "\n", encoding="utf-8")
    return profile


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGHUP, 128 + signal.SIGHUP),
                                          (signal.SIGINT, 128 + signal.SIGINT)])
def test_a_signal_during_an_export_stops_it_at_once_and_leaves_the_previous_file(tmp_path, slow_profile, signum, code):
    target = tmp_path / "out.db"
    assert export(target).code == 0
    before = target.read_bytes()
    process = subprocess.Popen([sys.executable, "-m", "opprof_advisor", "profile", str(slow_profile), "--export",
                                str(target)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()) and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.2)  # inside the write
    process.send_signal(signum)
    sent = time.monotonic()
    process.wait(timeout=30)
    assert time.monotonic() - sent < 2 and process.returncode == code
    assert "Traceback" not in process.stderr.read()
    process.stderr.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.db"] and target.read_bytes() == before


# ---------------------------------------------------------------------------------------------
# `advisor report` on documents that are not what they claim
# ---------------------------------------------------------------------------------------------


def _profile_document() -> dict:
    return json.loads(advisor_here("profile", EXAMPLE, "--format", "json").stdout)


def _changed(path: tuple, value) -> dict:
    document = _profile_document()
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return document


def _refused_everywhere(tmp_path: Path, document: str, message: str) -> None:
    saved = tmp_path / "doc.json"
    saved.write_text(document, encoding="utf-8")
    for fmt in ("table", "html", "json"):
        extra = ("--output", tmp_path / "r.html") if fmt == "html" else ()
        assert_one_error_line(advisor_here("report", saved, "--format", fmt, *extra), f"{saved}: {message}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


@pytest.mark.parametrize("document, message", [
    ('{"schema": "opprof-advisor/profile/1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply"),
    ('{"schema": "opprof-advisor/profile/1", "x": ' + "[" * 200 + "]" * 200 + "}",
     "not a complete profile document: nested more than 64 levels deep"),
    ('{"schema": "opprof-advisor/profile/1"}', "not a complete profile document: source is missing"),
    ('{"schema": "opprof-advisor/suggest/2", "profile": [], "suggestions": [], "notes": []}',
     "not a complete suggest document: profile is a list, not an object"),
    ('{"schema": "opprof-advisor/search/1", "query": "nms", "results": [{"id": 1, "kind": "tip", "title": "t"}]}',
     "not a complete search document: results[0].id is a number, not a string"),
])
def test_a_document_nested_too_deep_or_missing_what_it_must_have_is_one_line_naming_it(tmp_path, document, message):
    _refused_everywhere(tmp_path, document, message)


@pytest.mark.parametrize("path, value, message", [
    (("op_types", 0, "share"), "x", "op_types[0].share is a string, not a number"),
    (("source", "path"), None, "source.path is null, not a string"),
    (("source", "workload"), ["training"], "source.workload is a list, not a string or null"),
    (("symptoms", 0), "x", "symptoms[0] is a string, not an object"),
    (("notes",), {}, "notes is an object, not a list"),
])
def test_a_value_of_the_wrong_type_is_one_line_naming_it_and_the_key(tmp_path, path, value, message):
    _refused_everywhere(tmp_path, json.dumps(_changed(path, value)), f"not a complete profile document: {message}")


@pytest.mark.parametrize("path, value, fmt", [(("op_types", 0, "busiest_ratio"), "x", "table"),
                                              (("op_types", 0, "share"), 1e308, "html"),
                                              (("steps", "total"), "x", "table"), (("roofline",), "x", "table")])
def test_a_value_a_renderer_cannot_use_is_one_line_naming_the_document(tmp_path, path, value, fmt):
    saved = tmp_path / "doc.json"
    saved.write_text(json.dumps(_changed(path, value)), encoding="utf-8")
    extra = ("--output", tmp_path / "r.html") if fmt == "html" else ()
    assert_one_error_line(advisor_here("report", saved, "--format", fmt, *extra),
                          f"{saved}: cannot be rendered: a value in it has the wrong type or is out of range (")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]
