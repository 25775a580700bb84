"""The README documents every command, and its set-up commands are the ones CI runs."""

from __future__ import annotations

import re

import typer.main

from conftest import ROOT
from opprof_advisor.cli.app import app

README = (ROOT / "README.md").read_text(encoding="utf-8")


def command_paths() -> list[str]:
    """Every command of the CLI as typed, e.g. 'suggest', 'kb check', 'outcomes export'."""
    group = typer.main.get_command(app)
    found = []
    for name, command in group.commands.items():
        subcommands = getattr(command, "commands", None)
        if subcommands:
            found += [f"{name} {sub}" for sub in subcommands]
        else:
            found.append(name)
    return sorted(found)


def test_the_cli_has_the_commands_the_issues_name():
    paths = command_paths()
    for expected in ("search", "show", "add", "kb check", "kb build", "kb list", "kb stats", "profile",
                     "suggest", "eval", "collect", "compare", "scan"):
        assert expected in paths


def test_every_command_appears_in_the_readme_with_an_example():
    missing = [path for path in command_paths() if f"advisor {path}" not in README]
    assert missing == []


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = re.search(r"^# 2\..*\n(.+)$", README, re.M).group(1).strip()
    assert "pytest" in test_command and "pip install" in test_command
    assert test_command in ci


def test_the_readme_main_command_runs_on_a_bundled_example():
    main_command = re.search(r"^# 1\..*\n(.+)$", README, re.M).group(1)
    example = re.search(r"advisor suggest (\S+)", main_command).group(1)
    assert (ROOT / example).is_dir()


def test_the_folder_of_ranks_options_are_documented():
    cluster = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")  # the README links it
    for option in ("--executor auto|serial|processes|dask", "--scheduler ADDRESS", "opprof-advisor[cluster]",
                   "benchmarks/bench_cluster.py"):
        assert option in cluster
