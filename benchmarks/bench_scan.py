"""Time `advisor scan` against its floor: `ast.parse` of every file it would read, in a fresh interpreter.

Usage: python benchmarks/bench_scan.py [PATH ...] [--runs N] [--base REV]

PATH defaults to the installed scikit-learn and timm package folders (whichever are installed; timm
needs no torch to be scanned: `pip install --no-deps timm`). scikit-learn (~700 .py files, a few
dozen mentioning torch or CUDA) is the case where most files hold nothing; timm (~300 files, nearly
all torch model code) the case where nearly every file is parsed and analysed.

Each run is a fresh subprocess, ours, the floor (and with --base the CLI of that git revision,
exported with git archive) interleaved, since the machine may be loaded by others: ours is
`advisor scan PATH --format json` (interpreter start, imports, walk, prefilter, parse, analysis,
ranked advice, with the knowledge-base index already built), by default over the CPUs and again with
ADVISOR_SCAN_JOBS=1 (one process), the floor an interpreter that reads and `ast.parse`s every file
the scan would read, in one process. Prints wall and CPU time (user + system), medians
and minimums, the load average, and ours / floor; targets: ≤ 1.2 × the floor, ≤ 0.5 × when most
files hold nothing.

Also checks that nothing the user sees changed: in this process, the prefiltered scan's findings
equal those of a scan that parses and analyses every file; with --base, our whole JSON document
equals the base revision's, byte for byte. Exit 1 when a target is missed or anything differs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

FLOOR = """
import ast, sys
from opprof_advisor.scan.walk import collect_files
for rel, real in collect_files(sys.argv[1]).python:
    with open(real, "rb") as handle:
        source = handle.read()
    try:
        ast.parse(source, filename=rel)
    except Exception:
        pass
"""

DEFAULT_PACKAGES = ("sklearn", "timm")
JOBS_VARIABLE = "ADVISOR_SCAN_JOBS"  # opprof_advisor.scan.jobs.JOBS_VARIABLE (a --base revision may not have it)
ONE_PROCESS = "advisor scan, 1 process"


def default_targets() -> list[Path]:
    """The installed package folders of DEFAULT_PACKAGES (found without importing them: timm needs torch)."""
    found = []
    for name in DEFAULT_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            found.append(Path(list(spec.submodule_search_locations)[0]).resolve())
    return found


@dataclass
class Runs:
    """Wall and CPU seconds of each run of one command, and its last output."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    output: str = ""

    def line(self, name: str) -> str:
        return (f"{name:<26} wall median {statistics.median(self.wall):6.2f} s  min {min(self.wall):6.2f} s   "
                f"cpu median {statistics.median(self.cpu):6.2f} s  min {min(self.cpu):6.2f} s")


def run(command: list[str], env: dict[str, str], runs: Runs, cwd: Path) -> None:
    """One run of ``command``: its wall time, its CPU time (user + system, from wait4) and its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(command[:5])} failed ({process.returncode}): {err.read().decode().strip()}")
        out.seek(0)
        runs.output = out.read().decode()
    runs.wall.append(wall)
    runs.cpu.append(usage.ru_utime + usage.ru_stime)


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


def export_base(revision: str, folder: Path) -> Path:
    """The tree of ``revision`` under ``folder``."""
    from compare_outputs import export_revision

    return export_revision(revision, folder)


def compile_tree(tree: Path) -> None:
    """Write the package's bytecode, as an installed package has it (with PYTHONDONTWRITEBYTECODE set, or
    in a fresh export, every run would compile every module again: ~0.2 s that is not the scan's)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "opprof_advisor")], check=True)


