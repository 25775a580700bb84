"""`advisor suggest` (ranked advice for a profile) and `advisor eval` (the quality benchmark)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import (
    LangOption, DbOption, DelayedProgress, ExecutorName, ExecutorOption, ForceOption, Kind, SchedulerOption,
    SuggestFormat, TableOrJson, err_console, executor_choice, show, write_html, write_sheets,
)


def _open(db: Optional[Path], *, outcomes: bool = True):
    # Imported here: the store pulls in sqlite-utils, which `advisor --help` should not pay for.
    from opprof_advisor.advisor import open_advisor
    from opprof_advisor.terminal import one_line

    advisor = open_advisor(db, outcomes=outcomes)
    for warning in advisor.warnings:
        err_console.print(f"warning: {one_line(warning)}", markup=False)
    return advisor


def suggest_command(
    profile: Annotated[Path, typer.Option("--profile", "-p", help="Profiler output: a folder, a CSV/DB file or an archive.")],
    top: Annotated[int, typer.Option("--top", "-n", min=1, help="How many suggestions to show.")] = 5,
    model: Annotated[Optional[str], typer.Option("--model", help="Model hint, e.g. yolov8, llama2-7b.")] = None,
    kind: Annotated[Optional[Kind], typer.Option("--kind", help="Only entries of this kind (cases are not suggested otherwise).")] = None,
    fmt: Annotated[SuggestFormat, typer.Option("--format", "-f", help="Output format (csv: the suggestions table; "
                                                                       "xlsx: a sheet per table, needs --output).")] = SuggestFormat.table,
    explain: Annotated[bool, typer.Option("--explain", help="Show matched terms and the score breakdown.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Report file: with --format html (default advisor-report-<time>.html here) or xlsx.", metavar="FILE")] = None,
    force: ForceOption = False,
    db: DbOption = None,
    executor: ExecutorOption = ExecutorName.auto,
    scheduler: SchedulerOption = None,
    lang: LangOption = None,
) -> None:
    """Rank knowledge-base advice against a profile, with evidence and Amdahl-bounded expected gains."""
    if output is not None and fmt not in (SuggestFormat.html, SuggestFormat.xlsx, SuggestFormat.csv):
        raise typer.BadParameter("--output is only used with --format html or xlsx", param_hint="--output")
    from opprof_advisor.profiles import read_profile
    from opprof_advisor.recommend import suggestions_to_json

    choice = executor_choice(executor, scheduler)
    with DelayedProgress(f"reading {profile.name}") as progress:
        parsed = read_profile(profile, progress, executor=choice)
    result = _open(db).suggest(parsed, top=top, model=model, kind=kind.value if kind else None, explain=explain)
    document = suggestions_to_json(result)
    if write_sheets(document, fmt.value, output, force=force, inputs=[profile]):
        return
    if fmt is SuggestFormat.html:
        write_html(document, output, force=force, inputs=[profile])
    else:
        show(document, fmt.value)


def eval_command(
    bench_dir: Annotated[Optional[Path], typer.Argument(help="Bench folder with scenarios.json (default: the shipped "
                                                             "synthetic bench).", metavar="DIR")] = None,
    real_profiles: Annotated[Optional[Path], typer.Option("--real-profiles", metavar="DIR",
                                                          help="Folder of the labelled real profiles (default: "
                                                               "../shared/real-profiles beside a source checkout; "
                                                               "skipped when absent).")] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """Score the recommender: hit@1, hit@3 and MRR on the labelled synthetic scenarios and real profiles."""
    from opprof_advisor import paths
    from opprof_advisor.evaluation import evaluate_bench, report_to_json
    from opprof_advisor.real_bench import evaluate_real, real_report_to_json

    folder = bench_dir or paths.bench_dir()
    advisor = _open(db, outcomes=False)  # the bench scores the KB as shipped, not as calibrated here
    report = evaluate_bench(folder, advisor.entries, advisor.matcher)
    root = real_profiles or paths.real_profiles_dir()
    real = None
    if real_profiles is not None or root.is_dir():
        real = evaluate_real(paths.real_labels_path(), root, advisor.entries, advisor.matcher)
    document = report_to_json(report)
    document["real_profiles"] = real_report_to_json(real) if real is not None else None
    document["real_profiles_dir"] = str(root)
    show(document, fmt.value)
    if fmt is TableOrJson.table:
        for r in document["scenarios"]:
            if r["error"]:
                err_console.print(f"error: {r['name']}: {r['error']}", markup=False)


def register(app: typer.Typer) -> None:
    """Add `suggest` and `eval` to the app."""
    app.command("suggest", no_args_is_help=True)(suggest_command)
    app.command("eval")(eval_command)
