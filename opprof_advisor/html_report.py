"""Single-file HTML reports built from the JSON documents the commands already produce.

``render_suggest``, ``render_profile``, ``render_compare`` and ``render_scan`` turn an
``opprof-advisor/<command>/1`` document into one self-contained page: inline CSS, inline SVG charts,
no JavaScript and nothing fetched from the network (Ascend clusters are often offline).
``write_report`` writes the page atomically. Every string that comes from a profile or a KB file
goes through ``esc``; only http(s) sources become links. A Content-Security-Policy in the page
blocks scripts and remote loads even if a bug ever let markup through.

Number conventions of the documents: ``share`` fields are fractions of device time (0..1);
``*_pct`` fields are percentages (0..100); times are microseconds.
"""

from __future__ import annotations

import html
import math
import re
import zlib
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlsplit

from opprof_advisor import __version__
from opprof_advisor.cann_support import CATEGORY_TITLES
from opprof_advisor.errors import AdvisorError
from opprof_advisor.vocabulary import EVIDENCE_GRADES, SYMPTOMS, UNIT_CLASS, UNITS

NBSP = "\u00a0"
TOP_FAMILIES = 10
TOP_COMPARE = 12
MAX_TABLE_ROWS = 200
LABEL_CHARS = 32

#: Display class (vocabulary.UNIT_CLASS values) -> CSS class carrying its colour.
CLASS_CSS: dict[str, str] = {
    "AI Core": "u-core",
    "AI Vector": "u-vector",
    "AI CPU": "u-cpu",
    "communication": "u-comm",
    "other": "u-other",
    "unknown": "u-unknown",
}

# Content-Security-Policy: inline styles only; no script, no remote fetch of any kind.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def esc(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def as_float(value: Any) -> float | None:
    """A finite float, or None for missing / non-numeric / NaN values."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def format_us(us: Any) -> str:
    """A duration in µs as µs, ms or s with sensible precision."""
    value = as_float(us)
    if value is None:
        return "—"
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.2f}{NBSP}s"
    if size >= 1e4:
        return f"{value / 1e3:.1f}{NBSP}ms"
    if size >= 1e3:
        return f"{value / 1e3:.2f}{NBSP}ms"
    if size >= 10 or size == 0:
        return f"{value:.0f}{NBSP}µs"
    return f"{value:.1f}{NBSP}µs"


def format_share(share: Any) -> str:
    """A 0..1 share as a percentage."""
    value = as_float(share)
    if value is None:
        return "—"
    return format_pct(value * 100)


def format_pct(pct: Any, *, signed: bool = False) -> str:
    """A 0..100 percentage, one decimal (``<0.1 %`` for tiny non-zero values)."""
    value = as_float(pct)
    if value is None:
        return "—"
    if value != 0 and abs(value) < 0.05 and not signed:
        return f"<0.1{NBSP}%"
    text = f"{value:+.1f}" if signed else f"{value:.1f}"
    return text.replace("-", "−") + f"{NBSP}%"


def format_count(count: Any) -> str:
    """An integer count with thousands separators."""
    value = as_float(count)
    return "—" if value is None else f"{int(value):,}"


def shorten(text: Any, limit: int = LABEL_CHARS) -> str:
    """Cut a label to ``limit`` characters with an ellipsis."""
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_us_range(low: Any, high: Any) -> str:
    """``5.21–7.82 ms`` (one unit when both ends share it), or a single value when they are equal."""
    lo, hi = format_us(low), format_us(high)
    if lo == hi:
        return hi
    lo_num, _, lo_unit = lo.partition(NBSP)
    hi_num, _, hi_unit = hi.partition(NBSP)
    return f"{lo_num}–{hi}" if lo_unit == hi_unit else f"{lo} – {hi}"


def unit_class(unit: Any) -> str:
    """The display class (AI Core / AI Vector / AI CPU / communication / other / unknown) of a unit id."""
    return UNIT_CLASS.get(str(unit or "unknown"), "unknown")


def unit_label(unit: Any) -> str:
    """A readable name of a unit id."""
    return UNITS.get(str(unit or "unknown"), str(unit or "unknown"))


# --------------------------------------------------------------------------------------------
# Small HTML pieces
# --------------------------------------------------------------------------------------------


def render_source(source: Any, *, short: bool = False) -> str:
    """A source as a link when it is an http(s) URL, as plain text otherwise."""
    if isinstance(source, dict):
        url, text = source.get("url") or "", source.get("title") or source.get("url") or ""
    else:
        url = text = "" if source is None else str(source)
    if is_web_url(url):
        text = short_url(text) if short and text == url else text
        return f'<a href="{esc(url.strip())}" rel="noopener noreferrer">{esc(text)}</a>'
    return f'<span class="source-text">{linkify(text, short=short)}</span>'


def linkify(text: str, *, short: bool = False) -> str:
    """Escaped text in which the http(s) URLs written inside it become links."""
    out, last = [], 0
    for match in URL_IN_TEXT.finditer(text):
        url = match.group(0).rstrip(".,;:")
        if not is_web_url(url):
            continue
        out.append(esc(text[last:match.start()]))
        shown = short_url(url) if short else url
        out.append(f'<a href="{esc(url)}" rel="noopener noreferrer">{esc(shown)}</a>')
        last = match.start() + len(url)
    out.append(esc(text[last:]))
    return "".join(out)


URL_IN_TEXT = re.compile(r"https?://[^\s<>\"'()\[\]{}]+", re.IGNORECASE)


def short_url(url: str) -> str:
    """host/…/last-part of a long URL, for narrow table cells (the link keeps the full URL)."""
    parts = urlsplit(url.strip())
    tail = parts.path.rstrip("/").rsplit("/", 1)[-1]
    full = parts.netloc + parts.path
    return full if len(full) <= 40 else f"{parts.netloc}/…/{tail}"


def is_web_url(text: str) -> bool:
    """True for an absolute http(s) URL with a host (never javascript:, data:, file: ...)."""
    try:
        parts = urlsplit(text.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def render_sources(sources: Iterable[Any]) -> str:
    """The list of an entry's sources."""
    items = [f"<li>{render_source(s)}</li>" for s in sources or []]
    if not items:
        return '<p class="muted small">No source recorded.</p>'
    return f'<ul class="sources">{"".join(items)}</ul>'


def render_facts(facts: list[tuple[str, str]]) -> str:
    """A grid of label/value pairs (values are already escaped HTML)."""
    cells = "".join(f"<div><dt>{esc(label)}</dt><dd>{value}</dd></div>" for label, value in facts)
    return f'<dl class="facts">{cells}</dl>'


def render_notes(notes: Iterable[Any]) -> str:
    """The notes list; "cannot judge X" prefixes are emphasised."""
    items = []
    for note in notes:
        text = str(note)
        head, sep, rest = text.partition(":")
        if sep and head.lower().startswith("cannot judge"):
            items.append(f"<li><strong>{esc(head)}:</strong>{esc(rest)}</li>")
        else:
            items.append(f"<li>{esc(text)}</li>")
    return f'<ul class="notes">{"".join(items)}</ul>'


def render_notes_section(notes: list[Any]) -> str:
    """The section with everything the data could not support."""
    if not notes:
        body = '<p class="muted">No limits recorded: the data supported every check.</p>'
    else:
        body = (
            '<p class="muted small">What the data could not support, and what to collect next.</p>'
            + render_notes(notes)
        )
    return section("notes", "What the data cannot tell", body)


def section(key: str, title: str, body: str) -> str:
    """A titled block of the page."""
    return (
        f'<section class="block" id="{esc(key)}" aria-labelledby="{esc(key)}-h">'
        f'<h2 id="{esc(key)}-h">{esc(title)}</h2>{body}</section>'
    )


def render_table(head: list[tuple[str, bool]], rows: list[str], caption: str = "", css: str = "") -> str:
    """A table: ``head`` holds (title, numeric) pairs, ``rows`` ready ``<tr>`` strings."""
    num_attr = ' class="num"'
    cells = "".join(f'<th scope="col"{num_attr if num else ""}>{esc(t)}</th>' for t, num in head)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    cls = f' class="{esc(css)}"' if css else ""
    return f'<div class="table-wrap"><table{cls}>{cap}<thead><tr>{cells}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def render_legend(items: list[tuple[str, str]]) -> str:
    """A colour legend: (css class, label) pairs."""
    cells = "".join(f'<li><span class="swatch {cls}" aria-hidden="true"></span>{esc(label)}</li>' for cls, label in items)
    return f'<ul class="legend">{cells}</ul>'


def unit_legend(classes: Iterable[str]) -> str:
    """The legend of the unit classes present in a chart, in a fixed order."""
    present = set(classes)
    return render_legend([(css, name) for name, css in CLASS_CSS.items() if name in present])


# --------------------------------------------------------------------------------------------
# SVG bar charts
# --------------------------------------------------------------------------------------------


@dataclass
class Segment:
    """One coloured span of a bar, in chart units."""

    start: float
    end: float
    css: str
    tip: str = ""


@dataclass
class BarRow:
    """One labelled row of a horizontal bar chart; each lane is one bar made of segments."""

    label: str
    lanes: list[list[Segment]]
    value: str
    strong: bool = False
    note: str = ""  # text drawn in an empty lane (e.g. "no sourced gain")


@dataclass
class Chart:
    """A horizontal bar chart and how to describe it."""

    rows: list[BarRow]
    largest: float  # the largest value drawn; the axis ends at the next round tick
    tick: Any  # callable: chart value -> tick text
    title: str
    caption: str = ""
    css: str = "chart"
    integer: bool = False  # counts: ticks on whole numbers only


