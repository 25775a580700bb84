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
#: A name (``MatMul``, ``llama2-7b``, ``8.0``): a plain scalar that needs none of _plain's or _flow_item's checks.
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.+/-]*"
#: The inside of a flow list of names (``MatMul, llama2-7b, host_bound``): items _flow_item would take as they are.
_SIMPLE_ITEMS = re.compile(rf" *{_NAME}(?: *, *{_NAME})* *")
#: A key (as _KEY) and, when the rest of the line is one of the usual values, that value: (2) a name, (3) the
#: inside of a flow list of names, (4) a double-quoted string without escapes. One match reads most lines.
_PAIR = re.compile(rf'([A-Za-z_][A-Za-z0-9_]{{0,127}}):(?: +|$)'
                   rf'(?:({_NAME}) *$|\[({_SIMPLE_ITEMS.pattern})\] *$|"([^"\\]*)" *$)?')
#: A plain scalar may start with '-' when no space follows (``-10``, ``-foo``); "---" is a document marker.
_DASHED = re.compile(r"-(?![- ]|$)")  # (a lone "-" starts a block sequence entry: left to PyYAML)


class _Unsure(Exception):
    """A line this reader does not fully understand: PyYAML reads the file instead."""


def read_front_matter(source: str, first_line: int) -> tuple[dict[str, Any], dict[Any, int]] | None:
    """(data, lines) as ``kb._parse_yaml`` builds them from PyYAML, or None to let PyYAML read ``source``.

    ``lines`` maps each top-level key, and ``(key, index)`` / ``(key, subkey)`` for the items of its
    list or mapping, to its line in the file (the front matter starts at ``first_line``).
    """
    # str.isprintable is false for every character _ODD finds (controls, separators, format characters,
    # surrogates, non-characters) and ~6x faster than the search, which runs only when it is false.
    if not source.replace("\n", " ").isprintable() and _ODD.search(source):
        return None
    if _STARTS is None:
        _load_starts()
    try:
        data, lines = _read(source.split("\n"), first_line)
    except _Unsure:
        return None
    return (data, lines) if data else None  # empty front matter: PyYAML's None, which kb reports


def _read(rows: list[str], first_line: int) -> tuple[dict[str, Any], dict[Any, int]]:
    data: dict[str, Any] = {}
    lines: dict[Any, int] = {}
    number, count = 0, len(rows)
    pair_match, starts, stay_strings = _PAIR.match, _STARTS, _STAY_STRINGS
    while number < count:
        row = rows[number]
        pair = pair_match(row)
        if pair is None:
            if row.strip(" "):
                raise _Unsure
            number += 1
            continue
        # (the usual values are read here, not by _pair_value: a call less on every line of every file)
        key, name, names, quoted = pair.groups()
        if key[0] in starts and key not in stay_strings:
            key = _plain_key(key)
        if key in data:
            raise _Unsure  # PyYAML keeps the last value; kb reports the duplicate: let it see the nodes
        line = first_line + number
        lines[key] = line
        number += 1
        if name is not None:
            data[key] = name if name[0] not in starts else _resolved(name)
        elif quoted is not None:
            data[key] = quoted
        elif names is not None:
            value = data[key] = _names(names)
            for index in range(len(value)):  # the items of a flow list or mapping get the key's line
                lines[key, index] = line
        elif pair.end() == len(row):
            data[key], number = _block(rows, number, lines, key, line)
        else:
            value = data[key] = _scalar_or_flow(row[pair.end():])
            if isinstance(value, list):
                for index in range(len(value)):
                    lines[key, index] = line
            elif isinstance(value, dict):
                for subkey in value:
                    lines[key, subkey] = line
    return data, lines


def _pair_value(pair: re.Match, text: str) -> Any:
    """The value written after the key that ``pair`` (of _PAIR) found at the start of ``text``."""
    if pair.lastindex == 1:  # not one of the usual values
        rest = text[pair.end():]
        if not rest:
            raise _Unsure  # a nested block below the key
        return _scalar_or_flow(rest)
    _, name, names, quoted = pair.groups()
    if name is not None:
        return _resolved(name)
    if names is not None:
        return _names(names)
    return quoted


