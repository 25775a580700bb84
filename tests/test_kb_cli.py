"""The knowledge-base commands through the real CLI, each with a temporary ADVISOR_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kb_helpers import GUIDE_FIELDS, body_for, without_near_duplicate_warnings, write_entry, write_text

from opprof_advisor.cli.app import app
from opprof_advisor.core.vocabulary import KINDS

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_FILES = sorted(p for p in (ROOT / "kb").rglob("*.md") if p.name != "README.md")


def invoke(runner, *args):
    return runner.invoke(app, [str(arg) for arg in args])


def add_case(tmp_path, name="my-yolox-port", title="YOLOX port stalls in post-processing"):
    source = write_entry(tmp_path / "drafts", name, kind="case", title=title, operators=["NMS"],
                         symptoms=["nms_cpu"], related=["nms-on-npu"], body=body_for("case"), op_mix=["Conv2D", "NMS"],
                         **GUIDE_FIELDS)
    return source


# ---------------------------------------------------------------------------------------------
# search
# ---------------------------------------------------------------------------------------------


def test_search_json_has_the_documented_shape(runner):
    result = invoke(runner, "search", "nms", "--format", "json", "--top", "3")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert list(document) == ["schema", "query", "results", "corrected", "did_you_mean"]
    assert (document["corrected"], document["did_you_mean"]) == (None, [])
    assert document["schema"] == "opprof-advisor/search/1"
    assert document["query"] == "nms"
    assert len(document["results"]) == 3
    assert list(document["results"][0]) == ["id", "kind", "title", "score", "operators", "tags"]
    assert document["results"][0]["id"] == "nms-on-npu"


def test_search_table_lists_hits_in_order(runner):
    result = invoke(runner, "search", "flash", "attention")
    assert result.exit_code == 0
    lines = [line for line in result.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert lines[0].split()[:3] == ["1", "flash-attention", "recipe"]


def test_search_with_a_typo_says_what_it_searched(runner):
    result = invoke(runner, "search", "nsm")
    assert result.stdout.splitlines()[0] == "showing results for 'nms'"


def test_search_without_hits_says_did_you_mean_and_exits_0(runner, tmp_path):
    invoke(runner, "add", write_entry(tmp_path, "zebra-stripes", title="Zebra stripes"))
    result = invoke(runner, "search", "zebra", "--kind", "tip")
    assert result.exit_code == 0
    assert result.stdout.startswith("no entries match 'zebra'; did you mean zebra-stripes")


def test_search_with_query_syntax_exits_0_without_traceback(runner):
    result = invoke(runner, "search", 'AND ("')
    assert result.exit_code == 0
    assert "Traceback" not in result.output
    assert result.stdout.strip() == "no entries match 'AND (\"'; see `advisor kb list` for every entry"


def test_search_unknown_operator_is_one_error_line(runner):
    result = invoke(runner, "search", "x", "--operator", "Frobnicate")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: unknown operator 'Frobnicate'")


def test_search_honours_db_option(runner, tmp_path):
    db = tmp_path / "elsewhere" / "index.db"
    assert invoke(runner, "search", "nms", "--db", db).exit_code == 0
    assert db.is_file()


# ---------------------------------------------------------------------------------------------
# show
# ---------------------------------------------------------------------------------------------


def test_show_renders_gain_evidence_and_sources(runner, tmp_path):
    source = write_entry(tmp_path / "drafts", "shown", title="A shown entry", evidence="D",
                         gain={"low_pct": 25, "high_pct": 35, "metric": "op_time", "scope": "operators",
                               "source": "https://example.org/guide"})
    assert invoke(runner, "add", source).exit_code == 0
    result = invoke(runner, "show", "shown")
    assert result.exit_code == 0
    out = result.stdout
    assert "A shown entry" in out
    assert "25–35 % of the matched operators' op_time — https://example.org/guide" in out
    assert "D: second-hand" in out
    assert "https://example.org/guide" in out
    assert "When to use" in out  # the body, rendered


def test_show_json(runner):
    result = invoke(runner, "show", "nms-on-npu", "--format", "json")
    entry = json.loads(result.stdout)["entry"]
    assert entry["id"] == "nms-on-npu"
    assert entry["operators"][0] == "NMS"


def test_show_unknown_id_suggests_and_exits_1(runner):
    result = invoke(runner, "show", "nms-on-np")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no knowledge-base entry with id 'nms-on-np' — did you mean nms-on-npu")


# ---------------------------------------------------------------------------------------------
# add
# ---------------------------------------------------------------------------------------------


def test_add_then_search_finds_it_at_once(runner, tmp_path, advisor_home):
    result = invoke(runner, "add", add_case(tmp_path))
    assert result.exit_code == 0
    target = advisor_home / "kb" / "cases" / "my-yolox-port.md"
    assert result.stdout.strip() == f"added my-yolox-port (case) → {target}"
    found = json.loads(invoke(runner, "search", "yolox", "--format", "json").stdout)
    assert found["results"][0]["id"] == "my-yolox-port"


def test_add_broken_file_lists_every_problem_and_changes_nothing(runner, tmp_path, advisor_home):
    invoke(runner, "kb", "build")
    db = advisor_home / "advisor.db"
    before = db.read_bytes()
    source = write_text(tmp_path, "broken.md", "---\nkind: case\ntitle: t\nsummary: s\nevidence: E\n"
                        "sources: [https://example.org/a]\nsymptoms: [zzq]\n---\n\n## Symptoms\n")
    result = invoke(runner, "add", source)
    assert result.exit_code == 1
    sections = "(sections: Symptoms, Diagnosis, Fix, Result, Sources)"
    assert result.stderr.splitlines() == [
        f"error: {source}:1: missing required key 'applies_to'",
        f"error: {source}:5: evidence 'E' is not one of A, B, C, D",
        f"error: {source}:7: unknown symptom 'zzq' (see opprof_advisor/core/vocabulary.py SYMPTOMS)",
        f"error: {source}:9: a case needs a `## Diagnosis` section {sections}",
        f"error: {source}:9: a case needs a `## Fix` section {sections}",
        f"error: {source}:9: a case needs a `## Result` section {sections}",
        f"error: {source}:9: a case needs a `## Sources` section {sections}",
    ]
    assert not (advisor_home / "kb").exists()
    assert db.read_bytes() == before


def test_add_existing_id_needs_replace(runner, tmp_path):
    source = add_case(tmp_path)
    assert invoke(runner, "add", source).exit_code == 0
    again = invoke(runner, "add", source)
    assert again.exit_code == 1
    assert "already exists — use --replace" in again.stderr
    source.write_text(source.read_text().replace("YOLOX port stalls", "YOLOX port fixed"))
    assert invoke(runner, "add", source, "--replace").exit_code == 0
    shown = json.loads(invoke(runner, "show", "my-yolox-port", "--format", "json").stdout)
    assert shown["entry"]["title"] == "YOLOX port fixed in post-processing"


def test_add_refuses_a_path_id(runner, tmp_path, advisor_home):
    source = write_entry(tmp_path, "sneaky", id="../../etc/x")
    result = invoke(runner, "add", source)
    assert result.exit_code == 1
    assert "is not a slug" in result.stderr
    assert not (advisor_home / "kb").exists()


def test_add_missing_file(runner, tmp_path):
    result = invoke(runner, "add", tmp_path / "nope.md")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {tmp_path / 'nope.md'}: no such file — give the path of a markdown entry"


def test_eight_concurrent_adds_all_end_up_indexed(tmp_path, advisor_home):
    env = {**os.environ, "ADVISOR_HOME": str(advisor_home)}
    sources = [add_case(tmp_path, f"parallel-case-{n}", f"Parallel case {n}") for n in range(8)]
    processes = [subprocess.Popen([sys.executable, "-m", "opprof_advisor", "add", str(source)], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for source in sources]
    # the eight entries differ by their number only: each may warn that it nearly duplicates another
    outcomes = [(process.wait(timeout=120), without_near_duplicate_warnings(process.stderr.read().decode()))
                for process in processes]
    for process in processes:
        process.stdout.close()
        process.stderr.close()
    assert outcomes == [(0, "")] * 8
    command = [sys.executable, "-m", "opprof_advisor", "kb", "list", "--kind", "case", "--format", "json"]
    listed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    ids = {entry["id"] for entry in json.loads(listed.stdout)["entries"]}
    assert {f"parallel-case-{n}" for n in range(8)} <= ids


# ---------------------------------------------------------------------------------------------
# kb check / build / list / stats
# ---------------------------------------------------------------------------------------------


def test_kb_check_lists_problems_and_exits_1(runner, tmp_path):
    write_entry(tmp_path, "good", **GUIDE_FIELDS)
    bad = write_entry(tmp_path, "bad", symptoms=["nms_cpu", "slowness"], related=["good", "missing"], **GUIDE_FIELDS)
    result = invoke(runner, "kb", "check", tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{bad}:7: unknown symptom 'slowness' (see opprof_advisor/core/vocabulary.py SYMPTOMS)"]
    assert result.stderr.strip() == "2 file(s) checked: 1 problem(s) in 1 file(s)"


def test_kb_check_dangling_related_and_json(runner, tmp_path):
    path = write_entry(tmp_path, "alone", related=["nowhere-at-all"], **GUIDE_FIELDS)
    result = invoke(runner, "kb", "check", tmp_path, "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "schema": "opprof-advisor/kb-check/1", "files": 1,
        "problems": [{"path": str(path), "line": 7, "message": "related id 'nowhere-at-all' names no entry"}],
        "warnings": [],
    }


def test_kb_check_related_may_point_into_the_installed_kb(runner, tmp_path):
    write_entry(tmp_path, "mine", related=["nms-on-npu"], **GUIDE_FIELDS)
    result = invoke(runner, "kb", "check", tmp_path)
    assert result.exit_code == 0
    assert result.stderr.strip() == "1 file(s) checked: no problems"


def test_kb_check_missing_folder(runner, tmp_path):
    result = invoke(runner, "kb", "check", tmp_path / "absent")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {tmp_path / 'absent'}: no such file or folder"


def test_kb_check_passes_on_the_shipped_kb(runner):
    result = invoke(runner, "kb", "check", ROOT / "kb")
    assert result.stdout == ""
    assert result.exit_code == 0


def test_kb_build_and_rebuild(runner, advisor_home):
    first = invoke(runner, "kb", "build")
    assert first.exit_code == 0
    assert first.stdout.startswith(f"indexed {len(SHIPPED_FILES)} entries from {len(SHIPPED_FILES)} files")
    again = invoke(runner, "kb", "build", "--rebuild")
    assert again.stdout.startswith(f"indexed {len(SHIPPED_FILES)} entries")
    assert (advisor_home / "advisor.db").is_file()


def test_kb_list_json_covers_every_shipped_file(runner):
    document = json.loads(invoke(runner, "kb", "list", "--format", "json").stdout)
    assert document["schema"] == "opprof-advisor/kb-list/1"
    assert sorted(entry["id"] for entry in document["entries"]) == sorted(p.stem for p in SHIPPED_FILES)
    assert {entry["kind"] for entry in document["entries"]} == set(KINDS)


def test_kb_list_kind_filter_and_table(runner):
    document = json.loads(invoke(runner, "kb", "list", "--kind", "tip", "--format", "json").stdout)
    assert {entry["kind"] for entry in document["entries"]} == {"tip"}
    assert document["count"] == len([p for p in SHIPPED_FILES if p.parent.name == "tips"])
    table = invoke(runner, "kb", "list", "--kind", "recipe").stdout
    assert "nms-on-npu" in table
    assert "yolov8s-migration" not in table


def test_kb_stats(runner, tmp_path):
    add = invoke(runner, "add", write_entry(tmp_path, "mine", symptoms=["nms_cpu"]))
    assert add.exit_code == 0
    document = json.loads(invoke(runner, "kb", "stats", "--format", "json").stdout)
    assert document["entries"] == len(SHIPPED_FILES) + 1
    assert document["by_origin"] == {"builtin": len(SHIPPED_FILES), "user": 1}
    assert sum(document["by_kind"].values()) == document["entries"]
    table = invoke(runner, "kb", "stats").stdout
    assert "symptom coverage" in table and "operator-family coverage" in table
    assert document["answering"]["nms_cpu"][-1:] == ["mine"] or "mine" in document["answering"]["nms_cpu"]
    assert ("every symptom has at least 2 answering entries" in table) == (document["uncovered_symptoms"] == [])


@pytest.mark.parametrize("command", [["search"], ["show"], ["add"], ["kb"], ["kb", "check"], ["kb", "build"],
                                     ["kb", "list"], ["kb", "stats"]])
def test_every_command_has_help(runner, command):
    result = invoke(runner, *command, "--help")
    assert result.exit_code == 0
    assert "Usage" in result.stdout


def test_kb_check_default_allows_user_overrides_of_builtin_ids(runner, advisor_home):
    write_entry(advisor_home / "kb", "nms-on-npu", title="My own NMS notes", related=["flash-attention"],
                **GUIDE_FIELDS)
    result = invoke(runner, "kb", "check")
    assert "duplicate id" not in result.stdout
    assert result.stderr.strip().startswith(f"{len(SHIPPED_FILES) + 1} file(s) checked")
    found = json.loads(invoke(runner, "show", "nms-on-npu", "--format", "json").stdout)["entry"]
    assert (found["title"], found["origin"]) == ("My own NMS notes", "user")


def test_a_file_that_is_not_an_index_is_kept_and_named_in_one_warning_line(tmp_path):
    # Through the real CLI in a subprocess: pytest captures Python warnings in-process.
    import subprocess
    import sys

    from conftest import ROOT

    mine = tmp_path / "mine.db"
    mine.write_bytes(b"my own notes, not an index")
    done = subprocess.run([sys.executable, "-m", "opprof_advisor", "kb", "list", "--db", str(mine), "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ADVISOR_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    [kept] = [p for p in tmp_path.iterdir() if p.name.startswith("mine.db.not-an-index-")]
    assert kept.read_bytes() == b"my own notes, not an index"
    assert done.stderr == (f"warning: {mine} was not an opprof-advisor index (corrupt or another program's file);"
                           f" kept it as {kept.name} and built a new index\n")
