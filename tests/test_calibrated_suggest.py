"""`advisor suggest` after `advisor compare --applied`: the recorded outcome calibrates the gain."""

from __future__ import annotations

import json

import pytest

import loop_examples
from opprof_advisor.cli.app import app


def _nms_suggestion(runner, profile):
    result = runner.invoke(app, ["suggest", "--profile", str(profile), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    [nms] = [s for s in doc["suggestions"] if s["remedies"] and s["remedies"][0]["id"] == "nms-on-npu"]
    return nms, doc["notes"]


def test_a_recorded_outcome_changes_the_expected_gain_of_its_recipe(runner, tmp_path):
    before, after = loop_examples.write_pair(tmp_path)
    plain, notes = _nms_suggestion(runner, before)
    share = plain["evidence"][0]["share"]
    # The KB's NMS figure is the design card's end-to-end estimate, not an operator-scope range: the finding's
    # own model (an AI Core kernel saves 50-90 % of the AI CPU time) gives the gain until an outcome exists.
    assert plain["expected_gain"]["model"] == "model"
    assert plain["expected_gain"]["high_pct"] == pytest.approx(90 * share, abs=1e-3)
    assert not any("observed 1 time" in n for n in notes if n.startswith("nms-on-npu"))

    recorded = runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-npu"])
    assert recorded.exit_code == 0, recorded.output
    nms_old = loop_examples.nms_before_us()
    saved = (nms_old - loop_examples.NMS_AFTER_US) / nms_old * 100  # measured on the NMS kernels

    calibrated, notes = _nms_suggestion(runner, before)
    # Without an operator-scope KB range the recorded outcome is the whole basis (weight 1): measured wins.
    assert calibrated["expected_gain"]["model"] == "measured"
    assert calibrated["expected_gain"]["low_pct"] == pytest.approx(saved * share, abs=1e-3)
    assert calibrated["expected_gain"]["high_pct"] == pytest.approx(saved * share, abs=1e-3)
    assert calibrated["expected_gain"]["high_pct"] <= share * 100  # still Amdahl-bounded
    assert "observed 1 time" in calibrated["expected_gain"]["basis"]
    assert f"nms-on-npu: observed 1 time: median {saved:.0f} % (range {saved:.0f}–{saved:.0f} %) in your recorded outcomes" in notes
