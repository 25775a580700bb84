"""`advisor scan PATH`: static analysis of a model's source with CANN support and ranked advice.

Parses options, calls opprof_advisor.scan (imported inside the command so start-up stays fast)
and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cann_support import CATEGORY_TITLES
from opprof_advisor.cli._common import ForceOption, ReportFormat, console, echo, emit_json

_SUPPORT_STYLE = {"native": "green", "cpu_fallback_risk": "yellow", "needs_replacement": "red"}


def register(app: typer.Typer) -> None:
    """Add `advisor scan` to the app."""
    app.command("scan", no_args_is_help=True)(scan_command)


def scan_command(
    path: Annotated[Path, typer.Argument(help="The model's source: a repository folder or one .py file.",
                                         show_default=False)],
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="Output format.")] = ReportFormat.table,
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="How many pieces of ranked advice to show.")] = 5,
    exclude: Annotated[Optional[list[str]], typer.Option(
        "--exclude", "-x", help="Skip paths matching this glob (relative path or name; repeatable), "
                                "e.g. 'tests/*' or '*_test.py'.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="Index database (default: ADVISOR_DB or the per-user "
                                                           "data folder).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="With --format html: the report file "
                                                   "(default: advisor-report-<timestamp>.html here).",
                                                   dir_okay=False, show_default=False)] = None,
    force: ForceOption = False,
) -> None:
    """Find compute-heavy operators, CPU-fallback risks, CUDA-only code and fusion candidates in model source.

    Every finding has its file:line, its CANN support (native / cpu_fallback_risk / needs_replacement)
    and the torch_npu replacement, from a sourced table. The findings are ranked against the
    knowledge base like a profile (no expected gains: nothing is measured).

    Example: advisor scan ./my-model --exclude 'tests/*' --format markdown
    """
    from opprof_advisor.scan import rank_advice, scan_path, scan_to_json

    result = scan_path(path, tuple(exclude or ()))
    suggestions, advice_notes = rank_advice(result, top=top, db_path=db) if top else ([], [])
    result.notes.extend(advice_notes)
    document = scan_to_json(result, suggestions)
    if fmt is ReportFormat.json:
        emit_json(document)
    elif fmt is ReportFormat.markdown:
        echo(scan_to_markdown(document))
    elif fmt is ReportFormat.html:
        from opprof_advisor.render import render
        from opprof_advisor.render.html.page import write_report

        echo(f"wrote {write_report(render(document, 'html'), output, force=force)}")  # plain: a long path must not wrap
    else:
        _print_tables(document)


def _print_tables(document: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    failed = document["files_failed"]
    console.print(f"[bold]{escape(document['root'])}[/bold]  {document['files_scanned']} Python file(s) scanned, "
                  f"{len(failed)} failed, {len(document['findings'])} finding(s)")
    for category, findings in _by_category(document["findings"]):
        table = Table(title=CATEGORY_TITLES.get(category, category), title_justify="left", show_lines=False)
        for name in ("Location", "Op", "Support", "Replacement"):
            table.add_column(name, overflow="fold")
        for f in findings:
            style = _SUPPORT_STYLE.get(f["support"], "")
            table.add_row(escape(f"{f['path']}:{f['line']}"), escape(f["op"]),
                          f"[{style}]{f['support']}[/{style}]", escape(f["replacement"] or "—"))
        console.print(table)
    for item in failed:
        console.print(f"[red]failed:[/red] {escape(item['path'])}: {escape(item['error'])}")
    _print_suggestions(document["suggestions"])
    for note in document["notes"]:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")


def _print_suggestions(suggestions: list[dict]) -> None:
    from rich.markup import escape
    from rich.table import Table

    if not suggestions:
        return
    table = Table(title="Ranked advice (static estimate, no expected gain)", title_justify="left", show_lines=True)
    for name in ("#", "Advice", "Found in the code", "Grade"):
        table.add_column(name, overflow="fold")
    for s in suggestions:
        evidence = "\n".join(escape(e["op_type"] or e["why"]) for e in s["evidence"][:4])
        table.add_row(str(s["rank"]), f"{escape(s['title'])}\n[dim]{escape(s['id'])} ({s['kind']})[/dim]", evidence,
                      s["evidence_grade"])
    console.print(table)


def _by_category(findings: list[dict]) -> list[tuple[str, list[dict]]]:
    groups: dict[str, list[dict]] = {}
    for finding in findings:
        groups.setdefault(finding["category"], []).append(finding)
    return list(groups.items())


def scan_to_markdown(document: dict) -> str:
    """The scan document as markdown (findings by category, failures, advice, notes)."""
    lines = [f"# advisor scan: {document['root']}", "",
             f"{document['files_scanned']} Python file(s) scanned, {len(document['files_failed'])} failed, "
             f"{len(document['findings'])} finding(s).", ""]
    sources: dict[str, int] = {}  # long citations become numbered references listed at the end
    for category, findings in _by_category(document["findings"]):
        lines += [f"## {CATEGORY_TITLES.get(category, category)}", "",
                  "| Location | Op | Support | Replacement | Source |", "|---|---|---|---|---|"]
        for f in findings:
            number = sources.setdefault(f["source"], len(sources) + 1)
            lines.append(f"| `{f['path']}:{f['line']}` | `{_md(f['op'])}` | {f['support']} | "
                         f"{_md(f['replacement'] or '—')} | [{number}] |")
        lines.append("")
    if document["files_failed"]:
        lines += ["## Files that could not be scanned", ""]
        lines += [f"- `{item['path']}`: {_md(item['error'])}" for item in document["files_failed"]]
        lines.append("")
    if document["suggestions"]:
        lines += ["## Ranked advice (static estimate, no expected gain)", ""]
        for s in document["suggestions"]:
            found = ", ".join(f"`{e['op_type']}`" for e in s["evidence"] if e["op_type"])
            lines.append(f"{s['rank']}. **{_md(s['title'])}** (`{s['id']}`, {s['kind']}, grade {s['evidence_grade']})"
                         f" — found: {found or '—'}")
        lines.append("")
    if document["notes"]:
        lines += ["## Notes", ""] + [f"- {_md(note)}" for note in document["notes"]] + [""]
    if sources:
        lines += ["## Sources", ""] + [f"{number}. {_md(text)}" for text, number in sources.items()] + [""]
    return "\n".join(lines)


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
