"""kernel_details of an aic_metrics=MemoryAccess capture (FORMATS.md §12): the bytes the hardware counted drive the
bandwidth roofline, instead of bytes derived from the shapes."""

from __future__ import annotations

import pytest

from opprof_advisor.profiles import load_profile

HEADER = ("Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num,Input Shapes,"
          "Input Data Types,Input Formats,Output Data Types,aicore_time(us),aic_read_main_memory_datas(KB),"
          "aic_write_main_memory_datas(KB),aiv_time(us),aiv_read_main_memory_datas(KB),aiv_write_main_memory_datas(KB)")


def _export(tmp_path, rows: list[str]):
    out = tmp_path / "run_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "kernel_details.csv").write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text("chip: Ascend910B2\nfreq_mhz: 1800\n", encoding="utf-8")
    return tmp_path / "run_ascend_pt", peaks


def test_measured_bytes_set_the_bandwidth_efficiency(tmp_path):
    # Add over two 8192 x 8192 fp16 tensors: the shapes say 384 MiB moved; the counters say 96 MiB (a cached input)
    rows = [f'1,Add,Add,AI_VECTOR_CORE,{1000.0 + 200 * i},100.0,0,40,"8192,8192;8192,8192",DT_FLOAT16;DT_FLOAT16,'
            f'ND;ND,DT_FLOAT16,N/A,N/A,N/A,99.0,65536,32768' for i in range(4)]
    path, peaks = _export(tmp_path, rows)
    profile = load_profile(path, peaks=peaks)[1]
    row = profile.roofline.row("Add")
    measured = 4 * (65536 + 32768) * 1024.0
    assert row.bytes == pytest.approx(measured)
    assert row.achieved_gbps == pytest.approx(measured / 400e-6 / 1e9, rel=1e-6)
    assert "bytes measured (MemoryAccess)" in row.basis


def test_without_the_counters_the_shapes_give_the_bytes(tmp_path):
    rows = [f'1,Add,Add,AI_VECTOR_CORE,{1000.0 + 200 * i},100.0,0,40,"8192,8192;8192,8192",DT_FLOAT16;DT_FLOAT16,'
            f'ND;ND,DT_FLOAT16,N/A,N/A,N/A,99.0,N/A,N/A' for i in range(4)]
    path, peaks = _export(tmp_path, rows)
    row = load_profile(path, peaks=peaks)[1].roofline.row("Add")
    assert row.bytes == pytest.approx(4 * 3 * 8192 * 8192 * 2)
    assert "MemoryAccess" not in row.basis