CHART_W, LABEL_W, VALUE_W, LANE_H, LANE_GAP, ROW_GAP, AXIS_H = 960, 260, 290, 18, 4, 14, 22


def nice_ceiling(value: float) -> float:
    """The smallest 1/2/2.5/5 × 10^n at or above ``value``."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude * (1 + 1e-9):
            return step * magnitude
    return 10 * magnitude


def render_chart(chart: Chart) -> str:
    """A horizontal bar chart as an inline SVG figure with text labels on every bar."""
    bar_w = CHART_W - LABEL_W - VALUE_W
    step, xmax = axis_scale(chart.largest, chart.integer)
    scale = bar_w / xmax
    parts, y = [], AXIS_H
    for row in chart.rows:
        parts.append(render_chart_row(row, y, scale, bar_w))
        y += len(row.lanes) * (LANE_H + LANE_GAP) - LANE_GAP + ROW_GAP
    height = y
    axis = render_axis(chart, step, xmax, bar_w, height)
    desc = "; ".join(f"{r.label}: {r.value or r.note}" for r in chart.rows)
    svg = (
        f'<svg class="{esc(chart.css)}" viewBox="0 0 {CHART_W} {height}" width="{CHART_W}" height="{height}" '
        f'role="img" aria-labelledby="{{id}}-t {{id}}-d" preserveAspectRatio="xMinYMin meet">'
        f'<title id="{{id}}-t">{esc(chart.title)}</title><desc id="{{id}}-d">{esc(desc)}</desc>'
        f'{axis}{"".join(parts)}</svg>'
    )
    chart_id = f"c{zlib.crc32((chart.title + desc).encode()):08x}"  # stable across runs, unlike hash()
    svg = svg.replace("{id}", chart_id)
    caption = f"<figcaption>{esc(chart.caption)}</figcaption>" if chart.caption else ""
    return f'<figure class="chart">{svg}{caption}</figure>'


def axis_scale(largest: float, integer: bool = False) -> tuple[float, float]:
    """(tick step, axis end): 3–5 round steps of 1/2/2.5/5 × 10^n covering ``largest``."""
    step = nice_ceiling(largest / 4) if largest > 0 else 1.0
    if integer:
        step = max(1.0, float(math.ceil(step)))
    end = max(step, math.ceil(largest / step - 1e-9) * step)
    return step, end


def render_axis(chart: Chart, step: float, xmax: float, bar_w: float, height: float) -> str:
    """Grid lines and tick labels at round values."""
    out = []
    count = int(round(xmax / step))
    for i in range(count + 1):
        value = step * i
        x = LABEL_W + bar_w * value / xmax
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{AXIS_H - 4}" x2="{x:.1f}" y2="{height - ROW_GAP + 4}"/>')
        anchor = "start" if i == 0 else ("end" if i == count else "middle")
        out.append(f'<text class="tick" x="{x:.1f}" y="{AXIS_H - 8}" text-anchor="{anchor}">{esc(chart.tick(value))}</text>')
    return "".join(out)


def render_chart_row(row: BarRow, y: float, scale: float, bar_w: float) -> str:
    """The label, the lanes and the value text of one chart row."""
    lanes_h = len(row.lanes) * (LANE_H + LANE_GAP) - LANE_GAP
    mid = y + lanes_h / 2 + 4.5
    weight = ' class="strong"' if row.strong else ""
    out = [
        f'<g class="row"><title>{esc(row.label)}: {esc(row.value or row.note)}</title>',
        f'<text x="{LABEL_W - 10}" y="{mid:.1f}" text-anchor="end"{weight}>{esc(shorten(row.label, label_chars(row.strong)))}</text>',
    ]
    for lane_no, lane in enumerate(row.lanes):
        top = y + lane_no * (LANE_H + LANE_GAP)
        out.append(f'<rect class="track" x="{LABEL_W}" y="{top:.1f}" width="{bar_w:.1f}" height="{LANE_H}" rx="3"/>')
        for seg in lane:
            out.append(render_segment(seg, top, scale))
    if row.note and not any(row.lanes[0]):
        out.append(f'<text class="tick" x="{LABEL_W + 8}" y="{mid:.1f}">{esc(row.note)}</text>')
    out.append(f'<text class="value" x="{CHART_W - VALUE_W + 10}" y="{mid:.1f}">{esc(row.value)}</text></g>')
    return "".join(out)


def label_chars(bold: bool) -> int:
    """How many characters of a 13px label fit the label column (bold glyphs are wider).

    Sized for wide fallback fonts (DejaVu Sans, the usual system-ui on Linux servers), measured in
    Chromium: about 8.0 units per character, 8.9 in bold.
    """
    return int((LABEL_W - 16) / (8.9 if bold else 8.0))


def render_segment(seg: Segment, top: float, scale: float) -> str:
    """One coloured rect; a visible sliver (1.5 units) for tiny non-zero values."""
    x = LABEL_W + max(seg.start, 0.0) * scale
    width = max((seg.end - seg.start) * scale, 1.5 if seg.end > seg.start else 0.0)
    tip = f"<title>{esc(seg.tip)}</title>" if seg.tip else ""
    return f'<rect class="bar {esc(seg.css)}" x="{x:.1f}" y="{top:.1f}" width="{width:.1f}" height="{LANE_H}" rx="3">{tip}</rect>'


# --------------------------------------------------------------------------------------------
# Profile pieces (shared by the profile and the suggest reports)
# --------------------------------------------------------------------------------------------


def family_rows(profile: dict) -> list[tuple[str, dict[str, float], float]]:
    """(family, {unit class: share}, time µs) of the document's ``families``, largest share first."""
    rows = []
    for item in profile.get("families") or []:
        if isinstance(item, dict):
            shares = {str(k): as_float(v) or 0.0 for k, v in (item.get("class_shares") or {}).items()}
            rows.append((str(item.get("family") or "?"), shares, as_float(item.get("time_us")) or 0.0))
    return rows


def family_chart(profile: dict) -> str:
    """The horizontal bar chart of the top operator families by share of device time."""
    families = family_rows(profile)
    if not families:
        return '<p class="muted">The profile lists no operators.</p>'
    top, rest = families[:TOP_FAMILIES], families[TOP_FAMILIES:]
    rows = [family_row(name, by_class, time_us) for name, by_class, time_us in top]
    largest = max(sum(by_class.values()) for _, by_class, _ in top) * 100
    caption = f"Share of device time ({format_us(profile.get('device_time_us'))}) per operator family; colour = execution unit."
    if rest:
        rest_share = sum(sum(c.values()) for _, c, _ in rest)
        caption += f" {len(rest)} smaller families together: {format_share(rest_share)}."
    chart = Chart(rows, largest, lambda v: f"{v:g}{NBSP}%", "Top operator families by share of device time", caption)
    classes = {cls for _, by_class, _ in top for cls, share in by_class.items() if share > 0}
    return render_chart(chart) + unit_legend(classes)


def family_row(name: str, by_class: dict[str, float], time_us: float) -> BarRow:
    """One family bar, stacked by unit class in a fixed order."""
    segments, start = [], 0.0
    for cls, css in CLASS_CSS.items():
        share = by_class.get(cls, 0.0)
        if share <= 0:
            continue
        segments.append(Segment(start, start + share * 100, css, f"{cls}: {format_share(share)}"))
        start += share * 100
    units = " + ".join(cls for cls in CLASS_CSS if by_class.get(cls, 0.0) > 0) or "unknown"
    value = f"{format_share(sum(by_class.values()))} · {format_us(time_us)} · {units}"
    return BarRow(name, [segments], value)


VERSION_LABEL = {"cann": "CANN", "torch_npu": "torch_npu", "profiler_level": "Profiler level", "torch": "PyTorch", "driver": "Driver"}


def profile_facts(source: dict, profile: dict) -> list[tuple[str, str]]:
    """Key figures of a profile: times first (what a reader compares), then format, chip, versions."""
    facts = []
    device = as_float(profile.get("device_time_us"))
    facts.append(("Device time", esc(format_us(device))))
    for key, label in (("compute_time_us", "Compute"), ("communication_time_us", "Communication")):
        value = as_float(profile.get(key))
        if value is not None:
            share = f" ({format_share(value / device)})" if device else ""
            facts.append((label, esc(format_us(value) + share)))
    facts.append(("Format", esc(source.get("format") or "unknown")))
    chip = source.get("chip") or profile.get("chip")
    facts.append(("Chip", esc(chip) if chip else '<span class="muted">not recorded</span>'))
    versions = source.get("versions") or profile.get("versions") or {}
    if isinstance(versions, dict):
        for key, value in versions.items():
            facts.append((VERSION_LABEL.get(str(key), str(key).replace("_", " ").capitalize()), esc(value)))
    for key, value in source.items():
        if key not in ("path", "format", "chip", "versions") and not key.endswith("_us") and is_scalar(value) and value is not None:
            facts.append((VERSION_LABEL.get(key, key.replace("_", " ").capitalize()), esc(value)))
    return facts


def compute_split(profile: dict) -> str:
    """A thin compute-versus-communication bar (with a text equivalent)."""
    compute = as_float(profile.get("compute_time_us")) or 0.0
    comm = as_float(profile.get("communication_time_us")) or 0.0
    total = compute + comm
    if total <= 0:
        return ""
    if comm <= 0:
        # A full bar of one colour says nothing; one sentence says it all.
        return '<p class="small muted">All device task time is compute: no communication tasks recorded.</p>'
    spans = (
        f'<span class="u-core" style="width:{compute / total * 100:.2f}%"></span>'
        f'<span class="u-comm" style="width:{comm / total * 100:.2f}%"></span>'
    )
    text = f"Compute {format_pct(compute / total * 100)} · communication {format_pct(comm / total * 100)} of device task time"
    return f'<div class="split" role="img" aria-label="{esc(text)}">{spans}</div><p class="small muted">{esc(text)}</p>'


