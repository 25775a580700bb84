"""`advisor suggest` and `advisor eval` through the real CLI (CliRunner, temporary home and index)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.profiles import read_profile

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "data" / "bench"


def bench_path(name: str) -> Path:
    scenarios = json.loads((BENCH / "scenarios.json").read_text())["scenarios"]
    return BENCH / next(s["path"] for s in scenarios if s["name"] == name)


@pytest.fixture(scope="module")
def yolo() -> Path:
    return bench_path("yolov8s-nms-aicpu")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    # One index (and one fitted matcher) for the module keeps these tests fast; --db is the documented switch.
    return str(tmp_path_factory.mktemp("suggest-index") / "advisor.db")


@pytest.fixture
def runner(runner, db):
    """The shared CliRunner, with --db appended to every `suggest` / `eval` call."""

    class WithDb:
        def invoke(self, app_, args, **kw):
            return runner.invoke(app_, [*args, "--db", db], **kw)

    return WithDb()


def run_json(runner, *args):
    result = runner.invoke(app, ["suggest", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_suggest_json_puts_nms_first_with_scaled_gain(runner, yolo):
    doc = run_json(runner, "--profile", str(yolo), "--top", "3")
    assert doc["schema"] == "opprof-advisor/suggest/2"
    profile = read_profile(yolo)
    step = sum(s.stage_us for s in profile.steps)  # percentages are of the step's wall time
    assert doc["profile"] == {"path": profile.path, "format": "torch-npu-text", "device_time_us": profile.device_time_us,
                              "reference": "step", "reference_us": round(step, 3), "excerpt": False}
    first = doc["suggestions"][0]
    assert first["id"] == "aicpu-nms" and first["rank"] == 1
    assert first["remedies"][0]["id"] == "nms-on-npu"
    nms_us = sum(r.time_us for r in profile.op_types if r.family == "NMS" and r.unit == "ai_cpu")
    assert first["stake_us"] == pytest.approx(nms_us)
    # the AI CPU model: an AI Core kernel saves 50-90 % of the AI CPU time, in % of the step (Amdahl)
    gain = first["expected_gain"]
    assert (gain["low_us"], gain["high_us"]) == (pytest.approx(0.5 * nms_us), pytest.approx(0.9 * nms_us))
    assert gain["high_pct"] == pytest.approx(100 * 0.9 * nms_us / step, abs=1e-3) and gain["model"] == "model"
    assert first["evidence"][0]["op_type"] == "NonMaxSuppressionV3"
    assert 1 <= len(doc["suggestions"]) <= 3
    assert doc["similar_cases"][0]["id"] in {"yolov8s-migration", "yolov8n-nms-loop-ultralytics"}


def test_suggest_table_shows_gain_evidence_and_cases(runner, yolo):
    result = runner.invoke(app, ["suggest", "--profile", str(yolo), "--top", "2"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "The AI CPU runs NonMaxSuppressionV3" in out and "(nms-on-npu, recipe)" in out
    assert "% of the step" in out and "model" in out
    assert "1. Replace the per-image NMS call with one batched NPU call" in out  # how to fix, in the output
    assert "the rest: advisor show nms-on-npu" in out
    assert "your profile resembles" in out
    assert "note:" in out  # unjudged data is said, not hidden
    assert "detection, cnn" in out  # the workload, told once in the header


def test_suggest_explain_shows_breakdown_and_terms(runner, yolo):
    result = runner.invoke(app, ["suggest", "--profile", str(yolo), "--top", "1", "--explain"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "1. aicpu-nms: expected gain" in out
    assert "the same op on the AI Core takes 10–50 % of the AI CPU time" in out
    assert "lead remedy nms-on-npu (recipe" in out and "answers aicpu_fallback, nms_cpu on NMS" in out


def test_suggest_markdown(runner, yolo):
    result = runner.invoke(app, ["suggest", "--profile", str(yolo), "--top", "1", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Suggestions for ")
    assert "## 1. The AI CPU runs NonMaxSuppressionV3" in result.stdout
    assert "(`nms-on-npu`, recipe" in result.stdout


def test_suggest_kind_case_lists_cases_without_expected_gain(runner, yolo):
    # --kind case hangs cases under the findings; their own results never become the expected gain
    doc = run_json(runner, "--profile", str(yolo), "--kind", "case")
    remedies = [r for s in doc["suggestions"] for r in s["remedies"]]
    assert remedies and {r["kind"] for r in remedies} == {"case"}
    assert all(s["expected_gain"] is None or s["expected_gain"]["model"] == "model" for s in doc["suggestions"])


def test_suggest_model_hint_changes_query_not_evidence(runner):
    path = bench_path("llama2-unfused-attention")
    plain = run_json(runner, "--profile", str(path))
    hinted = run_json(runner, "--profile", str(path), "--model", "llama2-7b")
    assert plain["suggestions"][0]["id"] == hinted["suggestions"][0]["id"] == "unfused-attention"
    assert plain["suggestions"][0]["remedies"][0]["id"] == "flash-attention"
    assert plain["suggestions"][0]["expected_gain"] == hinted["suggestions"][0]["expected_gain"]


def test_suggest_missing_profile_is_one_line_exit_1(runner, tmp_path):
    missing = tmp_path / "nothing-here"
    result = runner.invoke(app, ["suggest", "--profile", str(missing)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(missing) in lines[0]


def test_suggest_bad_kind_is_usage_error(runner, yolo):
    result = runner.invoke(app, ["suggest", "--profile", str(yolo), "--kind", "recipes"])
    assert result.exit_code == 2


def test_eval_json_reports_per_scenario_and_overall(runner):
    result = runner.invoke(app, ["eval", str(BENCH), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "opprof-advisor/eval/1"
    scenarios = doc["scenarios"]
    assert len(scenarios) == doc["overall"]["scenarios"] >= 15
    mrr = sum(s["reciprocal_rank"] for s in scenarios) / len(scenarios)
    assert doc["overall"]["mrr"] == pytest.approx(mrr, abs=1e-3)
    assert doc["overall"]["hit3"] == pytest.approx(sum(s["hit3"] for s in scenarios) / len(scenarios), abs=1e-3)
    yolo = next(s for s in scenarios if s["name"] == "yolov8s-nms-aicpu")
    assert (yolo["rank"], yolo["top"][0]) == (1, "nms-on-npu")  # the lead remedy of the first finding


def test_eval_table(runner):
    result = runner.invoke(app, ["eval", str(BENCH)])
    assert result.exit_code == 0, result.output
    assert "yolov8s-nms-aicpu" in result.stdout
    assert "overall: " in result.stdout and "hit@3 1.000" in result.stdout


def test_eval_folder_without_labels(runner, tmp_path):
    result = runner.invoke(app, ["eval", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {tmp_path}: no scenarios.json in the bench folder — generate it with `python data/make_bench.py`"


# Real profiler outputs under ../shared/real-profiles (read in place; skipped when absent).
REAL_ROOTS = [
    "catlass-msprof-op/device/02_fp32_cm_gemv_aiv",
    "catlass-msprof-op/device/02_fp32_rm_gemv_aiv",
    "catlass-msprof-op/simulator/01_fp16_cm_gemv_aiv",
    "msinsight-torch-npu/db/level1",
    "msinsight-torch-npu/server-ut/full_db",
    "msinsight-torch-npu/server-ut/test_rank_0",
    "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt",
    "msinsight-torch-npu/text/level0",
    "msinsight-torch-npu/text/level1",
    "msinsight-torch-npu/text/level2",
    "msprof-analyze-ut/pt_llm_pmu_2025_ascend_pt",
    "msprof-analyze-ut/pt_train_2023_ascend_pt",
    "tilelang-ascend/custom/sigmoid/Sigmoid",
]


@pytest.mark.parametrize("relative", REAL_ROOTS)
def test_real_profiles_give_a_valid_document(runner, real_profiles, relative):
    path = real_profiles / relative
    if not path.exists():
        pytest.skip(f"{relative} is not in this copy of real-profiles")
    doc = run_json(runner, "--profile", str(path), "--top", "5")
    assert doc["schema"] == "opprof-advisor/suggest/2"
    assert [s["rank"] for s in doc["suggestions"]] == list(range(1, len(doc["suggestions"]) + 1))
    assert doc["context"]["producer"] in ("kernel", "run") and doc["rest"]
    for s in doc["suggestions"]:
        gain = s["expected_gain"]
        if gain:  # never more than the time the finding covers (Amdahl), in % of the same reference
            assert 0 <= gain["low_us"] <= gain["high_us"] <= s["stake_us"] + 1e-6
            assert gain["high_pct"] <= s["stake_share"] * 100 + 1e-3 and gain["assumptions"]
        else:
            assert s["measure"]  # no number: it says what to collect


def _suggestion(doc: dict, finding_id: str) -> dict:
    return next(s for s in doc["suggestions"] if s["id"] == finding_id)


def test_real_2023_torch_npu_aicpu_cast_gets_the_cast_recipe(runner, real_profiles):
    # 0.2 % of the step: the AI CPU casts are real but under the 3 % line, so they are not listed at all
    doc = run_json(runner, "--profile", str(real_profiles / "msprof-analyze-ut/pt_train_2023_ascend_pt"), "--top", "60")
    assert "communication_exposed" in doc["suggestions"][0]["matched_symptoms"]
    assert "aicpu-other" not in [s["id"] for s in doc["suggestions"]]
    assert doc["rest"] == "nothing else above 3 % of the step"


def test_real_catlass_gemv_imbalance_is_named(runner, real_profiles):
    doc = run_json(runner, "--profile", str(real_profiles / "catlass-msprof-op/device/02_fp32_cm_gemv_aiv"))
    first = doc["suggestions"][0]
    assert first["id"] == "imbalance" and first["remedies"][0]["id"] == "per-block-imbalance"
    # balanced blocks would save up to (max - mean) / max = 67 % of the kernel; low: half of it
    assert first["expected_gain"]["high_pct"] == pytest.approx(66.7, abs=3)


def test_real_level2_run_puts_exposed_communication_first_and_varies_the_advice(runner, real_profiles):
    # The CANN 8.3 Level2 run leaves 52 % of the step in communication that waits; 35 % of device time runs in
    # dynamic-shape kernels, which describes the run (aclnn eager) rather than a defect.
    doc = run_json(runner, "--profile", str(real_profiles / "msinsight-torch-npu/st-level2-cann8.3/rank_0_ascend_pt"),
                   "--top", "5")
    top = doc["suggestions"]
    assert top[0]["id"] == "comm-wait"
    assert not any("dynamic_shape" in s["matched_symptoms"] for s in top)
    assert any("host_bound" in s["matched_symptoms"] for s in top[:3])
    assert len({s["id"] for s in top}) == len(top)  # one row per diagnosis


def test_a_case_result_is_never_an_expected_gain(runner):
    # matmul-kernel-tuning-18x records one kernel going from 11200 to 620 µs (operators scope): as a similar
    # case under a finding it is a story, never the finding's expected gain.
    doc = run_json(runner, "--profile", str(ROOT / "data/bench/kernel-matmul-mte2"), "--kind", "case", "--top", "10")
    cases = {r["id"] for s in doc["suggestions"] for r in s["remedies"]}
    assert "matmul-kernel-tuning-18x" in cases
    assert all(s["expected_gain"] is None or s["expected_gain"]["model"] == "model" for s in doc["suggestions"])


def test_advice_for_another_family_is_not_suggested(runner, real_profiles):
    # The catlass GEMV kernel is no MatMul: the MatMul tiling recipe requires MatMul kernels, so it is not
    # listed, and --explain says which requirement failed.
    doc = run_json(runner, "--profile", str(real_profiles / "catlass-msprof-op/device/02_fp32_cm_gemv_aiv"), "--top", "5",
                   "--explain")
    assert "matmul-tiling" not in [r["id"] for s in doc["suggestions"] for r in s["remedies"]]
    why = {item["id"]: item["why"] for item in doc["left_out"]}
    assert why["matmul-tiling"] == "operator MatMul, GroupedMatMul: not met (none of them ran)"
    assert doc["suggestions"][0]["remedies"][0]["id"] == "per-block-imbalance"


def test_real_2023_fallback_evidence_is_the_ai_cpu_casts_only(runner, real_profiles):
    from opprof_advisor.advice.context import workload_context
    from opprof_advisor.advice.rules_run import aicpu

    profile = read_profile(real_profiles / "msprof-analyze-ut/pt_train_2023_ascend_pt")
    context = {**workload_context(profile), "reference": "step"}
    [finding] = aicpu(profile, context, profile.reference_us)
    assert [e["why"].split(",")[0] for e in finding.evidence] == ["Cast on ai_cpu"]


def test_syncbatchnorm_advice_needs_batchnorm_kernels(runner, real_profiles):
    # The level0 run is 90 % AllReduce and has no BatchNorm kernel.
    doc = run_json(runner, "--profile", str(real_profiles / "msinsight-torch-npu/text/level0/rank0_ascend_pt"),
                   "--top", "10")
    assert "syncbatchnorm-overuse" not in [r["id"] for s in doc["suggestions"] for r in s["remedies"]]


EXAMPLES = ROOT / "data" / "examples"


def nms_share_from_csv(example: Path) -> float:
    """NMS share of the step, summed straight from kernel_details.csv and step_trace_time.csv (not the readers)."""
    import csv

    (out,) = example.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT")
    nms = 0.0
    with (out / "kernel_details.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["Type"].startswith("NonMaxSuppression") and row["Accelerator Core"] == "AI_CPU":
                nms += float(row["Duration(us)"])
    with (out / "step_trace_time.csv").open(newline="", encoding="utf-8") as handle:
        stage = sum(float(row["Stage"]) for row in csv.DictReader(handle))
    return nms / stage


@pytest.mark.parametrize("example", ["yolov8_torch_npu", "yolov8_torch_npu_db"])
def test_yolov8_example_nms_first_amdahl_gain_and_yolov8s_case(runner, example):
    folder = EXAMPLES / example
    if not folder.is_dir():
        pytest.skip(f"data/examples/{example} is not generated")
    doc = run_json(runner, "--profile", str(folder))
    first = doc["suggestions"][0]
    assert first["remedies"][0]["id"] == "nms-on-npu"
    assert doc["profile"]["reference"] == "step"
    share = nms_share_from_csv(EXAMPLES / "yolov8_torch_npu")  # the DB export holds the same launches
    # the AI CPU model, in % of the step: 50-90 % of the NMS share, summed straight from the CSV files
    assert first["expected_gain"]["low_pct"] == pytest.approx(50 * share, abs=0.05)
    assert first["expected_gain"]["high_pct"] == pytest.approx(90 * share, abs=0.05)
    assert all(s["expected_gain"] for s in doc["suggestions"])  # the README's first example: a gain on every row
    assert doc["similar_cases"][0]["id"] == "yolov8s-migration"


def test_suggest_html_report_written(runner, yolo, tmp_path):
    out = tmp_path / "advice.html"
    result = runner.invoke(app, ["suggest", "--profile", str(yolo), "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"wrote {out.absolute()}"
    page = out.read_text(encoding="utf-8")
    assert "Run NMS (non-maximum suppression) on the NPU" in page and "yolov8s-migration" in page
    assert "The AI CPU runs NonMaxSuppressionV3" in page


def test_suggest_output_without_html_is_usage_error(runner, yolo, tmp_path):
    result = runner.invoke(app, ["suggest", "--profile", str(yolo), "--output", str(tmp_path / "x.html")])
    assert result.exit_code == 2
    assert "--output is only used with --format html" in result.stderr


FLOAT32_TAGS = {"amp", "hf32", "fp32", "mixed-precision"}


def _float32_advice(doc: dict) -> list[str]:
    return [r["id"] for s in doc["suggestions"] for r in s["remedies"]
            if "fp32_compute" in s["matched_symptoms"] or FLOAT32_TAGS & set(r["tags"])]


def test_half_precision_runs_get_no_float32_advice(runner, tmp_path):
    from opprof_advisor.testing import KernelSpec, write_torch_npu_text

    # a healthy BF16 CNN: cube-bound convolutions, bf16 inputs
    cnn = write_torch_npu_text(tmp_path, [
        KernelSpec("Conv2D", task_type="AI_CORE", duration_us=180.0, count=40, block_dim=24, input_dtypes="DT_BF16",
                   pipe={"aic_cube": 0.9, "aic_mte2": 0.4}),
        KernelSpec("Conv2DBackpropInput", task_type="AI_CORE", duration_us=200.0, count=40, block_dim=24,
                   input_dtypes="DT_BF16", pipe={"aic_cube": 0.88}),
        KernelSpec("Relu", task_type="AI_VECTOR_CORE", duration_us=25.0, count=40, block_dim=48, input_dtypes="DT_BF16"),
    ], level="Level1")
    for profile in (cnn, EXAMPLES / "yolov8_torch_npu", bench_path("bert-int64-cast-aicpu")):
        doc = run_json(runner, "--profile", str(profile), "--top", "50")
        assert _float32_advice(doc) == [], profile
    # and a float32 run does get it, as the lead remedy of its float32 finding
    vit = run_json(runner, "--profile", str(bench_path("vit-fp32-cube")), "--top", "3")
    fp32 = _suggestion(vit, "fp32-cube")
    assert _float32_advice(vit)[:1] == [fp32["remedies"][0]["id"]]


def test_an_installed_package_evaluates_its_shipped_bench_and_says_where_the_real_profiles_would_be(
        runner, tmp_path, monkeypatch):
    """Outside a source checkout: the wheel's _data/bench is the default, the real profiles are skipped in one line."""
    import shutil
    import tomllib

    from opprof_advisor.core import paths

    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"][
        "force-include"]
    assert shipped["data/bench"] == "opprof_advisor/_data/bench"
    assert shipped["data/real_bench"] == "opprof_advisor/_data/real_bench"
    installed = tmp_path / "site-packages" / "opprof_advisor"  # the wheel's layout: no data/ nor pyproject.toml beside it
    shutil.copytree(BENCH, installed / "_data" / "bench")
    shutil.copytree(ROOT / "data" / "real_bench", installed / "_data" / "real_bench")
    (installed / "_kb").symlink_to(ROOT / "kb")
    monkeypatch.setattr(paths, "_PACKAGE_DIR", installed)
    monkeypatch.delenv("ADVISOR_REAL_PROFILES", raising=False)
    assert paths.bench_dir() == installed / "_data" / "bench" and paths.real_profiles_dir() is None
    result = runner.invoke(app, ["eval"])
    assert result.exit_code == 0, result.output
    assert "yolov8s-nms-aicpu" in result.stdout and "hit@3 1.000" in result.stdout
    skipped = [line for line in result.stdout.splitlines() if line.startswith("real profiles")]
    assert skipped == ["real profiles: skipped, none at ../shared/real-profiles (point at them with --real-profiles "
                       "DIR or ADVISOR_REAL_PROFILES)"]
    doc = json.loads(runner.invoke(app, ["eval", "--format", "json"]).stdout)
    assert doc["real_profiles"] is None and doc["real_profiles_dir"] is None


