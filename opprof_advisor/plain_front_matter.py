"""A line reader for the YAML of KB front matter as authors write it, for the files that need no YAML parser.

PyYAML composes a node for every scalar and resolves its tag: ~0.6 ms of an entry's ~1 ms parse,
most of a 50,000-entry build. The front matter of a KB file uses a small part of YAML: top-level
``key: value`` lines whose value is one scalar on the line (plain, "double" or 'single' quoted), a
one-line flow list ``[a, b]`` or mapping ``{k: v}``, or an indented block list (``- value`` or
``- key: value``) or mapping (``key: value``). ``read_front_matter`` reads exactly that and gives
what ``kb._parse_yaml`` gets from PyYAML (the data, and the line of every key and item); on any
line it does not fully understand (comments, anchors, tags, escapes, continued lines, an odd
character, a duplicate key ...) it returns None and the file goes through PyYAML, which also finds
and words every error. Plain scalars are resolved by PyYAML's own resolver and constructor (so
``13`` is an int, ``true`` a bool, ``8.0`` a float, as before). ``tests/test_plain_front_matter.py``
checks it against PyYAML on every shipped entry and on generated and hostile front matter.
"""

from __future__ import annotations

import re
from typing import Any

from opprof_advisor.plain_yaml import NOT_A_SCALAR, resolve_plain, resolved_starts

#: Characters YAML treats specially anywhere: tabs, line breaks other than "\n", a BOM, non-printable characters.
_ODD = re.compile("[\t\r\x85\u2028\u2029\ufeff]|[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: A key as KB authors write one (PyYAML refuses a key longer than 1024 characters: left to it).
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,127}):(?: +|$)")
#: The first character of a plain scalar that YAML may read as an indicator.
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
#: Characters a plain scalar inside ``[...]`` or ``{...}`` may not hold here (flow indicators, quotes, '?',
#: a backslash); a '#' only after no space (``README.md#anchor``: a space would start a comment).
_FLOW_UNSAFE = frozenset(",[]{}\"'?\\")
#: A double-quoted scalar whose only escapes are \" and \\.
_DOUBLE_QUOTED = re.compile(r'"((?:[^"\\]|\\["\\])*)"')
_ESCAPE = re.compile(r'\\(["\\])')
#: The inside of a flow list of names (``MatMul, llama2-7b, host_bound``): items _flow_item would take as they are.
_SIMPLE_ITEMS = re.compile(r" *[A-Za-z0-9_][A-Za-z0-9_.+/-]*(?: *, *[A-Za-z0-9_][A-Za-z0-9_.+/-]*)* *")
#: A plain scalar may start with '-' when no space follows (``-10``, ``-foo``); "---" is a document marker.
_DASHED = re.compile(r"-(?![- ])")


class _Unsure(Exception):
    """A line this reader does not fully understand: PyYAML reads the file instead."""


def read_front_matter(source: str, first_line: int) -> tuple[dict[str, Any], dict[Any, int]] | None:
    """(data, lines) as ``kb._parse_yaml`` builds them from PyYAML, or None to let PyYAML read ``source``.

    ``lines`` maps each top-level key, and ``(key, index)`` / ``(key, subkey)`` for the items of its
    list or mapping, to its line in the file (the front matter starts at ``first_line``).
    """
    if _ODD.search(source):
        return None
    try:
        data, lines = _read(source.split("\n"), first_line)
    except _Unsure:
        return None
    return (data, lines) if data else None  # empty front matter: PyYAML's None, which kb reports


def _read(rows: list[str], first_line: int) -> tuple[dict[str, Any], dict[Any, int]]:
    data: dict[str, Any] = {}
    lines: dict[Any, int] = {}
    number, count = 0, len(rows)
    while number < count:
        row = rows[number]
        if not row.strip(" "):
            number += 1
            continue
        match = _KEY.match(row)
        if match is None:
            raise _Unsure
        key = _plain_key(match.group(1))
        if key in data:
            raise _Unsure  # PyYAML keeps the last value; kb reports the duplicate: let it see the nodes
        lines[key] = first_line + number
        rest = row[match.end():]
        if rest:
            data[key] = _inline_value(rest, lines, key, first_line + number)
            number += 1
            continue
        block_end = _block_end(rows, number + 1)
        data[key] = _block(rows[number + 1:block_end], lines, key, first_line + number + 1)
        number = block_end
    return data, lines


def _block_end(rows: list[str], start: int) -> int:
    """Index after the indented block (or `- ` list at the key's column) that starts at ``start``."""
    end = start
    while end < len(rows) and (rows[end].startswith((" ", "- ")) or rows[end] in ("", "-")):
        end += 1
    while end > start and not rows[end - 1].strip(" "):
        end -= 1  # trailing blank lines belong to no value
    return end


def _block(rows: list[str], lines: dict, key: str, first: int) -> Any:
    """The value of ``key:`` written on the lines below it: None, a block list or a block mapping."""
    if not rows:
        return None
    indent = len(rows[0]) - len(rows[0].lstrip(" "))
    if any(row.strip(" ") and (len(row) - len(row.lstrip(" ")) != indent) for row in rows):
        raise _Unsure  # a continued scalar or nested block
    items = [(offset, row[indent:]) for offset, row in enumerate(rows) if row.strip(" ")]
    if items[0][1].startswith("- ") or items[0][1] == "-":
        return _block_list(items, lines, key, first)
    if indent == 0:
        raise _Unsure
    return _block_mapping(items, lines, key, first)