def render_symptoms(symptoms: list[dict]) -> str:
    """The profile's symptoms: id, meaning, operators, share and detail."""
    if not symptoms:
        return '<p class="muted">No symptom found.</p>'
    items = []
    for sym in symptoms:
        sid = str(sym.get("id") or "?")
        meaning = SYMPTOMS.get(sid, "")
        ops = ", ".join(str(o) for o in sym.get("op_types") or [])
        share = format_share(sym.get("share"))
        items.append(
            f'<li class="symptom"><span class="id mono">{esc(sid)}</span> — {esc(sym.get("detail") or meaning)}'
            f'<br><span class="small muted">{esc(share)} of device time'
            f'{(" · " + esc(ops)) if ops else ""}{(" · " + esc(meaning)) if meaning and sym.get("detail") else ""}</span></li>'
        )
    return f'<ul class="plain">{"".join(items)}</ul>'


def profile_summary_section(source: dict, profile: dict | None) -> str:
    """The profile summary block (figures, compute/communication split, symptoms)."""
    body = render_facts(profile_facts(source, profile or source))
    if profile:
        body += compute_split(profile)
        if profile.get("symptoms") is not None:
            body += "<h3>Symptoms found</h3>" + render_symptoms(profile.get("symptoms") or [])
    ranks = source.get("ranks") or (profile or {}).get("ranks")
    if isinstance(ranks, list) and ranks:
        body += "<h3>Ranks</h3>" + rank_chart(ranks) + rank_table(ranks)
    path = source.get("path")
    if path:
        body += f'<p class="small muted">Profile: <span class="mono">{esc(path)}</span></p>'
    return section("profile", "Profile summary", body)


# --------------------------------------------------------------------------------------------
# Page frame
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def load_css() -> str:
    """The report stylesheet shipped beside this module."""
    return resources.files("opprof_advisor").joinpath("html_report.css").read_text(encoding="utf-8")


def render_page(title: str, kicker: str, subtitle: str, blocks: list[str]) -> str:
    """The full HTML document around the content blocks."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="opprof-advisor {esc(__version__)}">\n'
        f"<title>{esc(title)}</title>\n<style>\n{load_css()}</style>\n</head>\n<body>\n"
        f'<header class="page-header"><div class="wrap"><p class="kicker">{esc(kicker)}</p>'
        f'<h1>{esc(title)}</h1><p class="subtitle">{esc(subtitle)}</p></div></header>\n'
        f'<main class="wrap">\n{chr(10).join(blocks)}\n</main>\n'
        f'<footer class="page-footer"><div class="wrap"><p>Generated by opprof-advisor {esc(__version__)}. '
        "Percentages are of the profile's device time unless stated otherwise; expected gains are bounded "
        "by the share of the matched operators (Amdahl).</p></div></footer>\n</body>\n</html>\n"
    )


def check_schema(doc: dict, command: str) -> None:
    """Refuse a document of another command (a wrong file passed to the wrong renderer)."""
    schema = str(doc.get("schema") or "") if isinstance(doc, dict) else ""
    if not schema.startswith(f"opprof-advisor/{command}/"):
        raise AdvisorError(
            f"not an opprof-advisor {command} document (schema {schema or 'missing'!r})",
            hint=f"render it with the {command} report, or regenerate it with `advisor {command} --format json`",
        )


def file_name(path: Any) -> str:
    """A short name of a path for titles: its last part, or its parent's when the last is machine-made."""
    parts = [p for p in str(path or "").replace("\\", "/").split("/") if p]
    if not parts:
        return "profile"
    # Profilers name folders host_pid_timestamp_ascend_pt / PROF_000001_2025...: the folder above says more.
    if len(parts) > 1 and re.search(r"\d{8,}", parts[-1]):
        return parts[-2]
    return parts[-1]


# --------------------------------------------------------------------------------------------
# suggest
# --------------------------------------------------------------------------------------------


def find_profile_doc(doc: dict, profile_doc: dict | None) -> dict | None:
    """The full profile document: the argument, an embedded one, or the summary if it is complete."""
    if profile_doc:
        return profile_doc
    for key in ("profile_doc", "profile_document"):
        if isinstance(doc.get(key), dict):
            return doc[key]
    summary = doc.get("profile")
    if isinstance(summary, dict) and "op_types" in summary:
        return summary
    return None


def render_suggest(doc: dict, profile_doc: dict | None = None) -> str:
    """The suggest report: verdict, profile summary, charts, one card per suggestion, notes."""
    check_schema(doc, "suggest")
    profile = find_profile_doc(doc, profile_doc)
    source = merged_source(doc.get("profile") or {}, profile)
    suggestions = doc.get("suggestions") or []
    notes = unique(list(doc.get("notes") or []) + list((profile or {}).get("notes") or []))
    blocks = [
        suggest_verdict(suggestions, profile),
        profile_summary_section(source, profile),
        section("families", "Where the device time goes", family_chart(profile) if profile else missing_profile_note()),
        section("gains", "Expected gain per suggestion", gain_chart(suggestions)),
        section("suggestions", "Suggestions", render_cards(suggestions, static=False)),
        roofline_section((profile or {}).get("roofline")),
        section("similar", "Similar cases", render_similar(doc.get("similar_cases") or [])),
        render_notes_section(notes),
    ]
    title = f"Tuning advice for {file_name(source.get('path'))}"
    return render_page(title, "opprof-advisor · suggest", subtitle_of(source), blocks)


def merged_source(summary: dict, profile: dict | None) -> dict:
    """Path/format/versions/chip/device time from the suggest summary and the profile document."""
    merged: dict[str, Any] = {}
    if profile:
        merged.update(profile.get("source") or {})
        for key in ("device_time_us", "compute_time_us", "communication_time_us"):
            if profile.get(key) is not None:
                merged[key] = profile[key]
    merged.update({k: v for k, v in summary.items() if v is not None and k not in ("op_types", "symptoms", "notes", "source")})
    return merged


