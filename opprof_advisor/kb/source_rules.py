"""The rules on a KB entry's sources (kb/README.md, "Sources"): forms a user can open, pinned commits, sourced figures.

``classify_source`` says how a user opens a source (an http(s) URL, a file at a pinned commit of a repository or in a
pinned wheel, or a heading of the KB's own page ``kb/sources/README.md``) and ``source_problem`` why one cannot be
opened as written; ``unpinned_source`` tells a link that follows a moving branch (a warning, not an error);
``_check_figures`` finds each figure (a percentage, a speed-up, a time) in the prose of an entry that lists no source.
``kb.checks`` applies them with the other rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from opprof_advisor.core.errors import Problem
from opprof_advisor.kb.entry import _FENCE_OPEN, ParsedFile
from opprof_advisor.core.paths import builtin_kb_dir

#: The KB's page of sources that have no public copy (facts restated in our own words), linked as
#: ``kb/sources/README.md#<anchor>``. A README, so neither the loader nor the indexer takes it for an entry.
SOURCES_PAGE = "kb/sources/README.md"

#: The ways a source may be written, each one a user can open (kb/README.md, "Sources").
#: Anchored with \Z, not $, which also matches before a final newline.
SOURCE_FORMS: dict[str, re.Pattern[str]] = {
    "url": re.compile(r"^https?://[\w.-]+\.[a-z]{2,}(?::\d+)?(?:[/?#]\S*)?\Z", re.IGNORECASE),
    "repo": re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{7,40}:[^\s:]\S*\Z"),
    "package": re.compile(r"^[A-Za-z0-9][\w.-]*==\d[\w.+!-]*:[^\s:]\S*\Z"),
    "page": re.compile(r"^" + re.escape(SOURCES_PAGE) + r"#[\w-]+\Z"),
}

_UNPINNED = re.compile(r"^https?://(?:www\.)?(?:github|gitcode|gitee|gitlab)\.com/[^/]+/[^/]+/(?:-/)?"
                       r"(?:blob|tree|raw)/(?:master|main|develop|dev|HEAD)(?:[/?#]|$)", re.IGNORECASE)

_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)*?\1")

# A figure: a number with a unit that makes it a claim (percent, speed-up, time, throughput).
FIGURE = re.compile(
    r"(?<![\w.])[-+~]?\d+(?:[.,]\d+)?(?:\s?%|\s?×|x\b|\s?(?:ms|µs|us|fps|tokens?/s)\b)",
    re.IGNORECASE,
)


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
