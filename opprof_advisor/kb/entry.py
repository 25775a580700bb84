"""Parse knowledge-base markdown files (YAML front matter + body) into ``Entry`` objects, and read an entry's first step.

The format is specified in ``kb/README.md``; its rules are checked by ``kb.checks`` and files are loaded
(parsed, then checked) by ``kb.load``. Every
problem is reported as a ``Problem`` at ``path:line`` (lines counted in the file, from 1) and
none is swallowed: a file with problems never becomes an ``Entry``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from opprof_advisor.core.errors import Problem
from opprof_advisor.core.models import Entry, Gain
from opprof_advisor.core.records import Record
from opprof_advisor.core.vocabulary import canonical_dtype
from opprof_advisor.core.operators import canonical_family
from opprof_advisor.core.plain_yaml import first_anchor
from opprof_advisor.kb.manifest import KbSource, scan_files
import difflib

#: Front-matter keys a KB file may use.
KEYS: tuple[str, ...] = (
    "id", "kind", "title", "summary", "operators", "symptoms", "tags", "models", "hardware",
    "cann", "gain", "evidence", "sources", "related", "requires", "applies_to", "contradicts", "zh", "op_mix",
)


_ONLY_STR = frozenset((str,))
_FENCE_OPEN = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_FRONT_MATTER_FENCE = re.compile(r"^-{3,}\s*$")


@dataclass
class ParsedFile(Record):
    """The raw pieces of one KB file: front-matter data with key lines, and the body."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    lines: dict[Any, int] = field(default_factory=dict)  # key or (key, index|subkey) -> line
    body: str = ""
    body_line: int = 1  # line of the file where the body starts
    headings: list[tuple[str, int]] = field(default_factory=list)  # (## heading, line)
    problems: list[Problem] = field(default_factory=list)


