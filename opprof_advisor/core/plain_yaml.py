"""YAML that users write (KB front matter, peaks files) read without anchors and aliases.

An alias repeats a subtree without writing it out: nine nested aliases turn 300 bytes into 9^9
values ("billion laughs"), and any code that walks or prints the result runs out of memory. No
file advisor reads needs one, so the first anchor or alias is refused with its line, before
anything is composed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.core.sidefile import read_text

#: A YAML file of user settings larger than this is refused (peaks files are a few lines).
MAX_YAML_BYTES = 1024 * 1024


def _yaml():
    """PyYAML, imported where YAML is first read (most commands read none)."""
    import yaml

    return yaml


def loader_class():
    """The fastest safe loader available (libyaml's when installed)."""
    yaml = _yaml()
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def first_anchor(source: str) -> tuple[int, str] | None:
    """(0-based line, "anchor &x" / "alias *x") of the first anchor or alias in ``source``; YAML errors propagate."""
    yaml = _yaml()
    for event in yaml.parse(source, Loader=loader_class()):
        if isinstance(event, yaml.AliasEvent):
            return event.start_mark.line, f"alias *{event.anchor}"
        if getattr(event, "anchor", None):
            return event.start_mark.line, f"anchor &{event.anchor}"
    return None


def parse(text: str, path: Path, error: type[AdvisorError], hint: str) -> Any:
    """The document of YAML ``text`` read from ``path``, without anchors or aliases; ``error`` (naming the file and
    line) for an anchor or invalid YAML."""
    yaml = _yaml()
    try:
        anchor = first_anchor(text)
        if anchor is not None:
            raise error(f"YAML {anchor[1]} is not allowed: write the value out", path=path, line=anchor[0] + 1,
                        hint=hint)
        return yaml.load(text, Loader=loader_class())  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        problem = getattr(exc, "problem", None)
        raise error("not valid YAML" + (f": {problem}" if problem else ""), path=path,
                    line=line + 1 if line is not None else None, hint=hint) from None


def load_file(path: Path, error: type[AdvisorError], hint: str) -> Any:
    """The document of a small YAML file without anchors or aliases; ``error`` (naming the file and line) otherwise."""
    try:
        text = read_text(path, MAX_YAML_BYTES, encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", path=path, hint=hint) from None
    except ValueError as exc:  # SideFileError: a FIFO, a device, too large, not UTF-8
        raise error(str(exc), path=path, hint=hint) from None
    return parse(text, path, error, hint)