def unique(items: list[Any]) -> list[Any]:
    """Items in order, first occurrence only."""
    seen, out = set(), []
    for item in items:
        key = str(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def subtitle_of(source: dict) -> str:
    """The subtitle under the title: path, format and device time."""
    bits = [str(source.get("path") or "")]
    if source.get("format"):
        bits.append(str(source["format"]))
    if as_float(source.get("device_time_us")) is not None:
        bits.append(f"device time {format_us(source['device_time_us'])}")
    return " · ".join(b for b in bits if b)


def missing_profile_note() -> str:
    """What the reader sees when the report was rendered without the profile document."""
    return (
        '<p class="muted">The operator breakdown is not part of this report: it was rendered from the '
        "suggestions alone. The evidence of each suggestion below lists the operators it concerns.</p>"
    )


def gain_text(gain: dict | None) -> tuple[str, str]:
    """(headline range in %, saved time range) of an expected gain, or empty strings."""
    if not gain:
        return "", ""
    low, high = as_float(gain.get("low_pct")), as_float(gain.get("high_pct"))
    if low is None or high is None:
        return "", ""
    pct = format_pct(high) if abs(high - low) < 0.05 else f"{format_pct(low)[:-2]}–{format_pct(high)}"
    lo_us, hi_us = as_float(gain.get("saved_us_low")), as_float(gain.get("saved_us_high"))
    saved = format_us_range(lo_us, hi_us) if lo_us is not None and hi_us is not None else ""
    return pct, saved


def suggest_verdict(suggestions: list[dict], profile: dict | None) -> str:
    """The top box: the first thing to fix and what it would save."""
    if not suggestions:
        return (
            '<section class="verdict" aria-labelledby="verdict-h"><p class="label">Verdict</p>'
            '<h2 class="headline" id="verdict-h">No advice matched this profile</h2>'
            "<p>No knowledge-base entry found evidence in this profile. See the notes below for what the data "
            "could not show.</p></section>"
        )
    first = suggestions[0]
    pct, saved = gain_text(first.get("expected_gain"))
    why = verdict_evidence(first, profile)
    if pct:
        ceiling = matched_share(first)
        bound = f" At most {format_share(ceiling)}: the share of the operators it fixes." if ceiling > 0 else ""
        saving = (
            f'<p>Expected to save <span class="big">{esc(pct)}</span> '
            f'{"of the step" if first.get("expected_gain", {}).get("of") == "step" else "of device time"}'
            f'{(" (" + esc(saved) + ")") if saved else ""}.<span class="small muted">{esc(bound)}</span></p>'
        )
    else:
        saving = "<p>No sourced gain figure for this advice: the size of the win is not known in advance.</p>"
    return (
        '<section class="verdict" aria-labelledby="verdict-h"><p class="label">Fix first</p>'
        f'<h2 class="headline" id="verdict-h">{esc(first.get("title") or first.get("id"))}</h2>'
        f"{why}{saving}"
        f'<p class="small muted">{len(suggestions)} suggestion{"s" if len(suggestions) != 1 else ""} ranked below; '
        "details, evidence and sources in the cards.</p></section>"
    )


def verdict_evidence(suggestion: dict, profile: dict | None) -> str:
    """One sentence naming the operators behind the first suggestion (and their unit when known)."""
    evidence = suggestion.get("evidence") or []
    if not evidence:
        return ""
    parts = []
    for e in evidence[:3]:
        unit = op_unit_class(profile, e.get("op_type"))
        where = (" in communication" if unit == "communication" else f" on the {unit}") if unit else ""
        parts.append(f"{e.get('op_type')} takes {format_share(e.get('share'))} of device time ({format_us(e.get('time_us'))}){where}")
    why = str(evidence[0].get("why") or "").rstrip(".")
    if len(why) > 140:  # the card has the full text; the verdict keeps the first clause
        why = why.split(";")[0][:140].rstrip()
    text = "; ".join(parts) + (f": {why}" if why else "")
    return f"<p>{esc(text)}.</p>"


def op_unit_class(profile: dict | None, op_type: Any) -> str:
    """The unit class an op type mostly ran on in the profile, or "" when unknown."""
    rows = [r for r in (profile or {}).get("op_types") or [] if r.get("op_type") == op_type]
    if not rows:
        return ""
    cls = unit_class(max(rows, key=lambda r: as_float(r.get("time_us")) or 0.0).get("unit"))
    return "" if cls == "unknown" else cls


def matched_share(suggestion: dict) -> float:
    """The share of the reference time at stake (the Amdahl ceiling the recommender holds), 0..1."""
    return min(as_float(suggestion.get("stake_share")) or 0.0, 1.0)


def gain_chart(suggestions: list[dict]) -> str:
    """Per suggestion: the expected gain range on top of the matched operators' share."""
    if not suggestions:
        return '<p class="muted">No suggestion, so no gain to chart.</p>'
    rows, largest = [], 0.0
    for i, sug in enumerate(suggestions):
        row, top = gain_row(sug, first=i == 0)
        rows.append(row)
        largest = max(largest, top)
    caption = (
        "Solid bar: expected end-to-end gain range (% of device time). Pale bar: share of device time of the "
        "matched operators — the most any fix to them can save."
    )
    if not any((s.get("expected_gain") or {}).get("high_pct") is not None for s in suggestions):
        caption += " No suggestion here has a sourced gain figure: the pale bars show the time at stake."
    chart = Chart(rows, largest, lambda v: f"{v:g}{NBSP}%", "Expected gain range per suggestion", caption)
    legend = render_legend([("g-first", "first suggestion"), ("g-range", "other suggestions"), ("ceiling", "matched operators' share")])
    return render_chart(chart) + legend


def gain_row(sug: dict, *, first: bool) -> tuple[BarRow, float]:
    """One gain-chart row and the largest value it needs on the axis."""
    label = f"#{sug.get('rank') or '?'} {sug.get('title') or sug.get('id')}"
    ceiling = matched_share(sug) * 100
    lane = [Segment(0.0, ceiling, "ceiling", f"matched operators: {format_pct(ceiling)}")] if ceiling > 0 else []
    gain = sug.get("expected_gain") or {}
    low, high = as_float(gain.get("low_pct")), as_float(gain.get("high_pct"))
    pct, saved = gain_text(gain)
    if low is None or high is None:
        return BarRow(label, [lane], "no sourced gain", strong=first), ceiling
    css = "g-first" if first else "g-range"
    lane.append(Segment(low, max(high, low), css, f"expected gain {pct}"))
    value = pct + (f" · {saved}" if saved else "")
    return BarRow(label, [lane], value, strong=first), max(ceiling, high)


def render_cards(suggestions: list[dict], *, static: bool) -> str:
    """One card per suggestion, the first one prominent."""
    if not suggestions:
        return '<p class="muted">No suggestion.</p>'
    cards = [render_card(sug, first=i == 0, static=static) for i, sug in enumerate(suggestions)]
    return f'<div class="cards">{"".join(cards)}</div>'


def render_card(sug: dict, *, first: bool, static: bool) -> str:
    """A suggestion card: title, badges, expected gain and basis, evidence, sources."""
    rank = sug.get("rank") or "?"
    key = f"s-{esc(rank)}"
    badges = card_badges(sug, first=first)
    evidence = render_evidence(sug.get("evidence") or [])
    extra = card_terms(sug)
    return (
        f'<article class="card{" first" if first else ""}" id="{key}" aria-labelledby="{key}-t">'
        f'<div class="card-head"><div class="titles"><p class="rank">#{esc(rank)}{" · fix first" if first else ""}</p>'
        f'<h3 id="{key}-t">{esc(sug.get("title") or sug.get("id"))}</h3>{badges}</div>'
        f"{gain_box(sug.get('expected_gain'), static=static)}</div>"
        f"{gain_basis(sug.get('expected_gain'))}{first_step(sug)}"
        f"<h4>Evidence</h4>{evidence}{extra}"
        f"<h4>Sources</h4>{render_sources(sug.get('sources') or [])}</article>"
    )


def card_badges(sug: dict, *, first: bool) -> str:
    """Fix-first, kind, evidence grade, entry id and match score."""
    grade = str(sug.get("evidence_grade") or "?")
    meaning = EVIDENCE_GRADES.get(grade, "grade not recorded")
    badges = []
    if sug.get("kind"):
        badges.append(f'<span class="badge">{esc(sug["kind"])}</span>')
    grade_css = f" grade-{grade}" if grade in EVIDENCE_GRADES else ""
    badges.append(f'<span class="badge{grade_css}">evidence {esc(grade)}: {esc(meaning)}</span>')
    badges.append(f'<span class="badge mono">{esc(sug.get("id"))}</span>')
    score = as_float(sug.get("score"))
    if score is not None:
        badges.append(f'<span class="badge">match score {score:.2f}</span>')
    return f'<p class="badges">{"".join(badges)}</p>'


def gain_box(gain: dict | None, *, static: bool) -> str:
    """The big expected-gain figure of a card."""
    pct, saved = gain_text(gain)
    if not pct:
        text = "no gain claimed from a static scan" if static else "no sourced gain figure"
        return f'<div class="gain-box"><p class="figure none">{esc(text)}</p></div>'
    of = "of the step" if (gain or {}).get("of") == "step" else "of device time"
    sub = f'<p class="sub">{of}</p>' + (f'<p class="sub">{esc(saved)} saved</p>' if saved else "")
    return f'<div class="gain-box"><p class="figure">{esc(pct)}</p>{sub}</div>'


def first_step(sug: dict) -> str:
    """How to start the fix, and where the rest of the steps are."""
    step = sug.get("first_step")
    if not step:
        return ""
    return (f'<p class="first-step"><strong>First step:</strong> {esc(step)} '
            f'<span class="muted small">The rest: <code>{esc(sug.get("show") or "advisor show " + str(sug.get("id")))}'
            "</code></span></p>")


def gain_basis(gain: dict | None) -> str:
    """How the expected gain was computed."""
    if not gain or not gain.get("basis"):
        return ""
    return f'<p class="basis"><strong>Basis:</strong> {esc(gain["basis"])}</p>'


def render_evidence(evidence: list[dict]) -> str:
    """The evidence table of a card: op type, time, share, why."""
    if not evidence:
        return '<p class="muted small">No operator evidence recorded.</p>'
    rows = [
        f'<tr><td class="name mono">{esc(e.get("op_type"))}</td><td class="num">{esc(format_us(e.get("time_us")))}</td>'
        f'<td class="num">{esc(format_share(e.get("share")))}</td><td class="why">{esc(e.get("why"))}</td></tr>'
        for e in evidence
    ]
    return render_table([("Operator", False), ("Time", True), ("Share", True), ("Why it matches", False)], rows)


def card_terms(sug: dict) -> str:
    """The entry's operators and tags, as a line of text."""
    bits = []
    if sug.get("operators"):
        bits.append("Operators: " + ", ".join(str(o) for o in sug["operators"]))
    if sug.get("tags"):
        bits.append("Tags: " + ", ".join(str(t) for t in sug["tags"]))
    return f'<p class="small muted">{esc(" · ".join(bits))}</p>' if bits else ""


def render_similar(cases: list[dict]) -> str:
    """The case studies whose operator mix is closest to the profile's."""
    if not cases:
        return '<p class="muted">No case study has an operator mix close to this profile.</p>'
    items = []
    for case in cases:
        sim = as_float(case.get("similarity"))
        sim_text = f" ({sim:.2f})" if sim is not None else ""
        items.append(
            f'<li>Your profile resembles <strong>{esc(case.get("title") or case.get("id"))}</strong>{esc(sim_text)} '
            f'<span class="small muted mono">{esc(case.get("id"))}</span></li>'
        )
    return (
        '<p class="small muted">Cosine similarity of operator-family shares (1.00 = same mix). Results of a case are '
        "what was observed in that case, not a promise for this model.</p>"
        f'<ul class="plain">{"".join(items)}</ul>'
    )


# --------------------------------------------------------------------------------------------
# profile
# --------------------------------------------------------------------------------------------


def render_profile(doc: dict) -> str:
    """The profile report: summary, family chart, op-type table, symptoms, notes."""
    check_schema(doc, "profile")
    source = merged_source({}, doc)
    blocks = [
        profile_verdict(doc),
        profile_summary_section(source, doc),
        section("families", "Where the device time goes", family_chart(doc)),
        section("op-types", "Operator types", op_type_table(doc.get("op_types") or [])),
        roofline_section(doc.get("roofline")),
    ]
    if isinstance(doc.get("kernel"), dict) and doc["kernel"]:
        blocks.append(section("kernel", "Kernel detail", kernel_facts(doc["kernel"])))
    blocks.append(render_notes_section(list(doc.get("notes") or [])))
    title = f"Operator profile of {file_name(source.get('path'))}"
    return render_page(title, "opprof-advisor · profile", subtitle_of(source), blocks)


def profile_verdict(doc: dict) -> str:
    """The top box of a profile report: the biggest family and the symptom count."""
    families = family_rows(doc)
    symptoms = doc.get("symptoms") or []
    if not families:
        headline, text = "No operators in this profile", "The profile lists no device task."
    else:
        name, by_class, time_us = families[0]
        units = " + ".join(c for c in CLASS_CSS if by_class.get(c, 0) > 0)
        headline = f"{name} takes {format_share(sum(by_class.values()))} of device time"
        text = f"{format_us(time_us)} on {units}."
    sym = f"{len(symptoms)} symptom{'s' if len(symptoms) != 1 else ''} found" + (
        ": " + ", ".join(str(s.get("id")) for s in symptoms) if symptoms else ""
    )
    return (
        '<section class="verdict" aria-labelledby="verdict-h"><p class="label">At a glance</p>'
        f'<h2 class="headline" id="verdict-h">{esc(headline)}</h2><p>{esc(text)}</p><p>{esc(sym)}. '
        "Run <code>advisor suggest --profile PATH</code> for ranked advice.</p></section>"
    )


def op_type_table(op_types: list[dict]) -> str:
    """Every (op type, unit) row: family, unit, count, time, share, bound class."""
    if not op_types:
        return '<p class="muted">No operator.</p>'
    rows = [
        f'<tr><td class="name mono">{esc(r.get("op_type"))}</td><td>{esc(r.get("family"))}</td>'
        f'<td><span class="swatch {CLASS_CSS[unit_class(r.get("unit"))]}" aria-hidden="true"></span> {esc(unit_label(r.get("unit")))}</td>'
        f'<td class="num">{esc(format_count(r.get("count")))}</td><td class="num">{esc(format_us(r.get("time_us")))}</td>'
        f'<td class="num">{esc(format_share(r.get("share")))}</td><td>{esc(r.get("bound") or "unknown")}</td></tr>'
        for r in op_types[:MAX_TABLE_ROWS]
    ]
    caption = "Sorted by time." + (
        f" Showing the first {MAX_TABLE_ROWS} of {len(op_types)} rows; the JSON output has all." if len(op_types) > MAX_TABLE_ROWS else ""
    )
    head = [("Op type", False), ("Family", False), ("Unit", False), ("Count", True), ("Time", True), ("Share", True), ("Bound", False)]
    return render_table(head, rows, caption)


#: Ranks drawn in the rank chart and listed in the rank table (the slowest and the fastest; JSON has all).
MAX_RANK_ROWS = 20


def _rank_key(rank: dict) -> float:
    computing = as_float(rank.get("computing_us"))
    return -(computing if computing is not None else -1.0)


def shown_ranks(ranks: list[dict]) -> tuple[list[dict], int]:
    """Ranks sorted by computation (slowest first), cut to the slowest and fastest; and how many are left out."""
    ordered = sorted(ranks, key=_rank_key)
    if len(ordered) <= MAX_RANK_ROWS:
        return ordered, 0
    return ordered[:MAX_RANK_ROWS - 5] + ordered[-5:], len(ordered) - MAX_RANK_ROWS


def rank_chart(ranks: list[dict]) -> str:
    """Per-rank step split (computing, exposed communication, free) as stacked bars, slowest computation first."""
    shown, hidden = shown_ranks([r for r in ranks if as_float(r.get("computing_us")) is not None])
    if len(shown) < 2:
        return ""
    rows, largest = [], 0.0
    for rank in shown:
        parts = [(as_float(rank.get(key)) or 0.0, css, label) for key, css, label in (
            ("computing_us", "u-core", "computing"), ("exposed_us", "u-comm", "exposed communication"),
            ("free_us", "u-unknown", "free"))]
        segments, start = [], 0.0
        for value, css, label in parts:
            if value > 0:
                segments.append(Segment(start, start + value, css, f"{label}: {format_us(value)}"))
                start += value
        largest = max(largest, start)
        rows.append(BarRow(str(rank.get("rank")), [segments], f"computing {format_us(parts[0][0])}"))
    caption = "Per rank: computing (blue), exposed communication (purple) and free time (grey), sorted by computing."
    if hidden:
        caption += f" {hidden} ranks between the slowest and the fastest are not drawn; the JSON output has all."
    return render_chart(Chart(rows, largest, lambda v: format_us(v), "Ranks by computation", caption))


def rank_table(ranks: list[dict]) -> str:
    """The rank table sorted by computation: the slowest rank marked, unreadable ranks named."""
    shown, hidden = shown_ranks(ranks)
    slowest = max((as_float(r.get("computing_us")) for r in ranks if as_float(r.get("computing_us")) is not None),
                  default=None)
    rows = []
    for r in shown:
        computing = as_float(r.get("computing_us"))
        mark = ' <span class="badge unit-change">slowest</span>' if computing is not None and computing == slowest \
            and len(ranks) > 1 else ""
        cells = "".join(f'<td class="num">{esc(format_us(as_float(r.get(key))))}</td>'
                        for key in ("computing_us", "exposed_us", "free_us", "device_time_us"))
        rows.append(f'<tr><td class="mono">{esc(r.get("rank"))}{mark}</td>{cells}'
                    f'<td>{esc(r.get("error") or "")}</td><td class="mono small">{esc(r.get("path"))}</td></tr>')
    caption = "Sorted by computing: in a data-parallel job the fast ranks wait in collectives, so device time is " \
              "nearly equal and computing names the slow rank."
    if hidden:
        caption += f" Showing the {MAX_RANK_ROWS - 5} slowest and the 5 fastest of {len(ranks)} ranks; the JSON output has all."
    head = [("Rank", False), ("Computing", True), ("Exposed comm", True), ("Free", True), ("Device time", True),
            ("Not read because", False), ("Path", False)]
    return render_table(head, rows, caption)


def kernel_facts(kernel: dict) -> str:
    """Scalar details of a single msopprof kernel (pipe ratios, block dim, imbalance ...)."""
    facts = []
    for key, value in kernel.items():
        if isinstance(value, (dict, list)):
            value = ", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else ", ".join(map(str, value))
        facts.append((str(key).replace("_", " "), esc(value)))
    return render_facts(facts)


# --------------------------------------------------------------------------------------------
# roofline (the roofline block of a profile document, or an `advisor roofline` document)
# --------------------------------------------------------------------------------------------

ROOF_W, ROOF_H, ROOF_LEFT, ROOF_RIGHT, ROOF_TOP, ROOF_BOTTOM = 960, 440, 70, 200, 20, 46
TOP_ROOFLINE_DOTS = 12


def render_roofline(doc: dict) -> str:
    """The `advisor roofline` report: the chart of op types against the roofs, the table, the notes."""
    check_schema(doc, "roofline")
    source = merged_source({}, doc)
    blocks = [roofline_section(doc), render_notes_section(list(doc.get("notes") or []))]
    title = f"Roofline of {file_name(source.get('path'))}"
    return render_page(title, "opprof-advisor · roofline", subtitle_of(source), blocks)


def roofline_section(block: dict | None) -> str:
    """The section with the roofline chart and table, or '' when the document has no roofline block."""
    if not isinstance(block, dict):
        return ""
    peaks = block.get("peaks") or {}
    rows = [r for r in block.get("op_types") or [] if isinstance(r, dict)]
    if not rows:
        reason = next((n for n in block.get("notes") or [] if "roofline" in str(n)), "no op type could be judged")
        return section("roofline", "Against the chip's roofs", f'<p class="muted">{esc(reason)}</p>')
    body = roofline_chart(peaks, rows) + roofline_table(rows)
    return section("roofline", "Against the chip's roofs", body)


def roof_lines(peaks: dict) -> list[tuple[str, float]]:
    """(label, TFLOP/s) of each distinct cube roof (FP16 and BF16 share one)."""
    by_value: dict[float, list[str]] = {}
    for dtype, value in (peaks.get("cube_tflops") or {}).items():
        number = as_float(value)
        if number:
            by_value.setdefault(round(number, 3), []).append(str(dtype).upper())
    return sorted(((("/".join(names)), value) for value, names in by_value.items()), key=lambda t: t[1])


def roofline_chart(peaks: dict, rows: list[dict]) -> str:
    """Log–log chart: arithmetic intensity (flop/byte) vs TFLOP/s, the roofs, one dot per op type sized by time."""
    dots = [r for r in rows if as_float(r.get("intensity")) and as_float(r.get("achieved_tflops"))][:TOP_ROOFLINE_DOTS]
    roofs = roof_lines(peaks)
    bandwidth = as_float(peaks.get("hbm_gbps"))
    if not dots or not roofs:
        return '<p class="muted">No op type with a FLOP count to place on the chart (bytes-bound op types are judged against the bandwidth roof in the table).</p>'
    xs = [as_float(r["intensity"]) for r in dots]
    ys = [as_float(r["achieved_tflops"]) for r in dots] + [v for _, v in roofs]
    ridge = [v * 1000 / bandwidth for _, v in roofs] if bandwidth else []
    x0, x1 = math.floor(math.log10(min(xs + ridge) / 3)), math.ceil(math.log10(max(xs + ridge) * 3))
    y0, y1 = math.floor(math.log10(min(ys) / 3)), math.ceil(math.log10(max(ys) * 1.5))
    plot_w, plot_h = ROOF_W - ROOF_LEFT - ROOF_RIGHT, ROOF_H - ROOF_TOP - ROOF_BOTTOM
    px = lambda v: ROOF_LEFT + (math.log10(v) - x0) / (x1 - x0) * plot_w  # noqa: E731
    py = lambda v: ROOF_TOP + (y1 - math.log10(v)) / (y1 - y0) * plot_h  # noqa: E731
    parts = [roofline_axes(x0, x1, y0, y1, px, py)]
    for label, peak in roofs:
        parts.append(roof_polyline(label, peak, bandwidth, (10.0 ** x0, 10.0 ** x1), 10.0 ** y0, px, py))
    largest = max(as_float(r.get("time_us")) or 0.0 for r in dots) or 1.0
    taken: list[tuple[float, float]] = []  # (x, y) of labels placed so far: a label moves down until it is clear
    for r in sorted(dots, key=lambda r: -(as_float(r.get("time_us")) or 0.0)):
        parts.append(roofline_dot(r, px, py, largest, taken))
    desc = "; ".join(f"{r.get('op_type')}: {as_float(r['achieved_tflops']):.1f} TFLOP/s at {as_float(r['intensity']):.0f} flop/B, "
                     f"efficiency {format_efficiency(r)}" for r in dots)
    chart_id = f"c{zlib.crc32(('roofline' + desc).encode()):08x}"
    svg = (f'<svg class="chart roofline" viewBox="0 0 {ROOF_W} {ROOF_H}" width="{ROOF_W}" height="{ROOF_H}" role="img" '
           f'aria-labelledby="{chart_id}-t {chart_id}-d" preserveAspectRatio="xMinYMin meet">'
           f'<title id="{chart_id}-t">Roofline: op types against the chip\'s roofs</title><desc id="{chart_id}-d">{esc(desc)}</desc>'
           f'{"".join(parts)}</svg>')
    caption = (f"Log–log: arithmetic intensity (flop per byte of minimum HBM traffic) against achieved TFLOP/s. Lines: "
               f"cube peaks ({peaks.get('aic')} AI Cores × {peaks.get('freq_mhz')} MHz × ops per cycle)"
               + (f" and the HBM roof ({bandwidth:g} GB/s)" if bandwidth else " (no HBM roof: bandwidth not known)")
               + ". One dot per op type, area by time; hollow = above the roof, a data problem.")
    return f'<figure class="chart">{svg}<figcaption>{esc(caption)}</figcaption></figure>'


def roofline_axes(x0: int, x1: int, y0: int, y1: int, px, py) -> str:
    """Grid lines and labels at each power of ten, axis titles."""
    out = []
    bottom, right = ROOF_H - ROOF_BOTTOM, ROOF_W - ROOF_RIGHT
    for e in range(x0, x1 + 1):
        x = px(10.0 ** e)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{ROOF_TOP}" x2="{x:.1f}" y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{esc(f"{10.0 ** e:g}")}</text>')
    for e in range(y0, y1 + 1):
        y = py(10.0 ** e)
        out.append(f'<line class="grid" x1="{ROOF_LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{ROOF_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(f"{10.0 ** e:g}")}</text>')
    out.append(f'<line class="axis" x1="{ROOF_LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}"/>')
    out.append(f'<line class="axis" x1="{ROOF_LEFT}" y1="{ROOF_TOP}" x2="{ROOF_LEFT}" y2="{bottom}"/>')
    out.append(f'<text class="tick" x="{(ROOF_LEFT + right) / 2:.1f}" y="{ROOF_H - 6}" text-anchor="middle">'
               "arithmetic intensity (flop/byte)</text>")
    out.append(f'<text class="tick" x="14" y="{(ROOF_TOP + bottom) / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(ROOF_TOP + bottom) / 2:.1f})">TFLOP/s</text>')
    return "".join(out)


def roof_polyline(label: str, peak: float, bandwidth: float | None, x_range: tuple[float, float], y_min: float,
                  px, py) -> str:
    """One roof: the bandwidth slope (from where it enters the plot) up to the ridge point, then flat at the peak."""
    x_min, x_max = x_range
    points = []
    if bandwidth:
        ridge = peak * 1000 / bandwidth
        start = max(x_min, y_min * 1000 / bandwidth)
        points.append((start, start * bandwidth / 1000))
        if ridge < x_max:
            points.append((ridge, peak))
    points.append((x_max, peak))
    path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
    end_y = py(peak)
    return (f'<g class="roof"><title>{esc(label)} roof: {peak:.1f} TFLOP/s</title>'
            f'<polyline class="roof" points="{path}" fill="none"/>'
            f'<text class="tick" x="{ROOF_W - ROOF_RIGHT + 6}" y="{end_y + 4:.1f}">{esc(f"{label} {peak:.0f}")}</text></g>')


def roofline_dot(row: dict, px, py, largest: float, taken: list[tuple[float, float]]) -> str:
    """One op type: a circle at (intensity, achieved TFLOP/s), its area proportional to the time."""
    x, y = px(as_float(row["intensity"])), py(as_float(row["achieved_tflops"]))
    radius = 4 + 14 * math.sqrt((as_float(row.get("time_us")) or 0.0) / largest)
    label_y = y + 4
    while any(abs(label_y - ty) < 15 and abs(x - tx) < 200 for tx, ty in taken):
        label_y += 15
    taken.append((x, label_y))
    css = "dot implausible" if row.get("status") == "implausible" else "dot"
    tip = (f"{row.get('op_type')}: {as_float(row['achieved_tflops']):.1f} TFLOP/s, {as_float(row['intensity']):.0f} flop/B, "
           f"efficiency {format_efficiency(row)}, {format_us(row.get('time_us'))}")
    label_x = min(x + radius + 4, ROOF_W - 8)
    anchor = "start" if label_x < ROOF_W - 120 else "end"
    return (f'<g class="dot" data-op="{esc(row.get("op_type"))}"><title>{esc(tip)}</title>'
            f'<circle class="{css}" cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}"/>'
            f'<text x="{label_x:.1f}" y="{label_y:.1f}" text-anchor="{anchor}">{esc(shorten(row.get("op_type"), 24))}</text></g>')


def format_efficiency(row: dict) -> str:
    """'38.8 %' of attainable, 'data problem' when implausible, '—' when not judged."""
    value = as_float(row.get("efficiency"))
    if value is None:
        return "—"
    return "data problem" if row.get("status") == "implausible" else f"{value * 100:.1f}{NBSP}%"


def roofline_table(rows: list[dict]) -> str:
    """One row per op type: rates, efficiency, roof, headroom, the model-estimate gain or why not judged."""
    body = []
    for r in rows[:MAX_TABLE_ROWS]:
        note = r.get("reason") or ""
        if as_float(r.get("model_gain_high")) is not None:
            note = f"{format_share(r.get('model_gain_low'))}–{format_share(r.get('model_gain_high'))} of its time (model estimate)"
        headroom = format_us(r.get("headroom_us")) if r.get("headroom_us") is not None else ""
        body.append(
            f'<tr><td class="name mono">{esc(r.get("op_type"))} <span class="small muted">{esc(r.get("dtype") or "")}</span></td>'
            f'<td class="num">{esc(format_us(r.get("time_us")))}</td>'
            f'<td class="num">{esc(_num(r.get("achieved_tflops"), 1))}</td><td class="num">{esc(_num(r.get("achieved_gbps"), 0))}</td>'
            f'<td class="num">{esc(_num(r.get("intensity"), 0))}</td><td>{esc(r.get("roof") or "")}</td>'
            f'<td class="num">{esc(format_efficiency(r))}</td><td class="num">{esc(headroom)}</td><td>{esc(note)}</td></tr>'
        )
    head = [("Op type", False), ("Time", True), ("TFLOP/s", True), ("GB/s", True), ("flop/B", True), ("Roof", False),
            ("Efficiency", True), ("Headroom", True), ("Gain, or why not judged", False)]
    caption = ("Efficiency = achieved / attainable (the lower of the compute roof and intensity × bandwidth); headroom = "
               "time × (1 − efficiency). Gains are model estimates: the time saved at 60–70 % of attainable, not sourced figures.")
    return render_table(head, body, caption, css="roofline")


def _num(value: Any, digits: int) -> str:
    number = as_float(value)
    return "" if number is None else f"{number:,.{digits}f}"


# --------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------


def render_compare(doc: dict) -> str:
    """The compare report: total change, before/after bars per family, table, notes."""
    check_schema(doc, "compare")
    before, after = doc.get("before") or {}, doc.get("after") or {}
    blocks = [
        compare_verdict(doc),
        section("runs", "The two runs", compare_runs(before, after)),
        *compare_kernel_sections(before.get("kernel"), after.get("kernel")),
        section("families", "Before and after, per operator family", compare_chart(doc.get("op_types") or [])),
        section("changes", "All changes", compare_table(doc.get("op_types") or [])),
        render_notes_section(list(doc.get("notes") or [])),
    ]
    delta = as_float((doc.get("total") or {}).get("delta_pct"))
    title = "Before / after: device time " + (format_pct(delta, signed=True) if delta is not None else "change")
    subtitle = f"{before.get('path') or '?'} → {after.get('path') or '?'}"
    return render_page(title, "opprof-advisor · compare", subtitle, blocks)


def compare_verdict(doc: dict) -> str:
    """The top box: total device time before → after and the biggest mover."""
    total = doc.get("total") or {}
    delta = as_float(total.get("delta_pct"))
    direction = "unchanged" if delta is None or abs(delta) < NOISE_PCT else ("faster" if delta < 0 else "slower")
    headline = (
        f"Device time {format_us(total.get('before_us'))} → {format_us(total.get('after_us'))} "
        f"({format_pct(delta, signed=True)}, {direction})"
    )
    mover = biggest_mover(doc.get("op_types") or [])
    text = ""
    if mover:
        text = (
            f"Biggest change: {mover.get('op_type')} {format_us(mover.get('before_us'))} → "
            f"{format_us(mover.get('after_us'))}{unit_change_text(mover, prefix=', ')}."
        )
    css = "" if delta is None or abs(delta) < NOISE_PCT else ("delta-down" if delta < 0 else "delta-up")
    return (
        '<section class="verdict" aria-labelledby="verdict-h"><p class="label">Result</p>'
        f'<h2 class="headline {css}" id="verdict-h">{esc(headline)}</h2>'
        f'{("<p>" + esc(text) + "</p>") if text else ""}</section>'
    )


def biggest_mover(rows: list[dict]) -> dict | None:
    """The row with the largest absolute time change."""
    def change(r: dict) -> float:
        return abs((as_float(r.get("after_us")) or 0.0) - (as_float(r.get("before_us")) or 0.0))
    return max(rows, key=change, default=None) if rows else None


def unit_change_text(row: dict, prefix: str = "") -> str:
    """"moved from AI CPU to AI Core" when the unit class changed, else empty."""
    before, after = row.get("unit_before"), row.get("unit_after")
    if not before or not after or unit_class(before) == unit_class(after):
        return ""
    return f"{prefix}moved from {unit_class(before)} to {unit_class(after)}"


def compare_runs(before: dict, after: dict) -> str:
    """The two runs side by side: path, format, chip, versions, device time."""
    head = [("", False), ("Before", False), ("After", False)]
    keys = [k for k in unique(list(before) + list(after)) if is_scalar(before.get(k)) and is_scalar(after.get(k))]
    rows = []
    for key in keys + [k for k in ("versions",) if isinstance(before.get(k), dict) or isinstance(after.get(k), dict)]:
        rows.append(
            f'<tr><th scope="row">{esc(run_label(key))}</th>'
            f"<td>{esc(run_value(key, before.get(key)))}</td><td>{esc(run_value(key, after.get(key)))}</td></tr>"
        )
    return render_table(head, rows, css="runs")


def run_label(key: str) -> str:
    """A readable row title for a run property."""
    key = str(key)
    key = key[:-3] if key.endswith("_us") else key
    return VERSION_LABEL.get(key, key.replace("_", " ")).capitalize() if key not in VERSION_LABEL else VERSION_LABEL[key]


KERNEL_ROWS = ("mode", "kernel", "op_type", "chip", "task_duration_us", "block_dim", "mix_block_dim", "block_imbalance", "bound_pipe")


def compare_kernel_sections(before: Any, after: Any) -> list[str]:
    """For two single-kernel (msopprof) runs: the kernel figures and the pipe ratios side by side."""
    if not isinstance(before, dict) and not isinstance(after, dict):
        return []
    before, after = before or {}, after or {}
    rows = []
    for key in KERNEL_ROWS:
        if key in before or key in after:
            rows.append(
                f'<tr><th scope="row">{esc(run_label(key))}</th><td>{esc(kernel_value(key, before.get(key)))}</td>'
                f"<td>{esc(kernel_value(key, after.get(key)))}</td></tr>"
            )
    table = render_table([("", False), ("Before", False), ("After", False)], rows, css="runs")
    return [section("kernel", "The kernel, side by side", table + pipe_ratio_chart(before, after))]


def kernel_value(key: str, value: Any) -> str:
    """A kernel figure as text (durations in µs/ms, imbalance as a ratio)."""
    if value is None:
        return "—"
    if key.endswith("_us"):
        return format_us(value)
    if key == "block_imbalance" and as_float(value) is not None:
        return f"{float(value):.3f}× mean block time"
    return str(value)


def pipe_ratio_chart(before: dict, after: dict) -> str:
    """Busy ratio per pipe before (lighter) and after; AI Core pipes blue, AI Vector pipes green."""
    ratios_b, ratios_a = before.get("pipe_ratios") or {}, after.get("pipe_ratios") or {}
    pipes = sorted(set(ratios_b) | set(ratios_a))
    if not pipes:
        return '<p class="muted small">No pipe ratios recorded (collect with --aic-metrics=PipeUtilization).</p>'
    rows = []
    for pipe in pipes:
        css = "u-vector" if str(pipe).startswith("aiv") else "u-core"
        lanes = []
        for ratios, extra in ((ratios_b, " before"), (ratios_a, "")):
            value = (as_float(ratios.get(pipe)) or 0.0) * 100
            lanes.append([Segment(0.0, value, css + extra, f"{pipe}: {format_pct(value)}")] if value > 0 else [])
        text = f"{format_share(ratios_b.get(pipe))} → {format_share(ratios_a.get(pipe))}"
        rows.append(BarRow(str(pipe), lanes, text))
    caption = "Busy ratio of each pipe (share of the kernel's time the pipe is active). Upper (lighter) bar: before; lower: after."
    chart = Chart(rows, 100.0, lambda v: f"{v:g}{NBSP}%", "Pipe busy ratios, before and after", caption)
    return render_chart(chart) + render_legend([("u-core", "AI Core (cube side) pipe"), ("u-vector", "AI Vector pipe")])


def is_scalar(value: Any) -> bool:
    """True for values that fit one table cell."""
    return value is None or isinstance(value, (str, int, float, bool))


def run_value(key: str, value: Any) -> str:
    """A run property as text (times formatted, dicts flattened)."""
    if value is None:
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
    if key.endswith("_us"):
        return format_us(value)
    return str(value)


def compare_chart(rows: list[dict]) -> str:
    """Two bars per family (before lighter, after solid), coloured by the unit each ran on."""
    if not rows:
        return '<p class="muted">No operator in either run.</p>'
    def size(r: dict) -> float:
        return max(as_float(r.get("before_us")) or 0.0, as_float(r.get("after_us")) or 0.0)
    top = sorted(rows, key=lambda r: (-size(r), str(r.get("op_type"))))[:TOP_COMPARE]
    largest_us = max(size(r) for r in top)
    chart_rows, classes = [], set()
    for row in top:
        chart_rows.append(compare_row(row))
        classes.update(unit_class(row.get(k)) for k in ("unit_before", "unit_after") if row.get(k))
    caption = "Upper (lighter) bar: before; lower bar: after. Colour = execution unit in that run."
    if len(rows) > TOP_COMPARE:
        caption += f" The {TOP_COMPARE} largest of {len(rows)} families; all are in the table below."
    chart = Chart(chart_rows, largest_us, format_us_tick, "Device time per operator family, before and after", caption)
    before_swatch = [("u-unknown before", "before (lighter)"), ("u-unknown", "after")]
    return render_chart(chart) + unit_legend(classes) + render_legend(before_swatch)


def format_us_tick(value: float) -> str:
    """An axis tick in µs/ms/s without superfluous decimals."""
    if value == 0:
        return "0"
    for size, unit in ((1e6, "s"), (1e3, "ms"), (1.0, "µs")):
        if abs(value) >= size:
            return f"{value / size:g}{NBSP}{unit}"
    return f"{value:g}{NBSP}µs"


def compare_row(row: dict) -> BarRow:
    """The before and after lanes of one family."""
    lanes = []
    for key, unit_key, extra in (("before_us", "unit_before", " before"), ("after_us", "unit_after", "")):
        value = as_float(row.get(key)) or 0.0
        css = CLASS_CSS[unit_class(row.get(unit_key))] + extra
        tip = f"{key[:-3]}: {format_us(value)} on {unit_class(row.get(unit_key))}"
        lanes.append([Segment(0.0, value, css, tip)] if value > 0 else [])
    value = f"{format_us(row.get('before_us'))} → {format_us(row.get('after_us'))} ({delta_text(row)})"
    return BarRow(str(row.get("op_type")), lanes, value, strong=bool(unit_change_text(row)))


def delta_text(row: dict) -> str:
    """The change of one row: signed %, or new / gone."""
    before, after = as_float(row.get("before_us")) or 0.0, as_float(row.get("after_us")) or 0.0
    if before == 0 and after > 0:
        return "new"
    if after == 0 and before > 0:
        return "gone"
    delta = as_float(row.get("delta_pct"))
    if delta is None and before:
        delta = (after - before) / before * 100
    return format_pct(delta, signed=True)


MOVED_ATTR = ' class="moved"'
NOISE_PCT = 1.0  # changes below 1 % are run-to-run noise: not coloured as wins or losses


def delta_css(row: dict, delta: str) -> str:
    """Green for a real speed-up, red for a real slow-down, nothing for noise."""
    if delta in ("gone", "new"):
        return "delta-down" if delta == "gone" else "delta-up"
    before, after = as_float(row.get("before_us")) or 0.0, as_float(row.get("after_us")) or 0.0
    change = as_float(row.get("delta_pct"))
    if change is None:
        change = (after - before) / before * 100 if before else 0.0
    if abs(change) < NOISE_PCT:
        return ""
    return "delta-down" if change < 0 else "delta-up"


def compare_table(rows: list[dict]) -> str:
    """Every family: before, after, delta, unit change."""
    if not rows:
        return '<p class="muted">No operator in either run.</p>'
    out = []
    for row in rows:
        delta = delta_text(row)
        css = delta_css(row, delta)
        moved = unit_change_text(row)
        units = f"{unit_class(row.get('unit_before')) if row.get('unit_before') else '—'} → {unit_class(row.get('unit_after')) if row.get('unit_after') else '—'}"
        badge = f' <span class="badge unit-change">{esc(moved)}</span>' if moved else ""
        out.append(
            f'<tr{MOVED_ATTR if moved else ""}><td class="name mono">{esc(row.get("op_type"))}</td>'
            f'<td class="num">{esc(format_us(row.get("before_us")))}</td><td class="num">{esc(format_us(row.get("after_us")))}</td>'
            f'<td class="num {css}">{esc(delta)}</td><td>{esc(units)}{badge}</td></tr>'
        )
    head = [("Family", False), ("Before", True), ("After", True), ("Change", True), ("Unit", False)]
    return render_table(head, out)


# --------------------------------------------------------------------------------------------
# scan
# --------------------------------------------------------------------------------------------


def support_css(support: Any) -> str:
    """Colour class of a CANN support value (native / fallback risk / needs replacement / other)."""
    text = str(support or "").lower()
    if "native" in text:
        return "s-native"
    if "replace" in text or "porting" in text or "unsupported" in text:
        return "s-replace"
    if "fallback" in text or "risk" in text or "cpu" in text:
        return "s-risk"
    return "s-other"


def render_scan(doc: dict) -> str:
    """The scan report: counts, findings by category, ranked advice (no gains), failures, notes."""
    check_schema(doc, "scan")
    findings = doc.get("findings") or []
    suggestions = doc.get("suggestions") or []
    blocks = [
        scan_verdict(doc),
        section("categories", "Findings per category", findings_chart(findings)),
        section("findings", "Findings", findings_tables(findings)),
        section("suggestions", "Ranked advice", scan_advice_intro() + render_cards(suggestions, static=True)),
    ]
    if doc.get("files_failed"):
        blocks.append(section("failed", "Files that could not be parsed", failed_list(doc["files_failed"])))
    blocks.append(render_notes_section(list(doc.get("notes") or [])))
    title = f"Static scan of {file_name(doc.get('root'))}"
    subtitle = f"{doc.get('root') or ''} · {format_count(doc.get('files_scanned'))} Python files scanned"
    return render_page(title, "opprof-advisor · scan", subtitle, blocks)


def scan_verdict(doc: dict) -> str:
    """The top box: counts of findings by support class and the first advice."""
    findings = doc.get("findings") or []
    counts: dict[str, int] = {}
    for f in findings:
        counts[support_css(f.get("support"))] = counts.get(support_css(f.get("support")), 0) + 1
    risky = counts.get("s-risk", 0) + counts.get("s-replace", 0)
    headline = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}, {risky} with a CANN support risk"
    suggestions = doc.get("suggestions") or []
    first = f"Start with: {suggestions[0].get('title') or suggestions[0].get('id')}." if suggestions else "No advice matched the code."
    failed = len(doc.get("files_failed") or [])
    text = f"{format_count(doc.get('files_scanned'))} files scanned" + (f", {failed} could not be parsed" if failed else "") + "."
    return (
        '<section class="verdict" aria-labelledby="verdict-h"><p class="label">At a glance</p>'
        f'<h2 class="headline" id="verdict-h">{esc(headline)}</h2><p>{esc(first)}</p><p class="small muted">{esc(text)}</p></section>'
    )


