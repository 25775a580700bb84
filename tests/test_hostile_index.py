"""Hostile state of the index: journals left by killed writers, damage, a read-only or full home, wrong --db files.

Every case ends with exit 0 (served, repaired, or the stale index used with a warning) or with one
line naming the file, never a traceback or an "internal error", and nothing but the index changes.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT
from hostile import Snapshot, advisor, assert_one_error_line, copy_example

ENTRY = ("---\nkind: tip\ntitle: \"Probe {n}\"\nsummary: \"s\"\nevidence: D\nsources: [https://example.com]\napplies_to: {{producer: [run]}}\n---\n\n"
         "## When\n\nx\n\n## How\n\nx\n\n## Caveats\n\nx\n\n## Sources\n\n- https://example.com — x\n")


def write_tip(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(ENTRY.format(n=name), encoding="utf-8")
    return path


@pytest.fixture
def home(advisor_home):
    db = advisor_home / "index.sqlite"
    env = {"ADVISOR_HOME": str(advisor_home), "ADVISOR_DB": str(db)}
    assert advisor("kb", "build", env=env).code == 0
    return advisor_home, db, env


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".not-an-index-" in p.name or p.name.endswith(
        ("-journal", "-wal", "-shm", ".tmp")))


def kill_writer_mid_transaction(db: Path) -> None:
    """A writer killed with -9 inside a transaction that spilled pages: a hot journal is left."""
    code = ("import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
            "c.execute('pragma cache_size=1'); c.execute('begin immediate'); "
            "c.execute(\"update entries set body = body || ' x'\"); os.kill(os.getpid(), 9)")
    subprocess.run([sys.executable, "-c", code, str(db)], check=False)


@pytest.mark.parametrize("journal", ["hot", "random"])
def test_a_journal_left_beside_the_index_breaks_no_command(home, journal):
    folder, db, env = home
    if journal == "hot":
        kill_writer_mid_transaction(db)
    else:
        Path(f"{db}-journal").write_bytes(random.Random(1).randbytes(8192))
    assert Path(f"{db}-journal").exists()
    for args in (("search", "nms"), ("kb", "list"), ("kb", "build", "--rebuild"), ("search", "nms")):
        run = advisor(*args, env=env)
        assert (run.code, run.stderr) == (0, ""), (args, run.stderr)
    assert "nms-on-npu" in run.stdout
    assert leftovers(folder) == []  # no journal and no 600 KB copy set aside per run


def test_a_no_op_build_removes_the_temporary_file_of_a_killed_build(home):
    folder, db, env = home
    stale = folder / ".index.sqlite.abc123.tmp"
    stale.write_bytes(b"x" * 1000)
    assert advisor("kb", "build", env=env).code == 0
    assert not stale.exists()


def test_kill_9_during_rebuild_keeps_the_previous_index(home):
    folder, db, env = home
    write_tip(folder / "kb" / "tips", "mine")
    assert advisor("kb", "build", env=env).code == 0
    command = [sys.executable, "-m", "opprof_advisor", "kb", "build", "--rebuild"]
    for delay in (0.2, 0.45, 0.7):
        process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        run = advisor("search", "probe", "mine", env=env)
        assert run.code == 0 and "mine" in run.stdout, (delay, run.stderr)
        assert sqlite3.connect(db).execute("pragma integrity_check").fetchone() == ("ok",)


@pytest.mark.parametrize("damage, repaired_by_itself", [
    ("update entries set tags='[['", False),
    ("delete from meta where key='search_tables'; update entries set symptoms='[1,2,3' where id='nms-on-npu'", False),
    ("delete from meta where key='content_hash'", True),
    ("update entries set operators='{not json'", False),
])
def test_a_damaged_index_gives_one_line_with_the_repair(home, damage, repaired_by_itself):
    folder, db, env = home
    conn = sqlite3.connect(db)
    conn.executescript(damage)
    conn.commit()
    conn.close()
    commands = [("search", "nms"), ("kb", "list")]
    if "operators" in damage:  # the rows suggest reads
        commands.append(("suggest", "--profile", ROOT / "data/examples/yolov8_torch_npu"))
    for args in commands:
        run = advisor(*args, env=env)
        if repaired_by_itself:
            assert run.code == 0 and "Traceback" not in run.stderr, (args, run.stderr)
            continue
        # Every command listed reads the damaged rows: each must refuse with the one line, never carry on.
        line = assert_one_error_line(run, db, "index is damaged")
        assert line.endswith("run `advisor kb build --rebuild`, which builds it again from the KB files")
    assert advisor("kb", "build", "--rebuild", env=env).code == 0
    assert advisor("search", "nms", env=env).code == 0 and advisor("kb", "list", env=env).code == 0


def test_a_folder_at_the_lock_path(advisor_home):
    db = advisor_home / "index.sqlite"
    env = {"ADVISOR_DB": str(db)}
    (advisor_home / "index.sqlite.lock").mkdir()
    for args in (("search", "nms"), ("kb", "list")):
        assert_one_error_line(advisor(*args, env=env), f"{db}.lock", "Is a directory", "remove that folder")


def test_a_stale_index_that_cannot_be_rebuilt_is_used_with_a_warning(home):
    folder, db, env = home
    os.unlink(f"{db}.lock")
    os.mkdir(f"{db}.lock")  # the lock cannot be taken, so the index cannot be rebuilt
    write_tip(folder / "kb" / "tips", "newer")
    run = advisor("search", "nms", env=env)
    assert run.code == 0 and "nms-on-npu" in run.stdout
    assert run.lines == [f"warning: {db}: the index is out of date and cannot be rebuilt (cannot create the lock "
                         "file: Is a directory); using it as it is, without the latest KB changes — make the folder "
                         "writable or point ADVISOR_DB at a writable file"]


@contextmanager
def mounted_tmpfs(where: Path, size: str):
    """A small tmpfs at ``where`` (needs root); the test is skipped where mounting is not allowed."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def make_read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


