"""The HTML reports in Chinese: every sentence a page writes itself is Chinese under zh; English is unchanged.

What stays English on a Chinese page is what the documents carry as English data (sources, tags,
gain bases, KB texts without a ``zh`` block, operator names, paths, ids) and the names Ascend
writes in English (AI Core, AI Vector, TFLOP/s ...). The check below takes the visible text of a
page (outside <style>), drops those, and fails on any English word of a sentence left over.
"""

from __future__ import annotations

import ast
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from html_golden import GOLDEN_HTML, PAGES, comparable, document, render_page
from opprof_advisor.cli.app import app
from opprof_advisor.core.i18n import set_lang

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "data" / "examples"
CJK = re.compile(r"[\u4e00-\u9fff]")

#: Words no Chinese sentence of the page has, and nearly every English one does.
#: (The Chinese catalogue keeps a few English terms as they are: profile, device, host, kernel, rank, block.)
ENGLISH = re.compile(r"\b(?:the|of|is|are|and|to|for|not|no|with|on|in|by|per|from|at|or|this|what|each|all|than|"
                     r"its|it|be|has|have|can|cannot|none|found|shows?|matched|saved?|share|below|above|before|"
                     r"after|first|rest|score|evidence|gain|suggestions?|findings?|files?|lines?|bar|colour|sorted|"
                     r"showing|advice|verdict|result|unknown)\b", re.I)

#: Document keys whose values a page shows as they are: data, not the page's own sentences.
DATA_KEYS = {"sources", "source", "basis", "tags", "operators", "path", "root", "replacement", "op", "error",
             "title", "summary", "first_step", "id", "op_type", "family", "chip", "format", "kernel", "show",
             "category", "support", "url"}

#: Words and names that stay as they are in Chinese (commands, hardware and unit names, file names).
KEPT = re.compile(r"`[^`]*`|<code>.*?</code>|advisor suggest PATH|advisor suggest --profile PATH|AI Core \(cube\)|AI Core|AI Vector|AI CPU|"
                  r"https?://\S+|\S*[/_.=@]\S*|\b[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b")


class VisibleText(HTMLParser):
    """The text a reader sees or hears: text outside <style>/<script>, plus aria-label and alt attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hidden, self.chunks, self.raw = 0, [], []

    def handle_starttag(self, tag, attrs):
        self.hidden += tag in ("style", "script")
        self.chunks += [value for key, value in attrs if key in ("aria-label", "alt") and value]

    def handle_endtag(self, tag):
        self.hidden -= tag in ("style", "script")

    def handle_data(self, data):
        if not self.hidden:
            self.raw.append(data.replace("\xa0", " "))
        if not self.hidden and data.strip():
            self.chunks.append(data.replace("\xa0", " ").strip())


def visible_text(page: str) -> list[str]:
    """The visible text nodes of a page, each stripped."""
    parser = VisibleText()
    parser.feed(page)
    return parser.chunks


def page_text(page: str) -> str:
    """The visible text of a page run together as a reader sees it (inline elements joined without a space)."""
    parser = VisibleText()
    parser.feed(page)
    return re.sub(r"\s+", " ", "".join(parser.raw))


#: Keys of sentences the core writes as Messages (said in Chinese from their templates); a document read back
#: from JSON, or written by hand, holds them as plain English text, which no page can translate.
MESSAGE_KEYS = {"notes", "why", "detail", "reason", "assumptions", "why_applies", "line", "rest"}


def data_strings(value, keys: set[str], key: str = "") -> set[str]:
    """The strings a document holds under ``keys`` (recursively)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            found |= data_strings(v, keys, k if k in keys or not key else key)
    elif isinstance(value, list):
        for item in value:
            found |= data_strings(item, keys, key)
    elif isinstance(value, str) and key in keys and value.strip():
        # A page may show a long text cut to its first clause, with its URLs shortened, or a note's
        # "cannot judge X:" head in bold apart from the rest.
        head, colon, rest = value.partition(":")
        parts = re.split(r"https?://\S+|;", value) + ([head + colon, rest] if colon else [])
        found |= {part.strip() for part in parts if part.strip()} | {value.strip()}
    return found


