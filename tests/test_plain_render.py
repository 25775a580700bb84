"""Piped output (render/plain.py): every line whole, no box drawing, one block per finding, the same in any terminal.

On a terminal Rich lays the renderers' tables out to its width; on a pipe or a file nothing is wrapped or
cut (a path, a first step in code, an id), so `advisor suggest | less` or `| grep` see whole lines.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from opprof_advisor.cli import output
from opprof_advisor.cli.app import app
from opprof_advisor.render.console import safe_console
from opprof_advisor.render.plain import cell_len, pipe_lines, single_cells
from opprof_advisor.render.text.fit import Column, _measured_overhead, _table_overhead, fitted_table
from opprof_advisor.render.text.styled import Text, rich_item

EXAMPLES = "data/examples"
BOX = set("┏┓┗┛┃━┡┩╇┳│─├┤┼└┘┴")


def piped(args, monkeypatch, columns: str) -> str:
    """What ``advisor ARGS`` writes to a pipe with $COLUMNS set to ``columns``."""
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(output, "console", output.LazyConsole(highlight=False, soft_wrap=False))
    stream = io.StringIO()
    with contextlib.redirect_stdout(stream):
        try:
            app(list(args))
        except SystemExit as exc:
            assert not exc.code
    return stream.getvalue()


@pytest.mark.parametrize("args", [["suggest", f"{EXAMPLES}/yolov8_torch_npu"], ["search", "nms"],
                                  ["profile", f"{EXAMPLES}/system_msprof"], ["show", "nms-on-npu"],
                                  ["suggest", f"{EXAMPLES}/matmul_msopprof", "--lang", "zh"], ["kb", "list"]])
def test_a_piped_command_prints_whole_lines_without_box_drawing_in_any_terminal(args, monkeypatch):
    wide = piped(args, monkeypatch, "200")
    assert piped(args, monkeypatch, "40") == wide == piped(args, monkeypatch, "")
    assert not BOX & set(wide)
    assert "narrow terminal" not in wide and "…" not in wide
    assert wide.count("\n") > 5


def test_a_piped_suggest_is_one_block_per_finding_with_its_first_step_whole(monkeypatch):
    text = piped(["suggest", f"{EXAMPLES}/yolov8_torch_npu"], monkeypatch, "80")
    lines = text.splitlines()
    first = lines.index("1  The AI CPU runs NonMaxSuppressionV3: 1.15 ms (21.9 % of the step)")
    block = lines[first:lines.index("", first)]
    assert block[1] == ("   → Run NMS (non-maximum suppression) on the NPU instead of the CPU / AI CPU "
                        "(nms-on-npu, recipe)")
    assert block[2].startswith("   1. Replace the per-image NMS call with one batched NPU call, "
                               "`torch_npu.npu_batch_nms(boxes.half(), scores.half(), score_threshold,")
    assert block[-3:] == ["   At stake: 1.15 ms · 21.9 % of the step",
                          "   Expected gain: 10.9–19.7 % · 575 µs – 1.03 ms · model",
                          "   Evidence: NonMaxSuppressionV3 21.9 % of the step (1.15 ms) · symptoms: aicpu_fallback, nms_cpu"
                          " · confidence: high"]
    assert lines[lines.index("", first) + 1].startswith("2  104 kernels under 20 µs take 758 µs")
    # the header line keeps the whole path (a terminal would fold it)
    assert lines[0].startswith(f"{EXAMPLES}/yolov8_torch_npu/localhost.localdomain_279887_20250109074803704_ascend_pt ")


def test_a_table_of_one_line_cells_is_aligned_columns_under_its_title():
    table, dropped = fitted_table((Column("op type"), Column("time", justify="right")),
                                  [(Text("MatMulV2"), Text("3.31 ms")), (Text("Add"), Text("136 µs"))],
                                  output.PIPE_WIDTH, title="top operators")
    assert dropped == []
    assert pipe_lines(table) == ["top operators", "op type      time", "MatMulV2  3.31 ms", "Add        136 µs"]
    assert pipe_lines(Text("a line\nanother")) == ["a line", "another"]
    assert pipe_lines("not ours") is None


def rich_bytes(item, width: int) -> str:
    """What the CLI's Rich console writes for ``item`` ``width`` columns wide."""
    stream = io.StringIO()
    safe_console(highlight=False, soft_wrap=False, file=stream, width=width).print(rich_item(item))
    return stream.getvalue()

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
