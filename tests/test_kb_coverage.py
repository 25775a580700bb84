"""The shipped KB: size, every entry's preconditions, Chinese texts and first step, and symptom coverage."""

from __future__ import annotations

import re

import pytest

from opprof_advisor import kb

from opprof_advisor.kb import stats as kb_stats
from opprof_advisor.core.paths import builtin_kb_dir
from opprof_advisor.core.vocabulary import KINDS, SYMPTOMS

#: The action section of each kind: its first item is what the suggest output shows as the first step.
ACTION_SECTION = {"recipe": "Steps", "pattern": "What to do", "tip": "How", "case": "Fix"}
_ITEM = re.compile(r"^\s{0,3}(?:\d+\.|[-*])\s+\S")


@pytest.fixture(scope="module")
def entries():
    return kb.load_entries([builtin_kb_dir()])


def first_item(entry) -> str | None:
    """The first numbered or bulleted line of the entry's action section, or None."""
    section = ACTION_SECTION[entry.kind]
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", entry.body, re.M | re.S)
    if not match:
        return None
    return next((line.strip() for line in match.group(1).splitlines() if _ITEM.match(line)), None)


def test_the_kb_has_150_entries_of_all_four_kinds(entries):
    kinds = {kind: sum(1 for e in entries if e.kind == kind) for kind in KINDS}
    assert len(entries) >= 150
    assert all(count >= 20 for count in kinds.values()), kinds


def test_every_entry_states_its_preconditions_and_chinese_texts(entries):
    assert [e.id for e in entries if not e.requires] == []
    assert [e.id for e in entries if set(e.zh) != {"title", "summary", "first_step"}] == []
    assert [e.id for e in entries if not re.search(r"[\u4e00-\u9fff]", e.zh.get("title", ""))] == []


def test_every_advice_entry_starts_its_action_section_with_an_item(entries):
    missing = [e.id for e in entries if e.kind != "case" and first_item(e) is None]
    assert missing == []


def test_every_vocabulary_symptom_has_two_answering_entries(entries):
    stats = kb_stats.summarize_entries(entries)
    short = {s: stats["answering"][s] for s in SYMPTOMS if len(stats["answering"][s]) < kb_stats.MIN_ANSWERS}
    assert short == {}
    assert stats["uncovered_symptoms"] == []


def test_operator_scope_gains_come_from_cited_public_sources(entries):
    for entry in entries:
        if entry.gain is None:
            continue
        assert entry.gain.source in entry.sources, entry.id
        if entry.gain.scope == "operators":
            assert not entry.gain.source.startswith("kb/sources/"), entry.id  # the design card is never scaled


def test_the_design_card_estimates_are_end_to_end_and_graded_d(entries):
    card = [e for e in entries if e.gain and e.gain.source.startswith("kb/sources/README.md#design-card")]
    assert {e.id for e in card} >= {"nms-on-npu", "flash-attention", "conv2d-tuning"}
    assert all(e.gain.scope == "end_to_end" and e.evidence == "D" for e in card)