def findings_chart(findings: list[dict]) -> str:
    """Number of findings per category, stacked by CANN support class."""
    if not findings:
        return '<p class="muted">No finding.</p>'
    order = ("s-native", "s-risk", "s-replace", "s-other")
    counts: dict[str, dict[str, int]] = {}
    for f in findings:
        by_support = counts.setdefault(str(f.get("category") or "other"), {})
        css = support_css(f.get("support"))
        by_support[css] = by_support.get(css, 0) + 1
    rows = []
    for category in sorted(counts, key=lambda c: (-sum(counts[c].values()), c)):
        segments, start = [], 0.0
        for css in order:
            n = counts[category].get(css, 0)
            if n:
                segments.append(Segment(start, start + n, css, f"{SUPPORT_LABEL[css]}: {n}"))
                start += n
        rows.append(BarRow(category, [segments], f"{int(start)} finding{'s' if start != 1 else ''}"))
    largest = max(sum(c.values()) for c in counts.values())
    chart = Chart(rows, largest, lambda v: f"{v:g}", "Findings per category", "Number of findings; colour = CANN support class.", integer=True)
    present = {css for c in counts.values() for css in c}
    return render_chart(chart) + render_legend([(css, SUPPORT_LABEL[css]) for css in order if css in present])


SUPPORT_LABEL = {"s-native": "native on NPU", "s-risk": "CPU-fallback risk", "s-replace": "needs replacement / porting", "s-other": "other / not classified"}


