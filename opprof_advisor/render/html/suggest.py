"""The suggest report: the verdict, the profile, where time goes, the expected gains, one card per finding."""

from __future__ import annotations

from typing import Any

import re

from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.render.phrases import (
    entry_text, finding_title, gain_assumptions, gain_model_word, lead_first_step, no_gain_text, remedies_of,
    show_command, symptom_label, word,
)
from opprof_advisor.render.html.charts import BarRow, Chart, Segment, render_chart
from opprof_advisor.render.html.page import (
    check_schema, class_name, esc, file_name, headings, merged_source, render_legend, render_notes_section, render_page,
    muted, render_sources, render_table, section, subtitle_of, unique, unit_class,
)
from opprof_advisor.render.html.profile import device_time_charts, profile_summary_section, steps_section
from opprof_advisor.render.html.roofline import roofline_section
from opprof_advisor.render.phrases import gain_parts, gain_us
from opprof_advisor.core.units import HTML as U
from opprof_advisor.core.units import as_float
from opprof_advisor.core.vocabulary import EVIDENCE_GRADES


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
    """The suggest report: verdict, profile summary, charts, one card per finding, what else, notes."""
    check_schema(doc, "suggest")
    profile = find_profile_doc(doc, profile_doc)
    summary = doc.get("profile") or {}
    # "excerpt": false says nothing a reader needs (an excerpt is said in the notes): no fact row for it
    source = merged_source({k: v for k, v in summary.items() if k != "excerpt" or v}, profile)
    suggestions = doc.get("suggestions") or []
    notes = unique(list(doc.get("notes") or []) + list((profile or {}).get("notes") or []))
    cards = render_cards(suggestions, static=False, reference=summary.get("reference"))
    cards += render_rest(doc.get("rest"))
    if doc.get("explain") and doc.get("left_out"):
        cards += render_left_out(doc["left_out"])
    blocks = [
        suggest_verdict(suggestions, profile, context=(doc.get("context") or {}).get("line"),
                        reference=summary.get("reference")),
        steps_section(profile, excerpt=bool(summary.get("excerpt"))),
        profile_summary_section(source, profile),
        section("families", _("Where the device time goes"),
                device_time_charts(profile) if profile else missing_profile_note()),
        section("gains", _("Expected gain per finding"),
                gain_chart(suggestions, reference_us=summary.get("reference_us"), reference=summary.get("reference"))),
        section("suggestions", _("Findings"), cards),
        roofline_section((profile or {}).get("roofline")),
        section("similar", _("Similar cases"), render_similar(doc.get("similar_cases") or [])),
        render_notes_section(notes),
    ]
    title = _("Tuning advice for {name}").format(name=file_name(source.get("path")))
    return render_page(title, "opprof-advisor · suggest", subtitle_of(source), blocks)


def missing_profile_note() -> str:
    """What the reader sees when the report was rendered without the profile document."""
    text = _("The operator breakdown is not part of this report: it was rendered from the findings alone. The "
             "evidence of each finding below lists the operators it concerns.")
    return f'<p class="muted">{esc(text)}</p>'


