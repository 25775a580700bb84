"""rapidfuzz's similarity scores, with the comparisons a cheap bound decides settled without it.

``import rapidfuzz`` loads all its metrics (10-20 ms), an eighth of a whole `advisor search nms`.
Yet most comparisons of a short query with the few titles, ids and tags a selective search
scores are decided before any alignment: far below the cutoff, or a perfect match. Each
comparison is settled here when an upper bound of rapidfuzz's score lies below the cutoff (by
more than any float error), or the score is exactly 100; the others go to rapidfuzz, so every
score returned is rapidfuzz's own and the ranking is the same (tests/test_fuzzy_scores.py
compares the two on the KB's titles, ids and tags). rapidfuzz's ratio of strings of lengths m
and n is 100·(1 − d/(m + n)) with d = m + n − 2·LCS, and their longest common subsequence holds
no more characters than the two have in common (counted with repeats), c:

- ratio: at most 200·c/(m + n), and where that may reach the cutoff, 200·LCS/(m + n) (the LCS
  found by the bit-parallel algorithm of Allison and Dix); equal strings score 100.
- partial_ratio: the best ratio of the shorter string s (length m, at most 64: rapidfuzz then
  finds the best alignment) against the windows of the longer it aligns: those of length m and
  the prefixes and suffixes shorter than m; each is at most 200·c_w/(m + |w|) with c_w what s
  shares with the window, and where that may reach the cutoff, the window's ratio from its LCS.
  s inside the longer string scores 100.
- token_set_ratio: the words in common score 100 when one side has no other word; else the best
  of the ratio of the other words (from their LCS) and of the two closed forms for the common words. Settled for printable ASCII only, where every splitter agrees on
  what whitespace is.
"""

from __future__ import annotations

import math
import sys

#: Up to this many choices are settled here first; more go to rapidfuzz at once (its C loop is faster).
FEW_CHOICES = 400
#: A bound this far below the cutoff settles a comparison (rapidfuzz computes in doubles: far smaller errors).
MARGIN = 0.01
#: rapidfuzz aligns a shorter string of up to 64 characters optimally (longer ones heuristically).
SHORT_NEEDLE = 64


def similarities(query: str, choices: list[str], scorer: str, cutoff: float) -> dict[int, float]:
    """rapidfuzz scores of at least ``cutoff`` of ``query`` against ``choices``, by position.

    ``scorer`` names a rapidfuzz.fuzz scorer (ratio, partial_ratio, token_set_ratio), or ``exact``
    (100 for an equal string, else 0).
    """
    if scorer == "exact":
        return {position: 100.0 for position, choice in enumerate(choices) if choice == query}
    if len(choices) > FEW_CHOICES or rapidfuzz_loaded():
        return rapidfuzz_scores(query, choices, range(len(choices)), scorer, cutoff)
    bound, floor = BOUNDS[scorer], cutoff - MARGIN
    found: dict[int, float] = {}
    unsure: list[int] = []
    for position, choice in enumerate(choices):
        most = bound(query, choice, floor)
        if most is None:
            found[position] = 100.0
        elif most >= floor:
            unsure.append(position)
    if unsure:
        found.update(rapidfuzz_scores(query, [choices[position] for position in unsure], unsure, scorer, cutoff))
    return found


def rapidfuzz_loaded() -> bool:
    """True once rapidfuzz is imported: the bounds are then only extra work (its C loop is faster)."""
    return "rapidfuzz.process" in sys.modules


def rapidfuzz_scores(query: str, choices: list[str], positions, scorer: str, cutoff: float) -> dict[int, float]:
    """rapidfuzz's scores of at least ``cutoff``, keyed by ``positions[i]`` for ``choices[i]``."""
    from rapidfuzz import fuzz, process

    positions = list(positions)
    return {positions[at]: score for _, score, at in
            process.extract(query, choices, scorer=getattr(fuzz, scorer), limit=None, score_cutoff=cutoff)}


# Each bound returns None when rapidfuzz's score is exactly 100, and otherwise a value that lies below
# ``floor`` only when rapidfuzz's score does (an upper bound of it, as far as computed).


