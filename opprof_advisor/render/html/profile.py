"""The profile report, and the profile pieces the suggest report shows too (summary, family chart, ranks)."""

from __future__ import annotations

from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.render.html.charts import BarRow, Chart, Segment, render_chart
from opprof_advisor.render.html.page import (
    CLASS_CSS, MAX_TABLE_ROWS, check_schema, class_name, esc, fact_label, fact_value, file_name, heading, headings, is_scalar,
    merged_source, muted, render_facts, render_notes_section, render_page, render_table, section, subtitle_of, unit_class,
    unit_label, unit_legend,
)
from opprof_advisor.render.html.roofline import roofline_section
from opprof_advisor.render.html.steps import MAX_RANK_ROWS, rank_chart, shown_ranks, step_chart
from opprof_advisor.render.phrases import waited_rank
from opprof_advisor.render.html.workload import memory_curves
from opprof_advisor.render.phrases import share_of
from opprof_advisor.core.units import HTML as U
from opprof_advisor.core.units import as_float
from opprof_advisor.core.vocabulary import SYMPTOMS


TOP_FAMILIES = 10


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
        return muted(_("The profile lists no operators."))
    top, rest = families[:TOP_FAMILIES], families[TOP_FAMILIES:]
    rows = [family_row(name, by_class, time_us) for name, by_class, time_us in top]
    largest = max(sum(by_class.values()) for _, by_class, _ in top) * 100
    caption = _("Share of device time ({time}) per operator family; colour = execution unit.").format(
        time=U.time(profile.get("device_time_us")))
    if rest:
        rest_share = sum(sum(c.values()) for _, c, _ in rest)
        caption += " " + _("{n} smaller families together: {share}.").format(n=len(rest), share=U.share(rest_share))
    chart = Chart(rows, largest, U.pct_tick, _("Top operator families by share of device time"), caption)
    classes = {cls for _, by_class, _ in top for cls, share in by_class.items() if share > 0}
    return render_chart(chart) + unit_legend(classes)


#: Op types drawn in the top-operators chart.
TOP_OP_TYPES = 10


def op_type_chart(profile: dict) -> str:
    """The longest op types as bars of their share of device time, coloured by unit (nothing for fewer than two)."""
    rows = [r for r in profile.get("op_types") or [] if isinstance(r, dict) and (as_float(r.get("time_us")) or 0) > 0]
    rows.sort(key=lambda r: -(as_float(r.get("time_us")) or 0.0))
    if len(rows) < 2:
        return ""
    top = rows[:TOP_OP_TYPES]
    device = as_float(profile.get("device_time_us")) or 0.0
    bars, classes = [], set()
    for row in top:
        share = as_float(row.get("share"))
        if share is None:
            share = (as_float(row.get("time_us")) or 0.0) / device if device else 0.0
        cls = unit_class(row.get("unit"))
        classes.add(cls)
        tip = f"{class_name(cls)}: {U.share(share)}"
        value = " · ".join((U.share(share), U.time(row.get("time_us")), class_name(cls)))
        bars.append((BarRow(str(row.get("op_type") or "?"), [[Segment(0.0, share * 100, CLASS_CSS[cls], tip)]], value),
                     share * 100))
    caption = _("Share of device time ({time}) per operator type, the longest first; colour = execution unit.").format(
        time=U.time(profile.get("device_time_us")))
    total = int(as_float(profile.get("op_types_total")) or len(rows))
    if total > len(top):
        rest = max(0.0, 1.0 - sum(share for _row, share in bars) / 100)
        caption += " " + _("The other {n} operator types together: {share}.").format(n=total - len(top),
                                                                                      share=U.share(rest))
    chart = Chart([row for row, _share in bars], max(share for _row, share in bars), U.pct_tick,
                  _("Top operators by share of device time"), caption)
    return heading(_("Top operators by time")) + render_chart(chart) + unit_legend(classes)


def device_time_charts(profile: dict) -> str:
    """What "Where the device time goes" draws: the operator families, then the longest op types."""
    return family_chart(profile) + op_type_chart(profile)


def family_row(name: str, by_class: dict[str, float], time_us: float) -> BarRow:
    """One family bar, stacked by unit class in a fixed order."""
    segments, start = [], 0.0
    for cls, css in CLASS_CSS.items():
        share = by_class.get(cls, 0.0)
        if share <= 0:
            continue
        segments.append(Segment(start, start + share * 100, css, f"{class_name(cls)}: {U.share(share)}"))
        start += share * 100
    units = " + ".join(class_name(cls) for cls in CLASS_CSS if by_class.get(cls, 0.0) > 0) or _("unknown")
    value = f"{U.share(sum(by_class.values()))} · {U.time(time_us)} · {units}"
    return BarRow(name, [segments], value)


