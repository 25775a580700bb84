"""HTML reports: parsed with the stdlib HTML parser, checked for sections, numbers, links and escaping."""

from __future__ import annotations

import json
import os
import re
import stat
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from html_docs import (
    DEVICE_US,
    HIASCEND_NMS,
    NMS_NOTE_PIPES,
    NOTE_CORES,
    ULTRALYTICS_PR,
    YOLO_ROWS,
    compare_doc,
    hostile_profile_doc,
    hostile_suggest_doc,
    kernel_compare_doc,
    scan_doc,
    yolo_profile_doc,
    yolo_suggest_doc,
)
from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.render import render
from opprof_advisor.render.html.compare import render_compare
from opprof_advisor.render.html.page import default_report_path, write_report
from opprof_advisor.render.html.profile import render_profile
from opprof_advisor.render.html.scan import render_scan
from opprof_advisor.render.html.suggest import render_suggest

BENCH_YOLO = Path(__file__).resolve().parent.parent / "data" / "bench" / "yolov8s-nms-aicpu"

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    """One element of the parsed page."""

    def __init__(self, tag: str, attrs: dict, parent: "Node | None"):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return re.sub(r"\s+", " ", "".join(parts).replace("\xa0", " "))

    def iter(self):
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list["Node"]:
        return [n for n in self.iter() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes())]

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class TreeBuilder(HTMLParser):
    """A small DOM from html.parser; svg <title> and self-closing svg tags are handled."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.current = self.root
        self.doctype = ""

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.current is builder.root, f"unclosed <{builder.current.tag}>"
    assert builder.doctype.lower() == "doctype html"
    return builder.root


def section(root: Node, key: str) -> Node:
    found = [n for n in root.find_all("section") if n.attrs.get("id") == key]
    assert len(found) == 1, f"section {key!r}: {len(found)} found"
    return found[0]


def profile_facts(root: Node) -> dict[str, str]:
    """The label -> value pairs of the profile summary."""
    divs = section(root, "profile").find_all("dl")[0].find_all("div")
    return {div.find_all("dt")[0].text(): div.find_all("dd")[0].text() for div in divs}


def plain(text: str) -> str:
    """Text with the no-break spaces the formatter puts between number and unit made plain."""
    return text.replace("\xa0", " ")


def pct(share: float) -> str:
    """The percentage text a reader expects for a 0..1 share (computed here, not by the module)."""
    return f"{share * 100:.1f} %"


def family_shares() -> dict[str, float]:
    totals: dict[str, float] = {}
    for _, family, _, _, time_us, _ in YOLO_ROWS:
        totals[family] = totals.get(family, 0.0) + time_us / DEVICE_US
    return totals


@pytest.fixture(scope="module")
def suggest_page() -> str:
    return render_suggest(yolo_suggest_doc(), yolo_profile_doc())


@pytest.fixture(scope="module")
def suggest_tree(suggest_page) -> Node:
    return parse(suggest_page)


# --------------------------------------------------------------------------------------------
# suggest: sections, numbers, hierarchy
# --------------------------------------------------------------------------------------------


def test_suggest_page_has_the_sections_in_reading_order(suggest_tree):
    html_el = suggest_tree.find_all("html")[0]
    assert html_el.attrs["lang"] == "en"
    assert suggest_tree.find_all("title")[0].text() == "Tuning advice for yolov8s_ascend_pt"
    assert [h.text() for h in suggest_tree.find_all("h1")] == ["Tuning advice for yolov8s_ascend_pt"]
    headings = [h.text() for h in suggest_tree.find_all("h2")]
    assert headings == [
        "NonMaxSuppressionV3 runs on the AI CPU: 8.69 ms, 18.0 % of device time",  # the verdict: the first finding
        "Profile summary",
        "Where the device time goes",
        "Expected gain per finding",
        "Findings",
        "Similar cases",
        "What the data cannot tell",
    ]


def test_verdict_names_nms_on_ai_cpu_what_it_saves_and_the_remedy_to_start_with(suggest_tree):
    verdict = suggest_tree.find_all("section", "verdict")[0].text()
    assert "Fix first" in verdict
    assert "Workload: torch_npu run · inference · detection (CNN) · fp16 · Ascend910B3 · 1 device" in verdict
    assert f"NonMaxSuppressionV3 takes {pct(8_685 / DEVICE_US)} of device time (8.69 ms) on the AI CPU" in verdict
    assert "runs on the AI CPU" in verdict
    assert "Expected to save 10.8–16.2 % of device time (5.21–7.82 ms)" in verdict
    assert "Basis: model." in verdict and "At most 18.0 %" in verdict
    assert ("Lead remedy: Run NMS on the NPU with npu_batch_nms instead of the AI CPU (recipe-nms-on-npu). "
            "First step: Replace the per-image NMS call with torch_npu.npu_batch_nms(...)") in verdict
    assert "3 findings ranked below" in verdict


def test_profile_summary_shows_format_chip_versions_and_times(suggest_tree):
    facts = profile_facts(suggest_tree)
    assert facts["Format"] == "torch-npu-text"
    assert facts["Chip"] == "Ascend910B3"
    assert facts["CANN"] == "8.0.RC2"
    assert facts["torch_npu"] == "2.1.0.post6"
    assert facts["Device time"] == "48.2 ms"
    assert facts["Compute"] == "48.2 ms (100.0 %)"
    assert facts["Communication"] == "0 µs (0.0 %)"
    symptoms = section(suggest_tree, "profile").text()
    assert "nms_cpu" in symptoms and "transdata_overhead" in symptoms


def test_family_chart_orders_families_by_share_and_colours_them_by_unit(suggest_tree):
    block = section(suggest_tree, "families")
    chart = block.find_all("figure")[0]  # the families; the op types follow (see the top-operators test)
    rows = chart.find_all("g", "row")
    labels = [row.find_all("text")[0].text() for row in rows]
    expected = sorted(family_shares().items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert labels == [family for family, _ in expected]
    bars = {label: [b.attrs["class"] for b in row.find_all("rect", "bar")] for label, row in zip(labels, rows)}
    assert bars["NMS"] == ["bar u-cpu"]
    assert bars["Conv2D"] == ["bar u-core"]
    assert bars["Cast"] == ["bar u-vector", "bar u-cpu"]  # one family on two units: stacked
    values = {label: row.find_all("text", "value")[0].text() for label, row in zip(labels, rows)}
    assert values["NMS"] == f"{pct(family_shares()['NMS'])} · 8.69 ms · AI CPU"
    legend = [li.text() for li in block.find_all("ul", "legend")[0].find_all("li")]
    assert legend == ["AI Core", "AI Vector", "AI CPU"]
    rest = sorted(family_shares().values(), reverse=True)[10:]
    assert f"{len(rest)} smaller families together: {pct(sum(rest))}" in chart.text()


def test_gain_chart_has_one_row_per_finding_with_range_and_ceiling(suggest_tree):
    rows = section(suggest_tree, "gains").find_all("g", "row")
    assert [r.find_all("text")[0].text()[:3] for r in rows] == ["#1 ", "#2 ", "#3 "]
    first = rows[0]
    assert [b.attrs["class"] for b in first.find_all("rect", "bar")] == ["bar ceiling", "bar g-first"]
    assert first.find_all("text", "value")[0].text() == "10.8–16.2 % · 5.21–7.82 ms · model"
    assert rows[1].find_all("text", "value")[0].text() == "1.5–2.7 % · 724 µs – 1.30 ms · sourced"
    assert rows[2].find_all("text", "value")[0].text() == "no modelled gain"
    # The ceiling bar spans exactly the matched share; the range bar starts at low_pct on the same axis.
    ceiling, gain = first.find_all("rect", "bar")
    scale = float(ceiling.attrs["width"]) / 18.0
    assert float(gain.attrs["width"]) == pytest.approx((16.2 - 10.8) * scale, abs=0.15)


def test_one_card_per_finding_the_first_prominent(suggest_tree):
    cards = section(suggest_tree, "suggestions").find_all("article")
    assert len(cards) == 3
    assert ["first" in c.classes() for c in cards] == [True, False, False]
    first = cards[0].text()
    assert "#1 · fix first" in first
    assert cards[0].find_all("h3")[0].text() == "NonMaxSuppressionV3 runs on the AI CPU: 8.69 ms, 18.0 % of device time"
    assert "confidence: high" in first
    assert "10.8–16.2 %" in first and "5.21–7.82 ms saved" in first and "basis: model" in first
    assert ("Assumes: an AI Core kernel takes 10–40 % of the AI CPU time: 60–90 % of the NMS time saved "
            "(Amdahl bound)") in first
    evidence = [td.text() for td in cards[0].find_all("td")]
    assert evidence == ["NonMaxSuppressionV3", "8.69 ms", "18.0 %", "runs on the AI CPU (symptoms nms_cpu, aicpu_fallback)"]
    # the lead remedy with its grade, why it applies and its first step; the alternative below it
    remedy = first.split("Remedy", 1)[1]
    assert remedy.index("Run NMS on the NPU with npu_batch_nms instead of the AI CPU") < remedy.index("Alternatives")
    assert "evidence C: official guide or sample" in remedy and "Why it applies: NMS on the AI CPU" in remedy
    assert "First step: Replace the per-image NMS call" in remedy and "advisor show recipe-nms-on-npu" in remedy
    alternatives = remedy.split("Alternatives", 1)[1]
    assert "Fallback when the NPU NMS kernels do not fit" in alternatives and "tip-nms-single-cpu-call" in alternatives
    assert "tip · evidence D" in alternatives
    assert "basis: sourced" in cards[1].text()
    assert "no modelled gain" in cards[2].text() and "confidence: low" in cards[2].text()
    assert "evidence D: second-hand" in cards[2].text()
    assert "First step" not in cards[2].text()  # the remedy has none: no empty line for it
    after = section(suggest_tree, "suggestions").text().split("Cut TransData")[-1]
    assert "nothing else above 3 % of device time" in after
    assert "Left out" not in after  # only with --explain


def test_the_explained_page_lists_the_entries_left_out():
    doc = yolo_suggest_doc()
    doc["explain"] = True
    found = section(parse(render_suggest(doc, yolo_profile_doc())), "suggestions")
    assert [h.text() for h in found.find_all("h3")][-1] == "Left out"
    assert found.find_all("ul")[-1].text() == "tip-vllm-ascend-graph-mode: applies to framework vllm-ascend; this run: torch_npu"


def test_the_gain_chart_draws_a_range_given_in_time_only():
    doc = yolo_suggest_doc()
    doc["profile"]["reference_us"] = DEVICE_US
    for key in ("low_pct", "high_pct"):
        del doc["suggestions"][1]["expected_gain"][key]
    row = section(parse(render_suggest(doc)), "gains").find_all("g", "row")[1]
    assert [b.attrs["class"] for b in row.find_all("rect", "bar")] == ["bar ceiling", "bar g-range"]
    assert row.find_all("text", "value")[0].text() == "1.5–2.7 % · 724 µs – 1.30 ms · sourced"


def test_similar_cases_and_cannot_judge_notes(suggest_tree):
    similar = section(suggest_tree, "similar").text()
    assert "resembles YOLOv8s inference on Atlas 800I A2 with NMS on the AI CPU (0.83)" in similar
    notes = section(suggest_tree, "notes")
    items = [li.text() for li in notes.find_all("li")]
    # Suggest notes first, then the profile's own, each once.
    assert items == [NMS_NOTE_PIPES, "the matcher used 3 symptom ids and 15 op families from this profile", NOTE_CORES]
    assert [s.text() for s in notes.find_all("strong")][0] == "cannot judge pipe-bound classes of the AI CPU rows:"


def test_a_similar_case_shows_the_two_parts_of_its_similarity():
    doc = yolo_suggest_doc()
    doc["similar_cases"][0].update(similarity=0.83, mix_cosine=0.85, symptom_overlap=0.75)
    similar = section(parse(render_suggest(doc, yolo_profile_doc())), "similar").text()
    assert "with NMS on the AI CPU (0.83: op mix 0.85, symptoms 0.75)" in similar
    assert "problem symptoms both show" in similar  # the caption says what the number weighs, not "cosine" alone


# --------------------------------------------------------------------------------------------
# self-contained and safe
# --------------------------------------------------------------------------------------------


def assert_self_contained(root: Node, page: str, allowed_links: set[str]) -> None:
    """No script, no external resource; links only to http(s) sources, and only inside sources lists."""
    tags = {n.tag for n in root.iter()}
    assert not tags & {"script", "iframe", "object", "embed", "img", "link", "base", "form", "frame", "audio", "video"}
    for node in root.iter():
        assert "src" not in node.attrs, node.tag
        assert not any(name.startswith("on") for name in node.attrs), (node.tag, node.attrs)
        for name in ("href", "xlink:href"):
            if name in node.attrs:
                assert node.tag == "a", node.tag
                assert node.attrs[name] in allowed_links
                assert re.match(r"https?://", node.attrs[name])
                assert any({"sources"} & a.classes() or a.tag == "td" for a in node.ancestors())
    assert "@import" not in page and "url(" not in page
    meta = [n for n in root.find_all("meta") if n.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert meta and "default-src 'none'" in meta[0].attrs["content"]


def remedy_sources(doc: dict, start: int = 0) -> set[str]:
    """The http(s) sources of the remedies of the findings from ``start`` on."""
    return {s for sug in doc["suggestions"][start:] for r in sug["remedies"] for s in r["sources"] if s.startswith("http")}


def test_suggest_page_is_self_contained(suggest_page, suggest_tree):
    http_sources = remedy_sources(yolo_suggest_doc())
    assert_self_contained(suggest_tree, suggest_page, http_sources)
    hrefs = [a.attrs["href"] for a in suggest_tree.find_all("a")]
    assert sorted(hrefs) == sorted(http_sources)
    assert HIASCEND_NMS in hrefs and ULTRALYTICS_PR in hrefs
    # A non-URL source is shown as text, not dropped.
    assert "Ascend/pytorch torch_npu/contrib/function/nms.py" in section(suggest_tree, "suggestions").text()


def test_hostile_kb_entry_and_profile_render_as_text():
    page = render_suggest(hostile_suggest_doc(), hostile_profile_doc())
    root = parse(page)
    evil_https = "https://example.org/a?x=\"><script>alert(7)</script>"
    other_links = remedy_sources(yolo_suggest_doc(), 1)
    assert_self_contained(root, page, {evil_https} | other_links)
    text = root.text()
    for shown in (
        "<script>alert(1)</script> NMS on the AI CPU",
        '<img src="x" onerror="alert(2)">runs on AI CPU',
        "<b>NonMaxSuppressionV3</b>",
        "javascript:alert(3)",
        "<script>alert(4)</script>",
        "data:text/html,<script>alert(6)</script>",
        "<style>body{display:none}</style>",
        '<iframe src="https://evil.example"></iframe>',
        "<svg onload=alert(8)>case",
        "<script>alert(9)</script>",
        "<u>torch_npu</u> run",
        "<marquee>nothing else</marquee>",
        "<i>NMS</i>",
        "<script>alert(12)</script>",
        '"><link rel="stylesheet" href="https://evil.example/x.css">',
    ):
        assert shown in text, shown
    assert root.find_all("p", "subtitle")[0].text().startswith("</title><script>alert(10)</script>")
    assert len(root.find_all("title")) == 1 + len(root.find_all("svg")) + len(root.find_all("g")) + len(root.find_all("rect", "bar"))
    # The first card's only link is the genuine https URL, attribute-escaped so its quote cannot close href.
    first_card = section(root, "suggestions").find_all("article")[0]
    assert [a.attrs["href"] for a in first_card.find_all("a")] == [evil_https]
    assert "javascript:" not in " ".join(a.attrs["href"] for a in root.find_all("a")).lower()
    assert len(root.find_all("style")) == 1  # the injected <style> stayed text
    assert not [n for n in root.iter() if n.tag == "svg" and "onload" in n.attrs]
    assert root.find_all("i") == [] and root.find_all("b") == [] and root.find_all("u") == []
    assert root.find_all("marquee") == []


def test_hostile_profile_renders_as_text_in_the_profile_report():
    page = render_profile(hostile_profile_doc())
    root = parse(page)
    assert_self_contained(root, page, set())
    rows = section(root, "op-types").find_all("tr")[1:]
    assert [td.text() for td in rows[1].find_all("td")][:2] == ["<script>alert(11)</script>", "<i>NMS</i>"]
    assert "<script>alert(12)</script>" in section(root, "profile").text()


# --------------------------------------------------------------------------------------------
# suggest: degraded inputs
# --------------------------------------------------------------------------------------------


def test_suggest_without_profile_document_says_what_is_missing():
    root = parse(render_suggest(yolo_suggest_doc()))
    families = section(root, "families")
    assert families.find_all("svg") == []
    assert "operator breakdown is not part of this report" in families.text()
    assert profile_facts(root) == {"Format": "torch-npu-text", "Chip": "not recorded", "Device time": "48.2 ms"}
    assert len(section(root, "suggestions").find_all("article")) == 3


def test_suggest_with_embedded_profile_document_draws_the_chart():
    doc = yolo_suggest_doc()
    doc["profile_doc"] = yolo_profile_doc()
    root = parse(render_suggest(doc))
    assert len(section(root, "families").find_all("figure")[0].find_all("g", "row")) == 10


def test_suggest_without_suggestions():
    doc = yolo_suggest_doc()
    doc["suggestions"], doc["similar_cases"] = [], []
    root = parse(render_suggest(doc, yolo_profile_doc()))
    assert root.find_all("h2")[0].text() == "Nothing to fix first"
    assert "No finding." in section(root, "suggestions").text()
    assert "No finding, so no gain to chart." in section(root, "gains").text()
    assert "No case study has an operator mix close to this profile" in section(root, "similar").text()


def test_wrong_schema_is_refused():
    with pytest.raises(AdvisorError, match="not an opprof-advisor suggest document"):
        render_suggest(yolo_profile_doc())
    with pytest.raises(AdvisorError, match="no html rendering of an opprof-advisor outcomes document"):
        render({"schema": "opprof-advisor/outcomes/1"}, "html")


def test_render_dispatches_on_schema():
    assert "Static scan of scan_repo" in render(scan_doc(), "html")
    assert "Operator profile of yolov8s_ascend_pt" in render(yolo_profile_doc(), "html")
    assert "Tuning advice for" in render(yolo_suggest_doc(), "html", profile_doc=yolo_profile_doc())


# --------------------------------------------------------------------------------------------
# profile, compare, scan
# --------------------------------------------------------------------------------------------


def test_profile_report_lists_every_op_type_with_unit_and_share():
    page = render_profile(yolo_profile_doc())
    root = parse(page)
    assert_self_contained(root, page, set())
    rows = section(root, "op-types").find_all("tr")[1:]
    assert len(rows) == len(YOLO_ROWS)
    nms = [td.text().strip() for td in rows[1].find_all("td")]
    assert nms == ["NonMaxSuppressionV3", "NMS", "AI CPU", "16", "8.69 ms", pct(8_685 / DEVICE_US), "unknown"]
    assert [td.text().strip() for td in rows[2].find_all("td")][3] == "1,248"
    assert root.find_all("h2")[0].text() == f"Conv2D takes {pct(14_957.5 / DEVICE_US)} of device time"
    assert len(section(root, "families").find_all("figure")[0].find_all("g", "row")) == 10
    assert "cannot judge block dim against the core count:" in [s.text() for s in section(root, "notes").find_all("strong")]


def test_multi_rank_profile_names_the_slowest_and_the_unreadable_rank():
    doc = yolo_profile_doc()
    # profile_to_json's shape: versions flattened into source, ranks under source.
    versions = doc["source"].pop("versions")
    doc["source"].update(versions)
    doc["source"]["ranks"] = [
        {"rank": "rank0", "path": "run/rank0_ascend_pt", "device_time_us": 51_900.0, "error": None,
         "computing_us": 30_000.0, "exposed_us": 20_000.0, "free_us": 1_900.0},
        {"rank": "rank1", "path": "run/rank1_ascend_pt", "device_time_us": 51_800.0, "error": None,
         "computing_us": 45_000.0, "exposed_us": 5_000.0, "free_us": 1_800.0},
        {"rank": "rank2", "path": "run/rank2_ascend_pt", "device_time_us": None, "error": "kernel_details.csv: truncated last line"},
    ]
    page = render_profile(doc)
    root = parse(page)
    summary = section(root, "profile")
    assert profile_facts(root)["CANN"] == "8.0.RC2" and profile_facts(root)["Profiler level"] == "Level1"
    rows = [[td.text().strip() for td in tr.find_all("td")] for tr in summary.find_all("table")[0].find_all("tr")[1:]]
    # sorted by computing: the peers wait in collectives, so device time does not name the slow rank
    assert rows == [
        ["rank1 slowest", "45.0 ms", "5.00 ms", "1.80 ms", "51.8 ms", "", "run/rank1_ascend_pt"],
        ["rank0", "30.0 ms", "20.0 ms", "1.90 ms", "51.9 ms", "", "run/rank0_ascend_pt"],
        ["rank2", "—", "—", "—", "—", "kernel_details.csv: truncated last line", "run/rank2_ascend_pt"],
    ]
    # each readable rank's split as a bar, the slowest computation first
    assert "<title id=\"" in page and "rank1: computing 45.0\u00a0ms; rank0: computing 30.0\u00a0ms</desc>" in page


def test_compare_report_shows_nms_delta_unit_change_and_total():
    page = render_compare(compare_doc())
    root = parse(page)
    assert_self_contained(root, page, set())
    assert root.find_all("h2")[0].text() == "Device time 48.2 ms → 41.0 ms (−15.0 %, faster)"
    rows = {tr.find_all("td")[0].text(): tr for tr in section(root, "changes").find_all("tr")[1:]}
    nms = rows["NMS"]
    assert "moved" in nms.classes()
    assert [td.text().strip() for td in nms.find_all("td")][:4] == ["NMS", "8.69 ms", "1.44 ms", "−83.4 %"]
    assert "moved from AI CPU to AI Core" in nms.text()
    assert rows["Gather"].find_all("td")[3].text() == "gone"
    assert rows["BatchMultiClassNMSPad"].find_all("td")[3].text() == "new"
    # Noise (|Δ| < 1 %) is not coloured as a win or a loss; a real speed-up is.
    assert rows["Conv2D"].find_all("td")[3].classes() == {"num"}
    assert "delta-down" in nms.find_all("td")[3].classes()
    chart_rows = {r.find_all("text")[0].text(): r for r in section(root, "families").find_all("g", "row")}
    assert [b.attrs["class"] for b in chart_rows["NMS"].find_all("rect", "bar")] == ["bar u-cpu before", "bar u-core"]
    assert "Biggest change: NMS 8.69 ms → 1.44 ms, moved from AI CPU to AI Core." in root.text()


def test_compare_of_a_profile_with_itself_reads_unchanged():
    doc = compare_doc()
    doc["total"] = {"before_us": DEVICE_US, "after_us": DEVICE_US, "delta_pct": 0.0}
    doc["op_types"] = [dict(r, after_us=r["before_us"], delta_pct=0.0, unit_after=r["unit_before"]) for r in doc["op_types"][:3]]
    root = parse(render_compare(doc))
    assert root.find_all("h2")[0].text() == "Device time 48.2 ms → 48.2 ms (+0.0 %, unchanged)"
    assert [tr for tr in section(root, "changes").find_all("tr") if "moved" in tr.classes()] == []


def test_compare_of_two_kernel_runs_shows_kernel_figures_and_pipe_ratios():
    root = parse(render_compare(kernel_compare_doc()))
    kernel = section(root, "kernel")
    rows = {tr.find_all("th")[0].text(): [td.text() for td in tr.find_all("td")] for tr in kernel.find_all("tr")[1:]}
    assert rows["Task duration"] == ["1.84 ms", "1.01 ms"]
    assert rows["Block dim"] == ["8", "24"]
    assert rows["Block imbalance"] == ["1.210× mean block time", "1.210× mean block time"]
    pipes = {r.find_all("text")[0].text(): r for r in kernel.find_all("g", "row")}
    assert list(pipes) == ["aic_cube", "aic_mte2", "aiv_vec"]
    assert pipes["aic_mte2"].find_all("text", "value")[0].text() == "93.0 % → 52.0 %"
    assert [b.attrs["class"] for b in pipes["aiv_vec"].find_all("rect", "bar")] == ["bar u-vector before", "bar u-vector"]
    assert plain(root.find_all("title")[0].text()) == "Before / after: device time −45.0 %"


@pytest.mark.skipif(not BENCH_YOLO.is_dir(), reason="data/bench/yolov8s-nms-aicpu is not in this checkout")
def test_report_of_the_real_profile_and_suggest_documents(runner):
    from opprof_advisor.cli.app import app

    prof = runner.invoke(app, ["profile", str(BENCH_YOLO), "--format", "json"])
    sug = runner.invoke(app, ["suggest", "--profile", str(BENCH_YOLO), "--format", "json"])
    assert prof.exit_code == 0 and sug.exit_code == 0, (prof.output, sug.output)
    profile_doc, suggest_doc = json.loads(prof.stdout), json.loads(sug.stdout)
    page = render_suggest(suggest_doc, profile_doc)
    root = parse(page)
    http = {s for x in suggest_doc["suggestions"] for r in x["remedies"] for s in r["sources"] if re.match(r"https?://", s)}
    assert_self_contained(root, page, http)
    cards = section(root, "suggestions").find_all("article")
    assert len(cards) == len(suggest_doc["suggestions"])
    first = suggest_doc["suggestions"][0]
    assert root.find_all("h2")[0].text() == first["title"]
    if first["expected_gain"]:
        gain = first["expected_gain"]
        assert f"{gain['low_pct']:.1f}–{gain['high_pct']:.1f} %" in plain(cards[0].text())
    nms_rows = [r for r in profile_doc["op_types"] if r["family"] == "NMS"]
    chart = {r.find_all("text")[0].text(): r for r in section(root, "families").find_all("g", "row")}
    assert nms_rows and "bar u-cpu" in [b.attrs["class"] for b in chart["NMS"].find_all("rect", "bar")]


def test_scan_report_lists_findings_at_file_and_line_without_gains():
    page = render_scan(scan_doc())
    root = parse(page)
    assert_self_contained(root, page, {HIASCEND_NMS})
    assert root.find_all("h2")[0].text() == "5 findings, 3 with a CANN support risk"
    findings = section(root, "findings")
    assert [h.text() for h in findings.find_all("h3")] == ["nms", "convolution", "attention", "Custom CUDA kernels and CUDA-only libraries"]
    cells = [[td.text().strip() for td in tr.find_all("td")] for tr in findings.find_all("tr")[1:2]]
    assert cells[0][:4] == ["torchvision.ops.nms", "detector/postprocess.py:41", "cpu fallback risk", "torch_npu.npu_batch_nms"]
    assert "www.hiascend.com/…/ptaoplist_000084.html" in findings.text()
    card = section(root, "suggestions").find_all("article")[0].text()
    assert "no gain claimed from a static scan" in card
    assert "%" not in card.split("Evidence")[0].replace("0.52", "")
    assert "tests/data/scan_repo/broken.py: SyntaxError: invalid syntax (line 3)" in section(root, "failed").text()
    chart = {r.find_all("text")[0].text(): r.find_all("text", "value")[0].text() for r in section(root, "categories").find_all("g", "row")}
    assert chart == {"convolution": "2 findings", "attention": "1 finding", "custom_kernel": "1 finding", "nms": "1 finding"}


# --------------------------------------------------------------------------------------------
# pictures: the step bar, the ranks, the top operators, the gain ranges (issue 31)
# --------------------------------------------------------------------------------------------

LEVEL1 = "msinsight-torch-npu/text/level1/rank0_ascend_pt"
CLUSTER = "msprof-analyze-ut/cluster_8rank"


def chart_scale(figure: Node) -> tuple[float, float]:
    """(x of 0, units per axis unit) of a bar chart, read from its grid lines and the last tick's number."""
    lines = [float(line.attrs["x1"]) for line in figure.find_all("line", "grid")]
    ticks = [t.text() for t in figure.find_all("text", "tick") if re.fullmatch(r"[\d.]+ %", plain(t.text()))]
    last = float(plain(ticks[-1]).split()[0])
    return lines[0], (lines[-1] - lines[0]) / last


