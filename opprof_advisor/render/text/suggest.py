"""`advisor suggest` and `advisor eval` in the terminal: the findings table and the quality tables."""

from __future__ import annotations

from opprof_advisor.core.terminal import one_line

from typing import Any

from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.render.phrases import (
    NO_FINDING, entry_text, evidence_line, finding_title, gain_assumptions, gain_line, gain_model_word, gain_parts,
    lead_first_step, localized, no_gain_text, reference_name, remedies_of, show_command, similar_case_line, waited_rank,
    symptom_label, word,
)
from opprof_advisor.render.text.fit import Column, dropped_note, fitted_table
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.render.text.profile import rank_table
from opprof_advisor.render.text.styled import Text


#: The findings table's columns; a narrow terminal drops the evidence first.
FINDING_COLUMNS = (Column("#", whole=True), Column(N_("Finding and first step"), least=28), Column(N_("At stake")),
                   Column(N_("Expected gain")), Column(N_("Evidence"), drop=1))


def suggest_table(doc: dict[str, Any], *, explain: bool | None = None, width: int = 80, **_options: Any) -> list:
    """The profile and workload lines, one row per finding, what else there is, ``--explain`` details, cases, notes."""
    explain = bool(doc.get("explain")) if explain is None else explain
    profile = doc.get("profile") or {}
    reference = reference_name(profile.get("reference"))
    head = "  " + _("{format}, device time {time}").format(format=profile.get("format"),
                                                         time=U.time(profile.get("device_time_us")))
    if profile.get("per_rank_of"):
        head += _(" per rank (the mean of {n} ranks)").format(n=profile["per_rank_of"])
    if profile.get("reference") == "step":
        head += _(", step {time}").format(time=U.time(profile.get("reference_us")))
    out: list = [Text.assemble((one_line(profile.get("path") or ""), "bold"), head)]
    context = (doc.get("context") or {}).get("line")
    if context:
        out.append(Text(localize(context), style="dim"))
    suggestions = doc.get("suggestions") or []
    if not suggestions:
        out.append(Text(_(NO_FINDING)))
    else:
        rows = []
        for s in suggestions:
            stake = U.time(s.get("stake_us")) + "\n" + _("{share} of the {reference}").format(
                share=U.share(s.get("stake_share")), reference=reference)
            rows.append((str(s.get("rank")), _finding_cell(s), stake, _gain_cell(s),
                         _evidence_cell(s, profile.get("reference"))))
        table, dropped = fitted_table(FINDING_COLUMNS, rows, width, show_lines=True)
        out += [table, *dropped_note(dropped)]
    if doc.get("rest"):
        out.append(Text(localize(doc["rest"]), style="dim"))
    if explain:
        out += [Text(line) for s in suggestions for line in explain_lines(s)]
        out += [Text(line) for line in left_out_lines(doc)]
    ranks = ((doc.get("profile_document") or {}).get("source") or {}).get("ranks")
    if ranks:
        out += rank_table(ranks, width, waited_rank(doc.get("profile_document")))
    out += [Text(similar_case_line(case, explain=explain)) for case in doc.get("similar_cases") or []]
    out += [Text.assemble((_("note:"), "yellow"), f" {note}") for note in localized(doc.get("notes"))]
    return out


def _finding_cell(s: dict[str, Any]):
    """The diagnosis, the lead remedy and its first step, the alternatives, where the rest is."""
    cell = Text(finding_title(s))
    remedies = remedies_of(s)
    if remedies and remedies[0] is not s:
        lead = remedies[0]
        cell.append("\n→ " + _("{title} ({id}, {kind})").format(title=entry_text(lead, "title"), id=lead.get("id"),
                                                                   kind=word(lead.get("kind"))))
    elif remedies:  # a row that is a KB entry itself (an older document)
        cell.append(f"\n{s.get('id')} ({word(s.get('kind'))})", style="dim")
    step = lead_first_step(s)
    if step:
        cell.append(f"\n1. {step}")
    if len(remedies) > 1:
        cell.append("\n" + _("also: {ids}").format(ids=", ".join(str(r.get("id")) for r in remedies[1:])), style="dim")
    if remedies:
        cell.append("\n" + _("the rest: {command}").format(command=show_command(s)), style="dim")
    return cell