def findings_tables(findings: list[dict]) -> str:
    """One table per category: op, location, support, replacement; the source on a line below."""
    if not findings:
        return '<p class="muted">No finding.</p>'
    groups: dict[str, list[dict]] = {}
    for f in findings:
        groups.setdefault(str(f.get("category") or "other"), []).append(f)
    head = [("Operator", False), ("Location", False), ("CANN support", False), ("Replacement", False)]
    out = []
    for category, rows in groups.items():
        trs = [finding_rows(f) for f in rows[:MAX_TABLE_ROWS]]
        more = f" (first {MAX_TABLE_ROWS} of {len(rows)})" if len(rows) > MAX_TABLE_ROWS else ""
        out.append(f"<h3>{esc(CATEGORY_TITLES.get(category, category))}</h3>" + render_table(head, trs, f"{len(rows)} finding(s){more}", "findings"))
    return "".join(out)


def finding_rows(f: dict) -> str:
    """A finding's row, and its source on a full-width row below (sources are often long paragraphs)."""
    source = f.get("source")
    main = (
        f'<tr class="finding"><td class="name mono">{esc(f.get("op"))}</td><td class="mono small">{esc(location(f))}</td>'
        f'<td><span class="swatch {support_css(f.get("support"))}" aria-hidden="true"></span> {esc(support_text(f.get("support")))}</td>'
        f'<td class="mono small">{esc(f.get("replacement") or "—")}</td></tr>'
    )
    if not source:
        return main.replace('<tr class="finding">', '<tr class="finding last">', 1)
    return main + f'<tr class="source-row"><td colspan="4">Source: {render_source(source, short=True)}</td></tr>'


