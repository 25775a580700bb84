"""One rule for the numbers of every format: times in µs/ms/s with three digits, one percent rule, counts."""

from __future__ import annotations

import pytest

from opprof_advisor.core.units import HTML, NBSP, TEXT


@pytest.mark.parametrize("us, text", [
    (0, "0 µs"), (4.25, "4.25 µs"), (52.04, "52.0 µs"), (850, "850 µs"), (999.7, "1.00 ms"), (4_869.1, "4.87 ms"),
    (8_685, "8.69 ms"), (48_250, "48.2 ms"), (123_456, "123 ms"), (1_500_000, "1.50 s"), (7_200_000_000, "7,200 s"),
    (None, "—"), (float("nan"), "—"), ("x", "—"),
])
def test_a_time_has_three_digits_in_the_unit_that_keeps_it_above_one(us, text):
    assert TEXT.time(us) == text
    assert HTML.time(us) == text.replace(" ", NBSP)


def test_no_format_writes_us_for_microseconds():
    assert "us" not in TEXT.time(12.5) and TEXT.time(12.5).endswith("µs")


@pytest.mark.parametrize("low, high, text", [
    (5_211.0, 7_816.5, "5.21–7.82 ms"), (850, 1_200, "850 µs – 1.20 ms"), (160.0, 160.04, "160 µs"),
])
def test_a_time_range_names_its_unit_once(low, high, text):
    assert TEXT.time_range(low, high) == text


def test_percentages_and_shares_have_one_decimal_and_one_rule_for_tiny_and_signed_values():
    assert TEXT.share(0.219) == TEXT.pct(21.9) == "21.9 %"
    assert TEXT.share(0.0004) == "<0.1 %" and TEXT.share(0) == "0.0 %"
    assert TEXT.pct(-15.02, signed=True) == "-15.0 %" and HTML.pct(-15.02, signed=True) == f"−15.0{NBSP}%"
    assert TEXT.pct(3.41, signed=True) == "+3.4 %"
    assert TEXT.pct_range(4.5, 6.3) == "4.5–6.3 %" and TEXT.pct_range(6.3, 6.31) == "6.3 %"
    assert TEXT.share_range(0.3, 0.45) == "30.0–45.0 %"
    assert TEXT.pct(float("nan")) == "—"


def test_a_quoted_figure_keeps_the_digits_of_its_source_and_counts_have_separators():
    assert TEXT.quoted_pct(30, 50) == "30–50 %" and TEXT.quoted_pct(12.5, 12.5) == "12.5 %"
    assert TEXT.count(1234) == "1,234" and TEXT.number(1234.56, 1) == "1,234.6" and TEXT.number(None) == ""


def test_one_device_time_prints_the_same_in_every_command_and_format(runner, tmp_path):
    import json
    from pathlib import Path

    from opprof_advisor.cli.app import app

    example = str(Path(__file__).resolve().parent.parent / "data" / "examples" / "yolov8_torch_npu")
    db = str(tmp_path / "advisor.db")

    def run(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.stdout

    device_us = json.loads(run("profile", example, "--format", "json"))["device_time_us"]
    shown = TEXT.time(device_us)
    assert shown == "4.87 ms"  # 4,869.1 µs: never "4.9 ms", "4.869 ms" or "4,869.1 us"
    assert f"device time {shown} = compute" in run("profile", example)
    assert f"device time {shown}, step" in run("suggest", "--profile", example, "--db", db)
    assert f"device time {shown}." in run("suggest", "--profile", example, "--db", db, "--format", "markdown")
    assert f"device time: {shown} -> " in run("compare", example, example)
    for command in (["profile", example], ["suggest", "--profile", example, "--db", db]):
        page = tmp_path / f"{command[0]}.html"
        run(*command, "--format", "html", "--output", str(page))
        assert HTML.time(device_us) in page.read_text(encoding="utf-8")
