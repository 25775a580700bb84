"""The Typer-free entry point: it reads exactly what the Typer commands read, and prints what they print.

Both parsers come from cli/options.py's table; these tests hold them to each other option by option
(the values a command body receives), on --help, and on the bytes printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from conftest import ROOT
from opprof_advisor.cli import fast_path, options
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


#: Command lines the fast path reads itself, covering every option of the table in each of its spellings.
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
]

#: Command lines Typer refuses with a usage message (exit 2).
USAGE_ERRORS = [
    ["suggest", "--profile"], ["suggest", "--top", "3"], ["suggest", "-p", EXAMPLE, "--top", "0"],
    ["suggest", "-p", EXAMPLE, "-n=5"], ["suggest", "-p", EXAMPLE, "--explain=yes"],
    ["suggest", "-p", EXAMPLE, "--format", "JSON"], ["suggest", "-p", EXAMPLE, "--output", "x.html"],
    ["suggest", "-p", EXAMPLE, "--scheduler", "tcp://h:1", "--executor", "serial"],
    ["suggest", "-p", EXAMPLE, "extra"], ["suggest", "-p", EXAMPLE, "--db", EXAMPLE],
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

#: Command lines Typer reads whose reading the table does not copy: help, --debug, short options with a value
#: attached, values that look like options or numbers Click and the table might read differently.
READ_BY_TYPER_ONLY = [
    [], ["--debug", "search", "nms"], ["kb", "list"], ["suggest"], ["suggest", "--help"], ["suggest", "-h"],
    ["suggest", "-p", EXAMPLE, "-n5"], ["suggest", "-p", EXAMPLE, "--top", "+5"],
    ["suggest", "-p", EXAMPLE, "--top", "\uff15"], ["suggest", "-p", EXAMPLE, "--model", "-x"],
    ["suggest", "-p", ""], ["suggest", "-p", "-"], ["profile"], ["profile", "-"], ["show"],
    ["search"], ["search", "--help"], ["search", "nms", "-h"], ["search", "nms", "--lang", "zh_CN"],
    ["add"], ["add", "--help"], ["remove"], ["remove", "x", "-h"],
]


@pytest.mark.parametrize("argv", READ_BY_BOTH)
def test_both_parsers_hand_the_command_the_same_values(argv):
    parsed = fast_path.parse(argv)
    assert parsed is not None
    received: list = []
    result = CliRunner().invoke(_recording_app(argv[0], received), argv)
    assert result.exit_code == 0, result.output
    name, values = parsed
    lang = values.pop("lang")  # Typer applies --lang in its callback and passes no value
    assert (name, values) == (argv[0], received[0])
    assert lang == (argv[argv.index("--lang") + 1] if "--lang" in argv else "en" if "--lang=en" in argv else None)


def test_values_are_the_types_the_bodies_use():
    _, values = fast_path.parse(READ_BY_BOTH[2])
    assert values == {"profile": Path(EXAMPLE), "top": 7, "model": None, "kind": None, "fmt": "markdown",
                      "explain": True, "output": None, "force": False, "db": Path("/tmp/x.db"), "executor": "auto",
                      "scheduler": None, "lang": None}
    assert fast_path.parse(READ_BY_BOTH[14])[1]["query"] == ["flash", "attention", "--literal"]


@pytest.mark.parametrize("argv", USAGE_ERRORS + READ_BY_TYPER_ONLY)
def test_anything_else_is_left_to_typer(argv, capsys):
    assert fast_path.parse(argv) is None
    assert fast_path.run(argv) is None
    assert capsys.readouterr() == ("", "")


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


@pytest.mark.parametrize("argv", [
    ["suggest", "--profile", EXAMPLE], ["suggest", "-p", EXAMPLE, "--format", "json", "--top", "2"],
    ["suggest", "-p", EXAMPLE, "--format", "markdown", "--explain"], ["suggest", "-p", EXAMPLE, "--kind", "case"],
    ["suggest", "-p", "/no/such/profile"],
    ["profile", EXAMPLE], ["profile", EXAMPLE, "--format", "json", "--top", "3"], ["profile", "/no/such/profile"],
    ["show", "nms-on-npu"], ["show", "nms-on-npu", "--format", "json"], ["show", "nms-on-nup"],
    ["search", "nms", "--format", "json"], ["search", "nsm"], ["search", "flash", "attention", "--top", "3"],
    ["search", 'AND ("'], ["search", "zebra", "--kind", "tip"], ["search", "x", "--operator", "Frobnicate"],
    ["search", "matmul", "--operator", "bmm", "--format", "json"],
    ["suggest", "-p", EXAMPLE, "--lang", "zh"], ["suggest", "-p", EXAMPLE, "--format", "csv"],
    ["profile", EXAMPLE, "--format", "csv", "--top", "4"], ["profile", EXAMPLE, "--lang", "zh"],
    ["show", "nms-on-npu", "--lang", "zh"], ["search", "nms", "--lang", "zh"], ["search", "非极大值抑制"],
])
def test_fast_path_prints_what_the_typer_command_prints(argv, runner, capsys):
    typer_result = runner.invoke(app, argv)
    assert typer_result.output  # something to compare
    code = fast_path.run(argv)
    fast_out, fast_err = capsys.readouterr()
    assert (code, fast_out, fast_err) == (typer_result.exit_code, typer_result.stdout, typer_result.stderr)


def test_debug_environment_leaves_the_command_to_typer(monkeypatch):
    monkeypatch.setenv("ADVISOR_DEBUG", "1")
    assert fast_path.run(["search", "nms"]) is None
    assert fast_path.run(["suggest", "--profile", EXAMPLE]) is None
