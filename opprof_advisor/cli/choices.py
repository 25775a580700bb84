"""The str Enums Typer converts the choice options to, one per ``options.Choice``.

The command modules annotate their options with these (``fmt: TableOrJson = TableOrJson.table``) and
compare with their members; cli/_common.py gives Typer the Enum of each choice of the option table.
"""

from __future__ import annotations

from enum import Enum

from opprof_advisor.cli import options


def _enum(choice: options.Choice) -> type[Enum]:
    return Enum(choice.name, {value: value for value in choice.values}, type=str, module=__name__)


Kind = _enum(options.Kind)
TableOrJson = _enum(options.TableOrJson)
TableJsonHtml = _enum(options.TableJsonHtml)
ReportFormat = _enum(options.ReportFormat)
TableJsonHtmlSheets = _enum(options.TableJsonHtmlSheets)
SuggestFormat = _enum(options.SuggestFormat)
ExecutorName = _enum(options.ExecutorName)
Stack = _enum(options.Stack)


def enum_of(choice: options.Choice) -> type[Enum]:
    """The Enum of ``choice``."""
    return globals()[choice.name]
