"""Hostile output targets: advisor never writes into its input, never replaces a file it did not write
without --force, never drops a table it did not create, and a write is all or nothing."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import ROOT
from hostile import Snapshot, advisor_here as advisor, assert_one_error_line, copy_example
from opprof_advisor.cli.app import app

EXAMPLE = ROOT / "data" / "examples" / "yolov8_torch_npu"


def tables(path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        names = [row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")]
        return {name: conn.execute(f'select count(*) from "{name}"').fetchone()[0] for name in names}
    finally:
        conn.close()


def user_database(path, table="notes"):
    conn = sqlite3.connect(path)
    conn.execute(f"create table {table} (note)")
    conn.execute(f"insert into {table} values ('thesis draft v3')")
    conn.commit()
    conn.close()
    return path


def test_export_never_drops_a_table_it_did_not_create(tmp_path):
    mine = user_database(tmp_path / "mynotes.db")
    before = mine.read_bytes()
    for extra in ((), ("--force",)):
        run = advisor("profile", EXAMPLE, "--export", mine, *extra)
        assert_one_error_line(run, mine, "left untouched")
    assert "already has table(s) notes that advisor did not create" in run.stderr
    assert mine.read_bytes() == before


def test_export_into_another_programs_database_needs_force_and_keeps_its_tables(tmp_path):
    theirs = user_database(tmp_path / "theirs.db", table="mine")
    assert_one_error_line(advisor("profile", EXAMPLE, "--export", theirs), theirs,
                          "exists and is not an SQLite export written by advisor", "--force")
    assert tables(theirs) == {"mine": 1}
    assert advisor("profile", EXAMPLE, "--export", theirs, "--force").code == 0
    assert advisor("profile", EXAMPLE, "--export", theirs).code == 0  # now holds an export: replaced in place
    assert tables(theirs) == {"mine": 1, "kernels": 173, "op_types": 11, "symptoms": tables(theirs)["symptoms"],
                              "notes": tables(theirs)["notes"], "source": 1}


def test_export_onto_the_profiles_own_database_is_refused(tmp_path):
    profile = copy_example("yolov8_torch_npu_db", tmp_path / "db_ascend_pt")
    database = profile / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    snapshot = Snapshot(profile)
    for target in (database, profile / "new.sqlite"):
        for extra in ((), ("--force",)):
            assert_one_error_line(advisor("profile", profile, "--export", target, *extra), target,
                                  f"is {'the profile itself' if target == profile else 'inside the profile'}")
    assert snapshot.changes() == {}


def test_a_second_export_replaces_the_first_and_keeps_tables_added_to_it(tmp_path):
    target = tmp_path / "out.sqlite"
    assert advisor("profile", EXAMPLE, "--export", target).code == 0
    conn = sqlite3.connect(target)
    conn.execute("create view slow as select * from kernels")
    conn.execute("create table my_labels (op_type, label)")
    conn.commit()
    conn.close()
    other = ROOT / "data" / "examples" / "yolov8_torch_npu_nms_on_npu"
    run = advisor("profile", other, "--export", target)
    assert run.code == 0, run.stderr
    assert tables(target)["my_labels"] == 0 and tables(target)["kernels"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sqlite"]  # no temporary file left


def test_an_export_from_before_the_application_id_is_recognised(tmp_path):
    target = tmp_path / "old.sqlite"
    assert advisor("profile", EXAMPLE, "--export", target).code == 0
    conn = sqlite3.connect(target)
    conn.execute("pragma application_id = 0")
    conn.commit()
    conn.close()
    assert advisor("profile", EXAMPLE, "--export", target).code == 0


def test_an_interrupted_export_leaves_the_previous_one(tmp_path, runner, monkeypatch):
    from opprof_advisor.profile import export as profile_export

    target = tmp_path / "out.sqlite"
    assert runner.invoke(app, ["profile", str(EXAMPLE), "--export", str(target)]).exit_code == 0
    before = target.read_bytes()

    def killed(path, raw, profile):
        sqlite3.connect(path).execute("create table kernels (half)").connection.commit()
        raise KeyboardInterrupt  # as a kill in the middle of writing

    monkeypatch.setattr(profile_export, "_write", killed)
    runner.invoke(app, ["profile", str(EXAMPLE), "--export", str(target)])
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sqlite"]


@pytest.mark.parametrize("command", ["suggest", "profile", "compare"])
def test_an_html_report_never_replaces_the_profile_or_a_file_it_did_not_write(tmp_path, command):
    profile = copy_example("yolov8_torch_npu", tmp_path / "run_ascend_pt")
    kernels = profile / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    readme = tmp_path / "README.md"
    readme.write_text("my notes\n")
    head = {"suggest": ("suggest", "--profile", profile), "profile": ("profile", profile),
            "compare": ("compare", EXAMPLE, profile)}[command]
    snapshot = Snapshot(profile)
    for extra in ((), ("--force",)):
        assert_one_error_line(advisor(*head, "--format", "html", "--output", kernels, *extra), kernels,
                              "inside the profile", "never writes into what it reads")
    assert_one_error_line(advisor(*head, "--format", "html", "--output", readme), readme,
                          "exists and is not an HTML report written by advisor; it was left untouched", "--force")
    assert readme.read_text() == "my notes\n"
    assert snapshot.changes() == {}
    report = tmp_path / "report.html"
    for _ in range(2):  # an earlier report of ours is replaced without --force
        run = advisor(*head, "--format", "html", "--output", report)
        assert (run.code, run.stdout) == (0, f"wrote {report}\n"), run.stderr
    assert advisor(*head, "--format", "html", "--output", readme, "--force").code == 0
    assert readme.read_text().startswith("<!DOCTYPE html>")


def test_outcomes_export_replaces_only_an_earlier_export(tmp_path):
    mine = tmp_path / "kb-contribution.md"
    mine.write_text("important\n")
    assert_one_error_line(advisor("outcomes", "export", "--output", mine), mine, "is not an outcomes export")
    assert mine.read_text() == "important\n"
    target = tmp_path / "outcomes.md"
    for fmt in ("markdown", "json", "markdown"):
        run = advisor("outcomes", "export", "--format", fmt, "--output", target)
        assert run.code == 0 and run.stderr == f"0 outcome(s) written to {target}\n", run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb-contribution.md", "outcomes.md"]