def support_text(support: Any) -> str:
    """A CANN support id as words (``cpu_fallback_risk`` -> ``cpu fallback risk``)."""
    return str(support).replace("_", " ") if support else "—"


def location(finding: dict) -> str:
    """path:line of a finding."""
    line = finding.get("line")
    return f"{finding.get('path') or '?'}:{line}" if line not in (None, "") else str(finding.get("path") or "?")


def scan_advice_intro() -> str:
    """Why the scan cards carry no gain figures."""
    return (
        '<p class="small muted">Ranked from a static estimate of the compute mix, not from measured time: '
        "no expected gain is claimed before a profile exists. Profile the model and run "
        "<code>advisor suggest --profile PATH</code> for gains.</p>"
    )


def failed_list(failed: list[dict]) -> str:
    """Files the scanner could not parse, with the reason."""
    items = "".join(f'<li><span class="mono">{esc(f.get("path"))}</span>: {esc(f.get("error"))}</li>' for f in failed)
    return f'<ul class="plain">{items}</ul>'


# --------------------------------------------------------------------------------------------
# Dispatch and writing
# --------------------------------------------------------------------------------------------


def render_document(doc: dict, profile_doc: dict | None = None) -> str:
    """Render any opprof-advisor JSON document by its schema."""
    schema = str(doc.get("schema") or "") if isinstance(doc, dict) else ""
    command = schema.split("/")[1] if schema.startswith("opprof-advisor/") and schema.count("/") >= 2 else ""
    if command == "suggest":
        return render_suggest(doc, profile_doc)
    renderers = {"profile": render_profile, "compare": render_compare, "scan": render_scan}
    if command not in renderers:
        raise AdvisorError(
            f"no HTML report for schema {schema or 'missing'!r}",
            hint="pass a document from advisor suggest, profile, compare or scan (--format json)",
        )
    return renderers[command](doc)


