"""Shared pieces of the Typer commands: options built from the option table, and the output helpers.

Only the CLI package imports typer and prints; the core raises named errors. The options of the commands people
run most are declared once, in cli/options.py; ``typer_command`` turns one of those declarations into the Typer
command.
"""

from __future__ import annotations

import inspect
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from opprof_advisor.cli import choices, options
from opprof_advisor.cli.choices import (  # noqa: F401  (re-exported for the command modules)
    ExecutorName, Kind, ReportFormat, SuggestFormat, TableJsonHtml, TableJsonHtmlSheets, TableOrJson,
)
from opprof_advisor.cli.options import Param
from opprof_advisor.cli.output import (  # noqa: F401  (re-exported for the command modules)
    DelayedProgress, console, echo, emit_json, err_console, executor_choice, print_items, render, show, write_html,
    write_sheet_formats,
)
from opprof_advisor.core.i18n import LANGS
from opprof_advisor.core.i18n import normalise_lang
from opprof_advisor.core.i18n import set_lang
from rich.markup import escape


def _choose_lang(ctx: typer.Context, value: Optional[str]) -> Optional[str]:
    if value is not None:
        if normalise_lang(value) is None:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(LANGS)}", param_hint="--lang")
        ctx.meta["advisor.lang"] = value  # shared by the whole command line: `advisor --lang zh suggest` holds
    set_lang(ctx.meta.get("advisor.lang"))  # None: from the environment, afresh for every command run
    return value


#: `--lang` of every command (and of `advisor` itself): the language of what it prints.
LangOption = Annotated[Optional[str], typer.Option(
    *options.LANG.flags, metavar=options.LANG.metavar, callback=_choose_lang, expose_value=False, is_eager=True,
    show_default=False, help=options.LANG.help)]


def typer_annotation(param: Param) -> Any:
    """The ``Annotated[type, typer.Option(...)]`` (or ``typer.Argument``) of one row of the option table."""
    if param is options.LANG:
        return LangOption
    # Typer reads help as Rich markup: "opprof-advisor[cluster]" would lose its "[cluster]"
    settings: dict[str, Any] = {"help": escape(param.help)}
    for key in ("min", "metavar", "show_default"):
        if getattr(param, key) is not None:
            settings[key] = getattr(param, key)
    if param.exists:
        settings["exists"] = True
    if not param.dir_okay:
        settings["dir_okay"] = False
    info = typer.Argument(**settings) if param.is_argument else typer.Option(*param.flags, **settings)
    kind = _typer_kind(param)
    kind = list[kind] if param.many else kind
    if not param.required and param.default is None:
        kind = Optional[kind]
    return Annotated[kind, info]


def typer_default(param: Param) -> Any:
    """The default Typer shows and passes: a choice's Enum member, else the table's value."""
    if param.required:
        return inspect.Parameter.empty
    if isinstance(param.kind, options.Choice) and param.default is not None:
        return choices.enum_of(param.kind)(param.default)
    return param.default


def _typer_kind(param: Param) -> Any:
    return choices.enum_of(param.kind) if isinstance(param.kind, options.Choice) else param.kind


def typer_command(name: str, body: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """The Typer command function for ``options.COMMANDS[name]``: its signature and help come from the table;
    it passes ``body`` the same values ``options.parse_args`` would (a choice as its string value; --lang is
    applied by its callback, as on every command)."""
    command = options.COMMANDS[name]

    def command_function(**values: Any) -> None:
        values = {key: value.value if isinstance(value, Enum) else value for key, value in values.items()
                  if key != options.LANG.name}  # its callback has set the language already
        problem = options.usage_problem(name, values)
        if problem is not None:
            raise typer.BadParameter(problem.message, param_hint=problem.param_hint)
        if "profile" in values and "path" in values:  # suggest: PATH, or --profile PATH as before
            values["profile"] = values.pop("path") or values["profile"]
        body(values)

    parameters = [inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, default=typer_default(param),
                                    annotation=typer_annotation(param)) for param in command.params]
    command_function.__signature__ = inspect.Signature(parameters)
    command_function.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    command_function.__name__ = command_function.__qualname__ = f"{name}_command"
    command_function.__doc__ = command.help
    return command_function


def write_sheets(document: dict[str, Any], fmt: str, output: Optional[Path], *, force: bool, inputs: Any = ()) -> bool:
    """Print ``document``'s main table as CSV, or write its tables into an xlsx workbook; False for other formats."""
    problem = options.sheets_problem(fmt, output)
    if problem is not None:
        raise typer.BadParameter(problem.message, param_hint=problem.param_hint)
    return write_sheet_formats(document, fmt, output, force=force, inputs=inputs)


#: The `--db` option of every command that uses the knowledge-base index.
DbOption = typer_annotation(options.DB)
#: `--force` of the commands that write a report or an export.
ForceOption = typer_annotation(options.FORCE)
#: `--executor` and `--scheduler` of the commands that read a profile (used by a folder of ranks).
ExecutorOption = typer_annotation(options.EXECUTOR)
SchedulerOption = typer_annotation(options.SCHEDULER)
#: The `--peaks` option of every command that computes a roofline.
PeaksOption = typer_annotation(options.PEAKS)
