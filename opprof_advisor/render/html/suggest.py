"""The suggest report: the verdict, the profile, where time goes, the expected gains, one card per suggestion."""

from __future__ import annotations

from typing import Any

import re

from opprof_advisor.i18n import N_, _, localize
from opprof_advisor.render.phrases import entry_text, word
from opprof_advisor.render.html.charts import BarRow, Chart, Segment, render_chart
from opprof_advisor.render.html.page import (
    check_schema, class_name, esc, file_name, headings, merged_source, render_legend, render_notes_section, render_page,
    muted, render_sources, render_table, section, subtitle_of, unique, unit_class,
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
    title = _("Tuning advice for {name}").format(name=file_name(source.get("path")))
    return render_page(title, "opprof-advisor · suggest", subtitle_of(source), blocks)


def missing_profile_note() -> str:
    """What the reader sees when the report was rendered without the profile document."""
    text = _("The operator breakdown is not part of this report: it was rendered from the suggestions alone. The "
             "evidence of each suggestion below lists the operators it concerns.")
    return f'<p class="muted">{esc(text)}</p>'


def suggest_verdict(suggestions: list[dict], profile: dict | None) -> str:
    """The top box: the first thing to fix and what it would save."""
    if not suggestions:
        label, headline = _("Verdict"), _("No advice matched this profile")
        text = _("No knowledge-base entry found evidence in this profile. See the notes below for what the data could "
                 "not show.")
        return (
            f'<section class="verdict" aria-labelledby="verdict-h"><p class="label">{esc(label)}</p>'
            f'<h2 class="headline" id="verdict-h">{esc(headline)}</h2><p>{esc(text)}</p></section>'
        )
    first = suggestions[0]
    pct, saved = gain_parts(first.get("expected_gain"), U)
    why = verdict_evidence(first, profile)
    if pct:
        ceiling = matched_share(first)
        bound = " " + _("At most {share}: the share of the operators it fixes.").format(share=U.share(ceiling)) \
            if ceiling > 0 else ""
        of_step = (first.get("expected_gain") or {}).get("of") == "step"
        template = _("Expected to save {gain} of the step{saved}.") if of_step else \
            _("Expected to save {gain} of device time{saved}.")
        saving = esc(template).format(gain=f'<span class="big">{esc(pct)}</span>',
                                      saved=esc(_(" ({time})").format(time=saved)) if saved else "")
        saving = f'<p>{saving}<span class="small muted">{esc(bound)}</span></p>'
    else:
        saving = f"<p>{esc(_(NO_GAIN_VERDICT))}</p>"
    ranked = _("{n} suggestion ranked below; details, evidence and sources in the cards.") if len(suggestions) == 1 \
        else _("{n} suggestions ranked below; details, evidence and sources in the cards.")
    label = _("Fix first")
    return (
        f'<section class="verdict" aria-labelledby="verdict-h"><p class="label">{esc(label)}</p>'
        f'<h2 class="headline" id="verdict-h">{esc(entry_text(first, "title") or first.get("id"))}</h2>'
        f"{why}{saving}"
        f'<p class="small muted">{esc(ranked.format(n=len(suggestions)))}</p></section>'
    )


NO_GAIN_VERDICT = N_("No sourced gain figure for this advice: the size of the win is not known in advance.")


def verdict_evidence(suggestion: dict, profile: dict | None) -> str:
    """One sentence naming the operators behind the first suggestion (and their unit when known)."""
    evidence = suggestion.get("evidence") or []
    if not evidence:
        return ""
    parts = []
    for e in evidence[:3]:
        unit = op_unit_class(profile, e.get("op_type"))
        template = (_("{op} takes {share} of device time ({time}) in communication") if unit == "communication" else
                    _("{op} takes {share} of device time ({time}) on the {unit}") if unit else
                    _("{op} takes {share} of device time ({time})"))
        parts.append(template.format(op=e.get("op_type"), share=U.share(e.get("share")), time=U.time(e.get("time_us")),
                                     unit=class_name(unit)))
    why = str(localize(evidence[0].get("why") or "")).rstrip(".。")
    if len(why) > 140:  # the card has the full text; the verdict keeps the first clause
        why = re.split("[;；]", why)[0][:140].rstrip()
    text = (_("{parts}: {why}.") if why else _("{parts}.")).format(parts=_("; ").join(parts), why=why)
    return f"<p>{esc(text)}</p>"


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
        return muted(_("No suggestion, so no gain to chart."))
    rows, largest = [], 0.0
    for i, sug in enumerate(suggestions):
        row, top = gain_row(sug, first=i == 0)
        rows.append(row)
        largest = max(largest, top)
    caption = _("Solid bar: expected end-to-end gain range (% of device time). Pale bar: share of device time of the "
                "matched operators — the most any fix to them can save.")
    if not any((s.get("expected_gain") or {}).get("high_pct") is not None for s in suggestions):
        caption += " " + _("No suggestion here has a sourced gain figure: the pale bars show the time at stake.")
    chart = Chart(rows, largest, U.pct_tick, _("Expected gain range per suggestion"), caption)
    legend = render_legend([("g-first", _("first suggestion")), ("g-range", _("other suggestions")),
                            ("ceiling", _("matched operators' share"))])
    return render_chart(chart) + legend


def gain_row(sug: dict, *, first: bool) -> tuple[BarRow, float]:
    """One gain-chart row and the largest value it needs on the axis."""
    label = f"#{sug.get('rank') or '?'} {entry_text(sug, 'title') or sug.get('id')}"
    ceiling = matched_share(sug) * 100
    lane = [Segment(0.0, ceiling, "ceiling", _("matched operators: {share}").format(share=U.pct(ceiling)))] \
        if ceiling > 0 else []
    gain = sug.get("expected_gain") or {}
    low, high = as_float(gain.get("low_pct")), as_float(gain.get("high_pct"))
    pct, saved = gain_parts(gain, U)
    if low is None or high is None:
        return BarRow(label, [lane], _("no sourced gain"), strong=first), ceiling
    css = "g-first" if first else "g-range"
    lane.append(Segment(low, max(high, low), css, _("expected gain {gain}").format(gain=pct)))
    value = pct + (f" · {saved}" if saved else "")
    return BarRow(label, [lane], value, strong=first), max(ceiling, high)


def render_cards(suggestions: list[dict], *, static: bool) -> str:
    """One card per suggestion, the first one prominent."""
    if not suggestions:
        return muted(_("No suggestion."))
    cards = [render_card(sug, first=i == 0, static=static) for i, sug in enumerate(suggestions)]
    return f'<div class="cards">{"".join(cards)}</div>'


def render_card(sug: dict, *, first: bool, static: bool) -> str:
    """A suggestion card: title, badges, expected gain and basis, evidence, sources."""
    rank = sug.get("rank") or "?"
    key = f"s-{esc(rank)}"
    badges = card_badges(sug, first=first)
    evidence = render_evidence(sug.get("evidence") or [])
    extra = card_terms(sug)
    fix_first, evidence_title, sources_title = _("fix first"), _("Evidence"), _("Sources")
    return (
        f'<article class="card{" first" if first else ""}" id="{key}" aria-labelledby="{key}-t">'
        f'<div class="card-head"><div class="titles"><p class="rank">#{esc(rank)}{" · " + esc(fix_first) if first else ""}</p>'
        f'<h3 id="{key}-t">{esc(entry_text(sug, "title") or sug.get("id"))}</h3>{badges}</div>'
        f"{gain_box(sug.get('expected_gain'), static=static)}</div>"
        f"{gain_basis(sug.get('expected_gain'))}{first_step(sug)}"
        f"<h4>{esc(evidence_title)}</h4>{evidence}{extra}"
        f"<h4>{esc(sources_title)}</h4>{render_sources(sug.get('sources') or [])}</article>"
    )


def card_badges(sug: dict, *, first: bool) -> str:
    """Fix-first, kind, evidence grade, entry id and match score."""
    grade = str(sug.get("evidence_grade") or "?")
    meaning = _(EVIDENCE_GRADES.get(grade, N_("grade not recorded")))
    badges = []
    if sug.get("kind"):
        badges.append(f'<span class="badge">{esc(word(sug["kind"]))}</span>')
    grade_css = f" grade-{grade}" if grade in EVIDENCE_GRADES else ""
    grade_text = _("evidence {grade}: {meaning}").format(grade=grade, meaning=meaning)
    badges.append(f'<span class="badge{grade_css}">{esc(grade_text)}</span>')
    badges.append(f'<span class="badge mono">{esc(sug.get("id"))}</span>')
    score = as_float(sug.get("score"))
    if score is not None:
        score_text = _("match score {score}").format(score=f"{score:.2f}")
        badges.append(f'<span class="badge">{esc(score_text)}</span>')
    return f'<p class="badges">{"".join(badges)}</p>'


def gain_box(gain: dict | None, *, static: bool) -> str:
    """The big expected-gain figure of a card."""
    pct, saved = gain_parts(gain, U)
    if not pct:
        text = _("no gain claimed from a static scan") if static else _("no sourced gain figure")
        return f'<div class="gain-box"><p class="figure none">{esc(text)}</p></div>'
    of = _("of the step") if (gain or {}).get("of") == "step" else _("of device time")
    saved_text = _("{time} saved").format(time=saved)
    sub = f'<p class="sub">{esc(of)}</p>' + (f'<p class="sub">{esc(saved_text)}</p>' if saved else "")
    return f'<div class="gain-box"><p class="figure">{esc(pct)}</p>{sub}</div>'


def first_step(sug: dict) -> str:
    """How to start the fix, and where the rest of the steps are."""
    step = entry_text(sug, "first_step")
    if not step:
        return ""
    label, rest = _("First step:"), _("The rest:")
    return (f'<p class="first-step"><strong>{esc(label)}</strong> {esc(step)} '
            f'<span class="muted small">{esc(rest)} <code>{esc(sug.get("show") or "advisor show " + str(sug.get("id")))}'
            "</code></span></p>")


def gain_basis(gain: dict | None) -> str:
    """How the expected gain was computed."""
    if not gain or not gain.get("basis"):
        return ""
    label = _("Basis:")
    return f'<p class="basis"><strong>{esc(label)}</strong> {esc(localize(gain["basis"]))}</p>'


def render_evidence(evidence: list[dict]) -> str:
    """The evidence table of a card: op type, time, share, why."""
    if not evidence:
        return muted(_("No operator evidence recorded."), "muted small")
    rows = [
        f'<tr><td class="name mono">{esc(e.get("op_type"))}</td><td class="num">{esc(U.time(e.get("time_us")))}</td>'
        f'<td class="num">{esc(U.share(e.get("share")))}</td><td class="why">{esc(localize(e.get("why")))}</td></tr>'
        for e in evidence
    ]
    return render_table(headings(EVIDENCE_HEAD), rows)


#: (title, numeric) of a card's evidence table.
EVIDENCE_HEAD = ((N_("Operator"), False), (N_("Time"), True), (N_("Share"), True), (N_("Why it matches"), False))


def card_terms(sug: dict) -> str:
    """The entry's operators and tags, as a line of text."""
    bits = []
    if sug.get("operators"):
        bits.append(_("Operators: {names}").format(names=", ".join(str(o) for o in sug["operators"])))
    if sug.get("tags"):
        bits.append(_("Tags: {names}").format(names=", ".join(str(t) for t in sug["tags"])))
    return f'<p class="small muted">{esc(" · ".join(bits))}</p>' if bits else ""


def render_similar(cases: list[dict]) -> str:
    """The case studies whose operator mix and problems resemble the profile's, with the parts of the similarity."""
    if not cases:
        return muted(_("No case study has an operator mix close to this profile."))
    items = []
    for case in cases:
        sim, mix, overlap = (as_float(case.get(key)) for key in ("similarity", "mix_cosine", "symptom_overlap"))
        parts = _(": op mix {mix}, symptoms {overlap}").format(mix=f"{mix:.2f}", overlap=f"{overlap:.2f}") \
            if mix is not None and overlap is not None else ""
        sim_text = _(" ({similarity}{parts})").format(similarity=f"{sim:.2f}", parts=parts) if sim is not None else ""
        title = f'<strong>{esc(entry_text(case, "title") or case.get("id"))}</strong>'
        line = esc(_("Your profile resembles {title}{similarity}")).format(title=title, similarity=esc(sim_text))
        items.append(
            f'<li>{line} '
            f'<span class="small muted mono">{esc(case.get("id"))}</span></li>'
        )
    intro = _("Similarity weighs the operator mix (cosine of the operator-family shares) with the problem symptoms "
              "both show (their overlap); 1.00 = the same mix and the same problems. Results of a case are what was "
              "observed in that case, not a promise for this model.")
    return f'<p class="small muted">{esc(intro)}</p><ul class="plain">{"".join(items)}</ul>'
