"""`advisor memory PATH` and `advisor serving PATH`: the two analyses beside the kernel profile.

memory: the memory peak of a profile, what holds it, and what can be given back. serving: TTFT, TPOT, batches and
KV cache of an ms_service_profiler run, and what to change. Each renders its document as a table or JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor import commands
from opprof_advisor.cli._common import DelayedProgress, ForceOption, LangOption, TableJsonHtml, show, write_html
from opprof_advisor.cli.fast_commands import warn

FormatOption = Annotated[TableJsonHtml, typer.Option("--format", "-f", help="Output format (html: a report with "
                                                                               "its pictures).")]
OutputOption = Annotated[Optional[Path], typer.Option("--output", "-o", help="Where to write the HTML report (default: "
                                                                            "advisor-report-<time>.html here).",
                                                      dir_okay=False, show_default=False)]
DbOption = Annotated[Optional[Path], typer.Option("--db", help="Knowledge-base index (default: the shipped one).",
                                                  show_default=False)]


def register(app: typer.Typer) -> None:
    """Add `advisor memory` and `advisor serving` to the app."""
    app.command("memory", no_args_is_help=True)(memory_command)
    app.command("serving", no_args_is_help=True)(serving_command)


def memory_command(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="Profiler output collected with profile_memory=True "
                                                              "(torch_npu) or msprof --task-memory=on.",
                                         show_default=False)],
    fmt: FormatOption = TableJsonHtml.table, db: DbOption = None, output: OutputOption = None,
    force: ForceOption = False, lang: LangOption = None,
) -> None:
    """Show the memory peak per component, the gap at the peak, the tensors holding it and what each remedy gives back.

    Per allocator component (PTA, GE, PTA+GE): peak reserved and allocated, the tensors held at the peak, memory
    held outside the allocator, and each finding's saving in MiB and as a share of the peak.

    Example: advisor memory ./rank0_ascend_pt
    """
    with DelayedProgress(f"reading {path.name}") as progress:
        document = commands.memory(path, db=db, progress=progress, warn=lambda message: warn([message]))
    _emit(document, fmt, output, force, path)


def serving_command(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="The output of msserviceprofiler parse / analyze "
                                                              "(request.csv, batch.csv ...), or its raw "
                                                              "ms_service_*.db.",
                                         show_default=False)],
    fmt: FormatOption = TableJsonHtml.table, db: DbOption = None, output: OutputOption = None,
    force: ForceOption = False, lang: LangOption = None,
) -> None:
    """Show TTFT and TPOT (p50 / p90 / p99), throughput, batch sizes, KV-cache use and the serving findings.

    The batch per iteration against the requests in flight, KV-cache use and preemptions, the host gap between
    forwards, and the findings with what each can win.

    Example: advisor serving ./output
    """
    _emit(commands.serving(path, db=db, warn=lambda message: warn([message])), fmt, output, force, path)


def _emit(document: dict, fmt: TableJsonHtml, output: Optional[Path], force: bool, path: Path) -> None:
    if output is not None and fmt is not TableJsonHtml.html:
        raise typer.BadParameter("--output needs --format html", param_hint="--output")
    if fmt is TableJsonHtml.html:
        write_html(document, output, force=force, inputs=[path])
    else:
        show(document, fmt.value)
