"""The compare report: the total change, the two runs, the kernel side by side, bars and a table per family."""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.i18n import N_, _
from opprof_advisor.render.html.charts import BarRow, Chart, Segment, render_chart
from opprof_advisor.render.html.page import (
    CLASS_CSS, check_schema, class_name, esc, fact_label, headings, is_scalar, muted, render_legend, render_notes_section,
    render_page, render_table, section, unique, unit_class, unit_legend,
)
from opprof_advisor.core.units import HTML as U
from opprof_advisor.core.units import as_float


TOP_COMPARE = 12


def render_compare(doc: dict) -> str:
    """The compare report: total change, before/after bars per family, table, notes."""
    check_schema(doc, "compare")
    before, after = doc.get("before") or {}, doc.get("after") or {}
    blocks = [
        compare_verdict(doc),
        section("runs", _("The two runs"), compare_runs(before, after)),
        *compare_kernel_sections(before.get("kernel"), after.get("kernel")),
        section("families", _("Before and after, per operator family"), compare_chart(doc.get("op_types") or [])),
        section("changes", _("All changes"), compare_table(doc.get("op_types") or [])),
        render_notes_section(list(doc.get("notes") or [])),
    ]
    delta = as_float((doc.get("total") or {}).get("delta_pct"))
    title = _("Before / after: device time {change}").format(
        change=U.pct(delta, signed=True) if delta is not None else _("change"))
    subtitle = f"{before.get('path') or '?'} → {after.get('path') or '?'}"
    return render_page(title, "opprof-advisor · compare", subtitle, blocks)


def compare_verdict(doc: dict) -> str:
    """The top box: total device time before → after and the biggest mover."""
    total = doc.get("total") or {}
    delta = as_float(total.get("delta_pct"))
    direction = N_("unchanged") if delta is None or abs(delta) < NOISE_PCT else (N_("faster") if delta < 0 else N_("slower"))
    headline = _("Device time {before} → {after} ({change}, {direction})").format(
        before=U.time(total.get("before_us")), after=U.time(total.get("after_us")), change=U.pct(delta, signed=True),
        direction=_(direction))
    mover = biggest_mover(doc.get("op_types") or [])
    text = ""
    if mover:
        moved = unit_change_text(mover)
        template = _("Biggest change: {op} {before} → {after}, {moved}.") if moved else \
            _("Biggest change: {op} {before} → {after}.")
        text = template.format(op=mover.get("op_type"), before=U.time(mover.get("before_us")),
                               after=U.time(mover.get("after_us")), moved=moved)
    css = "" if delta is None or abs(delta) < NOISE_PCT else ("delta-down" if delta < 0 else "delta-up")
    label = _("Result")
    return (
        f'<section class="verdict" aria-labelledby="verdict-h"><p class="label">{esc(label)}</p>'
        f'<h2 class="headline {css}" id="verdict-h">{esc(headline)}</h2>'
        f'{("<p>" + esc(text) + "</p>") if text else ""}</section>'
    )


def biggest_mover(rows: list[dict]) -> dict | None:
    """The row with the largest absolute time change."""
    def change(r: dict) -> float:
        return abs((as_float(r.get("after_us")) or 0.0) - (as_float(r.get("before_us")) or 0.0))
    return max(rows, key=change, default=None) if rows else None


def unit_change_text(row: dict) -> str:
    """"moved from AI CPU to AI Core" when the unit class changed, else empty."""
    before, after = row.get("unit_before"), row.get("unit_after")
    if not before or not after or unit_class(before) == unit_class(after):
        return ""
    return _("moved from {before} to {after}").format(before=class_name(unit_class(before)),
                                                      after=class_name(unit_class(after)))


def compare_runs(before: dict, after: dict) -> str:
    """The two runs side by side: path, format, chip, versions, device time."""
    head = headings(RUNS_HEAD)
    keys = [k for k in unique(list(before) + list(after)) if is_scalar(before.get(k)) and is_scalar(after.get(k))]
    rows = []
    for key in keys + [k for k in ("versions",) if isinstance(before.get(k), dict) or isinstance(after.get(k), dict)]:
        rows.append(
            f'<tr><th scope="row">{esc(run_label(key))}</th>'
            f"<td>{esc(run_value(key, before.get(key)))}</td><td>{esc(run_value(key, after.get(key)))}</td></tr>"
        )
    return render_table(head, rows, css="runs")


#: The head of the side-by-side tables: the property, then the two runs.
RUNS_HEAD = (("", False), (N_("Before"), False), (N_("After"), False))


def run_label(key: str) -> str:
    """A readable row title for a run property."""
    key = str(key)
    return fact_label(key[:-3] if key.endswith("_us") else key)


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
    table = render_table(headings(RUNS_HEAD), rows, css="runs")
    return [section("kernel", _("The kernel, side by side"), table + pipe_ratio_chart(before, after))]


def kernel_value(key: str, value: Any) -> str:
    """A kernel figure as text (durations in µs/ms, imbalance as a ratio)."""
    if value is None:
        return "—"
    if key.endswith("_us"):
        return U.time(value)
    if key == "block_imbalance" and as_float(value) is not None:
        return _("{ratio}× mean block time").format(ratio=f"{float(value):.3f}")
    return str(value)


