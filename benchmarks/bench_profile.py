"""Speed and memory of `advisor profile --format json` on generated large inputs and a small real profile.

Generates, into a temporary folder, from the documented headers (FORMATS.md §3.2, §4.3, as
opprof_advisor.testing writes them):
  * a ~100 MB torch_npu kernel_details.csv (Level2 header, ~350k rows),
  * a 1,000,000-row system msprof op_summary split into slices under PROF_*/mindstudio_profiler_output/,
  * with --big, a 3,000,000-row kernel_details.csv (~900 MB),
then runs the real CLI in a subprocess for each input (plus a small real profile from
../shared/real-profiles when present) and prints wall time, CPU time and peak RSS against the targets.

The floor is what the machine needs to read the same files at all: a fresh interpreter running
``pyarrow.csv.read_csv`` (and ``polars.read_csv`` when polars is installed) on every file of the input,
timed the same way. Ours is printed as a ratio to the pyarrow floor (issue 18: <= 2x on the 100 MB file,
<= 3x on 3M rows, peak RSS <= 300 MB and <= 2x the file size).

The ~100 MB input runs twice more, without and with a --peaks file, to measure what the roofline
adds (the generated files name no chip, so without peaks the roofline stops at its "cannot judge"
note; with peaks it computes the work of every distinct shape): target <= 10 % (issue 12).

With --base REV the CLI of that git revision (exported with git archive) runs interleaved with ours on
every input, for before / after figures; the bundled examples (data/examples/*) are timed too, so small
profiles can be checked to be no slower.

    .venv/bin/python benchmarks/bench_profile.py [--keep DIR] [--repeat N] [--big] [--base REV] [--only TEXT]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL_SMALL = ROOT.parent / "shared" / "real-profiles" / "msinsight-torch-npu" / "text" / "level1" / "rank0_ascend_pt"

sys.path.insert(0, str(ROOT))  # the checkout's package, whichever interpreter runs this
from opprof_advisor.testing import KERNEL_DETAILS_HEADER as LEVEL2_HEADER  # noqa: E402
from opprof_advisor.testing import KERNEL_DETAILS_TO_OP_SUMMARY as OP_SUMMARY_RENAMES  # noqa: E402

#: (name, type, core, mean duration µs, input shapes, dtypes) — an LLM-training-like mix.
KERNELS = [
    ("aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 170.0, "4096,1024;1024,4096", "DT_BF16;DT_BF16"),
    ("FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 880.0, "1,4096,1024;1,4096,128", "DT_BF16;DT_BF16"),
    ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 30.0, "1,4096,1024;1,4096,1024", "DT_BF16;DT_BF16"),
    ("RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 32.0, "1,4096,1024;1024", "DT_BF16;DT_BF16"),
    ("aclnnCast_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE", 20.0, "1,4096,1024", "FLOAT"),
    ("aclnnMul_MulAiCore_Mul", "Mul", "AI_VECTOR_CORE", 8.0, "1,4096,1024;1", "DT_BF16;DT_BF16"),
    ("trans_TransData_3", "TransData", "AI_VECTOR_CORE", 25.0, "1024,4096", "DT_BF16"),
    ("IndexPut", "IndexPut", "AI_CPU", 120.0, "4096;4096", "INT64;INT64"),
]


def _row(rng: random.Random, index: int, start: float) -> list[str]:
    name, op_type, core, mean, shapes, dtypes = KERNELS[index % len(KERNELS)]
    duration = mean * rng.uniform(0.8, 1.2)
    cube = core in ("AI_CORE", "MIX_AIC")
    vec = core in ("AI_VECTOR_CORE", "MIX_AIC")
    r = lambda: f"{rng.random():.2f}"  # noqa: E731
    values = {
        "Step Id": "13", "Model ID": "4294967295", "Task ID": str(30000 + index % 60000), "Stream ID": "2",
        "Name": name, "Type": op_type, "OP State": "dynamic", "Accelerator Core": core,
        "Start Time(us)": f"{start:.3f}\t", "Duration(us)": f"{duration:.3f}", "Wait Time(us)": f"{rng.uniform(0, 5):.3f}",
        "Block Dim": "40" if vec else "20", "Mix Block Dim": "0", "HF32 Eligible": "NO", "Input Shapes": f'"{shapes}"',
        "Input Data Types": dtypes, "Input Formats": ";".join("ND" for _ in dtypes.split(";")),
        "Output Shapes": f'"{shapes.split(";")[0]}"', "Output Data Types": dtypes.split(";")[0], "Output Formats": "ND",
        "Context ID": "N/A",
    }
    row = [values.get(column, "") for column in LEVEL2_HEADER[:21]]
    aic = [f"{duration:.2f}", str(int(duration * 1800)), f"{duration * 0.5:.1f}", r(), f"{duration * 0.2:.1f}", r(),
           f"{duration * 0.3:.1f}", r(), f"{duration * 0.6:.1f}", r(), f"{duration * 0.1:.1f}", r(), "0.001"]
    aiv = [f"{duration:.2f}", str(int(duration * 1800)), f"{duration * 0.4:.1f}", r(), f"{duration * 0.2:.1f}", r(),
           f"{duration * 0.5:.1f}", r(), f"{duration * 0.3:.1f}", r(), "0.002"]
    if core == "AI_CPU":
        return row + ["N/A"] * 25
    zeros_aic = ["0.0", "0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0"]
    zeros_aiv = ["0.0", "0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0", "0.0"]
    return row + (aic if cube else zeros_aic) + (aiv if vec else zeros_aiv) + [f"{rng.uniform(0, 90):.3f}"]


def write_kernel_details(path: Path, target_bytes: int | None = None, target_rows: int | None = None) -> int:
    """Write a Level2 kernel_details.csv of about ``target_bytes`` or ``target_rows`` (CRLF, as torch_npu
    does); return rows."""
    rng = random.Random(7)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows, start = 0, 1764246877073569.640
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\r\n")
        writer.writerow(LEVEL2_HEADER)
        while (handle.tell() < target_bytes) if target_rows is None else (rows < target_rows):
            batch = []
            for _ in range(4096):
                batch.append(_row(rng, rows, start))
                start += 50.0
                rows += 1
            writer.writerows(batch)
    return rows


def write_op_summary_slices(folder: Path, total_rows: int, slices: int) -> None:
    """A PROF_* tree whose op_summary is split into ``slices`` files (op_summary_slice_<k>_<ts>.csv)."""
    rng = random.Random(11)
    out = folder / "PROF_000001_20250101000000000_BENCHMARKSLICEDA" / "mindstudio_profiler_output"
    out.mkdir(parents=True, exist_ok=True)
    header = ["Device_id"] + [OP_SUMMARY_RENAMES.get(c, c) for c in LEVEL2_HEADER if c != "Step Id"]
    per_slice, start, index = total_rows // slices, 1764246877073569.640, 0
    for k in range(slices):
        with (out / f"op_summary_slice_{k}_20250101000000.csv").open("w", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            for _ in range(per_slice):
                writer.writerow(["0"] + _row(rng, index, start)[1:])
                start += 50.0
                index += 1


#: Runs the CLI and reports its own peak RSS at exit. VmHWM is per address space, so unlike
#: ru_maxrss it does not include the forking parent's memory (Linux keeps that across exec).
_WRAPPER = (
    "import atexit, re, runpy, sys\n"
    "def _peak():\n"
    "    text = open('/proc/self/status').read()\n"
    "    sys.stderr.write('\\nVmHWM_KB=' + re.search(r'VmHWM:\\s+(\\d+)', text).group(1) + '\\n')\n"
    "atexit.register(_peak)\n"
    "sys.argv = ['advisor', *sys.argv[1:]]\n"
    "runpy.run_module('opprof_advisor', run_name='__main__')\n"
)


def run_cli(target: Path, repeat: int, extra: tuple[str, ...] = (), wrapper: str = _WRAPPER,
            tree: Path = ROOT) -> tuple[float, float, int, str]:
    """Best wall time (s), its CPU time (s) and the max peak RSS (MB) of `advisor profile TARGET --format json`
    run from the checkout ``tree`` (this one, or a --base revision)."""
    best = (float("inf"), 0.0)
    peak, tail = 0, ""
    home = Path(tempfile.gettempdir()) / ("advisor-bench-home" if tree == ROOT else "advisor-bench-home-base")
    env = dict(os.environ, PYTHONPATH=str(tree), ADVISOR_HOME=str(home))
    for _ in range(repeat):
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-c", wrapper, "profile", str(target), "--format", "json", *extra],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tree)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        err = process.stderr.read().decode()
        process.stderr.close()
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            return wall, 0.0, 0, f"exit {process.returncode}: {err[-300:]}"
        if wall < best[0]:
            best = (wall, usage.ru_utime + usage.ru_stime)
        found = [line for line in err.splitlines() if line.startswith("VmHWM_KB=")]
        peak = max(peak, int(found[-1].split("=")[1]) // 1024 if found else usage.ru_maxrss // 1024)
    return best[0], best[1], peak, tail


#: Reads every CSV under the folder given with pyarrow (or polars): the floor of `advisor profile`.
_FLOOR = (
    "import sys\n"
    "from pathlib import Path\n"
    "files = sorted(p for p in Path(sys.argv[2]).rglob('*.csv'))\n"
    "if sys.argv[1] == 'pyarrow':\n"
    "    import pyarrow.csv\n"
    "    rows = sum(pyarrow.csv.read_csv(f).num_rows for f in files)\n"
    "else:\n"
    "    import polars\n"
    "    rows = sum(polars.read_csv(f, infer_schema_length=10000).height for f in files)\n"
)


def floor(engine: str, target: Path) -> float | None:
    """Wall time of a fresh interpreter reading every CSV of ``target`` with ``engine``; None if not installed."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _FLOOR, engine, str(target)], capture_output=True)
    wall = time.perf_counter() - started
    return wall if done.returncode == 0 else None