def find_kb_files(paths: Iterable[Path | str]) -> list[Path]:
    """Markdown entry files under ``paths`` (files are taken as given), sorted, README.md skipped.

    Folders are walked as the index walks them (``manifest.scan_files``): hidden files and folders are left
    out, a link loop is followed once, a file that vanishes meanwhile is left out.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if _is_dir(path):
            found.extend(sorted(Path(f.path) for f in scan_files([KbSource(path, "builtin")])))
        else:
            found.append(path)
    return found


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, a link loop: not a folder; reading it says why
        return False


def check_duplicates(entries: Sequence[Entry]) -> list[Problem]:
    """One problem per entry whose id an earlier entry already uses."""
    first: dict[str, Entry] = {}
    problems = []
    for entry in entries:
        if entry.id in first:
            problems.append(Problem(entry.path, 1, f"duplicate id {entry.id!r} (also {first[entry.id].path})"))
        else:
            first[entry.id] = entry
    return problems


def check_related(entries: Sequence[Entry], known_ids: set[str] = frozenset()) -> list[Problem]:
    """One problem per ``related`` id that names no entry."""
    ids = dict.fromkeys([entry.id for entry in entries])
    ids.update(dict.fromkeys(known_ids))
    return related_problems([(entry.path, entry.related) for entry in entries], ids)


def related_problems(items: Iterable[tuple[str, Sequence[str]]], ids: Collection[str]) -> list[Problem]:
    """One problem per related id (of ``(path, related ids)`` items) that is not in ``ids``.

    Each dangling id is compared with the known ids once and each file re-read once, however often they recur,
    so a KB with many dangling ids costs (dangling ids) × (one prefiltered comparison), not a difflib pass over
    every id for every problem. ``ids`` is best a dict in the order the ids were read: rapidfuzz goes through them
    in that order, and in a set's order, which scatters them in memory, it took 20 instead of 3 ms per id at 50,000.
    """
    problems = []
    choices: list[str] | None = None
    hints: dict[str, str] = {}
    parsed: dict[str, ParsedFile] = {}
    for path, related in items:
        for rel in related:
            if rel not in ids:
                if rel not in hints:
                    if choices is None:  # made once, and only when an id dangles
                        choices = list(ids)
                    hints[rel] = suggest_close(rel, choices)
                if path not in parsed:
                    # Re-reading the front matter for line numbers keeps Entry free of parse details.
                    parsed[path] = parse_file(Path(path))
                message = f"related id {rel!r} names no entry{hints[rel]}"
                problems.append(Problem(path, _related_line(parsed[path], rel), message))
    return problems


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def parse_file(path: Path, data: bytes | None = None) -> ParsedFile:
    """Split a file (``data``: its bytes, read here when None) into front-matter data (with the line of every
    key) and body; record problems."""
    parsed = ParsedFile(path=path)
    try:
        data = path.read_bytes() if data is None else data
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        parsed.problems.append(Problem(path, 1, f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
        return parsed
    except OSError as exc:
        parsed.problems.append(Problem(path, None, f"cannot read: {exc.strerror or exc}"))
        return parsed
    text = text.removeprefix("\ufeff")
    split = _split_markdown(text)
    if split is None:
        parsed.problems.append(_front_matter_missing(path, text))
        return parsed
    if split.too_deep is not None:
        parsed.problems.append(Problem(path, split.too_deep, "lists or quotes nested too deeply: the markdown parser "
                                       "stops reading here, so the rest of the entry would be lost — nest at most "
                                       f"{_MAX_NESTING // 2 - 1} lists or {_MAX_NESTING - 1} quotes in each other"))
        return parsed
    parsed.body_line = split.body_start + 1
    parsed.body = "\n".join(text.splitlines()[split.body_start:]).strip("\n") + "\n"
    parsed.headings = split.headings
    _parse_yaml(parsed, split.front, first_line=2, file_size=len(data))
    return parsed


class Split(NamedTuple):
    """A markdown file read by markdown-it: the front matter's text, the body's first line (0-based), the
    h2 headings with their 1-based lines, and the line where the parser gave up on nesting (None: read whole)."""

    front: str
    body_start: int
    headings: list[tuple[str, int]]
    too_deep: int | None = None


#: The block tokens that nest others (markdown-it's tokenizer is called again for their content).
_CONTAINERS = frozenset({"blockquote_open", "bullet_list_open", "ordered_list_open", "list_item_open"})


def _split_markdown(text: str) -> Split | None:
    """The front matter, body start and h2 headings markdown-it finds; None without front matter."""
    tokens = _markdown().parse(text)
    if not tokens or tokens[0].type != "front_matter":
        return None
    return Split(tokens[0].content, tokens[0].map[1], _headings(tokens), _too_deep(tokens))


def _too_deep(tokens) -> int | None:
    """The 1-based line of the first list or quote nested so deep that markdown-it skipped the rest of the text.

    Past its ``maxNesting`` the block parser stops without a word and treats everything up to the end of the
    enclosing block (for a list: the end of the file) as read; a container opened at the last level is
    where that happens.
    """
    for token in tokens:
        if token.level >= _MAX_NESTING - 1 and token.nesting == 1 and token.type in _CONTAINERS and token.map:
            return token.map[0] + 1
    return None


def _front_matter_missing(path: Path, text: str) -> Problem:
    first = text.splitlines()[0] if text.strip() else ""
    if _FRONT_MATTER_FENCE.match(first):
        # The front_matter plugin silently reads an unclosed block as a rule + paragraph.
        return Problem(path, 1, "front matter is not closed: add a `---` line after the YAML block")
    if not text.strip():
        return Problem(path, 1, "empty file: an entry starts with a `---` YAML front-matter block")
    return Problem(path, 1, "no front matter: the file must start with a `---` line, YAML, and a closing `---`")


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    global _MD
    if _MD is None:
        # Block structure only: the headings' text is the inline token's raw content, so inline
        # parsing (emphasis, links ...: a third of the time) would be thrown away.
        _MD = MarkdownIt("commonmark").use(front_matter_plugin).disable("inline")
        _MD.options["maxNesting"] = _MAX_NESTING
    return _MD


_MD = None
#: markdown-it's nesting limit (its commonmark preset's: its parser recurses once per level).
_MAX_NESTING = 20


def _headings(tokens) -> list[tuple[str, int]]:
    headings = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2":
            headings.append((tokens[index + 1].content.strip(), token.map[0] + 1))
    return headings


#: Front matter larger than this is refused before it is parsed (an entry's facts take a few KB;
#: 10,000 operator names still fit).
MAX_FRONT_MATTER_BYTES = 256 * 1024
#: An entry file larger than this is refused (the largest shipped entry is ~7 KB; a huge body makes
#: every matcher refit and `advisor show` slow for nothing). The index does not even parse one.
MAX_ENTRY_BYTES = 1024 * 1024


def entry_too_big(path: Path, size: int) -> Problem | None:
    """The problem of an entry file of ``size`` bytes, or None when it is within MAX_ENTRY_BYTES."""
    if size <= MAX_ENTRY_BYTES:
        return None
    return Problem(path, 1, f"entry file is {size:,} bytes, over the {MAX_ENTRY_BYTES:,}-byte limit: keep an entry "
                            "to its advice and link to longer material")


def _parse_yaml(parsed: ParsedFile, source: str, *, first_line: int, file_size: int) -> None:
    import yaml

    too_big = entry_too_big(parsed.path, file_size)
    if too_big:
        parsed.problems.append(too_big)
        return
    # (A character is at most four bytes in UTF-8: a short front matter needs no encoding to be measured.)
    size = len(source) if len(source) * 4 <= MAX_FRONT_MATTER_BYTES else len(source.encode("utf-8"))
    if size > MAX_FRONT_MATTER_BYTES:
        parsed.problems.append(Problem(parsed.path, first_line, f"front matter is {size:,} bytes, over the "
                                       f"{MAX_FRONT_MATTER_BYTES:,}-byte limit: keep facts short, prose in the body"))
        return
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(source)
    try:
        # An anchor is written with '&', an alias with '*': without either there is none to look for.
        anchor = first_anchor(source) if "&" in source or "*" in source else None
        if anchor is not None:
            # An alias repeats a subtree without writing it out: nine nested aliases make 9^9
            # values from 300 bytes ("billion laughs"). An entry's facts never need one.
            parsed.problems.append(Problem(parsed.path, first_line + anchor[0], f"YAML {anchor[1]} is not "
                                           "allowed in front matter: write the value out"))
            return
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark else first_line
        message = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        parsed.problems.append(Problem(parsed.path, line, f"bad YAML in front matter: {message}"))
        return
    except yaml.YAMLError as exc:
        parsed.problems.append(Problem(parsed.path, first_line, f"bad YAML in front matter: {exc}"))
        return
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}, not a mapping of keys"
        parsed.problems.append(Problem(parsed.path, first_line, f"front matter is {what}"))
        return
    parsed.data = data
    parsed.lines = _key_lines(node, first_line)
    parsed.problems.extend(_duplicate_keys(parsed.path, node, first_line))


def _key_lines(node, first_line: int) -> dict[Any, int]:
    lines: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key = key_node.value
        lines.setdefault(key, first_line + key_node.start_mark.line)
        if isinstance(value_node.value, list):
            for index, item in enumerate(value_node.value):
                if isinstance(item, tuple):  # mapping: (key node, value node)
                    lines[(key, item[0].value)] = first_line + item[0].start_mark.line
                else:
                    lines[(key, index)] = first_line + item.start_mark.line
    return lines


def _duplicate_keys(path: Path, node, first_line: int) -> list[Problem]:
    # yaml.safe_load keeps the last of two equal keys without a word; the KB must not.
    seen: set[str] = set()
    problems = []
    for key_node, _ in node.value:
        if key_node.value in seen:
            line = first_line + key_node.start_mark.line
            problems.append(Problem(path, line, f"key {key_node.value!r} appears twice"))
        seen.add(key_node.value)
    return problems


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------


def build_entry(parsed: ParsedFile, *, origin: str = "builtin") -> Entry:
    """Turn a validated parsed file into an Entry (operators and op_mix as canonical families)."""
    data = parsed.data
    gain = data.get("gain")
    return Entry(
        id=data.get("id") or parsed.path.stem,
        kind=data["kind"],
        title=data["title"].strip(),
        summary=data["summary"].strip(),
        operators=_unique([canonical_family(name, fuzzy=False) for name in data.get("operators") or []]),
        symptoms=_unique(data.get("symptoms") or []),
        tags=_unique(data.get("tags") or []),
        models=_unique(data.get("models") or []),
        hardware=_unique(data.get("hardware") or []),
        cann=data.get("cann"),
        gain=_build_gain(gain) if gain else None,
        evidence=data["evidence"],
        sources=list(data["sources"]),
        related=_unique(data.get("related") or []),
        requires=build_requires(data.get("requires")),
        applies_to={str(key): [str(v) for v in (values if isinstance(values, list) else [values])]
                    for key, values in (data.get("applies_to") or {}).items()},
        contradicts=_unique(data.get("contradicts") or []),
        zh={key: str(text).strip() for key, text in (data.get("zh") or {}).items()},
        op_mix=op_mix_weights([canonical_family(name, fuzzy=False) for name in data.get("op_mix") or []]),
        body=parsed.body,
        path=str(parsed.path),
        origin=origin,
    )


def _build_gain(gain: dict[str, Any]) -> Gain:
    measured_on = _unique(canonical_family(name, fuzzy=False) for name in gain.get("measured_on") or [])
    return Gain(float(gain["low_pct"]), float(gain["high_pct"]), gain["metric"], gain["scope"], gain["source"],
                measured_on, gain.get("estimate") is True, _unique(str(chip) for chip in gain.get("hardware") or []))


def build_requires(value: Any) -> list[dict[str, list[Any]]]:
    """Validated ``requires:`` front matter as ``[{key: [canonical values]}]``."""
    built = []
    for item in value or []:
        (key, values), = item.items()
        if key == "min_share":
            built.append({key: [float(values)]})
            continue
        items = values if isinstance(values, list) else [values]
        if key == "operator":
            items = [canonical_family(v, fuzzy=False) for v in items]
        elif key == "dtype":
            items = [canonical_dtype(v) for v in items]
        built.append({key: _unique(str(v).strip() for v in items)})
    return built


def op_mix_weights(families: Sequence[str]) -> dict[str, float]:
    """Weights for families listed in descending order of device time: 1/rank, normalised to sum 1.

    The KB gives only the order (no invented percentages); the dict keeps that order.
    """
    if not families:
        return {}
    raw = [1.0 / rank for rank in range(1, len(families) + 1)]
    total = sum(raw)
    return {family: round(weight / total, 4) for family, weight in zip(families, raw)}


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([item.strip() for item in items]))


def _string_items(parsed: ParsedFile, key: str) -> list[tuple[int, str]]:
    value = parsed.data.get(key)
    if not isinstance(value, list):
        return []
    if set(map(type, value)) <= _ONLY_STR and all(map(str.strip, value)):  # the usual list: every item kept
        return list(enumerate(value))
    return [(index, item) for index, item in enumerate(value) if isinstance(item, str) and item.strip()]


def _related_line(parsed: ParsedFile, rel: str) -> int | None:
    for index, item in _string_items(parsed, "related"):
        if item == rel:
            return parsed.lines.get(("related", index))
    return parsed.lines.get("related")


#: Above this many choices, rapidfuzz first keeps the choices that can reach difflib's cutoff (a 50,000-id KB:
#: 0.5 s per word with difflib alone).
_PREFILTER_CHOICES = 500
_CLOSE_CUTOFF = 0.6


def suggest_close(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice (difflib's, cutoff 0.6), or an empty string."""
    choices = choices if isinstance(choices, list) else list(choices)
    if len(choices) <= _PREFILTER_CHOICES:
        close = difflib.get_close_matches(word, choices, n=1, cutoff=_CLOSE_CUTOFF)
        return f"; did you mean {close[0]!r}?" if close else ""
    from rapidfuzz import fuzz, process

    # difflib's ratio is 2·M/(m+n) with M the size of its matching blocks, a common subsequence, so it never
    # exceeds rapidfuzz's ratio 2·LCS/(m+n). So the choices below the cutoff there (with a margin for rounding)
    # cannot reach it here, and once the bound falls below the best ratio found, no later choice can win.
    # What is left is difflib.get_close_matches(n=1): the highest ratio, ties to the greater string.
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    best: tuple[float, str] | None = None
    for choice, bound, _ in process.extract(word, choices, scorer=fuzz.ratio, processor=None, limit=None,
                                            score_cutoff=100 * _CLOSE_CUTOFF - 1):
        if best is not None and bound / 100 + 1e-9 < best[0]:
            break
        matcher.set_seq1(choice)
        # real_quick_ratio and quick_ratio bound ratio from above too: below the best so far, it cannot win or tie
        floor = _CLOSE_CUTOFF if best is None else max(_CLOSE_CUTOFF, best[0])
        if matcher.real_quick_ratio() >= floor and matcher.quick_ratio() >= floor:
            ratio = matcher.ratio()
            if ratio >= _CLOSE_CUTOFF and (best is None or (ratio, choice) > best):
                best = (ratio, choice)
    return f"; did you mean {best[1]!r}?" if best else ""


