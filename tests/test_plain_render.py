"""Tables and lines printed without Rich (render/plain.py) are the bytes Rich prints, or Rich prints them.

On a pipe or a file the CLI writes the renderers' styled Text and Table itself; every rendering of
the bundled examples' documents (suggest, profile, roofline, compare, search, kb list, scan), at
widths from 30 to 200 columns and in English and Chinese, must be what the Rich console of the CLI
writes for the same item — and most of them must be rendered plainly, or the fast path is not used.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from typer.testing import CliRunner

from opprof_advisor.cli import output
from opprof_advisor.cli.app import app
from opprof_advisor.cli.app import app
from opprof_advisor.core.i18n import set_lang
from opprof_advisor.render import render
from opprof_advisor.render.console import safe_console
from opprof_advisor.render.plain import cell_len, plain_lines, single_cells
from opprof_advisor.render.text.fit import Column, _measured_overhead, _table_overhead, fitted_table
from opprof_advisor.render.text.styled import Table, Text, rich_item

EXAMPLES = "data/examples"
DOCUMENTS = {
    **{f"suggest-{name}": ["suggest", "--profile", f"{EXAMPLES}/{name}"]
       for name in ("yolov8_torch_npu", "yolov8_torch_npu_nms_on_npu", "matmul_msopprof", "system_msprof")},
    "suggest-explain": ["suggest", "--profile", f"{EXAMPLES}/system_msprof", "--explain", "--top", "8"],
    **{f"profile-{name}": ["profile", f"{EXAMPLES}/{name}"]
       for name in ("yolov8_torch_npu", "yolov8_torch_npu_db", "matmul_msopprof", "system_msprof")},
    "roofline": ["roofline", f"{EXAMPLES}/matmul_msopprof"],
    "compare": ["compare", f"{EXAMPLES}/yolov8_torch_npu", f"{EXAMPLES}/yolov8_torch_npu_nms_on_npu"],
    "search-nms": ["search", "nms"],
    "search-misspelt": ["search", "nsm"],
    "search-zh": ["search", "非极大值抑制"],
    "search-none": ["search", "zzzqqq"],
    "kb-list": ["kb", "list"],
    "scan": ["scan", "tests/scan_fixture_repo"],
}
WIDTHS = (30, 50, 64, 80, 120, 200)


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    """The JSON document of each command above (one home for all, the index built once)."""
    home = tmp_path_factory.mktemp("plain-home")
    runner = CliRunner(env={"COLUMNS": "200", "ADVISOR_HOME": str(home)})
    out = {}
    for name, args in DOCUMENTS.items():
        result = runner.invoke(app, [*args, "--format", "json"])
        assert result.exit_code == 0, result.output
        out[name] = json.loads(result.stdout)
    return out


def rich_bytes(item, width: int) -> str:
    """What the CLI's Rich console writes for ``item`` on a non-terminal ``width`` columns wide."""
    stream = io.StringIO()
    safe_console(highlight=False, soft_wrap=False, file=stream, width=width).print(rich_item(item))
    return stream.getvalue()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_plain_rendering_is_what_rich_prints(documents, lang):
    set_lang(lang)
    plain = compared = 0
    for name, document in documents.items():
        for width in WIDTHS:
            for number, item in enumerate(render(document, "table", width=width)):
                if isinstance(item, str):
                    continue
                compared += 1
                lines = plain_lines(item, width)
                if lines is None:
                    continue
                plain += 1
                assert "".join(line + "\n" for line in lines) == rich_bytes(item, width), (name, width, number)
    assert compared > 500
    # Chinese lines longer than the width fold between characters, which is left to Rich's grapheme rules
    assert plain / compared > {"en": 0.95, "zh": 0.8}[lang], f"only {plain} of {compared} items rendered without Rich"


