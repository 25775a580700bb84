"""Inline SVG bar charts of the HTML reports: horizontal bars of coloured segments on a round axis."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

from opprof_advisor.render.html.page import esc, shorten


@dataclass
class Segment:
    """One coloured span of a bar, in chart units."""

    start: float
    end: float
    css: str
    tip: str = ""
    text: str = ""  # drawn inside the segment when it fits (a step part's share)


@dataclass
class BarRow:
    """One labelled row of a horizontal bar chart; each lane is one bar made of segments."""

    label: str
    lanes: list[list[Segment]]
    value: str
    strong: bool = False
    note: str = ""  # text drawn in an empty lane (e.g. "no sourced gain")
    marked: bool = False  # outlined: the row the chart points at (the rank the others wait for)


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
    desc: str = ""  # the text equivalent of the whole chart; by default each row's label and value


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
    desc = chart.desc or "; ".join(f"{r.label}: {r.value or r.note}" for r in chart.rows)
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
        out.extend(segment_text(seg, top, scale) for seg in lane if seg.text)
    if row.marked:
        out.append(f'<rect class="mark" x="{LABEL_W - 3}" y="{y - 3:.1f}" width="{bar_w + 6:.1f}" '
                   f'height="{lanes_h + 6:.1f}" rx="5"/>')
    if row.note and not any(row.lanes[0]):
        note = shorten(row.note, int((bar_w - 16) / NOTE_CHAR_W))
        out.append(f'<text class="tick" x="{LABEL_W + 8}" y="{mid:.1f}">{esc(note)}</text>')
    out.append(f'<text class="value" x="{CHART_W - VALUE_W + 10}" y="{mid:.1f}">{esc(row.value)}</text></g>')
    return "".join(out)


def label_chars(bold: bool) -> int:
    """How many characters of a 13px label fit the label column (bold glyphs are wider).

    Sized for wide fallback fonts (DejaVu Sans, the usual system-ui on Linux servers), measured in
    Chromium: about 8.0 units per character, 8.9 in bold.
    """
    return int((LABEL_W - 16) / (8.9 if bold else 8.0))


#: Units one character of a 12px chart note or in-bar label takes (a little more than measured, to stay inside).
NOTE_CHAR_W = 7.4


def segment_text(seg: Segment, top: float, scale: float) -> str:
    """A segment's text centred inside it, or nothing when the segment is too narrow to hold it."""
    width = (seg.end - seg.start) * scale
    if width < len(seg.text) * NOTE_CHAR_W + 8:
        return ""
    x = LABEL_W + max(seg.start, 0.0) * scale + width / 2
    return (f'<text class="in-bar" x="{x:.1f}" y="{top + LANE_H / 2 + 4:.1f}" text-anchor="middle">'
            f'{esc(seg.text)}</text>')


def render_segment(seg: Segment, top: float, scale: float) -> str:
    """One coloured rect; a visible sliver (1.5 units) for tiny non-zero values."""
    x = LABEL_W + max(seg.start, 0.0) * scale
    width = max((seg.end - seg.start) * scale, 1.5 if seg.end > seg.start else 0.0)
    tip = f"<title>{esc(seg.tip)}</title>" if seg.tip else ""
    return f'<rect class="bar {esc(seg.css)}" x="{x:.1f}" y="{top:.1f}" width="{width:.1f}" height="{LANE_H}" rx="3">{tip}</rect>'


@dataclass
class Line:
    """One series of a line chart: (x, y) points in data units, a CSS class, a legend label."""

    label: str
    css: str
    points: list[tuple[float, float]]


LINE_W, LINE_H, LINE_LEFT, LINE_BOTTOM, LINE_TOP = 960, 300, 90, 30, 16


def render_lines(lines: list[Line], *, title: str, caption: str, x_tick: Any, y_tick: Any,
                 mark: tuple[float, float, str] | None = None) -> str:
    """A line chart as an inline SVG figure: round y ticks from 0, x from the first to the last point, one
    polyline per series, an optional marked point (the peak) with its label."""
    points = [p for line in lines for p in line.points]
    if not points:
        return ""
    x0, x1 = min(x for x, _ in points), max(x for x, _ in points)
    step, ymax = axis_scale(max(y for _, y in points))
    width, height = LINE_W - LINE_LEFT - 20, LINE_H - LINE_BOTTOM - LINE_TOP
    sx = (lambda x: LINE_LEFT + (x - x0) / (x1 - x0) * width) if x1 > x0 else (lambda x: LINE_LEFT + width / 2)
    sy = lambda y: LINE_TOP + height - y / ymax * height  # noqa: E731
    parts = []
    for i in range(int(round(ymax / step)) + 1):
        y = sy(step * i)
        parts.append(f'<line class="grid" x1="{LINE_LEFT}" y1="{y:.1f}" x2="{LINE_LEFT + width}" y2="{y:.1f}"/>'
                     f'<text class="tick" x="{LINE_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">'
                     f'{esc(y_tick(step * i))}</text>')
    for value, anchor in ((x0, "start"), (x1, "end")):
        parts.append(f'<text class="tick" x="{sx(value):.1f}" y="{LINE_H - 8}" text-anchor="{anchor}">'
                     f'{esc(x_tick(value))}</text>')
    for line in lines:
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in line.points)
        parts.append(f'<polyline class="line {esc(line.css)}" fill="none" points="{coords}"><title>{esc(line.label)}'
                     f'</title></polyline>')
    if mark is not None:
        x, y, label = mark
        parts.append(f'<circle class="peak" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5"/>'
                     f'<text class="strong" x="{min(sx(x) + 8, LINE_W - 200):.1f}" y="{max(sy(y) - 8, 12):.1f}">'
                     f'{esc(label)}</text>')
    legend = "".join(f'<span class="legend-line {esc(line.css)}"></span>{esc(line.label)} ' for line in lines)
    chart_id = f"l{zlib.crc32((title + caption).encode()):08x}"
    svg = (f'<svg class="chart lines" viewBox="0 0 {LINE_W} {LINE_H}" width="{LINE_W}" height="{LINE_H}" role="img" '
           f'aria-labelledby="{chart_id}-t" preserveAspectRatio="xMinYMin meet"><title id="{chart_id}-t">'
           f'{esc(title)}</title>{"".join(parts)}</svg>')
    return f'<figure class="chart">{svg}<figcaption>{legend}· {esc(caption)}</figcaption></figure>'
