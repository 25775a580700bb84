"""Benchmark the memory reader against its floor: a plain pyarrow read of the same memory_record.csv.

    python benchmarks/bench_memory.py [--rows 10000000] [--runs 3]

Writes a torch_npu memory_record.csv of N rows (PTA, GE and PTA+GE records, MB columns) in a temporary
folder, then, each in a fresh interpreter, interleaved: (1) the floor, ``pyarrow.csv.read_csv`` of the whole
file; (2) ours, ``readers.memory`` reading it and summarising the peaks per component. Prints wall time and
peak RSS (ru_maxrss) of each, and ours as a ratio to the floor (target: <= 2x, memory bounded by the columns
used).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n"
FLOOR = ("import resource, sys, pyarrow.csv as c; c.read_csv(sys.argv[1]); "
         "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
OURS = ("import resource, sys; from pathlib import Path; from opprof_advisor.readers import memory, memory_files; "
        "s = memory.memory_summary(memory.read_memory(memory_files.memory_sources(Path(sys.argv[1]).parent))); "
        "assert s['peak']; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")


def write(path: Path, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    index = pa.array(range(rows), pa.int64())
    component = pc.choose(pc.cast(pc.bit_wise_and(index, 3), pa.int8()), "PTA", "GE", "PTA+GE", "PTA")
    allocated = pc.add(pc.multiply(pc.cast(pc.bit_wise_and(index, 1023), pa.float64()), 1.5), 100.0)
    table = pa.table({"Component": component, "Timestamp(us)": pc.add(pc.cast(index, pa.float64()), 1.7e15),
                      "Total Allocated(MB)": allocated, "Total Reserved(MB)": pc.add(allocated, 512.0),
                      "Total Active(MB)": allocated, "Stream Ptr": pa.array([1] * rows, pa.int64()),
                      "Device Type": pa.array(["NPU:0"] * rows)})
    pacsv.write_csv(table, path)


def run(code: str, path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, int(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
        path.parent.mkdir()
        write(path, args.rows)
        size = path.stat().st_size / 2**20
        floor, ours = [], []
        for _ in range(args.runs):
            floor.append(run(FLOOR, path))
            ours.append(run(OURS, path))
        f_time = statistics.median(t for t, _ in floor)
        o_time = statistics.median(t for t, _ in ours)
        f_rss = max(r for _, r in floor) / 1024
        o_rss = max(r for _, r in ours) / 1024
        print(f"memory_record.csv: {args.rows:,} rows, {size:,.0f} MiB")
        print(f"pyarrow read (floor)   median {f_time:6.2f} s  peak RSS {f_rss:6.0f} MiB")
        print(f"memory reader + peaks  median {o_time:6.2f} s  peak RSS {o_rss:6.0f} MiB  "
              f"{o_time / f_time:.2f}x floor (target <= 2x)")


if __name__ == "__main__":
    main()
