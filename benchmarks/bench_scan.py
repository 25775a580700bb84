"""Time `advisor scan` against its floor: `ast.parse` of every file it would read, in a fresh interpreter.

Usage: python benchmarks/bench_scan.py [PATH] [--runs N]

PATH defaults to the installed scikit-learn package folder (about 700 .py files in 1.x, of which a
few dozen mention torch or CUDA: the case where most files hold nothing). Each run is a fresh
subprocess, ours and the floor interleaved (the machine may be loaded by others): ours is
`advisor scan PATH --format json` (interpreter start, imports, walk, prefilter, parse, analysis,
ranked advice, with the knowledge-base index already built), the floor is an interpreter that
reads and `ast.parse`s the same files. Prints the medians and minimums and ours / floor; targets:
≤ 1.2 × the floor, ≤ 0.5 × when most files hold nothing. Also checks, in this process, that the
prefilter loses nothing: the findings equal those of a scan that parses and analyses every file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FLOOR = """
import ast, sys
from opprof_advisor.scan_walk import collect_files
for rel, real in collect_files(sys.argv[1]).python:
    with open(real, "rb") as handle:
        source = handle.read()
    try:
        ast.parse(source, filename=rel)
    except Exception:
        pass
"""


def default_target() -> Path:
    """The installed scikit-learn package folder."""
    import sklearn

    return Path(sklearn.__file__).resolve().parent


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed ({completed.returncode}): {completed.stderr.strip()}")
    return elapsed, completed.stdout


def loses_no_finding(path: Path) -> bool:
    """Whether the prefiltered scan finds what a scan analysing every file finds."""
    from opprof_advisor import scan

    quick = scan.scan_to_json(scan.scan_path(path))
    original = scan.can_hold_finding
    scan.can_hold_finding = lambda source: True  # parse and analyse every file
    try:
        full = scan.scan_to_json(scan.scan_path(path))
    finally:
        scan.can_hold_finding = original
    return quick["findings"] == full["findings"]


def summary(name: str, times: list[float]) -> str:
    return f"{name:<22} median {statistics.median(times):6.2f} s   min {min(times):6.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    path = (args.path or default_target()).resolve()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "ADVISOR_HOME": home, "COLUMNS": "200"}
        env.pop("ADVISOR_DB", None)
        ours_command = [sys.executable, "-m", "opprof_advisor", "scan", str(path), "--format", "json"]
        floor_command = [sys.executable, "-c", FLOOR, str(path)]
        _, out = timed(ours_command, env)  # builds the index once, as a user's first command would
        document = json.loads(out)
        ours, floor = [], []
        for _ in range(args.runs):
            ours.append(timed(ours_command, env)[0])
            floor.append(timed(floor_command, env)[0])
    from opprof_advisor.scan import can_hold_finding
    from opprof_advisor.scan_walk import collect_files

    files = collect_files(path).python
    holding = sum(1 for _, real in files if can_hold_finding(Path(real).read_bytes()))
    print(f"target: {path}: {len(files)} .py files, {holding} can hold a finding ({holding / max(len(files), 1):.0%})")
    print(f"scanned {document['files_scanned']} files, {len(document['files_failed'])} failed, "
          f"{len(document['findings'])} findings, {len(document['suggestions'])} suggestions")
    print(summary("advisor scan", ours))
    print(summary("floor: ast.parse all", floor))
    ratio = statistics.median(ours) / statistics.median(floor)
    target = 0.5 if holding * 2 < len(files) else 1.2
    verdict = "OK" if ratio <= target else "TOO SLOW"
    print(f"ours / floor: {ratio:.2f} (min {min(ours) / min(floor):.2f}); target ≤ {target} × the floor: {verdict}")
    same = loses_no_finding(path)
    print(f"findings identical to a scan that parses and analyses every file: {'yes' if same else 'NO'}")
    return 0 if ratio <= target and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