def english_left(page: str, *docs: dict, keys: set[str] = DATA_KEYS) -> list[str]:
    """The visible text of ``page`` that still reads as English once the documents' data and kept names are gone."""
    data = sorted(set().union(*(data_strings(doc, keys) for doc in docs)), key=len, reverse=True)
    left = []
    for chunk in visible_text(page):
        cut = re.sub(r"^#\d+ ", "", chunk[:-1]) if chunk.endswith("…") else None
        if cut and any(text.startswith(cut) for text in data):  # a chart label cut short
            continue
        for text in data:
            chunk = chunk.replace(text, " ")
        chunk = KEPT.sub(" ", chunk)
        if ENGLISH.search(chunk):
            left.append(chunk)
    return left


@pytest.fixture
def zh():
    set_lang("zh")
    yield
    set_lang("en")


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_english_page_is_byte_for_byte_the_recorded_one(name):
    set_lang("en")
    recorded = (GOLDEN_HTML / f"{name}.html").read_text(encoding="utf-8")
    page = comparable(render_page(name))
    assert page == recorded, "the English page changed: run tests/html_golden.py --write only if that is meant"
    if not name.startswith(("suggest-yolov8", "scan-fixture")):  # the others hold no Chinese data at all
        assert not CJK.search(page)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_chinese_page_writes_no_english_sentence_of_its_own(name, zh):
    doc_name, profile_name = PAGES[name]
    docs = [document(doc_name)] + ([document(profile_name)] if profile_name else [])
    page = render_page(name)
    assert '<html lang="zh-CN">' in page
    assert english_left(page, *docs, keys=DATA_KEYS | MESSAGE_KEYS) == []


def test_the_check_finds_an_english_sentence_left_on_a_chinese_page(zh):
    page = render_page("suggest").replace("优先处理", "Fix first").replace("匹配原因", "Why it matches")
    left = english_left(page, document("yolo_suggest_doc"), document("yolo_profile_doc"), keys=DATA_KEYS | MESSAGE_KEYS)
    assert set(left) == {"Fix first", "#1 · Fix first", "Why it matches"}


def test_the_chinese_suggest_page_says_its_labels_in_chinese(zh):
    page = render_page("suggest")
    text = page_text(page)
    for words in ("yolov8s_ascend_pt 的调优建议", "优先处理", "预计可节省设备耗时的 10.8–16.2 %（5.21–7.82 ms）。",
                  "依据：模型估算。", "最多 18.0 %：即所涉及的设备耗时占比。",
                  "工作负载：torch_npu run · inference · detection (CNN) · fp16 · Ascend910B3 · 1 device",
                  "首选办法：Run NMS on the NPU with npu_batch_nms instead of the AI CPU（recipe-nms-on-npu）。",
                  "下方按优先级列出 3 个发现项；证据、解决办法和来源见各卡片。",
                  "NonMaxSuppressionV3 占设备耗时的 18.0 %（8.69 ms），在 AI CPU 上执行", "各发现项的预期收益范围",
                  "首个发现项", "所涉及的耗时", "证据 C：官方指南或样例", "置信度：高", "节省 5.21–7.82 ms",
                  "依据：有出处", "无收益模型", "假设：", "解决办法", "备选办法", "适用原因：", "技巧 · 证据 D",
                  "匹配原因", "设备耗时占比最高的算子族",
                  "设备耗时 48.2 ms", "Profiler 级别", "非极大值抑制在 AI CPU / host 上执行", "发现的问题",
                  "您的 profile 与 YOLOv8s inference on Atlas 800I A2 with NMS on the AI CPU 相似（0.83）"):
        assert words in text, words
    assert "Tuning advice" not in page and "Fix first" not in page


