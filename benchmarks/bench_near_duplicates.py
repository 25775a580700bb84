"""How well the near-duplicate score of `advisor add` separates copies from distinct entries, on the shipped KB.

    python benchmarks/bench_near_duplicates.py

For every shipped entry: its score against the nearest other entry (distinct pairs), and against
three kinds of copy of itself (seeded, so the run repeats): one word in ten dropped, swapped, added
or lower-cased; the title kept and half the summary rewritten; the title kept and the summary
replaced by a new sentence. Prints the spread of each and, per threshold, the false alarms among
distinct entries and the share of copies caught (opprof_advisor/near_duplicates.py says why 75).
"""

from __future__ import annotations

import random

from rapidfuzz import fuzz

from opprof_advisor.core import paths
from opprof_advisor.kb import load_entries
from opprof_advisor.kb.near_duplicates import NEAR_DUPLICATE, compared_text


def perturbed(text: str, rng: random.Random) -> str:
    words = text.split()
    how = rng.choice(["drop", "swap", "add", "lower"])
    for _ in range(max(1, len(words) // 10)):
        k = rng.randrange(len(words))
        if how == "drop" and len(words) > 3:
            words.pop(k)
        elif how == "swap" and k + 1 < len(words):
            words[k], words[k + 1] = words[k + 1], words[k]
        elif how == "add":
            words.insert(k, rng.choice(["really", "also", "then", "our"]))
        else:
            words[k] = words[k].lower()
    return " ".join(words)


def spread(values: list[float]) -> str:
    values = sorted(values)
    return ", ".join(f"{name} {values[int(p * (len(values) - 1))]:.1f}"
                     for name, p in (("min", 0), ("p5", 0.05), ("median", 0.5), ("p95", 0.95), ("max", 1)))


def main() -> None:
    entries = load_entries([paths.builtin_kb_dir()])
    texts = [compared_text(e) for e in entries]
    rng = random.Random(0)
    distinct = [max(fuzz.token_set_ratio(t, texts[j]) for j in range(len(texts)) if j != i) for i, t in enumerate(texts)]
    copies = {
        "one word in ten changed": [fuzz.token_set_ratio(perturbed(t, rng), t) for t in texts],
        "half the summary rewritten": [fuzz.token_set_ratio(
            f"{e.title} {' '.join(e.summary.split()[:len(e.summary.split()) // 2])} and it worked for our model too.",
            t) for e, t in zip(entries, texts)],
        "title kept, new summary": [fuzz.token_set_ratio(f"{e.title} In our run this helped as well.", t)
                                    for e, t in zip(entries, texts)],
    }
    print(f"{len(entries)} shipped entries")
    print(f"distinct (nearest other entry): {spread(distinct)}")
    for name, values in copies.items():
        print(f"copies, {name}: {spread(values)}")
    for threshold in (70, NEAR_DUPLICATE, 80, 85):
        caught = ", ".join(f"{name} {sum(v >= threshold for v in values) / len(values):.1%}"
                           for name, values in copies.items())
        print(f"threshold {threshold:g}: {sum(d >= threshold for d in distinct)} false alarm(s); caught: {caught}")


if __name__ == "__main__":
    main()
