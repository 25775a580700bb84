"""Time the msprof op (device, simulator) and SQLite DB readers on the real files and a large DB.

    /work/venv/bin/python benchmarks/bench_readers_msopprof_db.py [--rows 400000] [--runs 5]

1. In-process read time (best of ``--runs``) of every real msOpProf / simulator / DB sample under
   ../shared/real-profiles (skipped when that folder is absent).
2. `advisor profile --format json` wall time on the committed examples (fresh interpreter each
   run, so start-up is included; the issue's target for a small real profile is <= 0.3 s).
3. A synthetic msprof DB with ``--rows`` kernels (default 400,000, like the 100 MB
   kernel_details target) written with opprof_advisor.testing, then read in a fresh process:
   wall time and peak RSS.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opprof_advisor import testing  # noqa: E402
from opprof_advisor.readers.msopprof_device import read_msopprof_device  # noqa: E402
from opprof_advisor.readers.msopprof_simulator import read_msopprof_simulator  # noqa: E402
from opprof_advisor.readers.msprof_db import read_msprof_db  # noqa: E402

REAL = ROOT.parent / "shared" / "real-profiles"
SAMPLES = [
    (read_msopprof_device, "catlass-msprof-op/device/02_fp32_cm_gemv_aiv/prof/OPPROF_20250304172135_UZXJVIHHTTNZFAJD"),
    (read_msopprof_device, "catlass-msprof-op/device/02_fp32_rm_gemv_aiv/prof/OPPROF_20250304222326_WHJPXTHYGIMBZNZI"),
    (read_msopprof_device, "tilelang-ascend/custom/sigmoid/perf_tuning"),
    (read_msopprof_simulator, "catlass-msprof-op/simulator/01_fp16_cm_gemv_aiv/sim_result/OPPROF_20250306124456_BNDNKFSBWODOSYHT"),
    (read_msprof_db, "msinsight-torch-npu/db/level1/rank0_ascend_pt"),
    (read_msprof_db, "msinsight-torch-npu/server-ut/full_db/msprof_0.db"),
]
EXAMPLES = ["data/examples/matmul_msopprof", "data/examples/yolov8_torch_npu_db"]

# Peak RSS from VmHWM: ru_maxrss would include the forked copy of this (large) parent before exec.
_CHILD = """
import re, sys, time
t = time.perf_counter()
from opprof_advisor.readers.msprof_db import read_msprof_db
raw = read_msprof_db(__import__("pathlib").Path(sys.argv[1]))
hwm = re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)
print(len(raw.kernels), time.perf_counter() - t, int(hwm) / 1024)
"""


def best_of(fn, path: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t)
    return min(times)


def bench_real(runs: int) -> None:
    if not REAL.is_dir():
        print("real profiles: skipped (../shared/real-profiles absent)")
        return
    print("real files, in-process read (best of", runs, "runs):")
    for fn, rel in SAMPLES:
        print(f"  {best_of(fn, REAL / rel, runs) * 1000:7.1f} ms  {fn.__name__:26s} {rel}")


def bench_cli(runs: int) -> None:
    env = dict(os.environ, ADVISOR_HOME=tempfile.mkdtemp(prefix="bench-home-"))
    print("`advisor profile --format json`, fresh interpreter (median of", runs, "runs):")
    for rel in EXAMPLES:
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "opprof_advisor", "profile", rel, "--format", "json"], cwd=ROOT,
                           env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - t)
        print(f"  {statistics.median(times) * 1000:7.0f} ms  {rel}")


def bench_big_db(rows: int) -> None:
    specs = [dict(name=f"op_{i}", op_type=f"Op{i % 37}", task_type=("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC")[i % 3],
                  duration_us=5.0 + i, count=rows // 40, block_dim=24, input_shapes="1024,1024;1024,1024")
             for i in range(40)]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        db = testing.write_msprof_db(Path(tmp) / "msprof_20250101000000.db", specs)
        written = time.perf_counter() - t
        size = db.stat().st_size / 2**20
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _CHILD, str(db)], cwd=ROOT, check=True, capture_output=True,
                             text=True).stdout.split()
        wall = time.perf_counter() - t
    print(f"synthetic msprof DB: {int(out[0]):,} kernels, {size:.0f} MB (written in {written:.1f} s)")
    print(f"  read {float(out[1]):.2f} s in-process, {wall:.2f} s wall incl. interpreter, peak RSS {float(out[2]):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    bench_real(args.runs)
    bench_cli(args.runs)
    bench_big_db(args.rows)


if __name__ == "__main__":
    main()