def _block_list(items: list[tuple[int, str]], lines: dict, key: str, first: int) -> list:
    values = []
    for index, (offset, text) in enumerate(items):
        if not text.startswith("- "):
            raise _Unsure
        text = text[2:].lstrip(" ")
        line = first + offset
        lines[(key, index)] = line
        pair = _KEY.match(text)
        if pair is None:
            values.append(_scalar_or_flow(text, line))
            continue
        rest = text[pair.end():]
        if not rest:
            raise _Unsure  # a nested block below the item
        values.append({_plain_key(pair.group(1)): _scalar_or_flow(rest, line)})
    return values


def _block_mapping(items: list[tuple[int, str]], lines: dict, key: str, first: int) -> dict:
    values: dict[str, Any] = {}
    for offset, text in items:
        pair = _KEY.match(text)
        if pair is None or not text[pair.end():]:
            raise _Unsure
        name = _plain_key(pair.group(1))
        if name in values:
            raise _Unsure
        lines[(key, name)] = first + offset
        values[name] = _scalar_or_flow(text[pair.end():], first + offset)
    return values


def _inline_value(text: str, lines: dict, key: str, line: int) -> Any:
    """A top-level value written after its key; the items of a flow list or mapping get its line."""
    value = _scalar_or_flow(text, line)
    if isinstance(value, list):
        for index in range(len(value)):
            lines[(key, index)] = line
    elif isinstance(value, dict):
        for name in value:
            lines[(key, name)] = line
    return value


def _scalar_or_flow(text: str, line: int) -> Any:
    text = text.rstrip(" ")
    first = text[:1]
    if first == "[":
        return _flow_list(text)
    if first == "{":
        return _flow_mapping(text)
    if first == '"':
        return _double_quoted(text)
    if first == "'":
        return _single_quoted(text)
    return _plain(text)


def _flow_list(text: str) -> list:
    if not text.endswith("]"):
        raise _Unsure
    inner = text[1:-1]
    if not inner.strip(" "):
        return []
    if _SIMPLE_ITEMS.fullmatch(inner):  # the usual list of names: no item needs the checks of _flow_item
        return [_resolved(item.strip(" ")) for item in inner.split(",")]
    return [_flow_item(item) for item in inner.split(",")]


def _flow_mapping(text: str) -> dict:
    if not text.endswith("}"):
        raise _Unsure
    inner = text[1:-1]
    values: dict[str, Any] = {}
    if not inner.strip(" "):
        return values
    for item in inner.split(","):
        name, sep, value = item.strip(" ").partition(": ")
        if not sep or not _KEY.fullmatch(name + ": "):
            raise _Unsure
        name = _plain_key(name)
        if name in values:
            raise _Unsure
        values[name] = _flow_item(value, colons=True)
    return values


def _flow_item(text: str, *, colons: bool = False) -> Any:
    """One plain item of a flow collection; ``colons`` allows a ':' that no space or end follows (``repo@c:path``)."""
    text = text.strip(" ")
    if not text or _FLOW_UNSAFE.intersection(text) or (text[0] in _INDICATORS and not _DASHED.match(text)) \
            or "  " in text or " #" in text:
        raise _Unsure
    if ":" in text and (not colons or ": " in text or text.endswith(":")):
        raise _Unsure
    return _plain(text)


def _double_quoted(text: str) -> str:
    quoted = _DOUBLE_QUOTED.fullmatch(text)
    if quoted is None:
        raise _Unsure  # another escape, or something after the closing quote (a comment ...)
    inner = quoted.group(1)
    return _ESCAPE.sub(r"\1", inner) if "\\" in inner else inner


def _single_quoted(text: str) -> str:
    inner = text[1:-1]
    if len(text) < 2 or not text.endswith("'") or "'" in inner.replace("''", "") or "\\" in inner:
        raise _Unsure
    return inner.replace("''", "'")


def _plain(text: str) -> Any:
    if not text or (text[0] in _INDICATORS and not _DASHED.match(text)) or ": " in text or text.endswith(":") \
            or " #" in text or "  " in text or "\\" in text:
        raise _Unsure  # (a comment; two spaces or a backslash PyYAML keeps, but rare enough to leave to it)
    return _resolved(text)


def _plain_key(text: str) -> str:
    value = _resolved(text)
    if not isinstance(value, str):
        raise _Unsure  # `yes:` or `null:` would be a bool or None key
    return value


_STARTS: frozenset[str] | None = None
#: Plain scalars a resolver looked at, and what it made of them (names and tags repeat across entries).
_SEEN: dict[str, Any] = {}
_SEEN_MAX = 20_000


def _resolved(text: str) -> Any:
    """A plain scalar as PyYAML's safe loader makes it (str, int, float, bool, None, date ...)."""
    global _STARTS
    if _STARTS is None:
        _STARTS = resolved_starts()
    if text[0] not in _STARTS:  # most words: no resolver looks at them
        return text
    value = _SEEN.get(text, _SEEN)
    if value is _SEEN:
        value = resolve_plain(text)  # (str, int, float, bool, None or a date: nothing a caller may change)
        if len(_SEEN) < _SEEN_MAX:
            _SEEN[text] = value
    if value is NOT_A_SCALAR:
        raise _Unsure
    return value