@dataclass
class Measured:
    """Interleaved runs of one input: ours, the --base revision's, and the pyarrow / polars floors."""

    ours: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    peak: int = 0
    error: str = ""
    base: list[float] = field(default_factory=list)
    base_cpu: list[float] = field(default_factory=list)
    base_peak: int = 0
    floors: dict[str, list[float]] = field(default_factory=lambda: {"pyarrow": [], "polars": []})

    def floor(self, engine: str) -> float | None:
        return statistics.median(self.floors[engine]) if self.floors[engine] else None


def measure(target: Path, repeat: int, base: Path | None, floors: bool = True) -> Measured:
    """Ours, the base revision's CLI and the floors, in turn, ``repeat`` times: on a machine others load,
    interleaved runs meet the same load."""
    found = Measured()
    for _ in range(repeat):
        wall, cpu, rss, found.error = run_cli(target, 1)
        found.ours.append(wall)
        found.cpu.append(cpu)
        found.peak = max(found.peak, rss)
        if base is not None:
            wall, cpu, rss, error = run_cli(target, 1, tree=base)
            found.base.append(wall)
            found.base_cpu.append(cpu)
            found.base_peak = max(found.base_peak, rss)
            found.error = found.error or (f"base {error}" if error else "")
        for engine, walls in found.floors.items() if floors else ():
            seconds = floor(engine, target)
            if seconds is not None:
                walls.append(seconds)
    return found


