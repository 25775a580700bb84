"""Benchmark the knowledge-base index and search against the issue's speed targets.

    /work/venv/bin/python benchmarks/bench_kb.py [--entries 5000] [--runs 10]

1. `advisor search nms` on the shipped KB with the index already built (wall time per call,
   interpreter start included; target ≤ 150 ms), through the Typer app and through the Typer-free
   fast path (opprof_advisor.cli.fast_path), with `python -c pass` and `advisor --version` for scale.
2. A synthetic KB of N entries (default 5,000) written to a temporary user KB folder:
   `advisor kb build --rebuild` (target ≤ 20 s), `advisor search nms` (target ≤ 250 ms), one
   `advisor add` into that KB (incremental re-index), and search time inside one process.
Everything runs in a temporary ADVISOR_HOME; nothing outside it is touched.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opprof_advisor.operators import FAMILIES  # noqa: E402
from opprof_advisor.vocabulary import KINDS, SYMPTOMS  # noqa: E402

WORDS = ("slow kernel layout cast fusion tiling padding memory bandwidth dispatch queue stream graph eager "
         "precision cache shape batch sequence head block core vector cube scalar pipeline overlap buffer "
         "warmup compile static dynamic aligned format transpose reduce gather scatter host device").split()


#: How `advisor` is started: the module entry (Typer for every command), or the console-script
#: entry opprof_advisor.cli.fast_path:main (plain suggest, profile, show and search skip Typer).
ENTRIES = {
    "typer": [sys.executable, "-m", "opprof_advisor"],
    "fast": [sys.executable, "-c", "from opprof_advisor.cli.fast_path import main; main()"],
}


def run(args: list[str], env: dict[str, str], entry: str = "typer") -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([*ENTRIES[entry], *args], cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"advisor {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed, done


def time_calls(args: list[str], env: dict[str, str], runs: int, entry: str = "typer") -> list[float]:
    run(args, env, entry)  # warm the page cache and make sure the index is fresh
    return [run(args, env, entry)[0] for _ in range(runs)]


def synthetic_entry(number: int, rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(list(KINDS))
    families = rng.sample(sorted(FAMILIES), rng.randint(1, 3))
    symptoms = rng.sample(sorted(SYMPTOMS), rng.randint(1, 3))
    title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 10))).capitalize()
    words = lambda n: " ".join(rng.choice(WORDS) for _ in range(n))  # noqa: E731
    lines = [
        "---", f"kind: {kind}", f"title: {title} {number}", f"summary: {words(20)}.",
        f"operators: [{', '.join(families)}]", f"symptoms: [{', '.join(symptoms)}]",
        f"tags: [{', '.join(rng.sample(WORDS, 3))}]", "evidence: C", "sources: [https://example.org/synthetic]",
        "---", "",
    ]
    for section in (*KINDS[kind], "Sources"):
        lines += [f"## {section}", "", f"{words(60)}.", ""]
    return f"{kind}s/synthetic-{number:05d}.md", "\n".join(lines)


def write_synthetic_kb(folder: Path, count: int) -> None:
    rng = random.Random(20240501)
    for number in range(count):
        relative, text = synthetic_entry(number, rng)
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def report(name: str, seconds: list[float], target: float) -> bool:
    median = statistics.median(seconds)
    ok = median <= target
    print(f"{name:<46} median {median * 1000:7.0f} ms  min {min(seconds) * 1000:6.0f}  max {max(seconds) * 1000:6.0f}"
          f"  target ≤ {target * 1000:.0f} ms  {'ok' if ok else 'SLOW'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5000, help="size of the synthetic KB")
    parser.add_argument("--runs", type=int, default=10, help="calls per timed command")
    options = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-kb-") as scratch:
        home = Path(scratch) / "home"
        env = {**os.environ, "ADVISOR_HOME": str(home)}
        env.pop("ADVISOR_DB", None)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpu(s), load {os.getloadavg()[0]:.2f}")
        report("python -c pass (interpreter start, for scale)", [run_python_pass() for _ in range(options.runs)], 0.150)
        report("advisor --version (Typer app start, for scale)", time_calls(["--version"], env, options.runs), 0.150)
        report("search nms, shipped KB, via Typer", time_calls(["search", "nms"], env, options.runs), 0.150)
        fast = time_calls(["search", "nms"], env, options.runs, "fast")
        ok &= report("search nms, shipped KB, fast path", fast, 0.150)

        write_synthetic_kb(home / "kb", options.entries)
        build, done = run(["kb", "build", "--rebuild"], env)
        print(f"{'kb build --rebuild, ' + str(options.entries) + ' synthetic entries':<46} {build:7.2f} s  "
              f"target ≤ 20 s  {'ok' if build <= 20 else 'SLOW'}   ({done.stdout.strip()})")
        ok &= build <= 20
        typer_times = time_calls(["search", "nms"], env, options.runs)
        report(f"search nms, {options.entries} synthetic, via Typer", typer_times, 0.250)
        ok &= report(f"search nms, {options.entries} synthetic, fast path",
                     time_calls(["search", "nms"], env, options.runs, "fast"), 0.250)
        extra = Path(scratch) / "extra-case.md"
        extra.write_text(synthetic_entry(options.entries, random.Random(1))[1], encoding="utf-8")
        added, _ = run(["add", str(extra)], env)
        print(f"{'add one entry (incremental re-index)':<46} {added * 1000:7.0f} ms")
        print(f"{'search inside one process (5 queries)':<46} {in_process_search(home) * 1000:7.1f} ms per query")
    return 0 if ok else 1


def run_python_pass() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def in_process_search(home: Path) -> float:
    os.environ["ADVISOR_HOME"] = str(home)
    from opprof_advisor.kb_search import search
    from opprof_advisor.store import open_index

    index = open_index()
    queries = ["nms", "nsm", "flash attention", "NonMaxSuppressionV3", "memory bandwidth tiling"]
    started = time.perf_counter()
    for query in queries:
        search(index, query)
    return (time.perf_counter() - started) / len(queries)


if __name__ == "__main__":
    raise SystemExit(main())
