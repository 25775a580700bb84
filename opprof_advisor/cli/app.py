"""The Typer app of `advisor`: errors as one line, --version / --debug, and every command module registered."""

from __future__ import annotations

import gc
import logging
import math
import os
import sys
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from opprof_advisor import __version__
from opprof_advisor.cli._common import LangOption
from opprof_advisor.cli.help_types import use_plain_types
from opprof_advisor.cli.output import err_console
from opprof_advisor.core.i18n import N_, _
from opprof_advisor.core.errors import AdvisorError, error_lines, file_error, format_warning
from opprof_advisor.core.i18n import M_, current_lang, set_lang
from opprof_advisor.core.terminal import (
    can_carry, detach_closed_stdout, guard_standard_streams, one_line, sane_terminal_size,
)
import warnings
import importlib

_state = {"debug": bool(os.environ.get("ADVISOR_DEBUG"))}


def _print_error(exc: BaseException) -> None:
    """The ``error:`` line(s) of ``exc`` on stderr: in English when stderr cannot show the language in use (an ASCII
    or Latin-1 terminal with --lang zh), a line longer than MAX_ERROR_LINE cut in its middle."""
    lines = error_lines(exc)
    if current_lang() != "en" and not can_carry(sys.stderr, "".join(lines)):
        chosen = current_lang()
        set_lang("en")
        try:
            lines = error_lines(exc)
        finally:
            set_lang(chosen)
    sys.stderr.write("".join(_bounded(line) + "\n" for line in lines))
    sys.stderr.flush()


#: The longest error line printed whole: a path of PATH_MAX and its message fit; a 100 kB value quoted in a
#: message is cut in its middle.
MAX_ERROR_LINE = 8192


def _bounded(line: str) -> str:
    if len(line) <= MAX_ERROR_LINE:
        return line
    head, tail = MAX_ERROR_LINE * 3 // 4, MAX_ERROR_LINE // 4
    return f"{line[:head]} … {line[-tail:]}"


#: `advisor --help` lists the commands in this order (any other after them).
HELP_ORDER = ("suggest", "profile", "memory", "serving", "roofline", "compare", "collect", "scan", "search", "show",
              "add", "remove", "kb", "outcomes", "report", "eval", "mcp")


class AdvisorGroup(TyperGroup):
    """Turns core errors into one line on stderr and exit code 1 (a traceback only with --debug)."""

    def list_commands(self, ctx):  # noqa: D401 - click API
        """The commands in the order a newcomer needs them: advice on a profile first."""
        names = super().list_commands(ctx)
        return sorted(names, key=lambda name: HELP_ORDER.index(name) if name in HELP_ORDER else len(HELP_ORDER))

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
        except KeyboardInterrupt as exc:
            # Typer exits 130 for any KeyboardInterrupt; one that SIGTERM or SIGHUP raised (cluster.runtime.Stopped
            # carries its number) exits as a shell reports a process that signal ended: 143 / 129.
            signum = getattr(exc, "signum", None)
            if isinstance(signum, int):
                raise typer.Exit(128 + signum) from None
            raise
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:
            # `advisor ... | head`: the reader has what it wanted; exit quietly.
            detach_closed_stdout()
            raise typer.Exit(0) from None
        except OSError as exc:
            if _state["debug"]:
                raise
            # A file the system refused (ENAMETOOLONG, EACCES, ENOSPC ...) wherever it was opened: one line naming it.
            _print_error(file_error(exc) if exc.filename is not None else exc)
            raise typer.Exit(1) from None
        except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback for users
            if exc.__class__.__name__ == "BadParameter":
                exc.message = bad_value_words(exc)
                raise
            if _state["debug"] or exc.__class__.__module__.startswith(("click", "typer")):
                raise
            _print_error(exc)
            raise typer.Exit(1) from None


#: What a value given to an option should have been, by the validation error Typer's coercion raises.
_BAD_VALUE_WORDS = {
    "int_parsing": N_("{input!r} is not a whole number"),
    "int_from_float": N_("{input!r} is not a whole number"),
    "float_parsing": N_("{input!r} is not a number"),
    "finite_number": N_("{input!r} is not a finite number"),
    "greater_than_equal": N_("{input} is too small: it must be at least {ge}"),
    "greater_than": N_("{input} is too small: it must be above {gt}"),
    "less_than_equal": N_("{input} is too large: it must be at most {le}"),
    "less_than": N_("{input} is too large: it must be below {lt}"),
}


def _not_finite(value: object) -> bool:
    try:
        return not math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return False


def bad_value_words(exc: BaseException) -> str:
    """A bad option value in our words: ``'abc' is not a whole number``, not the validation library's."""
    message = str(getattr(exc, "message", exc))
    errors = getattr(exc.__cause__, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            value = first.get("input")
            kind = "finite_number" if _not_finite(value) else first["type"]
            words = _BAD_VALUE_WORDS.get(kind)
            if words is not None:
                return _(words).format(input=value, **(first.get("ctx") or {}))
        except (IndexError, KeyError, TypeError, ValueError):
            pass
    return message.removeprefix("Value error, ")


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
    _show_slow_steps()


def _show_slow_steps() -> None:
    """The package's INFO log lines (the first KB index build) as one line each on stderr, when it is a terminal."""
    logger = logging.getLogger("opprof_advisor")
    if not any(isinstance(handler, _TerminalNotice) for handler in logger.handlers):
        logger.addHandler(_TerminalNotice())
        logger.setLevel(logging.INFO)


class _TerminalNotice(logging.Handler):
    """Writes ``advisor: message`` to the stderr of the moment, and only when that is a terminal (no noise in logs)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if err_console.is_terminal:
                sys.stderr.write(f"advisor: {one_line(record.getMessage())}\n")
                sys.stderr.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stderr: the notice is not worth an error


#: One line per command module; each adds its commands with ``register(app)``.
COMMAND_MODULES = ("kb_commands", "profile_commands", "roofline_commands", "workload_commands", "suggest_commands",
                   "loop_commands",
                   "scan_commands", "report_commands", "mcp_commands")


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"opprof_advisor.cli.{name}").register(app)


_register_commands()


#: The most arguments a command line may have: far more than any command takes (1,000 --exclude patterns of
#: `advisor scan` are 1,000 or 2,000), and few enough that the option parser answers at once.
MAX_ARGUMENTS = 10_000


#: The cyclic garbage collector's thresholds (the default is 700, 10, 10). A profile is millions of small objects,
#: none of them in a cycle; at the default the collector scans them again and again: a third of the time of a
#: profile of 100,000 op types (5.1 s -> 3.6 s CPU), more on larger ones. Collections still run, 70 times less often.
GC_THRESHOLDS = (50_000, 20, 100)


def main() -> None:
    """Console-script entry point: the standard streams and the terminal size made safe first (core.terminal)."""
    guard_standard_streams()
    sane_terminal_size()
    gc.set_threshold(*GC_THRESHOLDS)
    if len(sys.argv) - 1 > MAX_ARGUMENTS:  # before the parser, whose cost grows faster than the arguments
        given, limit = format(len(sys.argv) - 1, ","), format(MAX_ARGUMENTS, ",")
        _print_error(AdvisorError(M_("{n} arguments: at most {limit} are taken", n=given, limit=limit),
                                  hint=N_("give fewer; a long search query in quotes is one argument")))
        sys.exit(2)
    try:
        app()
    except AdvisorError as exc:  # outside a command (the help, a usage error) stdout failed: one line too
        if _state["debug"]:
            raise
        _print_error(exc)
        sys.exit(1)