def pipe_ratio_chart(before: dict, after: dict) -> str:
    """Busy ratio per pipe before (lighter) and after; AI Core pipes blue, AI Vector pipes green."""
    ratios_b, ratios_a = before.get("pipe_ratios") or {}, after.get("pipe_ratios") or {}
    pipes = sorted(set(ratios_b) | set(ratios_a))
    if not pipes:
        return muted(_("No pipe ratios recorded (collect with --aic-metrics=PipeUtilization)."), "muted small")
    rows = []
    for pipe in pipes:
        css = "u-vector" if str(pipe).startswith("aiv") else "u-core"
        lanes = []
        for ratios, extra in ((ratios_b, " before"), (ratios_a, "")):
            value = (as_float(ratios.get(pipe)) or 0.0) * 100
            lanes.append([Segment(0.0, value, css + extra, f"{pipe}: {U.pct(value)}")] if value > 0 else [])
        text = f"{U.share(ratios_b.get(pipe))} → {U.share(ratios_a.get(pipe))}"
        rows.append(BarRow(str(pipe), lanes, text))
    caption = _("Busy ratio of each pipe (share of the kernel's time the pipe is active). Upper (lighter) bar: before; "
                "lower: after.")
    chart = Chart(rows, 100.0, U.pct_tick, _("Pipe busy ratios, before and after"), caption)
    return render_chart(chart) + render_legend([("u-core", _("AI Core (cube side) pipe")), ("u-vector", _("AI Vector pipe"))])


def run_value(key: str, value: Any) -> str:
    """A run property as text (times formatted, dicts flattened)."""
    if value is None:
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
    if key.endswith("_us"):
        return U.time(value)
    return str(value)


def compare_chart(rows: list[dict]) -> str:
    """Two bars per family (before lighter, after solid), coloured by the unit each ran on."""
    if not rows:
        return muted(_("No operator in either run."))
    def size(r: dict) -> float:
        return max(as_float(r.get("before_us")) or 0.0, as_float(r.get("after_us")) or 0.0)
    top = sorted(rows, key=lambda r: (-size(r), str(r.get("op_type"))))[:TOP_COMPARE]
    largest_us = max(size(r) for r in top)
    chart_rows, classes = [], set()
    for row in top:
        chart_rows.append(compare_row(row))
        classes.update(unit_class(row.get(k)) for k in ("unit_before", "unit_after") if row.get(k))
    caption = _("Upper (lighter) bar: before; lower bar: after. Colour = execution unit in that run.")
    if len(rows) > TOP_COMPARE:
        caption += " " + _("The {top} largest of {n} families; all are in the table below.").format(
            top=TOP_COMPARE, n=len(rows))
    chart = Chart(chart_rows, largest_us, U.time_tick, _("Device time per operator family, before and after"), caption)
    before_swatch = [("u-unknown before", _("before (lighter)")), ("u-unknown", _("after"))]
    return render_chart(chart) + unit_legend(classes) + render_legend(before_swatch)


def compare_row(row: dict) -> BarRow:
    """The before and after lanes of one family."""
    lanes = []
    for key, unit_key, extra in (("before_us", "unit_before", " before"), ("after_us", "unit_after", "")):
        value = as_float(row.get(key)) or 0.0
        css = CLASS_CSS[unit_class(row.get(unit_key))] + extra
        tip = _("{side}: {time} on {unit}").format(side=_(key[:-3]), time=U.time(value),
                                                   unit=class_name(unit_class(row.get(unit_key))))
        lanes.append([Segment(0.0, value, css, tip)] if value > 0 else [])
    value = f"{U.time(row.get('before_us'))} → {U.time(row.get('after_us'))} ({_(delta_text(row))})"
    return BarRow(str(row.get("op_type")), lanes, value, strong=bool(unit_change_text(row)))


def delta_text(row: dict) -> str:
    """The change of one row: signed %, or new / gone (in English: the callers say the words with ``_``)."""
    before, after = as_float(row.get("before_us")) or 0.0, as_float(row.get("after_us")) or 0.0
    if before == 0 and after > 0:
        return N_("new")
    if after == 0 and before > 0:
        return N_("gone")
    delta = as_float(row.get("delta_pct"))
    if delta is None and before:
        delta = (after - before) / before * 100
    return U.pct(delta, signed=True)


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
        return muted(_("No operator in either run."))
    out = []
    for row in rows:
        delta = delta_text(row)
        css = delta_css(row, delta)
        moved = unit_change_text(row)
        units = " → ".join(class_name(unit_class(row.get(key))) if row.get(key) else "—"
                           for key in ("unit_before", "unit_after"))
        badge = f' <span class="badge unit-change">{esc(moved)}</span>' if moved else ""
        out.append(
            f'<tr{MOVED_ATTR if moved else ""}><td class="name mono">{esc(row.get("op_type"))}</td>'
            f'<td class="num">{esc(U.time(row.get("before_us")))}</td><td class="num">{esc(U.time(row.get("after_us")))}</td>'
            f'<td class="num {css}">{esc(_(delta))}</td><td>{esc(units)}{badge}</td></tr>'
        )
    return render_table(headings(CHANGES_HEAD), out)


#: (title, numeric) of the table of every change.
CHANGES_HEAD = ((N_("Family"), False), (N_("Before"), True), (N_("After"), True), (N_("Change"), True),
                (N_("Unit"), False))
