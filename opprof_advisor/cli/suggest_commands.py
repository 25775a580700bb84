"""`advisor suggest` (ranked advice for a profile) and `advisor eval` (the quality benchmark)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import (
    DbOption, DelayedProgress, ExecutorName, ExecutorOption, ForceOption, Kind, ReportFormat, SchedulerOption,
    TableOrJson, console, echo, emit_json, err_console, executor_choice,
)


def _open(db: Optional[Path]):
    # Imported here: the store pulls in sqlite-utils, which `advisor --help` should not pay for.
    from opprof_advisor.matcher import load_matcher
    from opprof_advisor.store import open_index

    index = open_index(db)
    return index, index.entries(), load_matcher(index)


def _recorded_outcomes(index) -> dict:
    """Outcomes recorded with `advisor compare --applied`, by entry id (empty when none or unreadable)."""
    from opprof_advisor.errors import OutcomesError
    from opprof_advisor.outcomes import list_outcomes, outcomes_by_entry
    from opprof_advisor.terminal import one_line

    try:
        return outcomes_by_entry(list_outcomes(db_path=index.db_path))
    except OutcomesError as exc:
        # The advice does not need them: suggest with the KB ranges alone rather than not at all.
        where = f"{exc.location()}: " if exc.location() else ""
        err_console.print(f"warning: {one_line(where + exc.message)}; the gains below are not calibrated by "
                          "recorded outcomes", markup=False)
        return {}


def suggest_command(
    profile: Annotated[Path, typer.Option("--profile", "-p", help="Profiler output: a folder, a CSV/DB file or an archive.")],
    top: Annotated[int, typer.Option("--top", "-n", min=1, help="How many suggestions to show.")] = 5,
    model: Annotated[Optional[str], typer.Option("--model", help="Model hint, e.g. yolov8, llama2-7b.")] = None,
    kind: Annotated[Optional[Kind], typer.Option("--kind", help="Only entries of this kind (cases are not suggested otherwise).")] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="Output format.")] = ReportFormat.table,
    explain: Annotated[bool, typer.Option("--explain", help="Show matched terms and the score breakdown.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="HTML report file (with --format html; default advisor-report-<time>.html here).")] = None,
    force: ForceOption = False,
    db: DbOption = None,
    executor: ExecutorOption = ExecutorName.auto,
    scheduler: SchedulerOption = None,
) -> None:
    """Rank knowledge-base advice against a profile, with evidence and Amdahl-bounded expected gains."""
    if output is not None and fmt is not ReportFormat.html:
        raise typer.BadParameter("--output is only used with --format html", param_hint="--output")
    from opprof_advisor.readers import read_profile
    from opprof_advisor.recommend import suggest, suggestions_to_json, suggestions_to_markdown

    choice = executor_choice(executor, scheduler)
    with DelayedProgress(f"reading {profile.name}") as progress:
        parsed = read_profile(profile, progress, executor=choice)
    index, entries, matcher = _open(db)
    result = suggest(parsed, entries, top=top, model=model, kind=kind.value if kind else None,
                     matcher=matcher, explain=explain, outcomes=_recorded_outcomes(index))
    if fmt is ReportFormat.json:
        emit_json(suggestions_to_json(result))
    elif fmt is ReportFormat.html:
        _write_html(result, output, force=force, inputs=[profile])
    elif fmt is ReportFormat.markdown:
        echo(suggestions_to_markdown(result, explain=explain))
    else:
        _print_table(result, explain)


def _write_html(result, output: Optional[Path], *, force: bool, inputs: list[Path]) -> None:
    from opprof_advisor.recommend import suggestions_to_json
    from opprof_advisor.render import render
    from opprof_advisor.render.html.page import write_report

    echo(f"wrote {write_report(render(suggestions_to_json(result), 'html'), output, force=force, inputs=inputs)}")


def _print_table(result, explain: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from opprof_advisor.recommend import (
        evidence_text, format_time_us, gain_text, score_breakdown, similar_case_text,
    )

    profile = result.profile
    console.print(f"[bold]{escape(profile.path)}[/bold]  {profile.format}, device time "
                  f"{format_time_us(profile.device_time_us)}"
                  + (f", step {format_time_us(profile.reference_us)}" if profile.reference == "step" else ""))
    if not result.suggestions:
        console.print("No entry of the knowledge base is backed by this profile.")
    else:
        table = Table(show_lines=True)
        for name in ("#", "Advice and first step", "At stake", "Expected gain", "Evidence", "Grade"):
            table.add_column(name, overflow="fold")
        for s in result.suggestions:
            evidence = escape("\n".join(evidence_text(e) for e in s.evidence[:3]))
            symptoms = ", ".join(s.matched_symptoms)
            evidence += f"\nsymptoms: {symptoms}" if symptoms else "\nno matching symptom (loosely related)"
            advice = f"{escape(s.entry.title)}\n[dim]{escape(s.entry.id)} ({s.entry.kind})[/dim]"
            if s.first_step:
                advice += f"\n1. {escape(s.first_step)}\n[dim]the rest: advisor show {escape(s.entry.id)}[/dim]"
            stake = f"{format_time_us(s.stake_us)}\n{s.stake_share:.1%} of the {profile.reference}"
            table.add_row(str(s.rank), advice, stake, escape(gain_text(s.expected_gain)), evidence, s.entry.evidence)
        console.print(table)
    if explain:
        for s in result.suggestions:
            terms = ", ".join(f"{t} {w:.3f}" for t, w in s.matched_terms) or "none"
            console.print(f"{s.rank}. {s.entry.id}: {score_breakdown(s)}; matched terms: {terms}", markup=False)
            if s.expected_gain:
                console.print(f"   gain basis: {s.expected_gain.basis}", markup=False)
            for check in s.requirements:
                console.print(f"   requires {check.text()}", markup=False)
    if profile.ranks:
        from opprof_advisor.cli.profile_commands import print_ranks

        print_ranks(profile)
    for case in result.similar_cases:
        console.print(similar_case_text(case, explain=explain), markup=False)
    for note in result.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")


def eval_command(
    bench_dir: Annotated[Optional[Path], typer.Argument(help="Bench folder with scenarios.json (default: the shipped "
                                                             "synthetic bench).", metavar="DIR")] = None,
    real_profiles: Annotated[Optional[Path], typer.Option("--real-profiles", metavar="DIR",
                                                          help="Folder of the labelled real profiles (default: "
                                                               "../shared/real-profiles beside a source checkout; "
                                                               "skipped when absent).")] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    db: DbOption = None,
) -> None:
    """Score the recommender: hit@1, hit@3 and MRR on the labelled synthetic scenarios and real profiles."""
    from opprof_advisor import paths
    from opprof_advisor.evaluation import evaluate_bench, report_to_json
    from opprof_advisor.real_bench import evaluate_real, real_report_to_json

    folder = bench_dir or paths.bench_dir()
    index, entries, matcher = _open(db)
    report = evaluate_bench(folder, entries, matcher)
    root = real_profiles or paths.real_profiles_dir()
    real = None
    if real_profiles is not None or root.is_dir():
        real = evaluate_real(paths.real_labels_path(), root, entries, matcher)
    if fmt is TableOrJson.json:
        document = report_to_json(report)
        document["real_profiles"] = real_report_to_json(real) if real is not None else None
        emit_json(document)
        return
    _print_eval(report)
    if real is not None:
        _print_real(real)
    else:
        console.print(f"real profiles: not found at {root} (give --real-profiles DIR)", markup=False)


def _print_eval(report) -> None:
    from rich.table import Table

    table = Table(title="synthetic scenarios", title_justify="left")
    for name in ("scenario", "format", "expected", "rank", "hit@1", "hit@3", "RR", "top 3"):
        table.add_column(name, overflow="fold")
    for r in report.results:
        expected = r.scenario.expect or f"no gain > {r.scenario.max_gain_pct or 10:g} %"
        top3 = ", ".join(r.top_ids[:3]) if not r.error else f"error: {r.error}"
        table.add_row(r.scenario.name, r.scenario.format, expected, str(r.rank or "-"), _yes(r.hit1), _yes(r.hit3),
                      f"{r.reciprocal_rank:.2f}", top3)
    console.print(table)
    console.print(f"overall: {len(report.results)} scenarios, hit@1 {report.hit1:.3f}, hit@3 {report.hit3:.3f}, MRR {report.mrr:.3f}")
    errors = [r for r in report.results if r.error]
    for r in errors:
        err_console.print(f"error: {r.scenario.name}: {r.error}")


def _print_real(report) -> None:
    from rich.table import Table

    table = Table(title="real profiles", title_justify="left")
    for name in ("profile", "hit@1", "hit@3", "RR", "top 3", "missing / forbidden"):
        table.add_column(name, overflow="fold")
    for r in report.results:
        problems = r.error or ", ".join([f"missing {m}" for m in r.missing] + [f"forbidden {f}" for f in r.forbidden])
        top3 = ", ".join(r.top_ids[:3]) if r.top_ids else ("refused as expected" if r.label.error else "none")
        table.add_row(r.label.path, _yes(r.hit1), _yes(r.hit3), f"{r.reciprocal_rank:.2f}", top3, problems or "")
    console.print(table)
    console.print(f"real profiles: {len(report.results)} labelled, hit@1 {report.hit1:.3f}, hit@3 {report.hit3:.3f}, "
                  f"MRR {report.mrr:.3f}")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def register(app: typer.Typer) -> None:
    """Add `suggest` and `eval` to the app."""
    app.command("suggest", no_args_is_help=True)(suggest_command)
    app.command("eval")(eval_command)
