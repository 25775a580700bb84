"""`advisor profile PATH`: read any supported profiler output and show its operator profile.

Parses options, calls opprof_advisor.readers / profile_builder / profile_export (imported inside
the command so start-up stays fast) and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from opprof_advisor.cli._common import (
    DelayedProgress, ExecutorName, ExecutorOption, ForceOption, SchedulerOption, TableJsonHtml, console, echo,
    emit_json, err_console, executor_choice,
)
from opprof_advisor.cli.roofline_commands import PeaksOption, efficiency_cell
from opprof_advisor.steps import total as step_total

if TYPE_CHECKING:
    from opprof_advisor.models import Profile


_BAR_WIDTH = 10


def register(app: typer.Typer) -> None:
    """Add `advisor profile` to the app."""
    app.command("profile", no_args_is_help=True)(profile_command)


def profile_command(
    path: Annotated[Path, typer.Argument(help="Profiler output: a torch_npu *_ascend_pt folder, a PROF_* or OPPROF_* "
                                              "folder, an op_summary / kernel_details CSV, an msprof DB, a folder of "
                                              "ranks, or a .zip / .tar.gz of one.", show_default=False)],
    top: Annotated[int, typer.Option("--top", "-n", min=1, help="How many op types to list.")] = 20,
    fmt: Annotated[TableJsonHtml, typer.Option("--format", "-f", help="Output format.")] = TableJsonHtml.table,
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
) -> None:
    """Show where device time goes: op types by time with unit and bound class, symptoms, and what cannot be judged.

    Example: advisor profile ./rank0_ascend_pt --top 10
    """
    if output is not None and fmt is not TableJsonHtml.html:
        raise typer.BadParameter("--output is only used with --format html", param_hint="--output")
    from opprof_advisor.profile_builder import profile_to_json
    from opprof_advisor.readers import load_profile

    choice = executor_choice(executor, scheduler)
    with DelayedProgress(f"reading {path.name}") as progress:
        raw, profile = load_profile(path, progress, peaks=peaks, executor=choice)
    if export is not None:
        from opprof_advisor.profile_export import export_profile

        written, counts = export_profile(export, raw, profile, force=force, inputs=[path])
        err_console.print(f"wrote {counts['kernels']} kernels and {counts['op_types']} op types to {written}",
                          markup=False)
    if fmt is TableJsonHtml.json:
        document = profile_to_json(profile)
        document["op_types"] = document["op_types"][:top]
        emit_json(document)
    elif fmt is TableJsonHtml.html:
        from opprof_advisor.render import render
        from opprof_advisor.render.html.page import write_report

        echo(f"wrote {write_report(render(profile_to_json(profile), 'html'), output, force=force, inputs=[path])}")
    else:
        _print_profile(profile, top)


def _share_bar(share: float) -> str:
    return f"{share:6.1%} " + _bar(share)


def _format_us(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.3f} s"
    if value >= 1e3:
        return f"{value / 1e3:.3f} ms"
    return f"{value:.1f} us"


def _part(value: float, split) -> str:
    return f"{_format_us(value)} ({value / split.stage_us:.1%})"


def _bound_text(row) -> str:
    if row.busiest_pipe is None or row.busiest_ratio is None:
        return row.bound
    pipe = row.busiest_pipe.split("_", 1)[-1]
    return f"{row.bound} ({pipe} {row.busiest_ratio:.2f})"


#: A rank table longer than this shows the slowest and the fastest ranks (the JSON has every rank).
RANK_ROWS = 20


def print_ranks(profile: Profile) -> None:
    """The rank table, slowest computation first, with a bar of each rank's computing against the slowest's."""
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, pad_edge=False, title="ranks, slowest computation first", title_justify="left")
    for column in ("rank", "computing", "", "exposed comm", "free", "device time"):
        table.add_column(column, justify="left" if column in ("rank", "") else "right", no_wrap=True)
    ordered = sorted(profile.ranks, key=lambda r: -(r.computing_us if r.computing_us is not None else -1.0))
    slowest = max((r.computing_us for r in ordered if r.computing_us is not None), default=0.0)
    shown = ordered if len(ordered) <= RANK_ROWS else ordered[:RANK_ROWS - 5] + [None] + ordered[-5:]
    for rank in shown:
        if rank is None:
            table.add_row("…", f"{len(ordered) - RANK_ROWS + 1} more ranks (--format json lists all)", "", "", "", "")
            continue
        if rank.error:
            # folder names and errors: text, not markup
            table.add_row(Text(rank.rank), Text(f"not read: {rank.error}"), "", "", "", "")
            continue
        cells = [_format_us(v) if v is not None else "—" for v in (rank.computing_us, rank.exposed_us, rank.free_us,
                                                                  rank.device_time_us)]
        bar = _bar(rank.computing_us / slowest) if rank.computing_us is not None and slowest else ""
        table.add_row(Text(rank.rank), cells[0], bar, *cells[1:])
    console.print(table)


def _bar(fraction: float) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * _BAR_WIDTH)
    return "█" * filled + "·" * (_BAR_WIDTH - filled)


def _print_profile(profile: Profile, top: int) -> None:
    from rich.table import Table
    from rich.text import Text

    versions = ", ".join(f"{k} {v}" for k, v in profile.versions.items())
    console.print(f"{profile.path}  ({profile.format}{', ' + versions if versions else ''}"
                  f"{', chip ' + profile.chip if profile.chip else ''})", markup=False, highlight=False)
    if len(profile.op_types):
        console.print(f"device time {_format_us(profile.device_time_us)} = compute "
                      f"{_format_us(profile.compute_time_us)} + communication "
                      f"{_format_us(profile.communication_time_us)}", highlight=False)
    split = step_total(profile.steps)
    if split is not None and split.stage_us:
        steps = f"{len(profile.steps)} steps" if len(profile.steps) > 1 else "step"
        console.print(f"{steps} {_format_us(split.stage_us)} = computing {_part(split.computing_us, split)} + exposed "
                      f"communication {_part(split.exposed_us, split)} + free {_part(split.free_us, split)}; "
                      f"overlapped communication {_format_us(split.overlapped_us)} ({profile.step_source})",
                      markup=False, highlight=False)
    table = Table(show_edge=False, pad_edge=False)
    # numbers never shrink; op type and family give way on a narrow terminal
    for column, justify, width in (("op type", "left", None), ("family", "left", None), ("unit", "left", 9),
                                   ("count", "right", 5), ("time", "right", 10), ("share", "left", 7 + _BAR_WIDTH),
                                   ("bound", "left", 7), ("eff", "right", 6)):
        table.add_column(column, justify=justify, no_wrap=True, overflow="ellipsis", min_width=width)
    for row in profile.op_types[:top]:
        table.add_row(Text(row.op_type), Text(row.family), row.unit, str(row.count), _format_us(row.time_us),
                      _share_bar(row.share), _bound_text(row), efficiency_cell(profile, row.op_type, row.unit))
    if profile.op_types:
        console.print(table)
    hidden = len(profile.op_types) - top
    if hidden > 0:
        console.print(f"... {hidden} more op type(s) (use --top)", highlight=False)
    if profile.ranks:
        print_ranks(profile)
    console.print("[bold]symptoms[/bold]" if profile.symptoms else "[bold]symptoms[/bold]: none found")
    for symptom in profile.symptoms:
        console.print(f"  {symptom.id} ({symptom.share:.1%}): {symptom.detail}", markup=False, highlight=False)
    if profile.notes:
        console.print("[bold]notes[/bold]")
        for note in profile.notes:
            console.print(f"  {note}", markup=False, highlight=False)