def profile_facts(source: dict, profile: dict) -> list[tuple[str, str]]:
    """Key figures of a profile: times first (what a reader compares), then format, chip, versions."""
    facts = []
    device = as_float(profile.get("device_time_us"))
    facts.append((_("Device time"), esc(U.time(device))))
    for key, label in (("compute_time_us", N_("Compute")), ("communication_time_us", N_("Communication"))):
        value = as_float(profile.get(key))
        if value is not None:
            share = f" ({U.share(value / device)})" if device else ""
            facts.append((_(label), esc(U.time(value) + share)))
    facts.append((_("Format"), esc(source.get("format") or _("unknown"))))
    chip = source.get("chip") or profile.get("chip")
    unknown = _("not recorded")
    facts.append((_("Chip"), esc(chip) if chip else f'<span class="muted">{esc(unknown)}</span>'))
    versions = source.get("versions") or profile.get("versions") or {}
    if isinstance(versions, dict):
        for key, value in versions.items():
            facts.append((fact_label(key), esc(value)))
    for key, value in source.items():
        if key not in ("path", "format", "chip", "versions") and not key.endswith("_us") and is_scalar(value) and value is not None:
            facts.append((fact_label(key), esc(fact_value(key, value))))
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
        return muted(_("All device task time is compute: no communication tasks recorded."), "small muted")
    spans = (
        f'<span class="u-core" style="width:{compute / total * 100:.2f}%"></span>'
        f'<span class="u-comm" style="width:{comm / total * 100:.2f}%"></span>'
    )
    text = _("Compute {compute} · communication {communication} of device task time").format(
        compute=U.pct(compute / total * 100), communication=U.pct(comm / total * 100))
    return f'<div class="split" role="img" aria-label="{esc(text)}">{spans}</div><p class="small muted">{esc(text)}</p>'


def render_symptoms(symptoms: list[dict]) -> str:
    """The profile's symptoms: id, meaning, operators, share and detail."""
    if not symptoms:
        return muted(_("No symptom found."))
    items = []
    for sym in symptoms:
        sid = str(sym.get("id") or "?")
        meaning = _(SYMPTOMS.get(sid, ""))
        ops = ", ".join(str(o) for o in sym.get("op_types") or [])
        share = share_of(sym, U)
        items.append(
            f'<li class="symptom"><span class="id mono">{esc(sid)}</span> — {esc(localize(sym.get("detail")) or meaning)}'
            f'<br><span class="small muted">{esc(share)}'
            f'{(" · " + esc(ops)) if ops else ""}{(" · " + esc(meaning)) if meaning and sym.get("detail") else ""}</span></li>'
        )
    return f'<ul class="plain">{"".join(items)}</ul>'


def profile_summary_section(source: dict, profile: dict | None) -> str:
    """The profile summary block (figures, compute/communication split, symptoms)."""
    body = render_facts(profile_facts(source, profile or source))
    if profile:
        body += compute_split(profile)
        if profile.get("symptoms") is not None:
            body += heading(_("Symptoms found")) + render_symptoms(profile.get("symptoms") or [])
    ranks = source.get("ranks") or (profile or {}).get("ranks")
    if isinstance(ranks, list) and ranks:
        waited = waited_rank(profile)
        body += heading(_("Ranks")) + rank_chart(ranks, waited) + rank_table(ranks, waited)
    path = source.get("path")
    if path:
        label = _("Profile:")
        body += f'<p class="small muted">{esc(label)} <span class="mono">{esc(path)}</span></p>'
    return section("profile", _("Profile summary"), body)


def steps_section(profile: dict | None, *, excerpt: bool = False) -> str:
    """The step bars in their own block, or nothing when the profile has no step split."""
    chart = step_chart(profile, excerpt=excerpt)
    return section("steps", _("Where the step goes"), chart) if chart else ""


def render_profile(doc: dict) -> str:
    """The profile report: summary, family chart, op-type table, symptoms, notes."""
    check_schema(doc, "profile")
    source = merged_source({}, doc)
    blocks = [
        profile_verdict(doc),
        steps_section(doc),
        profile_summary_section(source, doc),
        section("families", _("Where the device time goes"), device_time_charts(doc)),
        section("op-types", _("Operator types"), op_type_table(doc.get("op_types") or [])),
        roofline_section(doc.get("roofline")),
    ]
    if isinstance(doc.get("kernel"), dict) and doc["kernel"]:
        blocks.append(section("kernel", _("Kernel detail"), kernel_facts(doc["kernel"])))
    if isinstance(doc.get("memory"), dict) and doc["memory"].get("curve"):
        blocks.append(section("memory", _("Memory over time"), memory_curves(doc["memory"])))
    blocks.append(render_notes_section(list(doc.get("notes") or [])))
    title = _("Operator profile of {name}").format(name=file_name(source.get("path")))
    return render_page(title, "opprof-advisor · profile", subtitle_of(source), blocks)


