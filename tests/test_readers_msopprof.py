"""msprof op (msOpProf) device and simulator readers: real catlass / tilelang output and synthetic round trips."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

import pytest

from opprof_advisor.core.errors import ProfileError

from opprof_advisor import testing
from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.profiles import build_profile
from opprof_advisor.readers.msopprof_device import MsopprofDeviceReader, read_msopprof_device
from opprof_advisor.readers.msopprof_simulator import (MsopprofSimulatorReader, read_msopprof_simulator,
                                                       read_summary_logs)
from opprof_advisor.core.units import TEXT as U

CATLASS_CM = "catlass-msprof-op/device/02_fp32_cm_gemv_aiv/prof/OPPROF_20250304172135_UZXJVIHHTTNZFAJD"
CATLASS_RM = "catlass-msprof-op/device/02_fp32_rm_gemv_aiv/prof/OPPROF_20250304222326_WHJPXTHYGIMBZNZI"
TILELANG = "tilelang-ascend/custom/sigmoid/perf_tuning"
TILELANG_AFTER = TILELANG + "/msprof_output_iter1_after/OPPROF_20260803154619_ETRNHYWCPRERQANJ"
TILELANG_512 = TILELANG + "/msprof_output_iter1/OPPROF_20260803153518_MNJZZROZPPYUQFTT"
CATLASS_SIM = "catlass-msprof-op/simulator/01_fp16_cm_gemv_aiv/sim_result/OPPROF_20250306124456_BNDNKFSBWODOSYHT"


def pipe_rows(path: Path) -> list[dict[str, str]]:
    """PipeUtilization rows as dicts, read with the csv module (the trailing empty column dropped)."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0][:-1]
    return [dict(zip(header, r[:-1])) for r in rows[1:]]


def side_times(rows: list[dict[str, str]], column: str) -> list[float]:
    return [float(r[column]) for r in rows if r[column] not in ("N/A", "NA")]


def critical_max(times: list[float], values: list[float]) -> float:
    """A pipe's highest ratio on the sub-cores that end last (within 5 % of the longest): the kernel's time."""
    return max(v for t, v in zip(times, values) if t >= 0.95 * max(times))


# ------------------------------------------------------------------------------------------------
# Device: real files
# ------------------------------------------------------------------------------------------------


def test_catlass_cm_gemv_basic_info(real_profiles):
    raw = read_msopprof_device(real_profiles / CATLASS_CM)
    k = raw.kernels
    assert raw.format == "msopprof-device"
    assert raw.chip == "Ascend910B3"
    assert k.name == ["FP32CMGemvAiv"] and k.op_type == ["FP32CMGemvAiv"] and k.task_type == ["mix"]
    assert k.duration_us == [pytest.approx(494.239990)]
    assert k.block_dim == [20] and k.mix_block_dim == [40]
    assert raw.versions["pipe_utilization_header"] == "2025-03"
    assert raw.kernel_detail["current_freq_mhz"] is None  # Current Freq=N/A in the file
    assert raw.kernel_detail["rated_freq_mhz"] == 1800
    assert raw.extra["op_type_derived"] is True
    assert len(raw.kernel_detail["metric_files"]) == 7


