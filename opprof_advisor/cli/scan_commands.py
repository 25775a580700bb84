"""`advisor scan PATH`: static analysis of a model's source with CANN support and ranked advice.

Parses options, calls opprof_advisor.scan (imported inside the command so start-up stays fast)
and renders the scan document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import LangOption, DbOption, ForceOption, ReportFormat, show, write_html
from opprof_advisor import commands


def register(app: typer.Typer) -> None:
    """Add `advisor scan` to the app."""
    app.command("scan", no_args_is_help=True)(scan_command)


def scan_command(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="The model's source: a repository folder or one .py file.",
                                         show_default=False)],
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="Output format.")] = ReportFormat.table,
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="How many pieces of ranked advice to show.")] = 5,
    exclude: Annotated[Optional[list[str]], typer.Option(
        "--exclude", "-x", help="Skip paths matching this glob (relative path or name; repeatable), "
                                "e.g. 'tests/*' or '*_test.py'.")] = None,
    db: DbOption = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="With --format html: the report file "
                                                   "(default: advisor-report-<timestamp>.html here).",
                                                   dir_okay=False, show_default=False)] = None,
    force: ForceOption = False,
    lang: LangOption = None,
) -> None:
    """Find compute-heavy operators, CPU-fallback risks, CUDA-only code and fusion candidates in model source.

    Every finding has its file:line, its CANN support (native / cpu_fallback_risk / needs_replacement)
    and the torch_npu replacement, from a sourced table. The findings are ranked against the
    knowledge base like a profile (no expected gains: nothing is measured).

    Example: advisor scan ./my-model --exclude 'tests/*' --format markdown
    """
    document = commands.scan(path, top=top, exclude=exclude, db=db)
    if fmt is ReportFormat.html:
        write_html(document, output, force=force)
    else:
        show(document, fmt.value)
