"""Under --lang zh the assumptions of every expected gain (table --explain, markdown, HTML) and the reason each
remedy was left out (--explain) are said in Chinese.

The English text (and so the JSON document) stays what it was: an assumption or a reason is a Message, an
English string that remembers its templates. The check takes each such line of a Chinese report, drops what is
data (operator names, sources such as ``repo@commit:path``, ids with ``_`` or digits, the names kept in Chinese
text: KB, Amdahl, MFU, profile, producer names, the workload words of ``applies_to``) and fails on any English
word left over.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "data" / "examples"
BENCH = ROOT / "data" / "bench"
WIDE = {"COLUMNS": "400"}

#: Words a Chinese assumption or reason keeps as they are (names, and the words of applies_to, which are data).
KEPT_WORDS = {"KB", "KB-AUDIT", "Amdahl", "MFU", "op-mfu-calculator", "profile", "msprof", "msopprof", "Cube",
              "kernel", "device", "run", "phase", "family", "framework", "producer", "mode", "ranks", "training",
              "inference", "serving", "cnn", "detection", "transformer", "moe", "eager", "torch_npu", "multi",
              "single", "roofline", "bandwidth", "compute", "vector", "cube", "scalar", "loads", "stores"}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./@:+\-]*")


def english_words(text: str) -> list[str]:
    """The English words of ``text`` once data (names with ``_ . / @ :`` or digits, capitalised names such as
    operators, units of time) and the kept words go."""
    words = []
    for token in WORD.findall(re.sub(r"(\d) ?(?:µs|ms|s)\b", r"\1", text)):  # times keep their units
        token = token.rstrip(".:-")
        if re.search(r"[_./@:0-9-]", token) or token[0].isupper() or token in KEPT_WORDS:  # "-": KB ids
            continue
        words.append(token)
    return words


def suggest(runner, profile: Path, *args: str) -> str:
    result = runner.invoke(app, ["suggest", "--profile", str(profile), "--lang", "zh", "--explain", *args], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.stdout


def gains(runner, profile: Path) -> list[dict]:
    """The expected gains of the JSON document (written under --lang zh: it must not change with the language)."""
    result = runner.invoke(app, ["suggest", "--profile", str(profile), "--format", "json", "--lang", "zh"])
    return [s["expected_gain"] for s in json.loads(result.stdout)["suggestions"] if s["expected_gain"]]


def assumption_lines(text: str, fmt: str) -> list[str]:
    """What each row assumes: ``- 假设：…`` in markdown, ``…；假设 …`` on the --explain line of the table."""
    if fmt == "markdown":
        return [line.split("：", 1)[1] for line in text.splitlines() if line.startswith("- 假设：")]
    return [line.split("；假设 ", 1)[1] for line in text.splitlines() if "；假设 " in line]


def html_assumptions(runner, profile: Path, out: Path) -> list[str]:
    result = runner.invoke(app, ["--lang", "zh", "suggest", "--profile", str(profile), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = html.unescape(out.read_text(encoding="utf-8"))
    return re.findall(r'<p class="basis"><strong>[^<]*</strong> ([^<]*)</p>', page)


def record_nms_outcome(runner) -> None:
    result = runner.invoke(app, ["compare", str(EXAMPLES / "yolov8_torch_npu"),
                                 str(EXAMPLES / "yolov8_torch_npu_nms_on_npu"), "--applied", "nms-on-npu"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("profile, model, chinese", [
    (EXAMPLES / "yolov8_torch_npu", "model", "同一算子在 AI Core 上的耗时为 AI CPU 上的 10–50 %"),
    (BENCH / "kernel-matmul-mte2", "sourced", "MatMul 耗时的 17.52–58.98 %（kernel_time，hicann/asc-devkit@"),
    (BENCH / "gemm-low-block-dim", "model", "共 24 个 AI 核（1 轮，83% 的核时隙空闲）"),
    (BENCH / "kernel-matmul-cube", "model", "从可达性能的 12.6% 提升到 60%-70%"),
    (EXAMPLES / "yolov8_torch_npu", "measured", "实测 1 次：中位数 86 %"),
], ids=["model", "sourced", "block-dim-model", "roofline-model", "measured"])
def test_the_assumptions_are_chinese_in_the_table_the_markdown_and_the_html(runner, tmp_path, profile, model, chinese):
    if model == "measured":
        record_nms_outcome(runner)
    found = gains(runner, profile)
    assert model in {gain["model"] for gain in found}
    for fmt in ("table", "markdown", "html"):
        lines = (html_assumptions(runner, profile, tmp_path / "r.html") if fmt == "html"
                 else assumption_lines(suggest(runner, profile, "--format", fmt), fmt))
        assert len(lines) == len(found), (fmt, lines)
        assert any(chinese in line for line in lines), (fmt, lines)
        assert [(line, english_words(line)) for line in lines if english_words(line)] == []


def test_the_check_finds_each_english_clause_of_the_assumptions(runner):
    profiles = [EXAMPLES / "system_msprof", EXAMPLES / "yolov8_torch_npu", BENCH / "kernel-matmul-mte2",
                BENCH / "gemm-low-block-dim", BENCH / "kernel-matmul-cube"]
    for gain in (g for profile in profiles for g in gains(runner, profile)):
        assert english_words(gain["assumptions"]), gain["assumptions"]  # the English would fail the test above


def test_the_json_assumptions_stay_english_under_zh(runner):
    english = runner.invoke(app, ["suggest", "--profile", str(EXAMPLES / "yolov8_torch_npu"), "--format", "markdown"],
                            env=WIDE).stdout
    said = [gain["assumptions"] for gain in gains(runner, EXAMPLES / "yolov8_torch_npu")]
    assert said[0] == ("the same op on the AI Core takes 10–50 % of the AI CPU time (no work figure for it): "
                       "50–90 % of 1.15 ms")
    assert [line[len("- assumes: "):] for line in english.splitlines() if line.startswith("- assumes: ")] == said


def test_explain_says_why_a_remedy_was_left_out_in_chinese(runner):
    for fmt in ("table", "markdown"):
        text = suggest(runner, EXAMPLES / "yolov8_torch_npu", "--format", fmt)
        assert "适用于 family transformer, moe；本次运行：detection, cnn" in text, text
        assert not re.search(r"applies to family|this run:", text)
    document = json.loads(runner.invoke(app, ["suggest", "--profile", str(EXAMPLES / "yolov8_torch_npu"), "--explain",
                                              "--format", "json", "--lang", "zh"]).stdout)
    why = {item["id"]: item["why"] for item in document["left_out"]}
    assert why["torchair-reduce-overhead"] == "applies to family transformer, moe; this run: detection, cnn"
