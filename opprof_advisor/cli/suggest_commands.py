"""`advisor suggest` (findings with gains and remedies for a profile) and `advisor eval` (the quality benchmark)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import DbOption, LangOption, TableOrJson, err_console, show, typer_command
from opprof_advisor.cli.fast_commands import run_suggest, warn
from opprof_advisor.advice.advisor import open_advisor
from opprof_advisor.core import paths
from opprof_advisor.core.errors import ProfileError
from opprof_advisor.advice.evaluation import EVAL_SCHEMA
from opprof_advisor.advice.evaluation import evaluate_bench
from opprof_advisor.advice.evaluation import report_to_json
from opprof_advisor.advice.real_bench import evaluate_real
from opprof_advisor.advice.real_bench import real_report_to_json


def _open(db: Optional[Path], *, outcomes: bool = True):
    # Imported here: the store pulls in sqlite-utils, which `advisor --help` should not pay for.

    advisor = open_advisor(db, outcomes=outcomes)
    warn(advisor.warnings)
    return advisor


#: `advisor suggest`: options from cli/options.py, body in cli/fast_commands.py.
suggest_command = typer_command("suggest", run_suggest)


def eval_command(
    bench_dir: Annotated[Optional[Path], typer.Argument(help="Bench folder with scenarios.json (default: the shipped "
                                                             "synthetic bench).", metavar="DIR")] = None,
    real_profiles: Annotated[Optional[Path], typer.Option("--real-profiles", metavar="DIR",
                                                          help="Folder of the labelled real profiles (default: "
                                                               "$ADVISOR_REAL_PROFILES, else ../shared/real-profiles "
                                                               "beside a source checkout; skipped when absent).")] = None,
    real_only: Annotated[bool, typer.Option("--real", help="Only the labelled real profiles (#1 right, gains on the "
                                                           "top 3, inapplicable remedies, repeats, contradictions); "
                                                           "an error when they are not found.")] = False,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """Score the advice: hit@1, hit@3 and MRR on labelled scenarios, an expert's checks on real profiles.

    On the real profiles: first right, gains, inapplicable remedies, repeats, contradictions."""

    folder = bench_dir or paths.bench_dir()
    advisor = _open(db, outcomes=False)  # the bench scores the KB as shipped, not as calibrated here
    root = real_profiles or paths.real_profiles_dir()
    if real_only and (root is None or not root.is_dir()):
        raise ProfileError("no real profiles to score", path=root,
                           hint="point at them with --real-profiles DIR or ADVISOR_REAL_PROFILES")
    real = None
    if real_profiles is not None or (root is not None and root.is_dir()):
        real = evaluate_real(paths.real_labels_path(), root, advisor.entries, advisor.matcher)
    document = ({"schema": EVAL_SCHEMA, "overall": None, "scenarios": None} if real_only
                else report_to_json(evaluate_bench(folder, advisor.entries, advisor.matcher)))
    document["real_profiles"] = real_report_to_json(real) if real is not None else None
    document["real_profiles_dir"] = str(root) if root is not None else None
    show(document, fmt.value)
    if fmt is TableOrJson.table:
        for r in document["scenarios"] or []:
            if r["error"]:
                err_console.print(f"error: {r['name']}: {r['error']}", markup=False)


def register(app: typer.Typer) -> None:
    """Add `suggest` and `eval` to the app."""
    app.command("suggest", no_args_is_help=True)(suggest_command)
    app.command("eval")(eval_command)
