"""`--format csv` and `--format xlsx`: the same rows as the JSON document, written under the output rules."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
YOLO = ROOT / "data" / "examples" / "yolov8_torch_npu"
AFTER = ROOT / "data" / "examples" / "yolov8_torch_npu_nms_on_npu"
openpyxl = pytest.importorskip("openpyxl")
pytest.importorskip("xlsxwriter")

COMMANDS = {
    "suggest": (["suggest", "--profile", str(YOLO)], "suggestions"),
    "profile": (["profile", str(YOLO), "--top", "6"], "op_types"),
    "compare": (["compare", str(YOLO), str(AFTER)], "op_types"),
}


def _json(runner, argv):
    result = runner.invoke(app, argv + ["--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_csv_holds_the_rows_of_the_json(runner, command):
    argv, key = COMMANDS[command]
    document = _json(runner, argv)
    result = runner.invoke(app, argv + ["--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == len(document[key]) > 1
    first = document[key][0]
    id_key = "id" if command == "suggest" else "op_type"
    assert [r[id_key] for r in rows] == [item[id_key] for item in document[key]]
    number = "stake_us" if command == "suggest" else ("time_us" if command == "profile" else "after_us")
    assert float(rows[0][number]) == first[number]


def _sheet(path: Path, name: str) -> list[dict]:
    book = openpyxl.load_workbook(path, read_only=True)
    rows = list(book[name].iter_rows(values_only=True))
    return [dict(zip(rows[0], row)) for row in rows[1:]]


def test_the_suggest_workbook_holds_the_rows_of_the_json(runner, tmp_path):
    argv, _ = COMMANDS["suggest"]
    document = _json(runner, argv)
    out = tmp_path / "advice.xlsx"
    result = runner.invoke(app, argv + ["--format", "xlsx", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert openpyxl.load_workbook(out).sheetnames == ["suggestions", "remedies", "evidence", "similar cases",
                                                      "left out", "notes"]
    suggestions = _sheet(out, "suggestions")
    assert [(r["rank"], r["id"], r["stake_us"], r["stake_share"], r["gain_high_us"], r["gain_model"])
            for r in suggestions] == [(s["rank"], s["id"], s["stake_us"], s["stake_share"],
                                       s["expected_gain"]["high_us"], s["expected_gain"]["model"])
                                      for s in document["suggestions"]]
    remedies = _sheet(out, "remedies")
    assert [r["id"] for r in remedies] == [r["id"] for s in document["suggestions"] for r in s["remedies"]]
    assert suggestions[0]["matched_symptoms"] == "; ".join(document["suggestions"][0]["matched_symptoms"])
    evidence = _sheet(out, "evidence")
    assert [(r["id"], r["op_type"], r["time_us"]) for r in evidence] == [
        (s["id"], e["op_type"], e["time_us"]) for s in document["suggestions"] for e in s["evidence"]]
    assert [r["note"] for r in _sheet(out, "notes")] == document["notes"]


def test_the_profile_and_compare_workbooks_hold_the_rows_of_the_json(runner, tmp_path):
    for command, sheet, keys in (("profile", "op types", ("op_type", "unit", "count", "time_us", "share")),
                                 ("compare", "op families", ("op_type", "before_us", "after_us", "delta_pct"))):
        argv, key = COMMANDS[command]
        document = _json(runner, argv)
        out = tmp_path / f"{command}.xlsx"
        assert runner.invoke(app, argv + ["--format", "xlsx", "-o", str(out)]).exit_code == 0
        assert [tuple(r[k] for k in keys) for r in _sheet(out, sheet)] == [
            tuple(item[k] for k in keys) for item in document[key]]


def test_a_workbook_replaces_only_its_own_file_and_never_writes_into_the_profile(runner, tmp_path):
    argv, _ = COMMANDS["profile"]
    out = tmp_path / "p.xlsx"
    assert runner.invoke(app, argv + ["--format", "xlsx", "-o", str(out)]).exit_code == 0
    assert runner.invoke(app, argv + ["--format", "xlsx", "-o", str(out)]).exit_code == 0  # ours: replaced
    foreign = tmp_path / "budget.xlsx"
    foreign.write_bytes(b"not ours")
    refused = runner.invoke(app, argv + ["--format", "xlsx", "-o", str(foreign)])
    assert refused.exit_code == 1 and "exists and is not a workbook written by advisor" in refused.stderr
    assert foreign.read_bytes() == b"not ours"
    inside = runner.invoke(app, argv + ["--format", "xlsx", "-o", str(YOLO / "p.xlsx")])
    assert inside.exit_code == 1 and "never writes into what it reads" in inside.stderr
    assert not (YOLO / "p.xlsx").exists()
    missing = runner.invoke(app, argv + ["--format", "xlsx"])
    assert missing.exit_code == 1 and "--format xlsx needs --output FILE.xlsx" in missing.stderr
