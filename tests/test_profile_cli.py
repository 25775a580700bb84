"""`advisor profile` through the real CLI: table, JSON, --top, --export."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest
from profile_fixtures import kernel, write_ascend_pt

from opprof_advisor.cli.app import app

KD = "ASCEND_PROFILER_OUTPUT/kernel_details.csv"


def _csv_rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_table_reports_ai_cpu_cast_of_the_2023_sample(runner, real_profiles):
    folder = real_profiles / "msprof-analyze-ut/pt_train_2023_ascend_pt"
    result = runner.invoke(app, ["profile", str(folder), "--top", "5"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"{folder}  (torch-npu-text)"
    symptom = next(line for line in lines if line.strip().startswith("aicpu_fallback"))
    assert "7 AI CPU kernel(s) of Cast" in symptom
    assert "... 39 more op type(s) (use --top)" in lines
    header = next(i for i, line in enumerate(lines) if line.startswith("op type "))
    table_rows = lines[header + 1:lines.index("... 39 more op type(s) (use --top)")]
    assert len(table_rows) == 5 and table_rows[0].startswith("hcom_broadcast_ ")


def test_table_on_level0_says_the_unit_cannot_be_judged(runner, real_profiles):
    folder = real_profiles / "msinsight-torch-npu/text/level0/rank0_ascend_pt"
    result = runner.invoke(app, ["profile", str(folder)])
    assert result.exit_code == 0, result.output
    assert "aicpu_fallback" not in result.stdout
    assert ("cannot judge AI CPU fallback: the unit (Task Type / Accelerator Core) is not recorded at profiler level0 "
            "(collect with profiler_level=Level1)") in result.stdout


def test_json_document_sorted_and_limited(runner, real_profiles):
    folder = real_profiles / "msinsight-torch-npu/text/level1/rank0_ascend_pt"
    rows = _csv_rows(folder / KD)
    result = runner.invoke(app, ["profile", str(folder), "--format", "json", "--top", "3"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema"] == "opprof-advisor/profile/1"
    assert document["source"]["format"] == "torch-npu-text" and document["source"]["profiler_level"] == "Level1"
    assert document["device_time_us"] == pytest.approx(sum(float(r["Duration(us)"]) for r in rows), abs=1e-3)
    times = [row["time_us"] for row in document["op_types"]]
    assert len(times) == 3 and times == sorted(times, reverse=True)
    assert set(document["op_types"][0]) == {"op_type", "family", "unit", "count", "time_us", "share", "bound",
                                            "busiest_pipe", "busiest_ratio", "block_dim", "bound_why"}
    # the step split of the run's own step_trace_time.csv: 8873.8 + 101963.2 + 25744.1 = 136581.0 us
    total = document["steps"]["total"]
    assert document["steps"]["source"] == "step_trace_time.csv"
    assert (total["computing_us"], total["exposed_us"], total["free_us"], total["stage_us"]) == (
        8873.756, 101963.203, 25744.05, 136581.0)
    assert "transdata_overhead" in [s["id"] for s in document["symptoms"]]


def test_export_writes_kernels_and_op_types(runner, tmp_path, real_profiles):
    folder = real_profiles / "msprof-analyze-ut/pt_train_2023_ascend_pt"
    rows = _csv_rows(folder / KD)
    target = tmp_path / "profile.sqlite"
    for _ in range(2):  # a second export replaces the first
        result = runner.invoke(app, ["profile", str(folder), "--export", str(target), "--format", "json"])
        assert result.exit_code == 0, result.output
    assert f"wrote {len(rows)} kernels and 44 op types to {target}" in result.stderr
    with sqlite3.connect(target) as db:
        count, total = db.execute("select count(*), sum(duration_us) from kernels").fetchone()
        assert count == len(rows) and total == pytest.approx(sum(float(r["Duration(us)"]) for r in rows), abs=1e-3)
        cpu = db.execute("select count(*) from kernels where unit = 'ai_cpu' and op_type = 'Cast'").fetchone()[0]
        assert cpu == sum(1 for r in rows if r["Accelerator Core"] == "AI_CPU")
        top = db.execute("select op_type, unit from op_types order by time_us desc limit 1").fetchone()
        assert top == ("hcom_broadcast_", "communication")
        assert json.loads(db.execute("select json from source").fetchone()[0])["schema"] == "opprof-advisor/profile/1"


def test_generated_profile_with_nms_on_ai_cpu(runner, tmp_path):
    rows = [kernel("NonMaxSuppressionV3", "NonMaxSuppressionV3", "AI_CPU", 900.0, dtypes="FLOAT;INT32"),
            kernel("Conv2D", "Conv2D", "AI_CORE", 1100.0, aic_mac_ratio=0.9, aic_mte2_ratio=0.5)]
    folder = write_ascend_pt(tmp_path, rows)
    result = runner.invoke(app, ["profile", str(folder), "--format", "json"])
    document = json.loads(result.stdout)
    ids = {s["id"]: s for s in document["symptoms"]}
    assert ids["nms_cpu"]["share"] == pytest.approx(0.45) and ids["aicpu_fallback"]["op_types"] == ["NonMaxSuppressionV3"]
    assert document["op_types"][0]["bound"] == "cube"
    assert document["source"]["torch_npu"] == "2.7.1"


def test_help_lists_the_options(runner):
    result = runner.invoke(app, ["profile", "--help"])
    assert result.exit_code == 0
    for option in ("--top", "--format", "--export"):
        assert option in result.stdout


def test_progress_bar_appears_only_after_the_delay(monkeypatch):
    from opprof_advisor.cli import output

    shown = []
    monkeypatch.setattr(output, "_can_show_progress", lambda: True)
    monkeypatch.setattr(output, "PROGRESS_DELAY_S", 3600.0)
    with output.DelayedProgress("x") as progress:
        progress(1, 10)
        shown.append(progress.bar)
    monkeypatch.setattr(output, "PROGRESS_DELAY_S", 0.0)
    with output.DelayedProgress("x") as progress:
        progress(5, 10)
        shown.append(progress.bar)
        assert progress.bar.tasks[0].completed == 5
    assert shown[0] is None and shown[1] is not None


def test_html_report_and_output_only_with_html(runner, tmp_path, real_profiles):
    folder = real_profiles / "msprof-analyze-ut/pt_train_2023_ascend_pt"
    target = tmp_path / "report.html"
    result = runner.invoke(app, ["profile", str(folder), "--format", "html", "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"wrote {target}"
    page = target.read_text(encoding="utf-8")
    assert "hcom_broadcast_" in page and "aicpu_fallback" in page
    misuse = runner.invoke(app, ["profile", str(folder), "--output", str(target)])
    assert misuse.exit_code == 2
