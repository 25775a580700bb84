"""The fast front-matter / heading split gives markdown-it's answer or none at all."""

from __future__ import annotations

import itertools
from pathlib import Path

from conftest import ROOT
from opprof_advisor.kb import _split_markdown, parse_file
from opprof_advisor.kb_split import split_simple

FRONT = "---\nkind: tip\ntitle: T\n---\n"

#: Lines that change how CommonMark reads what follows or precedes them.
TRICKY_LINES = [
    "## When", "## When ##", "## C#", "##", "## ", "##When", "   ## Indented", "    ## Code", "- ## In a list",
    "1. ## In a list", "> ## Quoted", "<div>", "</div>", "<!--", "-->", "---", "Setext", "===", "  ---", "- - -",
    "```", "```python", "``` a`b", "   ```", "  ```", "    ```", "~~~", "````", "   ~~~", "- ```", "1. foo",
    "   continued", "  code", "\tcode", "...", "- item", "  - nested ## not heading", "* ## star",
    "10. ## ten", "> quote", "plain text", "",
    # digits CommonMark does not take as a list marker (the scan takes ASCII ones only), a fence's closing line
    # indented too far or with text after it
    "\uff11. ## fullwidth", "\u0663. ## arabic-indic", "    ```", "``` x", "## Last ## x",
]


def cases():
    # Every pair and a sample of triples of tricky lines after the front matter, with a body heading around them.
    for pair in itertools.product(TRICKY_LINES, repeat=2):
        yield FRONT + "## First\n" + "\n".join(pair) + "\n## Last\n"
    for number, triple in enumerate(itertools.product(TRICKY_LINES, repeat=3)):
        if number % 7 == 0:
            yield FRONT + "\n".join(triple) + "\n## Sources\n"
    for front in ("---\n---\n", "---\n...\n", "---\n  ---\n", "---\na: 1\n----\n", "---\na: 1\n--- x\n",
                  "---\na:\n  - ---\n---\n", "---\na: 1\n", "---\r\na: 1\r\n---\r\n", "----\na: 1\n----\n",
                  "---\na: 1\n    ---\n---\n", "---\na: \u2028 1\n---\n", "---\n\n---\n", "---\na: 1\n--- \n",
                  "---\na: 1\n ---\n---\n", "---\na: 1\n...x\n---\n", "---\na: 1\n---"):
        yield front + "## Body\n"
        yield front  # nothing after the closing line
    # The last line without a line break: a heading, an open fence, a fence that closes there.
    for end in ("## Last", "```", "```\ncode", "```\ncode\n```", "~~~~\n~~~", "## ", "---"):
        yield FRONT + "## First\n" + end


def test_the_fast_split_agrees_with_markdown_it_or_declines():
    taken, differ = 0, []
    for text in cases():
        split = split_simple(text)
        if split is not None:
            taken += 1
            if split != _split_markdown(text):
                differ.append(text)
    assert differ == []
    assert taken > 1000  # the plain cases are read by the scan, not all declined


def test_a_character_that_may_count_lines_or_columns_otherwise_leaves_the_file_to_markdown_it():
    for char in "\t\r\0\v\f\x1c\x1d\x1e\x85\u2028\u2029":
        for prose in ("plain", "\u4e2d\u6587"):  # in ASCII text and in text stored wide
            text = FRONT + f"## First\n{prose} a{char}b\n## Last\n"
            assert split_simple(text) is None, repr(char)
    assert split_simple(FRONT + "## First\n\u4e2d\u6587 a b\n## Last\n") is not None


def test_prose_lines_that_only_look_like_list_items_are_read_by_the_scan():
    # CommonMark takes ASCII digits only as list markers: these lines are prose, not a list item opening a heading.
    for line in ("\uff11. ## fullwidth", "\u0663) ## arabic-indic", "\u2013 ## en dash"):
        text = FRONT + "## First\n" + line + "\n## Last\n"
        assert split_simple(text) == _split_markdown(text) == ("kind: tip\ntitle: T", 4, [("First", 5), ("Last", 7)])


def test_the_fast_split_reads_nearly_every_shipped_entry_as_markdown_it_does():
    files = [p for p in (ROOT / "kb").rglob("*.md") if p.name.lower() != "readme.md"]
    fast = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        split = split_simple(text)
        if split is not None:
            fast += 1
            assert split == _split_markdown(text), path
    assert fast >= 0.9 * len(files)


def test_a_file_the_scan_declines_is_parsed_by_markdown_it(tmp_path):
    path = tmp_path / "quoted.md"
    path.write_text(FRONT + "> ## Inside a quote\n\n## Sources\n", encoding="utf-8")
    assert split_simple(path.read_text(encoding="utf-8")) is None
    assert parse_file(Path(path)).headings == [("Inside a quote", 5), ("Sources", 7)]


EDGE_YAML = ["a: 1\nb: yes\nc: 2024-01-01\nd: [1, 2.5, null, ~, 'x']\ne: {x: 1}\n", "<<: {a: 1}\nb: 2\n",
             "a: !!str 3\nb: !!int '4'\n", "? [a]\n: 1\n", "a: !!binary aGVsbG8=\n", "a: b\na: c\n",
             "1: x\n2.5: y\nnull: z\n", "a: !!python/object:os.system x\n", "a: !!str [x]\n"]


def test_the_fast_yaml_construction_equals_pyyaml_s_errors_included():
    import yaml

    from opprof_advisor.plain_yaml import construct, loader_class

    def load(source, fast):
        loader = loader_class()(source)
        try:
            node = loader.get_single_node()
            return "ok", construct(loader, node) if fast else loader.construct_document(node)
        except yaml.YAMLError as exc:
            return "error", str(exc)
        finally:
            loader.dispose()

    fronts = [split_simple(p.read_text(encoding="utf-8")) for p in (ROOT / "kb").rglob("*.md")]
    sources = [split.front for split in fronts if split is not None] + EDGE_YAML
    assert [load(source, True) for source in sources] == [load(source, False) for source in sources]
    assert load(EDGE_YAML[7], True)[0] == "error"  # an unsafe tag is still refused
