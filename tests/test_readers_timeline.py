"""Timeline-only profiles: torch_npu trace_view.json and msprof msprof_*.json (readers/timeline_json.py).

Totals are checked against sums computed here with the json module over the "Ascend Hardware"
X events, selected by the rules documented in the reader: skip the non-kernel task types / names.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.readers import detect_format
from opprof_advisor.profiles import load_profile, read_profile
from opprof_advisor.testing import KernelSpec, write_torch_npu_text

TIMELINE_2024 = "msprof-analyze-ut/pt_timeline_2024_ascend_pt"
LEVEL1 = "msinsight-torch-npu/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
SKIP_TYPES = {"EVENT_RECORD_SQE", "EVENT_WAIT_SQE", "Notify Wait", "Write Value", "PLACE_HOLDER_SQE", "SDMA",
              "SDMA_SQE", "PCIE_DMA_SQE"}
SKIP_NAMES = {"MEMCPY_ASYNC", "EVENT_RECORD", "EVENT_WAIT", "Notify Wait", "Write Value", "SDMA",
              "PROFILING_ENABLE", "PROFILING_DISABLE"}
COLLECT = "collect kernel_details.csv with the torch_npu profiler / msprof --export"
UNIT_NOTE = ("cannot judge the unit of compute kernels (AI Core / AI Vector / mix): the timeline labels AI Vector "
             f"kernels AI_CORE too ({COLLECT})")


def _processes(events: list[dict]) -> dict[str, int]:
    return {e["args"]["name"]: e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}


def _hardware_kernels(events: list[dict]) -> list[dict]:
    pid = _processes(events)["Ascend Hardware"]
    return [e for e in events if e.get("pid") == pid and e.get("ph") == "X"
            and e["args"]["Task Type"] not in SKIP_TYPES and e["name"] not in SKIP_NAMES]


def _thread_sums(events: list[dict], process: str) -> dict[str, float]:
    pid = _processes(events)[process]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e["pid"] == pid}
    sums: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("pid") == pid and e.get("ph") == "X":
            sums[names[e["tid"]]] += e["dur"]
    return sums


def test_real_timeline_only_folder_is_read_with_totals_per_op_type(real_profiles):
    folder = real_profiles / TIMELINE_2024
    events = json.loads((folder / "ASCEND_PROFILER_OUTPUT/trace_view.json").read_text())
    kernels = _hardware_kernels(events)
    assert len(kernels) == 274  # 276 hardware tasks less the two MEMCPY_ASYNC copies
    raw, profile = load_profile(folder)
    assert profile.format == "torch-npu-timeline"
    assert len(raw.kernels) == len(kernels)
    assert profile.device_time_us == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-3)
    # the timeline's own Overlap Analysis "Computing" thread agrees with the selected kernels
    assert profile.device_time_us == pytest.approx(_thread_sums(events, "Overlap Analysis")["Computing"], abs=1e-2)
    assert profile.communication_time_us == 0.0
    rows = {(r.op_type, r.unit): r for r in profile.op_types}

    def total(select) -> float:
        return sum(e["dur"] for e in kernels if select(e))

    ai_cpu = total(lambda e: e["args"]["Task Type"] == "AI_CPU")
    assert rows[("Cast", "ai_cpu")].time_us == pytest.approx(ai_cpu, abs=1e-3)
    assert rows[("Cast", "ai_cpu")].count == 2
    assert rows[("Cast", "unknown")].time_us == pytest.approx(
        total(lambda e: re.search(r"(^|_)Cast(_\d+)?$", e["name"]) and e["args"]["Task Type"] != "AI_CPU"), abs=1e-3)
    assert rows[("TransData", "unknown")].time_us == pytest.approx(
        total(lambda e: "TransData" in e["name"] and not e["name"].endswith("_MemSet")), abs=1e-3)
    assert rows[("MatMulV2", "unknown")].time_us == pytest.approx(total(lambda e: e["name"].endswith("_MatMulV2")), abs=1e-3)
    assert rows[("MemSet", "unknown")].time_us == pytest.approx(total(lambda e: e["name"].endswith("MemSet")), abs=1e-3)
    # the unit is claimed only where the timeline names it: AI CPU; nothing is called AI Core / AI Vector
    assert {r.unit for r in profile.op_types} == {"unknown", "ai_cpu"}
    assert UNIT_NOTE in profile.notes
    assert f"op types were derived from kernel names: the timeline has no Type column ({COLLECT})" in profile.notes
    fallback = next(s for s in profile.symptoms if s.id == "aicpu_fallback")
    assert fallback.op_types == ["Cast"]
    (step,) = raw.extra["steps"]
    assert raw.extra["step_source"] == "timeline Overlap Analysis"
    assert step.exposed_us == 0.0 and step.communication_us == 0.0
    sums = _thread_sums(events, "Overlap Analysis")
    assert step.free_us == pytest.approx(sums["Free"]) and step.computing_us == pytest.approx(sums["Computing"])


def test_timeline_of_a_run_matches_its_kernel_details(real_profiles):
    # the msinsight level1 run has both files: the timeline alone must give kernel_details' totals
    out = real_profiles / LEVEL1
    with (out / "kernel_details.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    profile = read_profile(out / "trace_view.json")
    assert profile.format == "torch-npu-timeline"
    hccl = sum(float(r["Duration(us)"]) for r in rows if r["Accelerator Core"] == "HCCL")
    assert profile.communication_time_us == pytest.approx(hccl, abs=1e-2)
    assert profile.device_time_us == pytest.approx(sum(float(r["Duration(us)"]) for r in rows), abs=5e-2)
    by_type: dict[str, float] = defaultdict(float)
    for r in rows:
        if r["Accelerator Core"] != "HCCL":
            by_type[r["Type"]] += float(r["Duration(us)"])
    mine = {r.op_type: r.time_us for r in profile.op_types if r.unit != "communication"}
    assert mine.keys() == by_type.keys()
    assert all(mine[t] == pytest.approx(by_type[t], abs=1e-2) for t in by_type)
    steps = next(csv.DictReader((out / "step_trace_time.csv").read_text().splitlines()))
    exposed = next(s for s in profile.symptoms if s.id == "communication_exposed")
    assert exposed.share == pytest.approx(float(steps["Communication(Not Overlapped)"]) / float(steps["Stage"]), abs=1e-4)


def _trace(events: list[dict]) -> str:
    meta = [{"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "Ascend Hardware"}},
            {"ph": "M", "name": "thread_name", "pid": 9, "tid": 2, "args": {"name": "Stream 2"}}]
    return json.dumps(meta + events, indent=1)


def _task(name: str, ts: str, dur: float, task_type: str = "AI_CORE") -> dict:
    return {"ph": "X", "name": name, "pid": 9, "tid": 2, "ts": ts, "dur": dur, "args": {"Task Type": task_type}}


def test_kernel_details_beside_a_timeline_wins(tmp_path):
    root = write_torch_npu_text(tmp_path, [KernelSpec(name="aclnnAdd_AddAiCore_Add", op_type="Add",
                                                      task_type="AI_VECTOR_CORE", duration_us=5.0, count=3)])
    (root / "ASCEND_PROFILER_OUTPUT/trace_view.json").write_text(_trace([_task("Other_Kernel", "100.000", 999.0)]))
    assert detect_format(root).name == "torch-npu-text"
    profile = read_profile(root)
    assert profile.format == "torch-npu-text"
    assert [(r.op_type, r.unit, r.count) for r in profile.op_types] == [("Add", "ai_vector", 3)]
    assert profile.device_time_us == pytest.approx(15.0, abs=1e-3)


def test_msprof_timeline_only_prof_folder_and_waits(tmp_path):
    output = tmp_path / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP/mindstudio_profiler_output"
    output.mkdir(parents=True)
    (output / "msprof_20250101000000.json").write_text(_trace([
        _task("aclnnMm_MatMulCommon_MatMulV3", "1736408883704643.212", 50.0),
        _task("EVENT_RECORD", "1736408883704700.000", 0.02, "EVENT_RECORD_SQE"),
        _task("trans_Cast_3", "1736408883704703.212", 150.0, "AI_CPU"),
    ]))
    raw, profile = load_profile(tmp_path)
    assert profile.format == "msprof-timeline"
    assert raw.kernels.name == ["aclnnMm_MatMulCommon_MatMulV3", "trans_Cast_3"]
    assert raw.kernels.wait_us == [None, 10.0]  # 703.212 - (643.212 + 50), the event record skipped
    assert [(r.op_type, r.unit, r.time_us) for r in profile.op_types] == [("Cast", "ai_cpu", 150.0),
                                                                          ("MatMulV3", "unknown", 50.0)]
    # with op_summary beside it, the CSV is read
    (output / "op_summary_20250101000000.csv").write_text("Op Name,OP Type,Task Type,Task Duration(us)\nAdd,Add,AI_CORE,2.5\n")
    assert read_profile(tmp_path).format == "msprof-text"


def test_malformed_timeline_is_one_line_naming_file_and_line(runner, tmp_path):
    out = tmp_path / "run_ascend_pt/ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    trace = out / "trace_view.json"
    trace.write_text('[\n{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "1.0", "dur": 1.0},\n{"ph": "X" "name": "b"}\n]\n')
    result = runner.invoke(app, ["profile", str(tmp_path / "run_ascend_pt")])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        (f"error: {trace}:3: not valid JSON (Expecting ',' delimiter) — the file is cut or edited; re-export it, "
        f"or {COLLECT}")]


def test_truncated_and_oversized_timelines(runner, tmp_path):
    trace = tmp_path / "trace_view.json"
    trace.write_text(_trace([_task("Add", "1.000", 1.0)])[:-2])
    result = runner.invoke(app, ["profile", str(trace)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {trace}:")
    assert "not valid JSON" in result.stderr or "truncated" in result.stderr
    big = tmp_path / "big" / "trace_view.json"
    big.parent.mkdir()
    with big.open("wb") as handle:  # sparse: nothing is written, nothing must be read
        handle.truncate(2 * 2**30)
    result = runner.invoke(app, ["profile", str(big.parent)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {big}: timeline of 2.0 GB is above the 1 GB this reader parses — {COLLECT}"]


def test_timeline_notes_ask_for_the_summaries_not_a_profiler_level(real_profiles):
    # The columns are missing because a timeline never carries them, not because of the level.
    notes = read_profile(real_profiles / TIMELINE_2024).notes
    cannot = [n for n in notes if n.startswith("cannot judge")]
    assert "cannot judge block dim: Block Dim / Block Num is not recorded (collect with kernel_details.csv from " \
           "the torch_npu profiler, or msprof --export=on for op_summary)" in cannot
    assert not any("profiler_level" in n or "level0" in n for n in notes)
    assert len(cannot) == len(set(cannot))
