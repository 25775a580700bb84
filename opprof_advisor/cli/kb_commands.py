"""Knowledge-base commands: `advisor search`, `show`, `add` and the `advisor kb` group.

Parses options, calls opprof_advisor.kb / store / search (imported inside the commands so the
fast path stays fast) and prints. No logic that a test of the core would miss lives here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from opprof_advisor.cli._common import TableOrJson, console, emit_json, err_console

DbOption = Annotated[
    Optional[Path],
    typer.Option("--db", help="Index database file [default: $ADVISOR_DB or <advisor home>/advisor.db].",
                 dir_okay=False, show_default=False),
]
FormatOption = Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")]

kb_app = typer.Typer(
    name="kb",
    help="Check, build, list and count the knowledge base.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def register(app: typer.Typer) -> None:
    """Add search, show, add and the kb group to the `advisor` app."""
    app.add_typer(kb_app, name="kb")


# ---------------------------------------------------------------------------------------------
# advisor kb check
# ---------------------------------------------------------------------------------------------


@kb_app.command("check")
def check_command(
    dirs: Annotated[
        Optional[list[Path]],
        typer.Argument(help="KB folders or files to check [default: the built-in and your own KB].",
                       show_default=False),
    ] = None,
    output: FormatOption = TableOrJson.table,
) -> None:
    """Lint KB markdown files: schema, YAML, vocabulary, ids, sections, unsourced figures.

    Every problem is printed as `path:line: message`; exit code 1 when there is any.
    """
    from opprof_advisor import kb, paths

    targets = list(dirs) if dirs else [paths.builtin_kb_dir(), paths.user_kb_dir()]
    missing = [str(path) for path in targets if not path.exists() and dirs]
    for path in missing:
        err_console.print(f"error: {path}: no such file or folder")
    if missing:
        raise typer.Exit(1)
    files = kb.find_kb_files(target for target in targets if target.exists())
    known = _installed_ids(exclude=files) if dirs else set()
    problems = kb.check_paths(files, known_ids=known)
    if output is TableOrJson.json:
        emit_json({
            "schema": "opprof-advisor/kb-check/1",
            "files": len(files),
            "problems": [{"path": p.path, "line": p.line or 1, "message": p.message} for p in problems],
        })
    else:
        for problem in problems:
            typer.echo(str(problem))
        bad = len({p.path for p in problems})
        summary = f"{len(files)} file(s) checked: " + (f"{len(problems)} problem(s) in {bad} file(s)" if problems else "no problems")
        err_console.print(summary)
    if problems:
        raise typer.Exit(1)


def _installed_ids(exclude: list[Path]) -> set[str]:
    """Ids of the built-in and user KB files (file stems), so `related` may point at them."""
    from opprof_advisor import kb, paths

    checked = {path.resolve() for path in exclude}
    roots = [root for root in (paths.builtin_kb_dir(), paths.user_kb_dir()) if root.is_dir()]
    return {path.stem for path in kb.find_kb_files(roots) if path.resolve() not in checked}
