"""The line reader of KB front matter gives exactly what PyYAML gives, or declines and leaves the file to PyYAML."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from opprof_advisor import kb
from opprof_advisor.kb_split import split_simple
from opprof_advisor.plain_front_matter import read_front_matter
from opprof_advisor.plain_yaml import construct

ROOT = Path(__file__).resolve().parent.parent
LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])


def typed(value):
    """``value`` with the type of every part spelled out (True == 1 and 1.0 == 1 in Python)."""
    if isinstance(value, dict):
        return "map", [(typed(key), typed(item)) for key, item in value.items()]
    if isinstance(value, list):
        return "seq", [typed(item) for item in value]
    return type(value).__name__, repr(value)


def by_pyyaml(source: str, loader_class) -> tuple | str:
    """(typed data, key lines) as kb._parse_yaml builds them with PyYAML, or why it would report a problem."""
    loader = loader_class(source)
    try:
        node = loader.get_single_node()
        data = construct(loader, node) if node is not None else None
    except yaml.YAMLError:
        return "error"
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        return "not a mapping"
    if kb._duplicate_keys(Path("x.md"), node, 2):
        return "duplicate key"
    return typed(data), kb._key_lines(node, 2)


def assert_same(source: str) -> bool:
    """True when the reader took ``source``, after checking it agrees with every PyYAML loader."""
    read = read_front_matter(source, 2)
    if read is None:
        return False
    for loader_class in LOADERS:
        assert by_pyyaml(source, loader_class) == (typed(read[0]), read[1]), (loader_class.__name__, source)
    return True


def shipped_fronts() -> list[str]:
    fronts = []
    for path in kb.find_kb_files([ROOT / "kb"]):
        split = split_simple(path.read_text(encoding="utf-8"))
        if split is not None:
            fronts.append(split.front)
    return fronts


def test_every_shipped_entry_reads_as_pyyaml_reads_it():
    fronts = shipped_fronts()
    taken = sum(assert_same(front) for front in fronts)
    assert len(fronts) > 100
    assert taken >= 0.9 * len(fronts)  # the reader is the usual path, PyYAML the exception


def test_mutated_front_matter_reads_as_pyyaml_reads_it_or_is_left_to_it():
    pieces = [" ", ":", ": ", "-", "- ", "#", " #", "'", '"', "''", "\\", '\\"', "[", "]", "{", "}", ",", ", ",
              "\n", "\n  ", "\n- ", "\n  - ", "&a ", "*a", "!", "!!str ", "|", ">", "?", "? ", "%", "@", "`", "~",
              "null", "yes", "No", "on", "0x1f", "012", "-7", "1_000", "1:20", "3.5", ".inf", "2024-01-01", "<<", "=",
              "\t", "\r", "\x85", "\u2028", "\ufeff", "é", "中", "\x7f", "\x00", "...", "---", "key: v", "\nzh:",
              "\ntags:", "   ", "\n\n", "x",
              # what the fast paths take or refuse: names, quoted text, characters isprintable refuses but YAML allows
              "[a, b]", "[a b]", "[ a ,b ]", "[-a]", "[a, .5]", "[yes, 1]", ' "q" ', '"', '""', " x y", "a  b",
              "\u00a0", "\u3000", "\u200b", "\ue000", "\ufffe", "\U0001f600", "\ud7ff"]
    rng = random.Random(18)
    fronts = shipped_fronts()
    taken = 0
    for _ in range(3000):
        front = rng.choice(fronts)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(front) + 1)
            if rng.random() < 0.3:
                front = front[:at] + front[at + rng.randint(1, 4):]
            else:
                front = front[:at] + rng.choice(pieces) + front[at:]
        taken += assert_same(front)
    assert taken > 500  # most edits keep a file the reader knows


@pytest.mark.parametrize("source, value", [
    ("low_pct: 013", 11),  # YAML 1.1 octal, as the safe loader reads it
    ("estimate: yes", True),
    ("cann: 8.0", 8.0),
    ("cann: ~", None),
    ("cann:", None),
    ("low_pct: -7", -7),
    ("gain: {low_pct: 1_000, estimate: Off, source: kb/sources/README.md#design-card}",
     {"low_pct": 1000, "estimate": False, "source": "kb/sources/README.md#design-card"}),
    ("title: 'It''s \"quoted\"'", "It's \"quoted\""),
    ('title: "a \\"b\\" \\\\ c #1"', 'a "b" \\ c #1'),
    ("tags: []", []),
    ("sources:\n- a\n- b", ["a", "b"]),
    ("requires:\n  - unit: [ai_core, mix_aic]\n  - min_share: 0.2", [{"unit": ["ai_core", "mix_aic"]}, {"min_share": 0.2}]),
    ("title: 2024-01-01", __import__("datetime").date(2024, 1, 1)),
])
def test_scalars_are_typed_as_pyyaml_types_them(source, value):
    assert assert_same(source)
    key = source.split(":", 1)[0]
    assert read_front_matter(source, 2)[0][key] == value


@pytest.mark.parametrize("source", [
    "title: x # a comment",
    "# a comment\ntitle: x",
    "title: &a x\nsummary: *a",
    "title: !!str 1",
    "summary: |\n  two\n  lines",
    "summary: one\n  continued",
    "title: a\ntitle: b",
    "zh:\n  title: a\n  title: b",
    "yes: 1",
    "<<: {a: 1}",
    "title: a: b",
    "requires:\n  - a: 1\n    b: 2",
    "title:\tx",
    "title: \"unclosed",
    "title: \"a\\tb\"",
    "tags: [a, [b]]",
    "tags: [a,]",
    "gain: {low_pct: 1, low_pct: 2}",
    "zh:\n  title:\n    deeper: x",
    "%YAML 1.1\n---\ntitle: x",
    "",
    "title: x\n...",
    "k" * 1100 + ": long key",
    # a lone "-" opens a block sequence entry (PyYAML refuses it after a key, and reads "- -" as [[None]])
    "title: -",
    "gain:\n  x: -",
    "tags:\n  - k: -",
    "tags:\n  - -",
])
def test_what_the_reader_does_not_know_is_left_to_pyyaml(source):
    assert read_front_matter(source, 2) is None


def test_a_printable_character_is_never_one_the_reader_must_refuse():
    # read_front_matter searches for _ODD characters only when str.isprintable says no: that must never miss one.
    from opprof_advisor.plain_front_matter import _ODD

    printable = "".join(char for char in map(chr, range(0x110000)) if char.isprintable())
    assert len(printable) > 100_000
    assert _ODD.search(printable) is None
    assert _ODD.search("".join(map(chr, range(0x110000)))) is not None  # (the search does find them)


@pytest.mark.parametrize("source, value, lines", [
    # a blank row first in a block sets its indent, as PyYAML reads it
    ("tags:\n\n- a\n- b", ["a", "b"], {"tags": 2, ("tags", 0): 4, ("tags", 1): 5}),
    ("zh:\n  title: x\n\n  summary: \"y\"\n\nkind: tip", {"title": "x", "summary": "y"}, None),
    ("tags: [ a ,b ,  c ]", ["a", "b", "c"], {"tags": 2, ("tags", 0): 2, ("tags", 1): 2, ("tags", 2): 2}),
    ("tags: [on, 2, 0.5, null, x]", [True, 2, 0.5, None, "x"], None),
])
def test_blocks_and_lists_read_with_their_lines(source, value, lines):
    assert assert_same(source)
    data, found = read_front_matter(source, 2)
    assert data[source.split(":", 1)[0]] == value
    if lines is not None:
        assert found == lines


def test_a_file_the_reader_declines_still_gets_pyyaml_problems_at_its_line(tmp_path):
    path = tmp_path / "recipes" / "bad-yaml.md"
    path.parent.mkdir()
    path.write_text("---\nkind: recipe\ntitle: x\ntitle: y\nsummary: a: b\n---\n\n## When to use\n", encoding="utf-8")
    problems = kb.parse_file(path).problems
    assert [(problem.line, problem.message.split(":")[0]) for problem in problems] == [(5, "bad YAML in front matter")]
