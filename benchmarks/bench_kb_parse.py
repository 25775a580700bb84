"""Per-file cost of parsing a KB entry: the markdown split, the front-matter reader and `index_sync.parse_one`.

    python benchmarks/bench_kb_parse.py [--entries 3000] [--rounds 15] [--base REV]

On the shipped kb/ and on a KB of N entries generated as `bench_kb.py` makes them, prints the
µs per file (process CPU time, median and minimum of the rounds) of `kb_split.split_simple`,
`plain_front_matter.read_front_matter` and `index_sync.parse_one` (read, hash, parse, validate,
row), each next to what it is measured against: the split against markdown-it (its fallback) and
its floor, one `str.split` of the text; the reader against PyYAML's C loader (its fallback) and
its floor, `json.loads` building the same data from JSON. With --base, that git revision's
split and reader (exported with git archive) run interleaved with ours, in this process, and
every result must be equal (exit 1 otherwise), and ours / base is printed too. Caches of repeated
names are warm after the first round, as they are after the first entries of a large build.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_kb import write_kb  # noqa: E402
from opprof_advisor import index_sync, kb, kb_split, plain_front_matter  # noqa: E402
from opprof_advisor.plain_yaml import construct, loader_class  # noqa: E402


def per_file(function, inputs: list, rounds: int) -> list[float]:
    """µs of process CPU time per input, one value a round."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        for item in inputs:
            function(*item)
        times.append((time.process_time() - started) / len(inputs) * 1e6)
    return times


def by_pyyaml(front: str, _line: int):
    loader = loader_class()(front)
    try:
        return construct(loader, loader.get_single_node())
    finally:
        loader.dispose()


def load_base(tree: Path):
    """The split and reader modules of an exported revision (importing our plain_yaml)."""
    modules = []
    for name in ("kb_split", "plain_front_matter"):
        spec = importlib.util.spec_from_file_location(f"base_{name}", tree / "opprof_advisor" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    return modules


def use(split, read) -> None:
    """Make kb.parse_file use ``split`` and ``read`` (kb imports both at call time)."""
    kb_split.split_simple, plain_front_matter.read_front_matter = split, read


def show(name: str, times: list[float], against: dict[str, list[float]]) -> None:
    text = f"  {name:<36} median {statistics.median(times):7.1f} µs  min {min(times):7.1f} µs"
    for other, values in against.items():
        text += f"  {statistics.median(times) / statistics.median(values):5.2f} × {other}"
    print(text)


def measure(title: str, paths: list[Path], rounds: int, base) -> bool:
    texts = [path.read_text(encoding="utf-8") for path in paths]
    ours_split, ours_read = kb_split.split_simple, plain_front_matter.read_front_matter
    splits = [split for split in map(ours_split, texts) if split is not None]
    fronts = [(split.front, 2) for split in splits]
    taken = [plain_front_matter.read_front_matter(*front) for front in fronts]
    as_json = [(json.dumps(read[0], default=str),) for read in taken if read is not None]
    items = [((str(path), path.stat().st_size, "user"),) for path in paths]
    print(f"{title}: {len(paths)} files, {len(splits)} split by the scan, {len(as_json)} read by the line reader")
    ok = True
    if base:
        base_split, base_read = base[0].split_simple, base[1].read_front_matter
        same = [ours_split(text) == base_split(text) for text in texts]
        same += [ours_read(*front) == base_read(*front) for front in fronts]
        use(base_split, base_read)
        before = [index_sync.parse_one(*item) for item in items]
        use(ours_split, ours_read)
        ok = all(same) and before == [index_sync.parse_one(*item) for item in items]
        print(f"  same results as {base[2]}: {'yes' if ok else 'NO'}")
    times: dict[str, list[float]] = {}
    for _ in range(rounds):  # interleaved, one round each at a time: the machine may be loaded by others
        runs = {"split": (ours_split, [(text,) for text in texts]), "read": (ours_read, fronts),
                "parse_one": (index_sync.parse_one, items),
                "markdown-it": (kb._split_markdown, [(text,) for text in texts]),
                "str.split": (str.split, [(text, "\n") for text in texts]),
                "PyYAML": (by_pyyaml, fronts), "json.loads": (json.loads, as_json)}
        if base:
            runs.update({"base split": (base_split, [(text,) for text in texts]),
                         "base read": (base_read, fronts)})
        for name, (function, inputs) in runs.items():
            times.setdefault(name, []).extend(per_file(function, inputs, 1))
        if base:
            use(base_split, base_read)
            times.setdefault("base parse_one", []).extend(per_file(index_sync.parse_one, items, 1))
            use(ours_split, ours_read)
    for name, others in (("split", ("markdown-it", "str.split")), ("read", ("PyYAML", "json.loads")),
                         ("parse_one", ())):
        against = {"base": times["base " + name]} if base else {}
        show(name, times[name], {**against, **{other: times[other] for other in others}})
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=3000, help="size of the generated KB")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--base", metavar="REV", help="also run this git revision's split and reader, and compare")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-kb-parse-") as scratch:
        base = None
        if options.base:
            from compare_outputs import export_revision

            base = (*load_base(export_revision(options.base, Path(scratch))), options.base)
        write_kb(Path(scratch) / "kb", options.entries)
        ok = measure("shipped kb/", list(kb.find_kb_files([ROOT / "kb"])), options.rounds, base)
        generated = sorted((Path(scratch) / "kb").rglob("*.md"))
        ok &= measure(f"generated KB of {options.entries}", generated, options.rounds, base)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