def test_advisor_real_profiles_points_eval_at_them(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_REAL_PROFILES", str(tmp_path / "nowhere"))
    result = runner.invoke(app, ["eval", str(BENCH)])
    assert f"real profiles: skipped, none at {tmp_path / 'nowhere'}" in result.stdout


def test_explain_says_which_remedies_were_left_out_and_why(runner):
    # the YOLOv8 example's short kernels: torchair's graph mode is written for LLMs, not a detection CNN
    result = runner.invoke(app, ["suggest", "--profile", str(EXAMPLES / "yolov8_torch_npu"), "--explain"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "torchair-reduce-overhead" in out and "applies to family transformer, moe; this run: detection, cnn" in out


def test_eval_real_scores_only_the_real_profiles_with_the_advice_checks(runner, real_profiles):
    result = runner.invoke(app, ["eval", "--real", "--real-profiles", str(real_profiles), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["scenarios"] is None  # the synthetic bench is not run
    overall = doc["real_profiles"]["overall"]
    assert overall["hit1"] == 1.0 and overall["wrong_remedies"] == overall["repeats"] == 0
    assert overall["contradictions"] == overall["above_bound"] == 0
    assert overall["gains_top3"] >= overall["checked"] - 3  # rows near a roof or a busy pipe have no number, and say so
    level1 = next(p for p in doc["real_profiles"]["profiles"] if p["path"].endswith("text/level1/rank0_ascend_pt"))
    assert level1["top"][0] == "comm-wait" and level1["checks"]["first_gain_in_range"] is True
    table = runner.invoke(app, ["eval", "--real", "--real-profiles", str(real_profiles)])
    assert "advice checks on " in table.stdout and "synthetic scenarios" not in table.stdout


def test_eval_real_without_the_real_profiles_is_one_line(runner, tmp_path):
    result = runner.invoke(app, ["eval", "--real", "--real-profiles", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert result.stderr.strip() == (f"error: {tmp_path / 'none'}: no real profiles to score — point at them with "
                                     "--real-profiles DIR or ADVISOR_REAL_PROFILES")
