"""The roofline on the real profiles in ../shared/real-profiles, each checked against a hand computation.

Most real torch_npu folders name no chip: they are read with a peaks file for a 24-core Ascend910B2
at 1800 MHz (353.89 TFLOP/s BF16/FP16 cube peak, 1.6 TB/s HBM from the SoC table), which is what the
test states, not what the run had. Shapes and times in the comments are copied from the CSVs.
"""

from __future__ import annotations

import pytest

from opprof_advisor.core.operators import canonical_family
from opprof_advisor.profiles import load_profile

PEAK = 353.8944  # 24 x 1800e6 x 8192 / 1e12


@pytest.fixture()
def peaks_910b2(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    path = tmp_path / "peaks.yaml"
    path.write_text("chip: Ascend910B2\nfreq_mhz: 1800\n", encoding="utf-8")
    return path


def _row(profile, op_type):
    row = profile.roofline.row(op_type)
    assert row is not None, [r.op_type for r in profile.roofline.rows]
    return row


def test_pt_llm_pmu_2025_flash_attention_grad(real_profiles, peaks_910b2):
    _, profile = load_profile(real_profiles / "msprof-analyze-ut" / "pt_llm_pmu_2025_ascend_pt", peaks=peaks_910b2)
    row = _row(profile, "FlashAttentionScoreGrad")
    # q/k/v "4096,2,512", softmax_max "2,4,4096,8" -> SBH, B=2, Sq=Sk=4096, H=512.
    # forward 2 x 2 x 4096 x 4096 x 512 x (1 + 1) = 68,719,476,736; backward x 2.5 = 171,798,691,840 per launch;
    # 4 launches in 3038.44 us -> 687,194,767,360 / 3038.44e-6 = 226.17 TFLOP/s = 63.91 % of 353.89.
    assert row.flops == pytest.approx(4 * 171_798_691_840)
    assert row.achieved_tflops == pytest.approx(226.167, abs=1e-3)
    assert row.efficiency == pytest.approx(0.6391, abs=1e-4)
    # MatMulV3 "8192,15365;8192,4096" (an edited test file: the output is 1536,4096) claims 5.6x the peak.
    assert _row(profile, "MatMulV3").status == "implausible"
    assert "K unknown" in _row(profile, "MatMulV2").reason  # "81920,4096;8192,512" share no dimension


def test_pt_train_2023_fp16_matmuls(real_profiles, peaks_910b2):
    _, profile = load_profile(real_profiles / "msprof-analyze-ut" / "pt_train_2023_ascend_pt", peaks=peaks_910b2)
    row = _row(profile, "MatMul")
    # A·Bᵀ for all 9 launches (K shared by the last dims):
    #   2 x 4096,12288;4608,12288 -> 2 x 4096 x 4608 x 12288 = 463,856,467,968 each
    #   2 x 4096,1536;12288,1536  -> 2 x 4096 x 12288 x 1536 = 154,618,822,656 each
    #   2 x 4096,12288;6144,12288 -> 618,475,290,624 each;  2 x 4096,6144;12288,6144 -> 618,475,290,624 each
    #   1 x 4096,12288;6400,12288 -> 644,245,094,400
    # total 4,355,096,838,144 flop in 14,070.56 us = 309.52 TFLOP/s = 87.46 % of 353.89: no model gain (>= 70 %).
    assert row.flops == 4_355_096_838_144
    assert row.achieved_tflops == pytest.approx(309.518, abs=1e-3)
    assert row.efficiency == pytest.approx(0.8746, abs=1e-4)
    assert row.model_gain_high is None and "no model gain" in row.basis


@pytest.mark.parametrize("level", ["level1", "level2"])
def test_msinsight_text_fp32_matmul_and_conv_with_a_measured_fp32_peak(real_profiles, tmp_path, monkeypatch, level):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text("chip: Ascend910B2\nfreq_mhz: 1800\ncube_tflops:\n  fp32: 100\n", encoding="utf-8")
    _, profile = load_profile(real_profiles / "msinsight-torch-npu" / "text" / level / "rank0_ascend_pt", peaks=peaks)
    matmul = _row(profile, "MatMulV2")
    if level == "level1":
        # Level1 MatMulV2 launches (FLOAT; 16.54 us one is < 20 us, not judged):
        #   32,9216;4096,9216 A·Bᵀ 2x32x9216x4096 = 2,415,919,104   32,4096;4096,9216 A·B  2,415,919,104
        #   32,4096;4096,4096 A·B (twice) 1,073,741,824 each           32,4096;1000,4096 A·Bᵀ 262,144,000
        #   32,1000;1000,4096 A·B 262,144,000                          32,4096;32,4096 A·Bᵀ (N=32) 8,388,608
        # total 7,511,998,464 flop over 346.567+287.666+114.922+45.921+57.241+21.98+30.661 = 904.958 us.
        assert matmul.flops == 7_511_998_464
        assert matmul.judged_time_us == pytest.approx(904.958, abs=1e-3)
        conv = _row(profile, "Conv2DBackpropInput")
        # FRACTAL_Z filter (C1*kh*kw, N1, 16, 8) + NC1HWC0 dy (32, Co1, Ho, Wo, 8): 2 x N x Ho x Wo x Cout x Cin*kh*kw
        #   288,16,16,8 / 32,32,13,13,8: 2 x 32 x 169 x 256 x 2304 = 6,379,536,384
        #   432,16,16,8 / 32,32,13,13,8: 2 x 32 x 169 x 256 x 3456 = 9,569,304,576
        #   216,24,16,8 / 32,48,13,13,8: 2 x 32 x 169 x 384 x 1728 = 7,176,978,432
        #   200,12,16,8 / 32,24,27,27,8: 2 x 32 x 729 x 192 x 1600 = 14,332,723,200
        # total 37,458,542,592 flop in 79.642+98.502+109.302+152.143 = 439.589 us = 85.21 TFLOP/s = 85.2 % of 100.
        assert conv.flops == 37_458_542_592
        assert conv.achieved_tflops == pytest.approx(85.213, abs=1e-3)
        assert conv.efficiency == pytest.approx(0.8521, abs=1e-3)
    else:
        assert matmul.status == "judged" and matmul.efficiency is not None
    assert "stride and padding" in _row(profile, "Conv2D").reason


def test_st_level2_cann83_matmul_and_attention(real_profiles, peaks_910b2):
    _, profile = load_profile(real_profiles / "msinsight-torch-npu" / "st-level2-cann8.3" / "rank_0_ascend_pt",
                              peaks=peaks_910b2)
    row = _row(profile, "MatMulV2")
    # 56 launches of "4096,4096;4096,1024" bf16 (A·B): 2 x 4096 x 4096 x 1024 = 34,359,738,368 each,
    # 1,924,145,348,608 in total over 10,022.1 us = 191.99 TFLOP/s = 54.25 % of 353.89.
    assert row.flops == 56 * 34_359_738_368
    assert row.achieved_tflops == pytest.approx(191.991, abs=1e-3)
    assert row.efficiency == pytest.approx(0.5425, abs=1e-4)
    # The forward FlashAttention has no softmax statistics among its inputs and a 2048x2048 compressed mask.
    assert "BSH or SBH cannot be told apart" in _row(profile, "FlashAttentionScore").reason
    assert _row(profile, "FlashAttentionScoreGrad").status == "judged"


def test_db_level1_names_only_the_family(real_profiles, monkeypatch, tmp_path):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    _, profile = load_profile(real_profiles / "msinsight-torch-npu" / "db" / "level1" / "rank0_ascend_pt")
    # NPU_INFO says "Ascend910B" (20- or 24-core parts) and AICORE_FREQ 1800: no core count, so no roofline.
    assert profile.roofline.rows == []
    note = profile.roofline.notes[0]
    assert note.startswith("cannot judge roofline: the AI Core count is not in the profile and the chip Ascend910B")
    # A peaks file naming the exact part applies to a profile that names only its family.
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text("chip: Ascend910B2\n", encoding="utf-8")
    _, profile = load_profile(real_profiles / "msinsight-torch-npu" / "db" / "level1" / "rank0_ascend_pt", peaks=peaks)
    assert profile.roofline.peaks["aic"] == 24 and profile.roofline.peaks["freq_mhz"] == 1800.0  # clock from AICORE_FREQ


def test_tilelang_op_summary_without_chip_or_shapes(real_profiles, monkeypatch, tmp_path):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    _, profile = load_profile(real_profiles / "tilelang-ascend" / "custom" / "sigmoid" / "Sigmoid" / "trace_data"
                              / "op_summary.csv")
    assert "PROF_*/device_*/info.json" in profile.roofline.notes[0]


def test_catlass_msprof_op_uses_the_measured_volumes(real_profiles, monkeypatch, tmp_path):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    path = (real_profiles / "catlass-msprof-op" / "device" / "02_fp32_cm_gemv_aiv" / "prof"
            / "OPPROF_20250304172135_UZXJVIHHTTNZFAJD")
    _, profile = load_profile(path)
    row = _row(profile, "FP32CMGemvAiv")
    # Memory.csv: read_main_memory_datas summed over the 60 rows = 277,710.75 KB, write = 179.5 KB
    # -> 277,890.25 KB x 1024 = 284,559,616 B in 494.24 us = 575.75 GB/s; 1600 GB/s (Ascend910B3) -> 35.98 %.
    assert row.work_source == "measured" and row.roof == "bandwidth"
    assert row.bytes == pytest.approx(284_559_616)
    assert row.achieved_gbps == pytest.approx(575.752, abs=1e-3)
    assert row.efficiency == pytest.approx(0.3598, abs=1e-4)


def test_tilelang_msprof_op_on_a_9362_has_its_cores_but_no_bandwidth_roof(real_profiles, monkeypatch, tmp_path):
    # Run Soc Version=Ascend910_9362: 20 AIC / 40 AIV from the CANN platform config; the run's own clock (Rated
    # Freq 1650) wins over the config's 1500; no HBM figure is sourced for A3 parts, so only the compute roof
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    path = (real_profiles / "tilelang-ascend" / "custom" / "sigmoid" / "perf_tuning" / "msprof_output_iter1_after"
            / "OPPROF_20260803154619_ETRNHYWCPRERQANJ")
    _, profile = load_profile(path)
    assert profile.device == {"chip": "Ascend910_9362", "aic": 20, "aiv": 40, "freq_mhz": 1650.0}
    assert profile.roofline.notes[0].startswith("cannot judge the bandwidth roof: no sourced HBM bandwidth for "
                                                "Ascend910_9362 (give hbm_gbps in --peaks FILE.yaml)")


SHAPED = [
    ("msprof-analyze-ut", "pt_llm_pmu_2025_ascend_pt"), ("msprof-analyze-ut", "pt_train_2023_ascend_pt"),
    ("msinsight-torch-npu", "text", "level1", "rank0_ascend_pt"), ("msinsight-torch-npu", "text", "level2", "rank0_ascend_pt"),
    ("msinsight-torch-npu", "st-level2-cann8.3", "rank_0_ascend_pt"), ("msinsight-torch-npu", "db", "level1", "rank0_ascend_pt"),
    ("tilelang-ascend", "custom", "sigmoid", "Sigmoid", "trace_data", "op_summary.csv"),
    ("catlass-msprof-op", "device", "02_fp32_cm_gemv_aiv", "prof", "OPPROF_20250304172135_UZXJVIHHTTNZFAJD"),
]


@pytest.mark.parametrize("parts", SHAPED, ids=lambda p: "/".join(p[1:3]))
def test_every_hot_matmul_and_attention_row_has_an_efficiency_or_a_reason(real_profiles, peaks_910b2, parts):
    path = real_profiles.joinpath(*parts)
    _, profile = load_profile(path, peaks=peaks_910b2 if parts[0] != "catlass-msprof-op" else None)
    compute = profile.compute_time_us
    hot = [r for r in profile.op_types if canonical_family(r.op_type) in ("MatMul", "FlashAttention")
           and r.time_us >= 0.01 * compute]
    for stat in hot:
        row = profile.roofline.row(stat.op_type, stat.unit)
        if row is None:  # only when the whole roofline could not be judged, and then the note says why
            assert any(n.startswith("cannot judge roofline") for n in profile.notes), stat.op_type
        else:
            assert row.efficiency is not None or row.reason, row
