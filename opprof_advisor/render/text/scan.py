"""`advisor scan` in the terminal: findings per category with their CANN support, failures, ranked advice."""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.cann_support import CATEGORY_TITLES
from opprof_advisor.render.phrases import entry_text, word
from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.render.text.fit import Column, dropped_note, fitted_table
from opprof_advisor.render.text.styled import Text

SUPPORT_STYLE = {"native": "green", "cpu_fallback_risk": "yellow", "needs_replacement": "red"}


def findings_by_category(findings: list[dict]) -> list[tuple[str, list[dict]]]:
    """(category, its findings), categories in the order they first appear."""
    groups: dict[str, list[dict]] = {}
    for finding in findings:
        groups.setdefault(finding["category"], []).append(finding)
    return list(groups.items())


#: The findings table and the advice table; a narrow terminal drops the support class, then the grade.
FINDING_COLUMNS = (Column(N_("Location")), Column(N_("Operator")), Column(N_("Support"), drop=1),
                   Column(N_("Replacement")))
ADVICE_COLUMNS = (Column("#", whole=True), Column(N_("Advice"), least=24), Column(N_("Found in the code")),
                  Column(N_("Grade"), whole=True, drop=1))


def scan_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """The counts, one table per category, the files that failed, the ranked advice and the notes."""
    failed = doc.get("files_failed") or []
    out: list = [Text.assemble((str(doc.get("root")), "bold"),
                               "  " + _("{scanned} Python file(s) scanned, {failed} failed, {findings} finding(s)").format(
                                   scanned=doc.get("files_scanned"), failed=len(failed),
                                   findings=len(doc.get("findings") or [])))]
    for category, findings in findings_by_category(doc.get("findings") or []):
        rows = [(Text(f"{f['path']}:{f['line']}"), Text(str(f["op"])),
                 Text(str(f["support"]), style=SUPPORT_STYLE.get(f["support"], "")), Text(f["replacement"] or "—"))
                for f in findings]
        table, dropped = fitted_table(FINDING_COLUMNS, rows, width, title=_(CATEGORY_TITLES.get(category, category)),
                                      title_justify="left", show_lines=False)
        out += [table, *dropped_note(dropped)]
    out += [Text.assemble((_("failed:"), "red"), f" {item['path']}: {item['error']}") for item in failed]
    if doc.get("suggestions"):
        out += _advice_table(doc["suggestions"], width)
    out += [Text.assemble((_("note:"), "yellow"), f" {localize(note)}") for note in doc.get("notes") or []]
    return out


def _advice_table(suggestions: list[dict], width: int) -> list:
    rows = []
    for s in suggestions:
        evidence = "\n".join(e["op_type"] or e["why"] for e in s["evidence"][:4])
        advice = Text(entry_text(s, "title"))
        advice.append(f"\n{s['id']} ({word(s['kind'])})", style="dim")
        rows.append((str(s["rank"]), advice, Text(evidence), str(s["evidence_grade"])))
    table, dropped = fitted_table(ADVICE_COLUMNS, rows, width, show_lines=True, title_justify="left",
                                  title=_("Ranked advice (static estimate, no expected gain)"))
    return [table, *dropped_note(dropped)]
