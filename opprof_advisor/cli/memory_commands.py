"""`advisor memory PATH`: the memory peak of a profile, what holds it, and what can be given back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor import commands
from opprof_advisor.cli._common import DelayedProgress, LangOption, TableOrJson, show
from opprof_advisor.cli.fast_commands import warn


def register(app: typer.Typer) -> None:
    """Add `advisor memory` to the app."""
    app.command("memory", no_args_is_help=True)(memory_command)


def memory_command(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="Profiler output collected with profile_memory=True "
                                                              "(torch_npu) or msprof --task-memory=on.",
                                         show_default=False)],
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    db: Annotated[Optional[Path], typer.Option("--db", help="Knowledge-base index (default: the shipped one).",
                                               show_default=False)] = None,
    lang: LangOption = None,
) -> None:
    """Show the memory peak per allocator component (PTA, GE, PTA+GE), the gap at the peak, the tensors that hold
    it, memory held outside the allocator, and what each remedy can give back (MiB, share of the peak).

    Example: advisor memory ./rank0_ascend_pt
    """
    with DelayedProgress(f"reading {path.name}") as progress:
        document = commands.memory(path, db=db, progress=progress, warn=lambda message: warn([message]))
    show(document, fmt.value)
