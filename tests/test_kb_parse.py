"""How a KB file is read: markdown-it splits the front matter and finds the h2 headings, PyYAML reads the front
matter (without anchors or aliases), and every key and list item keeps its line for the problems that name it."""

from __future__ import annotations

from pathlib import Path

import pytest

from opprof_advisor import kb

FRONT = "---\nkind: tip\ntitle: T\n---\n"


def parse(tmp_path: Path, text: str):
    path = tmp_path / "tips" / "x.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return kb.parse_file(path)


def test_headings_are_h2_lines_outside_quotes_fences_and_lists(tmp_path):
    body = "## First\n> ## Inside a quote\n```\n## in code\n```\n- ## In a list\n\uff11. ## fullwidth\n## Last\n"
    parsed = parse(tmp_path, FRONT + body)
    # a quote and a list item hold headings of their own; a fullwidth digit is prose, not a list marker
    assert parsed.headings == [("First", 5), ("Inside a quote", 6), ("In a list", 10), ("Last", 12)]
    assert parsed.body_line == 5 and parsed.body.startswith("## First\n")


@pytest.mark.parametrize("front, value, lines", [
    ("tags:\n\n- a\n- b", ["a", "b"], {"tags": 2, ("tags", 0): 4, ("tags", 1): 5}),
    ("zh:\n  title: x\n\n  summary: \"y\"\n\nkind: tip", {"title": "x", "summary": "y"}, None),
    ("tags: [ a ,b ,  c ]", ["a", "b", "c"], {"tags": 2, ("tags", 0): 2, ("tags", 1): 2, ("tags", 2): 2}),
    ("tags: [on, 2, 0.5, null, x]", [True, 2, 0.5, None, "x"], None),
    ("applies_to: {producer: [run], phase: [training]}", {"producer": ["run"], "phase": ["training"]}, None),
])
def test_blocks_and_lists_read_with_their_lines(tmp_path, front, value, lines):
    parsed = parse(tmp_path, f"---\n{front}\n---\n\n## When\n")
    key = front.split(":", 1)[0]
    assert parsed.problems == [] and parsed.data[key] == value
    if lines is not None:
        assert {k: v for k, v in parsed.lines.items() if k == key or isinstance(k, tuple)} == lines


def test_bad_yaml_is_one_problem_at_its_line(tmp_path):
    parsed = parse(tmp_path, "---\nkind: recipe\ntitle: x\ntitle: y\nsummary: a: b\n---\n\n## When to use\n")
    assert [(p.line, p.message.split(":")[0]) for p in parsed.problems] == [(5, "bad YAML in front matter")]


def test_a_duplicate_key_is_named(tmp_path):
    parsed = parse(tmp_path, "---\nkind: tip\ntitle: x\ntitle: y\n---\n\n## When\n")
    assert [(p.line, p.message) for p in parsed.problems] == [(4, "key 'title' appears twice")]


def test_an_alias_is_refused_before_it_is_expanded(tmp_path):
    parsed = parse(tmp_path, "---\nkind: tip\na: &x [1, 2]\nb: *x\n---\n\n## When\n")
    assert [(p.line, p.message) for p in parsed.problems] == [
        (3, "YAML anchor &x is not allowed in front matter: write the value out")]


def test_an_unclosed_front_matter_is_said(tmp_path):
    parsed = parse(tmp_path, "---\nkind: tip\ntitle: x\n\n## When\n")
    assert [p.message for p in parsed.problems] == ["front matter is not closed: add a `---` line after the YAML block"]


def test_a_first_step_ending_in_a_colon_takes_what_it_announces(tmp_path):
    from opprof_advisor.core.models import Entry

    code = Entry("x", "recipe", "T", body="## Steps\n\n1. Apply the settings (root):\n\n```bash\n# tune\nsysctl -w vm.x=0\n"
                                         "```\n\n2. Re-profile.\n")
    listed = Entry("y", "case", "T", body="## Fix\n\nApplied in three steps:\n\n1. Launch on more cores.\n2. Tile.\n")
    plain = Entry("z", "recipe", "T", body="## Steps\n\n1. Do this.\n\n```\nnot announced\n```\n")
    assert kb.first_step(code) == "Apply the settings (root): `sysctl -w vm.x=0`"
    assert kb.first_step(listed) == "Applied in three steps: Launch on more cores."
    assert kb.first_step(plain) == "Do this."
