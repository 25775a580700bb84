"""The suggest/2 document in the terminal, markdown, the sheets and the MCP summary, rendered from the hand-made
document of ``html_docs`` (one row per finding, its KB remedies under it): no ranking is run here."""

from __future__ import annotations

import copy

import pytest

from html_docs import yolo_suggest_doc
from opprof_advisor.core.i18n import set_lang
from opprof_advisor.render.markdown import suggest_markdown
from opprof_advisor.render.phrases import gain_line
import io

from opprof_advisor.render.console import safe_console
from opprof_advisor.render.plain import cell_len
from opprof_advisor.render.text.styled import rich_item
from opprof_advisor.render.sheets import render_csv, suggest_tables
from opprof_advisor.render.text.suggest import suggest_table


@pytest.fixture(autouse=True)
def english():
    set_lang("en")
    yield
    set_lang("en")


def table_text(doc: dict, width: int, **options) -> str:
    """The terminal table as Rich prints it ``width`` columns wide."""
    stream = io.StringIO()
    console = safe_console(highlight=False, soft_wrap=False, file=stream, width=width)
    for item in suggest_table(doc, width=width, **options):
        console.print(rich_item(item))
    return stream.getvalue().rstrip("\n")


def cells(text: str, column: int) -> list[str]:
    """Column ``column`` of each table row, its wrapped lines joined by spaces."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(("┡", "├")):
            rows.append([])
        elif line.startswith("│") and rows:
            part = line.split("│")[column + 1].strip()
            if part:
                rows[-1].append(part)
    return [" ".join(parts) for parts in rows]


def test_the_table_shows_each_finding_its_lead_remedy_and_the_gain_with_its_basis():
    text = table_text(yolo_suggest_doc(), 200)
    assert "torch_npu run · inference · detection (CNN) · fp16 · Ascend910B3 · 1 device" in text.splitlines()[1]
    header = next(line for line in text.splitlines() if "Finding and first step" in line)
    assert [h.strip() for h in header.strip("┃ ").split("┃")] == [
        "#", "Finding and first step", "At stake", "Expected gain", "Evidence"]
    findings = cells(text, 1)
    assert findings[0] == ("NonMaxSuppressionV3 runs on the AI CPU: 8.69 ms, 18.0 % of device time "
                           "→ Run NMS on the NPU with npu_batch_nms instead of the AI CPU (recipe-nms-on-npu, recipe) "
                           "1. Replace the per-image NMS call with torch_npu.npu_batch_nms(...) "
                           "also: tip-nms-single-cpu-call the rest: advisor show recipe-nms-on-npu")
    assert findings[2] == ("TransData converts formats 96 times: 2.41 ms, 5.0 % of device time → Cut TransData by "
                           "keeping tensors in one format between convolutions (tip-transdata-nd-format, tip) "
                           "the rest: advisor show tip-transdata-nd-format")  # no first step: no "1." line
    assert cells(text, 2) == ["8.69 ms 18.0 % of the device time", "1.45 ms 3.0 % of the device time",
                              "2.41 ms 5.0 % of the device time"]
    assert cells(text, 3) == ["10.8–16.2 % 5.21–7.82 ms model", "1.5–2.7 % 724 µs – 1.30 ms sourced", "no modelled gain"]
    evidence = cells(text, 4)
    assert evidence[0] == ("NonMaxSuppressionV3 18.0 % of device time (8.69 ms) symptoms: nms_cpu, aicpu_fallback "
                           "confidence: high")
    assert evidence[2].endswith("confidence: low")
    lines = text.splitlines()
    after_table = lines[max(i for i, line in enumerate(lines) if line.startswith("└")) + 1]
    assert after_table == "nothing else above 3 % of device time"
    assert "left out" not in text


@pytest.mark.parametrize("width", [64, 80, 100])
def test_the_table_fits_the_terminal_and_names_a_column_it_leaves_out(width):
    text = table_text(yolo_suggest_doc(), width)
    assert max(cell_len(line) for line in text.splitlines()) <= width
    assert "Finding and first step" in text and "Expected" in text and "10.8–16.2 %" in text
    if "Evidence" not in text:
        assert "narrow terminal: Evidence left out" in text


def test_explain_says_what_each_gain_assumes_why_each_remedy_applies_and_what_was_left_out():
    text = table_text(yolo_suggest_doc(), 200, explain=True)
    assert ("1. aicpu-work: expected gain 10.8–16.2 % (5.21–7.82 ms), model; assumes an AI Core kernel takes 10–40 % "
            "of the AI CPU time") in text
    assert ("   lead remedy recipe-nms-on-npu (recipe, evidence C, relevance 0.71): NMS on the AI CPU in a detection "
            "run") in text
    assert "   alternative tip-nms-single-cpu-call (tip, evidence D, relevance 0.40): NMS runs once per image" in text
    assert "3. transdata: no modelled gain" in text
    assert "left out: tip-vllm-ascend-graph-mode: applies to framework vllm-ascend; this run: torch_npu" in text


def test_a_gain_without_a_figure_says_what_the_row_says_instead():
    assert gain_line(None) == "no modelled gain"
    assert gain_line(None, suggestion={"assumptions": "0 to 80 % of 800 µs if the gaps are launches"}) == \
        "0 to 80 % of 800 µs if the gaps are launches"
    assert gain_line({"low_us": 200.0, "high_us": 200.0, "model": "measured"}) == "200 µs, measured"
    # an older gain: its kind read as the model it is
    assert gain_line({"low_pct": 1.0, "high_pct": 2.0, "saved_us_low": 10.0, "saved_us_high": 20.0,
                      "kind": "model estimate"}) == "1.0–2.0 % (10.0–20.0 µs), model"


def test_the_table_in_chinese():
    doc = yolo_suggest_doc()
    doc["suggestions"][0]["zh"] = {"title": "NonMaxSuppressionV3 在 AI CPU 上执行"}
    doc["suggestions"][0]["remedies"][0]["zh"] = {"title": "在 NPU 上做 NMS", "first_step": "改用 npu_batch_nms"}
    set_lang("zh")
    text = table_text(doc, 200)
    assert "发现项与第一步" in text
    assert cells(text, 1)[0] == ("NonMaxSuppressionV3 在 AI CPU 上执行 → 在 NPU 上做 NMS（recipe-nms-on-npu，方法） "
                                 "1. 改用 npu_batch_nms 另见：tip-nms-single-cpu-call 其余步骤：advisor show "
                                 "recipe-nms-on-npu")
    assert cells(text, 3) == ["10.8–16.2 % 5.21–7.82 ms 模型估算", "1.5–2.7 % 724 µs – 1.30 ms 有出处", "无收益模型"]
    assert cells(text, 4)[0].endswith("置信度：高")


def test_the_markdown_has_a_section_per_finding_with_its_remedies():
    doc = yolo_suggest_doc()
    text = suggest_markdown(doc)
    assert "Workload: torch_npu run · inference · detection (CNN) · fp16 · Ascend910B3 · 1 device." in text
    first = text.split("## 1. ")[1].split("## 2. ")[0]
    assert first.startswith("NonMaxSuppressionV3 runs on the AI CPU: 8.69 ms, 18.0 % of device time\n")
    for line in ("- at stake: 8.69 ms (18.0 % of the device time)",
                 "- expected gain: 10.8–16.2 % (5.21–7.82 ms), model",
                 "- assumes: an AI Core kernel takes 10–40 % of the AI CPU time: 60–90 % of the NMS time saved "
                 "(Amdahl bound)",
                 "- confidence: high",
                 "- remedy: **Run NMS on the NPU with npu_batch_nms instead of the AI CPU** (`recipe-nms-on-npu`, "
                 "recipe, evidence grade C)",
                 "  - first step: Replace the per-image NMS call with torch_npu.npu_batch_nms(...) (the rest: "
                 "`advisor show recipe-nms-on-npu`)",
                 "- alternative: Fallback when the NPU NMS kernels do not fit: one CPU call per batch "
                 "(`tip-nms-single-cpu-call`, tip, evidence grade D)"):
        assert line in first.splitlines(), line
    third = text.split("## 3. ")[1]
    assert "- expected gain: no modelled gain" in third and "- assumes" not in third.split("## ")[0]
    assert "nothing else above 3 % of device time" in text and "## Left out" not in text
    assert "## Left out\n\n- `tip-vllm-ascend-graph-mode`: applies to framework vllm-ascend" in suggest_markdown(
        doc, explain=True)


def test_the_sheets_hold_a_row_per_finding_and_a_row_per_remedy():
    doc = yolo_suggest_doc()
    tables = {name: (columns, rows) for name, columns, rows in suggest_tables(doc)}
    assert list(tables) == ["suggestions", "remedies", "evidence", "similar cases", "left out", "notes"]
    columns, rows = tables["suggestions"]
    first = dict(zip(columns, rows[0]))
    assert (first["id"], first["gain_low_us"], first["gain_high_us"], first["gain_low_pct"], first["gain_high_pct"],
            first["gain_model"], first["lead_remedy"], first["alternatives"], first["confidence"]) == (
        "aicpu-work", 5_211.0, 7_816.5, 10.8, 16.2, "model", "recipe-nms-on-npu", "tip-nms-single-cpu-call", "high")
    assert first["gain_assumptions"].startswith("an AI Core kernel takes")
    assert dict(zip(columns, rows[2]))["gain_model"] is None  # no gain
    columns, rows = tables["remedies"]
    remedies = [dict(zip(columns, row)) for row in rows]
    assert [(r["rank"], r["finding"], r["order"], r["role"], r["id"], r["evidence_grade"]) for r in remedies] == [
        (1, "aicpu-work", 1, "lead", "recipe-nms-on-npu", "C"), (1, "aicpu-work", 2, "alternative",
                                                                 "tip-nms-single-cpu-call", "D"),
        (2, "aicpu-dtype", 1, "lead", "pattern-aicpu-int64-cast", "B"),
        (3, "transdata", 1, "lead", "tip-transdata-nd-format", "D")]
    assert render_csv(doc).splitlines()[0] == ",".join(tables["suggestions"][0])


def test_the_mcp_summary_names_the_top_finding_its_gain_and_its_lead_remedy():
    from opprof_advisor.mcp.server import summarize

    doc = yolo_suggest_doc()
    text = summarize(doc)
    assert ("3 finding(s). Top: NonMaxSuppressionV3 runs on the AI CPU: 8.69 ms, 18.0 % of device time (8.69 ms at "
            "stake, 18.0 % of the device time); expected gain 10.8–16.2 % (5.21–7.82 ms), model; lead remedy: Run NMS "
            "on the NPU with npu_batch_nms instead of the AI CPU (recipe-nms-on-npu, recipe, evidence C); first step: "
            "Replace the per-image NMS call with torch_npu.npu_batch_nms(...); alternatives: tip-nms-single-cpu-call; "
            "the rest: advisor show recipe-nms-on-npu.") in text
    assert "Nothing else above 3 % of device time." in text
    empty = copy.deepcopy(doc)
    empty["suggestions"] = []
    assert "No finding: nothing in this profile stands out." in summarize(empty)
