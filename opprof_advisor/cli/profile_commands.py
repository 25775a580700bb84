"""`advisor profile PATH`: read any supported profiler output and show its operator profile.

Parses options, reads the profile (imported inside the command so start-up stays fast), writes
the --export database and renders the profile document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import (
    LangOption, DelayedProgress, ExecutorName, ExecutorOption, ForceOption, SchedulerOption, TableJsonHtmlSheets, err_console,
    executor_choice, show, write_html, write_sheets,
)
from opprof_advisor.cli.roofline_commands import PeaksOption


def register(app: typer.Typer) -> None:
    """Add `advisor profile` to the app."""
    app.command("profile", no_args_is_help=True)(profile_command)


def profile_command(
    path: Annotated[Path, typer.Argument(help="Profiler output: a torch_npu *_ascend_pt folder, a PROF_* or OPPROF_* "
                                              "folder, an op_summary / kernel_details CSV, an msprof DB, a folder of "
                                              "ranks, or a .zip / .tar.gz of one.", show_default=False)],
    top: Annotated[int, typer.Option("--top", "-n", min=1, help="How many op types to list.")] = 20,
    fmt: Annotated[TableJsonHtmlSheets, typer.Option("--format", "-f", help="Output format (csv: the op-type table; "
                                                                             "xlsx: a sheet per table, needs --output).")] = TableJsonHtmlSheets.table,
    export: Annotated[Optional[Path], typer.Option("--export", help="Also write kernels and the op-type summary "
                                                                    "into this SQLite file (browse it with datasette).",
                                                   dir_okay=False, show_default=False)] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="HTML report file (with --format html; "
                                                                          "default advisor-report-<time>.html here).",
                                                   show_default=False)] = None,
    peaks: PeaksOption = None,
    force: ForceOption = False,
    executor: ExecutorOption = ExecutorName.auto,
    scheduler: SchedulerOption = None,
    lang: LangOption = None,
) -> None:
    """Show where device time goes: op types by time with unit and bound class, symptoms, and what cannot be judged.

    Example: advisor profile ./rank0_ascend_pt --top 10
    """
    if output is not None and fmt not in (TableJsonHtmlSheets.html, TableJsonHtmlSheets.xlsx, TableJsonHtmlSheets.csv):
        raise typer.BadParameter("--output is only used with --format html or xlsx", param_hint="--output")
    from opprof_advisor.profile_builder import profile_to_json
    from opprof_advisor.profiles import load_profile

    choice = executor_choice(executor, scheduler)
    with DelayedProgress(f"reading {path.name}") as progress:
        raw, profile = load_profile(path, progress, peaks=peaks, executor=choice)
    if export is not None:
        from opprof_advisor.profile_export import export_profile

        written, counts = export_profile(export, raw, profile, force=force, inputs=[path])
        if counts["ranks"] and not counts["kernels"]:
            written_what = (f"{counts['op_types']} op types and {counts['ranks']} ranks (a job keeps no kernel "
                            "rows: export one rank's folder for its kernels)")
        else:
            written_what = f"{counts['kernels']} kernels and {counts['op_types']} op types"
        err_console.print(f"wrote {written_what} to {written}", markup=False)
    document = profile_to_json(profile)
    if fmt in (TableJsonHtmlSheets.json, TableJsonHtmlSheets.csv, TableJsonHtmlSheets.xlsx):
        document["op_types"] = document["op_types"][:top]  # as the table: --top rows
    if write_sheets(document, fmt.value, output, force=force, inputs=[path]):
        return
    if fmt is TableJsonHtmlSheets.json:
        show(document, "json")
    elif fmt is TableJsonHtmlSheets.html:
        write_html(document, output, force=force, inputs=[path])
    else:
        show(document, "table", top=top)