def default_report_path(folder: Path, now: datetime | None = None) -> Path:
    """advisor-report-<timestamp>.html in ``folder``, with a -N suffix if that name is taken."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    candidate = folder / f"advisor-report-{stamp}.html"
    n = 2
    while candidate.exists():
        candidate = folder / f"advisor-report-{stamp}-{n}.html"
        n += 1
    return candidate


#: In the head of every report: how a file is recognised as an earlier report (replaceable without --force).
GENERATOR_MARKER = b'<meta name="generator" content="opprof-advisor'


def is_report(path: Path) -> bool:
    """True when ``path`` is an HTML report written by this tool."""
    from opprof_advisor.outputs import head_contains

    return head_contains(path, GENERATOR_MARKER)


def write_report(html_text: str, output: Path | None = None, *, force: bool = False,
                 inputs: Iterable[Path | str] = ()) -> Path:
    """Write the page atomically to ``output`` (default: advisor-report-<timestamp>.html here); return its path.

    An existing ``output`` is replaced only when it is an earlier report or with ``force``; a path
    inside one of ``inputs`` (the profiles read) is refused.
    """
    from opprof_advisor.outputs import write_text
    from opprof_advisor.terminal import printable

    target = Path(output) if output is not None else default_report_path(Path.cwd())
    # Control characters from profile text are harmless in a browser, but `cat report.html` replays them.
    return write_text(target.absolute(), printable(html_text), what="an HTML report", is_ours=is_report,
                      force=force, inputs=tuple(inputs))
