"""Time the tuning loop through the real CLI: `advisor compare`, `compare --applied`, `collect`.

Usage: python benchmarks/bench_loop.py [--runs N] [--big-rows N]

Each run is a fresh subprocess (interpreter start, imports, reading both profiles, comparing,
printing) with its own ADVISOR_HOME. Profiles are generated with opprof_advisor.testing:
a YOLOv8-like torch_npu step and the same step with NMS on the AI Core (small), and optionally a
large pair of `kernel_details.csv` files (``--big-rows``). `collect` uses the test stand-in
profiler of tests/standin/ (it writes a recorded OPPROF folder; the real profiler cannot run here),
so its figure is the advisor's own overhead plus the stand-in, not a profiling time.
No target is set by the issue for these commands; the figures are reported for reference.
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

YOLO = [
    {"name": "Conv2D", "op_type": "Conv2D", "task_type": "AI_CORE", "duration_us": 52.0, "count": 64, "block_dim": 20},
    {"name": "Swish", "op_type": "Swish", "task_type": "AI_VECTOR_CORE", "duration_us": 9.0, "count": 57,
     "block_dim": 40},
    {"name": "ConcatD", "op_type": "ConcatD", "task_type": "AI_VECTOR_CORE", "duration_us": 12.0, "count": 19,
     "block_dim": 40},
    {"name": "NonMaxSuppressionV3", "op_type": "NonMaxSuppressionV3", "task_type": "AI_CPU", "duration_us": 1900.0,
     "count": 1, "block_dim": 1},
]


def nms_on_ai_core(kernels: list[dict]) -> list[dict]:
    return [dict(k, name="BatchMultiClassNMS", op_type="BatchMultiClassNMS", task_type="AI_VECTOR_CORE",
                 duration_us=240.0, block_dim=40) if k["op_type"] == "NonMaxSuppressionV3" else k for k in kernels]


def scaled(kernels: list[dict], rows: int) -> list[dict]:
    per_step = sum(k["count"] for k in kernels)
    factor = max(1, rows // per_step)
    return [dict(k, count=k["count"] * factor) for k in kernels]


def timed(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "opprof_advisor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"advisor {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def report(name: str, times: list[float]) -> None:
    print(f"{name:<44} median {statistics.median(times):6.3f} s  min {min(times):6.3f} s  ({len(times)} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-rows", type=int, default=0, help="also compare two kernel_details.csv of ~N rows")
    args = parser.parse_args()
    from opprof_advisor import testing

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        home = tmp_path / "home"
        env = {**os.environ, "ADVISOR_HOME": str(home), "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
        env.pop("ADVISOR_DB", None)
        before = testing.write_torch_npu_text(tmp_path / "before", YOLO)
        after = testing.write_torch_npu_text(tmp_path / "after", nms_on_ai_core(YOLO), seed=1)
        timed(["kb", "build"], env)  # the index exists before the timed runs, as for a user
        report("compare (small torch_npu pair, json)",
               [timed(["compare", str(before), str(after), "--format", "json"], env) for _ in range(args.runs)])
        report("compare --applied (records an outcome)",
               [timed(["compare", str(before), str(after), "--applied", "nms-on-npu"], env) for _ in range(args.runs)])
        work = tmp_path / "work"
        work.mkdir()
        (work / "my_operator").write_text("#!/bin/sh\n")
        (work / "my_operator").chmod(0o755)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        standin = ROOT / "tests" / "standin" / "opprof_standin.py"
        (bin_dir / "msprof").write_text(
            f"#!{sys.executable}\nimport runpy\n"
            f"runpy.run_path({str(standin)!r}, init_globals={{'PROG': 'msprof'}}, run_name='__main__')\n")
        (bin_dir / "msprof").chmod(0o755)
        collect_env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
                       "ASCEND_TOOLKIT_HOME": str(tmp_path / "toolkit")}  # as set_env.sh would
        report("collect -- ./my_operator (stand-in + suggest)",
               [timed(["collect", "--", "./my_operator"], collect_env, cwd=work) for _ in range(args.runs)])
        if args.big_rows:
            big_before = testing.write_torch_npu_text(tmp_path / "big-before", scaled(YOLO, args.big_rows))
            big_after = testing.write_torch_npu_text(tmp_path / "big-after",
                                                       nms_on_ai_core(scaled(YOLO, args.big_rows)), seed=1)
            report(f"compare (two ~{args.big_rows:,}-row kernel_details)",
                   [timed(["compare", str(big_before), str(big_after), "--format", "json"], env)
                    for _ in range(max(1, args.runs // 2))])


if __name__ == "__main__":
    main()