def bar_rects(row: Node) -> list[Node]:
    return row.find_all("rect", "bar")


def test_a_whole_run_profile_draws_its_step_bar_and_a_filled_gain_chart(real_profiles):
    from opprof_advisor import commands

    doc = commands.suggest(real_profiles / LEVEL1)
    page = render_suggest(doc)
    root = parse(page)
    headings = [h.text() for h in root.find_all("h2")]
    assert headings[1:4] == ["Where the step goes", "Profile summary", "Where the device time goes"]
    # the step bar: one row for the one step, computing / exposed communication / free as shares of the step
    steps = section(root, "steps")
    (row,) = steps.find_all("g", "row")
    assert row.find_all("text")[0].text() == "step 50" and row.find_all("text", "value")[0].text() == "137 ms"
    split = doc["profile_document"]["steps"]["per_step"][0]
    rects = bar_rects(row)
    assert [r.attrs["class"] for r in rects] == ["bar u-core", "bar u-comm", "bar u-unknown"]
    assert [plain(r.text()) for r in rects] == [
        "computing: 6.5 % of the step (8.87 ms)", "exposed communication: 74.7 % of the step (102 ms)",
        "free: 18.8 % of the step (25.7 ms)"]
    zero, per_pct = chart_scale(steps.find_all("figure")[0])
    for rect, key in zip(rects, ("computing_us", "exposed_us", "free_us")):
        assert float(rect.attrs["width"]) == pytest.approx(split[key] / split["stage_us"] * 100 * per_pct, abs=0.15)
    assert float(rects[0].attrs["x"]) == pytest.approx(zero, abs=0.05)
    # the shares wide enough are written in their bar; all of them in the caption, with their base said once
    assert [plain(t.text()) for t in row.find_all("text", "in-bar")] == ["74.7 %", "18.8 %"]
    caption = plain(steps.find_all("figcaption")[0].text())
    assert caption.startswith("Over the whole run: computing 6.5 %, exposed communication 74.7 %, free 18.8 % of "
                              "the step (137 ms). Share of the step:")
    assert [li.text() for li in steps.find_all("li")] == ["computing", "exposed communication", "free"]
    # the gain chart: every finding with a gain has a range bar from its low to its high, on the axis of its base
    gains = section(root, "gains")
    zero, per_pct = chart_scale(gains.find_all("figure")[0])
    rows = gains.find_all("g", "row")
    assert len(rows) == len(doc["suggestions"]) >= 2
    for row, finding in zip(rows, doc["suggestions"]):
        gain = finding["expected_gain"]
        (bar,) = [r for r in bar_rects(row) if r.attrs["class"] in ("bar g-first", "bar g-range")]
        assert float(bar.attrs["x"]) == pytest.approx(zero + gain["low_pct"] * per_pct, abs=0.1)
        assert float(bar.attrs["width"]) == pytest.approx((gain["high_pct"] - gain["low_pct"]) * per_pct, abs=0.15)
        assert row.find_all("text")[0].text().startswith(f"#{finding['rank']} ")
        assert plain(row.find_all("text", "value")[0].text()).startswith(
            f"{gain['low_pct']:.1f}–{gain['high_pct']:.1f} % · ")
    assert "(% of the step)" in gains.text()
    # the top operators: the longest op types as shares of device time
    families = section(root, "families")
    ops = families.find_all("figure")[1]
    labels = [r.find_all("text")[0].text() for r in ops.find_all("g", "row")]
    assert labels[:3] == ["hcom_allReduce_", "ForeachAddList", "TransData"] and len(labels) == 10
    assert plain(ops.find_all("g", "row")[0].find_all("text", "value")[0].text()) == "92.3 % · 106 ms · communication"
    assert "Share of device time (115 ms) per operator type" in plain(ops.text())
    # run-level evidence names no operator: the verdict says the share alone, never "None"
    assert "None takes" not in page and "72.1 % of the step (98.4 ms): communication_wait" in plain(page)
    assert "Share of the step" in [th.text() for th in section(root, "suggestions").find_all("th")]