# ---------------------------------------------------------------------------------------------
# Reading an entry
# ---------------------------------------------------------------------------------------------

#: The section of each kind that says what to do: its first item is shown as the suggestion's first step.
ACTION_SECTIONS: dict[str, str] = {"recipe": "Steps", "pattern": "What to do", "tip": "How", "case": "Fix"}
MAX_STEP_CHARS = 400  # the longest shipped first step is 394 characters: none is shortened
_LIST_ITEM = re.compile(r"^\s{0,3}(?:\d+[.)]|[-*+])\s+(.*)$")


def first_step(entry: Entry) -> str:
    """The first item (or paragraph) of the entry's action section, as one line; "" when it has none."""
    return first_step_of(entry.body, entry.kind)


def first_step_of(body: str, kind: str, *, whole: bool = False) -> str:
    """``first_step`` of a body of ``kind`` (for a file not loaded yet: `advisor kb check`); ``whole``: not trimmed to
    MAX_STEP_CHARS."""
    lines = _section_lines(body, ACTION_SECTIONS.get(kind, ""))
    text: list[str] = []
    code: list[str] = []  # the first code line, for a section that opens with a code block
    in_code = False
    end = len(lines)
    for at, line in enumerate(lines):
        if _FENCE_OPEN.match(line):
            if text:
                end = at
                break
            in_code = not in_code
            continue
        if in_code:
            if not code and line.strip() and not line.strip().startswith("#"):
                code.append(f"`{line.strip()}`")
            continue
        item = _LIST_ITEM.match(line)
        if (item and text) or (not line.strip() and text):
            end = at
            break  # the next item, or the end of the paragraph
        if line.strip():
            text.append(item.group(1) if item else line.strip())
    if text and text[-1].endswith(":"):  # "Apply the settings:" — the step is what follows
        text += _first_code_line(lines[end:])
    step = " ".join(" ".join(text or code).split())
    return step if whole else _whole_sentences(step)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+(?=\S)")
