"""Markdown reports of suggest, scan and the recorded outcomes, rendered from their documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opprof_advisor.core.cann_support import CATEGORY_TITLES
from opprof_advisor.core.i18n import _, localize
from opprof_advisor.render.phrases import (
    NO_FINDING, entry_text, evidence_line, finding_title, gain_assumptions, gain_line, gain_parts, lead_first_step,
    localized, remedies_of, show_command, similar_case_line, stake_line, word,
)
from opprof_advisor.render.text.scan import findings_by_category
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.core.outputs import head_contains, tail_contains

#: Last line of the outcomes export (invisible once rendered): how an earlier export is recognised.
OUTCOMES_MARKER = "<!-- written by opprof-advisor: advisor outcomes export -->"


def is_outcomes_export(path: Path) -> bool:
    """True when ``path`` is a markdown or JSON export of ``advisor outcomes export`` (replaceable without --force)."""
    return tail_contains(path, OUTCOMES_MARKER.encode()) or head_contains(
        path, b'"schema": "opprof-advisor/outcomes/', size=256)


def cell(text: Any) -> str:
    """Text for one markdown table cell: pipes escaped, on one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def suggest_markdown(doc: dict[str, Any], *, explain: bool | None = None, **_options: Any) -> str:
    """The suggest document as markdown: the workload, one section per finding, what else there is, cases, notes."""
    explain = bool(doc.get("explain")) if explain is None else explain
    profile = doc.get("profile") or {}
    reference = profile.get("reference") or "device time"
    lines = [_("# Suggestions for `{path}`").format(path=profile.get("path")), "",
             _("Format {format}, device time {time}.").format(format=profile.get("format"),
                                                            time=U.time(profile.get("device_time_us")))]
    if profile.get("per_rank_of"):
        lines[-1] += _(" Times are per rank (the mean of {n} ranks).").format(n=profile["per_rank_of"])
    if profile.get("reference") == "step":  # a sentence of its own: "device time X." stays as it was
        lines[-1] += _(" Step {time}.").format(time=U.time(profile.get("reference_us")))
    context = (doc.get("context") or {}).get("line")
    if context:
        lines += ["", _("Workload: {line}.").format(line=localize(context))]
    lines.append("")
    suggestions = doc.get("suggestions") or []
    if not suggestions:
        lines += [_(NO_FINDING), ""]
    for s in suggestions:
        lines += _suggestion_lines(s, reference, explain) + [""]
    if doc.get("rest"):
        lines += [cell(localize(doc["rest"])), ""]
    if explain and doc.get("left_out"):
        lines += [_("## Left out"), ""]
        lines += [f"- `{item.get('id')}`: {cell(localize(item.get('why')))}" for item in doc["left_out"]
                  if isinstance(item, dict)]
        lines.append("")
    if doc.get("similar_cases"):
        lines += [_("## Similar cases"), ""]
        lines += [f"- {similar_case_line(c, explain=explain)}" for c in doc["similar_cases"]]
        lines.append("")
    if doc.get("notes"):
        lines += [_("## Notes"), ""] + [f"- {note}" for note in localized(doc["notes"])] + [""]
    return "\n".join(lines)


def _suggestion_lines(s: dict[str, Any], reference: str, explain: bool) -> list[str]:
    gain = s.get("expected_gain")
    lines = [f"## {s.get('rank')}. {cell(finding_title(s))}", "",
             _("- at stake: {stake}").format(stake=stake_line(s, reference)),
             _("- expected gain: {gain}").format(gain=gain_line(gain, suggestion=s))]
    assumptions = gain_assumptions(gain) if any(gain_parts(gain)) else ""
    if assumptions:
        lines.append(_("- assumes: {assumptions}").format(assumptions=cell(assumptions)))
    if s.get("confidence"):
        lines.append(_("- confidence: {level}").format(level=word(s["confidence"])))
    lines += [_("- evidence: {line} — {why}").format(line=evidence_line(e, reference), why=cell(localize(e.get("why"))))
              for e in s.get("evidence") or []]
    symptoms = ", ".join(f"`{i}`" for i in s.get("matched_symptoms") or [])
    if symptoms:
        lines.append(_("- symptoms: {ids}").format(ids=symptoms))
    remedies = remedies_of(s)
    if remedies:
        lead = remedies[0]
        lines.append(_("- remedy: **{title}** (`{id}`, {kind}, evidence grade {grade})").format(
            title=cell(entry_text(lead, "title")), id=lead.get("id"), kind=word(lead.get("kind")),
            grade=lead.get("evidence_grade") or "?"))
        if lead is not s and lead.get("why_applies"):
            lines.append("  " + _("- why it applies: {why}").format(why=cell(localize(lead["why_applies"]))))
        step = lead_first_step(s)
        if step:
            lines.append("  " + _("- first step: {step} (the rest: `{command}`)").format(step=cell(step),
                                                                                         command=show_command(s)))
        lines += ["  " + _("- source: {source}").format(source=cell(src)) for src in lead.get("sources") or []]
        for other in remedies[1:]:
            lines.append(_("- alternative: {title} (`{id}`, {kind}, evidence grade {grade})").format(
                title=cell(entry_text(other, "title")), id=other.get("id"), kind=word(other.get("kind")),
                grade=other.get("evidence_grade") or "?"))
            if explain and other.get("why_applies"):
                lines.append("  " + _("- why it applies: {why}").format(why=cell(localize(other["why_applies"]))))
    if explain:
        lines += ["- " + _("relevance of {id}: {relevance}").format(id=r.get("id"),
                                                                    relevance=f"{r.get('relevance') or 0:.2f}")
                  for r in remedies if r is not s and r.get("relevance") is not None]
    return lines


