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
        body += heading(_("Ranks")) + rank_chart(ranks) + rank_table(ranks)
    path = source.get("path")
    if path:
        label = _("Profile:")
        body += f'<p class="small muted">{esc(label)} <span class="mono">{esc(path)}</span></p>'
    return section("profile", _("Profile summary"), body)


def render_profile(doc: dict) -> str:
    """The profile report: summary, family chart, op-type table, symptoms, notes."""
    check_schema(doc, "profile")
    source = merged_source({}, doc)
    blocks = [
        profile_verdict(doc),
        profile_summary_section(source, doc),
        section("families", _("Where the device time goes"), family_chart(doc)),
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
    run = esc(_("Run {command} for ranked advice.")).format(command="<code>advisor suggest --profile PATH</code>")
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
            ("computing_us", "u-core", N_("computing")), ("exposed_us", "u-comm", N_("exposed communication")),
            ("free_us", "u-unknown", N_("free")))]
        segments, start = [], 0.0
        for value, css, label in parts:
            if value > 0:
                segments.append(Segment(start, start + value, css, f"{_(label)}: {U.time(value)}"))
                start += value
        largest = max(largest, start)
        rows.append(BarRow(str(rank.get("rank")), [segments], _("computing {time}").format(time=U.time(parts[0][0]))))
    caption = _("Per rank: computing (blue), exposed communication (purple) and free time (grey), sorted by computing.")
    if hidden:
        caption += " " + _("{n} ranks between the slowest and the fastest are not drawn; the JSON output has all.").format(
            n=hidden)
    return render_chart(Chart(rows, largest, U.time, _("Ranks by computation"), caption))


def rank_table(ranks: list[dict]) -> str:
    """The rank table sorted by computation: the slowest rank marked, unreadable ranks named."""
    shown, hidden = shown_ranks(ranks)
    slowest = max((as_float(r.get("computing_us")) for r in ranks if as_float(r.get("computing_us")) is not None),
                  default=None)
    rows, badge = [], _("slowest")
    for r in shown:
        computing = as_float(r.get("computing_us"))
        mark = f' <span class="badge unit-change">{esc(badge)}</span>' if computing is not None and computing == slowest \
            and len(ranks) > 1 else ""
        cells = "".join(f'<td class="num">{esc(U.time(as_float(r.get(key))))}</td>'
                        for key in ("computing_us", "exposed_us", "free_us", "device_time_us"))
        rows.append(f'<tr><td class="mono">{esc(r.get("rank"))}{mark}</td>{cells}'
                    f'<td>{esc(r.get("error") or "")}</td><td class="mono small">{esc(r.get("path"))}</td></tr>')
    caption = _("Sorted by computing: in a data-parallel job the fast ranks wait in collectives, so device time is "
                "nearly equal and computing names the slow rank.")
    if hidden:
        caption += " " + _("Showing the {slowest} slowest and the 5 fastest of {n} ranks; the JSON output has all.").format(
            slowest=MAX_RANK_ROWS - 5, n=len(ranks))
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
