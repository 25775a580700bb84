"""Time and peak memory of `advisor profile` on synthetic N-rank jobs: cold and warm cache, per executor.

Writes, with opprof_advisor.testing.write_torch_npu_job, data-parallel jobs of N = 8, 128 and 1,000
ranks (torch_npu Level1 text: kernel_details.csv, step_trace_time.csv, communication.json per rank) in
which one rank computes 1.5x longer and its peers wait for it inside AllReduce. Each rank holds
--launches kernel launches (default 1,000: ~0.32 MB of kernel_details.csv; 1,000 ranks are then
~330 MB on disk and the whole benchmark runs in a few minutes on 2 cores). For each N and executor it
runs the real CLI in a subprocess twice — cold (an empty ADVISOR_HOME: every rank is mapped) and warm
(the rank summaries cached) — and prints wall time, the main process's peak RSS (VmHWM), the largest
process's peak RSS (workers included) and whether the slow rank was named; then the ratios: warm /
cold, time per rank as N grows, peak RSS as N grows.

--engines measures the per-op-type group-by of the map on a 95 MiB-per-rank style kernel table
(400,000 launches, as bench_profile.py's ~100 MB kernel_details.csv) and the reduce over 1,000 ranks'
op rows, in pyarrow compute and in DuckDB (when installed: pip install duckdb), plus the import cost
of each.

    python benchmarks/bench_cluster.py [--ranks 8,128,1000] [--executors serial,processes,dask]
                                       [--launches 1000] [--keep DIR] [--engines]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_profile import _WRAPPER  # noqa: E402  (runs the CLI and reports its VmHWM)

from opprof_advisor.testing import KernelSpec, write_torch_npu_job  # noqa: E402

SLOW_FACTOR = 1.5


def kernels(launches: int) -> list[KernelSpec]:
    """An LLM-training-like step of about ``launches`` launches (the AllReduce is added per rank)."""
    unit = max(1, launches // 200)
    return [
        KernelSpec("aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 170.0, 60 * unit, block_dim=24,
                   input_shapes="4096,1024;1024,4096", input_dtypes="DT_BF16;DT_BF16", jitter=0.1),
        KernelSpec("FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 880.0, 10 * unit, block_dim=24,
                   mix_block_dim=48, input_dtypes="DT_BF16;DT_BF16", jitter=0.1),
        KernelSpec("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 30.0, 80 * unit, block_dim=48, jitter=0.1),
        KernelSpec("RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 32.0, 40 * unit, block_dim=48, jitter=0.1),
        KernelSpec("aclnnCast_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE", 20.0, 10 * unit, block_dim=48),
    ]


def run_cli(job: Path, executor: str, home: Path) -> dict:
    """One `advisor profile JOB --format json --executor X`: wall s, main and largest peak RSS (MiB), slow rank."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), ADVISOR_HOME=str(home))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-c", _WRAPPER, "profile", str(job), "--format", "json",
                                    "--executor", executor], stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)  # ru_maxrss: the largest process of its tree
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        output, errors = out.read(), err.read().decode()
    if process.returncode != 0:
        return {"wall": wall, "error": errors[-300:]}
    found = [line for line in errors.splitlines() if line.startswith("VmHWM_KB=")]
    main_mb = int(found[-1].split("=")[1]) / 1024 if found else 0.0
    usage_peak = usage.ru_maxrss / 1024
    document = json.loads(output)
    return {"wall": wall, "main_mb": main_mb, "largest_mb": usage_peak,
            "slow": (document.get("cluster") or {}).get("slow_rank"), "ranks": len(document["source"]["ranks"])}