def _gain_cell(s: dict[str, Any]):
    """The range in %, the time it saves and how it was obtained, one a line; else what the row says instead."""
    gain = s.get("expected_gain")
    pct, saved = gain_parts(gain, U)
    if not pct and not saved:
        return Text(no_gain_text(s))
    cell = Text("\n".join(part for part in (pct, saved) if part))
    model = gain_model_word(gain, s)
    if model:
        cell.append(f"\n{model}", style="dim")
    return cell


def _evidence_cell(s: dict[str, Any], reference: str | None):
    lines = [evidence_line(e, reference) for e in (s.get("evidence") or [])[:3]]
    symptoms = ", ".join(symptom_label(i) for i in s.get("matched_symptoms") or [])
    lines.append(_("symptoms: {ids}").format(ids=symptoms) if symptoms else _("no matching symptom (loosely related)"))
    if s.get("confidence"):
        lines.append(_("confidence: {level}").format(level=word(s["confidence"])))
    return Text("\n".join(lines))


def explain_lines(s: dict[str, Any]) -> list[str]:
    """``--explain``: what the expected gain assumes, and why each remedy applies."""
    gain = s.get("expected_gain")
    if any(gain_parts(gain, U)):
        said = _("expected gain {gain}; assumes {assumptions}").format(
            gain=gain_line(gain, suggestion=s), assumptions=gain_assumptions(gain) or _("nothing stated"))
    else:
        said = no_gain_text(s)
    lines = [f"{s.get('rank')}. {s.get('id')}: {said}"]
    for number, remedy in enumerate(remedies_of(s)):
        if remedy is s:
            continue
        role = _("lead remedy") if number == 0 else _("alternative")
        lines.append("   " + _("{role} {id} ({kind}, evidence {grade}, relevance {relevance}): {why}").format(
            role=role, id=remedy.get("id"), kind=word(remedy.get("kind")), grade=remedy.get("evidence_grade") or "?",
            relevance=f"{remedy.get('relevance') or 0:.2f}",
            why=localize(remedy.get("why_applies")) or _("no reason recorded")))
    return lines


def left_out_lines(doc: dict[str, Any]) -> list[str]:
    """``--explain``: the entries considered and left out, each with why."""
    return [_("left out: {id}: {why}").format(id=item.get("id"), why=localize(item.get("why")))
            for item in doc.get("left_out") or [] if isinstance(item, dict)]


def eval_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """The synthetic scenarios and, where they were scored, the real profiles."""
    out = _scenario_tables(doc, width) if doc.get("scenarios") is not None else []
    real = doc.get("real_profiles")
    if real is not None:
        out += _real_tables(real, width)
    else:
        where = doc.get("real_profiles_dir") or "../shared/real-profiles"
        out.append(Text(_("real profiles: skipped, none at {where} (point at them with --real-profiles DIR or "
                          "ADVISOR_REAL_PROFILES)").format(where=where)))
    return out


#: `advisor eval`'s tables; a narrow terminal moves the expected id under the scenario, drops hit@1 and hit@3
#: (the position says both), then format and RR.
SCENARIO_COLUMNS = (Column(N_("scenario")), Column(N_("format"), drop=3), Column(N_("expected"), drop=6),
                    Column(N_("position"), whole=True), Column("hit@1", whole=True, drop=5),
                    Column("hit@3", whole=True, drop=4), Column("RR", whole=True, drop=2), Column(N_("top 3")))