def scan_markdown(doc: dict[str, Any], **_options: Any) -> str:
    """The scan document as markdown (findings by category, failures, advice, notes, numbered sources)."""
    lines = [f"# advisor scan: {doc['root']}", "",
             _("{scanned} Python file(s) scanned, {failed} failed, {findings} finding(s)").format(
                 scanned=doc["files_scanned"], failed=len(doc["files_failed"]), findings=len(doc["findings"])) + ".",
             ""]
    sources: dict[str, int] = {}  # long citations become numbered references listed at the end
    for category, findings in findings_by_category(doc["findings"]):
        lines += [f"## {_(CATEGORY_TITLES.get(category, category))}", "",
                  "| " + " | ".join((_("Location"), _("Operator"), _("Support"), _("Replacement"), _("Source"))) + " |",
                  "|---|---|---|---|---|"]
        for f in findings:
            number = sources.setdefault(f["source"], len(sources) + 1)
            lines.append(f"| `{f['path']}:{f['line']}` | `{cell(f['op'])}` | {f['support']} | "
                         f"{cell(f['replacement'] or '—')} | [{number}] |")
        lines.append("")
    if doc["files_failed"]:
        lines += [_("## Files that could not be scanned"), ""]
        lines += [f"- `{item['path']}`: {cell(item['error'])}" for item in doc["files_failed"]]
        lines.append("")
    if doc["suggestions"]:
        lines += ["## " + _("Ranked advice (static estimate, no expected gain)"), ""]
        for s in doc["suggestions"]:
            found = ", ".join(f"`{e['op_type']}`" for e in s["evidence"] if e["op_type"])
            lines.append(_("{rank}. **{title}** (`{id}`, {kind}, grade {grade}) — found: {found}").format(
                rank=s["rank"], title=cell(s["title"]), id=s["id"], kind=word(s["kind"]), grade=s["evidence_grade"],
                found=found or "—"))
        lines.append("")
    if doc["notes"]:
        lines += [_("## Notes"), ""] + [f"- {cell(note)}" for note in localized(doc["notes"])] + [""]
    if sources:
        lines += [_("## Sources"), ""] + [f"{number}. {cell(text)}" for text, number in sources.items()] + [""]
    return "\n".join(lines)


def outcomes_markdown(doc: dict[str, Any], **_options: Any) -> str:
    """The outcomes document as markdown for contributing measured results back to ``kb/`` (one section per entry)."""
    lines = ["# Observed outcomes", ""]
    entries = doc.get("entries") or []
    if not entries:
        return "\n".join(lines + ["No outcome recorded yet (`advisor compare BEFORE AFTER --applied ID`).", "",
                                  OUTCOMES_MARKER, ""])
    for entry in entries:
        lines += [f"## {entry['id']}", ""]
        if entry.get("observed"):
            lines += [entry["observed"] + " of the matched operators' time.", ""]
        lines += [
            "| date | operators | operators before → after | operators gain "
            "| end-to-end before → after | end-to-end gain | chip | CANN | note |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [_outcome_row(o) for o in entry.get("outcomes") or []]
        lines.append("")
    return "\n".join(lines + [OUTCOMES_MARKER, ""])


def _outcome_row(o: dict[str, Any]) -> str:
    matched = "-" if o.get("matched_before_us") is None else \
        f"{U.time(o['matched_before_us'])} → {U.time(o.get('matched_after_us'))}"
    cells = [
        str(o.get("recorded_at") or "")[:10],
        ", ".join(o.get("matched_families") or []) or "-",
        matched,
        "-" if o.get("matched_gain_pct") is None else U.pct(o["matched_gain_pct"]),
        f"{U.time(o.get('e2e_before_us'))} → {U.time(o.get('e2e_after_us'))}",
        "-" if o.get("e2e_gain_pct") is None else U.pct(o["e2e_gain_pct"]),
        o.get("chip") or "-",
        o.get("cann") or "-",
        cell(o.get("note") or "") or "-",
    ]
    return "| " + " | ".join(cells) + " |"