def bench_jobs(args, folder: Path) -> list[tuple]:
    results = []
    for n in args.ranks:
        job = folder / f"job-{n}"
        if not job.is_dir():
            started = time.perf_counter()
            write_torch_npu_job(job, kernels(args.launches), ranks=n, slow_rank=n // 3, slow_factor=SLOW_FACTOR)
            size = sum(f.stat().st_size for f in job.rglob("*") if f.is_file())
            print(f"wrote {n} ranks ({size / 2**20:.0f} MiB) in {time.perf_counter() - started:.1f} s", flush=True)
        for executor in args.executors:
            home = Path(tempfile.mkdtemp(prefix="advisor-cluster-home-"))
            try:
                cold = run_cli(job, executor, home)
                warm = run_cli(job, executor, home)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            results.append((n, executor, cold, warm))
            print(_line(n, executor, "cold", cold), flush=True)
            print(_line(n, executor, "warm", warm), flush=True)
    return results


def _line(n: int, executor: str, kind: str, run: dict) -> str:
    if "error" in run:
        return f"{n:>5} {executor:<10} {kind:<5} FAILED {run['error']}"
    return (f"{n:>5} {executor:<10} {kind:<5} {run['wall']:7.2f} s  {1000 * run['wall'] / n:6.1f} ms/rank  "
            f"main {run['main_mb']:6.0f} MiB  largest {run['largest_mb']:6.0f} MiB  slow {run['slow']}")


def print_ratios(results: list[tuple]) -> None:
    print("\nratios")
    for n, executor, cold, warm in results:
        if "error" not in cold and "error" not in warm:
            print(f"  {n:>5} {executor:<10} cold / warm {cold['wall'] / warm['wall']:5.1f}x")
    by_executor: dict[str, list] = {}
    for n, executor, cold, _ in results:
        if "error" not in cold:
            by_executor.setdefault(executor, []).append((n, cold))
    for executor, runs in by_executor.items():
        (n0, first), (n1, last) = runs[0], runs[-1]
        if n1 > n0:
            print(f"  {executor:<10} N {n0} -> {n1}: time x{last['wall'] / first['wall']:.1f} "
                  f"(ranks x{n1 / n0:.0f}), ms/rank {1000 * first['wall'] / n0:.1f} -> {1000 * last['wall'] / n1:.1f}, "
                  f"main peak RSS {first['main_mb']:.0f} -> {last['main_mb']:.0f} MiB")


# ----------------------------------------------------------------------------------------------
# pyarrow compute against DuckDB
# ----------------------------------------------------------------------------------------------


def bench_engines() -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = random.Random(0)
    ops = [("MatMulV2", "ai_core"), ("FlashAttentionScore", "mix_aic"), ("Add", "ai_vector"), ("RmsNorm", "ai_vector"),
           ("Cast", "ai_vector"), ("TransData", "ai_vector"), ("IndexPut", "ai_cpu"), ("hcom_allReduce_", "communication")]
    rows = 400_000
    picks = [ops[rng.randrange(len(ops))] for _ in range(rows)]
    op_type, unit = [p[0] for p in picks], [p[1] for p in picks]
    duration = [rng.uniform(5.0, 900.0) for _ in range(rows)]
    print(f"\nengines: map group-by over {rows:,} launches (a 95 MiB-per-rank kernel table), best of 5")

    def to_arrow():
        return pa.table({"op_type": pa.array(op_type, pa.string()), "unit": pa.array(unit, pa.string()),
                         "d": pa.array(duration, pa.float64())})

    table = to_arrow()
    print(f"  Python columns -> arrow table {_best(to_arrow) * 1000:7.1f} ms  (both engines start here)")
    arrow = _best(lambda: table.group_by(["op_type", "unit"]).aggregate(
        [("d", "count"), ("d", "sum"), ("d", "tdigest", pc.TDigestOptions(q=[0.5, 0.95])), ("d", "max")]))
    print(f"  pyarrow compute group_by      {arrow * 1000:7.1f} ms  (t-digest p50 / p95)")
    try:
        import duckdb
    except ImportError:
        duckdb = None
        print("  duckdb                        not installed (pip install duckdb to compare)")
    if duckdb is not None:
        con = duckdb.connect()
        con.register("t", table)
        duck = _best(lambda: con.execute("select op_type, unit, count(*), sum(d), quantile_cont(d, [0.5, 0.95]), "
                                         "max(d) from t group by op_type, unit").fetchall())
        print(f"  duckdb SQL over the table     {duck * 1000:7.1f} ms  (exact quantiles)")
    # the reduce: 1,000 ranks x 40 op rows
    ranks, per_rank = 1000, 40
    reduce_rows = {"rank": [r for r in range(ranks) for _ in range(per_rank)],
                   "op_type": [f"Op{i}" for _ in range(ranks) for i in range(per_rank)],
                   "time_us": [rng.uniform(1e3, 1e5) for _ in range(ranks * per_rank)]}
    table = pa.table(reduce_rows)
    print(f"  reduce of {ranks} ranks x {per_rank} op rows: pyarrow "
          f"{_best(lambda: table.group_by(['op_type']).aggregate([('time_us', 'sum'), ('time_us', 'stddev')])) * 1000:.1f} ms",
          end="")
    if duckdb is not None:
        con.register("r", table)
        duck = _best(lambda: con.execute("select op_type, sum(time_us), stddev_pop(time_us) from r group by op_type")
                     .fetchall())
        print(f", duckdb {duck * 1000:.1f} ms")
    else:
        print()
    for module in ("pyarrow.compute", "duckdb"):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if done.returncode == 0:
            print(f"  import {module:<16} {time.perf_counter() - started:.2f} s (interpreter start included)")


def _best(func, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="8,128,1000", type=lambda t: [int(x) for x in t.split(",")])
    parser.add_argument("--executors", default="serial,processes,dask", type=lambda t: t.split(","))
    parser.add_argument("--launches", type=int, default=1000, help="kernel launches per rank")
    parser.add_argument("--keep", type=Path, help="write the jobs here and keep them (reused when present)")
    parser.add_argument("--engines", action="store_true", help="only compare pyarrow compute with DuckDB")
    args = parser.parse_args()
    if args.engines:
        bench_engines()
        return 0
    folder = args.keep or Path(tempfile.mkdtemp(prefix="advisor-cluster-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{args.launches} launches per rank; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'N':>5} {'executor':<10} {'cache':<5} {'wall':>9}  {'per rank':>13}  {'main peak':>13}  "
          f"{'largest peak':>16}")
    try:
        results = bench_jobs(args, folder)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    print_ratios(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