def in_common(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` have in common, counted with repeats."""
    if len(a) > len(b):
        a, b = b, a
    return sum(min(a.count(char), b.count(char)) for char in set(a))


def lcs_length(a: str, b: str) -> int:
    """The length of the longest common subsequence of ``a`` and ``b`` (bit-parallel, one step per
    character of ``b``)."""
    masks: dict[str, int] = {}
    for bit, char in enumerate(a):
        masks[char] = masks.get(char, 0) | 1 << bit
    full = (1 << len(a)) - 1
    row = full
    for char in b:
        matched = row & masks.get(char, 0)
        row = ((row + matched) | (row - matched)) & full
    return len(a) - bin(row).count("1")


def ratio_bound(a: str, b: str, floor: float) -> float | None:
    """fuzz.ratio(a, b): None when 100, else a value below ``floor`` only when the score is."""
    if a == b:
        return None
    total = len(a) + len(b)
    most = 200 * in_common(a, b) / total
    return most if most < floor else 200 * lcs_length(a, b) / total


def partial_ratio_bound(a: str, b: str, floor: float) -> float | None:
    """fuzz.partial_ratio(a, b): None when 100, else a value below ``floor`` only when the score is."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if not short or len(short) > SHORT_NEEDLE:
        return math.inf  # rapidfuzz's own conventions and heuristics: let it answer
    if short in long_:
        return None
    most = _windows_bound(short, long_, floor)
    if len(short) == len(long_) and most < floor:
        most = _windows_bound(long_, short, floor)
    return most


def _windows_bound(short: str, long_: str, floor: float) -> float:
    """The best ratio of ``short`` against the windows of ``long_`` rapidfuzz aligns it with (the prefixes and
    suffixes shorter than it, the windows of its length), bounded by the characters in common first."""
    size = len(short)
    wanted: dict[str, int] = {}
    for char in short:
        wanted[char] = wanted.get(char, 0) + 1
    held: dict[str, int] = {}
    best = 0.0
    for start, end, shared in _windows(long_, size, wanted, held):
        most = 200 * shared / (size + end - start)
        if most <= best:
            continue
        if most >= floor:
            most = 200 * lcs_length(short, long_[start:end]) / (size + end - start)
            if most >= floor:
                return most
        best = most
    return best


def _windows(text: str, size: int, wanted: dict[str, int], held: dict[str, int]):
    """(start, end, characters in common with ``wanted``) of the prefixes of ``text`` up to ``size`` long, its
    other windows of ``size``, and its suffixes shorter than ``size``, sliding one character at a time."""
    shared = 0
    for end in range(min(size, len(text))):
        count = held.get(text[end], 0)
        held[text[end]] = count + 1
        shared += count < wanted.get(text[end], 0)
        yield 0, end + 1, shared
    for start in range(1, len(text) - size + 1):
        gone, new = text[start - 1], text[start + size - 1]
        held[gone] -= 1
        shared -= held[gone] < wanted.get(gone, 0)
        count = held.get(new, 0)
        held[new] = count + 1
        shared += count < wanted.get(new, 0)
        yield start, start + size, shared
    for start in range(max(len(text) - size + 1, 1), len(text)):
        gone = text[start - 1]
        held[gone] -= 1
        shared -= held[gone] < wanted.get(gone, 0)
        yield start, len(text), shared


def token_set_ratio_bound(a: str, b: str, floor: float) -> float | None:
    """fuzz.token_set_ratio(a, b): None when 100, else a value below ``floor`` only when the score is."""
    if not (a.isascii() and b.isascii() and a.isprintable() and b.isprintable()):
        return math.inf
    tokens_a, tokens_b = set(a.split()), set(b.split())
    if not tokens_a or not tokens_b:
        return 0.0  # rapidfuzz scores 0 (as FuzzyWuzzy did)
    common = tokens_a & tokens_b
    only_a, only_b = tokens_a - tokens_b, tokens_b - tokens_a
    if common and (not only_a or not only_b):
        return None
    rest_a, rest_b = " ".join(sorted(only_a)), " ".join(sorted(only_b))
    common_len = len(" ".join(common))
    with_a = common_len + (common_len != 0) + len(rest_a)
    with_b = common_len + (common_len != 0) + len(rest_b)
    most = 0.0
    if common_len:
        most = max(100 - 100 * (1 + len(rest_a)) / (common_len + with_a),
                   100 - 100 * (1 + len(rest_b)) / (common_len + with_b))
    rest = len(rest_a) + len(rest_b)
    rest_most = 100 - 100 * (rest - 2 * in_common(rest_a, rest_b)) / (with_a + with_b)
    if rest_most >= floor:  # the Indel distance of the other words, from their LCS
        rest_most = 100 - 100 * (rest - 2 * lcs_length(rest_a, rest_b)) / (with_a + with_b)
    return max(most, rest_most)


BOUNDS = {"ratio": ratio_bound, "partial_ratio": partial_ratio_bound, "token_set_ratio": token_set_ratio_bound}