def test_the_cluster_marks_the_rank_the_others_wait_for(real_profiles):
    from opprof_advisor import commands

    doc = commands.profile(real_profiles / CLUSTER)
    # the document says which rank the others wait for: the slow_rank symptom's new "rank" key
    (slow,) = [s for s in doc["symptoms"] if s["id"] == "slow_rank"]
    assert slow["rank"] == "rank1" and slow["detail"].startswith("the rank the others wait for, rank1,")
    root = parse(render_profile(doc))
    summary = section(root, "profile")
    chart = summary.find_all("figure")[0]
    rows = {r.find_all("text")[0].text(): r for r in chart.find_all("g", "row")}
    assert len(rows) == 8
    marked = [label for label, row in rows.items() if row.find_all("rect", "mark")]
    assert marked == ["rank1"]
    assert rows["rank1"].find_all("text")[0].attrs.get("class") == "strong"
    assert plain(rows["rank1"].find_all("text", "value")[0].text()) == "computing 80.4 ms · waited for"
    for row in rows.values():
        assert [r.attrs["class"] for r in bar_rects(row)] == ["bar u-core", "bar u-comm", "bar u-unknown"]
    assert "Outlined: rank1, the rank the others wait for" in chart.text()
    table = summary.find_all("table")[0]
    badges = [tr.find_all("td")[0].text().strip() for tr in table.find_all("tr")[1:]]
    assert [b for b in badges if " " in b] == ["rank1 waited for"]  # not rank4, the slowest by computing
    # and its step bar: the mean rank's split
    (step,) = section(root, "steps").find_all("g", "row")
    assert step.find_all("text")[0].text() == "whole profile"
    assert "Source: mean of 8 ranks in cluster_step_trace_time.csv." in section(root, "steps").text()


