"""Wall time of `advisor suggest` against `msprof-analyze advisor all` on the same profile (issue 27's target:
>= 4x faster on a small profile, and `suggest` <= 0.5 s there).

Both run as a user runs them, interpreter start included, interleaved (the order alternating round by round) so
that the machine's load falls on both alike; each input is copied to a temporary folder first (msprof-analyze
writes beside what it reads, and nothing may be written into a bundled example), and advisor runs with its own
temporary ADVISOR_HOME, its index built by an untimed first call. msprof-analyze is not a dependency: install it
apart (e.g. `python -m venv /tmp/msa && /tmp/msa/bin/pip install msprof-analyze`) and name its executable.

    python benchmarks/bench_vs_msprof_analyze.py --msprof-analyze /tmp/msa/bin/msprof-analyze [--runs 5]

A comparison counts only where msprof-analyze analysed the profile: it writes its report (mstt_advisor_*) into
the output folder. Without trace_view.json it reads nothing, says "no optimization suggestions" and exits 0
after its start-up; such an input is printed as not comparable. Inputs: the bundled torch_npu example and the
small profile of benchmarks/bench_suggest.py (neither has trace_view.json), and, where ../shared/real-profiles is
beside the project, the real torch_npu level1 run (bench_profile.py's "small real profile", 2.7 MB), on which
the target is held.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "real-profiles" / "msinsight-torch-npu" / "text" / "level1" / "rank0_ascend_pt"
#: label -> (folder, target ratio or None)
INPUTS = {"bundled example yolov8_torch_npu (tiny)": (ROOT / "data" / "examples" / "yolov8_torch_npu", None),
          "bench scenario yolov8s-nms-aicpu (small)": (ROOT / "data" / "bench" / "yolov8s-nms-aicpu", None),
          "real torch_npu level1 rank (2.7 MB, small)": (REAL, 4.0)}


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--msprof-analyze", required=True, help="the msprof-analyze executable")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="advisor-vs-msa-") as scratch:
        env = {**os.environ, "ADVISOR_HOME": str(Path(scratch) / "home")}
        advisor = [sys.executable, "-m", "opprof_advisor", "suggest", "--profile"]
        for label, (source, target) in INPUTS.items():
            if not source.is_dir():
                print(f"{label:44} skipped: {source} is not here")
                continue
            copy = Path(scratch) / source.name
            shutil.copytree(source, copy)
            timed([*advisor, str(copy)], ROOT, env)  # builds the index once, untimed
            ours, theirs, analysed = [], [], True
            for run in range(args.runs):
                out = Path(scratch) / f"{source.name}-out{run}"
                msprof = [args.msprof_analyze, "advisor", "all", "-d", str(copy), "-o", str(out)]
                if run % 2:
                    theirs.append(timed(msprof, Path(scratch)))
                    ours.append(timed([*advisor, str(copy)], ROOT, env))
                else:
                    ours.append(timed([*advisor, str(copy)], ROOT, env))
                    theirs.append(timed(msprof, Path(scratch)))
                analysed &= any(out.glob("mstt_advisor_*"))
            ratio = statistics.median(theirs) / statistics.median(ours)
            if not analysed:
                verdict = "  not comparable: msprof-analyze wrote no report (it read nothing here)"
            elif target is None:
                verdict = ""
            else:
                verdict = f"  target >= {target:g}x {'ok' if ratio >= target else 'MISSED'}"
                failed |= ratio < target
            print(f"{label:44} advisor suggest {statistics.median(ours):.2f} s (min {min(ours):.2f})  "
                  f"msprof-analyze advisor all {statistics.median(theirs):.2f} s (min {min(theirs):.2f})  "
                  f"{ratio:.1f}x{verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
