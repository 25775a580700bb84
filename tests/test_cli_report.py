"""`advisor report DOC.json`: a saved document renders exactly as the command that wrote it would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "data" / "examples" / "yolov8_torch_npu")
AFTER = str(ROOT / "data" / "examples" / "yolov8_torch_npu_nms_on_npu")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("report-index") / "advisor.db")


def run(runner, *args: str, code: int = 0):
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def save(runner, tmp_path: Path, name: str, *args: str) -> Path:
    path = tmp_path / name
    path.write_text(run(runner, *args, "--format", "json").stdout, encoding="utf-8")
    return path


@pytest.mark.parametrize("command", [
    ["suggest", "--profile", EXAMPLE, "--explain"], ["profile", EXAMPLE], ["compare", EXAMPLE, AFTER],
    ["roofline", str(ROOT / "data" / "examples" / "matmul_msopprof")], ["scan", str(ROOT / "tests" / "scan_fixture_repo")],
])
def test_a_saved_document_prints_the_table_its_command_printed(runner, tmp_path, db, command):
    args = [*command, "--db", db] if command[0] in ("suggest", "scan") else command
    saved = save(runner, tmp_path, "doc.json", *args)
    assert run(runner, "report", str(saved)).stdout == run(runner, *args).stdout


def test_the_html_and_markdown_of_a_saved_suggest_document_are_the_commands_own(runner, tmp_path, db):
    saved = save(runner, tmp_path, "advice.json", "suggest", "--profile", EXAMPLE, "--db", db)
    run(runner, "suggest", "--profile", EXAMPLE, "--db", db, "--format", "html", "-o", str(tmp_path / "direct.html"))
    run(runner, "report", str(saved), "--format", "html", "-o", str(tmp_path / "again.html"))
    page = (tmp_path / "again.html").read_text(encoding="utf-8")
    assert page == (tmp_path / "direct.html").read_text(encoding="utf-8")
    assert "Where the device time goes" in page and "ConcatD" in page  # the embedded profile document drew the chart
    markdown = run(runner, "suggest", "--profile", EXAMPLE, "--db", db, "--format", "markdown").stdout
    assert run(runner, "report", str(saved), "--format", "markdown").stdout == markdown


def test_a_profile_saved_with_top_says_how_many_rows_it_left_out(runner, tmp_path):
    saved = save(runner, tmp_path, "profile.json", "profile", EXAMPLE, "--top", "3")
    total = json.loads(saved.read_text())["op_types_total"]
    assert f"... {total - 3} more op type(s) (use --top)" in run(runner, "report", str(saved)).stdout


def test_a_document_older_than_the_family_totals_and_stake_share_still_renders(runner, tmp_path, db):
    saved = save(runner, tmp_path, "advice.json", "suggest", "--profile", EXAMPLE, "--db", db)
    doc = json.loads(saved.read_text())
    for suggestion in doc["suggestions"]:
        del suggestion["stake_share"]
    del doc["profile_document"]["families"]
    saved.write_text(json.dumps(doc), encoding="utf-8")
    run(runner, "report", str(saved), "--format", "html", "-o", str(tmp_path / "old.html"))
    page = (tmp_path / "old.html").read_text(encoding="utf-8")
    assert "Top operator families by share of device time" in page  # families, from op_types
    assert "<title>at stake: 21.9\u00a0%</title>" in page  # the stake share, from the evidence


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a JSON document"),
    ('{"schema": "something/else"}', "not an opprof-advisor document"),
    ('{"a": NaN}', "NaN is not a number JSON allows"),
])
def test_a_file_that_is_not_a_document_is_one_line_naming_it(runner, tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    result = run(runner, "report", str(bad), code=1)
    assert result.stderr.startswith(f"error: {bad}") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output


def test_a_format_the_document_has_no_renderer_for_says_which_it_has(runner, tmp_path):
    saved = save(runner, tmp_path, "profile.json", "profile", EXAMPLE)
    result = run(runner, "report", str(saved), "--format", "markdown", code=1)
    assert "no markdown rendering of an opprof-advisor profile document — use --format table or html or csv or json" \
        in result.stderr


def test_the_report_never_replaces_the_document_it_reads(runner, tmp_path):
    saved = save(runner, tmp_path, "profile.json", "profile", EXAMPLE)
    before = saved.read_bytes()
    result = run(runner, "report", str(saved), "--format", "html", "-o", str(saved), code=1)
    assert "advisor never writes into what it reads" in result.stderr and saved.read_bytes() == before
