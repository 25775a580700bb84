"""Plain placeholders in `--help`: ``PATH``, ``N``, ``ID``, ``FILE``, never Python's ``<bool>`` or ``<list[str]>``.

Typer prints each parameter's Python type beside it (``--debug <bool>``, ``QUERY <list[str]>``,
``--db <file>``). A user reads those as something to type. Here a flag shows nothing (it takes no
value), an argument shows its metavar alone (its name says what it is), and an option without a
metavar gets one from its type: a choice lists its values (``table|json``), a path is ``PATH``,
``FILE`` or ``DIR``, a number ``N`` (or ``X`` for a float), anything else ``TEXT``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, get_args, get_origin

from typer._click import types
from typer._types import TyperChoice
from typer.core import TyperArgument, TyperOption
from typer.models import TyperPath


def plain_metavar(annotation: Any, *, choices: Any = None) -> str:
    """The placeholder a user reads for a value of ``annotation`` (a path's kind is told by the caller)."""
    if choices:
        values = [str(getattr(choice, "value", choice)) for choice in choices]
        joined = "|".join(values)
        # a long list may fold between its values in a narrow help column, never inside one ("c" / "sv")
        return joined if len(joined) <= 24 else " | ".join(values)
    if get_origin(annotation) in (list, tuple):
        args = get_args(annotation)
        return plain_metavar(args[0] if args else str)
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "PATH"
    if annotation is int:
        return "N"
    if annotation is float:
        return "X"
    return "TEXT"


def _shown(param) -> str:
    """What the help shows for a value of ``param``: its metavar, else a placeholder from its click type."""
    if param.metavar is not None:
        return param.metavar
    kind = param.type
    choices = getattr(kind, "choices", None)
    if choices:
        return plain_metavar(None, choices=choices)
    if isinstance(kind, TyperPath):
        return {"file": "FILE", "directory": "DIR"}.get(kind.name, "PATH")
    if isinstance(kind, types.IntParamType):
        return "N"
    if isinstance(kind, types.FloatParamType):
        return "X"
    return "TEXT"


def _plain(original):
    def get_metavar(self, param, ctx) -> Optional[str]:
        if isinstance(param, TyperArgument):  # the name column already shows an argument's metavar
            return "" if param.metavar is not None else _shown(param)
        if isinstance(param, TyperOption):
            return "" if param.is_flag or param.count else _shown(param)  # a flag takes no value
        return original(self, param, ctx)

    return get_metavar


def use_plain_types() -> None:
    """Make every Typer parameter of this process show plain placeholders in its help: the help panel and the
    usage line ask the parameter's click type for its metavar (typer 0.28, pinned below 0.29 in pyproject.toml)."""
    for kind in (types.ParamType, types.DateTime, TyperChoice):
        if not getattr(kind.get_metavar, "plain", False):
            kind.get_metavar = _plain(kind.__dict__["get_metavar"])
            kind.get_metavar.plain = True
