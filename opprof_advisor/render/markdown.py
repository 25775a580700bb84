"""Markdown reports of suggest, scan and the recorded outcomes, rendered from their documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opprof_advisor.cann_support import CATEGORY_TITLES
from opprof_advisor.i18n import _, localize
from opprof_advisor.render.phrases import (
    entry_text, evidence_line, gain_line, localized, score_line, word, similar_case_line, stake_line, terms_line,
)
from opprof_advisor.render.text.scan import findings_by_category
from opprof_advisor.render.units import TEXT as U

#: Last line of the outcomes export (invisible once rendered): how an earlier export is recognised.
OUTCOMES_MARKER = "<!-- written by opprof-advisor: advisor outcomes export -->"


def is_outcomes_export(path: Path) -> bool:
    """True when ``path`` is a markdown or JSON export of ``advisor outcomes export`` (replaceable without --force)."""
    from opprof_advisor.outputs import head_contains, tail_contains

    return tail_contains(path, OUTCOMES_MARKER.encode()) or head_contains(
        path, b'"schema": "opprof-advisor/outcomes/', size=256)


def cell(text: Any) -> str:
    """Text for one markdown table cell: pipes escaped, on one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def suggest_markdown(doc: dict[str, Any], *, explain: bool | None = None, **_options: Any) -> str:
    """The suggest document as markdown: one section per suggestion, similar cases, notes."""
    explain = bool(doc.get("explain")) if explain is None else explain
    profile = doc.get("profile") or {}
    reference = profile.get("reference") or "device time"
    lines = [_("# Suggestions for `{path}`").format(path=profile.get("path")), "",
             _("Format {format}, device time {time}.").format(format=profile.get("format"),
                                                            time=U.time(profile.get("device_time_us"))), ""]
    suggestions = doc.get("suggestions") or []
    if not suggestions:
        lines += [_("No entry of the knowledge base is backed by this profile."), ""]
    for s in suggestions:
        lines += _suggestion_lines(s, reference, explain) + [""]
    if doc.get("similar_cases"):
        lines += [_("## Similar cases"), ""]
        lines += [f"- {similar_case_line(c, explain=explain)}" for c in doc["similar_cases"]]
        lines.append("")
    if doc.get("notes"):
        lines += [_("## Notes"), ""] + [f"- {note}" for note in localized(doc["notes"])] + [""]
    return "\n".join(lines)


def _suggestion_lines(s: dict[str, Any], reference: str, explain: bool) -> list[str]:
    gain = s.get("expected_gain")
    lines = [f"## {s.get('rank')}. {entry_text(s, 'title')}", "",
             _("- id: `{id}` ({kind}), evidence grade {grade}, at stake {stake}").format(
                 id=s.get("id"), kind=word(s.get("kind")), grade=s.get("evidence_grade"),
                 stake=stake_line(s, reference)),
             _("- expected gain: {gain}").format(gain=gain_line(gain))]
    if gain:
        lines.append(_("- basis: {basis}").format(basis=localize(gain.get("basis"))))
    if s.get("first_step"):
        lines.append(_("- first step: {step} (the rest: `advisor show {id}`)").format(step=entry_text(s, "first_step"),
                                                                                     id=s.get("id")))
    lines += [_("- evidence: {line} — {why}").format(line=evidence_line(e), why=localize(e.get("why")))
              for e in s.get("evidence") or []]
    lines += [_("- source: {source}").format(source=src) for src in s.get("sources") or []]
    if explain:
        lines += [f"- {score_line(s)}", "- " + _("matched terms: {terms}").format(terms=terms_line(s))]
        lines += ["- " + _("requires {what}").format(what=localize(check.get("text")))
                  for check in s.get("requirements") or []]
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
