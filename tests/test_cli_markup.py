"""Text from paths, profiles and KB files is printed as text, never interpreted as Rich markup."""

from __future__ import annotations

import shutil

from conftest import ROOT
from opprof_advisor.cli.app import app

EXAMPLE = ROOT / "data" / "examples" / "yolov8_torch_npu"


def test_paths_with_brackets_are_printed_verbatim(runner, tmp_path):
    before = tmp_path / "run[x]"
    after = tmp_path / "[/bold]after"  # would be a markup error if interpreted
    shutil.copytree(EXAMPLE, before)
    shutil.copytree(EXAMPLE, after)
    for args in (["suggest", "--profile", str(before)], ["profile", str(before)], ["compare", str(before), str(after)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
        assert "run[x]" in result.stdout.replace("\n", "")
    compared = runner.invoke(app, ["compare", str(before), str(after)])
    assert "[/bold]after" in compared.stdout.replace("\n", "")


def test_a_kb_title_with_brackets_is_listed_verbatim(runner, tmp_path):
    entry = tmp_path / "bracket-tip.md"
    entry.write_text(
        "---\nkind: tip\ntitle: \"Set [red]HCCL_BUFFSIZE[/red] per group\"\nsummary: A title with brackets.\n"
        "evidence: C\nsources: [\"https://example.org/doc\"]\napplies_to: {producer: [run]}\n---\n\n## When\n\nAlways.\n\n## How\n\nSo.\n\n"
        "## Caveats\n\nNone.\n\n## Sources\n\n- https://example.org/doc — the page.\n",
        encoding="utf-8")
    added = runner.invoke(app, ["add", str(entry)])
    assert added.exit_code == 0, added.output
    listed = runner.invoke(app, ["search", "bracket", "HCCL_BUFFSIZE"])
    assert "Set [red]HCCL_BUFFSIZE[/red] per group" in listed.stdout.replace("\n", "")
