"""Every command's table output fits an 80-column terminal without cutting a word or a number.

(A terminal: on a pipe nothing is wrapped at all, tests/test_plain_render.py.)

A cut shows as a piece of a word that the same output at 200 columns never prints (``NonMaxSuppress``
of ``NonMaxSuppressionV3``, ``1.1`` of ``1.15 ms``): each table cell's words at 80 columns must be
words of the 200-column output. Columns a narrow terminal leaves out are named on one note line;
at 200 columns nothing is left out.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from opprof_advisor.cli import output
from opprof_advisor.cli.app import app
from opprof_advisor.render.text.fit import Column, fitted_table, min_width, pieces, wrap_lines

EXAMPLES = "data/examples"
YOLO = f"{EXAMPLES}/yolov8_torch_npu"
COMMANDS = {
    "suggest": ["suggest", "--profile", YOLO],
    "suggest-kernel": ["suggest", "--profile", f"{EXAMPLES}/matmul_msopprof"],
    "profile": ["profile", YOLO],
    "profile-simulator": ["profile", f"{EXAMPLES}/matmul_msopprof"],
    "profile-msprof": ["profile", f"{EXAMPLES}/system_msprof"],
    "roofline": ["roofline", f"{EXAMPLES}/matmul_msopprof"],
    "compare": ["compare", YOLO, f"{EXAMPLES}/yolov8_torch_npu_nms_on_npu"],
    "search": ["search", "nms"],
    "show": ["show", "nms-on-npu"],
    "kb-list": ["kb", "list"],
    "kb-stats": ["kb", "stats"],
    "scan": ["scan", "tests/scan_fixture_repo"],
    "eval": ["eval", "data/bench"],
}
NOTE = "narrow terminal:"
# Lines the console wraps as prose (headers naming a long path, notes): Rich breaks them at spaces.
BORDERS = re.compile(r"[│┃║|]")


def run(args: list[str], columns: int) -> str:
    """What ``advisor ARGS`` prints on a terminal ``columns`` wide (without colours: TERM=dumb)."""
    saved = output.console.columns, output.console._lines, output.console._console
    # a console made for this size (Rich takes a dumb terminal for 80 x 25 unless both are given)
    output.console.columns, output.console._lines, output.console._console = columns, "50", None
    try:
        result = CliRunner(env={"COLUMNS": str(columns), "TERM": "dumb", "TTY_COMPATIBLE": "1"}).invoke(app, args)
    finally:
        output.console.columns, output.console._lines, output.console._console = saved
    assert result.exit_code == 0, result.output
    return result.stdout


def words(text: str) -> set[str]:
    return set(re.findall(r"[^\s→│┃║|━─┏┓┗┛┣┫┳┻╋╇╈┡┩┼├┤┬┴┌┐└┘╭╮╰╯═]+", text))


def code_breaks(whole_words: set[str]) -> set[str]:
    """The parts a long code token may be broken into (after ``( , . / =``): runs of its pieces."""
    out = set()
    for word in whole_words:
        bounds = [a for a, _b, _glued in pieces(word)] + [len(word)]
        out |= {word[bounds[i]:bounds[j]] for i in range(len(bounds)) for j in range(i + 1, len(bounds))}
    return out


def cell_words(text: str) -> set[str]:
    """The words inside table cells (lines with a column border)."""
    return {w for line in text.splitlines() if BORDERS.search(line) for w in words(line)}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_output_fits_80_columns_without_cutting_words(name):
    narrow, wide = run(COMMANDS[name], 80), run(COMMANDS[name], 200)
    too_long = [line for line in narrow.splitlines() if len(line) > 80]
    assert not too_long, too_long[:3]
    cut = cell_words(narrow) - words(wide) - code_breaks(words(wide))
    assert not cut, f"{name}: cut words at 80 columns: {sorted(cut)[:10]}"
    assert NOTE not in wide


def test_narrow_suggest_says_which_columns_it_left_out():
    narrow = run(COMMANDS["suggest"], 80)
    note = [line for line in narrow.splitlines() if NOTE in line]
    assert len(note) == 1 and "Evidence" in note[0], narrow
    assert "Evidence" not in narrow.split(NOTE)[0]  # the header is gone with its column
    assert "Evidence" in run(COMMANDS["suggest"], 200)


def test_narrow_profile_keeps_time_share_and_bound():
    narrow = run(COMMANDS["profile-simulator"], 80)
    header = next(line for line in narrow.splitlines() if "op type" in line)
    for column in ("time", "device %", "bound"):
        assert column in header
    assert "186 µs" in narrow and "100.0 %" in narrow and "mte2" in narrow


def test_a_number_keeps_its_unit_and_a_long_code_token_breaks_only_at_punctuation():
    assert ["21.9 %", "of", "the", "step"] == ["21.9 % of the step"[a:b] for a, b, _g in pieces("21.9 % of the step")]
    code = "`torch_npu.npu_batch_nms(boxes.half(),"
    assert [code[a:b] for a, b, _g in pieces(code)] == ["`torch_npu.", "npu_batch_nms(", "boxes.", "half(),"]
    assert min_width("per-block-imbalance (pattern)") == len("per-block-imbalance")  # an id stays whole
    line = "the rest: advisor show per-block-imbalance"
    assert [line[a:b] for a, b in wrap_lines(line, 24)] == ["the rest: advisor show", "per-block-imbalance"]


def test_columns_are_dropped_by_rank_and_reported():
    columns = [Column("name"), Column("time", "right", whole=True), Column("extra", drop=1),
               Column("detail", drop=2)]
    rows = [["a rather long name", "1.15 ms", "another long text cell", "yet another long cell"]]
    _table, dropped = fitted_table(columns, rows, 30, show_edge=False, pad_edge=False)
    assert dropped == ["detail"]
    _table, dropped = fitted_table(columns, rows, 200, show_edge=False, pad_edge=False)
    assert dropped == []
