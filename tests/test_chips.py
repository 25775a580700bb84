"""The SoC table (FORMATS.md §15) and block dims judged when only a family name or a Mix launch says what ran."""

from __future__ import annotations

import pytest

from test_profile_builder import _profile

from opprof_advisor.readers.chips import FAMILIES, SOCS, core_counts_for, family_parts, fewest_cores, soc_spec


@pytest.mark.parametrize("soc, aic, aiv, freq", [
    ("Ascend910B1", 24, 48, 1850.0), ("Ascend910B2", 24, 48, 1800.0), ("Ascend910B3", 20, 40, 1800.0),
    ("Ascend910B4", 20, 40, 1500.0), ("Ascend910_9391", 24, 48, 1850.0), ("Ascend910_9362", 20, 40, 1500.0),
])
def test_every_part_of_the_platform_configs_has_its_cores_and_clock_with_a_source(soc, aic, aiv, freq):
    spec = soc_spec(soc)
    assert (spec.aic, spec.aiv, spec.freq_mhz) == (aic, aiv, freq)
    assert core_counts_for(soc) == {"aic": aic, "aiv": aiv}
    assert all(spec.sources.get(key) for key in ("cores", "freq_mhz"))
    assert spec.hbm_gbps is None or spec.sources.get("hbm_gbps")


def test_a_family_name_is_no_part_but_bounds_the_cores_from_below():
    assert soc_spec("Ascend910B") is None and core_counts_for("Ascend910_93") == {}
    assert set(family_parts("Ascend910B")) <= set(SOCS) and set(family_parts("Ascend910_93")) <= set(SOCS)
    assert fewest_cores(FAMILIES["Ascend910B"]) == {"aic": 20, "aiv": 40}


def _one_block_matmul(**raw):
    return _profile([{"op": "MatMulV2", "task": "AI_CORE", "dur": 900.0, "block": 1},
                     {"op": "Add", "task": "AI_VECTOR_CORE", "dur": 100.0, "block": 40}], **raw)


def test_one_block_on_a_family_chip_is_judged_against_its_fewest_cores():
    profile = _one_block_matmul(chip="Ascend910B")
    symptom = next(s for s in profile.symptoms if s.id == "low_parallelism")
    assert symptom.op_types == ["MatMulV2"]
    assert "chip at least 20 AIC / 40 AIV" in symptom.detail and "would save at least" in symptom.detail
    # one block of 20 cores: 19 of 20 slots idle for the kernel's time
    assert symptom.ceiling_us == pytest.approx(900.0 * 19 / 20)
    assert any(note.startswith("cannot judge the idle cores of each launch's last wave: Ascend910B names a family")
               for note in profile.notes)


def test_without_a_chip_or_a_mix_launch_the_block_dim_is_not_judged():
    profile = _one_block_matmul()
    assert "low_parallelism" not in profile.symptom_ids()
    assert any(note.startswith("cannot judge block dim against the core count") for note in profile.notes)