def profile_verdict(doc: dict) -> str:
    """The top box of a profile report: the biggest family and the symptom count."""
    families = family_rows(doc)
    symptoms = doc.get("symptoms") or []
    if not families:
        headline, text = _("No operators in this profile"), _("The profile lists no device task.")
    else:
        name, by_class, time_us = families[0]
        units = " + ".join(class_name(c) for c in CLASS_CSS if by_class.get(c, 0) > 0)
        headline = _("{name} takes {share} of device time").format(name=name, share=U.share(sum(by_class.values())))
        text = _("{time} on {units}.").format(time=U.time(time_us), units=units)
    found = _("{n} symptom found") if len(symptoms) == 1 else _("{n} symptoms found")
    ids = ", ".join(str(s.get("id")) for s in symptoms)
    sym = (_("{found}: {ids}.") if symptoms else _("{found}.")).format(found=found.format(n=len(symptoms)), ids=ids)
    run = esc(_("Run {command} for ranked advice.")).format(command="<code>advisor suggest PATH</code>")
    label = _("At a glance")
    return (
        f'<section class="verdict" aria-labelledby="verdict-h"><p class="label">{esc(label)}</p>'
        f'<h2 class="headline" id="verdict-h">{esc(headline)}</h2><p>{esc(text)}</p><p>{esc(sym)} '
        f"{run}</p></section>"
    )


def op_type_table(op_types: list[dict]) -> str:
    """Every (op type, unit) row: family, unit, count, time, share, bound class."""
    if not op_types:
        return muted(_("No operator."))
    rows = [
        f'<tr><td class="name mono">{esc(r.get("op_type"))}</td><td>{esc(r.get("family"))}</td>'
        f'<td><span class="swatch {CLASS_CSS[unit_class(r.get("unit"))]}" aria-hidden="true"></span> {esc(unit_label(r.get("unit")))}</td>'
        f'<td class="num">{esc(U.count(r.get("count")))}</td><td class="num">{esc(U.time(r.get("time_us")))}</td>'
        f'<td class="num">{esc(U.share(r.get("share")))}</td><td>{esc(_(str(r.get("bound") or "unknown")))}</td></tr>'
        for r in op_types[:MAX_TABLE_ROWS]
    ]
    caption = _("Sorted by time.")
    if len(op_types) > MAX_TABLE_ROWS:
        caption += " " + _("Showing the first {shown} of {n} rows; the JSON output has all.").format(
            shown=MAX_TABLE_ROWS, n=len(op_types))
    return render_table(headings(OP_TYPE_HEAD), rows, caption)


#: (title, numeric) of the op-type table's columns.
OP_TYPE_HEAD = ((N_("Op type"), False), (N_("Family"), False), (N_("Unit"), False), (N_("Count"), True),
                (N_("Time"), True), (N_("Share of device time"), True), (N_("Bound"), False))



def rank_table(ranks: list[dict], waited: str | None = None) -> str:
    """The rank table sorted by computation: the rank the others wait for marked (else the slowest by
    computation), unreadable ranks named."""
    shown, hidden, slowest_n = shown_ranks(ranks, waited)
    slowest = max((as_float(r.get("computing_us")) for r in ranks if as_float(r.get("computing_us")) is not None),
                  default=None)
    rows, badge = [], _("waited for") if waited is not None else _("slowest")
    for r in shown:
        computing = as_float(r.get("computing_us"))
        marked = str(r.get("rank")) == waited if waited is not None else \
            computing is not None and computing == slowest and len(ranks) > 1
        mark = f' <span class="badge unit-change">{esc(badge)}</span>' if marked else ""
        cells = "".join(f'<td class="num">{esc(U.time(as_float(r.get(key))))}</td>'
                        for key in ("computing_us", "exposed_us", "free_us", "device_time_us"))
        rows.append(f'<tr><td class="mono">{esc(r.get("rank"))}{mark}</td>{cells}'
                    f'<td>{esc(r.get("error") or "")}</td><td class="mono small">{esc(r.get("path"))}</td></tr>')
    caption = _("Sorted by computing: in a data-parallel job the fast ranks wait in collectives, so device time is "
                "nearly equal and computing names the slow rank.") if waited is None else \
        _("Sorted by computing. Marked: the rank the others wait for (the slow_rank symptom says why: more computing, "
          "or more idle time before the collectives).")
    if hidden and slowest_n < MAX_RANK_ROWS - 5:
        caption += " " + _("Showing the {slowest} slowest, {rank} (the rank the others wait for) and the 5 fastest of "
                           "{n} ranks; the JSON output has all.").format(slowest=slowest_n, rank=waited, n=len(ranks))
    elif hidden:
        caption += " " + _("Showing the {slowest} slowest and the 5 fastest of {n} ranks; the JSON output has all.").format(
            slowest=slowest_n, n=len(ranks))
    return render_table(headings(RANK_HEAD), rows, caption)


#: (title, numeric) of the rank table's columns.
RANK_HEAD = ((N_("Rank"), False), (N_("Computing"), True), (N_("Exposed comm"), True), (N_("Free"), True),
             (N_("Device time"), True), (N_("Not read because"), False), (N_("Path"), False))


def kernel_facts(kernel: dict) -> str:
    """Scalar details of a single msopprof kernel (pipe ratios, block dim, imbalance ...)."""
    facts = []
    for key, value in kernel.items():
        if isinstance(value, (dict, list)):
            value = ", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else ", ".join(map(str, value))
        facts.append((str(key).replace("_", " "), esc(value)))
    return render_facts(facts)