def test_catlass_cm_gemv_block_imbalance_matches_csv(real_profiles):
    folder = real_profiles / CATLASS_CM
    rows = pipe_rows(folder / "PipeUtilization.csv")
    aiv = side_times(rows, "aiv_time(us)")
    vector_rows = [r for r in rows if r["aiv_time(us)"] != "N/A"]
    slowest = max(vector_rows, key=lambda r: float(r["aiv_time(us)"]))
    mean = sum(aiv) / len(aiv)
    detail = read_msopprof_device(folder).kernel_detail
    imb = detail["imbalance"]["vector"]
    assert detail["block_time_us"]["vector"] == aiv
    assert len(aiv) == 40 and len(detail["block_time_us"]["cube"]) == 20
    assert imb["max_over_min"] == pytest.approx(max(aiv) / min(aiv))
    assert imb["max_over_mean"] == pytest.approx(max(aiv) / mean)
    assert imb["cv"] == pytest.approx(math.sqrt(sum((t - mean) ** 2 for t in aiv) / len(aiv)) / mean)
    assert imb["slowest"] == {"block_id": int(slowest["block_id"]), "sub_block_id": slowest["sub_block_id"],
                              "time_us": float(slowest["aiv_time(us)"])}
    # the spread FORMATS.md quotes: block 0 vector0 runs ~386.8 us, far above the fastest rows
    assert detail["block_time_us"]["vector"][0] == pytest.approx(386.785004)
    assert imb["max_over_min"] > 100


def test_catlass_cm_gemv_pipe_ratios_match_csv(real_profiles):
    folder = real_profiles / CATLASS_CM
    rows = pipe_rows(folder / "PipeUtilization.csv")
    detail = read_msopprof_device(folder).kernel_detail
    times = side_times(rows, "aiv_time(us)")
    for key, column in (("aiv_mte2", "aiv_mte2_ratio"), ("aiv_vec", "aiv_vec_ratio")):
        values = side_times(rows, column)
        # read on the sub-cores that end last (block 7, 490 us, while the others end near 388 us): they decide the
        # kernel time; the time-weighted mean over all of them is kept beside it
        assert detail["pipe_ratio"][key] == pytest.approx(critical_max(times, values))
        assert detail["pipe_ratio_mean"][key] == pytest.approx(sum(t * v for t, v in zip(times, values)) / sum(times))
        assert detail["pipe_ratio_max"][key] == pytest.approx(max(values))
    # the cube sub-cores run 1-5 us of a 494 us kernel: an idle side, whose ratios say nothing
    assert detail["working_sides"] == ["vector"] and "aic_scalar" not in detail["pipe_ratio"]
    assert detail["pipe_ratio_max"]["aic_scalar"] == pytest.approx(max(side_times(rows, "aic_scalar_ratio")))
    assert detail["bound_pipe"]["vector"] == "aiv_mte2"
    assert detail["bound"]["pipe"] == "aiv_mte2"


def test_catlass_rm_gemv(real_profiles):
    raw = read_msopprof_device(real_profiles / CATLASS_RM)
    assert raw.kernels.name == ["FP32RMGemvAiv"]
    assert raw.kernels.duration_us == [pytest.approx(269.179993)]
    assert raw.kernels.pipe["aiv_vec"][0] == pytest.approx(raw.kernel_detail["pipe_ratio"]["aiv_vec"])


def test_tilelang_2026_header_with_na(real_profiles):
    folder = real_profiles / TILELANG_AFTER
    rows = pipe_rows(folder / "PipeUtilization.csv")
    raw = read_msopprof_device(folder)
    detail = raw.kernel_detail
    assert raw.chip == "Ascend910_9362"
    assert raw.kernels.duration_us == [pytest.approx(53.618927)]
    assert raw.kernels.block_dim == [24] and raw.kernels.mix_block_dim == [48]
    assert detail["pipe_header"] == "2026"
    assert len(detail["block_time_us"]["cube"]) == 24 and len(detail["block_time_us"]["vector"]) == 48
    vec, times = side_times(rows, "aiv_vec_ratio"), side_times(rows, "aiv_time(us)")
    assert detail["pipe_ratio"]["aiv_vec"] == pytest.approx(critical_max(times, vec))
    assert detail["pipe_ratio_mean"]["aiv_vec"] == pytest.approx(sum(t * v for t, v in zip(times, vec)) / sum(times))
    # the 2026 header moves scalar after icache: found by name, not position (the cube side is idle here,
    # 0.5 us against 27 us of vector time, so only its maximum is kept)
    scalar = side_times(rows, "aic_scalar_ratio")
    assert detail["pipe_ratio_max"]["aic_scalar"] == pytest.approx(max(scalar))
    assert detail["working_sides"] == ["vector"]


