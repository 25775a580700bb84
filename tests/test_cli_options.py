"""The commands built from cli/options.py's table: every option as the table says, the values a body receives,
the usage errors Typer prints, and --help."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from conftest import ROOT
from opprof_advisor.cli import options
from opprof_advisor.cli._common import typer_command
from opprof_advisor.cli.app import app

EXAMPLE = str(ROOT / "data" / "examples" / "yolov8_torch_npu")
PEAKS = str(ROOT / "pyproject.toml")  # --peaks must name an existing file; parsing does not read it


def _recording_app(name: str, received: list) -> typer.Typer:
    """A Typer app whose only command is ``name`` built from the table, recording the values its body gets."""
    recording = typer.Typer(context_settings={"help_option_names": ["-h", "--help"]}, add_completion=False)
    recording.command(name, no_args_is_help=True)(typer_command(name, received.append))
    recording.command("_unused")(lambda: None)  # two commands, so the command name is read as in `advisor`
    return recording


#: Command lines covering every option of the table in each of its spellings.
READ_BY_BOTH = [
    ["suggest", "--profile", EXAMPLE],
    ["suggest", "-p", EXAMPLE, "--top", "3", "--model", "yolov8", "--kind", "recipe", "--format", "json"],
    ["suggest", f"--profile={EXAMPLE}", "-n", "07", "-f", "markdown", "--explain", "--explain", "--db", "/tmp/x.db"],
    ["suggest", "-p", EXAMPLE, "--format", "html", "-o", "report.html", "--force", "--executor", "serial"],
    ["suggest", "-p", EXAMPLE, "--scheduler", "tcp://host:8786", "--executor", "dask", "--model="],
    ["suggest", "-p", EXAMPLE, "-p", "other", "--top", "2", "--top=4", "--executor", "processes"],
    ["profile", EXAMPLE],
    ["profile", "--top", "2", EXAMPLE, "-f", "json", "--export", "/tmp/k.db", "--peaks", PEAKS],
    ["profile", EXAMPLE, "--format", "html", "--output", "p.html", "--force", "--scheduler", "tcp://h:1"],
    ["profile", "--", EXAMPLE],
    ["show", "nms-on-npu"], ["show", " nms-on-npu ", "-f", "json", "--db", "/tmp/x.db"], ["show", "--", "-odd"],
    ["search", "nms"], ["search", "flash", "--kind=recipe", "--operator", "FlashAttentionScore", "attention", "-n",
                        "3", "-f", "json", "--db", "/tmp/x.db", "--", "--literal"],
    ["suggest", "-p", EXAMPLE, "--lang", "zh", "--format", "csv"], ["suggest", "-p", EXAMPLE, "-f", "xlsx", "-o", "s.xlsx"],
    ["profile", EXAMPLE, "--format", "csv", "--lang=en"], ["show", "x", "--lang", "zh"], ["search", "nms", "--lang", "en"],
    ["search", "-k", "tip", "zebra", "-"], ["search", "--operator=", "x"],
    ["add", "case.md"], ["add", "--replace", "case.md", "--db", "/tmp/x.db", "--lang", "zh"], ["add", "--", "-odd.md"],
    ["remove", "my-case"], ["remove", " my-case ", "-f", "json", "--db=/tmp/x.db"],
    ["suggest", EXAMPLE], ["suggest", EXAMPLE, "-n", "3", "-f", "json"], ["suggest", EXAMPLE, "--stack", "mindspeed-llm"],
]

#: Command lines Typer refuses with a usage message (exit 2).
USAGE_ERRORS = [
    ["suggest", "--profile"], ["suggest", "--top", "3"], ["suggest", "-p", EXAMPLE, "--top", "0"],
    ["suggest", "-p", EXAMPLE, "-n=5"], ["suggest", "-p", EXAMPLE, "--explain=yes"],
    ["suggest", "-p", EXAMPLE, "--format", "JSON"], ["suggest", "-p", EXAMPLE, "--output", "x.html"],
    ["suggest", "-p", EXAMPLE, "--scheduler", "tcp://h:1", "--executor", "serial"],
    ["suggest", "-p", EXAMPLE, "extra"], ["suggest", "-p", EXAMPLE, "--db", EXAMPLE],
    ["suggest", EXAMPLE, "--stack", "deepspeed"], ["suggest", EXAMPLE, "--stack"],
    ["profile", EXAMPLE, "extra"], ["profile", EXAMPLE, "--peaks", "/no/such/peaks.yaml"],
    ["profile", EXAMPLE, "--peaks", EXAMPLE], ["profile", EXAMPLE, "--export", EXAMPLE],
    ["profile", EXAMPLE, "-o", "x.html"], ["profile", EXAMPLE, "--format", "markdown"],
    ["show", "a", "b"], ["show", "x", "--format", "html"], ["show", "x", "--lang", "fr"],
    ["suggest", "-p", EXAMPLE, "--format", "csv", "-o", "x.csv"], ["profile", EXAMPLE, "-f", "csv", "--output=x.csv"],
    ["search", "nms", "-o", "NMS"],
    ["search", "nms", "--debug"], ["search", "nms", "--format", "yaml"], ["search", "nms", "--kind", "howto"],
    ["search", "nms", "--top", "0"], ["search", "nms", "--top", "many"], ["search", "nms", "--top"],
    ["search", "nms", "--colour", "red"], ["search", "--operator"],
    ["add", "a.md", "b.md"], ["add", "a.md", "--replace=yes"], ["remove", "x", "--format", "html"], ["remove", "a", "b"],
]

@pytest.mark.parametrize("argv", READ_BY_BOTH)
def test_every_spelling_of_every_option_reaches_the_command(argv):
    received: list = []
    result = CliRunner().invoke(_recording_app(argv[0], received), argv)
    assert result.exit_code == 0, result.output
    # suggest's PATH and --profile reach the body as one value, "profile"
    merged = {"path"} if argv[0] == "suggest" else set()
    assert set(received[0]) == {row.name for row in options.COMMANDS[argv[0]].params} - {"lang"} - merged


def test_values_are_the_types_the_bodies_use():
    received: list = []
    result = CliRunner().invoke(_recording_app("suggest", received), READ_BY_BOTH[2])
    assert result.exit_code == 0, result.output
    assert received[0] == {"profile": Path(EXAMPLE), "top": 7, "model": None, "kind": None, "stack": None, "fmt": "markdown",
                           "explain": True, "output": None, "force": False, "db": Path("/tmp/x.db"),
                           "executor": "auto", "scheduler": None, "each": False}
    CliRunner().invoke(_recording_app("search", received), READ_BY_BOTH[14])
    assert received[-1]["query"] == ["flash", "attention", "--literal"]


def test_suggest_takes_the_profile_as_path_or_as_profile_once(runner):
    received: list = []
    CliRunner().invoke(_recording_app("suggest", received), ["suggest", EXAMPLE])
    CliRunner().invoke(_recording_app("suggest", received), ["suggest", "--profile", EXAMPLE])
    assert [r["profile"] for r in received] == [Path(EXAMPLE), Path(EXAMPLE)]
    both = runner.invoke(app, ["suggest", EXAMPLE, "--profile", EXAMPLE])
    assert both.exit_code == 2 and "give the profile once" in both.stderr
    neither = runner.invoke(app, ["suggest", "--top", "3"])
    assert neither.exit_code == 2 and "which profile? advisor suggest PATH" in neither.stderr


@pytest.mark.parametrize("argv", USAGE_ERRORS)
def test_typer_prints_the_usage_error(argv, runner):
    result = runner.invoke(app, argv)
    assert result.exit_code == 2
    assert "Error" in result.stderr


def test_the_app_s_options_are_the_table_s():
    import typer.main

    group = typer.main.get_command(app)
    for name, command in options.COMMANDS.items():
        params = {param.name: param for param in group.commands[name].params}
        assert list(params) == [param.name for param in command.params]
        for row in command.params:
            param = params[row.name]
            assert (tuple(param.opts), param.required) == (row.flags or (row.name,), row.required)
            assert getattr(param, "min", None) == row.min
            default = param.default.value if hasattr(param.default, "value") else param.default
            assert default == row.default


@pytest.mark.parametrize("name", sorted(options.COMMANDS))
def test_help_lists_every_option_of_the_table(name, runner):
    result = runner.invoke(app, [name, "--help"])
    assert result.exit_code == 0
    for row in options.COMMANDS[name].params:
        for flag in row.flags:
            assert flag in result.stdout
    assert options.COMMANDS[name].help.splitlines()[0][:60] in result.stdout
