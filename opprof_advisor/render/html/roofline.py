"""The roofline section (a profile's op types against the chip's roofs) and the `advisor roofline` report."""

from __future__ import annotations

import math
import zlib

from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.render.html.page import (
    MAX_TABLE_ROWS, check_schema, esc, esc_text, file_name, headings, merged_source, render_notes_section, render_page,
    render_table, section, shorten, subtitle_of,
)
from opprof_advisor.core.units import HTML as U
from opprof_advisor.core.units import as_float


ROOF_W, ROOF_H, ROOF_LEFT, ROOF_RIGHT, ROOF_TOP, ROOF_BOTTOM = 960, 440, 70, 200, 20, 46


TOP_ROOFLINE_DOTS = 12


def render_roofline(doc: dict) -> str:
    """The `advisor roofline` report: the chart of op types against the roofs, the table, the notes."""
    check_schema(doc, "roofline")
    source = merged_source({}, doc)
    blocks = [roofline_section(doc), render_notes_section(list(doc.get("notes") or []))]
    title = _("Roofline of {name}").format(name=file_name(source.get("path")))
    return render_page(title, "opprof-advisor · roofline", subtitle_of(source), blocks)


def roofline_section(block: dict | None) -> str:
    """The section with the roofline chart and table, or '' when the document has no roofline block."""
    if not isinstance(block, dict):
        return ""
    peaks = block.get("peaks") or {}
    rows = [r for r in block.get("op_types") or [] if isinstance(r, dict)]
    if not rows:
        reason = next((n for n in block.get("notes") or [] if "roofline" in str(n)), N_("no op type could be judged"))
        return section("roofline", _("Against the chip's roofs"), f'<p class="muted">{esc(localize(reason))}</p>')
    body = roofline_chart(peaks, rows) + roofline_table(rows)
    return section("roofline", _("Against the chip's roofs"), body)


def roof_lines(peaks: dict) -> list[tuple[str, float]]:
    """(label, TFLOP/s) of each distinct cube roof (FP16 and BF16 share one)."""
    by_value: dict[float, list[str]] = {}
    for dtype, value in (peaks.get("cube_tflops") or {}).items():
        number = as_float(value)
        if number:
            by_value.setdefault(round(number, 3), []).append(str(dtype).upper())
    return sorted(((("/".join(names)), value) for value, names in by_value.items()), key=lambda t: t[1])


ROOFLINE_TITLE = N_("Roofline: op types against the chip's roofs")
INTENSITY_AXIS = N_("arithmetic intensity (flop/byte)")


def roofline_chart(peaks: dict, rows: list[dict]) -> str:
    """Log–log chart: arithmetic intensity (flop/byte) vs TFLOP/s, the roofs, one dot per op type sized by time."""
    dots = [r for r in rows if as_float(r.get("intensity")) and as_float(r.get("achieved_tflops"))][:TOP_ROOFLINE_DOTS]
    roofs = roof_lines(peaks)
    bandwidth = as_float(peaks.get("hbm_gbps"))
    if not dots or not roofs:
        text = _("No op type with a FLOP count to place on the chart (bytes-bound op types are judged against the "
                 "bandwidth roof in the table).")
        return f'<p class="muted">{esc(text)}</p>'
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
    desc = "; ".join(_("{op}: {tflops} TFLOP/s at {intensity} flop/B, efficiency {efficiency}").format(
        op=r.get("op_type"), tflops=f"{as_float(r['achieved_tflops']):.1f}", intensity=f"{as_float(r['intensity']):.0f}",
        efficiency=format_efficiency(r)) for r in dots)
    chart_id = f"c{zlib.crc32(('roofline' + desc).encode()):08x}"
    svg = (f'<svg class="chart roofline" viewBox="0 0 {ROOF_W} {ROOF_H}" width="{ROOF_W}" height="{ROOF_H}" role="img" '
           f'aria-labelledby="{chart_id}-t {chart_id}-d" preserveAspectRatio="xMinYMin meet">'
           f'<title id="{chart_id}-t">{esc_text(_(ROOFLINE_TITLE))}</title>'
           f'<desc id="{chart_id}-d">{esc(desc)}</desc>'
           f'{"".join(parts)}</svg>')
    roofs_text = (_("Lines: cube peaks ({aic} AI Cores × {freq} MHz × ops per cycle) and the HBM roof ({hbm} GB/s).")
                  if bandwidth else
                  _("Lines: cube peaks ({aic} AI Cores × {freq} MHz × ops per cycle) (no HBM roof: bandwidth not known)."))
    caption = " ".join((
        _("Log–log: arithmetic intensity (flop per byte of minimum HBM traffic) against achieved TFLOP/s."),
        roofs_text.format(aic=peaks.get("aic"), freq=peaks.get("freq_mhz"), hbm=f"{bandwidth:g}" if bandwidth else ""),
        _("One dot per op type, area by time; hollow = above the roof, a data problem.")))
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
               f"{esc(_(INTENSITY_AXIS))}</text>")
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
    tip = _("{label} roof: {peak} TFLOP/s").format(label=label, peak=f"{peak:.1f}")
    return (f'<g class="roof"><title>{esc(tip)}</title>'
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
    tip = _("{op}: {tflops} TFLOP/s, {intensity} flop/B, efficiency {efficiency}, {time}").format(
        op=row.get("op_type"), tflops=f"{as_float(row['achieved_tflops']):.1f}",
        intensity=f"{as_float(row['intensity']):.0f}", efficiency=format_efficiency(row), time=U.time(row.get("time_us")))
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
    return _("data problem") if row.get("status") == "implausible" else U.share(value)


def roofline_table(rows: list[dict]) -> str:
    """One row per op type: rates, efficiency, roof, headroom, the model-estimate gain or why not judged."""
    body = []
    for r in rows[:MAX_TABLE_ROWS]:
        note = localize(r.get("reason") or "")
        if as_float(r.get("model_gain_high")) is not None:
            note = _("{range} of its time (model estimate)").format(
                range=U.share_range(r.get("model_gain_low"), r.get("model_gain_high")))
        headroom = U.time(r.get("headroom_us")) if r.get("headroom_us") is not None else ""
        body.append(
            f'<tr><td class="name mono">{esc(r.get("op_type"))} <span class="small muted">{esc(r.get("dtype") or "")}</span></td>'
            f'<td class="num">{esc(U.time(r.get("time_us")))}</td>'
            f'<td class="num">{esc(U.number(r.get("achieved_tflops"), 1))}</td><td class="num">{esc(U.number(r.get("achieved_gbps"), 0))}</td>'
            f'<td class="num">{esc(U.number(r.get("intensity"), 0))}</td><td>{esc(r.get("roof") or "")}</td>'
            f'<td class="num">{esc(format_efficiency(r))}</td><td class="num">{esc(headroom)}</td><td>{esc(note)}</td></tr>'
        )
    caption = _("Efficiency = achieved / attainable (the lower of the compute roof and intensity × bandwidth); headroom "
                "= time × (1 − efficiency). Gains are model estimates: the time saved at 60–70 % of attainable, not "
                "sourced figures.")
    return render_table(headings(ROOFLINE_HEAD), body, caption, css="roofline")


#: (title, numeric) of the roofline table's columns.
ROOFLINE_HEAD = ((N_("Op type"), False), (N_("Time"), True), ("TFLOP/s", True), ("GB/s", True), ("flop/B", True),
                 (N_("Roof"), False), (N_("Efficiency"), True), (N_("Headroom"), True),
                 (N_("Gain, or why not judged"), False))