@pytest.mark.parametrize("args", [["suggest", "--profile", f"{EXAMPLES}/yolov8_torch_npu"], ["search", "nms"],
                                  ["profile", f"{EXAMPLES}/system_msprof"], ["show", "nms-on-npu"],
                                  ["suggest", "--profile", f"{EXAMPLES}/matmul_msopprof", "--lang", "zh"]])
@pytest.mark.parametrize("columns", ["200", "80", "47"])
def test_a_piped_command_prints_what_rich_would(args, columns, monkeypatch):
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(output, "console", output.LazyConsole(highlight=False, soft_wrap=False))

    def stdout_of() -> str:
        stream = io.StringIO()
        with contextlib.redirect_stdout(stream):
            try:
                app(list(args))
            except SystemExit as exc:
                assert not exc.code
        return stream.getvalue()

    plain = stdout_of()
    monkeypatch.setattr(output, "prints_plain", lambda stream: False)
    assert plain == stdout_of()
    assert plain.count("\n") > 5


def test_what_needs_rich_is_left_to_rich():
    assert plain_lines(Text("a \x1b[31mred\x1b[0m word"), 80) is None  # the safe console's cleaning: Rich's
    assert plain_lines(Text("a\ttab"), 80) is None
    table, _dropped = fitted_table((Column("a"), Column("b")), [("x", "y")], 80, title="t")
    assert plain_lines(table, 80) is None
    assert rich_bytes(table, 80).splitlines()[0].strip() == "t"
    assert plain_lines("not ours", 80) is None
    markup = Table(box=None)  # a str cell is markup to Rich ("[b]x[/b]" prints "x"): ours are Text only
    markup.add_column(Text("h"), no_wrap=True, width=9)
    markup.add_row("[b]x[/b]")
    assert plain_lines(markup, 80) is None


def test_text_keeps_what_rich_text_keeps():
    from rich.text import Text as RichText

    ours = Text.assemble(("bold\rpart", "bold"), " tail", Text("x", style="dim"))
    ours.append("\nmore", style="red")
    theirs = RichText.assemble(("bold\rpart", "bold"), " tail", RichText("x", style="dim"))
    theirs.append("\nmore", style="red")
    assert ours.to_rich().plain == theirs.plain
    assert ours.to_rich().spans == theirs.spans
    for a, b in zip(ours.split("\n", allow_blank=True), theirs.split("\n", allow_blank=True)):
        assert (a.plain, a.to_rich().spans) == (b.plain, b.spans)
    joined, rich_joined = Text("\n").join([ours[2:9], ours[0:3]]), RichText("\n").join([theirs[2:9], theirs[0:3]])
    assert (joined.plain, joined.to_rich().spans) == (rich_joined.plain, rich_joined.spans)


@pytest.mark.parametrize("options", [{}, {"show_lines": True}, {"box": None, "pad_edge": False},
                                     {"show_edge": False, "pad_edge": False}, {"title": "t", "title_justify": "left"}])
def test_table_overhead_is_what_rich_measures(options):
    for columns in range(1, 10):
        assert _table_overhead(options, columns) == _measured_overhead(options, columns)


def test_the_single_cell_characters_are_single_cells_in_every_unicode_table():
    from rich._unicode_data import VERSIONS
    from rich.cells import cell_len as rich_cell_len

    characters = "".join(chr(code) for code in range(0x20, 0x2900) if single_cells(chr(code)))
    assert "µ" in characters and "→" in characters and "—" in characters and "中" not in characters
    for version in VERSIONS:
        assert all(rich_cell_len(char, version) == 1 for char in characters), version
    assert cell_len("中文 µs") == rich_cell_len("中文 µs") == 7


def test_a_table_wider_than_the_console_goes_to_rich():
    table = Table(box=None)
    table.add_column(Text("h"), no_wrap=True, width=50)
    table.add_row(Text("x"))
    assert plain_lines(table, 40) is None
    lines = [" " + "h".ljust(50) + " ", " " + "x".ljust(50) + " "]
    assert plain_lines(table, 60) == lines
    assert rich_bytes(table, 60) == "".join(line + "\n" for line in lines)
