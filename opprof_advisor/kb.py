"""Load and validate knowledge-base markdown files (YAML front matter + body) into ``Entry`` objects.

The format is specified in ``kb/README.md``. Every problem is reported as a ``Problem`` at
``path:line`` (lines counted in the file, from 1) and none is swallowed: a file with problems
never becomes an ``Entry``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from opprof_advisor.errors import EntryValidationError, Problem
from opprof_advisor.models import Entry, Gain
from opprof_advisor.vocabulary import (
    DTYPES, EVIDENCE_GRADES, GAIN_SCOPES, KINDS, PRODUCERS, REQUIRE_KEYS, SYMPTOMS, UNITS, WORKLOADS, canonical_dtype,
)

#: Front-matter keys a KB file may use.
KEYS: tuple[str, ...] = (
    "id", "kind", "title", "summary", "operators", "symptoms", "tags", "models", "hardware",
    "cann", "gain", "evidence", "sources", "related", "requires", "zh", "op_mix",
)
#: Keys of the ``zh:`` mapping (Chinese texts shown with ``--lang zh``).
ZH_KEYS: tuple[str, ...] = ("title", "summary", "first_step")
REQUIRED_KEYS: tuple[str, ...] = ("kind", "title", "summary", "evidence", "sources")
GAIN_KEYS: tuple[str, ...] = ("low_pct", "high_pct", "metric", "scope", "source")
#: Optional gain keys: ``measured_on`` lists the operator families the source measured the figure on.
GAIN_OPTIONAL_KEYS: tuple[str, ...] = ("measured_on", "estimate")
GAIN_METRICS: tuple[str, ...] = ("latency", "throughput", "step_time", "op_time", "kernel_time", "memory")
#: Section every entry ends with, whatever its kind.
SOURCES_SECTION = "Sources"
#: Folder names that imply a kind (``kb/recipes/x.md`` must be a recipe).
KIND_FOLDERS: dict[str, str] = {f"{kind}s": kind for kind in KINDS}

#: The KB's page of sources that have no public copy (facts restated in our own words), linked as
#: ``kb/sources/README.md#<anchor>``. A README, so neither the loader nor the indexer takes it for an entry.
SOURCES_PAGE = "kb/sources/README.md"
#: The ways a source may be written, each one a user can open (kb/README.md, "Sources").
SOURCE_FORMS: dict[str, re.Pattern[str]] = {
    "url": re.compile(r"^https?://[\w.-]+\.[a-z]{2,}(?::\d+)?(?:[/?#]\S*)?$", re.IGNORECASE),
    "repo": re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{7,40}:[^\s:]\S*$"),
    "package": re.compile(r"^[A-Za-z0-9][\w.-]*==\d[\w.+!-]*:[^\s:]\S*$"),
    "page": re.compile(r"^" + re.escape(SOURCES_PAGE) + r"#[\w-]+$"),
}
_UNPINNED = re.compile(r"^https?://(?:www\.)?(?:github|gitcode|gitee|gitlab)\.com/[^/]+/[^/]+/(?:-/)?"
                       r"(?:blob|tree|raw)/(?:master|main|develop|dev|HEAD)(?:[/?#]|$)", re.IGNORECASE)

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")
_FENCE_OPEN = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)*?\1")
_FRONT_MATTER_FENCE = re.compile(r"^-{3,}\s*$")
_CANN_SPEC = re.compile(r"^\s*(?:==|!=|>=|<=|~=|>|<)\s*\d+(?:\.\d+)*(?:\.?\w+)?\s*$")
# A figure: a number with a unit that makes it a claim (percent, speed-up, time, throughput).
FIGURE = re.compile(
    r"(?<![\w.])[-+~]?\d+(?:[.,]\d+)?(?:\s?%|\s?×|x\b|\s?(?:ms|µs|us|fps|tokens?/s)\b)",
    re.IGNORECASE,
)


@dataclass
class ParsedFile:
    """The raw pieces of one KB file: front-matter data with key lines, and the body."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    lines: dict[Any, int] = field(default_factory=dict)  # key or (key, index|subkey) -> line
    body: str = ""
    body_line: int = 1  # line of the file where the body starts
    headings: list[tuple[str, int]] = field(default_factory=list)  # (## heading, line)
    problems: list[Problem] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def load_entry(path: Path | str, *, origin: str = "builtin", require_stem_id: bool = True) -> Entry:
    """Parse and validate one KB file; raise EntryValidationError listing every problem."""
    entry, problems = validate_file(Path(path), origin=origin, require_stem_id=require_stem_id)
    if problems or entry is None:
        raise EntryValidationError(problems)
    return entry


