"""The rules a KB file must follow (kb/README.md): keys, vocabulary, ids, sections, sources a user can open, sourced figures.

``validate_parsed`` returns every problem of one parsed file (``kb.parse_file``), each at its
``path:line``; ``check_warnings`` the softer ones (a source that follows a moving branch, and
``guide_warnings``: what the KB guide asks of an entry that it lacks, with what to write, and a case
outside the shipped KB that similar-case matching cannot use); ``check_installed`` applies the rules
to the built-in and user KB folders the way `advisor kb check` does. The rules on sources (the forms a user can
open, figures that need one) are in ``kb.source_rules``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import Problem
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.kb.entry import (
    ACTION_SECTIONS, KEYS, MAX_STEP_CHARS, ParsedFile, _string_items, find_kb_files, first_step_of, parse_file,
    suggest_close,
)
from opprof_advisor.core.vocabulary import (
    APPLIES_KEYS, DESCRIPTIVE_SYMPTOMS, DTYPES, EVIDENCE_GRADES, GAIN_SCOPES, KINDS, PRODUCERS, REQUIRE_KEYS, SYMPTOMS,
    UNITS, WORKLOADS, canonical_dtype,
)
from opprof_advisor.core.operators import canonical_family
from opprof_advisor.core.paths import builtin_kb_dir
from opprof_advisor.kb.source_rules import _check_figures, source_problem, unpinned_source

#: Keys of the ``zh:`` mapping (Chinese texts shown with ``--lang zh``).
ZH_KEYS: tuple[str, ...] = ("title", "summary", "first_step")

REQUIRED_KEYS: tuple[str, ...] = ("kind", "title", "summary", "evidence", "sources", "applies_to")

GAIN_KEYS: tuple[str, ...] = ("low_pct", "high_pct", "metric", "scope", "source")
#: Optional gain keys: ``measured_on`` lists the operator families the source measured the figure on, ``hardware``
#: the chips.
GAIN_OPTIONAL_KEYS: tuple[str, ...] = ("measured_on", "estimate", "hardware")

GAIN_METRICS: tuple[str, ...] = ("latency", "throughput", "step_time", "op_time", "kernel_time", "memory")

#: Section every entry ends with, whatever its kind.
SOURCES_SECTION = "Sources"

#: Folder names that imply a kind (``kb/recipes/x.md`` must be a recipe).
KIND_FOLDERS: dict[str, str] = {f"{kind}s": kind for kind in KINDS}

SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,79}\Z")

_CANN_SPEC = re.compile(r"^\s*(?:==|!=|>=|<=|~=|>|<)\s*\d+(?:\.\d+)*(?:\.?\w+)?\s*$")


def validate_parsed(parsed: ParsedFile, *, require_stem_id: bool = True) -> list[Problem]:
    """Every schema and body problem of a parsed file."""
    checks = (
        _check_keys, partial(_check_id, require_stem_id=require_stem_id), _check_kind, _check_text_fields,
        _check_list_fields, _check_operators, _check_symptoms, _check_evidence, _check_sources, _check_gain,
        _check_cann, _check_related_ids, _check_requires, _check_applies_to, _check_zh, _check_op_mix, _check_sections, _check_figures,
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


_LIST_FIELDS = ("operators", "symptoms", "tags", "models", "hardware", "sources", "related", "op_mix")
_LOWER_CASE_LISTS = frozenset(("tags", "models"))
_ONLY_STR = frozenset((str,))


def _check_list_fields(parsed: ParsedFile) -> list[Problem]:
    problems = []
    for key in _LIST_FIELDS:
        value = parsed.data.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            problems.append(_problem(parsed, key, f"{key} must be a list, e.g. `{key}: [a, b]`"))
            continue
        # The usual list, all non-empty text (and lower case where it must be), is told in C-level passes;
        # any other goes through the loop below, which words each problem.
        if set(map(type, value)) <= _ONLY_STR and all(map(str.strip, value)) and (
                key not in _LOWER_CASE_LISTS or value == [item.lower() for item in value]):
            continue
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                problems.append(_problem(parsed, (key, index), f"{key} item {item!r} must be non-empty text"))
            elif key in ("tags", "models") and item != item.lower():
                problems.append(_problem(parsed, (key, index), f"{key} are lower case: write {item.lower()!r}"))
    return problems


def _check_operators(parsed: ParsedFile) -> list[Problem]:
    problems = []
    for index, name in _string_items(parsed, "operators"):
        if canonical_family(name, fuzzy=False) is None:
            guess = canonical_family(name)
            hint = f"; did you mean {guess!r}?" if guess else " (families are listed in opprof_advisor/core/operators.py)"
            problems.append(_problem(parsed, ("operators", index), f"unknown operator {name!r}{hint}"))
    return problems


def _check_symptoms(parsed: ParsedFile) -> list[Problem]:
    problems = []
    for index, name in _string_items(parsed, "symptoms"):
        if name not in SYMPTOMS:
            hint = suggest_close(name, SYMPTOMS) or " (see opprof_advisor/core/vocabulary.py SYMPTOMS)"
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


def check_warnings(paths: Iterable[Path | str]) -> list[Problem]:
    """Warnings that do not fail `kb check`: sources that follow a moving branch instead of a commit, and what the
    KB guide asks of an entry that it lacks (``guide_warnings``); each file's by line."""
    warnings = []
    shipped_root = builtin_kb_dir().resolve()
    for path in find_kb_files(paths):
        parsed = parse_file(Path(path))
        found = []
        for index, source in _string_items(parsed, "sources"):
            if unpinned_source(source):
                message = (f"warning: source {source!r} follows a moving branch: pin it to a commit "
                           "(owner/repo@<commit>:<path> or a /blob/<commit>/ link)")
                found.append(_problem(parsed, ("sources", index), message))
        found += guide_warnings(parsed, shipped=Path(os.path.realpath(path)).is_relative_to(shipped_root))
        warnings += sorted(found, key=lambda problem: problem.line or 0)
    return warnings


