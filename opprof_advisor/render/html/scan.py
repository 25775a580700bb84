"""The scan report: findings per category with their CANN support, ranked advice (no gains), failures."""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.cann_support import CATEGORY_TITLES
from opprof_advisor.core.i18n import N_, _
from opprof_advisor.render.html.charts import BarRow, Chart, Segment, render_chart
from opprof_advisor.render.html.page import (
    MAX_TABLE_ROWS, check_schema, esc, file_name, headings, muted, render_legend, render_notes_section, render_page,
    render_source, render_table, section,
)
from opprof_advisor.render.html.suggest import render_cards
from opprof_advisor.render.phrases import entry_text
from opprof_advisor.core.units import HTML as U


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
        section("categories", _("Findings per category"), findings_chart(findings)),
        section("findings", _("Findings"), findings_tables(findings)),
        section("suggestions", _("Ranked advice"), scan_advice_intro() + render_cards(suggestions, static=True)),
    ]
    if doc.get("files_failed"):
        blocks.append(section("failed", _("Files that could not be parsed"), failed_list(doc["files_failed"])))
    blocks.append(render_notes_section(list(doc.get("notes") or [])))
    title = _("Static scan of {name}").format(name=file_name(doc.get("root")))
    subtitle = f"{doc.get('root') or ''} · " + _("{n} Python files scanned").format(n=U.count(doc.get("files_scanned")))
    return render_page(title, "opprof-advisor · scan", subtitle, blocks)


def scan_verdict(doc: dict) -> str:
    """The top box: counts of findings by support class and the first advice."""
    findings = doc.get("findings") or []
    counts: dict[str, int] = {}
    for f in findings:
        counts[support_css(f.get("support"))] = counts.get(support_css(f.get("support")), 0) + 1
    risky = counts.get("s-risk", 0) + counts.get("s-replace", 0)
    headline = (_("{n} finding, {risky} with a CANN support risk") if len(findings) == 1 else
                _("{n} findings, {risky} with a CANN support risk")).format(n=len(findings), risky=risky)
    suggestions = doc.get("suggestions") or []
    first = _("Start with: {title}.").format(title=entry_text(suggestions[0], "title") or suggestions[0].get("id")) \
        if suggestions else _("No advice matched the code.")
    failed = len(doc.get("files_failed") or [])
    text = (_("{n} files scanned, {failed} could not be parsed.") if failed else _("{n} files scanned.")).format(
        n=U.count(doc.get("files_scanned")), failed=failed)
    label = _("At a glance")
    return (
        f'<section class="verdict" aria-labelledby="verdict-h"><p class="label">{esc(label)}</p>'
        f'<h2 class="headline" id="verdict-h">{esc(headline)}</h2><p>{esc(first)}</p><p class="small muted">{esc(text)}</p></section>'
    )


def findings_chart(findings: list[dict]) -> str:
    """Number of findings per category, stacked by CANN support class."""
    if not findings:
        return muted(_("No finding."))
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
                segments.append(Segment(start, start + n, css, f"{_(SUPPORT_LABEL[css])}: {n}"))
                start += n
        count = _("{n} finding") if start == 1 else _("{n} findings")
        rows.append(BarRow(category, [segments], count.format(n=int(start))))
    largest = max(sum(c.values()) for c in counts.values())
    chart = Chart(rows, largest, lambda v: f"{v:g}", _("Findings per category"),
                  _("Number of findings; colour = CANN support class."), integer=True)
    present = {css for c in counts.values() for css in c}
    return render_chart(chart) + render_legend([(css, _(SUPPORT_LABEL[css])) for css in order if css in present])


SUPPORT_LABEL = {"s-native": N_("native on NPU"), "s-risk": N_("CPU-fallback risk"),
                 "s-replace": N_("needs replacement / porting"), "s-other": N_("other / not classified")}


def findings_tables(findings: list[dict]) -> str:
    """One table per category: op, location, support, replacement; the source on a line below."""
    if not findings:
        return muted(_("No finding."))
    groups: dict[str, list[dict]] = {}
    for f in findings:
        groups.setdefault(str(f.get("category") or "other"), []).append(f)
    head = headings(FINDINGS_HEAD)
    out = []
    for category, rows in groups.items():
        trs = [finding_rows(f) for f in rows[:MAX_TABLE_ROWS]]
        caption = _("{n} finding(s)").format(n=len(rows))
        if len(rows) > MAX_TABLE_ROWS:
            caption += _(" (first {shown} of {n})").format(shown=MAX_TABLE_ROWS, n=len(rows))
        out.append(f"<h3>{esc(_(CATEGORY_TITLES.get(category, category)))}</h3>" + render_table(head, trs, caption, "findings"))
    return "".join(out)


#: (title, numeric) of a category's findings table.
FINDINGS_HEAD = ((N_("Operator"), False), (N_("Location"), False), (N_("CANN support"), False),
                 (N_("Replacement"), False))


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
    label = _("Source:")
    return main + f'<tr class="source-row"><td colspan="4">{esc(label)} {render_source(source, short=True)}</td></tr>'


#: The CANN support ids (cann_support.SUPPORT_LEVELS) as words, marked for the catalogue.
SUPPORT_WORDS = (N_("native"), N_("cpu fallback risk"), N_("needs replacement"))


def support_text(support: Any) -> str:
    """A CANN support id as words (``cpu_fallback_risk`` -> ``cpu fallback risk``), in the language in use."""
    return _(str(support).replace("_", " ")) if support else "—"


def location(finding: dict) -> str:
    """path:line of a finding."""
    line = finding.get("line")
    return f"{finding.get('path') or '?'}:{line}" if line not in (None, "") else str(finding.get("path") or "?")


def scan_advice_intro() -> str:
    """Why the scan cards carry no gain figures."""
    text = esc(_("Ranked from a static estimate of the compute mix, not from measured time: no expected gain is claimed "
                 "before a profile exists. Profile the model and run {command} for gains."))
    return f'<p class="small muted">{text.format(command="<code>advisor suggest PATH</code>")}</p>'


def failed_list(failed: list[dict]) -> str:
    """Files the scanner could not parse, with the reason."""
    items = "".join(f'<li><span class="mono">{esc(f.get("path"))}</span>: {esc(f.get("error"))}</li>' for f in failed)
    return f'<ul class="plain">{items}</ul>'
