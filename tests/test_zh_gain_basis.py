"""Under --lang zh the basis of every expected gain (table --explain, markdown, HTML) and each requirement
--explain lists are said in Chinese.

The English text (and so the JSON document) stays what it was: a basis or a requirement text is a Message,
an English string that remembers its templates. The check takes each such line of a Chinese report, drops
what is data (operator names, sources such as ``repo@commit:path``, ids with ``_`` or digits, the names
kept in Chinese text: KB, Amdahl, MFU, profile, producer names) and fails on any English word left over.
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

#: Words a Chinese basis or requirement reason keeps as they are.
KEPT_WORDS = {"KB", "KB-AUDIT", "Amdahl", "MFU", "op-mfu-calculator", "profile", "msprof", "msopprof", "Cube"}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./@:+\-]*")


def english_words(text: str) -> list[str]:
    """The English words of ``text`` once data (names with ``_ . / @ :`` or digits, capitalised names such as
    operators, units of time) and the kept words go."""
    words = []
    for token in WORD.findall(re.sub(r"(\d) ?(?:µs|ms|s)\b", r"\1", text)):  # times keep their units
        token = token.rstrip(".:-")
        if re.search(r"[_./@:0-9]", token) or token[0].isupper() or token in KEPT_WORDS:
            continue
        words.append(token)
    return words


def basis_lines(text: str) -> list[str]:
    """The gain basis of each suggestion, from a table (--explain) or a markdown report."""
    return [line.split("：", 1)[1] for line in text.splitlines()
            if line.strip().startswith(("收益依据：", "- 依据："))]


def requirement_reasons(text: str) -> list[str]:
    """What each requirement line says after the requirement itself (``满足（...）`` / ``不满足（...）``)."""
    return re.findall(r"：(不?满足（.*?）)(?:；|; |$)", text, flags=re.M)


def suggest(runner, profile: Path, *args: str) -> str:
    result = runner.invoke(app, ["suggest", "--profile", str(profile), "--lang", "zh", "--explain", *args], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.stdout


def expected_gains(runner, profile: Path) -> list[dict]:
    """The expected gains of the JSON document (written under --lang zh: it must not change with the language)."""
    result = runner.invoke(app, ["suggest", "--profile", str(profile), "--format", "json", "--lang", "zh"])
    return [s["expected_gain"] for s in json.loads(result.stdout)["suggestions"] if s["expected_gain"]]


def english_basis(runner, profile: Path) -> list[str]:
    return [gain["basis"] for gain in expected_gains(runner, profile)]


def html_basis(runner, profile: Path, out: Path) -> list[str]:
    """The basis paragraph of each card of the Chinese HTML report."""
    result = runner.invoke(app, ["--lang", "zh", "suggest", "--profile", str(profile), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = html.unescape(out.read_text(encoding="utf-8"))
    return re.findall(r'<p class="basis"><strong>[^<]*</strong> ([^<]*)</p>', page)


def record_outcomes(runner) -> None:
    """One outcome without an operator-scope KB range (NMS), one blended with a KB range (matmul tiling)."""
    for before, after, entry, *force in (("yolov8_torch_npu", "yolov8_torch_npu_nms_on_npu", "nms-on-npu"),
                                         ("system_msprof", "matmul_msopprof", "matmul-tiling", "--force")):
        result = runner.invoke(app, ["compare", str(EXAMPLES / before), str(EXAMPLES / after), "--applied", entry,
                                     *force])
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("profile, kind, chinese", [
    (EXAMPLES / "matmul_msopprof", "sourced", "MatMulV3 耗时的 23–33 %（kernel_time，hicann/catlass@"),
    (BENCH / "gemm-low-block-dim", "sourced", "（Amdahl 定律）; profile 中没有迹象表明存在它所解决的问题"),
    (BENCH / "kernel-matmul-mte2", "model estimate", "模型估算：MatmulCustom 达到可达性能的 42%；目标为可达性能的 60%-70%"
                                                    "（KB-AUDIT N67（op-mfu-calculator 的 MFU 区间"),
    (EXAMPLES / "yolov8_torch_npu", "calibrated", "实测 1 次：中位数 86 %（范围 86–86 %）（KB 中没有按算子耗时给出的范围）; "
                                                  "× NonMaxSuppressionV3 的耗时 1.15 ms（Amdahl 定律）"),
    (EXAMPLES / "system_msprof", "calibrated", "KB 给出的范围 13–57 %，按 25% 的权重向实测结果靠拢（实测 1 次：中位数 96 %"),
], ids=["sourced", "sourced-loose", "model-estimate", "calibrated-observed-only", "calibrated-blended"])
def test_the_gain_basis_is_chinese_in_the_table_the_markdown_and_the_html(runner, tmp_path, profile, kind, chinese):
    if kind == "calibrated":
        record_outcomes(runner)
    gains = expected_gains(runner, profile)
    assert kind in {gain["kind"] for gain in gains}
    for fmt in ("table", "markdown", "html"):
        lines = (html_basis(runner, profile, tmp_path / "r.html") if fmt == "html"
                 else basis_lines(suggest(runner, profile, "--format", fmt)))
        assert len(lines) == len(gains), fmt
        assert any(chinese in line for line in lines), (fmt, lines)
        assert [(line, english_words(line)) for line in lines if english_words(line)] == []


def test_the_check_finds_each_english_clause_of_the_basis(runner):
    record_outcomes(runner)
    profiles = [EXAMPLES / "system_msprof", EXAMPLES / "yolov8_torch_npu", BENCH / "kernel-matmul-mte2",
                BENCH / "gemm-low-block-dim"]
    bases = [basis for profile in profiles for basis in english_basis(runner, profile)]
    for basis in bases:
        for clause in basis.split("; "):
            assert english_words(clause), clause  # every English clause of a basis would fail the test above


def test_the_json_basis_stays_english_under_zh(runner):
    record_outcomes(runner)
    bases = english_basis(runner, EXAMPLES / "system_msprof")
    assert ("KB range 13–57 % moved 25% toward the observed 1 time: median 96 % (range 96–96 %); × the 3.31 ms of "
            "MatMulV2 (Amdahl)") in bases
    english = runner.invoke(app, ["suggest", "--profile", str(EXAMPLES / "system_msprof"), "--format", "markdown"],
                            env=WIDE).stdout
    assert [line for line in english.splitlines() if line.startswith("- basis: ")] == [f"- basis: {b}" for b in bases]


@pytest.mark.parametrize("profile, reason", [
    (EXAMPLES / "system_msprof", "不满足（本次运行为推理）"),
    (EXAMPLES / "system_msprof", "满足（运行了 MatMul）"),
    (EXAMPLES / "yolov8_torch_npu", "不满足（profile 中未出现）"),
    (BENCH / "kernel-matmul-mte2", "满足（由 msopprof 生成）"),
    (BENCH / "kernel-matmul-mte2", "满足（发现 mte2_bound）"),
    (BENCH / "resnet50-train-transdata", "不满足（本次运行为训练）"),
    (BENCH / "gpt2-allreduce-exposed", "满足（在 "),
], ids=["workload-inference", "operator", "symptom-missing", "producer", "symptom-found", "workload-training",
        "unit"])
def test_explain_says_each_requirement_in_chinese(runner, profile, reason):
    for fmt in ("table", "markdown"):
        text = suggest(runner, profile, "--format", fmt)
        reasons = requirement_reasons(text)
        assert any(r.startswith(reason) for r in reasons), (fmt, reasons)
        assert [r for r in reasons if english_words(r)] == []
        refused = [line for line in text.splitlines() if "：不予建议：" in line]
        assert refused and not [line for line in refused if re.search(r"\b(?:not suggested|not met|none of)\b", line)]
    document = json.loads(runner.invoke(app, ["suggest", "--profile", str(profile), "--explain", "--format", "json",
                                              "--lang", "zh"]).stdout)
    texts = [r["text"] for s in document["suggestions"] for r in s["requirements"]]
    assert texts and all(re.search(r": (?:not )?met \(", text) for text in texts)


@pytest.mark.parametrize("profile, words", [
    (BENCH / "kernel-matmul-mte2", "适用时可节省 219 µs（模型估算）× 置信度 0.1（描述性证据）"),
    (BENCH / "gemm-low-block-dim", "适用时可节省 18.0 ms（有出处）× 置信度 1（问题证据）"),
    (BENCH / "gemm-low-block-dim", "× 先验 0.03（描述性证据）"),
], ids=["model-estimate", "sourced", "no-figure"])
def test_the_score_line_names_the_kind_of_gain_and_evidence_in_chinese(runner, profile, words):
    for fmt in ("table", "markdown"):
        scores = [line for line in suggest(runner, profile, "--format", fmt).splitlines() if "得分 " in line]
        assert any(words in line for line in scores), (fmt, scores)
        assert not [line for line in scores if re.search(r"\b(?:sourced|calibrated|model estimate|problem|descriptive|"
                                                         r"loose) ?(?:evidence)?\b", line)]
