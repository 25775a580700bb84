"""Wall time of `advisor suggest` (interpreter start included): small profile, 100 MB profile, cold cache.

Targets (issue 4): small profile <= 0.6 s; the 100 MB kernel_details.csv profile <= 4 s.

    python benchmarks/bench_suggest.py [--runs 5] [--big-mb 100] [--keep DIR]

Uses a temporary ADVISOR_HOME, so the first call builds the index and fits the matcher (reported
as "cold"); the timed calls then read the JSON matcher cache like any later call on a user's
machine. The 100 MB profile is written with opprof_advisor.testing (a YOLOv8-like workload
repeated until kernel_details.csv reaches the size).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "data"))


def timed(args: list[str], env: dict[str, str]) -> float:
    """Seconds of one `python -m opprof_advisor ...` run; fails loudly on a non-zero exit."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "opprof_advisor", *args], env=env, cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"advisor {' '.join(args)} failed: {done.stderr.strip()}")
    return elapsed


def small_profile() -> Path:
    scenarios = json.loads((ROOT / "data" / "bench" / "scenarios.json").read_text())["scenarios"]
    return ROOT / "data" / "bench" / next(s["path"] for s in scenarios if s["name"] == "yolov8s-nms-aicpu")


def write_big_profile(folder: Path, megabytes: int) -> Path:
    """A torch_npu text profile whose kernel_details.csv is about ``megabytes`` MB."""
    from make_bench import yolov8s_nms_aicpu

    from opprof_advisor import testing

    kernels = yolov8s_nms_aicpu()
    probe = testing.write_torch_npu_text(folder / "probe", kernels, seed=7)
    per_copy = (probe / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").stat().st_size
    shutil.rmtree(folder / "probe")
    factor = max(1, round(megabytes * 1_000_000 / per_copy))
    for spec in kernels:
        spec.count *= factor
    return testing.write_torch_npu_text(folder / "big", kernels, seed=7)


def report(name: str, times: list[float], target: float) -> None:
    verdict = "ok" if max(times) <= target else "OVER TARGET"
    print(f"{name:<28} median {statistics.median(times):.3f} s  max {max(times):.3f} s  "
          f"(n={len(times)}, target {target:.1f} s) {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-mb", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="write the big profile here and keep it")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-suggest-"))
    env = dict(os.environ, ADVISOR_HOME=str(work / "home"), COLUMNS="200")
    env.pop("ADVISOR_DB", None)
    try:
        small = small_profile()
        cold = timed(["suggest", "--profile", str(small), "--format", "json"], env)
        print(f"{'cold (build index + fit)':<28} {cold:.3f} s")
        report("suggest small profile", [timed(["suggest", "--profile", str(small), "--format", "json"], env)
                                         for _ in range(args.runs)], 0.6)
        big_dir = args.keep or work
        start = time.perf_counter()
        big = write_big_profile(big_dir, args.big_mb)
        size = (big / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").stat().st_size
        print(f"{'wrote big profile':<28} {size / 1e6:.0f} MB in {time.perf_counter() - start:.1f} s")
        runs = max(1, args.runs // 2)
        # Interleaved with `advisor profile` on the same file, so the reader's share is visible under load.
        suggest_times, profile_times = [], []
        for _ in range(runs):
            suggest_times.append(timed(["suggest", "--profile", str(big), "--format", "json"], env))
            profile_times.append(timed(["profile", str(big), "--format", "json"], env))
        report(f"suggest {size / 1e6:.0f} MB profile", suggest_times, 4.0)
        report(f"(profile {size / 1e6:.0f} MB, reader only)", profile_times, 3.0)
        print(f"{'recommender overhead':<28} median {statistics.median(suggest_times) - statistics.median(profile_times):+.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
