"""`advisor roofline PATH`: each op type against the chip's compute and bandwidth roofs.

Parses options, calls opprof_advisor.readers / roofline (imported inside the command so start-up
stays fast) and renders the roofline document as a table, JSON or an HTML report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import (
    DelayedProgress, ForceOption, LangOption, PeaksOption, TableJsonHtml, echo, show, write_html,
)
from opprof_advisor.core.terminal import dumps_json
from opprof_advisor import commands
from opprof_advisor.core.outputs import is_json_document, write_text

def register(app: typer.Typer) -> None:
    """Add `advisor roofline` to the app."""
    app.command("roofline", no_args_is_help=True)(roofline_command)


def roofline_command(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="Profiler output (any input `advisor profile` reads).", show_default=False)],
    fmt: Annotated[TableJsonHtml, typer.Option("--format", "-f", help="Output format.")] = TableJsonHtml.table,
    peaks: PeaksOption = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the JSON or HTML here instead of "
                                                                          "stdout (HTML default: advisor-report-<time>.html "
                                                                          "here).", dir_okay=False, show_default=False)] = None,
    force: ForceOption = False,
    lang: LangOption = None,
) -> None:
    """Show how far each op type is from the chip's roofs: achieved TFLOP/s and GB/s, efficiency, headroom.

    Peaks come from the profile (AI Core count, clock) and a table of exact SoC names; --peaks and
    $ADVISOR_HOME/peaks.yaml override them. Gains shown are model estimates, not sourced figures.

    Example: advisor roofline ./rank0_ascend_pt --peaks peaks.yaml
    """
    if output is not None and fmt is TableJsonHtml.table:
        raise typer.BadParameter("--output needs --format json or html", param_hint="--output")

    with DelayedProgress(f"reading {path.name}") as progress:
        document = commands.roofline(path, peaks=peaks, progress=progress)
    if fmt is TableJsonHtml.json and output is not None:
        written = write_text(output, dumps_json(document) + "\n", what="a JSON document", is_ours=is_json_document,
                             force=force, inputs=[path])
        echo(f"wrote {written}")
    elif fmt is TableJsonHtml.html:
        write_html(document, output, force=force, inputs=[path])
    else:
        show(document, fmt.value)
