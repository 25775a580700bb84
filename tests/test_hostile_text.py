"""Hostile text: escape sequences and Rich markup in KB entries, op names and file names never reach the terminal."""

from __future__ import annotations

import csv

import pytest

from hostile import Snapshot, advisor, advisor_here, assert_one_error_line, copy_example
from opprof_advisor.core.terminal import dumps_json, one_line, printable

#: Retitle the window, clear the screen, a C1 CSI, a bell: what a hostile string carries.
EVIL = "Evil\x1b]0;pwned\x07\x1b[2J\x9b6n"
CONTROLS = ("\x1b", "\x07", "\x9b")


def clean(text: str) -> bool:
    return not any(char in text for char in CONTROLS)


def entry_text(title: str, summary: str = "s", body_extra: str = "") -> str:
    return (f"---\nkind: tip\ntitle: {title!r}\nsummary: {summary!r}\nevidence: D\nsources: [https://example.com]\napplies_to: {{producer: [run]}}\n"
            f"---\n\n## When\n\nx {body_extra}\n\n## How\n\nx\n\n## Caveats\n\nx\n\n## Sources\n\n"
            "- https://example.com — x\n")


def test_printable_keeps_newline_and_tab_and_drops_every_other_control():
    assert printable("a\tb\nc" + EVIL) == "a\tb\ncEvil]0;pwned[2J6n"
    assert one_line("dir\nname\x1b") == "dir\\nname\\x1b"
    assert dumps_json({"k": "\x9b\x1b"}) == '{\n  "k": "\\u009b\\u001b"\n}'


@pytest.fixture
def hostile_entry(tmp_path):
    source = tmp_path / "esc.md"
    source.write_text(entry_text(f"Probe {EVIL}", summary="Read [link=https://evil.example/x]the guide[/link]",
                                 body_extra="[docs](https://evil.example/y)"), encoding="utf-8")
    added = advisor("add", source)
    assert added.code == 0, added.stderr
    return source


@pytest.mark.parametrize("args", [
    ("kb", "list"), ("search", "probe"), ("search", "probe", "--kind", "tip"), ("show", "esc"),
    ("search", "probe", "--format", "json"),
])
def test_kb_text_is_printed_without_control_characters(hostile_entry, args):
    run = advisor(*args)
    assert run.code == 0, run.stderr
    assert "Probe Evil]0;pwned[2J6n" in run.stdout or "Probe Evil" in run.stdout
    assert clean(run.stdout) and clean(run.stderr)


def test_show_prints_markup_and_links_as_written(hostile_entry):
    run = advisor("show", "esc")
    assert "Read [link=https://evil.example/x]the guide[/link]" in run.stdout  # not a hidden hyperlink
    assert "https://evil.example/y" in run.stdout  # a body link shows its address
    assert "\x1b]8;" not in run.stdout


@pytest.fixture
def evil_profile(tmp_path):
    profile = copy_example("yolov8_torch_npu", tmp_path / "run_ascend_pt")
    path = profile / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    rows = list(csv.reader(path.open(encoding="utf-8")))
    rows[1][rows[0].index("Type")] = EVIL
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    return profile


@pytest.mark.parametrize("command", ["profile", "compare", "suggest-markdown", "suggest"])
def test_op_names_from_a_profile_are_printed_without_control_characters(evil_profile, command):
    from conftest import ROOT

    args = {
        "profile": ("profile", evil_profile, "--top", "200"),
        "compare": ("compare", evil_profile, ROOT / "data" / "examples" / "yolov8_torch_npu"),
        "suggest-markdown": ("suggest", "--profile", evil_profile, "--format", "markdown"),
        "suggest": ("suggest", "--profile", evil_profile),
    }[command]
    snapshot = Snapshot(evil_profile)
    run = advisor_here(*args)
    assert run.code == 0, run.stderr
    if command in ("profile", "compare"):
        assert "Evil]0;pwned" in run.stdout
    assert clean(run.stdout) and clean(run.stderr)
    assert snapshot.changes() == {}


def test_scanned_file_names_are_printed_without_control_characters(tmp_path):
    tree = tmp_path / "model"
    tree.mkdir()
    (tree / f"{EVIL}.py").write_text("import torch\nx = torch.nonzero(y)\n", encoding="utf-8")
    for extra in ((), ("--format", "markdown")):
        run = advisor_here("scan", tree, "--top", "0", *extra)
        assert run.code == 0, run.stderr
        assert "Evil]0;pwned" in run.stdout and clean(run.stdout)


def test_an_error_about_a_path_with_a_newline_stays_on_one_line(tmp_path):
    folder = tmp_path / "empty\nfolder\x1b[2J"
    folder.mkdir()
    line = assert_one_error_line(advisor("profile", folder), "empty\\nfolder\\x1b[2J", "empty folder")
    assert clean(line)


def test_kb_check_problems_stay_one_line_per_problem(tmp_path):
    bad = tmp_path / f"bad{EVIL}\nname.md"
    bad.write_text("no front matter\n", encoding="utf-8")
    run = advisor("kb", "check", bad)
    assert run.code == 1
    assert len(run.stdout.splitlines()) == 1 and clean(run.stdout)
    assert "no front matter" in run.stdout


def test_an_html_report_holds_no_control_characters(evil_profile, tmp_path):
    report = tmp_path / "report.html"
    run = advisor_here("profile", evil_profile, "--top", "200", "--format", "html", "--output", report)
    assert run.code == 0, run.stderr
    text = report.read_text(encoding="utf-8")
    assert "Evil]0;pwned[2J" in text and clean(text)


def test_rank_folder_names_are_printed_as_written(tmp_path):
    parent = tmp_path / "ranks"
    for name in ("[red]a_ascend_pt", "[bold]b_ascend_pt"):
        copy_example("yolov8_torch_npu", parent / name)
    run = advisor_here("profile", parent)
    assert run.code == 0, run.stderr
    cells = [line.split()[0] for line in run.stdout.splitlines() if line.strip()]
    table = [cell for cell in cells if cell.endswith("_ascend_pt")]
    assert table == ["[bold]b_ascend_pt", "[red]a_ascend_pt"]