#: A full stop after these does not end a sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "incl.", "resp.")


def _whole_sentences(step: str) -> str:
    """``step``, or its first sentences up to MAX_STEP_CHARS (at least one): a step is never cut mid-sentence."""
    if len(step) <= MAX_STEP_CHARS:
        return step
    ends = [m.start() for m in _SENTENCE_END.finditer(step) if not step[:m.start()].lower().endswith(_ABBREVIATIONS)]
    fitting = [end for end in ends if end <= MAX_STEP_CHARS]
    return step[:fitting[-1]] if fitting else step[:ends[0]] if ends else step


def _first_code_line(lines: list[str]) -> list[str]:
    """What a step ending in a colon announces: the first line (not a comment) of the code block the lines open
    with, quoted, or the first item of the list they open with."""
    in_code = False
    for line in lines:
        if _FENCE_OPEN.match(line):
            if in_code:
                return []
            in_code = True
        elif in_code and line.strip() and not line.strip().startswith("#"):
            return [f"`{line.strip()}`"]
        elif not in_code and line.strip():
            item = _LIST_ITEM.match(line)  # "Applied in three steps:" and a list: its first item
            return [item.group(1)] if item else []
    return []


def _section_lines(body: str, heading: str) -> list[str]:
    lines = body.splitlines()
    for index, line in enumerate(lines):
        if line.strip().lstrip("#").strip() == heading and line.lstrip().startswith("## "):
            rest = lines[index + 1:]
            end = next((i for i, l in enumerate(rest) if l.startswith("## ")), len(rest))
            return rest[:end]
    return []