@pytest.mark.parametrize("state", ["empty", "built", "stale"])
def test_a_read_only_home(tmp_path, state):
    entry = write_tip(tmp_path / "drafts", "draft")
    with mounted_tmpfs(tmp_path / "ro", "4m") as home:
        env = {"ADVISOR_HOME": str(home), "ADVISOR_DB": str(home / "index.sqlite")}
        if state != "empty":
            assert advisor("kb", "build", env=env).code == 0
        if state == "stale":
            write_tip(home / "kb" / "tips", "later")
        make_read_only(home)
        example = ROOT / "data" / "examples" / "yolov8_torch_npu"
        for args in (("search", "nms"), ("suggest", "--profile", example)):
            run = advisor(*args, env=env)
            if state == "empty":
                assert_one_error_line(run, f"{home / 'index.sqlite'}.lock", "Read-only file system")
            else:
                assert run.code == 0, run.stderr
                assert run.lines == ([] if state == "built" else [
                    l for l in run.lines if l.startswith(f"warning: {home / 'index.sqlite'}: the index is out of date")])
                assert len(run.lines) == (0 if state == "built" else 1)
        assert_one_error_line(advisor("add", entry, env=env), "Read-only file system")
        assert_one_error_line(advisor("compare", example, ROOT / "data/examples/yolov8_torch_npu_nms_on_npu",
                                      "--applied", "nms-on-npu", env=env), "Read-only file system")


def test_a_full_disk_leaves_the_kb_and_the_index_as_they_were(tmp_path):
    entry = write_tip(tmp_path / "drafts", "draft")
    with mounted_tmpfs(tmp_path / "full", "16m") as disk:
        home = disk / "h"
        env = {"ADVISOR_HOME": str(home), "ADVISOR_DB": str(home / "index.sqlite")}
        assert advisor("kb", "build", env=env).code == 0
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\0" * max(0, free - 64 * 1024))  # 64 KB left: less than an index copy
        snapshot = Snapshot(home)
        assert_one_error_line(advisor("add", entry, env=env), home / "index.sqlite", "disk is full")
        changed = {path for path, (_, now) in snapshot.changes().items() if now is None or now[0] != "dir"}
        assert {path for path in changed if not path.endswith(".lock")} == set()
        assert list((home / "kb").rglob("*.md")) == []  # all or nothing: the entry is not left half-added
        run = advisor("search", "nms", env=env)
        assert (run.code, run.stderr) == (0, "")
        rest = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler-2").write_bytes(b"\0" * rest)  # nothing left for the outcomes database
        example = ROOT / "data" / "examples"
        line = assert_one_error_line(advisor("compare", example / "yolov8_torch_npu",
                                             example / "yolov8_torch_npu_nms_on_npu", "--applied", "nms-on-npu",
                                             env=env), home / "index.outcomes.db", "cannot write the outcomes database")
        assert "the outcomes recorded so far are intact" in line and "move the file aside" not in line


def test_the_outcomes_database_given_as_the_index_is_refused_untouched(home):
    folder, db, env = home
    example = ROOT / "data" / "examples"
    recorded = advisor("compare", example / "yolov8_torch_npu", example / "yolov8_torch_npu_nms_on_npu", "--applied",
                       "nms-on-npu", env=env)
    assert recorded.code == 0, recorded.stderr
    outcomes = folder / "index.outcomes.db"
    snapshot = Snapshot(folder)
    for args in (("search", "nms"), ("kb", "list"), ("kb", "build")):
        line = assert_one_error_line(advisor(*args, "--db", outcomes, env=env), outcomes)
        assert "not an opprof-advisor index: the database of recorded outcomes" in line
    assert snapshot.changes() == {}
    assert "nms-on-npu" in advisor("outcomes", "list", env=env).stdout


def test_a_profile_database_given_as_the_index_is_refused_and_its_folder_untouched(tmp_path, home):
    folder, db, env = home
    profile = copy_example("yolov8_torch_npu_db", tmp_path / "db_ascend_pt")
    profile_db = profile / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    snapshot = Snapshot(profile)
    line = assert_one_error_line(advisor("suggest", "--profile", profile, "--db", profile_db, env=env), profile_db)
    assert "an SQLite database of another program" in line and "left untouched" in line
    assert snapshot.changes() == {}
    assert advisor("profile", profile, env=env).code == 0
