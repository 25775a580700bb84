"""Byte-for-byte comparison of `advisor profile` / `advisor suggest` JSON between a base revision and this tree.

A change to how profiles are built (readers, builder, symptoms) must not change a single byte of what
users get. This script exports ``--base`` (a git revision, default the fork point of this branch from
``main``, so commits landing on main meanwhile do not show as differences) with ``git archive`` into a
temporary folder, then runs both trees' CLI in subprocesses, with the same interpreter and separate
advisor homes, on:

  * every bundled example (data/examples/*) and synthetic bench scenario (data/bench/*),
  * every real profile labelled in data/real_bench/labels.yaml (under ../shared/real-profiles, when present),
  * with ``--big DIR``: the large generated inputs of benchmarks/bench_profile.py found under DIR
    (profile with and without a --peaks file, which makes the roofline compute every shape, and suggest).

Each profile is also rendered as the Chinese table (``--lang zh``: JSON keeps the English texts, the
table translates notes and symptoms through the catalogue) and exported (``--export``: the kernels,
op_types, symptoms and notes database, compared by its SQL dump), except the inputs of a million rows
and more.

It compares stdout, stderr and exit code of each run and prints every difference (the first differing
line of the JSON). Exit 1 when anything differs.

    .venv/bin/python benchmarks/compare_outputs.py [--base REV] [--big /tmp/bench] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import difflib
import os
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "real-profiles"


def export_revision(revision: str, into: Path) -> Path:
    """The tree of ``revision`` extracted into ``into`` (git archive; the working tree is not touched)."""
    archive = into / "base.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision], stdout=handle, check=True)
    target = into / "base"
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    archive.unlink()
    return target


def real_targets() -> list[Path]:
    labels = ROOT / "data" / "real_bench" / "labels.yaml"
    if not REAL.is_dir() or not labels.is_file():
        return []
    found = []
    for line in labels.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text.startswith("- path:"):
            path = REAL / text.split(":", 1)[1].strip()
            if path.exists():
                found.append(path)
    return found


def big_targets(folder: Path) -> list[Path]:
    return [p for p in (folder / "big_ascend_pt", folder / "sliced", folder / "rows3m") if p.exists()]


#: Stands for the --export database path in a command; each run writes its own, dumped after the run.
EXPORT = "{export}"


def run(tree: Path, home: Path, args: list[str]) -> tuple[int, bytes, bytes]:
    """Exit code, stdout and stderr of the CLI of ``tree``; with --export, stdout ends with the database's SQL dump."""
    env = dict(os.environ, PYTHONPATH=str(tree), ADVISOR_HOME=str(home), PYTHONDONTWRITEBYTECODE="1",
               COLUMNS="120", NO_COLOR="1")
    home.mkdir(parents=True, exist_ok=True)
    export = home / "export.db"
    export.unlink(missing_ok=True)
    args = [str(export) if part == EXPORT else part for part in args]
    done = subprocess.run([sys.executable, "-m", "opprof_advisor", *args], capture_output=True, env=env, cwd=tree)
    stdout = done.stdout
    if export.exists():
        with sqlite3.connect(export) as db:
            stdout += b"\n-- export\n" + "\n".join(db.iterdump()).encode()
        db.close()
        export.unlink()
    return done.returncode, stdout, done.stderr.replace(str(export).encode(), b"EXPORT")


def first_difference(a: bytes, b: bytes) -> str:
    left, right = a.decode(errors="replace").splitlines(), b.decode(errors="replace").splitlines()
    diff = list(difflib.unified_diff(left, right, "base", "head", n=0, lineterm=""))
    return "\n".join(diff[:12]) if diff else "(differ only in line endings)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="git revision to compare against (default: git merge-base main HEAD)")
    parser.add_argument("--big", type=Path, help="folder of bench_profile.py inputs (big_ascend_pt, sliced, rows3m)")
    parser.add_argument("--only", help="only targets whose path contains this text")
    args = parser.parse_args()
    if args.base is None:
        args.base = subprocess.run(["git", "-C", str(ROOT), "merge-base", "main", "HEAD"], capture_output=True,
                                   text=True, check=True).stdout.strip()
    targets = sorted(p for p in (ROOT / "data" / "examples").iterdir() if p.is_dir())
    targets += sorted(p for p in (ROOT / "data" / "bench").iterdir() if p.is_dir())
    targets += real_targets()
    big = big_targets(args.big) if args.big else []
    with tempfile.TemporaryDirectory(prefix="advisor-compare-") as scratch:
        scratch_path = Path(scratch)
        base = export_revision(args.base, scratch_path)
        peaks = scratch_path / "peaks.yaml"
        peaks.write_text("chip: Ascend910B2\nfreq_mhz: 1800\n", encoding="utf-8")
        runs: list[list[str]] = []
        for target in targets:
            runs.append(["profile", str(target), "--format", "json"])
            runs.append(["profile", str(target), "--format", "json", "--peaks", str(peaks)])
            runs.append(["profile", str(target), "--format", "json", "--export", EXPORT])
            runs.append(["profile", str(target), "--lang", "zh"])  # the table, rendered through the catalogue
            runs.append(["suggest", "--profile", str(target), "--format", "json"])
        for target in big:
            runs.append(["profile", str(target), "--format", "json"])
            runs.append(["profile", str(target), "--format", "json", "--peaks", str(peaks)])
            runs.append(["suggest", "--profile", str(target), "--format", "json"])
            if target.name == "big_ascend_pt":
                runs.append(["profile", str(target), "--format", "json", "--export", EXPORT])
        if args.only:
            runs = [r for r in runs if any(args.only in part for part in r)]
        differ = 0
        for command in runs:
            want = run(base, scratch_path / "home-base", command)
            got = run(ROOT, scratch_path / "home-head", command)
            label = " ".join(part.replace(str(ROOT) + "/", "").replace(str(REAL) + "/", "real:") for part in command)
            if want == got:
                print(f"same    {label}  (exit {got[0]}, {len(got[1]):,} bytes)")
                continue
            differ += 1
            print(f"DIFFER  {label}")
            if want[0] != got[0]:
                print(f"  exit {want[0]} -> {got[0]}")
            for name, a, b in (("stdout", want[1], got[1]), ("stderr", want[2], got[2])):
                if a != b:
                    print(f"  {name}:\n" + "\n".join("    " + line for line in first_difference(a, b).splitlines()))
        print(f"{len(runs) - differ} of {len(runs)} runs identical to {args.base}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
