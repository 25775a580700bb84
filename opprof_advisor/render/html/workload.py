"""The `advisor memory` and `advisor serving` reports: their pictures (the memory curve per component with the
peak marked; batch size and duration per iteration), figures and findings."""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.i18n import _, localize
from opprof_advisor.core.units import HTML as U
from opprof_advisor.render.html.charts import Line, render_lines
from opprof_advisor.render.text.workload import first_step
from opprof_advisor.render.html.page import (
    check_schema, esc, file_name, headings, render_notes_section, render_page, render_table, section,
)

MIB = 1024.0 * 1024.0


def _mib(value: Any) -> str:
    return "-" if value is None else f"{float(value) / MIB:,.0f} MiB"


def _findings(findings: list[dict[str, Any]], saving) -> str:
    if not findings:
        none = _("No finding.")
        return f'<p class="muted">{esc(none)}</p>'
    cards = []
    for number, item in enumerate(findings, start=1):
        remedies = ", ".join(r["id"] for r in item.get("remedies") or [])
        first = item.get("first_step")
        step = _("first step: {step}").format(step=first_step(item)) if first else ""
        listed = _("remedies: {ids}").format(ids=remedies) if remedies else ""
        cards.append(f'<article class="card"><h3>{number}. {esc(localize(item["title"]))}</h3>'
                     f'<p>{esc(saving(item))}</p>' + (f"<p>{esc(step)}</p>" if step else "")
                     + (f'<p class="small muted">{esc(listed)}</p>' if listed else "") + "</article>")
    return "".join(cards)


def memory_curves(doc: dict[str, Any]) -> str:
    """One chart per allocator component: reserved and allocated over time; the peak marked on its component."""
    curve, peak = doc.get("curve") or {}, doc.get("peak") or {}
    charts = []
    series = curve.get("series") or {}
    order = [c["component"] for c in doc.get("components") or [] if c["component"] in series]
    for component in order + [c for c in series if c not in order]:
        points = series[component]
        lines = [Line(_("reserved"), "reserved", [(p[0], p[1] / MIB) for p in points if p[1] is not None]),
                 Line(_("allocated"), "allocated", [(p[0], p[2] / MIB) for p in points if p[2] is not None])]
        mark = None
        if component == peak.get("component") and peak.get("at_us") is not None and curve.get("start_us") is not None \
                and peak.get("reserved") is not None:
            mark = ((peak["at_us"] - curve["start_us"]) / 1000.0, peak["reserved"] / MIB,
                    _("peak {reserved}, gap {gap}").format(reserved=_mib(peak["reserved"]), gap=_mib(peak["gap"])))
        charts.append(render_lines(lines, title=_("{component} memory over time").format(component=component),
                                   caption=_("{component}: MiB against ms from the first record").format(
                                       component=component),
                                   x_tick=lambda ms: U.time(ms * 1000.0), y_tick=lambda v: f"{v:,.0f}", mark=mark))
    return "".join(charts)


def render_memory(doc: dict) -> str:
    """The `advisor memory` report."""
    check_schema(doc, "memory")
    peak = doc.get("peak") or {}
    blocks = []
    if peak:
        facts = render_table(headings([(_("Component"), False), (_("Peak reserved"), True), (_("Peak allocated"), True),
                                       (_("Records"), True)]),
                             [f'<tr><td>{esc(c["component"])}</td><td class="num">{esc(_mib(c["peak_reserved"]))}</td>'
                              f'<td class="num">{esc(_mib(c["peak_allocated"]))}</td><td class="num">{c["rows"]}</td></tr>'
                              for c in doc.get("components") or []],
                             _("The gap at the {component} peak: {gap} ({share}).").format(
                                 component=peak["component"], gap=_mib(peak["gap"]), share=U.share(peak.get("gap_share"))))
        blocks.append(section("memory", _("Memory over time"), memory_curves(doc) + facts))
        holders = doc.get("holders") or []
        if holders:
            blocks.append(section("holders", _("Held at the peak"), render_table(
                headings([(_("Tensor"), False), (_("Size"), True), (_("Tensors"), True), (_("Held for"), True)]),
                [f'<tr><td class="mono">{esc(h["name"])}</td><td class="num">{esc(_mib(h["bytes"]))}</td>'
                 f'<td class="num">{h["tensors"]}</td><td class="num">{esc(U.time(h["held_for_us"]))}</td></tr>'
                 for h in holders])))
    blocks.append(section("findings", _("What can be given back"), _findings(
        doc.get("findings") or [], lambda item: _("at most {mib} MiB ({share} of the peak): {basis}").format(
            mib=f'{item["saving"]["high_mib"]:,.0f}', share=U.share(item["saving"]["share_of_peak"]),
            basis=localize(item["saving"]["basis"])))))
    blocks.append(render_notes_section(list(doc.get("notes") or [])))
    return render_page(_("Memory of {name}").format(name=file_name(doc.get("path"))), "opprof-advisor · memory",
                       str(doc.get("path") or ""), blocks)


def render_serving(doc: dict) -> str:
    """The `advisor serving` report."""
    check_schema(doc, "serving")
    figures = doc.get("figures") or {}
    series = figures.get("iterations") or []
    charts = render_lines([Line(_("batch size"), "reserved", [(p[0], p[1]) for p in series if p[1] is not None])],
                          title=_("Batch size per iteration"), caption=_("sequences per executed batch"),
                          x_tick=lambda i: f"{i:,.0f}", y_tick=lambda v: f"{v:,.0f}")
    charts += render_lines([Line(_("duration"), "allocated", [(p[0], p[2]) for p in series if p[2] is not None])],
                           title=_("Duration per iteration"), caption=_("ms per executed batch"),
                           x_tick=lambda i: f"{i:,.0f}", y_tick=lambda v: f"{v:,.1f}")
    rows = []
    for label, key in ((_("TTFT"), "ttft_ms"), (_("TPOT"), "tpot_ms"), (_("queue wait"), "queue_wait_ms")):
        dist = figures.get(key) or {}
        rows.append(f'<tr><td>{esc(label)}</td>' + "".join(
            f'<td class="num">{"-" if dist.get(k) is None else f"{dist[k]:,.1f} ms"}</td>' for k in ("p50", "p90", "p99"))
            + "</tr>")
    table = render_table(headings([("", False), ("p50", True), ("p90", True), ("p99", True)]), rows,
                         _("{n} requests; throughput {tps} tokens/s").format(
                             n=figures.get("requests") or "-", tps="-" if figures.get("throughput_tok_s") is None
                             else f'{figures["throughput_tok_s"]:,.1f}'))
    blocks = [section("serving", _("Latency and batches"), table + charts),
              section("findings", _("What can be won"), _findings(doc.get("findings") or [],
                                                                  lambda item: localize(item["gain"]["basis"]))),
              render_notes_section(list(doc.get("notes") or []))]
    return render_page(_("Serving run {name}").format(name=file_name(doc.get("path"))), "opprof-advisor · serving",
                       str(doc.get("engine") or ""), blocks)
