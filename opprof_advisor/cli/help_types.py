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


def _option_type(self, ctx) -> Optional[str]:
    if self.is_flag or self.count:
        return None  # a flag takes no value: nothing to show
    if self.metavar is not None:
        return self.metavar
    return _described(self)


def _argument_type(self, ctx) -> Optional[str]:
    if self.metavar is not None:
        return None  # the name column already shows the metavar (QUERY, ID, FILE.md)
    return _described(self) + ("..." if self.nargs != 1 else "")


def _described(param) -> str:
    desc = param.type_descriptor
    if desc.is_path:
        return {"file": "FILE", "dir": "DIR"}.get(desc.path_type, "PATH")
    return plain_metavar(desc.annotation, choices=desc.choices)


def use_plain_types() -> None:
    """Make every Typer parameter of this process show plain placeholders in its help."""
    from typer.core import TyperArgument, TyperOption

    TyperOption.display_type_rich = _option_type
    TyperArgument.display_type_rich = _argument_type
