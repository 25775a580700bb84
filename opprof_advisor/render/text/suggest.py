"""`advisor suggest` and `advisor eval` in the terminal: the ranked advice table and the quality tables."""

from __future__ import annotations

from typing import Any

from opprof_advisor.i18n import _
from opprof_advisor.render.phrases import (
    entry_text, evidence_line, gain_line, localized, reference_name, symptom_label, word, score_line, similar_case_line, terms_line,
)
from opprof_advisor.render.units import TEXT as U


def suggest_table(doc: dict[str, Any], *, explain: bool | None = None, **_options: Any) -> list:
    """The profile line, one row per suggestion, the score breakdown with ``explain``, similar cases, notes."""
    from rich.table import Table
    from rich.text import Text

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
        table = Table(show_lines=True)
        for name in ("#", _("Advice and first step"), _("At stake"), _("Expected gain"), _("Evidence"), _("Grade")):
            table.add_column(name, overflow="fold")
        for s in suggestions:
            stake = U.time(s.get("stake_us")) + "\n" + _("{share} of the {reference}").format(
                share=U.share(s.get("stake_share")), reference=reference)
            table.add_row(str(s.get("rank")), _advice_cell(s), stake, Text(gain_line(s.get("expected_gain"))),
                          _evidence_cell(s), str(s.get("evidence_grade") or ""))
        out.append(table)
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
    from rich.text import Text

    cell = Text(entry_text(s, "title"))
    cell.append(f"\n{s.get('id')} ({word(s.get('kind'))})", style="dim")
    if s.get("first_step"):
        cell.append(f"\n1. {entry_text(s, 'first_step')}")
        cell.append("\n" + _("the rest: advisor show {id}").format(id=s.get("id")), style="dim")
    return cell


def _evidence_cell(s: dict[str, Any]):
    from rich.text import Text

    lines = [evidence_line(e) for e in (s.get("evidence") or [])[:3]]
    symptoms = ", ".join(symptom_label(i) for i in s.get("matched_symptoms") or [])
    lines.append(_("symptoms: {ids}").format(ids=symptoms) if symptoms else _("no matching symptom (loosely related)"))
    return Text("\n".join(lines))


def explain_lines(s: dict[str, Any]) -> list[str]:
    """``--explain``: the score formula and matched terms, how the gain was computed, each requirement."""
    lines = [f"{s.get('rank')}. {s.get('id')}: {score_line(s)}; " + _("matched terms: {terms}").format(terms=terms_line(s))]
    if s.get("expected_gain"):
        lines.append("   " + _("gain basis: {basis}").format(basis=s["expected_gain"].get("basis")))
    lines += ["   " + _("requires {what}").format(what=check.get("text")) for check in s.get("requirements") or []]
    return lines


def eval_table(doc: dict[str, Any], **_options: Any) -> list:
    """The synthetic scenarios and, where they were scored, the real profiles."""
    from rich.text import Text

    out = _scenario_tables(doc)
    real = doc.get("real_profiles")
    if real is not None:
        out += _real_tables(real)
    else:
        where = doc.get("real_profiles_dir") or "../shared/real-profiles"
        out.append(Text(_("real profiles: not found at {where} (give --real-profiles DIR)").format(where=where)))
    return out


def _scenario_tables(doc: dict[str, Any]) -> list:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=_("synthetic scenarios"), title_justify="left")
    for name in (_("scenario"), _("format"), _("expected"), _("position"), "hit@1", "hit@3", "RR", _("top 3")):
        table.add_column(name, overflow="fold")
    scenarios = doc.get("scenarios") or []
    for r in scenarios:
        expected = r.get("expect") or _("no gain > {limit} %").format(limit=f"{r.get('gain_limit_pct') or 10:g}")
        top3 = ", ".join((r.get("top") or [])[:3]) if not r.get("error") else _("error: {what}").format(what=r["error"])
        table.add_row(Text(str(r.get("name"))), str(r.get("format")), expected, str(r.get("rank") or "-"),
                      _yes(r.get("hit1")), _yes(r.get("hit3")), f"{r.get('reciprocal_rank') or 0:.2f}", Text(top3))
    overall = doc.get("overall") or {}
    return [table, Text(_("overall: {n} scenarios, hit@1 {hit1}, hit@3 {hit3}, MRR {mrr}").format(
        n=overall.get("scenarios"), hit1=f"{overall.get('hit1') or 0:.3f}", hit3=f"{overall.get('hit3') or 0:.3f}",
        mrr=f"{overall.get('mrr') or 0:.3f}"))]


def _real_tables(real: dict[str, Any]) -> list:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=_("real profiles"), title_justify="left")
    for name in (_("profile"), "hit@1", "hit@3", "RR", _("top 3"), _("missing / forbidden")):
        table.add_column(name, overflow="fold")
    for r in real.get("profiles") or []:
        problems = r.get("error") or ", ".join([_("missing {topic}").format(topic=m) for m in r.get("missing") or []] +
                                               [_("forbidden {topic}").format(topic=f) for f in r.get("forbidden") or []])
        top = r.get("top") or []
        top3 = ", ".join(top[:3]) if top else (_("refused as expected") if r.get("expects_error") else _("none"))
        table.add_row(Text(str(r.get("path"))), _yes(r.get("hit1")), _yes(r.get("hit3")),
                      f"{r.get('reciprocal_rank') or 0:.2f}", Text(top3), Text(problems or ""))
    overall = real.get("overall") or {}
    return [table, Text(_("real profiles: {n} labelled, hit@1 {hit1}, hit@3 {hit3}, MRR {mrr}").format(
        n=overall.get("profiles"), hit1=f"{overall.get('hit1') or 0:.3f}", hit3=f"{overall.get('hit3') or 0:.3f}",
        mrr=f"{overall.get('mrr') or 0:.3f}"))]


def _yes(flag: Any) -> str:
    return _("yes") if flag else _("no")
