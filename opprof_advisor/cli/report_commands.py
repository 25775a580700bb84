"""`advisor report DOC.json`: render a saved JSON document again, as a table, markdown or an HTML report.

Every command's ``--format json`` output is a document; this command reads one back (an older
``/1`` document is brought up to today's keys) and renders it like the command itself would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import LangOption, ForceOption, ReportFormat, show, write_html
from opprof_advisor.commands.documents import read_document
from opprof_advisor.core.errors import DocumentError
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.terminal import one_line


def register(app: typer.Typer) -> None:
    """Add `advisor report` to the app."""
    app.command("report", no_args_is_help=True)(report_command)


def report_command(
    document: Annotated[Path, typer.Argument(metavar="DOC.json", help="A document saved from `advisor suggest|profile|"
                                             "compare|roofline|scan|... --format json`.", show_default=False)],
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="Output format (json: the document brought up "
                                                                     "to today's keys).")] = ReportFormat.table,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="HTML report file (with --format html; "
                                                                          "default advisor-report-<time>.html here).",
                                                   dir_okay=False, show_default=False)] = None,
    force: ForceOption = False,
    lang: LangOption = None,
) -> None:
    """Render a saved JSON document as a table, markdown or a self-contained HTML report.

    Example: advisor suggest -p ./prof --format json > advice.json && advisor report advice.json --format html
    """
    if output is not None and fmt is not ReportFormat.html:
        raise typer.BadParameter("--output is only used with --format html", param_hint="--output")

    loaded = read_document(document)
    try:
        if fmt is ReportFormat.html:
            write_html(loaded, output, force=force, inputs=[document])
        else:
            show(loaded, fmt.value)
    except UnicodeError:
        raise  # the terminal's, not the document's
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, ZeroDivisionError,
            RecursionError) as exc:
        # A value of the wrong type or out of range deeper than read_document checks: the document was
        # changed after it was written (a bug of advisor's shows with --debug, as this error's cause).
        error = type(exc).__name__ + ": " + one_line(exc)
        raise DocumentError(M_("cannot be rendered: a value in it has the wrong type or is out of range ({error})",
                               error=error), path=document,
                            hint=N_("give a file saved from `advisor ... --format json`, as it was written")) from exc
    except DocumentError as exc:
        if exc.path is None:  # (the renderer does not know the file)
            exc.path = str(document)
        raise
