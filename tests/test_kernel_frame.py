"""readers.frame: the group-bys, masks and sequence searches the builder runs, held to plain row loops.

Random tables are tallied both ways (Counter loops written here); the sequence searches are held to their
row-by-row definitions; encoded columns read back as the lists they stand for.
"""

from __future__ import annotations

import random
from collections import Counter
from statistics import median

import numpy as np
import pytest

from opprof_advisor.readers.frame import Frame
from opprof_advisor.readers.base import Coded, KernelTable


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
    frame = Frame(table)
    mask = frame.negate(frame.isin(frame.coded("task_type"), {"HCCL"}))
    tally = frame.tally(frame.coded("op_type"), mask, frame.floats("duration_us"))
    assert list(tally.keys) == list(expected_time)  # first-row order, as a dict filled row by row
    assert tally.sums == list(expected_time.values())  # exact: sequential, not pairwise
    assert tally.counts == list(expected_count.values())
    assert frame.total(frame.floats("duration_us")) == sum(table.duration_us)
    waits = frame.floats("wait_us")
    assert frame.median(waits, mask) == median(w for w, t in zip(table.wait_us, table.task_type)
                                               if w is not None and t != "HCCL")


def test_combine_numbers_only_the_tuples_that_occur():
    table = _random_table(random.Random(3), 500)
    frame = Frame(table)
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
    frame = Frame(KernelTable(duration_us=[1.0] * n))
    expected_neighbours = []
    for i in (i for i, flag in enumerate(centre) if flag):
        before = [j for j in range(max(0, i - 4), i) if side[j]]
        after = [j for j in range(i + 1, min(n, i + 5)) if side[j]]
        if before and after:
            expected_neighbours.append((before[-1], i, after[0]))
    expected_chains = []
    for start in (i for i, flag in enumerate(steps[0]) if flag):
        chain = [start]
        for step in steps[1:]:
            following = next((j for j in range(chain[-1] + 1, min(n, start + 8)) if step[j]), None)
            if following is None:
                break
            chain.append(following)
        if len(chain) == len(steps):
            expected_chains.append(chain)
    assert frame.neighbours(np.array(centre), np.array(side), 4) == expected_neighbours
    assert frame.chains([np.array(s) for s in steps], 8) == expected_chains
    assert expected_chains and expected_neighbours  # the random masks do hold both


def test_encoded_columns_read_as_lists_and_survive_take_and_extend():
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


def test_tables_with_missing_values_join_and_keep_them():
    # a None among the distinct values (OP State N/A, a column one table lacks) joins like any other value
    first = KernelTable(name=["a", "a"], duration_us=[1.0, 2.0], block_dim=[4, None], op_state=[None, "dynamic"])
    second = KernelTable(name=["b"], duration_us=[3.0], op_state=["static"])
    joined = KernelTable.concat([first, second])
    assert joined.name == ["a", "a", "b"] and joined.duration_us == [1.0, 2.0, 3.0]
    assert joined.block_dim == [4, None, None] and joined.op_state == [None, "dynamic", "static"]
    assert joined.take([2, 0]).op_state == ["static", None] and len(joined.take([])) == 0


def test_a_table_of_no_rows_has_every_column_it_was_not_told_to_lack():
    empty = KernelTable()
    assert empty.has("input_dtypes") and empty.has("wait_us") and Frame(empty).has_length("op_state")
    assert not KernelTable(present={"duration_us"}).has("input_dtypes")


def test_op_summary_slices_of_a_real_file_give_its_profile(real_profiles, tmp_path):
    import shutil

    from opprof_advisor.profiles import load_profile

    source = real_profiles / "tilelang-ascend/custom/sigmoid/Sigmoid"
    folder = tmp_path / "Sigmoid"
    shutil.copytree(source, folder)
    lines = (folder / "trace_data" / "op_summary.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "trace_data" / "op_summary.csv").unlink()
    half = len(lines) // 2
    for number, rows in enumerate((lines[1:half], lines[half:])):  # OP State is N/A in both
        (folder / "trace_data" / f"op_summary_slice_{number}.csv").write_text(lines[0] + "".join(rows), encoding="utf-8")
    whole, sliced = load_profile(source)[1], load_profile(folder)[1]
    assert len(lines) - 1 == sum(row.count for row in sliced.op_types) == sum(row.count for row in whole.op_types)
    assert sliced.device_time_us == pytest.approx(whole.device_time_us, rel=1e-12)
