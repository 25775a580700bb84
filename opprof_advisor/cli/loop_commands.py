"""The tuning loop: `advisor collect`, `advisor compare` and the `advisor outcomes` group.

Parses options, calls opprof_advisor.loop.collect / compare / outcomes (imported inside the commands so
other commands do not pay for them) and prints.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import (
    LangOption, DbOption, ForceOption, TableJsonHtmlSheets, TableOrJson, console, echo, err_console, show, write_html,
    write_sheets,
)
from opprof_advisor.core.terminal import dumps_json, printable
from opprof_advisor.loop import collect
from opprof_advisor.loop import compare
from opprof_advisor.advice import outcomes
from opprof_advisor.profiles import read_side
from opprof_advisor.kb import store
from opprof_advisor.render.text.loop import removed_line
from opprof_advisor.core.outputs import write_text
from opprof_advisor.render.markdown import is_outcomes_export
from opprof_advisor.render.markdown import outcomes_markdown
from opprof_advisor.render.text.loop import outcome_line


class Mode(str, Enum):
    device = "device"
    simulator = "simulator"


class ExportFormat(str, Enum):
    markdown = "markdown"
    json = "json"


outcomes_app = typer.Typer(
    name="outcomes",
    help="List, export and remove the measured outcomes recorded with `advisor compare --applied`.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def register(app: typer.Typer) -> None:
    """Add collect, compare and the outcomes group to the `advisor` app."""
    app.command(
        "collect",
        context_settings={"allow_interspersed_args": False, "help_option_names": ["-h", "--help"]},
    )(collect_command)
    app.command("compare", context_settings={"help_option_names": ["-h", "--help"]})(compare_command)
    app.add_typer(outcomes_app, name="outcomes")


# ---------------------------------------------------------------------------------------------
# advisor collect
# ---------------------------------------------------------------------------------------------


def collect_command(
    ctx: typer.Context,
    application: Annotated[
        list[str],
        typer.Argument(help="The program to profile and its arguments, after `--`.", metavar="APP",
                       show_default=False),
    ],
    mode: Annotated[
        Mode, typer.Option("--mode", help="`msprof op` on the device, or `msprof op simulator`.")
    ] = Mode.device,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Folder the profiler writes OPPROF_* into (default: the current folder).",
                     file_okay=False, show_default=False),
    ] = None,
    aic_metrics: Annotated[
        Optional[str],
        typer.Option("--aic-metrics", help="Metric groups, e.g. Default or PipeUtilization,Memory.",
                     show_default=False),
    ] = None,
    kernel_name: Annotated[
        Optional[str],
        typer.Option("--kernel-name", help="Kernel name (prefix) to profile; `a|b` for several.", show_default=False),
    ] = None,
    launch_count: Annotated[
        Optional[int],
        typer.Option("--launch-count", min=1, max=5000, help="How many kernel launches to profile (1-5000).",
                     show_default=False),
    ] = None,
    soc_version: Annotated[
        Optional[str],
        typer.Option("--soc-version", help="Simulator chip, e.g. Ascend910B1 (simulator mode).", show_default=False),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=0, help="Stop the profiler (and everything it started) after this many "
                                              "seconds; 0 = no limit."),
    ] = 3600.0,
    no_suggest: Annotated[bool, typer.Option("--no-suggest", help="Only collect; do not print advice.")] = False,
    lang: LangOption = None,
) -> None:
    """Run the operator profiler on APP, then advise on what it wrote.

    Runs `msprof op \\[simulator] --output=DIR \\[options] APP \\[ARGS]` (or `msopprof`, whichever is
    installed), streams its output, finds the new OPPROF_* folder and runs `advisor suggest` on it.

    Example: advisor collect --aic-metrics=PipeUtilization -- ./my_operator 1024
    """
    try:
        result = collect.collect(
            application,
            output=output,
            mode=mode.value,
            aic_metrics=aic_metrics,
            kernel_name=kernel_name,
            launch_count=launch_count,
            soc_version=soc_version,
            on_line=_echo_profiler_line,
            timeout=timeout,
        )
    except collect.ProfilerFailed as exc:
        _print_tail(exc)
        raise
    except collect.ProfilerInterrupted as exc:
        # The conventional exit code of a process stopped by a signal (130 for Ctrl-C, 143 for SIGTERM).
        err_console.print(f"error: {exc}", markup=False)
        raise typer.Exit(128 + exc.signum) from None
    err_console.print(f"profile written to {result.opprof_dir}", markup=False)
    for extra in result.extra_dirs:
        err_console.print(f"note: the run also wrote {extra}", markup=False)
    if no_suggest:
        echo(str(result.opprof_dir))
        return
    _run_suggest(ctx, result.opprof_dir)


def _echo_profiler_line(line: str) -> None:
    # Plain write: profiler lines carry "[INFO]"-style brackets that Rich would take as markup.
    sys.stderr.write(printable(line) + "\n")
    sys.stderr.flush()


def _print_tail(exc) -> None:
    if not exc.tail:
        return
    name = Path(exc.command[0]).name if exc.command else "profiler"
    how = f"stopped after {exc.timeout:g} s" if hasattr(exc, "timeout") else f"exit code {exc.exit_code}"
    sys.stderr.write(f"--- last {len(exc.tail)} line(s) of {name} ({how}) ---\n")
    for line in exc.tail:
        sys.stderr.write(printable(line) + "\n")


def _run_suggest(ctx: typer.Context, profile: Path) -> None:
    """Invoke the `advisor suggest` command on the collected folder, with its defaults."""
    group = ctx.parent.command if ctx.parent is not None else None
    command = group.get_command(ctx.parent, "suggest") if group is not None else None
    if command is None:
        err_console.print(f"note: `advisor suggest` is not available; run it later on {profile}", markup=False)
        return
    # Parsed like `advisor suggest --profile PATH`, so every other option keeps its own default.
    with command.make_context("suggest", ["--profile", str(profile)], parent=ctx.parent) as sub:
        command.invoke(sub)


# ---------------------------------------------------------------------------------------------
# advisor compare
# ---------------------------------------------------------------------------------------------


def compare_command(
    before: Annotated[
        Path, typer.Argument(metavar="BEFORE", help="Profile before the change (any supported format).", show_default=False)
    ],
    after: Annotated[Path, typer.Argument(metavar="AFTER", help="Profile after the change.", show_default=False)],
    fmt: Annotated[TableJsonHtmlSheets, typer.Option("--format", "-f", help="Output format (csv: the family table; "
                                                                             "xlsx: a sheet per table, needs --output).")] = TableJsonHtmlSheets.table,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Report file: with --format html (default "
                     "advisor-report-<time>.html here) or xlsx.", dir_okay=False, show_default=False, metavar="FILE"),
    ] = None,
    applied: Annotated[
        Optional[str],
        typer.Option("--applied", help="Record the result as an outcome of this KB entry id.", show_default=False),
    ] = None,
    note: Annotated[str, typer.Option("--note", help="Free text stored with the outcome.")] = "",
    force: Annotated[bool, typer.Option("--force", help="Record the outcome although the profiles are not like for "
                                                        "like (different workloads, chips or kernels), or for a "
                                                        "second entry; replace an --output file advisor did not "
                                                        "write.")] = False,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """Compare two profiles per operator family: time, share, unit and bound changes, total change.

    With --applied ID the measured gain (on the entry's operators and end to end) is stored as an
    outcome of that entry; `advisor suggest` then shows it next to the entry's expected gain. An
    outcome is recorded only from a like-for-like comparison (one workload on one chip, before and
    after one change), and once per pair of profiles.

    Example: advisor compare before/ after/ --applied nms-on-npu --note "torchvision batched_nms"
    """

    if output is not None and fmt not in (TableJsonHtmlSheets.html, TableJsonHtmlSheets.xlsx, TableJsonHtmlSheets.csv):
        raise typer.BadParameter("--output is only used with --format html or xlsx", param_hint="--output")
    entry = _load_entry(applied, db) if applied else None  # an unknown id fails before any work
    comparison = compare.compare_profiles(_read(before, "BEFORE"), _read(after, "AFTER"))
    # Built before printing so a refused outcome (an untrustworthy comparison) stores nothing.
    outcome = outcomes.build_outcome(entry, comparison, note=note, force=force) if entry is not None else None
    recorded = outcomes.record_outcome(outcome, db_path=db, force=force) if outcome is not None else None
    document = compare.comparison_to_json(comparison)
    if write_sheets(document, fmt.value, output, force=force, inputs=[before, after]):
        pass
    elif fmt is TableJsonHtmlSheets.html:
        write_html(document, output, force=force, inputs=[before, after])
    else:
        show(document, fmt.value)
    if recorded is not None:
        err_console.print(outcome_line(recorded.to_dict()), markup=False)


def _read(path: Path, role: str):
    return read_side(path, role)


def _load_entry(entry_id: str, db: Path | None):
    return store.open_index(db).get(entry_id)


# ---------------------------------------------------------------------------------------------
# advisor outcomes
# ---------------------------------------------------------------------------------------------


@outcomes_app.command("list")
def list_command(
    entry: Annotated[Optional[str], typer.Option("--entry", help="Only this KB entry id.", show_default=False)] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """List recorded outcomes, oldest first."""
    rows = outcomes.list_outcomes(entry, db_path=db)
    if fmt is TableOrJson.table and not rows:
        err_console.print("no outcome recorded yet (advisor compare BEFORE AFTER --applied ID)", markup=False)
        return
    show(outcomes.outcomes_to_json(rows), fmt.value)


@outcomes_app.command("remove", no_args_is_help=True)
def remove_command(
    ids: Annotated[list[int], typer.Argument(metavar="ID", help="Ids of the outcomes to remove (the # column of "
                                                                   "`advisor outcomes list`).", show_default=False)],
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """Remove recorded outcomes (a wrong comparison, a mistyped --applied); unknown ids remove nothing.

    Example: advisor outcomes remove 3 4
    """

    for removed in outcomes.remove_outcomes(ids, db_path=db):
        console.print(removed_line(removed.to_dict()), markup=False)


@outcomes_app.command("export")
def export_command(
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="Export format.")] = ExportFormat.markdown,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Write to this file instead of stdout.", dir_okay=False,
                     show_default=False),
    ] = None,
    force: ForceOption = False,
    db: DbOption = None,
    lang: LangOption = None,
) -> None:
    """Export every recorded outcome as markdown (to contribute back to kb/) or JSON.

    An existing --output file is replaced only when it is an earlier export (or with --force).
    """

    rows = outcomes.list_outcomes(None, db_path=db)
    document = outcomes.outcomes_to_json(rows)
    text = dumps_json(document) + "\n" if fmt is ExportFormat.json else outcomes_markdown(document)
    if output is None:
        sys.stdout.write(printable(text))
        return
    written = write_text(output, printable(text), what="an outcomes export", is_ours=is_outcomes_export,
                         force=force)
    err_console.print(f"{len(rows)} outcome(s) written to {written}", markup=False)
