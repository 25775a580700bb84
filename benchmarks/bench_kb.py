"""Benchmark the knowledge base at scale against its floors: interpreter start and one FTS5 query.

    python benchmarks/bench_kb.py [--entries 5000] [--runs 7]

1. `advisor search nms` on the shipped KB (index built; target ≤ 0.3 s), next to `python -c pass`.
2. A KB of N entries generated from the real ones (each a copy of a real entry with its own id, a
   varied title and an added paragraph of words drawn from the real entries, so texts differ) in a
   temporary user KB folder: `advisor kb build --rebuild` (shown against its floor), `advisor search`
   for a selective query (one entry's own title word), for `nms` and two Chinese queries (target ≤ 0.5 s at
   5,000 entries, ARCHITECTURE.md), one
   `advisor add` and one `advisor remove` (target ≤ 1 s each, against interpreter start). The build is shown against its floor, a
   fresh interpreter reading every file into an FTS5 table in one transaction. Each search is shown against its floor, a fresh interpreter
   running the same FTS5 query on the built index with the stdlib sqlite3, as a ratio.
Runs are interleaved (ours, floor, ours ...) because the machine may be loaded by others; medians
and minimums are printed. Everything runs in a temporary ADVISOR_HOME.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADVISOR = [sys.executable, "-m", "opprof_advisor"]
#: The floor of a build: a fresh interpreter reads every KB file and puts its text into an FTS5 table in
#: one transaction (the reading and full-text indexing no index of these files can skip).
BUILD_FLOOR = ("import pathlib, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
               "c.execute('create virtual table t using fts5(path, body, tokenize=porter)'); "
               "c.executemany('insert into t values (?, ?)', ((str(p), p.read_text(encoding='utf-8')) "
               "for p in pathlib.Path(sys.argv[2]).rglob('*.md'))); c.commit()")
FTS_FLOOR = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
             "c.execute(\"select rowid from entries_fts where entries_fts match ? order by rank limit 10\", "
             "(sys.argv[2],)).fetchall()")


def letters(number: int) -> str:
    """A word of letters only (entries may hold no unsourced figure) that is unique for ``number``."""
    word, number = "", number + 26 * 26
    while number:
        number, rest = divmod(number, 26)
        word = chr(97 + rest) + word
    return word


def write_kb(folder: Path, count: int, seed: int = 20261201) -> None:
    """``count`` entries generated from the real ones, each with its own id, title and last paragraph."""
    rng = random.Random(seed)
    real = sorted(p for p in (ROOT / "kb").rglob("*.md") if p.name.lower() != "readme.md" and "sources" not in p.parts)
    texts = [p.read_text(encoding="utf-8") for p in real]
    vocabulary = sorted({word for text in texts for word in re.findall(r"[a-z]{4,}", text.split("---", 2)[-1])})
    for number in range(count):
        source, text = real[number % len(real)], texts[number % len(real)]
        _, front, body = text.split("---\n", 2)
        tag = letters(number)
        words = " ".join(rng.choice(vocabulary) for _ in range(2))
        front = re.sub(r'^title: "(.*)"$', lambda m: f'title: "{m.group(1)} ({words} {tag})"', front, count=1,
                       flags=re.M)
        front = re.sub(r"^title: ([^\"].*)$", lambda m: f"title: {m.group(1)} ({words} {tag})", front, count=1,
                       flags=re.M)
        body = body.rstrip() + f"\n\nVariant {tag}: {' '.join(rng.choice(vocabulary) for _ in range(40))}.\n"
        target = folder / source.parent.name / f"{source.stem}-{tag}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"---\n{front}---\n{body}", encoding="utf-8")


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed


def interleaved(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, list[float]]:
    for command in commands.values():
        timed(command, env)  # warm the page cache (and bring the index up to date)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(timed(command, env))
    return times


def line(name: str, seconds: list[float], target: float | None = None, floor: list[float] | None = None) -> bool:
    median = statistics.median(seconds)
    text = f"{name:<44} median {median * 1000:7.0f} ms  min {min(seconds) * 1000:6.0f} ms"
    if floor:
        text += f"  {median / statistics.median(floor):5.1f} × floor"
    ok = target is None or median <= target
    if target is not None:
        text += f"  target ≤ {target * 1000:.0f} ms {'ok' if ok else 'SLOW'}"
    print(text)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5_000, help="size of the generated KB")
    parser.add_argument("--runs", type=int, default=7, help="calls per timed command")
    options = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-kb-") as scratch:
        home = Path(scratch) / "home"
        env = {**os.environ, "ADVISOR_HOME": str(home)}
        env.pop("ADVISOR_DB", None)
        db = str(home / "advisor.db")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpu(s), load {os.getloadavg()[0]:.2f}")
        shipped = interleaved({"pass": [sys.executable, "-c", "pass"], "search": [*ADVISOR, "search", "nms"],
                               "floor": [sys.executable, "-c", FTS_FLOOR, db, "nms"]}, env, options.runs)
        line("python -c pass (interpreter start)", shipped["pass"])
        line("FTS floor: one FTS5 query, fresh interpreter", shipped["floor"])
        ok &= line("search nms, shipped KB", shipped["search"], 0.3, shipped["floor"])  # ARCHITECTURE.md targets

        write_kb(home / "kb", options.entries)
        time.sleep(2.1)  # the files are older than the racy window of a signature, as a user's would be
        started = time.perf_counter()
        timed([sys.executable, "-c", BUILD_FLOOR, str(Path(scratch) / "floor.db"), str(home / "kb")], env)
        floor = time.perf_counter() - started
        started = time.perf_counter()
        timed([*ADVISOR, "kb", "build", "--rebuild"], env)
        build = time.perf_counter() - started
        print(f"{'build floor: read every file into FTS5':<44} {floor:7.2f} s")
        print(f"{f'kb build --rebuild, {options.entries} entries':<44} {build:7.2f} s  {build / floor:5.1f} × floor")
        rare = letters(options.entries // 2)
        big = interleaved({"selective": [*ADVISOR, "search", rare], "nms": [*ADVISOR, "search", "nms"],
                           "floor": [sys.executable, "-c", FTS_FLOOR, db, rare],
                           "zh": [*ADVISOR, "search", "降频"], "zh latin": [*ADVISOR, "search", "NMS 回退"]},
                          env, options.runs)
        line("FTS floor, fresh interpreter", big["floor"])
        ok &= line(f"search {rare} (selective), {options.entries} entries", big["selective"], 0.5, big["floor"])
        ok &= line(f"search nms, {options.entries} entries", big["nms"], 0.5, big["floor"])
        # Chinese: each generated entry copies a real one's zh texts, so no Chinese query is selective here
        ok &= line("search 降频 (Chinese, 1 in 160 entries)", big["zh"], 0.5, big["floor"])
        ok &= line("search NMS 回退 (Chinese and a word)", big["zh latin"], 0.5, big["floor"])
        adds = []
        for number in range(3):
            extra = Path(scratch) / f"extra-{number}.md"
            text = (ROOT / "kb" / "recipes" / "amp-and-hf32.md").read_text(encoding="utf-8")
            extra.write_text(text.replace('title: "', f'title: "Added {letters(number)} ', 1), encoding="utf-8")
            target = home / "kb" / "recipes" / f"extra-{number}.md"
            adds.append(timed([*ADVISOR, "add", str(extra)], env))
            assert target.is_file(), target
        ok &= line("add one entry", adds, 1.0, shipped["pass"])
        # An added entry is found by the word unique to its title (selective: the target holds), and by a word of
        # the added titles that 3 % of the generated entries also hold (not selective: it scores them all).
        after = interleaved({"selective": [*ADVISOR, "search", letters(1)], "common": [*ADVISOR, "search", "added"]},
                            env, 3)
        ok &= line(f"search {letters(1)} (selective) after the adds", after["selective"], 0.5)
        line("search added (common word) after the adds", after["common"])
        removes = [timed([*ADVISOR, "remove", f"extra-{number}"], env) for number in range(3)]
        ok &= line("remove one entry", removes, 1.0, shipped["pass"])
        after = interleaved({"search": [*ADVISOR, "search", "nms"]}, env, 3)
        line("search nms just after the removes", after["search"], 0.5)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
