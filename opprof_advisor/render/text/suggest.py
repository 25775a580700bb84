"""`advisor suggest` and `advisor eval` in the terminal: the ranked advice table and the quality tables."""

from __future__ import annotations

from typing import Any

from opprof_advisor.i18n import N_, _, localize
from opprof_advisor.render.phrases import (
    entry_text, evidence_line, gain_line, localized, reference_name, symptom_label, word, score_line, similar_case_line, terms_line,
)
from opprof_advisor.render.text.fit import Column, dropped_note, fitted_table
from opprof_advisor.render.units import TEXT as U


#: The advice table's columns at a narrow terminal: the grade letter goes first, then the evidence.
ADVICE_COLUMNS = (Column("#", whole=True), Column(N_("Advice and first step"), least=28), Column(N_("At stake")),
                  Column(N_("Expected gain")), Column(N_("Evidence"), drop=1), Column(N_("Grade"), whole=True, drop=2))


def suggest_table(doc: dict[str, Any], *, explain: bool | None = None, width: int = 80, **_options: Any) -> list:
    """The profile line, one row per suggestion, the score breakdown with ``explain``, similar cases, notes."""
    from opprof_advisor.render.text.styled import Text

    explain = bool(doc.get("explain")) if explain is None else explain
    profile = doc.get("profile") or {}
    reference = reference_name(profile.get("reference"))
    head = "  " + _("{format}, device time {time}").format(format=profile.get("format"),
                                                         time=U.time(profile.get("device_time_us")))
    if profile.get("reference") == "step":
        head += _(", step {time}").format(time=U.time(profile.get("reference_us")))
    out: list = [Text.assemble((str(profile.get("path") or ""), "bold"), head)]
    suggestions = doc.get("suggestions") or []
    if not suggestions:
        out.append(Text(_("No entry of the knowledge base is backed by this profile.")))
    else:
        rows = []
        for s in suggestions:
            stake = U.time(s.get("stake_us")) + "\n" + _("{share} of the {reference}").format(
                share=U.share(s.get("stake_share")), reference=reference)
            rows.append((str(s.get("rank")), _advice_cell(s), stake, Text(gain_line(s.get("expected_gain"))),
                         _evidence_cell(s), str(s.get("evidence_grade") or "")))
        table, dropped = fitted_table(ADVICE_COLUMNS, rows, width, show_lines=True)
        out += [table, *dropped_note(dropped)]
    if explain:
        out += [Text(line) for s in suggestions for line in explain_lines(s)]
    ranks = ((doc.get("profile_document") or {}).get("source") or {}).get("ranks")
    if ranks:
        from opprof_advisor.render.text.profile import rank_table

        out.append(rank_table(ranks))
    out += [Text(similar_case_line(case, explain=explain)) for case in doc.get("similar_cases") or []]
    out += [Text.assemble((_("note:"), "yellow"), f" {note}") for note in localized(doc.get("notes"))]
    return out


def _advice_cell(s: dict[str, Any]):
    from opprof_advisor.render.text.styled import Text

    cell = Text(entry_text(s, "title"))
    cell.append(f"\n{s.get('id')} ({word(s.get('kind'))})", style="dim")
    if s.get("first_step"):
        cell.append(f"\n1. {entry_text(s, 'first_step')}")
        cell.append("\n" + _("the rest: advisor show {id}").format(id=s.get("id")), style="dim")
    return cell


def _evidence_cell(s: dict[str, Any]):
    from opprof_advisor.render.text.styled import Text

    lines = [evidence_line(e) for e in (s.get("evidence") or [])[:3]]
    symptoms = ", ".join(symptom_label(i) for i in s.get("matched_symptoms") or [])
    lines.append(_("symptoms: {ids}").format(ids=symptoms) if symptoms else _("no matching symptom (loosely related)"))
    return Text("\n".join(lines))


def explain_lines(s: dict[str, Any]) -> list[str]:
    """``--explain``: the score formula and matched terms, how the gain was computed, each requirement."""
    lines = [f"{s.get('rank')}. {s.get('id')}: {score_line(s)}; " + _("matched terms: {terms}").format(terms=terms_line(s))]
    if s.get("expected_gain"):
        lines.append("   " + _("gain basis: {basis}").format(basis=localize(s["expected_gain"].get("basis"))))
    lines += ["   " + _("requires {what}").format(what=localize(check.get("text")))
              for check in s.get("requirements") or []]
    return lines


def eval_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """The synthetic scenarios and, where they were scored, the real profiles."""
    from opprof_advisor.render.text.styled import Text

    out = _scenario_tables(doc, width)
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
    from opprof_advisor.render.text.styled import Text

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
    from opprof_advisor.render.text.styled import Text

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
    return [table, *dropped_note(dropped), Text(_("real profiles: {n} labelled, hit@1 {hit1}, hit@3 {hit3}, MRR {mrr}").format(
        n=overall.get("profiles"), hit1=f"{overall.get('hit1') or 0:.3f}", hit3=f"{overall.get('hit3') or 0:.3f}",
        mrr=f"{overall.get('mrr') or 0:.3f}"))]


def _yes(flag: Any) -> str:
    return _("yes") if flag else _("no")
