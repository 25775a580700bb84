"""The fuzzy scores settled without rapidfuzz are rapidfuzz's: the same hits, the same values.

fuzzy_scores settles a comparison in Python when a bound shows it below the cutoff or exactly 100;
every query below is compared with every title, id, tag and title run together of the shipped KB
(and with random strings), by each scorer at each cutoff search uses, against rapidfuzz itself.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys

import pytest
from rapidfuzz import fuzz, process

from conftest import ROOT
from opprof_advisor import fuzzy_scores, kb_search, store

CUTOFFS = (kb_search.FUZZY_FLOOR, kb_search.FUZZY_ONLY_MIN, kb_search.JOINED_TITLE_MIN)
QUERIES = ["nms", "nsm", "launch bound", "launch-bound", "launchbound", "flash attention", "flash-attention",
           "flashattention", "matmul", "hccl", "attention", "amp", "npu", "tiling", "ai", "x y", "q", "oom",
           "kv cache", "kv-cache", "double buffer", "yolov8", "rmsnorm", "smart swap", "swap-smart", "zzzzqqq",
           "non max suppression", "non-max-suppression", "nonmaxsuppression", "mixed precision", "fp16 overflow",
           "how do i make flash attention faster on ascend npu with torch"]


@pytest.fixture(scope="module")
def kb_strings(tmp_path_factory):
    index = store.build_index(tmp_path_factory.mktemp("fuzzy") / "kb.db", kb_dirs=[ROOT / "kb"])
    summaries = index.summaries()
    titles = [entry.title.lower() for entry in summaries]
    labels = sorted({label for entry in summaries for label in (*entry.tags, *entry.models)})
    return {"titles": titles, "ids": [entry.id for entry in summaries], "labels": labels,
            "joined": [re.sub("[^a-z0-9]+", "", title) for title in titles]}


def rapidfuzz_only(query, choices, scorer, cutoff):
    return {position: score for _, score, position in
            process.extract(query, choices, scorer=getattr(fuzz, scorer), limit=None, score_cutoff=cutoff)}


@pytest.mark.parametrize("scorer", ["ratio", "partial_ratio", "token_set_ratio"])
def test_settled_scores_are_rapidfuzz_scores_on_the_kb(kb_strings, monkeypatch, scorer):
    monkeypatch.setattr(fuzzy_scores, "FEW_CHOICES", 10_000)  # every comparison through the bounds
    monkeypatch.setattr(fuzzy_scores, "rapidfuzz_loaded", lambda: False)
    sent, compared = [], 0
    real = fuzzy_scores.rapidfuzz_scores
    monkeypatch.setattr(fuzzy_scores, "rapidfuzz_scores",
                        lambda query, choices, *rest: sent.append(len(choices)) or real(query, choices, *rest))
    for choices in kb_strings.values():
        for query in QUERIES:
            for cutoff in CUTOFFS[:2]:  # JOINED_TITLE_MIN on the random strings below
                expected = rapidfuzz_only(query, choices, scorer, cutoff)
                assert fuzzy_scores.similarities(query, choices, scorer, cutoff) == expected, (query, cutoff)
                compared += len(choices)
    assert sum(sent) < compared / 10  # most comparisons were settled without rapidfuzz (~3 % are not)


def random_text(rng, alphabet="abcdemns -", longest=14):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))).strip() or "a"


@pytest.mark.parametrize("scorer", ["ratio", "partial_ratio", "token_set_ratio"])
def test_settled_scores_are_rapidfuzz_scores_on_random_strings(monkeypatch, scorer):
    monkeypatch.setattr(fuzzy_scores, "rapidfuzz_loaded", lambda: False)
    rng = random.Random(18)
    choices = [random_text(rng) for _ in range(300)]
    for _ in range(60):
        query = random_text(rng)
        for cutoff in (40.0, *CUTOFFS):
            assert fuzzy_scores.similarities(query, choices, scorer, cutoff) == \
                rapidfuzz_only(query, choices, scorer, cutoff), (query, cutoff)


def test_settled_scores_are_rapidfuzz_scores_on_long_and_non_ascii_strings(monkeypatch):
    monkeypatch.setattr(fuzzy_scores, "rapidfuzz_loaded", lambda: False)
    rng = random.Random(19)
    choices = [random_text(rng, "abmns -\u00e9\u7b97\u00a0", 90) for _ in range(100)]
    for _ in range(15):
        query = random_text(rng, "abmns -\u00e9\u7b97", 75)
        for scorer in ("ratio", "partial_ratio", "token_set_ratio"):
            for cutoff in (30.0, kb_search.FUZZY_FLOOR, kb_search.JOINED_TITLE_MIN):
                assert fuzzy_scores.similarities(query, choices, scorer, cutoff) == \
                    rapidfuzz_only(query, choices, scorer, cutoff), (query, scorer, cutoff)


def test_many_choices_go_to_rapidfuzz_at_once(kb_strings):
    choices = kb_strings["titles"] * 4
    assert len(choices) > fuzzy_scores.FEW_CHOICES
    assert fuzzy_scores.similarities("nms", choices, "token_set_ratio", 60.0) == \
        rapidfuzz_only("nms", choices, "token_set_ratio", 60.0)


def test_lcs_length_is_the_longest_common_subsequence():
    rng = random.Random(7)
    for _ in range(500):
        a, b = random_text(rng, "abc"), random_text(rng, "abcd")
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
        assert fuzzy_scores.lcs_length(a, b) == table[-1][-1], (a, b)


def test_exact_scores_equal_strings_only():
    assert fuzzy_scores.similarities("nms", ["nms", "nmsx", "NMS", "nms"], "exact", 60.0) == {0: 100.0, 3: 100.0}


def test_search_nms_on_the_shipped_kb_needs_no_rapidfuzz(tmp_path):
    env = {**os.environ, "ADVISOR_HOME": str(tmp_path)}
    env.pop("ADVISOR_DB", None)
    probe = ("import json, sys; from opprof_advisor.cli.fast_path import run; code = run(['search', 'nms', "
             "'--format', 'json']); print(json.dumps(sorted(m for m in sys.modules if m.startswith('rapidfuzz'))), "
             "file=sys.stderr)")
    subprocess.run([sys.executable, "-m", "opprof_advisor", "kb", "build"], env=env, check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["results"][0]["id"] == "nms-on-npu"
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