def test_compare_scan_and_roofline_pages_say_their_labels_in_chinese(zh):
    compare = page_text(render_page("compare"))
    assert "设备耗时 48.2 ms → 41.0 ms（−15.0 %，更快）" in compare
    assert "变化最大：NMS 8.69 ms → 1.44 ms，从 AI CPU 移到了 AI Core。" in compare
    assert "已消失" in compare and "新增" in compare and "优化前（浅色）" in compare
    scan = page_text(render_page("scan"))
    assert "5 个发现项，其中 3 个有 CANN 支持风险" in scan and "已扫描 7 个文件，1 个无法解析。" in scan
    assert "有 CPU 回退风险" in scan and "静态扫描不给出收益" in scan
    roofline = page_text(render_page("roofline-matmul_msopprof"))
    assert "matmul_msopprof 的 Roofline" in roofline and "计算强度（flop/byte）" in roofline


def test_a_card_says_its_evidence_reasons_in_chinese_and_the_json_stays_english(runner, tmp_path):
    out = tmp_path / "r.html"
    profile = str(EXAMPLES / "yolov8_torch_npu")
    result = runner.invoke(app, ["--lang", "zh", "suggest", "--profile", profile, "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = page_text(out.read_text(encoding="utf-8"))
    assert "NMS 在 ai_cpu 上执行，1 次; aicpu_fallback：" in text
    assert "; nms_cpu：非极大值抑制（NonMaxSuppressionV3）在 AI CPU 上执行" in text
    assert "on ai_cpu" not in text and " launch;" not in text and "launches" not in text
    document_text = runner.invoke(app, ["suggest", "--profile", profile, "--format", "json", "--lang", "zh"]).stdout
    why = json.loads(document_text)["suggestions"][0]["evidence"][0]["why"]
    assert why.startswith("NMS on ai_cpu, 1 launch; ") and "; nms_cpu: non-maximum suppression (NonMaxSuppressionV3)" in why


@pytest.mark.parametrize("args", [
    ["suggest", "--profile", str(EXAMPLES / "yolov8_torch_npu")],
    ["profile", str(EXAMPLES / "system_msprof")],
    ["roofline", str(EXAMPLES / "matmul_msopprof")],
    ["compare", str(EXAMPLES / "yolov8_torch_npu"), str(EXAMPLES / "yolov8_torch_npu_nms_on_npu")],
    ["scan", str(ROOT / "tests" / "scan_fixture_repo")],
], ids=lambda args: args[0])
def test_every_command_writes_its_html_report_in_chinese(runner, tmp_path, args):
    out = tmp_path / "r.html"
    result = runner.invoke(app, [*args, "--format", "html", "-o", str(out)], env={"LANG": "zh_CN.UTF-8"})
    assert result.exit_code == 0, result.output
    doc = json.loads(runner.invoke(app, [*args, "--format", "json"]).stdout)
    page = out.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page
    assert english_left(page, doc, doc.get("profile_document") or {}) == []


def test_no_message_is_marked_inside_an_f_string():
    # Babel reads an f-string as one token on Python 3.11: a _("...") inside one never reaches the catalogue.
    inside = []
    for path in (ROOT / "opprof_advisor").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                inside += [f"{path.name}:{call.lineno}" for call in ast.walk(node) if isinstance(call, ast.Call)
                           and isinstance(call.func, ast.Name) and call.func.id in ("_", "N_", "M_")
                           and call.args and isinstance(call.args[0], ast.Constant)]
    assert inside == []


def test_a_chart_label_is_cut_by_its_width_so_chinese_titles_fit_like_english_ones():
    from opprof_advisor.render.html.charts import label_chars
    from opprof_advisor.render.html.page import char_width, shorten

    limit = label_chars(True)
    english = "#1 Run NMS (non-maximum suppression) on the NPU instead of the CPU"
    assert shorten(english, limit) == english[:limit - 1] + "…"  # as before: one column per character
    chinese = shorten("#1 把 NMS（非极大值抑制）从 CPU / AI CPU 挪到 NPU 上", limit)
    # A Han glyph is one em (13 px at the chart's 13 px), a Latin character about 8 px: 1.7 columns.
    assert chinese == "#1 把 NMS（非极大值抑制）从 C…"
    assert sum(map(char_width, chinese)) <= limit < sum(map(char_width, chinese[:-1] + "PU"))