def test_tilelang_basic_info_only_notes_what_is_missing(real_profiles):
    raw = read_msopprof_device(real_profiles / TILELANG_512 / "OpBasicInfo.csv")
    assert raw.kernels.block_dim == [512] and raw.kernels.mix_block_dim == [1024]
    assert raw.kernels.duration_us == [pytest.approx(71.918564)]
    assert raw.chip is None
    assert "pipe" not in raw.kernels.present
    assert "PipeUtilization.csv is missing from the OPPROF output (--aic-metrics did not include it)" in raw.notes
    profile = build_profile(raw)
    assert ("cannot judge bound class: no pipe ratio columns (aic_mac_ratio, aiv_vec_ratio ...) in the profile "
            "(collect with msprof op --aic-metrics=PipeUtilization)") in profile.notes
    assert any("Run Soc Version" in n for n in profile.notes)


def test_a_parent_of_two_runs_is_refused_naming_each_run_and_the_compare_command(real_profiles):
    # a "before" and an "after" of one kernel: never summed into one profile
    with pytest.raises(ProfileError) as caught:
        read_msopprof_device(real_profiles / TILELANG)
    message, hint = caught.value.message, caught.value.hint
    assert message == ("2 msprof op runs in one folder: msprof_output_iter1/OPPROF_20260803153518_MNJZZROZPPYUQFTT "
                       "(main_kernel, 71.9 µs); msprof_output_iter1_after/OPPROF_20260803154619_ETRNHYWCPRERQANJ "
                       "(main_kernel, 53.6 µs)")
    assert hint.endswith(f"advisor compare {real_profiles / TILELANG_512} {real_profiles / TILELANG_AFTER}")
    # one run, even with several launch folders below it, is one profile
    assert read_msopprof_device(real_profiles / TILELANG_AFTER).format == "msopprof-device"


def test_detection_tells_device_from_simulator(real_profiles):
    device, sim = MsopprofDeviceReader(), MsopprofSimulatorReader()
    assert device.detect(real_profiles / CATLASS_CM) and not sim.detect(real_profiles / CATLASS_CM)
    assert sim.detect(real_profiles / CATLASS_SIM) and not device.detect(real_profiles / CATLASS_SIM)
    assert not device.detect(real_profiles / "msinsight-torch-npu")


# ------------------------------------------------------------------------------------------------
# Device: synthetic round trips and bad input
# ------------------------------------------------------------------------------------------------

MATMUL = dict(name="MatMulV3_kernel", task_type="mix", duration_us=250.0, block_dim=20, mix_block_dim=40,
              pipe={"aic_cube": 0.4, "aic_mte2": 0.85, "aiv_vec": 0.2, "aiv_mte2": 0.3})


@pytest.mark.parametrize("generation", sorted(testing.MSOPPROF_GENERATIONS))
def test_synthetic_generations_round_trip(tmp_path, generation):
    root = testing.write_msopprof_device(tmp_path, MATMUL, generation=generation, chip="Ascend910B2")
    raw = read_msopprof_device(root)
    detail = raw.kernel_detail
    assert raw.kernels.duration_us == [250.0] and raw.chip == "Ascend910B2"
    assert detail["pipe_header"] == generation
    assert detail["bound"]["pipe"] == "aic_mte2"
    assert detail["pipe_ratio"]["aic_mte2"] == pytest.approx(0.85, rel=0.06)
    missing = testing.MSOPPROF_GENERATIONS[generation][1]
    assert (root / "PipeUtilization.csv").read_text().splitlines()[1].endswith(f"{missing},")


