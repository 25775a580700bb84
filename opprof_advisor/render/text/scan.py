"""`advisor scan` in the terminal: findings per category with their CANN support, failures, ranked advice."""

from __future__ import annotations

from typing import Any

from opprof_advisor.cann_support import CATEGORY_TITLES
from opprof_advisor.render.phrases import entry_text, word
from opprof_advisor.i18n import _, localize

SUPPORT_STYLE = {"native": "green", "cpu_fallback_risk": "yellow", "needs_replacement": "red"}


def findings_by_category(findings: list[dict]) -> list[tuple[str, list[dict]]]:
    """(category, its findings), categories in the order they first appear."""
    groups: dict[str, list[dict]] = {}
    for finding in findings:
        groups.setdefault(finding["category"], []).append(finding)
    return list(groups.items())


def scan_table(doc: dict[str, Any], **_options: Any) -> list:
    """The counts, one table per category, the files that failed, the ranked advice and the notes."""
    from rich.table import Table
    from rich.text import Text

    failed = doc.get("files_failed") or []
    out: list = [Text.assemble((str(doc.get("root")), "bold"),
                               "  " + _("{scanned} Python file(s) scanned, {failed} failed, {findings} finding(s)").format(
                                   scanned=doc.get("files_scanned"), failed=len(failed),
                                   findings=len(doc.get("findings") or [])))]
    for category, findings in findings_by_category(doc.get("findings") or []):
        table = Table(title=_(CATEGORY_TITLES.get(category, category)), title_justify="left", show_lines=False)
        for name in (_("Location"), _("Operator"), _("Support"), _("Replacement")):
            table.add_column(name, overflow="fold")
        for f in findings:
            table.add_row(Text(f"{f['path']}:{f['line']}"), Text(str(f["op"])),
                          Text(str(f["support"]), style=SUPPORT_STYLE.get(f["support"], "")),
                          Text(f["replacement"] or "—"))
        out.append(table)
    out += [Text.assemble((_("failed:"), "red"), f" {item['path']}: {item['error']}") for item in failed]
    if doc.get("suggestions"):
        out.append(_advice_table(doc["suggestions"]))
    out += [Text.assemble((_("note:"), "yellow"), f" {localize(note)}") for note in doc.get("notes") or []]
    return out


def _advice_table(suggestions: list[dict]):
    from rich.table import Table
    from rich.text import Text

    table = Table(title=_("Ranked advice (static estimate, no expected gain)"), title_justify="left", show_lines=True)
    for name in ("#", _("Advice"), _("Found in the code"), _("Grade")):
        table.add_column(name, overflow="fold")
    for s in suggestions:
        evidence = "\n".join(e["op_type"] or e["why"] for e in s["evidence"][:4])
        advice = Text(entry_text(s, "title"))
        advice.append(f"\n{s['id']} ({word(s['kind'])})", style="dim")
        table.add_row(str(s["rank"]), advice, Text(evidence), str(s["evidence_grade"]))
    return table
