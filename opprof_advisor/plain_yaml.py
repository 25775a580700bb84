"""YAML that users write (KB front matter, peaks files) read without anchors and aliases.

An alias repeats a subtree without writing it out: nine nested aliases turn 300 bytes into 9^9
values ("billion laughs"), and any code that walks or prints the result runs out of memory. No
file advisor reads needs one, so the first anchor or alias is refused with its line, before
anything is composed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opprof_advisor.errors import AdvisorError

#: A YAML file of user settings larger than this is refused (peaks files are a few lines).
MAX_YAML_BYTES = 1024 * 1024


def loader_class():
    """The fastest safe loader available (libyaml's when installed)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def first_anchor(source: str) -> tuple[int, str] | None:
    """(0-based line, "anchor &x" / "alias *x") of the first anchor or alias in ``source``; YAML errors propagate."""
    import yaml

    for event in yaml.parse(source, Loader=loader_class()):
        if isinstance(event, yaml.AliasEvent):
            return event.start_mark.line, f"alias *{event.anchor}"
        if getattr(event, "anchor", None):
            return event.start_mark.line, f"anchor &{event.anchor}"
    return None


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


def construct(loader, node) -> Any:
    """``loader.construct_document(node)`` for a composed document, several times faster on strings, lists
    and mappings (what KB front matter holds); any other node (numbers, booleans, dates, merge keys,
    explicit tags) goes through the loader's own constructor, errors included."""
    import yaml

    if node.tag == _STR and isinstance(node, yaml.ScalarNode):
        return node.value
    if node.tag == _SEQ and isinstance(node, yaml.SequenceNode):
        return [construct(loader, item) for item in node.value]
    if node.tag == _MAP and isinstance(node, yaml.MappingNode) and all(
            isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge" for key, _ in node.value):
        data = {}
        for key, value in node.value:
            data[construct(loader, key)] = construct(loader, value)
        return data
    return loader.construct_object(node, deep=True)


#: What ``resolve_plain`` returns for a plain scalar that is no value of its own (a merge key ``<<``, ``=``).
NOT_A_SCALAR = object()
#: Tags of plain scalars the safe loader builds as values; it resolves none other that ``resolve_plain`` accepts.
_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp"))
_CONSTRUCTOR = None


def resolve_plain(text: str) -> Any:
    """The value of the plain (unquoted) scalar ``text`` in block context, as the safe loader builds it:
    the string itself, or None, a bool, an int, a float or a date when its implicit resolvers say so."""
    resolvers = loader_class().yaml_implicit_resolvers  # what Resolver.resolve reads for a plain scalar
    for tag, pattern in (*resolvers.get(text[0] if text else "", ()), *resolvers.get(None, ())):
        if pattern.match(text):
            if tag not in _SCALAR_TAGS:
                return NOT_A_SCALAR
            constructor = _constructor()
            # the tag's own constructor: construct_object would keep every node in its cache
            return constructor.yaml_constructors[tag](constructor, _scalar_node(tag, text))
    return text


def resolved_starts() -> frozenset[str]:
    """The first characters of the plain scalars ``resolve_plain`` may make something other than a string
    (every character when a resolver matches any start)."""
    resolvers = loader_class().yaml_implicit_resolvers
    if resolvers.get(None):
        return _EVERY_CHARACTER
    return frozenset(start for start in resolvers if start)


class _EveryCharacter(frozenset):
    def __contains__(self, item) -> bool:
        return True


_EVERY_CHARACTER = _EveryCharacter()


def _constructor():
    global _CONSTRUCTOR
    if _CONSTRUCTOR is None:
        import yaml

        _CONSTRUCTOR = yaml.constructor.SafeConstructor()
    return _CONSTRUCTOR


def _scalar_node(tag: str, text: str):
    import yaml

    return yaml.ScalarNode(tag, text)


def load_file(path: Path, error: type[AdvisorError], hint: str) -> Any:
    """The document of a small YAML file without anchors or aliases; ``error`` (naming the file and line) otherwise."""
    import yaml

    from opprof_advisor.readers.sidefile import read_text

    try:
        text = read_text(path, MAX_YAML_BYTES, encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", path=path, hint=hint) from None
    except ValueError as exc:  # SideFileError: a FIFO, a device, too large, not UTF-8
        raise error(str(exc), path=path, hint=hint) from None
    try:
        anchor = first_anchor(text)
        if anchor is not None:
            raise error(f"YAML {anchor[1]} is not allowed: write the value out", path=path, line=anchor[0] + 1,
                        hint=hint)
        return yaml.load(text, Loader=loader_class())  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise error("not valid YAML", path=path, line=line + 1 if line is not None else None, hint=hint) from None