def export_base(revision: str, folder: Path) -> Path:
    """The tree of ``revision`` (git archive) under ``folder``, to run its CLI beside ours."""
    from compare_outputs import export_revision

    if (folder / "base").exists():
        shutil.rmtree(folder / "base")
    return export_revision(revision, folder)


def compile_tree(tree: Path) -> None:
    """Write the package's bytecode, as an installed package has it: without it (PYTHONDONTWRITEBYTECODE, a
    fresh export) every run compiles every module again, ~0.1 s that is not the profile's."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "opprof_advisor")], check=True)


def print_case(label: str, found: Measured, limits: tuple[float | None, float | None, int | None]) -> bool:
    """One line: median and minimum wall, CPU, peak RSS, the floors, the floor ratio and the base; True if on target."""
    wall_limit, ratio_limit, rss_limit = limits
    wall, fastest = statistics.median(found.ours), min(found.ours)
    arrow = found.floor("pyarrow")
    ratio = wall / arrow if arrow else None
    ok = (not found.error and (wall_limit is None or wall <= wall_limit)
          and (rss_limit is None or found.peak <= rss_limit)
          and (ratio_limit is None or (ratio is not None and ratio <= ratio_limit)))
    limit = ", ".join(part for part in (f"<= {wall_limit:g} s" if wall_limit else "",
                                        f"<= {ratio_limit:g}x" if ratio_limit else "",
                                        f"<= {rss_limit} MB" if rss_limit else "") if part)
    before = "-"
    if found.base:
        before = (f"{statistics.median(found.base):.2f}/{min(found.base):.2f} s, cpu "
                  f"{statistics.median(found.base_cpu):.2f} s, {found.base_peak} MB ({wall / statistics.median(found.base):.2f}x)")
    print(f"{label:44} {wall:6.2f} {fastest:6.2f} {statistics.median(found.cpu):6.2f} {found.peak:7d} "
          f"{_s(arrow):>7} {_s(found.floor('polars')):>6} {(f'{ratio:.2f}x' if ratio else '-'):>6} "
          f"{limit:>22}  {'ok' if ok else 'MISSED ' + found.error}  {before}", flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    parser.add_argument("--repeat", type=int, default=5, help="runs per input; median and minimum are reported")
    parser.add_argument("--big", action="store_true", help="also the 3,000,000-row kernel_details.csv (~900 MB)")
    parser.add_argument("--base", metavar="REV", help="also run this git revision's CLI, interleaved (before / after)")
    parser.add_argument("--only", help="only inputs whose label contains this text")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="advisor-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    base = export_base(args.base, folder) if args.base else None
    for tree in (ROOT, base) if base else (ROOT,):
        compile_tree(tree)
    kernel_details = folder / "big_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    if not kernel_details.exists():
        write_kernel_details(kernel_details, 100 * 1024 * 1024)
    sliced = folder / "sliced"
    if not sliced.exists():
        write_op_summary_slices(sliced, 1_000_000, 4)
    size = kernel_details.stat().st_size
    cases = [  # label, folder, (wall limit s, floor ratio limit, peak RSS limit MB), with floors
        (f"kernel_details.csv {size / 2 ** 20:.0f} MiB, {_rows(kernel_details):,} rows", kernel_details.parents[1],
         (3.0, 2.0, 300), True),
        ("op_summary 1,000,000 rows in 4 slices", sliced, (8.0, None, None), True),
    ]
    if args.big:
        rows3m = folder / "rows3m" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
        if not rows3m.exists():
            write_kernel_details(rows3m, target_rows=3_000_000)
        big_size = rows3m.stat().st_size
        cases.append((f"kernel_details.csv 3,000,000 rows, {big_size / 2 ** 20:.0f} MiB", rows3m.parents[1],
                      (None, 3.0, 2 * big_size // 2 ** 20), True))
    if REAL_SMALL.is_dir():
        cases.append(("small real profile (msinsight level1)", REAL_SMALL, (0.3, None, None), False))
    cases += [(f"example {p.name}", p, (None, None, None), False)
              for p in sorted((ROOT / "data" / "examples").iterdir()) if p.is_dir()]
    if args.only:
        cases = [case for case in cases if args.only in case[0]]
    print(f"inputs in {folder}; load average {_load()} on {os.cpu_count()} cores; "
          f"median and minimum of {args.repeat} interleaved runs" + (f"; base {args.base}" if args.base else ""))
    print(f"{'input':44} {'wall s':>6} {'min s':>6} {'cpu s':>6} {'peak MB':>7} {'pyarrow':>7} {'polars':>6} "
          f"{'ratio':>6} {'target':>22}  result  base: median/min wall, cpu, peak (ours/base wall)")
    failed = False
    for label, target, limits, floors in cases:
        failed |= not print_case(label, measure(target, args.repeat, base, floors), limits)
    if not args.only:
        failed |= not roofline_overhead(folder, kernel_details.parents[1], args.repeat)
    print(f"load average at the end {_load()}")
    return 1 if failed else 0


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _rows(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle) - 1


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


#: What the roofline may add to `advisor profile` on the ~100 MB input (issue 12).
ROOFLINE_OVERHEAD_LIMIT = 0.10


def roofline_overhead(folder: Path, target: Path, repeat: int) -> bool:
    """Best CPU time without and with --peaks on the big input; print both and the overhead."""
    peaks = folder / "peaks.yaml"
    peaks.write_text("chip: Ascend910B2\nfreq_mhz: 1800\n", encoding="utf-8")
    # CPU time, best of interleaved runs: less noisy than wall time on a shared machine.
    without, with_ = [], []
    for _ in range(max(repeat, 3)):
        without.append(run_cli(target, 1)[1])
        with_.append(run_cli(target, 1, ("--peaks", str(peaks)))[1])
    base, roof = min(without), min(with_)
    overhead = roof / base - 1 if base else 0.0
    ok = overhead <= ROOFLINE_OVERHEAD_LIMIT
    print(f"{'roofline: cpu s without / with --peaks':48} {base:7.2f} {roof:6.2f} {'':8} "
          f"{'<= +10 %':>16}  {overhead:+.1%} {'ok' if ok else 'SLOW'}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
