"""Memory (issue: memory and serving): peaks per allocator component, the gap at the peak, holders, memory outside
the allocator, and the findings with what they can give back — on the real torch_npu DB and on text exports."""

from __future__ import annotations

import json
import sqlite3

import pytest

from opprof_advisor.cli.app import app
from opprof_advisor.profiles import read_profile
from opprof_advisor.testing import KernelSpec, write_torch_npu_text

DB_RUN = "msinsight-torch-npu/db/level1/rank0_ascend_pt"
DB_FILE = DB_RUN + "/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
MIB = 1024 * 1024


def _hand(real_profiles):
    """The figures summed here with plain SQL over the real DB (FORMATS.md §10.5 lists the same)."""
    con = sqlite3.connect(f"file:{real_profiles / DB_FILE}?mode=ro", uri=True)
    peaks = dict((name, (alloc, reserved)) for name, alloc, reserved in con.execute(
        "SELECT s.value, MAX(totalAllocated), MAX(totalReserved) FROM MEMORY_RECORD m JOIN STRING_IDS s "
        "ON s.id = m.component GROUP BY s.value"))
    # the PTA+GE records at the reserved peak: the busiest of them leaves the gap
    (busiest, at), = con.execute(
        "SELECT MAX(totalAllocated), timestamp FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component "
        "WHERE s.value = 'PTA+GE' AND totalReserved = (SELECT MAX(totalReserved) FROM MEMORY_RECORD m2 JOIN "
        "STRING_IDS s2 ON s2.id = m2.component WHERE s2.value = 'PTA+GE')")
    held = dict(con.execute(
        "SELECT s.value, SUM(size) FROM OP_MEMORY o JOIN STRING_IDS s ON s.id = o.name WHERE allocationTime <= ? "
        "AND (releaseTime IS NULL OR releaseTime > ?) GROUP BY s.value", (at, at)))
    hccl = con.execute("SELECT MAX(totalReserved) FROM NPU_MODULE_MEM n JOIN ENUM_MODULE e ON e.id = n.moduleId "
                       "WHERE e.name = 'HCCL'").fetchone()[0]
    return peaks, busiest, held, hccl


def test_the_real_db_gives_peaks_gap_and_holders_of_a_hand_sum(real_profiles):
    peaks, busiest, held, hccl = _hand(real_profiles)
    assert peaks["PTA+GE"] == (1263251456, 1600913408)  # FORMATS.md §10.5
    profile = read_profile(real_profiles / DB_RUN)
    memory = profile.memory
    assert {c["component"]: (c["peak_allocated"], c["peak_reserved"]) for c in memory["components"]} == peaks
    peak = memory["peak"]
    assert (peak["component"], peak["reserved"], peak["allocated"]) == ("PTA+GE", 1600913408, busiest)
    assert peak["gap"] == 1600913408 - busiest == 337661952  # 322 MiB, 21.1 % of the peak
    top = max(held, key=held.get)
    assert memory["holders"][0]["name"] == top and memory["holders"][0]["bytes"] == held[top]
    assert memory["holders_total"] == pytest.approx(sum(held.values()))
    assert [m["module"] for m in memory["modules"]][:2] == ["APP", "HCCL"]
    assert memory["modules"][1]["peak_reserved"] == hccl
    symptoms = {s.id: s for s in profile.symptoms}
    assert symptoms["memory_fragmentation"].share == pytest.approx(337661952 / 1600913408, abs=1e-6)
    assert symptoms["memory_fragmentation"].base == "memory peak"
    assert "memory_outside_allocator" in symptoms