def steps_doc(splits: list[tuple[str, float, float, float, float]]) -> dict:
    """The YOLO profile document with step splits (step, computing, exposed, free, stage µs)."""
    doc = yolo_profile_doc()
    per_step = [{"step": step, "computing_us": c, "exposed_us": e, "free_us": f, "stage_us": stage}
                for step, c, e, f, stage in splits]
    total = {key: sum(s[key] for s in per_step) for key in ("computing_us", "exposed_us", "free_us", "stage_us")}
    doc["steps"] = {"source": "step_trace_time.csv", "total": {"step": None, **total}, "per_step": per_step}
    return doc


def test_several_steps_draw_the_total_first_then_one_bar_per_step_with_the_rest_as_other():
    doc = steps_doc([("1", 9_000.0, 1_000.0, 500.0, 10_500.0), ("2", 8_000.0, 2_500.0, 400.0, 10_900.0),
                     ("3", 7_000.0, 3_000.0, 800.0, 11_500.0)])
    root = parse(render_profile(doc))
    steps = section(root, "steps")
    rows = steps.find_all("g", "row")
    assert [r.find_all("text")[0].text() for r in rows] == ["all 3 steps", "step 1", "step 2", "step 3"]
    assert rows[0].find_all("text")[0].attrs.get("class") == "strong"
    # step 3's parts leave 700 µs of its 11.5 ms: drawn as "other", so every bar ends at 100 % of its step
    assert [r.attrs["class"] for r in bar_rects(rows[3])] == ["bar u-core", "bar u-comm", "bar u-unknown", "bar u-other"]
    assert plain(bar_rects(rows[3])[3].text()) == "other: 6.1 % of the step (700 µs)"
    zero, per_pct = chart_scale(steps.find_all("figure")[0])
    for row in rows:
        last = bar_rects(row)[-1]
        assert float(last.attrs["x"]) + float(last.attrs["width"]) == pytest.approx(zero + 100 * per_pct, abs=0.2)
    assert [li.text() for li in steps.find_all("li")] == ["computing", "exposed communication", "free", "other"]
    # a profile without a step split has no step block
    assert not [n for n in parse(render_profile(yolo_profile_doc())).find_all("section") if n.attrs.get("id") == "steps"]