def _block(rows: list[str], start: int, lines: dict, key: str, line: int) -> tuple[Any, int]:
    """The value of ``key:`` (at ``line``) written on the rows from ``start`` (None, a block list or a block
    mapping), and the index after its last row.

    The block is its indented rows and `- ` rows at the key's column; the blank rows at its end belong to
    no value. Every other row must be as indented as its first (else it holds a continued scalar or a
    nested block). Read in one pass, each row as it comes: whatever is refused, the whole file is.
    """
    count = len(rows)
    if start == count:
        return None, start
    indent = len(rows[start]) - len(rows[start].lstrip(" "))
    values: list | dict | None = None
    end = after = start
    pair_match = _PAIR.match
    while end < count:
        row = rows[end]
        text = row.lstrip(" ")
        end += 1
        if not text:
            continue
        if row[0] != " " and text != "-" and not text.startswith("- "):
            return values, after  # the next key
        if len(row) - len(text) != indent:
            raise _Unsure
        after = end
        if values is None:  # the first item says which
            if not text.startswith("- ") and text != "-" and indent == 0:
                raise _Unsure
            values = [] if text.startswith("- ") or text == "-" else {}
        if type(values) is list:
            if not text.startswith("- "):
                raise _Unsure
            text = text[2:].lstrip(" ")
            lines[key, len(values)] = line + end - start
            pair = pair_match(text)
            values.append(_scalar_or_flow(text) if pair is None
                          else {_plain_key(pair.group(1)): _pair_value(pair, text)})
        else:
            pair = pair_match(text)
            if pair is None:
                raise _Unsure
            name = _plain_key(pair.group(1))
            if name in values:
                raise _Unsure
            lines[key, name] = line + end - start
            values[name] = _pair_value(pair, text)
    return values, after


def _scalar_or_flow(text: str) -> Any:
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
        return _names(inner)
    return [_flow_item(item) for item in inner.split(",")]


def _names(inner: str) -> list:
    """The items of the flow list of names ``inner`` (matched by _SIMPLE_ITEMS: no name holds a space)."""
    names = inner.replace(" ", "").split(",")
    if _STAY_STRINGS.issuperset(names):  # names seen before that stay strings: no check per item
        return names
    starts = _STARTS
    values = [name if name[0] not in starts else _resolved(name) for name in names]
    if len(_STAY_STRINGS) < _SEEN_MAX:
        _STAY_STRINGS.update(name for name, value in zip(names, values) if type(value) is str and value == name)
    return values


#: ``key: [names]`` items of a flow mapping of lists (``applies_to: {producer: [run], phase: [training]}``).
_LIST_PAIR = re.compile(r" *([A-Za-z_][A-Za-z0-9_]{0,127}): (\[[^\[\]{}]*\]) *(?:,|$)")


def _flow_mapping(text: str) -> dict:
    if not text.endswith("}"):
        raise _Unsure
    inner = text[1:-1]
    values: dict[str, Any] = {}
    if not inner.strip(" "):
        return values
    if "[" in inner:  # a mapping of flow lists; anything else with a bracket is PyYAML's
        at = 0
        while at < len(inner):
            pair = _LIST_PAIR.match(inner, at)
            if pair is None or pair.end() == at:
                raise _Unsure
            name = _plain_key(pair.group(1))
            if name in values:
                raise _Unsure
            values[name] = _flow_list(pair.group(2))
            at = pair.end()
        if inner.rstrip(" ").endswith(","):
            raise _Unsure
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
    inner = text[1:-1]
    if len(text) > 1 and text[-1] == '"' and '"' not in inner and "\\" not in inner:
        return inner  # no escape and nothing after the closing quote: what the pattern below finds, without it
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
    if text[0] not in _STARTS:
        return text
    value = _resolved(text)
    if not isinstance(value, str):
        raise _Unsure  # `yes:` or `null:` would be a bool or None key
    if len(_STAY_STRINGS) < _SEEN_MAX:
        _STAY_STRINGS.add(text)
    return value


_STARTS: frozenset[str] | None = None
#: Plain scalars a resolver looked at, and what it made of them (names and tags repeat across entries).
_SEEN: dict[str, Any] = {}
_SEEN_MAX = 20_000
#: Keys and names of flow lists that stay strings (keys, operator names, symptoms, tags and ids repeat across entries).
_STAY_STRINGS: set[str] = set()


def _load_starts() -> None:
    global _STARTS
    _STARTS = resolved_starts()


def _resolved(text: str) -> Any:
    """A plain scalar as PyYAML's safe loader makes it (str, int, float, bool, None, date ...)."""
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
