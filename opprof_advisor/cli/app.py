"""The Typer app of `advisor`: errors as one line, --version / --debug, and every command module registered."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from opprof_advisor import __version__
from opprof_advisor.cli._common import LangOption
from opprof_advisor.cli.help_types import use_plain_types
from opprof_advisor.core.errors import AdvisorError, error_lines, format_warning
from opprof_advisor.core.terminal import detach_closed_stdout
import warnings
import importlib

_state = {"debug": bool(os.environ.get("ADVISOR_DEBUG"))}


def _print_error(exc: BaseException) -> None:
    sys.stderr.write("".join(line + "\n" for line in error_lines(exc)))


class AdvisorGroup(TyperGroup):
    """Turns core errors into one line on stderr and exit code 1 (a traceback only with --debug)."""

    def invoke(self, ctx):  # noqa: D401 - click API
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe fails here, inside the handler, not at exit
            return result
        except AdvisorError as exc:
            if _state["debug"]:
                raise
            _print_error(exc)
            raise typer.Exit(1) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            # `advisor ... | head`: the reader has what it wanted; exit quietly.
            detach_closed_stdout()
            raise typer.Exit(0) from None
        except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback for users
            if _state["debug"] or exc.__class__.__module__.startswith(("click", "typer")):
                raise
            _print_error(exc)
            raise typer.Exit(1) from None


use_plain_types()
app = typer.Typer(
    cls=AdvisorGroup,
    name="advisor",
    help="Ranked, evidence-backed tuning advice for Ascend NPU profiles.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"opprof-advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version and exit."),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    lang: LangOption = None,
) -> None:
    """Ranked, evidence-backed tuning advice for Ascend NPU profiles."""
    _state["debug"] = debug or bool(os.environ.get("ADVISOR_DEBUG"))

    warnings.formatwarning = format_warning  # an AdvisorWarning prints as one "warning: ..." line


#: One line per command module; each adds its commands with ``register(app)``.
COMMAND_MODULES = ("kb_commands", "profile_commands", "roofline_commands", "workload_commands", "suggest_commands",
                   "loop_commands",
                   "scan_commands", "report_commands", "mcp_commands")


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"opprof_advisor.cli.{name}").register(app)


_register_commands()


def main() -> None:
    """Console-script entry point."""
    app()