def test_a_long_run_draws_its_longest_steps_in_step_order():
    splits = [(str(i), 1_000.0, 0.0, 100.0 + i, 1_100.0 + i) for i in range(25)]
    steps = section(parse(render_profile(steps_doc(splits))), "steps")
    labels = [r.find_all("text")[0].text() for r in steps.find_all("g", "row")]
    assert labels == ["all 25 steps"] + [f"step {i}" for i in range(5, 25)]
    assert "The 5 shorter steps are not drawn; the JSON output has all." in steps.text()


def rank_doc(n: int, waited: str | None) -> dict:
    doc = yolo_profile_doc()
    doc["source"]["ranks"] = [
        {"rank": f"rank{i}", "path": f"run/rank{i}_ascend_pt", "device_time_us": 50_000.0, "error": None,
         "computing_us": 30_000.0 + 100 * i, "exposed_us": 15_000.0, "free_us": 5_000.0 - 100 * i,
         "stage_us": 50_000.0} for i in range(n)]
    if waited:
        doc["symptoms"].append({"id": "slow_rank", "op_types": [], "share": 0.1, "rank": waited,
                                "detail": f"the rank the others wait for, {waited}, ..."})
    return doc


def test_a_long_job_keeps_the_rank_the_others_wait_for_in_its_chart_and_table():
    # computing grows with the rank id: rank23 … rank9 are the 15 slowest, rank4 … rank0 the 5 fastest
    root = parse(render_profile(rank_doc(24, "rank6")))
    summary = section(root, "profile")
    labels = [r.find_all("text")[0].text() for r in summary.find_all("figure")[0].find_all("g", "row")]
    assert labels == [f"rank{i}" for i in range(23, 9, -1)] + ["rank6"] + [f"rank{i}" for i in range(4, -1, -1)]
    assert "Showing the 14 slowest, rank6 (the rank the others wait for) and the 5 fastest of 24 ranks" in summary.text()
    rows = summary.find_all("table")[0].find_all("tr")[1:]
    assert rows[14].find_all("td")[0].text().strip() == "rank6 waited for"
    # without a rank named by the document, the slowest by computation is badged as before, none outlined
    plain_root = parse(render_profile(rank_doc(3, None)))
    assert not plain_root.find_all("rect", "mark")
    first = section(plain_root, "profile").find_all("table")[0].find_all("tr")[1]
    assert first.find_all("td")[0].text().strip() == "rank2 slowest"