# ---------------------------------------------------------------------------------------------
# What the KB guide asks beyond the rules (warnings: the entry works without it, with less use)
# ---------------------------------------------------------------------------------------------

#: What each key of ``zh:`` holds, for the line that asks for a missing one.
_ZH_WHAT = {"title": N_("the title in one line"), "summary": N_("the summary"), "first_step": N_("the first step")}
_REQUIRES_EXAMPLE = "`requires: [{symptom: nms_cpu}]`"
_ZH_EXAMPLE = "`zh: {title: …, summary: …, first_step: …}`"
_OP_MIX_EXAMPLE = "`op_mix: [Conv2D, NMS, Activation]`"
_SYMPTOMS_EXAMPLE = "`symptoms: [nms_cpu, aicpu_fallback]`"


def guide_warnings(parsed: ParsedFile, *, shipped: bool = False) -> list[Problem]:
    """What the KB guide (kb/README.md) asks of every entry and ``parsed`` lacks, one warning each with what to
    write: ``requires:``, ``zh:`` (title, summary, first step) and a first step in the action section. For a case
    outside the shipped KB (``shipped`` False), also what keeps similar-case matching (advice/similar_cases.py)
    from using it: no ``op_mix:`` (it can never show as similar) or no problem symptom.

    Shipped cases without an op mix are deliberate (host-side and single-kernel cases, whose sources give no
    model mix), so they are not listed each time the shipped KB is checked. A file that does not parse, or whose
    kind is unknown, gets none: its errors come first.
    """
    kind = parsed.data.get("kind")
    if parsed.problems or kind not in KINDS:
        return []
    found = (_missing_requires(parsed) + _missing_zh(parsed) + _missing_first_step(parsed, kind)
             + _unstated_stack(parsed))
    if kind == "case" and not shipped:
        found += _unmatchable_case(parsed)
    return found


def _missing_requires(parsed: ParsedFile) -> list[Problem]:
    if parsed.data.get("requires") is not None:  # `requires: []` says that nothing must hold
        return []
    return [Problem(parsed.path, 1, M_(
        "warning: no `requires:` — write the conditions without which the advice is wrong or useless, e.g. "
        "{example} (keys: {keys}), or `requires: []` when nothing must hold",
        example=_REQUIRES_EXAMPLE, keys=", ".join(REQUIRE_KEYS)))]


def _unstated_stack(parsed: ParsedFile) -> list[Problem]:
    """Tags naming a training stack (mindspeed, torchtitan...) whose ``applies_to`` says none: the advice would
    rank as if any run could use it (advice/remedies.py ranks a stack's entries under the general ones)."""
    tags = parsed.data.get("tags")
    applies = parsed.data.get("applies_to")
    if not isinstance(tags, list) or not isinstance(applies, dict) or "stack" in applies:
        return []
    named = [tag for tag in APPLIES_KEYS["stack"] if tag in tags]
    if not named:
        return []
    return [_problem(parsed, "applies_to", M_(
        "warning: the tags name {stacks} but `applies_to` has no `stack:` — add `stack: [{stacks}]` when the advice "
        "uses that stack's options, or drop the tag", stacks=", ".join(named)))]


def _missing_zh(parsed: ParsedFile) -> list[Problem]:
    value = parsed.data.get("zh")
    if value is None:
        return [Problem(parsed.path, 1, M_(
            "warning: no `zh:` — write the title, summary and first step in Chinese, shown with --lang zh: {example}",
            example=_ZH_EXAMPLE))]
    if not isinstance(value, dict):
        return []  # an error already
    return [_problem(parsed, "zh", M_("warning: no `{field}:` — write {what} in Chinese, shown with --lang zh",
                                      field="zh." + key, what=_ZH_WHAT[key]))
            for key in ZH_KEYS if key not in value]


