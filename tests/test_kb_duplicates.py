"""One entry per remedy: no two shipped recipes, patterns or tips say the same fix in near-identical words.

Two advice entries that name the same switch in their first step and describe it in the same words answer
one symptom twice: `advisor suggest` then spends two of its five remedy slots on one fix (the issue
"Knowledge that earns trust" counted five host-bound tips saying one thing). Such entries are merged into
one, the other's facts kept as alternatives. This test keeps them merged.

The score of a pair, 0..1, is a weighted mean of three things (weights 4 : 1 : 2):

- the TF-IDF cosine (scikit-learn, sublinear tf, English stop words) of title + summary + action section
  + tags: what the entries say;
- the same cosine over title + summary + the first item of the action section only: what each leads with;
- the Jaccard overlap of the switch and API names (``--flags``, ``ENV_VARS``, ``dotted.api`` last parts,
  ``snake_case`` names) in the two first items: whether they lead with the same switch.

Why ``THRESHOLD`` = 0.49, measured on the KB when the merges were made: before them, the pairs judged
to be one remedy scored 0.67 (jit-compile-switch / static-shape-compile-mode), 0.58
(cpu-binding-acceptance / cpu-affinity-binding) and 0.50 (precision-mode-defaults / amp-hf32-switches);
after them the highest pair of distinct remedies scored 0.47 (draft-model and suffix speculative
decoding, two methods of one switch). 0.49 lies between. Three other pairs judged one remedy scored
lower than related-but-distinct pairs — 0.41 and 0.39 (precision-mode-defaults and amp-hf32-switches
against the amp-and-hf32 recipe), 0.32 (max_split_size_mb against expandable segments, two values of
one allocator variable): wording cannot tell those from neighbouring topics, so this test guards
against near-copies; it does not replace reading the entries that answer one symptom.

Pairs that name each other (either way) in ``contradicts:`` are declared alternatives and exempt.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from opprof_advisor import kb
from opprof_advisor.core.paths import builtin_kb_dir

THRESHOLD = 0.49
WEIGHTS = (4.0, 1.0, 2.0)  # whole text, lead text, first-step switches
KINDS = ("recipe", "pattern", "tip")
#: The action section of each kind (kb/README.md): its first item is the remedy the entry leads with.
ACTION_SECTION = {"recipe": "Steps", "pattern": "What to do", "tip": "How"}
_ITEM = re.compile(r"(?m)^\s{0,3}(?:\d+\.|[-*])\s+")
_SWITCH = re.compile(r"--[a-z0-9][a-z0-9-]+|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"
                     r"|\b[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+\b|\b[a-z][a-z0-9]*_[a-z0-9_]+\b")
_NOT_A_SWITCH = frozenset({"torch_npu"})


def action(entry) -> str:
    match = re.search(rf"^## {re.escape(ACTION_SECTION[entry.kind])}\n(.*?)(?=^## |\Z)", entry.body, re.M | re.S)
    return match.group(1) if match else ""


def first_item(entry) -> str:
    items = [part.strip() for part in _ITEM.split(action(entry)) if part.strip()]
    return items[0] if items else ""


def switches(text: str) -> set[str]:
    """The switch and API names in ``text``, normalised: ``--use-x`` → ``use_x``, ``torch.npu.a.b_c`` → ``b_c``."""
    names = set()
    for raw in _SWITCH.findall(text):
        name = raw.lstrip("-").lower().replace("-", "_").rsplit(".", 1)[-1]
        if len(name) > 3 and name not in _NOT_A_SWITCH:
            names.add(name)
    return names


def similar_pairs(entries, threshold: float = THRESHOLD) -> list[tuple[float, str, str]]:
    """(score, id, id) of every pair of ``entries`` scoring at least ``threshold``, highest first."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    entries = [e for e in entries if e.kind in KINDS]

    def cosines(texts):
        return cosine_similarity(TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(texts))

    whole = cosines([f"{e.title}\n{e.summary}\n{action(e)}\n{' '.join(e.tags)}" for e in entries])
    lead = cosines([f"{e.title}\n{e.summary}\n{first_item(e)}" for e in entries])
    leads = [switches(first_item(e)) for e in entries]
    w_whole, w_lead, w_switch = WEIGHTS
    found = []
    for i, j in itertools.combinations(range(len(entries)), 2):
        a, b = entries[i], entries[j]
        if a.id in b.contradicts or b.id in a.contradicts:
            continue
        union = leads[i] | leads[j]
        shared = len(leads[i] & leads[j]) / len(union) if union else 0.0
        score = (w_whole * whole[i, j] + w_lead * lead[i, j] + w_switch * shared) / sum(WEIGHTS)
        if score >= threshold:
            found.append((round(float(score), 3), a.id, b.id))
    return sorted(found, reverse=True)


@pytest.fixture(scope="module")
def entries():
    return kb.load_entries([builtin_kb_dir()])


def test_no_two_shipped_entries_give_the_same_remedy_in_near_identical_words(entries):
    pairs = similar_pairs(entries)
    assert not pairs, "near-duplicate entries (merge them into one, keeping the other's facts as alternatives, " \
        "or declare them alternatives with contradicts:): " + "; ".join(f"{a} ~ {b} ({s})" for s, a, b in pairs)


def test_a_copy_of_an_entry_under_a_new_id_is_caught(entries):
    tip = next(e for e in entries if e.id == "task-queue-enable")
    copy = dataclasses.replace(tip, id="task-queue-enable-copy")
    assert ("task-queue-enable", "task-queue-enable-copy") in [(a, b) for _, a, b in similar_pairs([*entries, copy])]


def test_entries_declared_alternatives_are_exempt(entries):
    tip = next(e for e in entries if e.id == "task-queue-enable")
    copy = dataclasses.replace(tip, id="task-queue-enable-copy", contradicts=["task-queue-enable"])
    assert not [pair for pair in similar_pairs([*entries, copy]) if "task-queue-enable-copy" in pair]