def test_no_internal_score_anywhere_in_the_reports():
    doc = scan_doc()
    for item in doc.get("suggestions") or []:
        item["score"] = 39_304.03
    pages = [render_scan(doc), render_suggest(yolo_suggest_doc(), yolo_profile_doc()), render_profile(yolo_profile_doc())]
    for page in pages:
        assert not re.search(r"match score|tf-?idf|39304|39,304|relevance", page, re.I)


# --------------------------------------------------------------------------------------------
# accessibility and print
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("render", [
    lambda: render_suggest(yolo_suggest_doc(), yolo_profile_doc()),
    lambda: render_profile(yolo_profile_doc()),
    lambda: render_compare(compare_doc()),
    lambda: render_scan(scan_doc()),
])
def test_every_report_is_accessible_and_printable(render):
    page = render()
    root = parse(page)
    ids = [n.attrs["id"] for n in root.iter() if "id" in n.attrs]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for svg in root.find_all("svg"):
        assert svg.attrs["role"] == "img"
        labelled = svg.attrs["aria-labelledby"].split()
        assert all(i in ids for i in labelled)
        assert svg.find_all("title")[0].text() and svg.find_all("desc")[0].text()
        assert svg.find_all("text", "value"), "every chart carries its numbers as text"
    levels = [int(n.tag[1]) for n in root.iter() if re.fullmatch(r"h[1-6]", n.tag)]
    assert levels[0] == 1 and all(b - a <= 1 for a, b in zip(levels, levels[1:])), levels
    assert "@media print" in page
    assert all(th.attrs.get("scope") in ("col", "row") for th in root.find_all("th"))


