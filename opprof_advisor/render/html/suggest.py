"""The suggest report: the verdict, the profile, where time goes, the expected gains, one card per suggestion."""

from __future__ import annotations

from typing import Any

from opprof_advisor.i18n import _
from opprof_advisor.render.phrases import entry_text
from opprof_advisor.render.html.charts import BarRow, Chart, Segment, render_chart
from opprof_advisor.render.html.page import (
    check_schema, esc, file_name, merged_source, render_legend, render_notes_section, render_page, render_sources,
    render_table, section, subtitle_of, unique, unit_class,
)
from opprof_advisor.render.html.profile import family_chart, profile_summary_section
from opprof_advisor.render.html.roofline import roofline_section
from opprof_advisor.render.phrases import gain_parts
from opprof_advisor.render.units import HTML as U
from opprof_advisor.render.units import as_float
from opprof_advisor.vocabulary import EVIDENCE_GRADES


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
        section("families", _("Where the device time goes"), family_chart(profile) if profile else missing_profile_note()),
        section("gains", _("Expected gain per suggestion"), gain_chart(suggestions)),
        section("suggestions", _("Suggestions"), render_cards(suggestions, static=False)),
        roofline_section((profile or {}).get("roofline")),
        section("similar", _("Similar cases"), render_similar(doc.get("similar_cases") or [])),
        render_notes_section(notes),
    ]
    title = f"Tuning advice for {file_name(source.get('path'))}"
    return render_page(title, "opprof-advisor · suggest", subtitle_of(source), blocks)


def missing_profile_note() -> str:
    """What the reader sees when the report was rendered without the profile document."""
    return (
        '<p class="muted">The operator breakdown is not part of this report: it was rendered from the '
        "suggestions alone. The evidence of each suggestion below lists the operators it concerns.</p>"
    )


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
    pct, saved = gain_parts(first.get("expected_gain"), U)
    why = verdict_evidence(first, profile)
    if pct:
        ceiling = matched_share(first)
        bound = f" At most {U.share(ceiling)}: the share of the operators it fixes." if ceiling > 0 else ""
        saving = (
            f'<p>Expected to save <span class="big">{esc(pct)}</span> '
            f'{"of the step" if first.get("expected_gain", {}).get("of") == "step" else "of device time"}'
            f'{(" (" + esc(saved) + ")") if saved else ""}.<span class="small muted">{esc(bound)}</span></p>'
        )
    else:
        saving = "<p>No sourced gain figure for this advice: the size of the win is not known in advance.</p>"
    return (
        '<section class="verdict" aria-labelledby="verdict-h"><p class="label">Fix first</p>'
        f'<h2 class="headline" id="verdict-h">{esc(entry_text(first, "title") or first.get("id"))}</h2>'
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
        parts.append(f"{e.get('op_type')} takes {U.share(e.get('share'))} of device time ({U.time(e.get('time_us'))}){where}")
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
    chart = Chart(rows, largest, U.pct_tick, "Expected gain range per suggestion", caption)
    legend = render_legend([("g-first", "first suggestion"), ("g-range", "other suggestions"), ("ceiling", "matched operators' share")])
    return render_chart(chart) + legend


def gain_row(sug: dict, *, first: bool) -> tuple[BarRow, float]:
    """One gain-chart row and the largest value it needs on the axis."""
    label = f"#{sug.get('rank') or '?'} {sug.get('title') or sug.get('id')}"
    ceiling = matched_share(sug) * 100
    lane = [Segment(0.0, ceiling, "ceiling", f"matched operators: {U.pct(ceiling)}")] if ceiling > 0 else []
    gain = sug.get("expected_gain") or {}
    low, high = as_float(gain.get("low_pct")), as_float(gain.get("high_pct"))
    pct, saved = gain_parts(gain, U)
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
        f'<h3 id="{key}-t">{esc(entry_text(sug, "title") or sug.get("id"))}</h3>{badges}</div>'
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
    pct, saved = gain_parts(gain, U)
    if not pct:
        text = "no gain claimed from a static scan" if static else "no sourced gain figure"
        return f'<div class="gain-box"><p class="figure none">{esc(text)}</p></div>'
    of = "of the step" if (gain or {}).get("of") == "step" else "of device time"
    sub = f'<p class="sub">{of}</p>' + (f'<p class="sub">{esc(saved)} saved</p>' if saved else "")
    return f'<div class="gain-box"><p class="figure">{esc(pct)}</p>{sub}</div>'


def first_step(sug: dict) -> str:
    """How to start the fix, and where the rest of the steps are."""
    step = entry_text(sug, "first_step")
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
        f'<tr><td class="name mono">{esc(e.get("op_type"))}</td><td class="num">{esc(U.time(e.get("time_us")))}</td>'
        f'<td class="num">{esc(U.share(e.get("share")))}</td><td class="why">{esc(e.get("why"))}</td></tr>'
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
    """The case studies whose operator mix and problems resemble the profile's, with the parts of the similarity."""
    if not cases:
        return '<p class="muted">No case study has an operator mix close to this profile.</p>'
    items = []
    for case in cases:
        sim, mix, overlap = (as_float(case.get(key)) for key in ("similarity", "mix_cosine", "symptom_overlap"))
        parts = f": op mix {mix:.2f}, symptoms {overlap:.2f}" if mix is not None and overlap is not None else ""
        sim_text = f" ({sim:.2f}{parts})" if sim is not None else ""
        items.append(
            f'<li>Your profile resembles <strong>{esc(entry_text(case, "title") or case.get("id"))}</strong>{esc(sim_text)} '
            f'<span class="small muted mono">{esc(case.get("id"))}</span></li>'
        )
    return (
        '<p class="small muted">Similarity weighs the operator mix (cosine of the operator-family shares) with the '
        "problem symptoms both show (their overlap); 1.00 = the same mix and the same problems. Results of a case "
        "are what was observed in that case, not a promise for this model.</p>"
        f'<ul class="plain">{"".join(items)}</ul>'
    )