def ratio_of(ours: list[float], other: list[float]) -> str:
    return f"{statistics.median(ours) / statistics.median(other):.2f} (min {min(ours) / min(other):.2f})"


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def measure(path: Path, runs: int, base: Path | None, home: Path) -> bool:
    """Interleaved runs on one target, printed; True if on target and nothing differs."""
    from opprof_advisor.scan import can_hold_finding
    from opprof_advisor.scan.walk import collect_files

    scan_args = ["-m", "opprof_advisor", "scan", str(path), "--format", "json"]
    trees = {"advisor scan": ROOT, ONE_PROCESS: ROOT, **({"base: advisor scan": base} if base else {})}
    envs = {name: {**os.environ, "ADVISOR_HOME": str(home / ("base" if tree != ROOT else "ours")),
                   "COLUMNS": "200", "PYTHONPATH": str(tree)} for name, tree in trees.items()}
    for env in envs.values():
        env.pop("ADVISOR_DB", None)
        env.pop(JOBS_VARIABLE, None)
    envs[ONE_PROCESS][JOBS_VARIABLE] = "1"
    found = {name: Runs() for name in (*trees, "floor: ast.parse all")}
    for name, tree in trees.items():  # builds each index once, as a user's first command would
        run([sys.executable, *scan_args], envs[name], Runs(), tree)
    load_before = load()
    for _ in range(runs):
        for name, tree in trees.items():
            run([sys.executable, *scan_args], envs[name], found[name], tree)
        run([sys.executable, "-c", FLOOR, str(path)], envs["advisor scan"], found["floor: ast.parse all"], ROOT)
    files = collect_files(path).python
    holding = sum(1 for _, real in files if can_hold_finding(Path(real).read_bytes()))
    document = json.loads(found["advisor scan"].output)
    print(f"\ntarget: {path}: {len(files)} .py files, {holding} can hold a finding ({holding / max(len(files), 1):.0%})")
    print(f"scanned {document['files_scanned']} files, {len(document['files_failed'])} failed, "
          f"{len(document['findings'])} findings, {len(document['suggestions'])} suggestions")
    print(f"load average before {load_before}, after {load()}; {runs} interleaved runs each")
    for name, times in found.items():
        print(times.line(name))
    ours, floor = found["advisor scan"], found["floor: ast.parse all"]
    ratio = statistics.median(ours.wall) / statistics.median(floor.wall)
    target = 0.5 if holding * 2 < len(files) else 1.2
    verdict = "OK" if ratio <= target else "TOO SLOW"
    for name in ("advisor scan", ONE_PROCESS):
        print(f"{name} / floor: wall {ratio_of(found[name].wall, floor.wall)}, cpu {ratio_of(found[name].cpu, floor.cpu)}")
    print(f"target ≤ {target} × the floor (wall, median): {verdict}")
    same = found[ONE_PROCESS].output == ours.output
    print(f"JSON document of one process identical to that of several: {'yes' if same else 'NO'}")
    if base:
        before = found["base: advisor scan"]
        same &= before.output == ours.output
        for name in ("advisor scan", ONE_PROCESS):
            print(f"{name} / base: wall {ratio_of(found[name].wall, before.wall)}, cpu {ratio_of(found[name].cpu, before.cpu)}")
        print(f"JSON document identical to the base revision's: {'yes' if before.output == ours.output else 'NO'}")
    complete = loses_no_finding(path)
    print(f"findings identical to a scan that parses and analyses every file: {'yes' if complete else 'NO'}")
    return ratio <= target and same and complete


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="folders to scan (default: installed scikit-learn and timm)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", metavar="REV", help="also run this git revision's CLI, interleaved, and compare its JSON")
    args = parser.parse_args()
    paths = [path.resolve() for path in args.paths] or default_targets()
    if not paths:
        raise SystemExit("no target: give a folder, or pip install scikit-learn / timm (--no-deps)")
    ok = True
    with tempfile.TemporaryDirectory() as scratch:
        base = export_base(args.base, Path(scratch)) if args.base else None
        for tree in (ROOT, base) if base else (ROOT,):
            compile_tree(tree)
        for path in paths:
            ok &= measure(path, args.runs, base, Path(scratch))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
