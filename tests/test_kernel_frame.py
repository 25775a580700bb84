"""kernel_frame: the numpy and the plain-Python engines give the same profile, bit for bit.

Small tables are built without numpy, large ones (or tables the columnar reader made) with it; both
must agree on every figure, so the profile does not change at the switch. Checked on every bundled
example, synthetic bench scenario and real profile, and on random tables against plain Counter loops.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from opprof_advisor.readers import frame as kernel_frame
from opprof_advisor.readers.frame import Frame
from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.profiles import load_profile
from opprof_advisor.readers.base import Coded, KernelTable

ROOT = Path(__file__).resolve().parent.parent
PROFILES = sorted(p for folder in ("examples", "bench") for p in (ROOT / "data" / folder).iterdir() if p.is_dir())


def _real_profiles() -> list[Path]:
    from opprof_advisor.core.paths import real_labels_path
    from opprof_advisor.advice.real_bench import load_labels
    from conftest import REAL_PROFILES

    _, labels = load_labels(real_labels_path())
    return [REAL_PROFILES / label.path for label in labels if (REAL_PROFILES / label.path).exists()]


def _document(path: Path, monkeypatch, vector: bool) -> str:
    monkeypatch.setattr(kernel_frame, "COLUMNAR_FROM_ROWS", 0 if vector else 10 ** 12)
    try:
        return json.dumps(profile_to_json(load_profile(path)[1]), sort_keys=True)
    except Exception as exc:  # noqa: BLE001 - an error must be the same error on both engines
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("path", PROFILES + _real_profiles(), ids=lambda p: p.name)
def test_numpy_and_python_engines_build_the_same_profile(path, monkeypatch):
    slow = _document(path, monkeypatch, vector=False)
    fast = _document(path, monkeypatch, vector=True)
    assert fast == slow


def _random_table(rng: random.Random, n: int) -> KernelTable:
    ops = ["MatMul", "Add", "Softmax", "BatchMatMul", "Mul", ""]
    table = KernelTable()
    table.name = [f"k{rng.randrange(40)}" for _ in range(n)]
    table.op_type = [rng.choice(ops) for _ in range(n)]
    table.task_type = [rng.choice(["AI_CORE", "AI_CPU", "HCCL"]) for _ in range(n)]
    # durations of very different sizes, so that the order of additions shows in the last digits
    table.duration_us = [rng.choice([1e-3, 0.1, 17.0, 1e6]) * rng.random() for _ in range(n)]
    table.wait_us = [None if rng.random() < 0.2 else rng.random() * 10 for _ in range(n)]
    table.block_dim = [rng.choice([None, 0, 1, 20, 48]) for _ in range(n)]
    return table


@pytest.mark.parametrize("seed", range(5))
def test_tallies_and_sums_equal_the_row_loops(seed):
    rng = random.Random(seed)
    table = _random_table(rng, 3000)
    expected_time: Counter[str] = Counter()
    expected_count: Counter[str] = Counter()
    for op, task, duration in zip(table.op_type, table.task_type, table.duration_us):
        if task != "HCCL":
            expected_time[op] += duration
            expected_count[op] += 1
    for vector in (False, True):
        frame = Frame(table, vector=vector)
        mask = frame.negate(frame.isin(frame.coded("task_type"), {"HCCL"}))
        tally = frame.tally(frame.coded("op_type"), mask, frame.floats("duration_us"))
        assert list(tally.keys) == list(expected_time)  # first-row order, as a dict filled row by row
        assert tally.sums == list(expected_time.values())  # exact: sequential, not pairwise
        assert tally.counts == list(expected_count.values())
        assert frame.total(frame.floats("duration_us")) == sum(table.duration_us)
        waits = frame.floats("wait_us")
        from statistics import median

        assert frame.median(waits, mask) == median(w for w, t in zip(table.wait_us, table.task_type)
                                                   if w is not None and t != "HCCL")


def test_combine_numbers_only_the_tuples_that_occur():
    table = _random_table(random.Random(3), 500)
    for vector in (False, True):
        frame = Frame(table, vector=vector)
        combined = frame.combine(frame.coded("op_type"), frame.coded("task_type"), frame.coded("block_dim"))
        rows = [combined.values[c] for c in list(combined.codes)]
        assert rows == list(zip(table.op_type, table.task_type, table.block_dim))
        assert len(set(combined.values)) == len(combined.values) == len(set(rows))


@pytest.mark.parametrize("seed", range(4))
def test_sequence_searches_equal_the_row_loops(seed):
    rng = random.Random(seed)
    n = 400
    centre = [rng.random() < 0.1 for _ in range(n)]
    side = [rng.random() < 0.2 for _ in range(n)]
    steps = [[rng.random() < p for _ in range(n)] for p in (0.2, 0.3, 0.3)]
    table = KernelTable(duration_us=[1.0] * n)
    python, vector = Frame(table, vector=False), Frame(table, vector=True)
    import numpy as np

    assert vector.neighbours(np.array(centre), np.array(side), 4) == python.neighbours(centre, side, 4)
    assert vector.chains([np.array(s) for s in steps], 8) == python.chains(steps, 8)
    assert python.chains(steps, 8)  # the random masks do hold chains


def test_encoded_columns_read_as_lists_and_survive_take_and_extend():
    import numpy as np

    table = KernelTable()
    table.store("name", Coded(np.array([1, 0, 1], dtype=np.int32), ["a", "b"]))
    table.store("duration_us", np.array([1.0, 2.0, 3.0]))
    table.store("wait_us", np.array([np.nan, 1.5, np.nan]))
    other = KernelTable(name=["c"], duration_us=[4.0], wait_us=[None])
    part = table.take([2, 0])
    assert part.name == ["b", "b"] and part.duration_us == [3.0, 1.0]
    table.extend(other)
    assert table.name == ["b", "a", "b", "c"]
    assert table.wait_us == [None, 1.5, None, None]
    assert len(table) == 4


def _mixed_rows(n: int) -> list[dict[str, str]]:
    """An LLM-like mix: cube, vector, AI CPU and communication kernels, unfused norm chains, short launches."""
    from profile_fixtures import kernel

    rng = random.Random(11)
    kinds = [("MatMul", "MatMulV2", "AI_CORE", 150.0, "DT_BF16;DT_BF16"), ("Pow", "Pow", "AI_VECTOR_CORE", 9.0, "FLOAT"),
             ("ReduceMean", "ReduceMean", "AI_VECTOR_CORE", 12.0, "FLOAT"), ("Rsqrt", "Rsqrt", "AI_VECTOR_CORE", 4.0, "FLOAT"),
             ("Softmax", "SoftmaxV2", "AI_VECTOR_CORE", 40.0, "DT_BF16"), ("BMM", "BatchMatMul", "AI_CORE", 90.0, "FLOAT"),
             ("IndexPut", "IndexPut", "AI_CPU", 120.0, "INT64;INT64"), ("hcom_allReduce__1", "hcom_allReduce_", "HCCL", 300.0, "")]
    rows, start = [], 0.0
    for i in range(n):
        name, op, core, mean, dtypes = kinds[(i * 7 + rng.randrange(3)) % len(kinds)]
        duration = round(mean * rng.uniform(0.5, 1.5), 3)
        rows.append(kernel(f"{name}_{i % 97}", op, core, duration, wait=round(rng.uniform(0, 30), 3),
                           block=rng.choice([1, 20, 24, 40, 48]), dtypes=dtypes, start=start,
                           state=rng.choice(["dynamic", "static"]), aic_mac_ratio=round(rng.random(), 2),
                           aiv_vec_ratio=round(rng.random(), 2), aic_mte2_ratio=round(rng.random(), 2)))
        start += duration + rng.uniform(0, 20)
    return rows


def test_the_numpy_engine_gives_the_python_engine_s_profile(tmp_path, monkeypatch):
    from profile_fixtures import write_ascend_pt

    from opprof_advisor.readers import arrowcsv

    folder = write_ascend_pt(tmp_path, _mixed_rows(3000))
    slow = _document(folder, monkeypatch, vector=False)
    monkeypatch.setattr(arrowcsv, "COLUMNAR_FROM_ROWS", 0)  # kept columnar however small
    raw = load_profile(folder)[0]
    assert raw.kernels.is_columnar()  # read by pyarrow into codes and arrays
    fast = _document(folder, monkeypatch, vector=True)
    assert fast == slow
    assert "unfused_norm" in fast and "aicpu_fallback" in fast  # the checks that walk rows did run