def test_titles_name_the_model_folder_not_the_profiler_timestamp():
    doc = yolo_suggest_doc()
    doc["profile"]["path"] = "runs/yolov8s-nms/localhost.localdomain_573564_20250109074803704_ascend_pt"
    assert parse(render_suggest(doc)).find_all("title")[0].text() == "Tuning advice for yolov8s-nms"


# --------------------------------------------------------------------------------------------
# writing the file
# --------------------------------------------------------------------------------------------


def test_write_report_default_name_in_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = render_profile(yolo_profile_doc())
    written = write_report(page)
    assert written.parent == tmp_path
    assert re.fullmatch(r"advisor-report-\d{8}-\d{6}(-\d+)?\.html", written.name)
    assert written.read_text(encoding="utf-8") == page
    assert stat.S_IMODE(written.stat().st_mode) & 0o044, "a report is meant to be shared: readable by others"
    assert [p.name for p in tmp_path.iterdir()] == [written.name], "no temporary file left behind"


def test_default_name_does_not_overwrite_an_earlier_report(tmp_path):
    now = datetime(2026, 11, 30, 4, 5, 6)
    first = default_report_path(tmp_path, now)
    first.write_text("earlier")
    second = default_report_path(tmp_path, now)
    assert (first.name, second.name) == ("advisor-report-20261130-040506.html", "advisor-report-20261130-040506-2.html")


def test_write_report_to_output_replaces_an_earlier_report_atomically(tmp_path):
    target = tmp_path / "report.html"
    earlier = render_profile(yolo_profile_doc())
    target.write_text(earlier)
    assert write_report("<!DOCTYPE html><p>new</p>", target) == target
    assert target.read_text() == "<!DOCTYPE html><p>new</p>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_write_report_leaves_a_file_it_did_not_write_unless_forced(tmp_path):
    target = tmp_path / "notes.html"
    target.write_text("my own page")
    with pytest.raises(AdvisorError) as refused:
        write_report("<!DOCTYPE html><p>new</p>", target)
    assert str(refused.value) == (f"{target}: exists and is not an HTML report written by advisor; it was left "
                                  "untouched — choose another --output, or add --force to replace it")
    assert target.read_text() == "my own page"
    write_report("<!DOCTYPE html><p>new</p>", target, force=True)
    assert target.read_text() == "<!DOCTYPE html><p>new</p>"