def test_memory_findings_give_back_bytes_with_their_remedies(real_profiles, runner):
    result = runner.invoke(app, ["memory", str(real_profiles / DB_RUN), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "opprof-advisor/memory/1"
    findings = {f["id"]: f for f in doc["findings"]}
    fragmentation = findings["memory-fragmentation"]
    assert fragmentation["saving"]["high_bytes"] == 337661952 and fragmentation["saving"]["high_mib"] == 322.0
    assert "expandable-segments-memory-ops" in [r["id"] for r in fragmentation["remedies"]]
    outside = findings["memory-outside-allocator"]
    assert outside["saving"]["high_bytes"] == 423690240  # what HCCL holds, less than the 587 MiB outside in all
    assert outside["remedies"][0]["id"] == "hccl-communicator-memory"


def test_foreach_temporaries_at_the_peak_are_a_finding_bounded_by_what_they_hold(real_profiles, runner):
    _peaks, _busiest, held, _hccl = _hand(real_profiles)
    foreach = sum(size for name, size in held.items() if "_foreach_" in name)
    assert foreach == 245275136  # by hand: aten::_foreach_add, 16 tensors held at the PTA+GE peak (234 MiB)
    result = runner.invoke(app, ["memory", str(real_profiles / DB_RUN), "--format", "json"])
    findings = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    temporaries = findings["optimizer-foreach-temporaries"]
    assert temporaries["saving"]["high_bytes"] == foreach
    assert temporaries["saving"]["share_of_peak"] == pytest.approx(foreach / 1600913408, abs=1e-6)
    assert temporaries["remedies"][0]["id"] == "optimizer-foreach-peak-memory"
    assert "aten::_foreach_add" in temporaries["title"] and "16 tensor(s)" in temporaries["title"]


def test_foreach_temporaries_below_a_twentieth_of_the_peak_are_no_finding(tmp_path):
    root = _text_run(tmp_path)
    table = root / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv"
    # at the reserved peak (t=1002, 1060 MB) aten::_foreach_mul holds 40 MB: under 5 % of it
    table.write_text(table.read_text() + "aten::_foreach_mul,40960,1001,1003,1003,2,2,,,,,,,1,NPU:0\n")
    assert "memory_optimizer_temporaries" not in {s.id for s in read_profile(root).symptoms}
    table.write_text(table.read_text().replace("aten::_foreach_mul,40960,", "aten::_foreach_mul,81920,"))
    symptom = {s.id: s for s in read_profile(root).symptoms}["memory_optimizer_temporaries"]
    assert symptom.share == pytest.approx(80 / 1060, abs=1e-4) and symptom.base == "memory peak"


def _text_run(tmp_path, unit="MB", kernels=("MatMulV2",), collectives=()):
    root = write_torch_npu_text(tmp_path, [KernelSpec(name, task_type="AI_CORE", duration_us=100.0, count=4,
                                                      block_dim=20) for name in kernels] + [
        KernelSpec(name, task_type="COMMUNICATION", duration_us=50.0, count=2) for name in collectives])
    out = root / "ASCEND_PROFILER_OUTPUT"
    scale = 1 if unit == "MB" else 1024
    rows = [f"Component,Timestamp(us),Total Allocated({unit}),Total Reserved({unit}),Total Active({unit}),Stream Ptr,"
            "Device Type"]
    for t, (alloc, reserved) in enumerate([(100, 200), (300, 1000), (700, 1000), (200, 1000)]):
        rows.append(f"PTA,{1000 + t},{alloc * scale},{reserved * scale},{alloc * scale},1,NPU:0")
        rows.append(f"PTA+GE,{1000 + t},{(alloc + 50) * scale},{(reserved + 60) * scale},{alloc * scale},1,NPU:0")
    (out / "memory_record.csv").write_text("\n".join(rows) + "\n")
    (out / "operator_memory.csv").write_text(
        "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),Active Duration(us),"
        "Allocation Total Allocated(MB),Allocation Total Reserved(MB),Allocation Total Active(MB),Release Total "
        "Allocated(MB),Release Total Reserved(MB),Release Total Active(MB),Stream Ptr,Device Type\n"
        "aten::mm,409600,1001,1003,1003,2,2,,,,,,,1,NPU:0\n"
        "aten::empty,102400,1000,,,,,,,,,,,1,NPU:0\n"
        "aten::add,51200,1003,1004,1004,1,1,,,,,,,1,NPU:0\n")
    return root


@pytest.mark.parametrize("unit", ["MB", "KB"])
def test_a_text_export_reads_the_unit_from_the_header(tmp_path, unit):
    memory = read_profile(_text_run(tmp_path, unit)).memory
    scale = MIB if unit == "MB" else 1024 * 1024  # KB rows were written x1024: the same bytes
    peak = memory["peak"]
    # PTA+GE reserved peaks at 1060 on t=1001..1003; the busiest of them allocates 750 (t=1002)
    assert (peak["component"], peak["reserved"], peak["allocated"]) == ("PTA+GE", 1060 * scale, 750 * scale)
    assert peak["gap"] == 310 * scale
    # at t=1002: aten::mm (400 MiB, 1001-1003) and aten::empty (100 MiB, never released) are held
    assert [(h["name"], h["bytes"]) for h in memory["holders"]] == [("aten::mm", 400 * MIB), ("aten::empty", 100 * MIB)]


def test_a_broken_memory_table_is_one_line_naming_the_file(tmp_path, runner):
    root = _text_run(tmp_path)
    path = root / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    path.write_text(path.read_text().replace("PTA,1002,700", "PTA,1002,seven"))
    result = runner.invoke(app, ["memory", str(root)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert str(path) in line and "memory_record" in line


def test_a_profile_without_memory_data_says_what_to_collect(runner, tmp_path):
    root = write_torch_npu_text(tmp_path, [KernelSpec("MatMulV2", task_type="AI_CORE", duration_us=100.0, count=4)])
    result = runner.invoke(app, ["memory", str(root), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["findings"] == [] and "profile_memory=True" in doc["notes"][-1]


def test_a_quoted_header_written_by_another_tool_is_read(tmp_path):
    root = _text_run(tmp_path)
    path = root / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    lines = path.read_text().splitlines()
    lines[0] = ",".join(f'"{cell}"' for cell in lines[0].split(","))
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    assert read_profile(root).memory["peak"]["reserved"] == 1060 * MIB


def test_the_html_report_draws_each_component_and_marks_the_peak(real_profiles, runner, tmp_path):
    out = tmp_path / "memory.html"
    result = runner.invoke(app, ["memory", str(real_profiles / DB_RUN), "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert page.count('<polyline class="line reserved"') == 3  # PTA+GE, PTA, GE
    assert page.count('<circle class="peak"') == 1 and "peak 1,527 MiB, gap 322 MiB" in page
    assert page.index("PTA+GE memory over time") < page.index("PTA memory over time")


def test_app_rows_without_an_allocated_figure_are_the_process_seen_by_the_driver(tmp_path):
    # torch_npu writes APP records (from NPU_MEM) with Total Allocated empty
    root = _text_run(tmp_path)
    path = root / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    path.write_text(path.read_text() + "APP,1002,,2000,,,NPU:0\nAPP,1003,,2100,,,NPU:0\n")
    memory = read_profile(root).memory
    assert memory["peak"]["component"] == "PTA+GE"
    # the PTA+GE peak is at t=1002, where the process holds 2000 MiB: 940 MiB beyond the 1060 MiB reserved
    assert memory["outside_allocator"]["bytes"] == (2000 - 1060) * MIB


def test_msprof_kb_tables_with_upper_case_events_and_two_devices(tmp_path, runner):
    out = tmp_path / "PROF_000001_20250101000000000_ABCDEFGHIJKLMNOP" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    (out / "memory_record_20250101.csv").write_text(
        "Device_id,Component,Timestamp(us),Total Allocated(KB),Total Reserved(KB),Device\n"
        + "".join(f"{d},GE,{1000 + t},{a * 1024},{r * 1024},NPU:{d}\n" for d, rows in
                  ((0, [(100, 200), (150, 400)]), (1, [(100, 1000), (900, 1000)])) for t, (a, r) in enumerate(rows)))
    (out / "npu_mem_20250101.csv").write_text(
        "Device_id,event,ddr(KB),hbm(KB),memory(KB),timestamp(us)\n"
        "0,APP,0,5120000,5120000,1001\n1,APP,0,3072000,3072000,1001\n1,Device,0,4096000,4096000,1001\n")
    result = runner.invoke(app, ["memory", str(out.parent), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # device 1 holds the larger GE peak (1000 MiB reserved, 900 allocated at its busiest); its own APP sample:
    # 3000 MiB, 2000 MiB outside — not device 0's 5000 MiB
    assert (doc["peak"]["device"], doc["peak"]["reserved"], doc["peak"]["gap"]) == ("1", 1000 * MIB, 100 * MIB)
    assert doc["outside_allocator"]["bytes"] == 2000 * MIB
    assert any("the others' GE peaks: device 0 400 MiB" in note for note in doc["notes"])


def test_records_without_a_reserved_column_give_the_allocated_peak_and_say_what_is_missing(tmp_path, runner):
    root = _text_run(tmp_path)
    path = root / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    lines = [",".join(cell for i, cell in enumerate(line.split(",")) if i != 3) for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")
    memory = read_profile(root).memory
    assert memory["peak"]["allocated"] == 750 * MIB and memory["peak"]["gap"] is None
    assert any(note.startswith("cannot judge fragmentation: the memory records have no Total Reserved column")
               for note in memory["notes"])
    for fmt in ("table", "html"):
        result = runner.invoke(app, ["memory", str(root), "--format", fmt, "--output", str(tmp_path / "m.html")]
                               if fmt == "html" else ["memory", str(root)])
        assert result.exit_code == 0, result.output


def test_a_folder_of_ranks_judges_the_rank_with_the_highest_peak(real_profiles, tmp_path, runner):
    import shutil

    for name in ("rank0_ascend_pt", "rank1_ascend_pt"):  # the same run copied twice: two ranks of one job
        shutil.copytree(real_profiles / DB_RUN, tmp_path / name)
    result = runner.invoke(app, ["memory", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["peak"]["reserved"] == 1600913408 and doc["peak"]["gap"] == 337661952
    assert {f["id"] for f in doc["findings"]} == {"memory-fragmentation", "memory-outside-allocator",
                                                  "optimizer-foreach-temporaries", "optimizer-state"}
    assert any(note.startswith("memory of rank0, the highest peak of 2 ranks") for note in doc["notes"])


def _capacity_profile(chip, used_gib):
    from opprof_advisor.profile.builder import Kernels
    from opprof_advisor.readers.base import KernelTable, RawProfile
    from opprof_advisor.symptoms import profile_of

    gib = 2**30
    memory = {"peak": {"device": "0", "component": "PTA+GE", "reserved": 20 * gib, "allocated": 19.5 * gib,
                       "gap": 0.5 * gib, "gap_share": 0.025, "at_us": 0.0},
              "device_hbm": {"device_peak": used_gib * gib}, "notes": []}
    raw = RawProfile(path="x", format="memory", kernels=KernelTable(), chip=chip, extra={"memory": memory})
    return profile_of(Kernels(raw))


def test_a_peak_near_the_part_s_memory_is_named_with_its_headroom():
    # Ascend910B4: 32 GiB (CANN 8.1.RC1 platform config memory_size)
    near = {s.id: s for s in _capacity_profile("Ascend910B4", 30.0).symptoms}["memory_near_capacity"]
    assert near.detail == "the device's HBM peaks at 30.0 GiB of 32 GiB (94%): 2.0 GiB of headroom"
    assert near.base == "device memory" and near.share == pytest.approx(30 / 32)
    # a family name covers 32 and 64 GiB parts: near only for the small one, so a note, no symptom
    family = _capacity_profile("Ascend910B", 30.0)
    assert "memory_near_capacity" not in family.symptom_ids()
    assert any("near the memory of a 32 GiB Ascend910B part, far from a 64 GiB one" in n for n in family.notes)
    unknown = _capacity_profile(None, 30.0)
    assert any(n.startswith("cannot judge headroom against the device's memory: the chip is not in the profile")
               for n in unknown.notes)


def test_the_profile_report_shows_the_memory_curves(real_profiles, runner, tmp_path):
    out = tmp_path / "profile.html"
    result = runner.invoke(app, ["profile", str(real_profiles / DB_RUN), "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "Memory over time" in page and page.count('<circle class="peak"') == 1


def test_suggest_on_memory_tables_alone_gives_their_memory_findings(tmp_path, runner):
    tables = _text_run(tmp_path / "run") / "ASCEND_PROFILER_OUTPUT"
    alone = tmp_path / "memory_only"
    alone.mkdir()
    for name in ("memory_record.csv", "operator_memory.csv"):
        (alone / name).write_bytes((tables / name).read_bytes())
    suggested = runner.invoke(app, ["suggest", str(alone), "--format", "json"])
    assert suggested.exit_code == 0, suggested.output
    document = json.loads(suggested.stdout)
    assert document["schema"] == "opprof-advisor/memory/1"
    assert document == json.loads(runner.invoke(app, ["memory", str(alone), "--format", "json"]).stdout)
    assert document["peak"]["reserved"] == 1060 * MIB


def test_the_real_db_holds_its_peak_in_the_optimizer_step_not_in_activations(real_profiles):
    # the peak comes in the optimizer step, after the backward pass freed what the forward pass kept: no tensor the
    # forward pass allocated and the backward pass freed is held at the peak (aten::empty_strided's 18.4 MiB still
    # held then was never freed: not an activation) — no finding
    con = sqlite3.connect(f"file:{real_profiles / DB_FILE}?mode=ro", uri=True)
    start = con.execute("SELECT MIN(allocationTime) FROM OP_MEMORY o JOIN STRING_IDS s ON s.id = o.name WHERE "
                        "lower(s.value) LIKE '%backward%' OR lower(s.value) LIKE '%grad%' OR "
                        "lower(s.value) LIKE '%backprop%'").fetchone()[0]
    profile = read_profile(real_profiles / DB_RUN)
    activations = profile.memory["activations"]
    at = round(profile.memory["peak"]["at_us"] * 1000)  # ns, as OP_MEMORY
    hand = con.execute("SELECT SUM(size) FROM OP_MEMORY o JOIN STRING_IDS s ON s.id = o.name WHERE allocationTime < ? "
                       "AND releaseTime >= ? AND allocationTime <= ? AND releaseTime > ? AND NOT (lower(s.value) LIKE "
                       "'%backward%' OR lower(s.value) LIKE '%grad%' OR lower(s.value) LIKE '%backprop%' OR s.value "
                       "LIKE '%_foreach_%')", (start, start, at, at)).fetchone()[0]
    assert hand is None and activations["bytes"] == 0.0 and activations["tensors"] == 0
    assert activations["backward_from_us"] == pytest.approx(start / 1000)
    assert "memory_activations" not in {s.id for s in profile.symptoms}


def test_activations_kept_for_the_backward_pass_are_a_finding_worth_a_share_of_them(tmp_path, runner):
    root = _text_run(tmp_path, kernels=("MatMulV2", "FlashAttentionScore", "FlashAttentionScoreGrad"))  # training
    table = root / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv"
    # the backward pass begins at t=1002.5, after the reserved peak at t=1002: aten::mm's 400 MB (allocated at 1001,
    # freed at 1003) are activations; aten::empty (never freed: a weight or a cache) is not
    table.write_text(table.read_text() + "aten::mm_backward,1024,1002.5,1003.5,1003.5,1,1,,,,,,,1,NPU:0\n")
    symptom = {s.id: s for s in read_profile(root).symptoms}["memory_activations"]
    assert symptom.share == pytest.approx(400 / 1060, abs=1e-4) and "aten::mm" in symptom.detail
    doc = json.loads(runner.invoke(app, ["memory", str(root), "--format", "json"]).stdout)
    finding = next(f for f in doc["findings"] if f["id"] == "activations-at-peak")
    assert finding["saving"]["high_mib"] == pytest.approx(0.7 * 400, abs=0.1)
    assert "30%–70% of the 400 MiB of activations" in finding["saving"]["basis"]
    assert "recompute-memory-tradeoff" in [r["id"] for r in finding["remedies"]]
    # without a backward operator (inference) nothing is called an activation
    table.write_text(table.read_text().replace("aten::mm_backward", "aten::mm"))
    assert read_profile(root).memory["activations"] is None


def test_static_memory_of_a_training_run_is_a_finding_sized_by_the_distributed_optimizer_table(real_profiles, runner):
    _peaks, busiest, held, _hccl = _hand(real_profiles)
    con = sqlite3.connect(f"file:{real_profiles / DB_FILE}?mode=ro", uri=True)
    # what GE had allocated at the PTA+GE peak: its last record up to that moment (GE's own, not the window's tensors)
    (graph,), = con.execute(
        "SELECT m.totalAllocated FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component WHERE s.value = 'GE' "
        "AND m.timestamp <= (SELECT timestamp FROM MEMORY_RECORD m2 JOIN STRING_IDS s2 ON s2.id = m2.component "
        "WHERE s2.value = 'PTA+GE' AND totalAllocated = ?) ORDER BY m.timestamp DESC LIMIT 1", (busiest,))
    static = busiest - sum(held.values()) - graph
    assert static == 717994496  # by hand: 1205 MiB allocated at the peak - 503 MiB in the window's tensors - 17.5 GE
    profile = read_profile(real_profiles / DB_RUN)
    assert profile.memory["before_window"]["bytes"] == pytest.approx(static)
    assert {s.id: s for s in profile.symptoms}["memory_static"].share == pytest.approx(static / 1600913408, abs=1e-6)
    result = runner.invoke(app, ["memory", str(real_profiles / DB_RUN), "--format", "json"])
    findings = json.loads(result.stdout)["findings"]
    state = {f["id"]: f for f in findings}["optimizer-state"]
    # the optimizer's state is two thirds of the bytes per parameter: at most 2/3 of the static memory goes
    assert state["saving"]["high_bytes"] == round(2 / 3 * static)
    assert "33% of them at d = 2, up to 67% as d grows" in state["saving"]["basis"]
    assert state["remedies"][0]["id"] == "zero-redundancy-optimizer"
    assert [f["saving"]["high_bytes"] for f in findings] == sorted((f["saving"]["high_bytes"] for f in findings),
                                                                   reverse=True)


@pytest.mark.parametrize("name,kernels,collectives,finding", [
    ("infer", ("MatMulV2",), ("hcom_allReduce_",), False),
    ("one-device", ("MatMulV2", "MatMulV2Grad"), (), False),
    ("data-parallel", ("MatMulV2", "MatMulV2Grad"), ("hcom_allReduce_",), True)])
def test_static_memory_is_judged_as_optimizer_state_only_in_data_parallel_training(tmp_path, runner, name, kernels,
                                                                                   collectives, finding):
    # at t=1002 PTA+GE allocates 750 MB and the window's tensors hold 500 MB: 250 MB (23.6 % of 1060) came before
    root = _text_run(tmp_path / name, kernels=kernels, collectives=collectives)
    profile = read_profile(root)
    assert profile.workload == ("inference" if name == "infer" else "training")
    assert {s.id: s for s in profile.symptoms}["memory_static"].share == pytest.approx(250 / 1060)
    doc = json.loads(runner.invoke(app, ["memory", str(root), "--format", "json"]).stdout)
    states = [f for f in doc["findings"] if f["id"] == "optimizer-state"]
    # an inference run's static memory is its weights, one device has no ranks to shard a state over
    assert bool(states) == finding
    if finding:
        assert states[0]["saving"]["high_bytes"] == round(2 / 3 * 250 * MIB)
