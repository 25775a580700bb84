"""Wall time of `advisor suggest` (interpreter start included): start-up, small profile, 100 MB profile, cold cache.

Start-up (issue 26, ARCHITECTURE.md "Targets"): the commands people run most on the bundled example, stdout a
pipe, interleaved with `python -c pass` (the interpreter's own start, the floor) and printed as a multiple of
it: `suggest --profile data/examples/yolov8_torch_npu` (findings, gain models, remedies) <= 0.5 s including
start-up, `search nms` (shipped KB, index built) <= 0.3 s; `suggest --format json`, `profile` and `show` beside them. The package's bytecode is
written first (python -m compileall), as an installed package has it. With --base REV the CLI of
that git revision (git archive) runs interleaved too: before and after on the same load.

Targets (issue 4): small profile <= 0.6 s; the 100 MB kernel_details.csv profile <= 4 s.

    python benchmarks/bench_suggest.py [--runs 5] [--big-mb 100] [--keep DIR] [--startup-only] [--base REV]

Uses a temporary ADVISOR_HOME, so the first call builds the index and fits the matcher (reported
as "cold"); the timed calls then read the JSON matcher cache like any later call on a user's
machine. The 100 MB profile is written with opprof_advisor.testing (a YOLOv8-like workload
repeated until kernel_details.csv reaches the size).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
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


#: The console script `advisor` (pyproject [project.scripts]) as one -c program, run from a tree on PYTHONPATH.
LAUNCHER = "import sys; sys.argv[0] = 'advisor'; from opprof_advisor.cli.app import main; sys.exit(main())"
EXAMPLE = "data/examples/yolov8_torch_npu"
#: name -> (arguments, target wall seconds or None)
STARTUP = {
    "suggest (table)": (["suggest", "--profile", EXAMPLE], 0.5),
    "suggest --format json": (["suggest", "--profile", EXAMPLE, "--format", "json"], None),
    "search nms": (["search", "nms"], 0.3),
    "profile (table)": (["profile", EXAMPLE], None),
    "show nms-on-npu": (["show", "nms-on-npu"], None),
}


def startup(runs: int, base_revision: str | None, work: Path) -> bool:
    """Interleaved start-up runs of ours (and the base revision's) against `python -c pass`; True when on target."""
    from bench_profile import compile_tree, export_base

    trees = {"ours": ROOT}
    if base_revision:
        trees["base"] = export_base(base_revision, work)
    for tree in trees.values():
        compile_tree(tree)
    envs = {name: dict(os.environ, PYTHONPATH=str(tree), ADVISOR_HOME=str(work / f"home-{name}"))
            for name, tree in trees.items()}
    for env in envs.values():
        env.pop("ADVISOR_DB", None)
        env.pop("COLUMNS", None)

    cpu: dict[tuple[str, str], list[float]] = {}

    def run(name: str, args: list[str], label: str = "") -> float:
        """Wall seconds of one run; its CPU seconds (user + system) go to ``cpu`` under (label, name)."""
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", LAUNCHER, *args], env=envs[name], cwd=trees[name],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{name}: advisor {' '.join(args)} failed: {done.stderr.strip()}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.setdefault((label, name), []).append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
        return wall

    for name in trees:  # build the index, fit the matcher, warm the page cache
        for args, _target in STARTUP.values():
            run(name, args)
    floor: list[float] = []
    times = {(label, name): [] for label in STARTUP for name in trees}
    load = os.getloadavg()[0]
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floor.append(time.perf_counter() - started)
        for label, (args, _target) in STARTUP.items():
            for name in trees:
                times[(label, name)].append(run(name, args, label))
    print(f"start-up, stdout a pipe, bytecode compiled; median / min of {runs} interleaved runs, "
          f"load {load:.2f} -> {os.getloadavg()[0]:.2f}" + (f"; base {base_revision}" if base_revision else ""))
    print(f"{'python -c pass (floor)':<28} median {statistics.median(floor) * 1000:5.0f} ms  min {min(floor) * 1000:5.0f} ms")
    ok = True
    for label, (_args, target) in STARTUP.items():
        ours = times[(label, "ours")]
        median = statistics.median(ours)
        text = (f"{label:<28} median {median * 1000:5.0f} ms  min {min(ours) * 1000:5.0f} ms  "
                f"cpu {statistics.median(cpu[(label, 'ours')]) * 1000:4.0f} ms  {median / statistics.median(floor):4.1f}x floor")
        if target is not None:
            ok &= median <= target
            text += f"  target {target * 1000:.0f} ms {'ok' if median <= target else 'OVER TARGET'}"
        if "base" in trees:
            before = times[(label, "base")]
            text += (f"  | base median {statistics.median(before) * 1000:5.0f} ms  min {min(before) * 1000:5.0f} ms "
                     f"cpu {statistics.median(cpu[(label, 'base')]) * 1000:4.0f} ms ({median / statistics.median(before):.2f}x)")
        print(text)
    return ok


def report(name: str, times: list[float], target: float) -> None:
    verdict = "ok" if max(times) <= target else "OVER TARGET"
    print(f"{name:<28} median {statistics.median(times):.3f} s  max {max(times):.3f} s  "
          f"(n={len(times)}, target {target:.1f} s) {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-mb", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="write the big profile here and keep it")
    parser.add_argument("--startup-only", action="store_true", help="only the start-up runs on the bundled example")
    parser.add_argument("--base", metavar="REV", help="also run this git revision's CLI in the start-up runs")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-suggest-"))
    env = dict(os.environ, ADVISOR_HOME=str(work / "home"), COLUMNS="200")
    env.pop("ADVISOR_DB", None)
    try:
        startup(max(args.runs, 5), args.base, work)
        if args.startup_only:
            return
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