STACKED_SCENARIO_COLUMNS = (Column(N_("scenario → expected")), *SCENARIO_COLUMNS[1:2], *SCENARIO_COLUMNS[3:])
REAL_COLUMNS = (Column(N_("profile")), Column("hit@1", whole=True, drop=3), Column("hit@3", whole=True, drop=2),
                Column("RR", whole=True, drop=1), Column(N_("top 3")), Column(N_("missing / forbidden")))


def _scenario_tables(doc: dict[str, Any], width: int) -> list:
    rows = []
    for r in doc.get("scenarios") or []:
        expected = r.get("expect") or _("no gain > {limit} %").format(limit=f"{r.get('gain_limit_pct') or 10:g}")
        top3 = ", ".join((r.get("top") or [])[:3]) if not r.get("error") else _("error: {what}").format(what=r["error"])
        rows.append((Text(str(r.get("name"))), str(r.get("format")), expected, str(r.get("rank") or "-"),
                     _yes(r.get("hit1")), _yes(r.get("hit3")), f"{r.get('reciprocal_rank') or 0:.2f}", Text(top3)))
    table, dropped = fitted_table(SCENARIO_COLUMNS, rows, width, title=_("synthetic scenarios"), title_justify="left")
    if _(SCENARIO_COLUMNS[2].header) in dropped:  # the label matters most: shown under the scenario's name instead
        rows = [(Text.assemble(row[0], "\n→ ", row[2]), row[1], *row[3:]) for row in rows]
        table, dropped = fitted_table(STACKED_SCENARIO_COLUMNS, rows, width, title=_("synthetic scenarios"),
                                      title_justify="left")
    overall = doc.get("overall") or {}
    return [table, *dropped_note(dropped), Text(_("overall: {n} scenarios, hit@1 {hit1}, hit@3 {hit3}, MRR {mrr}").format(
        n=overall.get("scenarios"), hit1=f"{overall.get('hit1') or 0:.3f}", hit3=f"{overall.get('hit3') or 0:.3f}",
        mrr=f"{overall.get('mrr') or 0:.3f}"))]


def _real_tables(real: dict[str, Any], width: int) -> list:
    rows = []
    for r in real.get("profiles") or []:
        problems = r.get("error") or ", ".join([_("missing {topic}").format(topic=m) for m in r.get("missing") or []] +
                                               [_("forbidden {topic}").format(topic=f) for f in r.get("forbidden") or []])
        top = r.get("top") or []
        top3 = ", ".join(top[:3]) if top else (_("refused as expected") if r.get("expects_error") else _("none"))
        rows.append((Text(str(r.get("path"))), _yes(r.get("hit1")), _yes(r.get("hit3")),
                     f"{r.get('reciprocal_rank') or 0:.2f}", Text(top3), Text(problems or "")))
    table, dropped = fitted_table(REAL_COLUMNS, rows, width, title=_("real profiles"), title_justify="left")
    overall = real.get("overall") or {}
    out = [table, *dropped_note(dropped), Text(_("real profiles: {n} labelled, hit@1 {hit1}, hit@3 {hit3}, MRR {mrr}").format(
        n=overall.get("profiles"), hit1=f"{overall.get('hit1') or 0:.3f}", hit3=f"{overall.get('hit3') or 0:.3f}",
        mrr=f"{overall.get('mrr') or 0:.3f}"))]
    if overall.get("checked"):
        out.append(Text(_("advice checks on {n} profiles with advice: a gain on each of the top 3 in {gains}; #1's gain "
                          "in its labelled range in {inside} of {labelled}; {wrong} inapplicable remedies in the top 5, "
                          "{repeats} repeated diagnoses, {contradictions} contradictions, {above} gains above their "
                          "bound").format(
            n=overall["checked"], gains=overall.get("gains_top3"), inside=overall.get("first_gain_in_range"),
            labelled=overall.get("gain_labelled"),
            wrong=overall.get("wrong_remedies"), repeats=overall.get("repeats"),
            contradictions=overall.get("contradictions"), above=overall.get("above_bound"))))
    return out


def _yes(flag: Any) -> str:
    return _("yes") if flag else _("no")