def test_write_report_errors_name_the_path(tmp_path):
    with pytest.raises(AdvisorError) as missing:
        write_report("x", tmp_path / "no-such-folder" / "r.html")
    assert str(missing.value) == f"{tmp_path / 'no-such-folder'}: folder does not exist — create it first or choose another --output"
    with pytest.raises(AdvisorError, match="is a folder, not a file"):
        write_report("x", tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder")
def test_write_report_unwritable_folder(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(AdvisorError, match="cannot write: Permission denied"):
            write_report("x", locked / "r.html")
    finally:
        locked.chmod(0o700)


def test_stylesheet_ships_inside_the_package():
    css = Path(__file__).resolve().parent.parent / "opprof_advisor" / "render" / "html" / "report.css"
    assert css.is_file()
    assert css.read_text(encoding="utf-8") in render_profile(yolo_profile_doc())


# --------------------------------------------------------------------------------------------
# `--format html` of the commands (wired in the CLI modules; these run once the option exists)
# --------------------------------------------------------------------------------------------

SCAN_REPO = Path(__file__).resolve().parent / "scan_fixture_repo"


def require_html_option(runner, command: list[str]) -> None:
    """Skip until the command offers --format html and --output (the CLI wiring is separate work)."""
    from opprof_advisor.cli.app import app

    text = runner.invoke(app, [*command, "--help"]).output
    if "html" not in text or "--output" not in text:
        pytest.skip(f"`advisor {' '.join(command)}` has no --format html / --output yet")


def run_html(runner, args: list[str], out: Path) -> Node:
    """Run a command with --format html --output OUT; stdout says the written path ("wrote PATH")."""
    from opprof_advisor.cli.app import app

    result = runner.invoke(app, [*args, "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() in (str(out.absolute()), f"wrote {out.absolute()}")
    return parse(out.read_text(encoding="utf-8"))


@pytest.mark.skipif(not BENCH_YOLO.is_dir(), reason="data/bench/yolov8s-nms-aicpu is not in this checkout")
def test_cli_suggest_html(runner, tmp_path):
    from opprof_advisor.cli.app import app

    require_html_option(runner, ["suggest"])
    doc = json.loads(runner.invoke(app, ["suggest", "--profile", str(BENCH_YOLO), "--format", "json"]).stdout)
    root = run_html(runner, ["suggest", "--profile", str(BENCH_YOLO)], tmp_path / "advice.html")
    assert root.find_all("h2")[0].text() == doc["suggestions"][0]["title"]
    assert len(section(root, "families").find_all("g", "row")) > 0, "the suggest report embeds the profile chart"


@pytest.mark.skipif(not BENCH_YOLO.is_dir(), reason="data/bench/yolov8s-nms-aicpu is not in this checkout")
def test_cli_profile_html_default_name(runner, tmp_path, monkeypatch):
    from opprof_advisor.cli.app import app

    require_html_option(runner, ["profile"])
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["profile", str(BENCH_YOLO), "--format", "html"])
    assert result.exit_code == 0, result.output
    written = Path(result.stdout.strip().removeprefix("wrote "))
    assert written.parent == tmp_path and re.fullmatch(r"advisor-report-\d{8}-\d{6}(-\d+)?\.html", written.name)
    assert "NonMaxSuppressionV3" in section(parse(written.read_text(encoding="utf-8")), "op-types").text()


@pytest.mark.skipif(not BENCH_YOLO.is_dir(), reason="data/bench/yolov8s-nms-aicpu is not in this checkout")
def test_cli_compare_html_of_a_profile_with_itself(runner, tmp_path):
    require_html_option(runner, ["compare"])
    root = run_html(runner, ["compare", str(BENCH_YOLO), str(BENCH_YOLO)], tmp_path / "cmp.html")
    assert plain(root.find_all("h2")[0].text()).endswith("(+0.0 %, unchanged)")


@pytest.mark.skipif(not SCAN_REPO.is_dir(), reason="tests/scan_fixture_repo is not in this checkout")
def test_cli_scan_html(runner, tmp_path):
    from opprof_advisor.cli.app import app

    require_html_option(runner, ["scan"])
    doc = json.loads(runner.invoke(app, ["scan", str(SCAN_REPO), "--format", "json"]).stdout)
    root = run_html(runner, ["scan", str(SCAN_REPO)], tmp_path / "scan.html")
    locations = {f"{f['path']}:{f['line']}" for f in doc["findings"]}
    shown = {td.text() for td in section(root, "findings").find_all("td") if "mono" in td.classes() and "small" in td.classes()}
    assert locations <= shown


# --------------------------------------------------------------------------------------------
# contrast (WCAG 2.1: 4.5:1 for text, 3:1 for chart marks)
# --------------------------------------------------------------------------------------------


def luminance(hex_colour: str) -> float:
    """Relative luminance of #rrggbb (WCAG 2.1 definition)."""
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_colours_meet_contrast_minimums():
    css = (Path(__file__).resolve().parent.parent / "opprof_advisor" / "render" / "html" / "report.css").read_text(encoding="utf-8")
    var = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", css))
    text_pairs = [("ink", "paper"), ("muted", "paper"), ("muted", "wash"), ("accent", "accent-wash"),
                  ("good", "accent-wash"), ("good", "paper"), ("bad", "paper"), ("accent", "paper")]
    for fg, bg in text_pairs:
        assert contrast(var[fg], var[bg]) >= 4.5, (fg, bg, contrast(var[fg], var[bg]))
    for mark in ("u-core", "u-vector", "u-cpu", "u-comm", "u-other", "u-unknown"):
        assert contrast(var[mark], "#eef1f5") >= 3.0, mark  # bars on their track
    assert contrast("#8896ab", "#eef1f5") >= 2.6  # ceiling outline on the track; its fill is labelled in the legend
    header_bg = re.search(r"\.page-header \{[^}]*background: (#[0-9a-f]{6})", css).group(1)
    for fg in re.findall(r"\.page-header[^{]*\{[^}]*?color: (#[0-9a-f]{6})", css):
        assert contrast(fg, header_bg) >= 4.5, fg


def test_the_ceiling_is_the_recommenders_stake_even_beyond_five_evidence_rows():
    from opprof_advisor.advice.matcher import fit_matcher
    from opprof_advisor.core.models import Entry, Gain, OpTypeStat, Profile, Symptom
    from opprof_advisor.advice.recommend import suggest, suggestions_to_json

    device = 100_000.0
    rows = [OpTypeStat(f"Mul{i}", f"Mul{i}", "ai_vector", 10, 13_000.0 + i, (13_000.0 + i) / device) for i in range(6)]
    rows.append(OpTypeStat("Conv2D", "Conv2D", "ai_core", 10, 100_000 - sum(r.time_us for r in rows),
                           0.2, dtypes=["FLOAT16"]))
    symptom = Symptom("small_kernels", [r.op_type for r in rows[:6]], 0.78, "six chains", time_us=78_015.0)
    profile = Profile("p", "torch-npu-text", device_time_us=device, op_types=rows, symptoms=[symptom])
    entry = Entry(id="fuse-small", kind="recipe", title="Fuse the small kernels", summary="Fuse.",
                  symptoms=["small_kernels"], evidence="C", sources=["https://example.org/f"],
                  gain=Gain(10, 20, "op_time", "operators", "https://example.org/f"),
                  body="## Steps\n\n1. Fuse them.\n")
    doc = suggestions_to_json(suggest(profile, [entry], matcher=fit_matcher([entry])))
    (first,) = doc["suggestions"]
    assert len(first["evidence"]) == 5 and first["stake_share"] == pytest.approx(0.78015)
    page = render_suggest(doc)
    # the evidence lists five rows (65 %), the recommender holds six (78 %): the page draws what it holds
    assert re.search(r"At most 78\.0\s%", page) and "At most 65.0" not in page
    # ... and so does the gain chart: its pale ceiling bar is the stake share, not the evidence rows' sum
    (row,) = [g for g in section(parse(page), "gains").find_all("g", "row")]
    ceiling = row.find_all("rect", "ceiling")[0]
    assert plain(ceiling.text()) == "at stake: 78.0 %"
    assert "First step:</strong> Fuse them." in page