def _missing_first_step(parsed: ParsedFile, kind: str) -> list[Problem]:
    section = ACTION_SECTIONS[kind]
    line = next((line for name, line in parsed.headings if name == section), None)
    if line is None:
        return []  # a missing section is an error already
    whole = first_step_of(parsed.body, kind, whole=True)
    if len(whole) > MAX_STEP_CHARS:
        return [Problem(parsed.path, line, M_(
            "warning: the first step of {section} has {n} characters: `advisor suggest` shows only its first sentences "
            "up to {most} (\"{shown}\"); keep it to one or two sentences", section="`## " + section + "`", n=len(whole),
            most=MAX_STEP_CHARS, shown=first_step_of(parsed.body, kind)))]
    if whole:
        return []
    return [Problem(parsed.path, line, M_(
        "warning: {section} gives no first step — open it with a numbered or bulleted item: one concrete action in "
        "one or two sentences (a setting, a code change, or the profiler command that confirms the diagnosis); "
        "`advisor suggest` shows it as the entry's first step", section="`## " + section + "`"))]


def _unmatchable_case(parsed: ParsedFile) -> list[Problem]:
    """Why similar-case matching cannot use a case, or can only rarely, with what to add."""
    found = []
    if not _string_items(parsed, "op_mix"):
        found.append(Problem(parsed.path, 1, M_(
            "warning: no `op_mix:` — this case can never show as similar to a profile: list the model's operator "
            "families in descending order of device time, e.g. {example} (the family column of `advisor profile` "
            "on the case's profile, top down)", example=_OP_MIX_EXAMPLE)))
    symptoms = [name for _, name in _string_items(parsed, "symptoms")]
    if not symptoms:
        found.append(Problem(parsed.path, 1, M_(
            "warning: no `symptoms:` — this case shows as similar only to a profile with nearly the same op mix, "
            "unless it shares a problem symptom with it: list the symptoms the case shows, e.g. {example} (the ids "
            "under `symptoms` in `advisor profile`; every id in `advisor kb stats`)", example=_SYMPTOMS_EXAMPLE)))
    elif all(name in DESCRIPTIVE_SYMPTOMS for name in symptoms):
        found.append(_problem(parsed, "symptoms", M_(
            "warning: `symptoms:` lists only {ids}, which similar-case matching leaves out (they say how kernels run, "
            "not what went wrong) — this case shows as similar only to a profile with nearly the same op mix: add "
            "the problem symptoms the case shows (the ids under `symptoms` in `advisor profile`; every id in "
            "`advisor kb stats`)", ids=", ".join(symptoms))))
    return found


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
    chips = gain.get("hardware", ["-"])
    if not isinstance(chips, list) or not chips or not all(isinstance(chip, str) and chip.strip() for chip in chips):
        problems.append(_problem(parsed, ("gain", "hardware"), "gain hardware must be a list of chips (`Atlas A2`, "
                                                               "`Ascend950` …)"))
    return problems


def _check_measured_on(parsed: ParsedFile, gain: dict) -> list[Problem]:
    """``measured_on``: a list of the entry's own operator families (the ones the figure was measured on)."""
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


def _check_applies_to(parsed: ParsedFile) -> list[Problem]:
    """``applies_to:`` is a mapping of APPLIES_KEYS to lists of their words, ``producer`` among them;
    ``contradicts:`` a list of entry ids."""
    example = "e.g. `applies_to: {producer: [run], phase: [training]}`"
    problems = []
    contradicts = parsed.data.get("contradicts")
    if contradicts is not None and (not isinstance(contradicts, list)
                                    or not all(isinstance(i, str) and SLUG.match(i) for i in contradicts)):
        problems.append(_problem(parsed, "contradicts", "contradicts must be a list of entry ids"))
    value = parsed.data.get("applies_to")
    if value is None:
        return problems
    if not isinstance(value, dict):
        return problems + [_problem(parsed, "applies_to", f"applies_to must be a mapping, {example}")]
    if "producer" not in value:
        problems.append(_problem(parsed, "applies_to", f"applies_to must name the producer (kernel, run), {example}"))
    for key, words in value.items():
        if key not in APPLIES_KEYS:
            hint = suggest_close(str(key), APPLIES_KEYS) or f" (allowed: {', '.join(APPLIES_KEYS)})"
            problems.append(_problem(parsed, "applies_to", f"unknown key {key!r} in applies_to{hint}"))
            continue
        items = words if isinstance(words, list) else [words]
        if not items:
            problems.append(_problem(parsed, "applies_to", f"applies_to {key} is empty: leave the key out for any"))
        for word in items:
            if word not in APPLIES_KEYS[key]:
                hint = suggest_close(str(word), APPLIES_KEYS[key]) or f" (allowed: {', '.join(APPLIES_KEYS[key])})"
                problems.append(_problem(parsed, "applies_to", f"unknown {key} {word!r} in applies_to{hint}"))
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
    allowed = {"symptom": SYMPTOMS, "unit": UNITS, "producer": PRODUCERS, "workload": WORKLOADS}.get(key)
    if allowed is not None:
        if item in allowed:
            return None
        hint = suggest_close(item, allowed) or " (allowed: " + ", ".join(allowed) + ")"
        return f"unknown {key} {item!r} in requires{hint}"
    if key == "operator" and canonical_family(item, fuzzy=False) is None:
        return f"unknown operator {item!r} in requires (families are listed in opprof_advisor/core/operators.py)"
    if key == "dtype" and canonical_dtype(item) not in DTYPES:
        return f"unknown dtype {item!r} in requires (allowed: {', '.join(DTYPES)})"
    return None


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