def suggest_verdict(suggestions: list[dict], profile: dict | None, *, context: Any = None,
                    reference: Any = None) -> str:
    """The top box: the workload, the first finding, what fixing it would save, and the remedy to start with."""
    workload = muted(_("Workload: {line}").format(line=localize(context)), "small muted") if context else ""
    if not suggestions:
        label, headline = _("Verdict"), _("Nothing to fix first")
        text = _("No finding in this profile stands out. See the notes below for what the data could not show.")
        return (
            f'<section class="verdict" aria-labelledby="verdict-h"><p class="label">{esc(label)}</p>'
            f'<h2 class="headline" id="verdict-h">{esc(headline)}</h2>{workload}<p>{esc(text)}</p></section>'
        )
    first = suggestions[0]
    gain = first.get("expected_gain")
    pct, saved = gain_parts(gain, U)
    why = verdict_evidence(first, profile, reference)
    if pct or saved:
        ceiling = matched_share(first)
        of_step = gain_of(gain, reference) == "step"
        bound = " " + (_("At most {share}: the share of the step at stake.") if of_step else
                       _("At most {share}: the share of device time at stake.")).format(share=U.share(ceiling)) \
            if ceiling > 0 else ""
        if pct:
            template = _("Expected to save {gain} of the step{saved}.") if of_step else \
                _("Expected to save {gain} of device time{saved}.")
            saving = esc(template).format(gain=f'<span class="big">{esc(pct)}</span>',
                                          saved=esc(_(" ({time})").format(time=saved)) if saved else "")
        else:
            saving = esc(_("Expected to save {time}.")).format(time=f'<span class="big">{esc(saved)}</span>')
        model = gain_model_word(gain, first)
        basis = " " + _("Basis: {model}.").format(model=model) if model else ""
        saving = f'<p>{saving}<span class="small muted">{esc(basis + bound)}</span></p>'
    else:
        said = (gain or {}).get("assumptions") or first.get("assumptions")
        saving = f"<p>{esc(_(NO_GAIN_VERDICT))}" + \
            (f' <span class="small muted">{esc(localize(said))}</span>' if said else "") + "</p>"
    remedies = remedies_of(first)
    start = ""
    if remedies and remedies[0] is not first:
        step = lead_first_step(first)
        lead = remedies[0]
        text = _("Lead remedy: {title} ({id}).").format(title=entry_text(lead, "title"), id=lead.get("id"))
        if step:
            text += " " + _("First step: {step}").format(step=step)
        start = f"<p>{esc(text)}</p>"
    ranked = _("{n} finding ranked below; evidence, remedies and sources in the cards.") if len(suggestions) == 1 \
        else _("{n} findings ranked below; evidence, remedies and sources in the cards.")
    label = _("Fix first")
    return (
        f'<section class="verdict" aria-labelledby="verdict-h"><p class="label">{esc(label)}</p>'
        f'<h2 class="headline" id="verdict-h">{esc(finding_title(first))}</h2>'
        f"{workload}{why}{saving}{start}"
        f'<p class="small muted">{esc(ranked.format(n=len(suggestions)))}</p></section>'
    )


NO_GAIN_VERDICT = N_("No modelled gain for this finding: the size of the win is not known in advance.")


