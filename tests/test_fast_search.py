"""The Typer-free `advisor search` path: what it accepts, and that it prints what the Typer command prints."""

from __future__ import annotations

import pytest

from opprof_advisor.cli import fast_search
from opprof_advisor.cli.app import app


@pytest.mark.parametrize("argv", [
    [], ["show", "x"], ["search"], ["search", "--help"], ["search", "nms", "-h"], ["search", "nms", "--debug"],
    ["search", "nms", "--format", "yaml"], ["search", "nms", "--kind", "howto"], ["search", "nms", "--top", "0"],
    ["search", "nms", "--top", "many"], ["search", "nms", "--top"], ["search", "nms", "--colour", "red"],
])
def test_anything_but_a_plain_search_is_left_to_typer(argv, capsys):
    assert fast_search.parse_search_args(argv) is None
    assert fast_search.run(argv) is None
    assert capsys.readouterr() == ("", "")


def test_options_are_parsed_like_the_typer_command():
    options = fast_search.parse_search_args(
        ["search", "flash", "--kind=recipe", "--operator", "FlashAttentionScore", "attention", "-n", "3", "-f", "json",
         "--db", "/tmp/x.db", "--", "--literal"])
    assert options == {"words": ["flash", "attention", "--literal"], "kind": "recipe",
                       "operator": "FlashAttentionScore", "top": 3, "format": "json", "db": "/tmp/x.db",
                       "lang": None}


@pytest.mark.parametrize("argv", [
    ["search", "nms", "--format", "json"], ["search", "nsm"], ["search", "flash", "attention", "--top", "3"],
    ["search", 'AND ("'], ["search", "zebra", "--kind", "tip"], ["search", "x", "--operator", "Frobnicate"],
    ["search", "matmul", "--operator", "bmm", "--format", "json"],
])
def test_fast_path_prints_what_the_typer_command_prints(argv, runner, capsys):
    typer_result = runner.invoke(app, argv)
    assert typer_result.output  # something to compare
    code = fast_search.run(argv)
    fast_out, fast_err = capsys.readouterr()
    assert (code, fast_out, fast_err) == (typer_result.exit_code, typer_result.stdout, typer_result.stderr)


def test_debug_environment_leaves_the_search_to_typer(monkeypatch):
    monkeypatch.setenv("ADVISOR_DEBUG", "1")
    assert fast_search.run(["search", "nms"]) is None
