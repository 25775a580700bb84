"""The roofline against numbers worked out by hand: peaks, work per kernel, efficiency, flags, model gain.

Every expected value is computed in the comment beside it from the shapes and times written in the
test (or read from a real profile's CSV), not by the code under test.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opprof_advisor.cli.app import app
from opprof_advisor.core.errors import PeaksError
from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.profiles import build_profile
from opprof_advisor.readers.base import KernelTable, RawProfile
from opprof_advisor.profile.peaks import load_peaks_file, resolve_peaks
from opprof_advisor.profile.roofline import model_gain_for
from opprof_advisor.profile.roofline_work import NotJudged, pair_matmul_dims, work_of

# 24 AI Cores x 1800 MHz x 8192 flop/cycle = 353,894,400,000,000 flop/s = 353.8944 TFLOP/s.
PEAK_910B2 = 353.8944


def raw_profile(kernels: list[tuple], chip: str | None = "Ascend910B2", cores: dict | None = None,
                freq: float | None = 1800.0) -> RawProfile:
    """kernels: (op_type, task_type, duration_us, shapes, dtypes[, formats])."""
    table = KernelTable(name=[k[0] for k in kernels], op_type=[k[0] for k in kernels], task_type=[k[1] for k in kernels],
                        duration_us=[k[2] for k in kernels], input_shapes=[k[3] for k in kernels],
                        input_dtypes=[k[4] for k in kernels],
                        input_formats=[k[5] if len(k) > 5 else ";".join("ND" for _ in k[4].split(";")) for k in kernels])
    table.present = {"input_shapes", "input_dtypes", "input_formats"}
    if cores is None:
        cores = {"aic": 24, "aiv": 48} if chip else {}
    return RawProfile(path="p", format="torch-npu-text", kernels=table, chip=chip, core_counts=cores, freq_mhz=freq)


@pytest.fixture(autouse=True)
def own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))


def test_issue_example_4096_cubed_bf16_matmul():
    profile = build_profile(raw_profile([("MatMulV3", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16")]))
    row = profile.roofline.row("MatMulV3")
    # FLOPs = 2 x 4096^3 = 137,438,953,472; over 1000 us = 137.44 TFLOP/s; / 353.89 = 38.84 %.
    assert row.flops == 2 * 4096 ** 3
    assert row.achieved_tflops == pytest.approx(137.439, abs=1e-3)
    assert profile.roofline.peaks["cube_tflops"]["bf16"] == pytest.approx(PEAK_910B2, abs=1e-3)
    assert row.efficiency == pytest.approx(0.3884, abs=1e-4)
    # bytes = 3 x 4096^2 x 2 = 100,663,296 -> 1365.3 flop/B, right of the ridge 353.9e12 / 1.6e12 = 221:
    assert row.intensity == pytest.approx(1365.333, abs=1e-3)
    assert row.roof == "compute" and row.attainable_tflops == pytest.approx(PEAK_910B2, abs=0.01)
    # headroom = 1000 x (1 - 0.38836) = 611.6 us; model band 1 - 0.38836/0.6 = 35.3 % .. 1 - 0.38836/0.7 = 44.5 %
    assert row.headroom_us == pytest.approx(611.64, abs=0.01)
    assert (row.model_gain_low, row.model_gain_high) == (pytest.approx(0.3527, abs=1e-4), pytest.approx(0.4452, abs=1e-4))
    assert "model estimate" in row.basis


def test_a_kernel_claiming_30x_the_peak_is_flagged_not_credited():
    # 2 x 16384^3 = 8.796e12 flop; at 30 x 353.89 TFLOP/s that takes 8.796e12 / 1.0617e16 s = 828.5 us.
    duration = 2 * 16384 ** 3 / (30 * PEAK_910B2 * 1e12) * 1e6
    profile = build_profile(raw_profile([("MatMulV2", "AI_CORE", duration, "16384,16384;16384,16384", "FLOAT16;FLOAT16")]))
    row = profile.roofline.row("MatMulV2")
    assert row.status == "implausible"
    assert row.efficiency == pytest.approx(30.0, rel=1e-3)
    assert "peak, shapes or units wrong" in row.reason
    assert row.headroom_us is None and row.model_gain_low is None and row.model_gain_high is None
    assert model_gain_for(profile, ["MatMulV2"]) is None


def test_elementwise_add_against_the_bandwidth_roof():
    # Add of two bf16 [8192, 8192]: read 2 x 134,217,728 B, write 134,217,728 B = 402,653,184 B.
    # At 1.6 TB/s that needs 251.66 us; it took 500 us -> 805.3 GB/s, efficiency 50.33 %.
    profile = build_profile(raw_profile([("Add", "AI_VECTOR_CORE", 500.0, "8192,8192;8192,8192", "DT_BF16;DT_BF16")]))
    row = profile.roofline.row("Add")
    assert row.roof == "bandwidth" and row.flops is None
    assert row.bytes == 402_653_184
    assert row.achieved_gbps == pytest.approx(805.306, abs=1e-3)
    assert row.efficiency == pytest.approx(0.5033, abs=1e-4)
    # band: 1 - 0.50332/0.6 = 16.1 % .. 1 - 0.50332/0.7 = 28.1 %
    assert row.model_gain_low == pytest.approx(0.1611, abs=1e-4)
    assert row.model_gain_high == pytest.approx(0.281, abs=1e-4)


def test_conv2d_backprop_input_nchw():
    # filter [256,128,3,3], out_backprop [32,256,56,56], fp16: FLOPs = 2 x 32 x 56 x 56 x 256 x (128 x 3 x 3)
    # = 59,190,018,048; in 400 us = 147.98 TFLOP/s = 41.81 % of 353.89.
    profile = build_profile(raw_profile([("Conv2DBackpropInput", "AI_CORE", 400.0, "4;256,128,3,3;32,256,56,56",
                                          "INT32;FLOAT16;FLOAT16", "NCHW;NCHW;NCHW")]))
    row = profile.roofline.row("Conv2DBackpropInput")
    assert row.flops == 59_190_018_048
    assert row.achieved_tflops == pytest.approx(147.975, abs=1e-3)
    assert row.efficiency == pytest.approx(0.4181, abs=1e-4)


def test_conv2d_forward_is_not_judged_with_the_reason():
    profile = build_profile(raw_profile([("Conv2D", "AI_CORE", 400.0, "32,256,56,56;256,256,3,3", "FLOAT16;FLOAT16")]))
    row = profile.roofline.row("Conv2D")
    assert row.status == "not_judged" and "stride and padding" in row.reason


def test_matmul_dims_are_paired_in_a_fixed_order_and_ambiguity_is_named():
    assert pair_matmul_dims((4096, 1024), (1024, 512))[:3] == (4096, 1024, 512)  # A·B
    assert pair_matmul_dims((4096, 1024), (512, 1024))[:3] == (4096, 1024, 512)  # A·Bᵀ (Linear weight)
    assert pair_matmul_dims((1024, 4096), (1024, 512))[:3] == (4096, 1024, 512)  # Aᵀ·B
    # (64,128)·(128,64) fits A·B with K=128 (2·64·64·128 flop) and Aᵀ·Bᵀ with K=64 (2·128·128·64): A·B is used.
    m, k, n, how = pair_matmul_dims((64, 128), (128, 64))
    assert (m, k, n) == (64, 128, 64) and "also fits Aᵀ·Bᵀ (K=64)" in how
    with pytest.raises(NotJudged, match="K unknown"):
        pair_matmul_dims((81920, 4096), (8192, 512))


def test_attention_layout_needs_evidence():
    with pytest.raises(NotJudged, match="BSH or SBH"):
        work_of("FlashAttentionScore", "4096,1,2048;4096,1,1024;4096,1,1024", "DT_BF16;DT_BF16;DT_BF16")
    # With the mask [4096, 4096] the sequence axis is 0 (SBH): B=1, Sq=Sk=4096, Hq=2048, Hk=Hv=1024:
    # 2 x 1 x 4096 x 4096 x 2048 x (1 + 1024/1024) = 137,438,953,472 flop.
    work = work_of("FlashAttentionScore", "4096,1,2048;4096,1,1024;4096,1,1024;;;;4096,4096",
                   "DT_BF16;DT_BF16;DT_BF16;DT_BF16;UINT8;DT_BF16;BOOL")
    assert work.flops == 137_438_953_472 and "SBH" in work.basis


def test_short_kernels_and_fp32_cube_are_not_judged():
    profile = build_profile(raw_profile([("MatMulV2", "AI_CORE", 10.0, "64,64;64,64", "DT_BF16;DT_BF16"),
                                         ("BatchMatMul", "AI_CORE", 500.0, "8,512,512;8,512,512", "FLOAT;FLOAT")]))
    assert "shorter than 20 µs" in profile.roofline.row("MatMulV2").reason
    assert "no sourced cube rate for fp32" in profile.roofline.row("BatchMatMul").reason


def test_unknown_chip_gives_a_cannot_judge_note_that_fits_the_producer():
    raw = raw_profile([("MatMulV3", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16")], chip=None, freq=None)
    profile = build_profile(raw)
    assert profile.roofline.rows == []
    note = next(n for n in profile.notes if n.startswith("cannot judge roofline"))
    assert "AI Core count and AI Core clock are not in the profile" in note and "NPU_INFO" in note
    raw.format = "msopprof-device"
    assert "dump/op_basic_info.txt" in build_profile(raw).roofline.notes[0]


def test_family_name_is_not_a_chip():
    # Ascend910B covers 20- and 24-core parts: no core count, no HBM figure, no guess.
    profile = build_profile(raw_profile([("MatMulV3", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16")],
                                        chip="Ascend910B", cores={}))
    assert "the chip Ascend910B is not in the SoC table" in profile.roofline.notes[0]


def test_peaks_file_overrides_and_is_checked(tmp_path):
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text("chip: Ascend910B2\nhbm_gbps: 1200\ncube_tflops:\n  bf16: 300\n", encoding="utf-8")
    profile = build_profile(raw_profile([("MatMulV3", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16")],
                                        chip=None, cores={}, freq=None), peaks)
    # chip from the file -> 24 AIC from the table, no clock needed for bf16 (given: 300); 137.44 / 300 = 45.81 %.
    assert profile.roofline.row("MatMulV3").efficiency == pytest.approx(0.4581, abs=1e-4)
    assert profile.roofline.peak_sources["hbm_gbps"].startswith("--peaks")
    other, notes = resolve_peaks({"chip": "Ascend910B3"}, peaks)
    assert other.hbm_gbps == 1600.0 and "is for Ascend910B2, the profile ran on Ascend910B3: not applied" in notes[0]
    bad = tmp_path / "bad.yaml"
    bad.write_text("aic: -3\n", encoding="utf-8")
    with pytest.raises(PeaksError, match="'aic' must be a positive number"):
        load_peaks_file(bad)
    bad.write_text("hbm: 1600\n", encoding="utf-8")
    with pytest.raises(PeaksError, match="unknown key 'hbm'"):
        load_peaks_file(bad)


def test_user_peaks_file_under_advisor_home(tmp_path, monkeypatch):
    home = tmp_path / "home2"
    home.mkdir()
    (home / "peaks.yaml").write_text("aic: 20\nfreq_mhz: 1500\n", encoding="utf-8")
    monkeypatch.setenv("ADVISOR_HOME", str(home))
    peaks, _ = resolve_peaks({"chip": "Ascend910B2", "aic": 24, "freq_mhz": 1800.0})
    # 20 x 1500 MHz x 8192 = 245.76 TFLOP/s: the user's file wins over the profile.
    assert peaks.cube_tflops["fp16"] == pytest.approx(245.76)


def test_model_gain_for_weights_by_time():
    profile = build_profile(raw_profile([
        ("MatMulV3", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16"),   # 38.8 %: 35.3 %..44.5 %
        ("MatMulV2", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16"),   # same
    ]))
    gain = model_gain_for(profile, ["MatMulV3", "MatMulV2"])
    assert (gain.low, gain.high) == (pytest.approx(0.3527, abs=1e-4), pytest.approx(0.4452, abs=1e-4))
    assert gain.basis.startswith("model estimate")


def test_profile_json_keeps_schema_1_and_appends_the_block():
    profile = build_profile(raw_profile([("MatMulV3", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16")]))
    document = profile_to_json(profile)
    keys = list(document)
    assert document["schema"] == "opprof-advisor/profile/1" and keys[keys.index("steps") + 1] == "roofline"
    assert document["roofline"]["op_types"][0]["efficiency"] == pytest.approx(0.3884, abs=1e-4)


def test_cli_roofline_json_and_output_refuses_to_overwrite(tmp_path):
    folder = tmp_path / "run_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    from profile_fixtures import LEVEL2_HEADER, kernel, write_csv

    write_csv(folder / "kernel_details.csv", LEVEL2_HEADER,
              [kernel("mm", "MatMulV3", "AI_CORE", 1000.0, shapes="4096,4096;4096,4096", dtypes="DT_BF16;DT_BF16")])
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text("chip: Ascend910B2\nfreq_mhz: 1800\n", encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(app, ["roofline", str(tmp_path / "run_ascend_pt"), "--format", "json", "--peaks", str(peaks)])
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["schema"] == "opprof-advisor/roofline/1"
    assert document["op_types"][0]["efficiency"] == pytest.approx(0.3884, abs=1e-4)
    target = tmp_path / "roof.json"
    target.write_text("mine", encoding="utf-8")
    refused = runner.invoke(app, ["roofline", str(tmp_path / "run_ascend_pt"), "-f", "json", "-o", str(target)])
    assert refused.exit_code == 1 and "exists and is not a JSON document written by advisor" in refused.output
    assert target.read_text() == "mine"
    forced = runner.invoke(app, ["roofline", str(tmp_path / "run_ascend_pt"), "-f", "json", "-o", str(target),
                                 "--force", "--peaks", str(peaks)])
    assert forced.exit_code == 0 and json.loads(target.read_text())["schema"] == "opprof-advisor/roofline/1"
    table = runner.invoke(app, ["profile", str(tmp_path / "run_ascend_pt"), "--peaks", str(peaks)],
                          env={"COLUMNS": "160"})
    assert "38.8 %" in table.stdout


def test_profile_html_report_carries_the_roofline_chart():
    from opprof_advisor.render.html.profile import render_profile

    profile = build_profile(raw_profile([("MatMulV3", "AI_CORE", 1000.0, "4096,4096;4096,4096", "DT_BF16;DT_BF16")]))
    page = render_profile(profile_to_json(profile))
    assert 'class="chart roofline"' in page and 'data-op="MatMulV3"' in page
    assert "38.8" in page and "model estimate" in page
