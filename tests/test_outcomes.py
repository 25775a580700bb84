"""Outcomes: building them from a comparison, the calibration rule, export, storage and the CLI."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

import loop_examples
from opprof_advisor.cli.app import app
from opprof_advisor.loop.compare import compare_profiles
from opprof_advisor.core.models import Entry, Gain, OpTypeStat, Profile, Symptom
from opprof_advisor.profiles import read_profile
from opprof_advisor.advice import outcomes_store
from opprof_advisor.advice.gains import PRIOR_WEIGHT, calibrate, observed_text
from opprof_advisor.advice.outcomes import (
    Outcome,
    OutcomeRefused,
    build_outcome,
    matched_families,
    outcomes_to_json,
)
from opprof_advisor.render.markdown import outcomes_markdown

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=timezone.utc)


def make_profile(rows, *, symptoms=(), chip=None, cann=None, path="p") -> Profile:
    total = sum(row[3] for row in rows)
    stats = [OpTypeStat(op_type=op, family=fam, unit=unit, count=1, time_us=t, share=t / total)
             for op, fam, unit, t in rows]
    return Profile(path=path, format="torch-npu-text", chip=chip, versions={"cann": cann} if cann else {},
                   device_time_us=total, op_types=stats, symptoms=list(symptoms))


BEFORE = [("Conv2D", "Conv2D", "ai_core", 6000.0), ("NonMaxSuppressionV3", "NMS", "ai_cpu", 3000.0),
          ("Add", "Elementwise", "ai_vector", 1000.0)]
AFTER = [("Conv2D", "Conv2D", "ai_core", 6000.0), ("BatchMultiClassNMS", "NMS", "ai_core", 450.0),
         ("Add", "Elementwise", "ai_vector", 1000.0)]


def nms_recipe(gain=Gain(25, 35, "op_time", "operators", "shared/seeds/000_4c1ddc5ccf4e4a40.txt")) -> Entry:
    return Entry(id="nms-on-npu", kind="recipe", title="Run NMS on the NPU", operators=["NMS"],
                 symptoms=["aicpu_fallback", "nms_cpu"], gain=gain)


def outcome(gain_pct, entry_id="nms-on-npu", e2e=None) -> Outcome:
    return Outcome(entry_id=entry_id, matched_families=["NMS"], matched_before_us=100.0,
                   matched_after_us=100.0 - gain_pct, matched_gain_pct=gain_pct, matched_share=0.3,
                   e2e_before_us=1000.0, e2e_after_us=1000.0, e2e_gain_pct=e2e, before_fingerprint="a",
                   after_fingerprint="b", recorded_at="2026-11-30T04:00:00+00:00")


# --------------------------------------------------------------------------------------------
# Building an outcome
# --------------------------------------------------------------------------------------------


def test_outcome_of_the_nms_recipe_measures_the_nms_time_and_end_to_end():
    before = make_profile(BEFORE, chip="Ascend910B3", cann="8.0.RC3", path="/runs/before")
    after = make_profile(AFTER, chip="Ascend910B3", cann="8.0.RC3", path="/runs/after")
    result = build_outcome(nms_recipe(), compare_profiles(before, after), note="torch_npu batched NMS", now=NOW)
    assert result.matched_families == ["NMS"]
    assert (result.matched_before_us, result.matched_after_us) == (3000.0, 450.0)
    assert result.matched_gain_pct == pytest.approx(85.0)  # (3000 - 450) / 3000
    assert result.matched_share == pytest.approx(0.3)
    assert (result.e2e_before_us, result.e2e_after_us) == (10000.0, 7450.0)
    assert result.e2e_gain_pct == pytest.approx(25.5)
    assert (result.chip, result.cann, result.note) == ("Ascend910B3", "8.0.RC3", "torch_npu batched NMS")
    assert result.recorded_at == "2026-11-30T04:00:00+00:00"
    assert result.before_fingerprint != result.after_fingerprint
    assert (result.before_path, result.after_path) == ("/runs/before", "/runs/after")


def test_an_outcome_measures_the_families_the_recommender_addresses_not_every_family_the_entry_names():
    from opprof_advisor.advice.recommend import suggest

    # The entry names NMS and Cast; only the NMS rows carry its symptom, so only they are at stake.
    nms_cpu = Symptom("nms_cpu", ["NonMaxSuppressionV3"], 0.3, "NMS on the AI CPU", time_us=3000.0)
    rows = [*BEFORE, ("Cast", "Cast", "ai_vector", 500.0)]
    before = make_profile(rows, symptoms=[nms_cpu])
    after = make_profile([*AFTER, ("Cast", "Cast", "ai_vector", 500.0)])
    entry = Entry(id="nms-and-cast", kind="recipe", title="NMS and its casts", operators=["NMS", "Cast"],
                  symptoms=["nms_cpu"], evidence="C", sources=["shared/seeds/000_4c1ddc5ccf4e4a40.txt"],
                  gain=Gain(25, 35, "op_time", "operators", "shared/seeds/000_4c1ddc5ccf4e4a40.txt"))
    (suggestion,) = suggest(before, [entry], top=1).suggestions
    assert [row.family for row in suggestion.rows] == ["NMS"]
    result = build_outcome(entry, compare_profiles(before, after), now=NOW)
    assert result.matched_families == ["NMS"]  # not Cast, which the recommender never put at stake
    assert (result.matched_before_us, result.matched_after_us) == (3000.0, 450.0)


def test_an_entry_without_operators_matches_through_its_symptoms():
    entry = Entry(id="aicpu-dtype-cast", kind="recipe", title="x", symptoms=["aicpu_fallback"])
    before = make_profile(BEFORE, symptoms=[Symptom("aicpu_fallback", ["NonMaxSuppressionV3"], 0.3, "")])
    assert matched_families(entry, before) == ["NMS"]
    unrelated = Entry(id="flash-attention", kind="recipe", title="x", operators=["FlashAttention"])
    result = build_outcome(unrelated, compare_profiles(before, make_profile(AFTER)), now=NOW)
    assert result.matched_families == [] and result.matched_gain_pct is None
    assert result.e2e_gain_pct == pytest.approx(25.5)  # end to end is still measured


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


def test_without_outcomes_the_kb_range_is_kept_and_scaled_by_the_share():
    cal = calibrate(nms_recipe(), [], matched_share=0.3)
    assert (cal.n, cal.weight, cal.text) == (0, 0.0, "")
    assert (cal.low_pct, cal.high_pct) == (25.0, 35.0)
    assert (cal.expected_low_pct, cal.expected_high_pct) == pytest.approx((7.5, 10.5))


def test_one_outcome_moves_the_range_a_quarter_of_the_way():
    assert PRIOR_WEIGHT == 3
    cal = calibrate(nms_recipe(), [outcome(87.0)], matched_share=0.3)
    assert cal.n == 1 and cal.weight == pytest.approx(0.25)
    assert cal.low_pct == pytest.approx(0.75 * 25 + 0.25 * 87)
    assert cal.high_pct == pytest.approx(0.75 * 35 + 0.25 * 87)
    assert cal.expected_high_pct == pytest.approx((0.75 * 35 + 0.25 * 87) * 0.3)
    assert cal.text == "observed 1 time: median 87 % (range 87–87 %)"


def test_three_outcomes_move_it_half_way_toward_the_observed_band():
    outs = [outcome(80.0, e2e=20.0), outcome(90.0, e2e=24.0), outcome(85.0, e2e=22.0)]
    cal = calibrate(nms_recipe(), outs, matched_share=0.3)
    assert (cal.n, cal.weight) == (3, 0.5)
    assert (cal.low_pct, cal.high_pct) == pytest.approx(((25 + 80) / 2, (35 + 90) / 2))
    assert (cal.median_pct, cal.min_pct, cal.max_pct, cal.median_e2e_pct) == (85.0, 80.0, 90.0, 22.0)
    assert cal.text == "observed 3 times: median 85 % (range 80–90 %)"
    assert "moved 50% toward the observed 3 times" in cal.basis


def test_many_outcomes_dominate_but_never_exceed_the_matched_share():
    outs = [outcome(100.0) for _ in range(30)]
    cal = calibrate(nms_recipe(), outs, matched_share=0.2)
    assert cal.weight == pytest.approx(30 / 33)
    assert cal.high_pct <= 100.0
    assert cal.expected_high_pct <= 20.0 + 1e-9  # gain <= the matched operators' share
    assert calibrate(nms_recipe(), outs, matched_share=1.7).expected_high_pct <= 100.0


def test_outcomes_of_other_entries_and_unmatched_outcomes_are_ignored():
    unmatched = Outcome.from_dict({**outcome(10.0).to_dict(), "matched_gain_pct": None})
    outs = [outcome(50.0, entry_id="conv2d-tuning"), unmatched]
    cal = calibrate(nms_recipe(), outs, matched_share=0.3)
    assert cal.n == 0 and (cal.low_pct, cal.high_pct) == (25.0, 35.0)


def test_an_entry_without_a_sourced_gain_takes_the_observed_band_alone():
    cal = calibrate(nms_recipe(gain=None), [outcome(40.0), outcome(60.0)], matched_share=0.5)
    assert (cal.low_pct, cal.high_pct, cal.weight) == (40.0, 60.0, 1.0)
    assert (cal.expected_low_pct, cal.expected_high_pct) == (20.0, 30.0)
    case = nms_recipe(gain=Gain(10, 20, "latency", "end_to_end", "x"))
    assert (calibrate(case, [outcome(40.0)], 0.5).low_pct, calibrate(case, [], 0.5).low_pct) == (40.0, None)


def test_a_regression_is_kept_negative():
    cal = calibrate(nms_recipe(gain=None), [outcome(-20.0), outcome(-10.0)], matched_share=0.5)
    assert (cal.low_pct, cal.high_pct) == (-20.0, -10.0)
    assert observed_text([-20.0, -10.0]) == "observed 2 times: median -15 % (range -20–-10 %)"


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def test_markdown_export_has_one_section_per_entry_with_the_observed_line():
    text = outcomes_markdown(outcomes_to_json([outcome(80.0, e2e=20.0), outcome(90.0),
                                               outcome(30.0, entry_id="conv2d-tuning")]))
    assert text.startswith("# Observed outcomes\n")
    assert text.index("## conv2d-tuning") < text.index("## nms-on-npu")
    assert "observed 2 times: median 85 % (range 80–90 %) of the matched operators' time." in text
    assert "| 2026-11-30 | NMS | 100 µs → 20.0 µs | 80.0 % | 1.00 ms → 1.00 ms | 20.0 % | - | - | - |" in text


def test_json_export_groups_outcomes_by_entry():
    doc = outcomes_to_json([outcome(80.0), outcome(90.0)])
    assert doc["schema"] == "opprof-advisor/outcomes/1"
    [entry] = doc["entries"]
    assert entry["id"] == "nms-on-npu"
    assert entry["observed"] == "observed 2 times: median 85 % (range 80–90 %)"
    assert [o["matched_gain_pct"] for o in entry["outcomes"]] == [80.0, 90.0]
    assert json.loads(json.dumps(doc)) == doc


# --------------------------------------------------------------------------------------------
# Storage (outcomes_store.record_outcome / list_outcomes: user data kept beside the index) and the CLI
# --------------------------------------------------------------------------------------------

@pytest.fixture
def yolo_runs(tmp_path):
    """The YOLOv8-like example (NMS on the AI CPU) and its variant with NMS on the AI Core."""
    return loop_examples.write_pair(tmp_path)


def _listed(runner, *args):
    result = runner.invoke(app, ["outcomes", "list", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return [o for entry in json.loads(result.stdout)["entries"] for o in entry["outcomes"]]


def test_compare_applied_records_the_outcome_and_it_survives_a_rebuild(runner, yolo_runs):
    before, after = yolo_runs
    result = runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-npu",
                                 "--note", "torch_npu batched NMS"])
    assert result.exit_code == 0, result.output
    nms_old = loop_examples.nms_before_us()
    saved = (nms_old - loop_examples.NMS_AFTER_US) / nms_old * 100
    total = loop_examples.total_us(loop_examples.yolo_specs())
    assert f"recorded outcome #1 of nms-on-npu: time saved on NMS {saved:.1f} %" in result.stderr
    [stored] = _listed(runner)
    assert stored["entry_id"] == "nms-on-npu" and stored["matched_families"] == ["NMS"]
    assert stored["matched_gain_pct"] == pytest.approx(saved, abs=0.01)
    assert stored["e2e_gain_pct"] == pytest.approx((nms_old - loop_examples.NMS_AFTER_US) / total * 100, abs=0.01)
    assert stored["note"] == "torch_npu batched NMS"
    rebuilt = runner.invoke(app, ["kb", "build", "--rebuild"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert _listed(runner) == [stored]
    markdown = runner.invoke(app, ["outcomes", "export", "--format", "markdown"])
    assert markdown.exit_code == 0
    assert f"observed 1 time: median {saved:.0f} % (range {saved:.0f}–{saved:.0f} %)" in markdown.stdout


def test_applied_with_an_unknown_id_suggests_and_stores_nothing(runner, yolo_runs):
    before, after = yolo_runs
    result = runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-nup"])
    assert result.exit_code == 1
    assert result.stderr.strip().startswith(
        "error: no knowledge-base entry with id 'nms-on-nup' — did you mean nms-on-npu")
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""  # failed before comparing anything
    assert _listed(runner) == []


def _record_many(args):
    db, worker, count = args
    from opprof_advisor.advice import outcomes_store

    for i in range(count):
        outcomes_store.record_outcome({"entry_id": "nms-on-npu", "recorded_at": "2026-11-30T04:00:00+00:00",
                                       "matched_families": ["NMS"], "matched_gain_pct": 80.0, "e2e_before_us": 1.0,
                                       "e2e_after_us": 1.0, "before_fingerprint": f"b{worker}-{i}",
                                       "after_fingerprint": "a", "note": f"worker {worker} #{i}"}, path=db)


def _rebuild_many(args):
    db, count = args
    from opprof_advisor.kb import store

    for _ in range(count):
        store.build_index(db, rebuild=True)


def _work(args):
    return _rebuild_many(args[1:]) if args[0] == "rebuild" else _record_many(args[1:])


def test_concurrent_recording_from_several_processes_loses_no_outcome(tmp_path):
    import multiprocessing

    from opprof_advisor.kb import store

    db = tmp_path / "index.db"
    store.open_index(db)
    workers, each = 4, 25
    # Two more processes rebuild the index meanwhile: a rebuild replaces the file, and must
    # neither drop outcomes recorded before it nor race with one being recorded.
    jobs = [("record", db, w, each) for w in range(workers)] + [("rebuild", db, 4)] * 2
    with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
        pool.map(_work, jobs)
    notes = sorted(row["note"] for row in outcomes_store.list_outcomes(path=db))
    assert notes == sorted(f"worker {w} #{i}" for w in range(workers) for i in range(each))
    assert len({row["id"] for row in outcomes_store.list_outcomes(path=db)}) == workers * each


def test_outcomes_survive_repeated_rebuilds_and_filter_by_entry(tmp_path):
    from opprof_advisor.kb import store

    db = tmp_path / "index.db"
    outcomes_store.record_outcome({"entry_id": "nms-on-npu", "recorded_at": "2026-11-30T04:00:00+00:00",
                                   "matched_families": ["NMS"], "note": "kept"}, path=db)
    store.build_index(db, rebuild=True)
    store.build_index(db, rebuild=True)
    assert [row["note"] for row in outcomes_store.list_outcomes("nms-on-npu", path=db)] == ["kept"]
    assert outcomes_store.list_outcomes("conv2d-tuning", path=db) == []
    assert outcomes_store.list_outcomes(path=tmp_path / "absent.db") == []


def _nms_suggestion(runner, profile):
    result = runner.invoke(app, ["suggest", "--profile", str(profile), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return next(s for s in doc["suggestions"] if s["remedies"] and s["remedies"][0]["id"] == "nms-on-npu"), doc["notes"]


def test_a_recorded_outcome_changes_what_suggest_prints_for_the_recipe(runner, yolo_runs):
    before, after = yolo_runs
    nms_old = loop_examples.nms_before_us()
    share = nms_old / read_profile(before).reference_us  # NMS share of the step (the reference of the gains)
    first, notes = _nms_suggestion(runner, before)
    # The KB's 25-35 % for NMS is the design card's end-to-end estimate, not an operator-scope range: before an
    # outcome is recorded the gain is the finding's own model (50-90 % of the AI CPU time).
    assert first["expected_gain"]["model"] == "model"
    assert first["expected_gain"]["high_pct"] == pytest.approx(90 * share, abs=1e-3)
    assert not any("observed 1 time" in note for note in notes)

    recorded = runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-npu"])
    assert recorded.exit_code == 0, recorded.output
    saved = (nms_old - loop_examples.NMS_AFTER_US) / nms_old * 100
    second, notes = _nms_suggestion(runner, before)
    gain = second["expected_gain"]
    assert gain["model"] == "measured"
    # without an operator-scope KB range the recorded outcome is the whole basis, then x the share
    assert gain["low_pct"] == pytest.approx(saved * share, abs=1e-3)
    assert gain["high_pct"] == pytest.approx(saved * share, abs=1e-3)
    assert gain["high_pct"] <= share * 100
    observed = f"observed 1 time: median {saved:.0f} % (range {saved:.0f}–{saved:.0f} %)"
    assert observed in gain["basis"]
    assert f"nms-on-npu: {observed} in your recorded outcomes" in notes
    table = runner.invoke(app, ["suggest", "--profile", str(before)])
    assert table.exit_code == 0, table.output
    assert f"nms-on-npu: {observed}" in table.stdout


# --------------------------------------------------------------------------------------------
# Like for like, once per pair, removal (outcomes must not poison the calibration)
# --------------------------------------------------------------------------------------------


def test_outcomes_of_unlike_comparisons_are_refused_with_the_reason():
    before = make_profile(BEFORE, chip="Ascend910B3")
    other_model = make_profile([("MatMul", "MatMul", "ai_core", 9000.0), ("Softmax", "Softmax", "ai_vector", 1000.0)])
    other_chip = make_profile(AFTER, chip="Ascend310P3")
    cases = [
        (other_model, "the profiles look like different workloads: only 0% of the time is in operator families"),
        (other_chip, "the profiles come from different chips (Ascend910B3 vs Ascend310P3)"),
        (make_profile(BEFORE, chip="Ascend910B3"), "BEFORE and AFTER are the same profile"),
    ]
    for after, reason in cases:
        with pytest.raises(OutcomeRefused) as refused:
            build_outcome(nms_recipe(), compare_profiles(before, after), now=NOW)
        assert str(refused.value).startswith(f"no outcome of nms-on-npu recorded: {reason}")
        assert "--force records it anyway" in str(refused.value)
        assert build_outcome(nms_recipe(), compare_profiles(before, after), now=NOW, force=True).entry_id == "nms-on-npu"


def test_cli_refuses_an_outcome_of_two_workloads_and_records_nothing(runner, yolo_runs):
    from conftest import ROOT

    before, _ = yolo_runs
    other = ROOT / "data" / "examples" / "system_msprof"
    result = runner.invoke(app, ["compare", str(before), str(other), "--applied", "flash-attention"])
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: no outcome of flash-attention recorded: the profiles look like different workloads")
    assert _listed(runner) == []
    forced = runner.invoke(app, ["compare", str(before), str(other), "--applied", "flash-attention", "--force"])
    assert forced.exit_code == 0, forced.output
    assert [o["entry_id"] for o in _listed(runner)] == ["flash-attention"]


def test_a_pair_of_profiles_is_recorded_once(runner, yolo_runs):
    before, after = yolo_runs
    assert runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-npu"]).exit_code == 0
    again = runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-npu", "--force"])
    assert again.exit_code == 1
    assert again.stderr.strip() == ("error: not recorded: outcome #1 of nms-on-npu already measures this pair of "
                                    "profiles, and one measured change counts once — see `advisor outcomes list`; "
                                    "`advisor outcomes remove 1` takes it back")
    swapped = runner.invoke(app, ["compare", str(after), str(before), "--applied", "index-ops-to-ai-core"])
    assert swapped.exit_code == 1
    assert "(with BEFORE and AFTER the other way round)" in swapped.stderr and "--force records it" in swapped.stderr
    assert [o["id"] for o in _listed(runner)] == [1]


def test_outcomes_remove_takes_outcomes_back_by_id(runner, yolo_runs):
    before, after = yolo_runs
    assert runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-npu"]).exit_code == 0
    listed = runner.invoke(app, ["outcomes", "list"]).stdout.splitlines()
    assert listed[0].split()[0] == "#" and listed[1].split()[0] == "1"
    assert "nms-on-npu" in listed[1]
    unknown = runner.invoke(app, ["outcomes", "remove", "1", "7"])
    assert unknown.exit_code == 1 and "no recorded outcome #7; nothing was removed" in unknown.stderr
    assert [o["id"] for o in _listed(runner)] == [1]
    removed = runner.invoke(app, ["outcomes", "remove", "1"])
    assert removed.exit_code == 0, removed.output
    assert removed.stdout.startswith("removed outcome #1 of nms-on-npu (recorded ")
    assert _listed(runner) == []
    # removed, the pair can be recorded again
    assert runner.invoke(app, ["compare", str(before), str(after), "--applied", "nms-on-npu"]).exit_code == 0


def test_a_duplicate_survives_the_trip_through_a_process_pool():
    import pickle

    from opprof_advisor.core.errors import DuplicateOutcome

    error = DuplicateOutcome("not recorded", outcome_id=3, entry_id="x", hint="h")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.outcome_id, copy.entry_id) == ("not recorded — h", 3, "x")


def _after_variant(tmp_path, n: int):
    """The AFTER example with one kernel made n % slower: another measured run of the same change."""
    import csv
    import shutil

    target = tmp_path / f"after{n}"
    shutil.copytree(loop_examples.EXAMPLE_AFTER, target)
    [path] = target.rglob("kernel_details.csv")
    rows = list(csv.reader(path.open(encoding="utf-8")))
    column = rows[0].index("Duration(us)")
    rows[1][column] = f"{float(rows[1][column]) * (1 + n / 100):.3f}"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    return target


def _recorders(afters, env):
    import subprocess
    import sys

    from conftest import ROOT

    rebuilding = subprocess.Popen(
        [sys.executable, "-c", "from opprof_advisor.kb import store\nfor _ in range(4): store.build_index(rebuild=True)"],
        cwd=ROOT, env=env)
    recorders = [subprocess.Popen([sys.executable, "-m", "opprof_advisor", "compare", str(loop_examples.EXAMPLE),
                                   str(after), "--applied", "nms-on-npu"], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for after in afters]
    results = [(process.wait(timeout=120), process.stderr.read()) for process in recorders]
    for process in recorders:
        process.stderr.close()
    assert rebuilding.wait(timeout=120) == 0
    return results


def test_five_concurrent_recorders_during_rebuilds_keep_every_outcome_and_count_a_pair_once(tmp_path, advisor_home):
    import os

    from opprof_advisor.kb import store

    env = {**os.environ, "ADVISOR_HOME": str(advisor_home)}
    store.build_index()
    results = _recorders([_after_variant(tmp_path, n) for n in range(1, 6)], env)
    assert [code for code, _ in results] == [0] * 5, results
    assert len(outcomes_store.list_outcomes()) == 5
    same = _recorders([_after_variant(tmp_path, 9)] * 5, env)
    assert sorted(code for code, _ in same) == [0, 1, 1, 1, 1]
    assert all("already measures this pair of profiles" in err for code, err in same if code)
    assert len(outcomes_store.list_outcomes()) == 6


def test_suggest_still_advises_when_the_outcomes_database_is_damaged(runner, yolo_runs, advisor_home):
    before, _ = yolo_runs
    assert runner.invoke(app, ["kb", "build"]).exit_code == 0
    damaged = advisor_home / "advisor.outcomes.db"
    damaged.write_bytes(b"not a database")
    result = runner.invoke(app, ["suggest", "--profile", str(before)])
    assert result.exit_code == 0, result.output
    assert "nms-on-npu" in result.stdout
    assert result.stderr.strip() == (f"warning: {damaged}: the outcomes database is unreadable (file is not a "
                                     "database); the gains below are not calibrated by recorded outcomes")
    assert damaged.read_bytes() == b"not a database"