def test_synthetic_imbalance_is_measured(tmp_path):
    root = testing.write_msopprof_device(tmp_path, dict(MATMUL, task_type="cube"), imbalance=3.0)
    imb = read_msopprof_device(root).kernel_detail["imbalance"]["cube"]
    assert imb["rows"] == 20
    assert imb["max_over_min"] == pytest.approx(3.0, rel=0.03)
    assert imb["slowest"]["time_us"] <= 250.0


def test_synthetic_multi_op_layout_one_row_per_launch(tmp_path):
    kernels = [MATMUL, dict(name="Add_kernel", task_type="vector", duration_us=4.0, block_dim=8, count=3)]
    root = testing.write_msopprof_device(tmp_path, kernels)
    assert sorted(p.name for p in (root / "Add_kernel").iterdir()) == ["0", "1", "2"]
    assert next((root / "Add_kernel" / "2").glob("OpBasicInfo_*.csv"))
    raw = read_msopprof_device(root)
    assert sorted(raw.kernels.name) == ["Add_kernel"] * 3 + ["MatMulV3_kernel"]
    totals = {}
    for name, d in zip(raw.kernels.name, raw.kernels.duration_us):
        totals[name] = totals.get(name, 0.0) + d
    assert totals == pytest.approx(testing.spec_totals(kernels))
    assert raw.kernel_detail["kernel"] == "MatMulV3_kernel"
    assert raw.kernels.task_type.count("vector") == 3


def test_header_only_basic_info(tmp_path):
    path = tmp_path / "OpBasicInfo.csv"
    path.write_text("Op Name,Op Type,Task Duration(us),Block Dim,Mix Block Dim,Device Id,Pid,Current Freq,Rated Freq,\n")
    with pytest.raises(MalformedProfile) as err:
        read_msopprof_device(path)
    assert str(err.value).startswith(f"{path}:1: no data rows")


def test_non_numeric_duration_names_line(tmp_path):
    path = tmp_path / "OpBasicInfo.csv"
    path.write_text("Op Name,Op Type,Task Duration(us),Block Dim,\nk,vector,fast,8,\n")
    with pytest.raises(MalformedProfile) as err:
        read_msopprof_device(path)
    assert err.value.path == str(path) and err.value.line == 2
    assert "'fast'" in err.value.message


def test_missing_duration_column(tmp_path):
    path = tmp_path / "OpBasicInfo.csv"
    path.write_text("Op Name,Op Type,Block Dim,\nk,vector,8,\n")
    with pytest.raises(MalformedProfile) as err:
        read_msopprof_device(path)
    assert "Task Duration(us)" in err.value.message and err.value.line == 1


def test_zero_byte_basic_info(tmp_path):
    path = tmp_path / "OpBasicInfo.csv"
    path.write_bytes(b"")
    with pytest.raises(MalformedProfile) as err:
        read_msopprof_device(path)
    assert err.value.path == str(path) and "empty" in err.value.message


