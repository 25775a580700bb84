"""Every command's --help shows plain placeholders (PATH, N, ID, FILE, TEXT), never Python types."""

from __future__ import annotations

import re

import typer.main
from typer.testing import CliRunner

from opprof_advisor.cli.app import app
from opprof_advisor.cli.help_types import plain_metavar

# <bool>, <int>, <str>, <list[str]>, <path>, <file>, <int range>, <table|json> ... (a type, not a file-name pattern)
PYTHON_TYPE = re.compile(r"<(?:bool|int|float|str|path|file|dir|datetime|list\[[^\]]*\]|[a-z]+ range|[a-z]+(?:\|[a-z]+)+)>")


def command_paths(command, prefix=()):
    """Every command line of the app: ("suggest",), ("kb", "check"), ..."""
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from command_paths(sub, (*prefix, name))


def test_every_help_shows_plain_placeholders():
    paths = list(command_paths(typer.main.get_command(app)))
    assert ("kb", "check") in paths and ("suggest",) in paths and len(paths) > 15
    runner = CliRunner(env={"COLUMNS": "200", "TERM": "dumb"})
    for path in paths:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        found = PYTHON_TYPE.findall(result.output)
        assert not found, f"advisor {' '.join(path)} --help shows {found}"
        usage = next(line for line in result.output.splitlines() if "Usage:" in line)
        assert not re.search(r"\{[a-z]", usage), f"lower-case argument name in {usage.strip()}"


def test_help_names_the_values_an_option_takes():
    runner = CliRunner(env={"COLUMNS": "200", "TERM": "dumb"})
    search = runner.invoke(app, ["search", "--help"]).output
    assert re.search(r"--top\s+-n\s+N\b", search) and re.search(r"--format\s+-f\s+table\|json\b", search)
    assert re.search(r"--db\s+FILE\b", search) and re.search(r"--operator\s+TEXT\b", search)
    assert re.search(r"--help\s+-h\s+Show this message", search)  # a flag shows no placeholder
    assert "pip install 'opprof-advisor[mcp]'" in runner.invoke(app, ["mcp", "--help"]).output  # not eaten as markup


def test_plain_metavar_of_types():
    assert plain_metavar(int) == "N" and plain_metavar(list[str]) == "TEXT" and plain_metavar(float) == "X"


def test_no_help_is_cut_at_80_columns():
    """Every command's --help at 80 columns: no text cut with an ellipsis, no choice split inside a value."""
    from typer.testing import CliRunner as Runner

    names = ["", "suggest", "profile", "memory", "serving", "roofline", "compare", "collect", "scan", "search", "show",
             "add", "remove", "kb list", "kb check", "kb build", "kb stats", "outcomes list", "report", "eval", "mcp"]
    for name in names:
        result = Runner(env={"COLUMNS": "80", "TERM": "dumb"}).invoke(app, [*name.split(), "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "…" not in result.output, (name, [line for line in result.output.splitlines() if "…" in line])
        assert "|c " not in result.output and "│ sv" not in result.output, name
