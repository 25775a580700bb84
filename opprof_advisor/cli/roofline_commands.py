"""`advisor roofline PATH`: each op type against the chip's compute and bandwidth roofs.

Parses options, calls opprof_advisor.readers / roofline (imported inside the command so start-up
stays fast) and prints a table, JSON or an HTML report. Also holds the ``--peaks`` option and the
efficiency cell that `advisor profile` shares.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from opprof_advisor.cli._common import DelayedProgress, ForceOption, TableJsonHtml, console, echo, emit_json
from opprof_advisor.terminal import dumps_json

if TYPE_CHECKING:
    from opprof_advisor.models import Profile, RooflineRow

#: The `--peaks` option of every command that computes a roofline.
PeaksOption = Annotated[
    Optional[Path],
    typer.Option("--peaks", help="YAML with measured or known peaks (chip, aic, aiv, freq_mhz, hbm_gbps, "
                                 "cube_tflops: {bf16: ...}); over the profile's own figures and $ADVISOR_HOME/peaks.yaml.",
                 exists=True, dir_okay=False, show_default=False),
]


def register(app: typer.Typer) -> None:
    """Add `advisor roofline` to the app."""
    app.command("roofline", no_args_is_help=True)(roofline_command)


def roofline_command(
    path: Annotated[Path, typer.Argument(help="Profiler output (any input `advisor profile` reads).", show_default=False)],
    fmt: Annotated[TableJsonHtml, typer.Option("--format", "-f", help="Output format.")] = TableJsonHtml.table,
    peaks: PeaksOption = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the JSON or HTML here instead of "
                                                                          "stdout (HTML default: advisor-report-<time>.html "
                                                                          "here).", dir_okay=False, show_default=False)] = None,
    force: ForceOption = False,
) -> None:
    """Show how far each op type is from the chip's roofs: achieved TFLOP/s and GB/s, efficiency, headroom.

    Peaks come from the profile (AI Core count, clock) and a table of exact SoC names; --peaks and
    $ADVISOR_HOME/peaks.yaml override them. Gains shown are model estimates, not sourced figures.

    Example: advisor roofline ./rank0_ascend_pt --peaks peaks.yaml
    """
    if output is not None and fmt is TableJsonHtml.table:
        raise typer.BadParameter("--output needs --format json or html", param_hint="--output")
    from opprof_advisor.readers import load_profile
    from opprof_advisor.roofline import roofline_document

    with DelayedProgress(f"reading {path.name}") as progress:
        _, profile = load_profile(path, progress, peaks=peaks)
    document = roofline_document(profile)
    if fmt is TableJsonHtml.json:
        if output is None:
            emit_json(document)
        else:
            from opprof_advisor.outputs import is_json_document, write_text

            written = write_text(output, dumps_json(document) + "\n", what="a JSON document", is_ours=is_json_document,
                                 force=force, inputs=[path])
            echo(f"wrote {written}")
    elif fmt is TableJsonHtml.html:
        from opprof_advisor.render import render
        from opprof_advisor.render.html.page import write_report

        echo(f"wrote {write_report(render(document, 'html'), output, force=force, inputs=[path])}")
    else:
        print_roofline(profile)


def efficiency_cell(profile: Profile, op_type: str, unit: str) -> str:
    """The efficiency of an op type as a table cell: '38.8%', 'data?' (implausible) or '' (not judged)."""
    row = profile.roofline.row(op_type, unit) if profile.roofline else None
    if row is None or row.efficiency is None:
        return ""
    return "data?" if row.status == "implausible" else f"{row.efficiency:.1%}"


def _rate(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _gain(row: RooflineRow) -> str:
    if row.model_gain_high is None:
        return ""
    return f"{row.model_gain_low:.0%}–{row.model_gain_high:.0%}"


def print_roofline(profile: Profile) -> None:
    from rich.table import Table
    from rich.text import Text

    roofline = profile.roofline
    peaks = roofline.peaks if roofline else {}
    cube = ", ".join(f"{k} {v:.1f}" for k, v in (peaks.get("cube_tflops") or {}).items())
    console.print(f"{profile.path}  (chip {peaks.get('chip') or 'unknown'}, AIC {peaks.get('aic') or '?'}, "
                  f"{peaks.get('freq_mhz') or '?'} MHz; cube peak TFLOP/s: {cube or 'unknown'}; "
                  f"HBM {peaks.get('hbm_gbps') or '?'} GB/s)", markup=False, highlight=False)
    rows = roofline.rows if roofline else []
    if rows:
        table = Table(show_edge=False, pad_edge=False)
        # numbers never shrink; the op type gives way on a narrow terminal
        for column, justify, width in (("op type", "left", None), ("time", "right", 10), ("dtype", "left", 5),
                                       ("TFLOP/s", "right", 7), ("GB/s", "right", 5), ("flop/B", "right", 6),
                                       ("roof", "left", 9), ("eff", "right", 6), ("headroom", "right", 10),
                                       ("gain*", "right", 7)):
            table.add_column(column, justify=justify, no_wrap=True, overflow="ellipsis", min_width=width)
        for row in rows:
            table.add_row(Text(f"{row.op_type} ({row.unit})"), f"{row.time_us:,.1f} us", row.dtype,
                          _rate(row.achieved_tflops), _rate(row.achieved_gbps, 0), _rate(row.intensity, 0), row.roof,
                          efficiency_cell(profile, row.op_type, row.unit) or "-",
                          _rate(row.headroom_us) + (" us" if row.headroom_us is not None else ""), _gain(row))
        console.print(table)
        console.print("gain* = model estimate: the fraction of the op type's time saved if it reached 60–70 % of "
                      "attainable; not a sourced figure", highlight=False)
        for row in rows:
            if row.reason:
                console.print(f"  {row.op_type}: {row.reason}", markup=False, highlight=False)
    for note in (roofline.notes if roofline else []):
        console.print(f"  {note}", markup=False, highlight=False)