def test_symlink_loop_does_not_hang_detection(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    assert not MsopprofDeviceReader().detect(tmp_path)


# ------------------------------------------------------------------------------------------------
# Simulator
# ------------------------------------------------------------------------------------------------


def merged_busy(events: list[dict], pid: int) -> float:
    """Busy µs of one pipe: sweep over sorted boundaries (independent of the reader's merge)."""
    points = sorted([(e["ts"], 1) for e in events if e.get("ph") == "X" and e["pid"] == pid]
                    + [(e["ts"] + e["dur"], -1) for e in events if e.get("ph") == "X" and e["pid"] == pid],
                    key=lambda p: (p[0], -p[1]))
    busy, depth, last = 0.0, 0, None
    for t, step in points:
        if depth > 0:
            busy += t - last
        depth += step
        last = t
    return busy


def test_catlass_simulator(real_profiles):
    root = real_profiles / CATLASS_SIM
    raw = read_msopprof_simulator(root)
    detail = raw.kernel_detail
    spans = {}
    for core in ("core0.cubecore0", "core1.veccore0", "core1.veccore1"):
        events = json.loads((root / "simulator" / core / "trace.json").read_text())["traceEvents"]
        xs = [e for e in events if e.get("ph") == "X"]
        spans[core] = max(e["ts"] + e["dur"] for e in xs) - min(e["ts"] for e in xs)
        names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
        for pid, pipe in names.items():
            assert detail["cores"][core]["pipe_busy_us"][pipe] == pytest.approx(merged_busy(events, pid), abs=1e-9)
    assert raw.format == "msopprof-simulator"
    assert raw.kernels.duration_us[0] > max(spans.values())  # the untraced core0.veccore0 ran longer
    assert detail["slowest_core"] == "core0.veccore0"
    assert detail["block_dim"] == 20 and detail["trace_schema"] == 1
    assert raw.kernels.task_type == ["mix"]
    assert detail["cores"]["core0.veccore0"]["has_trace"] is False
    assert any("core0.veccore0" in n and n.startswith("cannot judge pipe busy time") for n in raw.notes)
    assert any(n.startswith("cannot judge device task duration") for n in raw.notes)


def instr_rows(sim: Path) -> list[dict[str, str]]:
    rows = []
    for csv_path in sorted(sim.glob("*/*_instr_exe.csv")):
        with csv_path.open(newline="") as fh:
            rows += list(csv.DictReader(fh))
    return rows


def log_ticks(log: Path) -> list[int]:
    """The 'kernal total ticks : N' values of a simulator summary log, read line by line."""
    return [int(line.split(":")[1]) for line in log.read_text().splitlines() if line.startswith("kernal total ticks")]


def test_catlass_simulator_times_the_untraced_core_from_the_summary_log(real_profiles):
    root = real_profiles / CATLASS_SIM
    raw = read_msopprof_simulator(root)
    detail = raw.kernel_detail
    timed = [r for r in instr_rows(root / "simulator") if float(r["running_time(us)"]) >= 1.0]
    clock = statistics.median(int(r["cycles"]) / float(r["running_time(us)"]) for r in timed)
    ticks = log_ticks(root / "dump" / "core0_summary_log")
    assert len(ticks) == 3 and max(ticks) > 10 * min(ticks)  # cube sub-core + two vector sub-cores of core0
    assert detail["clock_mhz"] == pytest.approx(clock)
    assert raw.kernels.duration_us == [pytest.approx(max(ticks) / clock)]
    assert raw.kernels.duration_us[0] == pytest.approx(39.6, abs=0.1)
    # the clock agrees with the trace: single instructions' cycles / their trace duration
    events = json.loads((root / "simulator" / "core1.veccore0" / "trace.json").read_text())["traceEvents"]
    durs: dict[str, list[float]] = {}
    for e in events:
        if e.get("ph") == "X":
            durs.setdefault(e["args"]["pc_addr"], []).append(e["dur"])
    with (root / "simulator" / "core1.veccore0" / "core1.veccore0_instr_exe.csv").open(newline="") as fh:
        once = [int(r["cycles"]) / durs[r["addr"]][0] for r in csv.DictReader(fh)
                if r["call_count"] == "1" and len(durs.get(r["addr"], [])) == 1 and durs[r["addr"]][0] > 0.05]
    assert detail["clock_mhz"] == pytest.approx(statistics.median(once), rel=0.01)
    core = detail["cores"]["core0.veccore0"]
    assert core["log_ticks"] == ticks and core["time_bound_us"] == pytest.approx(max(ticks) / clock)
    # 2 of the 20 AI Cores of block dim 20 are in the snapshot: the time is a lower bound, and said so
    assert detail["kernel_time_complete"] is False
    [note] = [n for n in raw.notes if n.startswith("cannot judge kernel time")]
    assert "2 AI Core folders (core0, core1) of the 20 that block dim 20 runs on" in note
    assert f"{U.time(max(ticks) / clock)} is a lower bound" in note
    assert any(n.startswith("kernel time 39.6 µs from dump/core0_summary_log") and f"{max(ticks):,} ticks" in n
               for n in raw.notes)
    assert "vector" not in detail["block_time_us"]  # an untimed vector core: no imbalance claim


def test_summary_log_sections(real_profiles):
    log = real_profiles / CATLASS_SIM / "dump"
    sections = read_summary_logs(log)
    assert [s["ticks"] for s in sections] == log_ticks(log / "core0_summary_log")
    assert [s["core"] for s in sections] == [0, 0, 0] and {s["block_dim"] for s in sections} == {20}
    assert all(s["ticks"] == s["end"] - s["start"] - 1 for s in sections)


def _drop_trace(root: Path, core: str) -> float:
    """Remove one per-core trace.json; return that core's span read from it."""
    trace = root / "simulator" / core / "trace.json"
    xs = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    trace.unlink()
    return max(e["ts"] + e["dur"] for e in xs) - min(e["ts"] for e in xs)


def test_untraced_core_without_a_clock_is_a_lower_bound(tmp_path):
    spec = dict(name="gemv", task_type="vector", duration_us=15.0)
    root = testing.write_msopprof_simulator(tmp_path, spec, cores=3, schema=1)
    _drop_trace(root, "core0.veccore0")
    spans = {}
    for trace in root.glob("simulator/*/trace.json"):
        xs = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
        spans[trace.parent.name] = max(e["ts"] + e["dur"] for e in xs) - min(e["ts"] for e in xs)
    raw = read_msopprof_simulator(root)  # running_time(us) is 0 in every synthetic row: no clock
    assert raw.kernel_detail["clock_mhz"] is None
    assert raw.kernels.duration_us == [pytest.approx(max(spans.values()))]
    assert raw.kernel_detail["kernel_time_complete"] is False
    [note] = [n for n in raw.notes if n.startswith("cannot judge kernel time")]
    assert "the ticks of core0.veccore0 cannot be turned into µs" in note


def test_untraced_core_with_a_clock_takes_the_log_time(tmp_path):
    spec = dict(name="gemv", task_type="vector", duration_us=15.0)
    root = testing.write_msopprof_simulator(tmp_path, spec, cores=3, schema=1)
    span = _drop_trace(root, "core0.veccore0")
    csv_path = root / "simulator" / "core0.veccore0" / "core0.veccore0_instr_exe.csv"
    with csv_path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    for row in rows[1:]:  # what a real untraced core carries: running_time(us) = cycles at 1800 MHz
        row[5] = f"{int(row[4]) / 1800:.6f}"
    with csv_path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    ticks = log_ticks(root / "dump" / "core0_summary_log")
    raw = read_msopprof_simulator(root)
    assert raw.kernel_detail["clock_mhz"] == pytest.approx(1800)
    assert raw.kernels.duration_us == [pytest.approx(max(ticks) / 1800)]
    assert raw.kernels.duration_us[0] == pytest.approx(span, abs=0.001)
    assert raw.kernel_detail["kernel_time_complete"] is True
    assert not any(n.startswith("cannot judge kernel time") for n in raw.notes)


def test_untraced_core_without_a_log_is_a_lower_bound(tmp_path):
    root = testing.write_msopprof_simulator(tmp_path, dict(name="k", task_type="vector", duration_us=9.0),
                                              cores=2, schema=1)
    _drop_trace(root, "core1.veccore1")
    (root / "dump" / "core0_summary_log").unlink()
    raw = read_msopprof_simulator(root)
    assert raw.kernel_detail["kernel_time_complete"] is False
    [note] = [n for n in raw.notes if n.startswith("cannot judge kernel time")]
    assert note.startswith("cannot judge kernel time: core1.veccore1 has no trace events and no "
                           "dump/core<N>_summary_log")


def test_catlass_simulator_hot_instructions_match_csv(real_profiles):
    root = real_profiles / CATLASS_SIM / "simulator"
    best = None
    for csv_path in root.glob("*/*_instr_exe.csv"):
        with csv_path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                if best is None or int(row["cycles"]) > best[1]:
                    best = (row["instr"], int(row["cycles"]), row["addr"])
    hot = read_msopprof_simulator(root.parent).kernel_detail["hot_instructions"][0]
    assert (hot["instr"], hot["cycles"], hot["addr"]) == best


@pytest.mark.parametrize("schema", [1, 2])
def test_synthetic_simulator_round_trip(tmp_path, schema):
    spec = dict(name="gemv", task_type="mix", duration_us=15.0, pipe={"aiv_vec": 0.7, "aic_cube": 0.5})
    root = testing.write_msopprof_simulator(tmp_path, spec, cores=3, schema=schema)
    assert (root / "simulator" / "trace.json").is_file() == (schema == 2)
    raw = read_msopprof_simulator(root)
    assert raw.kernels.duration_us == [pytest.approx(15.0)]
    assert raw.kernel_detail["trace_schema"] == schema
    assert len(raw.kernel_detail["cores"]) == 9
    assert raw.kernel_detail["pipe_ratio"]["aiv_vec"] == pytest.approx(0.7, rel=0.05)
    assert raw.kernel_detail["pipe_ratio"]["aic_cube"] == pytest.approx(0.5, rel=0.05)


def test_simulator_bad_trace_json(tmp_path):
    root = testing.write_msopprof_simulator(tmp_path, dict(name="k", task_type="vector"), schema=2)
    trace = root / "simulator" / "trace.json"
    trace.write_text('{"traceEvents": [')
    with pytest.raises(MalformedProfile) as err:
        read_msopprof_simulator(root)
    assert err.value.path == str(trace) and "not valid JSON" in err.value.message


# ------------------------------------------------------------------------------------------------
# Through the registry
# ------------------------------------------------------------------------------------------------


def test_registry_detects_device_and_simulator(real_profiles):
    from opprof_advisor.readers import detect_format
    from opprof_advisor.profiles import read_profile

    assert detect_format(real_profiles / CATLASS_CM).name == "msopprof-device"
    assert detect_format(real_profiles / CATLASS_SIM).name == "msopprof-simulator"
    profile = read_profile(real_profiles / CATLASS_CM)
    assert profile.format == "msopprof-device"
    assert profile.device_time_us == pytest.approx(494.239990)
    assert profile.kernel["imbalance"]["vector"]["slowest"]["block_id"] == 7


def test_matmul_example_reads_as_a_low_block_dim_mte2_kernel():
    from opprof_advisor.readers import read_raw

    example = Path(__file__).resolve().parent.parent / "data" / "examples" / "matmul_msopprof"
    if not example.is_dir():
        pytest.skip("data/examples not generated")
    raw = read_raw(example)
    assert raw.format == "msopprof-device" and raw.chip == "Ascend910B2"
    assert raw.core_counts == {"aic": 24, "aiv": 48}
    assert raw.kernels.block_dim == [16] and raw.kernels.duration_us == [186.4]
    assert raw.kernel_detail["bound"]["pipe"] == "aic_mte2"
    assert raw.kernel_detail["imbalance"]["cube"]["max_over_min"] > 3


def test_multi_device_layout_and_bom(tmp_path):
    made = testing.write_msopprof_device(tmp_path / "x", [MATMUL, dict(name="Add_kernel", task_type="vector")])
    root = tmp_path / made.name
    (root / "device3").mkdir(parents=True)
    for child in made.iterdir():
        child.rename(root / "device3" / child.name)
    basic = next((root / "device3" / "Add_kernel" / "0").glob("OpBasicInfo_*.csv"))
    basic.write_bytes(b"\xef\xbb\xbf" + basic.read_bytes())  # re-saved by a spreadsheet tool
    raw = read_msopprof_device(root)
    assert sorted(raw.kernels.name) == ["Add_kernel", "MatMulV3_kernel"]
    assert raw.kernels.task_type[raw.kernels.name.index("Add_kernel")] == "vector"


def test_310p_pipe_utilization_without_block_columns(tmp_path):
    (tmp_path / "OpBasicInfo.csv").write_text(
        "Op Name,Op Type,Task Duration(us),Block Dim,Device Id,Pid,Current Freq,Rated Freq,\n"
        "add_custom,vector,12.500000,8,0,4242,1000,1000,\n")
    header = ("aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),aic_scalar_ratio,"
              "aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_mte3_time(us),aic_mte3_ratio,"
              "aic_icache_miss_rate,aic_vec_time(us),aic_vec_ratio,")
    rows = [f"{t:.6f},{int(t * 1000)},0.000000,0.000000,1.0,0.100000,0,0,5.0,0.400000,2.0,0.200000,0,{t * 0.7:.6f},"
            f"{v:.6f}," for t, v in ((10.0, 0.7), (11.0, 0.65), (6.0, 0.8))]
    (tmp_path / "PipeUtilization.csv").write_text("\n".join([header] + rows) + "\n")
    detail = read_msopprof_device(tmp_path).kernel_detail
    assert detail["pipe_header"] == "310P"
    assert detail["block_time_us"] == {"cube": [10.0, 11.0, 6.0]}
    assert detail["block_ids"] == {"cube": [0, 1, 2]}
    assert detail["pipe_ratio"]["vec"] == pytest.approx(0.65)  # the 11 us core ends last (10 us is not within 5 %)
    assert detail["pipe_ratio_mean"]["vec"] == pytest.approx((10 * 0.7 + 11 * 0.65 + 6 * 0.8) / 27)
    assert detail["bound_pipe"] == {"cube": "vec"} and detail["mix_block_dim"] is None


def test_a_mix_block_with_one_scalar_bound_vector_sub_core_is_scalar_bound(tmp_path):
    # one block, two vector sub-cores ending together: 0.97 and 0.20 scalar averaged to 0.585 hid the bound
    root = testing.write_msopprof_device(tmp_path, testing.KernelSpec(
        "OneBlock", task_type="mix", duration_us=400.0, block_dim=1, mix_block_dim=2,
        pipe={"aiv_vec": 0.2, "aiv_scalar": 0.2, "aiv_mte2": 0.3}), chip="Ascend910B3", metrics=("PipeUtilization",))
    pipe = root / "PipeUtilization.csv"
    lines = pipe.read_text().splitlines()
    header = lines[0].split(",")
    at = header.index("aiv_scalar_ratio")
    for number, line in enumerate(lines):
        cells = line.split(",")
        if len(cells) > at and cells[1:2] == ["vector0"]:
            cells[at] = "0.970000"
            lines[number] = ",".join(cells)
    pipe.write_text("\n".join(lines) + "\n")
    detail = read_msopprof_device(root).kernel_detail
    assert detail["pipe_ratio"]["aiv_scalar"] == pytest.approx(0.97)
    assert detail["bound_pipe"]["vector"] == "aiv_scalar"


def test_memory_detail_columns_are_recognised(tmp_path):
    root = testing.write_msopprof_device(tmp_path, MATMUL, metrics=("PipeUtilization",))
    pipe = root / "PipeUtilization.csv"
    lines = pipe.read_text().splitlines()
    extra = ["aic_mte1_active_bw(GB/s),aic_mte2_active_bw(GB/s),"] + [
        ("12.5,80.25," if ",cube0," in line else "NA,NA,") for line in lines[1:]]
    pipe.write_text("\n".join(line + add for line, add in zip(lines, extra)) + "\n")
    detail = read_msopprof_device(root).kernel_detail
    assert detail["pipe_header"] == "2026+MemoryDetail"
    assert detail["bound"]["pipe"] == "aic_mte2"
    assert detail["metric_files"] == ["PipeUtilization.csv"]