def load_entries(dirs: Iterable[Path | str], *, origin: str = "builtin") -> list[Entry]:
    """Load every entry under ``dirs``; raise EntryValidationError with all problems of all files."""
    entries, problems = validate_paths(dirs, origin=origin)
    if problems:
        raise EntryValidationError(problems)
    return entries


def check_paths(paths: Iterable[Path | str], *, known_ids: Iterable[str] = ()) -> list[Problem]:
    """Lint KB files and folders: per-file schema checks, duplicate ids and dangling ``related`` ids.

    ``known_ids`` are ids that exist elsewhere (e.g. the installed KB) so ``related`` may name them.
    """
    return validate_paths(paths, known_ids=known_ids)[1]


def find_kb_files(paths: Iterable[Path | str]) -> list[Path]:
    """Markdown entry files under ``paths`` (files are taken as given), sorted, README.md skipped."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(p for p in sorted(path.rglob("*.md")) if is_entry_file(p, path))
        else:
            found.append(path)
    return found


def is_entry_file(path: Path, root: Path) -> bool:
    """True for a markdown entry: not a README and not inside a hidden folder below ``root``."""
    if path.name.lower() == "readme.md" or not path.is_file():
        return False
    return not any(part.startswith(".") for part in path.relative_to(root).parts[:-1])


def validate_paths(
    paths: Iterable[Path | str], *, origin: str = "builtin", known_ids: Iterable[str] = ()
) -> tuple[list[Entry], list[Problem]]:
    """Validate files and folders; return the valid entries and every problem (cross-file ones too)."""
    files = find_kb_files(paths)
    entries: list[Entry] = []
    problems: list[Problem] = []
    for path in files:
        if not path.exists():
            problems.append(Problem(path, None, "no such file or folder"))
            continue
        entry, file_problems = validate_file(path, origin=origin)
        problems.extend(file_problems)
        if entry is not None:
            entries.append(entry)
    problems.extend(check_duplicates(entries))
    problems.extend(check_related(entries, set(known_ids)))
    return entries, problems


def validate_file(
    path: Path, *, origin: str = "builtin", require_stem_id: bool = True
) -> tuple[Entry | None, list[Problem]]:
    """Parse and validate one file; return (entry or None, problems)."""
    parsed = parse_file(path)
    if parsed.problems:
        return None, parsed.problems
    problems = sorted(validate_parsed(parsed, require_stem_id=require_stem_id), key=lambda p: p.line or 0)
    if problems:
        return None, problems
    return build_entry(parsed, origin=origin), []


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
    ids = {entry.id for entry in entries} | set(known_ids)
    problems = []
    for entry in entries:
        for rel in entry.related:
            if rel not in ids:
                hint = suggest_close(rel, ids)
                message = f"related id {rel!r} names no entry{hint}"
                problems.append(Problem(entry.path, _related_line(entry, rel), message))
    return problems


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def parse_file(path: Path) -> ParsedFile:
    """Split a file into front-matter data (with the line of every key) and body; record problems."""
    parsed = ParsedFile(path=path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        parsed.problems.append(Problem(path, 1, f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
        return parsed
    except OSError as exc:
        parsed.problems.append(Problem(path, None, f"cannot read: {exc.strerror or exc}"))
        return parsed
    text = text.removeprefix("\ufeff")
    tokens = _markdown().parse(text)
    if not tokens or tokens[0].type != "front_matter":
        parsed.problems.append(_front_matter_missing(path, text))
        return parsed
    front = tokens[0]
    parsed.body_line = front.map[1] + 1
    parsed.body = "\n".join(text.splitlines()[front.map[1]:]).strip("\n") + "\n"
    parsed.headings = _headings(tokens)
    _parse_yaml(parsed, front.content, first_line=2)
    return parsed


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
        _MD = MarkdownIt("commonmark").use(front_matter_plugin)
    return _MD


_MD = None


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


def _parse_yaml(parsed: ParsedFile, source: str, *, first_line: int) -> None:
    import yaml

    from opprof_advisor.plain_yaml import first_anchor

    try:
        file_size = parsed.path.stat().st_size
    except OSError:
        file_size = len(parsed.body.encode("utf-8")) + len(source.encode("utf-8"))
    too_big = entry_too_big(parsed.path, file_size)
    if too_big:
        parsed.problems.append(too_big)
        return
    size = len(source.encode("utf-8"))
    if size > MAX_FRONT_MATTER_BYTES:
        parsed.problems.append(Problem(parsed.path, first_line, f"front matter is {size:,} bytes, over the "
                                       f"{MAX_FRONT_MATTER_BYTES:,}-byte limit: keep facts short, prose in the body"))
        return
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(source)
    try:
        anchor = first_anchor(source)
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
# Validation
# ---------------------------------------------------------------------------------------------


def validate_parsed(parsed: ParsedFile, *, require_stem_id: bool = True) -> list[Problem]:
    """Every schema and body problem of a parsed file."""
    checks = (
        _check_keys, partial(_check_id, require_stem_id=require_stem_id), _check_kind, _check_text_fields,
        _check_list_fields, _check_operators, _check_symptoms, _check_evidence, _check_sources, _check_gain,
        _check_cann, _check_related_ids, _check_requires, _check_zh, _check_op_mix, _check_sections, _check_figures,
    )
    return [problem for check in checks for problem in check(parsed)]


def _problem(parsed: ParsedFile, key: Any, message: str) -> Problem:
    line = parsed.lines.get(key)
    if line is None and isinstance(key, tuple):
        line = parsed.lines.get(key[0])
    return Problem(parsed.path, line or 2, message)


def _check_keys(parsed: ParsedFile) -> list[Problem]:
    problems = []
    for key in parsed.data:
        if key not in KEYS:
            hint = suggest_close(str(key), KEYS) or " (allowed: " + ", ".join(KEYS) + ")"
            problems.append(_problem(parsed, key, f"unknown key {key!r}{hint}"))
    for key in REQUIRED_KEYS:
        if key not in parsed.data:
            problems.append(Problem(parsed.path, 1, f"missing required key {key!r}"))
    return problems


def _check_id(parsed: ParsedFile, *, require_stem_id: bool) -> list[Problem]:
    stem = parsed.path.stem
    if "id" not in parsed.data:
        if SLUG.match(stem):
            return []
        return [Problem(parsed.path, 1, f"file name {stem!r} is not a valid id (lower-case letters, digits, '-'; "
                                        "at most 80 characters): rename the file or set `id:`")]
    value = parsed.data["id"]
    if not isinstance(value, str) or not SLUG.match(value):
        return [_problem(parsed, "id", f"id {value!r} is not a slug: use lower-case letters, digits and '-', "
                                       "at most 80 characters, no path separators")]
    if require_stem_id and value != stem:
        return [_problem(parsed, "id", f"id {value!r} differs from the file name {stem!r}.md: rename one of them")]
    return []


def _check_kind(parsed: ParsedFile) -> list[Problem]:
    kind = parsed.data.get("kind")
    if kind is None:
        return []
    if kind not in KINDS:
        return [_problem(parsed, "kind", f"kind {kind!r} is not one of {', '.join(KINDS)}")]
    folder = KIND_FOLDERS.get(parsed.path.parent.name)
    if folder and folder != kind:
        return [_problem(parsed, "kind", f"kind {kind!r} but the file is in {parsed.path.parent.name}/: "
                                         f"move it to {kind}s/ or fix the kind")]
    return []


def _check_text_fields(parsed: ParsedFile) -> list[Problem]:
    problems = []
    for key in ("title", "summary"):
        value = parsed.data.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(_problem(parsed, key, f"{key} must be non-empty text"))
        elif key == "title" and "\n" in value.strip():
            problems.append(_problem(parsed, key, "title must be one line"))
    return problems


def _check_list_fields(parsed: ParsedFile) -> list[Problem]:
    problems = []
    for key in ("operators", "symptoms", "tags", "models", "hardware", "sources", "related", "op_mix"):
        value = parsed.data.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            problems.append(_problem(parsed, key, f"{key} must be a list, e.g. `{key}: [a, b]`"))
            continue
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                problems.append(_problem(parsed, (key, index), f"{key} item {item!r} must be non-empty text"))
            elif key in ("tags", "models") and item != item.lower():
                problems.append(_problem(parsed, (key, index), f"{key} are lower case: write {item.lower()!r}"))
    return problems


def _string_items(parsed: ParsedFile, key: str) -> list[tuple[int, str]]:
    value = parsed.data.get(key)
    if not isinstance(value, list):
        return []
    return [(index, item) for index, item in enumerate(value) if isinstance(item, str) and item.strip()]


def _check_operators(parsed: ParsedFile) -> list[Problem]:
    from opprof_advisor.operators import canonical_family

    problems = []
    for index, name in _string_items(parsed, "operators"):
        if canonical_family(name, fuzzy=False) is None:
            guess = canonical_family(name)
            hint = f"; did you mean {guess!r}?" if guess else " (families are listed in opprof_advisor/operators.py)"
            problems.append(_problem(parsed, ("operators", index), f"unknown operator {name!r}{hint}"))
    return problems


def _check_symptoms(parsed: ParsedFile) -> list[Problem]:
    problems = []
    for index, name in _string_items(parsed, "symptoms"):
        if name not in SYMPTOMS:
            hint = suggest_close(name, SYMPTOMS) or " (see opprof_advisor/vocabulary.py SYMPTOMS)"
            problems.append(_problem(parsed, ("symptoms", index), f"unknown symptom {name!r}{hint}"))
    return problems


def _check_evidence(parsed: ParsedFile) -> list[Problem]:
    value = parsed.data.get("evidence")
    if value is None or value in EVIDENCE_GRADES:
        return []
    return [_problem(parsed, "evidence", f"evidence {value!r} is not one of {', '.join(EVIDENCE_GRADES)}")]


def _check_sources(parsed: ParsedFile) -> list[Problem]:
    value = parsed.data.get("sources")
    if isinstance(value, list) and not value:
        return [_problem(parsed, "sources", "sources is empty: list at least one link or path")]
    problems = []
    for index, source in _string_items(parsed, "sources"):
        message = source_problem(source)
        if message:
            problems.append(_problem(parsed, ("sources", index), message))
    return problems


def classify_source(source: str) -> str | None:
    """How a user opens ``source``: ``url``, ``repo`` (pinned commit), ``package`` (pinned wheel), ``page``
    (the KB's own sources page), or None when it cannot be opened as written."""
    text = source.strip()
    for kind, pattern in SOURCE_FORMS.items():
        if pattern.match(text):
            return kind
    return None


def source_problem(source: str) -> str | None:
    """Why ``source`` is not a source a user can open, or None when it is."""
    kind = classify_source(source)
    if kind is None:
        return (f"source {source!r} cannot be opened by a user: write an http(s) URL, owner/repo@<commit>:<path>, "
                f"package==version:<path in the wheel>, or {SOURCES_PAGE}#<anchor>")
    if kind == "page":
        anchor = source.strip().partition("#")[2]
        if anchor not in sources_page_anchors():
            return f"source {source!r}: {SOURCES_PAGE} has no heading with the anchor #{anchor}"
    return None


def unpinned_source(source: str) -> bool:
    """True for a repository link that follows a moving branch (``blob/master``, ``tree/main`` …)."""
    return bool(_UNPINNED.match(source.strip()))


def sources_page_anchors() -> frozenset[str]:
    """The anchors (GitHub heading slugs) of the KB sources page, empty when the page is missing."""
    from opprof_advisor.paths import builtin_kb_dir

    return _page_anchors(builtin_kb_dir() / SOURCES_PAGE.removeprefix("kb/"))


@lru_cache(maxsize=4)
def _page_anchors(path: Path) -> frozenset[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(heading_anchor(line.lstrip("#")) for line in text.splitlines() if re.match(r"^#{1,6}\s", line))


def heading_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def check_warnings(paths: Iterable[Path | str]) -> list[Problem]:
    """Warnings that do not fail `kb check`: sources that follow a moving branch instead of a commit."""
    warnings = []
    for path in find_kb_files(paths):
        parsed = parse_file(Path(path))
        for index, source in _string_items(parsed, "sources"):
            if unpinned_source(source):
                message = (f"warning: source {source!r} follows a moving branch: pin it to a commit "
                           "(owner/repo@<commit>:<path> or a /blob/<commit>/ link)")
                warnings.append(_problem(parsed, ("sources", index), message))
    return warnings


def _check_gain(parsed: ParsedFile) -> list[Problem]:
    gain = parsed.data.get("gain")
    if gain is None:
        return []
    if not isinstance(gain, dict):
        return [_problem(parsed, "gain", "gain must be a mapping with low_pct, high_pct, metric, scope, source")]
    problems = []
    for key in gain:
        if key not in GAIN_KEYS + GAIN_OPTIONAL_KEYS:
            hint = suggest_close(str(key), GAIN_KEYS + GAIN_OPTIONAL_KEYS)
            problems.append(_problem(parsed, ("gain", key), f"unknown gain key {key!r}{hint}"))
    for key in GAIN_KEYS:
        if key not in gain:
            problems.append(_problem(parsed, "gain", f"gain is missing {key!r}"))
    problems.extend(_check_gain_values(parsed, gain))
    return problems


def _check_gain_values(parsed: ParsedFile, gain: dict) -> list[Problem]:
    problems = []
    numbers = {}
    for key in ("low_pct", "high_pct"):
        value = gain.get(key)
        if key in gain and (isinstance(value, bool) or not isinstance(value, (int, float))):
            problems.append(_problem(parsed, ("gain", key), f"gain {key} must be a number (percent), not {value!r}"))
        elif key in gain:
            numbers[key] = float(value)
    if len(numbers) == 2:
        low, high = numbers["low_pct"], numbers["high_pct"]
        if low > high:
            problems.append(_problem(parsed, ("gain", "low_pct"), f"gain low_pct {low:g} is above high_pct {high:g}"))
        if gain.get("scope") == "operators" and not (-100 <= low and high <= 100):
            message = "an `operators` gain lies between -100 and 100 percent"
            problems.append(_problem(parsed, ("gain", "high_pct"), message))
        if low < -100:
            problems.append(_problem(parsed, ("gain", "low_pct"), "a gain cannot be below -100 percent"))
    if "metric" in gain and gain["metric"] not in GAIN_METRICS:
        message = f"gain metric {gain['metric']!r} is not one of {', '.join(GAIN_METRICS)}"
        problems.append(_problem(parsed, ("gain", "metric"), message))
    if "scope" in gain and gain["scope"] not in GAIN_SCOPES:
        message = f"gain scope {gain['scope']!r} is not one of {', '.join(GAIN_SCOPES)}"
        problems.append(_problem(parsed, ("gain", "scope"), message))
    sources = parsed.data.get("sources")
    if "source" in gain and isinstance(sources, list) and gain["source"] not in sources:
        problems.append(_problem(parsed, ("gain", "source"), f"gain source {gain['source']!r} is not among `sources`"))
    problems.extend(_check_measured_on(parsed, gain))
    if "estimate" in gain and not isinstance(gain["estimate"], bool):
        problems.append(_problem(parsed, ("gain", "estimate"), "gain estimate must be true or false"))
    return problems


def _check_measured_on(parsed: ParsedFile, gain: dict) -> list[Problem]:
    """``measured_on``: a list of the entry's own operator families (the ones the figure was measured on)."""
    from opprof_advisor.operators import canonical_family

    if "measured_on" not in gain:
        return []
    measured = gain["measured_on"]
    if not isinstance(measured, list) or not all(isinstance(name, str) for name in measured) or not measured:
        return [_problem(parsed, ("gain", "measured_on"), "gain measured_on must be a list of operator families")]
    own = {canonical_family(str(name), fuzzy=False) for name in parsed.data.get("operators") or []}
    outside = [name for name in measured if canonical_family(name, fuzzy=False) not in own]
    if outside:
        return [_problem(parsed, ("gain", "measured_on"), f"gain measured_on {', '.join(outside)} is not among the "
                                                          "entry's `operators`")]
    return []


def _check_cann(parsed: ParsedFile) -> list[Problem]:
    value = parsed.data.get("cann")
    if value is None:
        return []
    if not isinstance(value, str) or not all(_CANN_SPEC.match(part) for part in value.split(",")):
        return [_problem(parsed, "cann", f"cann {value!r} is not a version specifier such as '>=8.0' or '>=7.0,<8.3' "
                                         "(quote it in YAML)")]
    return []


def _check_related_ids(parsed: ParsedFile) -> list[Problem]:
    problems = []
    own = parsed.data.get("id", parsed.path.stem)
    for index, rel in _string_items(parsed, "related"):
        if not SLUG.match(rel):
            problems.append(_problem(parsed, ("related", index), f"related id {rel!r} is not a slug"))
        elif rel == own:
            problems.append(_problem(parsed, ("related", index), "an entry cannot be related to itself"))
    return problems


def _check_requires(parsed: ParsedFile) -> list[Problem]:
    value = parsed.data.get("requires")
    if value is None:
        return []
    example = "e.g. `requires: [{symptom: fp32_compute}, {dtype: FLOAT}]`"
    if not isinstance(value, list):
        return [_problem(parsed, "requires", f"requires must be a list of one-key mappings, {example}")]
    problems = []
    for index, item in enumerate(value):
        where = ("requires", index)
        if not isinstance(item, dict) or len(item) != 1:
            problems.append(_problem(parsed, where, f"requires item {item!r} must be a one-key mapping, {example}"))
            continue
        (key, values), = item.items()
        if key not in REQUIRE_KEYS:
            hint = suggest_close(str(key), REQUIRE_KEYS) or " (allowed: " + ", ".join(REQUIRE_KEYS) + ")"
            problems.append(_problem(parsed, where, f"unknown requirement {key!r}{hint}"))
            continue
        problems += [_problem(parsed, where, message) for message in _requirement_problems(key, values)]
    return problems


def _requirement_problems(key: str, values: Any) -> list[str]:
    """What is wrong with one requirement's value(s), as messages."""
    if key == "min_share":
        ok = isinstance(values, (int, float)) and not isinstance(values, bool) and 0 < values <= 1
        return [] if ok else [f"min_share {values!r} must be a number in (0, 1], e.g. 0.05 for 5 %"]
    items = values if isinstance(values, list) else [values]
    if not items or not all(isinstance(v, str) and v.strip() for v in items):
        return [f"requirement {key!r} needs a name or a list of names, not {values!r}"]
    return [message for item in items if (message := _requirement_value_problem(key, item))]


def _requirement_value_problem(key: str, item: str) -> str | None:
    from opprof_advisor.operators import canonical_family

    allowed = {"symptom": SYMPTOMS, "unit": UNITS, "producer": PRODUCERS, "workload": WORKLOADS}.get(key)
    if allowed is not None:
        if item in allowed:
            return None
        hint = suggest_close(item, allowed) or " (allowed: " + ", ".join(allowed) + ")"
        return f"unknown {key} {item!r} in requires{hint}"
    if key == "operator" and canonical_family(item, fuzzy=False) is None:
        return f"unknown operator {item!r} in requires (families are listed in opprof_advisor/operators.py)"
    if key == "dtype" and canonical_dtype(item) not in DTYPES:
        return f"unknown dtype {item!r} in requires (allowed: {', '.join(DTYPES)})"
    return None


def build_requires(value: Any) -> list[dict[str, list[Any]]]:
    """Validated ``requires:`` front matter as ``[{key: [canonical values]}]``."""
    from opprof_advisor.operators import canonical_family

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


def _check_zh(parsed: ParsedFile) -> list[Problem]:
    value = parsed.data.get("zh")
    if value is None:
        return []
    if not isinstance(value, dict):
        return [_problem(parsed, "zh", "zh must be a mapping with title, summary and first_step in Chinese")]
    problems = []
    for key, text in value.items():
        if key not in ZH_KEYS:
            hint = suggest_close(str(key), ZH_KEYS) or " (allowed: " + ", ".join(ZH_KEYS) + ")"
            problems.append(_problem(parsed, ("zh", key), f"unknown zh key {key!r}{hint}"))
        elif not isinstance(text, str) or not text.strip():
            problems.append(_problem(parsed, ("zh", key), f"zh {key} must be non-empty text"))
        elif key == "title" and "\n" in text.strip():
            problems.append(_problem(parsed, ("zh", key), "zh title must be one line"))
    return problems


def _check_op_mix(parsed: ParsedFile) -> list[Problem]:
    from opprof_advisor.operators import canonical_family

    if "op_mix" not in parsed.data:
        return []
    if parsed.data.get("kind") != "case":
        return [_problem(parsed, "op_mix", "op_mix is for cases only")]
    problems = []
    seen: set[str] = set()
    for index, name in _string_items(parsed, "op_mix"):
        family = canonical_family(name, fuzzy=False)
        if family is None:
            problems.append(_problem(parsed, ("op_mix", index), f"unknown operator {name!r} in op_mix"))
        elif family in seen:
            problems.append(_problem(parsed, ("op_mix", index), f"op_mix names family {family!r} twice"))
        else:
            seen.add(family)
    return problems


def _check_sections(parsed: ParsedFile) -> list[Problem]:
    kind = parsed.data.get("kind")
    if kind not in KINDS:
        return []
    if not parsed.body.strip():
        return [Problem(parsed.path, parsed.body_line, "the body is empty")]
    names = [name for name, _ in parsed.headings]
    wanted = [*KINDS[kind], SOURCES_SECTION]
    problems = []
    for section in wanted:
        if section not in names:
            problems.append(Problem(parsed.path, parsed.body_line, f"a {kind} needs a `## {section}` section "
                                                                   f"(sections: {', '.join(wanted)})"))
    if not problems:
        present = [(name, line) for name, line in parsed.headings if name in wanted]
        for (name, line), expected in zip(present, wanted):
            if name != expected:
                problems.append(Problem(parsed.path, line, f"section `## {name}` is out of order: "
                                                           f"expected {', '.join(wanted)}"))
                break
    if names and names[-1] != SOURCES_SECTION and SOURCES_SECTION in names:
        problems.append(Problem(parsed.path, parsed.headings[-1][1], "the `## Sources` section must come last"))
    return problems


def _check_figures(parsed: ParsedFile) -> list[Problem]:
    sources = parsed.data.get("sources")
    if isinstance(sources, list) and sources:
        return []
    problems = []
    for line_no, text in _prose_lines(parsed.body, parsed.body_line):
        for match in FIGURE.finditer(text):
            problems.append(Problem(parsed.path, line_no, f"figure {match.group(0).strip()!r} without a source: "
                                                          "list the source that states it in `sources`"))
    return problems


def _prose_lines(body: str, first_line: int) -> Iterable[tuple[int, str]]:
    # Numbers in code (settings, shapes, commands) are not claims; skip fences and inline code.
    fence = None
    for offset, line in enumerate(body.splitlines()):
        opened = _FENCE_OPEN.match(line)
        if fence is None and opened:
            fence = opened.group(1)[0] * 3
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        yield first_line + offset, _INLINE_CODE.sub("", line)


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------


def build_entry(parsed: ParsedFile, *, origin: str = "builtin") -> Entry:
    """Turn a validated parsed file into an Entry (operators and op_mix as canonical families)."""
    from opprof_advisor.operators import canonical_family

    data = parsed.data
    gain = data.get("gain")
    return Entry(
        id=data.get("id") or parsed.path.stem,
        kind=data["kind"],
        title=data["title"].strip(),
        summary=data["summary"].strip(),
        operators=_unique(canonical_family(name, fuzzy=False) for name in data.get("operators") or []),
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
        zh={key: str(text).strip() for key, text in (data.get("zh") or {}).items()},
        op_mix=op_mix_weights([canonical_family(name, fuzzy=False) for name in data.get("op_mix") or []]),
        body=parsed.body,
        path=str(parsed.path),
        origin=origin,
    )


def _build_gain(gain: dict[str, Any]) -> Gain:
    from opprof_advisor.operators import canonical_family

    measured_on = _unique(canonical_family(name, fuzzy=False) for name in gain.get("measured_on") or [])
    return Gain(float(gain["low_pct"]), float(gain["high_pct"]), gain["metric"], gain["scope"], gain["source"],
                measured_on, gain.get("estimate") is True)


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
    return list(dict.fromkeys(item.strip() for item in items))


def _related_line(entry: Entry, rel: str) -> int | None:
    # Re-reading the front matter for one line number keeps Entry free of parse details.
    parsed = parse_file(Path(entry.path))
    for index, item in _string_items(parsed, "related"):
        if item == rel:
            return parsed.lines.get(("related", index))
    return parsed.lines.get("related")


def suggest_close(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or an empty string."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


#: Every vocabulary symptom needs at least this many entries that answer it (`kb stats`, tests).
MIN_ANSWERS = 2


def answers_symptom(entry: Entry, symptom: str) -> bool:
    """True when ``entry`` is advice (not a case) listing ``symptom`` whose ``requires`` can hold when it fires.

    Every ``symptom`` requirement must name it (a list is "any of"); the other requirements (operators,
    units, dtypes, producer ...) are facts of the profile that the symptom does not rule out.
    """
    if entry.kind == "case" or symptom not in entry.symptoms:
        return False
    return all(symptom in item["symptom"] for item in entry.requires if "symptom" in item)


def summarize_entries(entries: Sequence[Entry]) -> dict[str, Any]:
    """Counts by kind, evidence and origin, and the coverage table.

    ``answering``: symptom -> ids of the entries that answer it (``answers_symptom``); ``uncovered_symptoms``:
    symptoms with fewer than ``MIN_ANSWERS`` of them; ``families``: operator family -> ids of the entries
    about it; ``symptoms``: symptom -> entries listing it, by kind.
    """
    from opprof_advisor.operators import FAMILIES

    def count(values: Iterable[str], order: Iterable[str] = ()) -> dict[str, int]:
        counts = {name: 0 for name in order}
        for value in values:
            counts[value] = counts.get(value, 0) + 1
        return counts

    ordered = sorted(entries, key=lambda e: e.id)
    symptoms = {symptom: {kind: 0 for kind in KINDS} for symptom in SYMPTOMS}
    for entry in ordered:
        for symptom in entry.symptoms:
            if symptom in symptoms:
                symptoms[symptom][entry.kind] += 1
    answering = {symptom: [e.id for e in ordered if answers_symptom(e, symptom)] for symptom in SYMPTOMS}
    families = {family: [e.id for e in ordered if family in e.operators] for family in FAMILIES}
    return {
        "entries": len(entries),
        "by_kind": count((e.kind for e in entries), KINDS),
        "by_evidence": count((e.evidence for e in entries), EVIDENCE_GRADES),
        "by_origin": count(e.origin for e in entries),
        "with_gain": sum(1 for e in entries if e.gain is not None),
        "min_answers": MIN_ANSWERS,
        "symptoms": symptoms,
        "answering": answering,
        "uncovered_symptoms": [s for s, ids in answering.items() if len(ids) < MIN_ANSWERS],
        "families": families,
    }


# ---------------------------------------------------------------------------------------------
# Reading an entry
# ---------------------------------------------------------------------------------------------

#: The section of each kind that says what to do: its first item is shown as the suggestion's first step.
ACTION_SECTIONS: dict[str, str] = {"recipe": "Steps", "pattern": "What to do", "tip": "How", "case": "Fix"}
MAX_STEP_CHARS = 300
_LIST_ITEM = re.compile(r"^\s{0,3}(?:\d+[.)]|[-*+])\s+(.*)$")


def first_step(entry: Entry) -> str:
    """The first item (or paragraph) of the entry's action section, as one line; "" when it has none."""
    lines = _section_lines(entry.body, ACTION_SECTIONS.get(entry.kind, ""))
    text: list[str] = []
    code: list[str] = []  # the first code line, for a section that opens with a code block
    in_code = False
    for line in lines:
        if _FENCE_OPEN.match(line):
            if text:
                break
            in_code = not in_code
            continue
        if in_code:
            if not code and line.strip() and not line.strip().startswith("#"):
                code.append(f"`{line.strip()}`")
            continue
        item = _LIST_ITEM.match(line)
        if item and text:
            break  # the next item
        if not line.strip():
            if text:
                break
            continue
        text.append(item.group(1) if item else line.strip())
    step = " ".join(" ".join(text or code).split())
    if len(step) > MAX_STEP_CHARS:
        step = step[:MAX_STEP_CHARS].rsplit(" ", 1)[0] + " …"
    return step


def _section_lines(body: str, heading: str) -> list[str]:
    lines = body.splitlines()
    for index, line in enumerate(lines):
        if line.strip().lstrip("#").strip() == heading and line.lstrip().startswith("## "):
            rest = lines[index + 1:]
            end = next((i for i, l in enumerate(rest) if l.startswith("## ")), len(rest))
            return rest[:end]
    return []


# ---------------------------------------------------------------------------------------------
# Documents (`advisor show / kb list / kb stats / kb check --format json`, rendered by render/text/kb.py)
# ---------------------------------------------------------------------------------------------

ENTRY_SCHEMA = "opprof-advisor/entry/1"
LIST_SCHEMA = "opprof-advisor/kb-list/1"
STATS_SCHEMA = "opprof-advisor/kb-stats/2"
CHECK_SCHEMA = "opprof-advisor/kb-check/1"
#: The fields of each entry in the kb-list document.
LIST_FIELDS = ("id", "kind", "title", "summary", "evidence", "operators", "symptoms", "tags", "models", "origin", "path")


def entry_to_json(entry: Entry) -> dict[str, Any]:
    """The ``opprof-advisor/entry/1`` document of one entry (front matter, body, file)."""
    return {"schema": ENTRY_SCHEMA, "entry": entry.to_dict()}


def entries_to_json(entries: Sequence[Entry]) -> dict[str, Any]:
    """The ``opprof-advisor/kb-list/1`` document."""
    return {"schema": LIST_SCHEMA, "count": len(entries),
            "entries": [{name: getattr(entry, name) for name in LIST_FIELDS} for entry in entries]}


def stats_to_json(entries: Sequence[Entry]) -> dict[str, Any]:
    """The ``opprof-advisor/kb-stats/2`` document: ``summarize_entries`` with its schema."""
    return {"schema": STATS_SCHEMA, **summarize_entries(entries)}


def check_to_json(files: int, problems: Sequence[Problem], warnings: Sequence[Problem]) -> dict[str, Any]:
    """The ``opprof-advisor/kb-check/1`` document: how many files were checked, every problem and warning."""
    return {
        "schema": CHECK_SCHEMA,
        "files": files,
        "problems": [{"path": p.path, "line": p.line or 1, "message": p.message} for p in problems],
        "warnings": [{"path": p.path, "line": p.line or 1, "message": p.message} for p in warnings],
    }
