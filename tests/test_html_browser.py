"""The HTML report in a real browser: headless Chromium lays it out, screenshots it, logs nothing.

Two Chromium runs per report: (1) ``--dump-dom`` on a test-only copy of the page with a small
script that writes the layout boxes of the chart bars and labels into the DOM (the report itself
has no JavaScript, and its Content-Security-Policy would block one; headless Chromium has no
other JS-free way to report element boxes); (2) ``--screenshot`` of the untouched page at the
measured full height, with console logging on. The report has no script and fetches nothing, so
any console line at all (a CSP violation, a blocked request, an error) fails the test.

Set ADVISOR_KEEP_SCREENSHOTS=<dir> to keep the PNGs for a look.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from html_docs import compare_doc, yolo_profile_doc, yolo_suggest_doc
from opprof_advisor.render.html.compare import render_compare
from opprof_advisor.render.html.roofline import render_roofline
from opprof_advisor.render.html.suggest import render_suggest

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium", shutil.which("chromium-browser")) if p and Path(p).exists()), None)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install -y chromium); the real-browser check of the HTML report needs it",
)

WIDTH = 1280

MEASURE_SCRIPT = """<script>
(function () {
  function box(el) { var b = el.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; }
  var bars = Array.prototype.map.call(document.querySelectorAll("rect.bar"), function (r) {
    var row = r.closest("g.row"); var label = row ? row.querySelector("text").textContent : "";
    return {label: label, cls: r.getAttribute("class"), box: box(r)};
  });
  var texts = Array.prototype.map.call(document.querySelectorAll("figure.chart svg text"), function (t) {
    return {text: t.textContent, box: box(t), svg: box(t.ownerSVGElement)};
  });
  var dots = Array.prototype.map.call(document.querySelectorAll("g.dot"), function (g) {
    var c = g.querySelector("circle"); var b = box(c);
    return {op: g.getAttribute("data-op"), cls: c.getAttribute("class"), cx: b[0] + b[2] / 2, cy: b[1] + b[3] / 2, r: b[2] / 2};
  });
  var roofs = Array.prototype.map.call(document.querySelectorAll("polyline.roof"), function (p) {
    var svg = p.ownerSVGElement, m = svg.getScreenCTM();
    return p.points ? Array.prototype.map.call(p.points, function (pt) { return [pt.x * m.a + m.e, pt.y * m.d + m.f]; }) : [];
  });
  var out = {
    dots: dots,
    roofs: roofs,
    scrollHeight: document.documentElement.scrollHeight,
    scrollWidth: document.documentElement.scrollWidth,
    charts: Array.prototype.map.call(document.querySelectorAll("figure.chart svg"), box),
    verdict: document.querySelector(".verdict") ? box(document.querySelector(".verdict")) : null,
    firstCard: document.querySelector("article.card.first") ? box(document.querySelector("article.card.first")) : null,
    bars: bars,
    texts: texts
  };
  var pre = document.createElement("pre"); pre.id = "layout-measure"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def run_chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """One headless Chromium run with a fresh profile, networking extras off, console logged to stderr."""
    profile = tmp / f"chromium-profile-{len(list(tmp.glob('chromium-profile-*')))}"
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--hide-scrollbars", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def measure_layout(page: str, tmp: Path) -> dict:
    """Load a copy of the page with the measuring script and read the boxes back from the dumped DOM."""
    # The copy drops the CSP (it would block the test script, as it should); the screenshot run keeps it.
    copy = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace("</body>", MEASURE_SCRIPT + "</body>")
    path = tmp / "measure.html"
    path.write_text(copy, encoding="utf-8")
    done = run_chromium(tmp, f"--window-size={WIDTH},900", "--dump-dom", path.as_uri())
    found = re.search(r'<pre id="layout-measure">(.*?)</pre>', done.stdout, re.S)
    assert found, f"no measurement in the dumped DOM; chromium exit {done.returncode}: {done.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def console_lines(stderr: str) -> list[str]:
    """Console messages (any level: this page must log nothing) and uncaught errors."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def load_report(page: str, name: str, tmp: Path) -> dict:
    """Measure the page, then screenshot it at full height; return both results."""
    layout = measure_layout(page, tmp)
    path = tmp / f"{name}.html"
    path.write_text(page, encoding="utf-8")
    shot = tmp / f"{name}.png"
    height = max(int(layout["scrollHeight"]), 600)
    done = run_chromium(tmp, f"--window-size={WIDTH},{height}", f"--screenshot={shot}", path.as_uri())
    keep = os.environ.get("ADVISOR_KEEP_SCREENSHOTS")
    if keep and shot.exists():
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    return {"layout": layout, "shot": shot, "run": done, "height": height}


@pytest.fixture(scope="module")
def suggest_report(tmp_path_factory) -> dict:
    doc = yolo_suggest_doc()
    # Long titles in wide glyphs (real KB titles) are the labels most likely to overflow the chart.
    doc["suggestions"][0]["title"] = "Run NMS (non-maximum suppression) on the NPU instead of the CPU / AI CPU"
    doc["suggestions"][2]["title"] = "MTE2-bound (memory-load-bound) kernels: bigger tiles, more cores, L2-friendly order"
    page = render_suggest(doc, yolo_profile_doc())
    return load_report(page, "suggest-report", tmp_path_factory.mktemp("browser-suggest"))


@pytest.fixture(scope="module")
def compare_report(tmp_path_factory) -> dict:
    page = render_compare(compare_doc())
    return load_report(page, "compare-report", tmp_path_factory.mktemp("browser-compare"))


def test_full_page_screenshot_is_a_real_layout(suggest_report):
    run, shot, layout = suggest_report["run"], suggest_report["shot"], suggest_report["layout"]
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.exists(), run.stderr[-2000:]
    width, height = png_size(shot)
    assert (width, height) == (WIDTH, suggest_report["height"])
    # A report with a verdict, three charts' worth of sections and three cards is several screens long.
    assert layout["scrollHeight"] > 2000
    # A blank or unstyled page compresses to a few kB; this one has coloured bars and text throughout.
    assert shot.stat().st_size > 100_000
    assert layout["scrollWidth"] <= WIDTH, "the page overflows horizontally at 1280 px"


def test_no_console_message_and_no_blocked_request(suggest_report, compare_report):
    for report in (suggest_report, compare_report):
        assert console_lines(report["run"].stderr) == []


def test_verdict_is_visible_without_scrolling(suggest_report):
    left, top, width, height = suggest_report["layout"]["verdict"]
    assert width > 600 and height > 80
    assert top + height < 700, "the 'fix first' verdict must be on the first screen"


def test_every_chart_and_bar_has_a_box(suggest_report):
    layout = suggest_report["layout"]
    assert len(layout["charts"]) == 3  # family chart, top operators and gain chart (the document has no steps)
    for _, _, width, height in layout["charts"]:
        assert width > 800 and height > 80
    assert layout["bars"], "no chart bar was laid out"
    for bar in layout["bars"]:
        _, _, width, height = bar["box"]
        assert width > 0 and height > 0, bar


def test_bar_lengths_follow_the_shares(suggest_report):
    bars = {(b["label"], b["cls"]): b["box"][2] for b in suggest_report["layout"]["bars"]}
    conv = bars[("Conv2D", "bar u-core")]
    nms = bars[("NMS", "bar u-cpu")]
    pooling = bars[("Pooling", "bar u-vector")]
    # Shares in the profile: Conv2D 31 %, NMS 18 %, Pooling 2 %, on one linear axis.
    assert nms / conv == pytest.approx(18 / 31, rel=0.02)
    assert pooling / conv == pytest.approx(2 / 31, rel=0.05)


def test_chart_labels_are_laid_out_and_inside_the_page(suggest_report):
    texts = suggest_report["layout"]["texts"]
    labels = {t["text"]: t["box"] for t in texts}
    assert "NMS" in labels and labels["NMS"][2] > 0
    value = next(t for t in texts if t["text"].startswith("18.0"))
    assert value["box"][2] > 50
    for t in texts:
        left, _, width, _ = t["box"]
        svg_left, _, svg_width, _ = t["svg"]
        # Labels must fit their chart: printing (no side padding) would cut anything outside it.
        assert left >= svg_left - 0.5 and left + width <= svg_left + svg_width + 0.5, f"chart text outside its chart: {t}"


def test_compare_lanes_show_nms_moving_off_the_ai_cpu(compare_report):
    bars = [b for b in compare_report["layout"]["bars"] if b["label"] == "NMS"]
    classes = [b["cls"] for b in bars]
    assert classes == ["bar u-cpu before", "bar u-core"]
    before, after = (b["box"][2] for b in bars)
    assert after / before == pytest.approx(1_440.0 / 8_685.0, rel=0.03)


def roofline_doc() -> dict:
    """An `advisor roofline` document written out by hand: two MatMuls and an implausible kernel."""
    peaks = {"chip": "Ascend910B2", "aic": 24, "freq_mhz": 1800.0, "hbm_gbps": 1600.0,
             "cube_tflops": {"fp16": 353.894, "bf16": 353.894, "int8": 707.789}}
    rows = [
        # intensity 1365.3 flop/B, 137.4 TFLOP/s (the 4096^3 example), 1000 us
        {"op_type": "MatMulV3", "unit": "ai_core", "time_us": 1000.0, "status": "judged", "intensity": 1365.333,
         "achieved_tflops": 137.439, "efficiency": 0.3884, "headroom_us": 611.6, "roof": "compute",
         "model_gain_low": 0.3527, "model_gain_high": 0.4452},
        # intensity 13.65 flop/B (100x less), 13.74 TFLOP/s (10x less), 250 us: a quarter of the time
        {"op_type": "BatchMatMulV2", "unit": "ai_core", "time_us": 250.0, "status": "judged", "intensity": 13.653,
         "achieved_tflops": 13.744, "efficiency": 0.629, "headroom_us": 92.7, "roof": "bandwidth"},
        # 30x the compute roof: drawn hollow, above the roof
        {"op_type": "MatMulV2", "unit": "ai_core", "time_us": 828.5, "status": "implausible", "intensity": 5461.3,
         "achieved_tflops": 10616.8, "efficiency": 30.0, "roof": "compute",
         "reason": "3000% of attainable is above 110%: peak, shapes or units wrong; not a gain"},
    ]
    return {"schema": "opprof-advisor/roofline/1", "source": {"path": "/runs/llm_ascend_pt", "format": "torch-npu-text"},
            "device_time_us": 2078.5, "compute_time_us": 2078.5, "peaks": peaks, "op_types": rows, "notes": []}


@pytest.fixture(scope="module")
def roofline_report(tmp_path_factory) -> dict:
    return load_report(render_roofline(roofline_doc()), "roofline-report", tmp_path_factory.mktemp("browser-roofline"))


def test_roofline_chart_places_dots_on_log_axes_under_the_roof(roofline_report):
    run, layout = roofline_report["run"], roofline_report["layout"]
    assert run.returncode == 0 and console_lines(run.stderr) == []
    dots = {d["op"]: d for d in layout["dots"]}
    assert set(dots) == {"MatMulV3", "BatchMatMulV2", "MatMulV2"}
    big, small, bad = dots["MatMulV3"], dots["BatchMatMulV2"], dots["MatMulV2"]
    # Log axes: 100x in intensity is twice the screen distance of 10x in TFLOP/s only if the decades have
    # the ratio of the plot's width and height per decade; compare each axis with itself instead:
    # x: log10(1365.3 / 13.653) = 2 decades; the implausible dot is log10(5461.3 / 1365.3) = 0.602 decade right.
    assert (bad["cx"] - big["cx"]) / (big["cx"] - small["cx"]) == pytest.approx(0.602 / 2.0, rel=0.02)
    # y grows upward: 137.4 TFLOP/s is one decade above 13.74.
    assert small["cy"] > big["cy"] > bad["cy"]
    # Area by time: 1000 us vs 250 us -> radius 4 + 14 * sqrt(t / 1000): 18 vs 11 (chart units, same scale).
    assert big["r"] / small["r"] == pytest.approx(18 / 11, rel=0.03)
    assert "implausible" in bad["cls"] and "implausible" not in big["cls"]


def test_roofline_plausible_dots_are_below_the_roof_and_the_bad_one_above(roofline_report):
    layout = roofline_report["layout"]
    lowest_roof = min(layout["roofs"], key=lambda pts: -pts[-1][1])  # the FP16/BF16 roof (lower peak = larger y)
    flat_y = lowest_roof[-1][1]
    dots = {d["op"]: d for d in layout["dots"]}
    assert dots["MatMulV3"]["cy"] > flat_y  # 137.4 < 353.9 TFLOP/s: below the flat part
    assert dots["MatMulV2"]["cy"] < flat_y  # 30x the peak: above it
    for text in layout["texts"]:
        left, _, width, _ = text["box"]
        svg_left, _, svg_width, _ = text["svg"]
        assert left >= svg_left - 0.5 and left + width <= svg_left + svg_width + 0.5, text


@pytest.fixture(scope="module")
def chinese_report(tmp_path_factory) -> dict:
    from opprof_advisor.core.i18n import set_lang

    doc = yolo_suggest_doc()
    # Long Chinese titles, cut by width (page.shorten); with a CJK font a Han glyph is about 1.6 Latin characters.
    doc["suggestions"][0]["zh"] = {"title": "把 NMS（非极大值抑制）从 CPU / AI CPU 挪到 NPU 上：用 npu_batch_nms 批量处理"}
    doc["suggestions"][1]["zh"] = {"title": "让 Cast 与 Gather 不再回退到 AI CPU：避免 int64 / float64 输入的算子"}
    doc["suggestions"][2]["zh"] = {"title": "在卷积之间保持同一种数据格式，减少 TransData 格式转换带来的额外耗时"}
    set_lang("zh")
    try:
        page = render_suggest(doc, yolo_profile_doc())
    finally:
        set_lang("en")
    return load_report(page, "suggest-report-zh", tmp_path_factory.mktemp("browser-zh"))


def test_the_chinese_report_lays_out_its_labels_inside_the_charts_and_logs_nothing(chinese_report):
    run, layout = chinese_report["run"], chinese_report["layout"]
    assert run.returncode == 0 and console_lines(run.stderr) == []
    assert layout["scrollWidth"] <= WIDTH
    left, top, width, height = layout["verdict"]
    assert top + height < 700, "the 'fix first' verdict must be on the first screen in Chinese too"
    labels = [t for t in layout["texts"] if t["text"].startswith("#")]
    assert len(labels) == 3 and labels[0]["text"].endswith("…")  # the long first title is cut, not overflowing
    for t in layout["texts"]:
        left, _, width, _ = t["box"]
        svg_left, _, svg_width, _ = t["svg"]
        assert left >= svg_left - 0.5 and left + width <= svg_left + svg_width + 0.5, f"chart text outside its chart: {t}"


def inside(inner: list[float], outer: list[float], slack: float = 0.5) -> bool:
    """Whether box ``inner`` (left, top, width, height) lies within ``outer``."""
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack
            and inner[0] + inner[2] <= outer[0] + outer[2] + slack and inner[1] + inner[3] <= outer[1] + outer[3] + slack)


def test_a_real_whole_run_report_lays_out_its_step_bar_gain_ranges_and_marked_rank(real_profiles, tmp_path):
    from opprof_advisor import commands
    from opprof_advisor.render.html.profile import render_profile

    doc = commands.suggest(real_profiles / "msinsight-torch-npu/text/level1/rank0_ascend_pt")
    report = load_report(render_suggest(doc), "suggest-level1", tmp_path)
    run, layout = report["run"], report["layout"]
    assert run.returncode == 0 and console_lines(run.stderr) == []
    assert layout["scrollWidth"] <= WIDTH
    # step bar, top operators, families and gains: four charts, every bar with a box
    assert len(layout["charts"]) == 4
    step = {b["cls"]: b["box"] for b in layout["bars"] if b["label"] == "step 50"}
    assert set(step) == {"bar u-core", "bar u-comm", "bar u-unknown"}
    split = doc["profile_document"]["steps"]["per_step"][0]
    assert step["bar u-comm"][2] / step["bar u-unknown"][2] == pytest.approx(split["exposed_us"] / split["free_us"],
                                                                           rel=0.01)
    # the shares written in their bars are inside them
    for text, cls in (("74.7\u00a0%", "bar u-comm"), ("18.8\u00a0%", "bar u-unknown")):
        (found,) = [t for t in layout["texts"] if t["text"] == text]
        assert inside(found["box"], step[cls]), (text, found["box"], step[cls])
    # every finding has its gain range drawn, longer for the wider range
    ranges = [b for b in layout["bars"] if b["cls"] in ("bar g-first", "bar g-range")]
    assert len(ranges) == len(doc["suggestions"]) and all(b["box"][2] > 5 for b in ranges)
    gains = [s["expected_gain"] for s in doc["suggestions"]]
    assert ranges[0]["box"][2] / ranges[1]["box"][2] == pytest.approx(
        (gains[0]["high_pct"] - gains[0]["low_pct"]) / (gains[1]["high_pct"] - gains[1]["low_pct"]), rel=0.02)
    for t in layout["texts"]:
        assert inside([t["box"][0], t["svg"][1], t["box"][2], 0], [t["svg"][0], t["svg"][1], t["svg"][2], 1]), t
    # the cluster of eight ranks: per-rank bars, the rank the others wait for among them, all inside the page
    cluster = load_report(render_profile(commands.profile(real_profiles / "msprof-analyze-ut/cluster_8rank")),
                          "profile-cluster", tmp_path)
    assert cluster["run"].returncode == 0 and console_lines(cluster["run"].stderr) == []
    labels = {b["label"] for b in cluster["layout"]["bars"]}
    assert {f"rank{i}" for i in range(8)} <= labels
    value = [t for t in cluster["layout"]["texts"] if "waited for" in t["text"]]
    (box, svg) = (value[0]["box"], value[0]["svg"]) if len(value) == 1 else (None, None)
    assert box and inside([box[0], 0, box[2], 0], [svg[0], 0, svg[2], 0]), value  # the marked rank's value fits
