"""A published figure is a profile's expected gain only where its scope fits (../shared/GAIN-MODELS.md): measured
on the chip the profile ran on; a remedy written for another chip comes after every one that fits.

The profile: a custom MatMul kernel limited by MTE2 loads under msprof op on an Ascend910B3 (an Atlas A2 part),
612 µs; its model says 188-249 µs can be saved. The entries are made here, so that only the chips differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from opprof_advisor.advice.suggest import advise
from opprof_advisor.core.models import Entry, Gain
from opprof_advisor.profiles import read_profile

ROOT = Path(__file__).resolve().parents[1]
PROFILE = next((ROOT / "data/bench/kernel-matmul-mte2").glob("OPPROF_*"))
SOURCE = "https://example.org/sample"


def remedy(entry_id: str, *, hardware=(), gain_hardware=(), pct=(10.0, 10.0)) -> Entry:
    return Entry(id=entry_id, kind="recipe", title=f"{entry_id}: load less, load larger", summary="MTE2-bound MatMul",
                 operators=["MatMul"], symptoms=["mte2_bound"], tags=["mte2"], hardware=list(hardware),
                 gain=Gain(pct[0], pct[1], "kernel_time", "operators", SOURCE, ["MatMul"], False, list(gain_hardware)),
                 evidence="A", sources=[SOURCE], requires=[{"symptom": ["mte2_bound"]}],
                 applies_to={"producer": ["kernel"]}, body="## Steps\n\n1. Load larger blocks.\n")


@pytest.fixture(scope="module")
def profile():
    return read_profile(PROFILE)


def first_row(profile, *entries: Entry) -> dict:
    rows = advise(profile, list(entries), top=3)["suggestions"]
    assert rows and rows[0]["id"] == "pipe-mte2_bound"
    return rows[0]


def test_the_profile_ran_on_an_atlas_a2_part_and_its_model_gives_188_to_249_us(profile):
    assert profile.chip == "Ascend910B3"
    row = first_row(profile, remedy("no-figure-here", pct=(10.0, 10.0), gain_hardware=["Ascend950"]))
    assert row["expected_gain"]["model"] == "model"
    assert (round(row["expected_gain"]["low_us"]), round(row["expected_gain"]["high_us"])) == (188, 249)


def test_a_figure_measured_on_the_profile_s_chip_is_its_expected_gain(profile):
    row = first_row(profile, remedy("measured-on-a2", gain_hardware=["Atlas A2"]))
    assert row["expected_gain"]["model"] == "sourced"
    assert round(row["expected_gain"]["low_us"], 1) == round(row["expected_gain"]["high_us"], 1) == 61.2  # 10 %


def test_a_figure_measured_on_another_chip_leaves_the_model_in_place(profile):
    # a 2 % figure from an Ascend 950 sample would hide a finding worth 31-41 % on this A2 part
    row = first_row(profile, remedy("measured-on-950", pct=(2.29, 2.29), gain_hardware=["Ascend950"]))
    assert row["expected_gain"]["model"] == "model" and round(row["expected_gain"]["high_us"]) == 249


def test_an_entry_written_for_another_chip_lends_no_figure_and_comes_after_one_that_fits(profile):
    other = remedy("aa-for-950", hardware=["Ascend950"], pct=(2.29, 2.29))  # (first by id, were chips ignored)
    fits = remedy("zz-for-a2", hardware=["Atlas A2"], pct=(20.0, 20.0))
    row = first_row(profile, other, fits)
    assert [r["id"] for r in row["remedies"]] == ["zz-for-a2", "aa-for-950"]
    assert row["expected_gain"]["model"] == "sourced" and round(row["expected_gain"]["high_us"], 1) == 122.4
    alone = first_row(profile, other)
    assert alone["remedies"][0]["id"] == "aa-for-950" and alone["expected_gain"]["model"] == "model"