def verdict_evidence(suggestion: dict, profile: dict | None, reference: Any = None) -> str:
    """One sentence naming the operators behind the first finding (and their unit when known)."""
    evidence = suggestion.get("evidence") or []
    if not evidence:
        return ""
    parts = []
    for e in evidence[:3]:
        unit = op_unit_class(profile, e.get("op_type"))
        if not e.get("op_type"):  # a run-level finding (exposed communication, idle time): no operator to name
            template = _("{share} of the step ({time})") if reference == "step" else _("{share} of device time ({time})")
        elif reference == "step":
            template = (_("{op} takes {share} of the step ({time}) in communication") if unit == "communication" else
                        _("{op} takes {share} of the step ({time}) on the {unit}") if unit else
                        _("{op} takes {share} of the step ({time})"))
        else:
            template = (_("{op} takes {share} of device time ({time}) in communication") if unit == "communication"
                        else _("{op} takes {share} of device time ({time}) on the {unit}") if unit else
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


def gain_pct_range(gain: dict | None, reference_us: Any = None) -> tuple[float | None, float | None]:
    """(low, high) % of the reference time a gain saves: ``low_pct`` / ``high_pct``, else its µs over the reference."""
    gain = gain or {}
    low, high = as_float(gain.get("low_pct")), as_float(gain.get("high_pct"))
    if low is not None and high is not None:
        return low, high
    reference = as_float(reference_us)
    low_us, high_us = gain_us(gain)
    if reference and reference > 0 and low_us is not None and high_us is not None:
        return low_us / reference * 100, high_us / reference * 100
    return None, None


def gain_chart(suggestions: list[dict], *, reference_us: Any = None, reference: Any = None) -> str:
    """Per finding: the expected gain range (low to high) on top of the share of the reference time at stake."""
    if not suggestions:
        return muted(_("No finding, so no gain to chart."))
    rows, largest = [], 0.0
    for i, sug in enumerate(suggestions):
        row, top = gain_row(sug, first=i == 0, reference_us=reference_us)
        rows.append(row)
        largest = max(largest, top)
    of_step = any(gain_of(s.get("expected_gain"), reference) == "step" for s in suggestions)
    caption = (_("Solid bar: expected gain range, low to high (% of the step). Pale bar: share of the step at stake "
                 "— the most any fix can save.") if of_step else
               _("Solid bar: expected gain range, low to high (% of device time). Pale bar: share of device time at "
                 "stake — the most any fix can save."))
    if not any(gain_pct_range(s.get("expected_gain"), reference_us)[1] is not None for s in suggestions):
        caption += " " + _("No finding here has a modelled gain: the pale bars show the time at stake.")
    chart = Chart(rows, largest, U.pct_tick, _("Expected gain range per finding"), caption)
    drawn = {seg.css for row in rows for lane in row.lanes for seg in lane}
    legend = render_legend([(css, label) for css, label in (("g-first", _("first finding")),
                                                            ("g-range", _("other findings")),
                                                            ("ceiling", _("time at stake"))) if css in drawn])
    return render_chart(chart) + legend


#: What a gain-chart row without a modelled gain says in its value column.
NO_MODELLED_GAIN = N_("no modelled gain")


def gain_row(sug: dict, *, first: bool, reference_us: Any = None) -> tuple[BarRow, float]:
    """One gain-chart row and the largest value it needs on the axis."""
    label = f"#{sug.get('rank') or '?'} {finding_title(sug)}"
    ceiling = matched_share(sug) * 100
    lane = [Segment(0.0, ceiling, "ceiling", _("at stake: {share}").format(share=U.pct(ceiling)))] \
        if ceiling > 0 else []
    gain = sug.get("expected_gain") or {}
    low, high = gain_pct_range(gain, reference_us)
    if low is None or high is None:
        return BarRow(label, [lane], _(NO_MODELLED_GAIN), strong=first, note=no_gain_text(sug)), ceiling
    low, high = min(low, high), max(low, high)
    pct = U.pct_range(low, high)
    low_us, high_us = gain_us(gain)
    saved = U.time_range(low_us, high_us) if low_us is not None and high_us is not None else ""
    css = "g-first" if first else "g-range"
    lane.append(Segment(low, high, css, _("expected gain {gain}").format(gain=pct)))
    model = gain_model_word(gain, sug)
    value = " · ".join(part for part in (pct, saved, model) if part)
    return BarRow(label, [lane], value, strong=first), max(ceiling, high)


def render_cards(suggestions: list[dict], *, static: bool, reference: Any = None) -> str:
    """One card per finding (suggest) or per KB entry (scan's advice), the first one prominent."""
    if not suggestions:
        return muted(_("No suggestion.") if static else _("No finding."))
    cards = [render_finding_card(sug, first=i == 0, reference=reference) if not static and "remedies" in sug else
             render_card(sug, first=i == 0, static=static) for i, sug in enumerate(suggestions)]
    return f'<div class="cards">{"".join(cards)}</div>'


def render_finding_card(sug: dict, *, first: bool, reference: Any = None) -> str:
    """A finding card: the diagnosis, its expected gain and what it assumes, the evidence, the remedies."""
    rank = sug.get("rank") or "?"
    key = f"s-{esc(rank)}"
    fix_first, evidence_title = _("fix first"), _("Evidence")
    symptoms = ", ".join(symptom_label(i) for i in sug.get("matched_symptoms") or [])
    symptoms_line = muted(_("Symptoms: {ids}").format(ids=symptoms), "small muted") if symptoms else ""
    return (
        f'<article class="card{" first" if first else ""}" id="{key}" aria-labelledby="{key}-t">'
        f'<div class="card-head"><div class="titles"><p class="rank">#{esc(rank)}{" · " + esc(fix_first) if first else ""}</p>'
        f'<h3 id="{key}-t">{esc(finding_title(sug))}</h3>{finding_badges(sug)}</div>'
        f"{finding_gain_box(sug, reference)}</div>"
        f"{gain_assumptions_line(sug)}"
        f"<h4>{esc(evidence_title)}</h4>{render_evidence(sug.get('evidence') or [], reference)}{symptoms_line}"
        f"{render_remedies(sug)}</article>"
    )


def finding_badges(sug: dict) -> str:
    """The confidence in the diagnosis and the finding's id."""
    badges = []
    if sug.get("confidence"):
        text = _("confidence: {level}").format(level=word(sug["confidence"]))
        badges.append(f'<span class="badge">{esc(text)}</span>')
    if sug.get("id"):
        badges.append(f'<span class="badge mono">{esc(sug.get("id"))}</span>')
    return f'<p class="badges">{"".join(badges)}</p>' if badges else ""


def finding_gain_box(sug: dict, reference: Any = None) -> str:
    """The big expected-gain figure of a finding card: the range, of what, the time it saves, how it was obtained."""
    gain = sug.get("expected_gain")
    pct, saved = gain_parts(gain, U)
    if not pct and not saved:
        return f'<div class="gain-box"><p class="figure none">{esc(_(NO_MODELLED_GAIN))}</p></div>'
    subs = []
    if pct:
        subs.append(_("of the step") if gain_of(gain, reference) == "step" else _("of device time"))
    if pct and saved:
        subs.append(_("{time} saved").format(time=saved))
    model = gain_model_word(gain, sug)
    if model:
        subs.append(_("basis: {model}").format(model=model))
    sub = "".join(f'<p class="sub">{esc(text)}</p>' for text in subs)
    return f'<div class="gain-box"><p class="figure">{esc(pct or saved)}</p>{sub}</div>'


def gain_of(gain: dict | None, reference: Any = None) -> Any:
    """What a gain's percentages are of: its own ``of``, else the document's reference (``step`` / ``device time``)."""
    return (gain or {}).get("of") or reference


def gain_assumptions_line(sug: dict) -> str:
    """What the expected gain assumes (without a gain: what the row says instead, if anything)."""
    gain = sug.get("expected_gain")
    text = gain_assumptions(gain) if gain else localize(sug.get("assumptions") or "")
    if not text:
        return ""
    label = _("Assumes:")
    return f'<p class="basis"><strong>{esc(label)}</strong> {esc(text)}</p>'


def render_remedies(sug: dict) -> str:
    """The lead remedy (why it applies, first step, sources) and the alternatives, one item each."""
    remedy_title, sources_title, alternatives_title = _("Remedy"), _("Sources"), _("Alternatives")
    remedies = remedies_of(sug)
    if not remedies:
        return f"<h4>{esc(remedy_title)}</h4>" + muted(_("No remedy in the knowledge base for this finding yet."),
                                                       "muted small")
    lead = remedies[0]
    out = [f"<h4>{esc(remedy_title)}</h4>",
           f'<p class="remedy"><strong>{esc(entry_text(lead, "title") or lead.get("id"))}</strong></p>',
           remedy_badges(lead)]
    if lead.get("why_applies"):
        out.append(muted(_("Why it applies: {why}").format(why=localize(lead["why_applies"])), "small muted"))
    step = lead_first_step(sug)
    if step:
        label, rest = _("First step:"), _("The rest:")
        out.append(f'<p class="first-step"><strong>{esc(label)}</strong> {esc(step)} '
                   f'<span class="muted small">{esc(rest)} <code>{esc(show_command(sug))}</code></span></p>')
    out.append(f"<h4>{esc(sources_title)}</h4>{render_sources(lead.get('sources') or [])}")
    if len(remedies) > 1:
        items = "".join(alternative_item(other) for other in remedies[1:])
        out.append(f'<h4>{esc(alternatives_title)}</h4><ul class="plain alternatives">{items}</ul>')
    return "".join(out)


def alternative_item(remedy: dict) -> str:
    """One alternative remedy: its title and id, kind and evidence grade, why it applies, its sources."""
    grade = remedy.get("evidence_grade")
    detail = " · ".join(b for b in (word(remedy.get("kind")),
                                     _("evidence {grade}").format(grade=grade) if grade else "") if b)
    why = localize(remedy.get("why_applies")) if remedy.get("why_applies") else ""
    return (f'<li><strong>{esc(entry_text(remedy, "title") or remedy.get("id"))}</strong> '
            f'<span class="small muted mono">{esc(remedy.get("id"))}</span>'
            + (f' <span class="small muted">{esc(detail)}</span>' if detail else "")
            + (f'<br><span class="small">{esc(why)}</span>' if why else "")
            + (render_sources(remedy["sources"]) if remedy.get("sources") else "") + "</li>")


def remedy_badges(remedy: dict) -> str:
    """A remedy's kind, evidence grade and id."""
    grade = str(remedy.get("evidence_grade") or "?")
    meaning = _(EVIDENCE_GRADES.get(grade, N_("grade not recorded")))
    grade_text = _("evidence {grade}: {meaning}").format(grade=grade, meaning=meaning)
    badges = [f'<span class="badge">{esc(word(remedy["kind"]))}</span>'] if remedy.get("kind") else []
    grade_css = f" grade-{grade}" if grade in EVIDENCE_GRADES else ""
    badges.append(f'<span class="badge{grade_css}">{esc(grade_text)}</span>')
    badges.append(f'<span class="badge mono">{esc(remedy.get("id"))}</span>')
    return f'<p class="badges">{"".join(badges)}</p>'


def render_rest(rest: Any) -> str:
    """What else the profile holds below the findings (``nothing else above 3 % of the step``)."""
    return muted(localize(rest), "small muted rest") if rest else ""


def render_left_out(left_out: list[Any]) -> str:
    """``--explain``: the KB entries considered and left out, each with why."""
    items = "".join(f'<li><span class="mono">{esc(item.get("id"))}</span>: {esc(localize(item.get("why")))}</li>'
                    for item in left_out if isinstance(item, dict))
    if not items:
        return ""
    title = _("Left out")
    return f'<h3>{esc(title)}</h3><ul class="plain small">{items}</ul>'


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
    """Kind, evidence grade and entry id."""
    grade = str(sug.get("evidence_grade") or "?")
    meaning = _(EVIDENCE_GRADES.get(grade, N_("grade not recorded")))
    badges = []
    if sug.get("kind"):
        badges.append(f'<span class="badge">{esc(word(sug["kind"]))}</span>')
    grade_css = f" grade-{grade}" if grade in EVIDENCE_GRADES else ""
    grade_text = _("evidence {grade}: {meaning}").format(grade=grade, meaning=meaning)
    badges.append(f'<span class="badge{grade_css}">{esc(grade_text)}</span>')
    badges.append(f'<span class="badge mono">{esc(sug.get("id"))}</span>')
    # (the matcher's score ranks the entries; its value means nothing to a reader and is not shown)
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


def render_evidence(evidence: list[dict], reference: Any = None) -> str:
    """The evidence table of a card: op type, time, share (headed with what it is a share of), why."""
    if not evidence:
        return muted(_("No operator evidence recorded."), "muted small")
    rows = [
        f'<tr><td class="name mono">{esc(e.get("op_type") or "—")}</td><td class="num">{esc(U.time(e.get("time_us")))}</td>'
        f'<td class="num">{esc(U.share(e.get("share")))}</td><td class="why">{esc(localize(e.get("why")))}</td></tr>'
        for e in evidence
    ]
    share = SHARE_HEAD.get(str(reference), N_("Share"))
    return render_table(headings(((*EVIDENCE_HEAD[:2], (share, True), *EVIDENCE_HEAD[2:]))), rows)


#: (title, numeric) of a card's evidence table, the share column put in by ``render_evidence``.
EVIDENCE_HEAD = ((N_("Operator"), False), (N_("Time"), True), (N_("Why it matches"), False))

#: The evidence share column's title by the document's reference (what the shares are of).
SHARE_HEAD = {"step": N_("Share of the step"), "device time": N_("Share of device time")}


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
