"""One function per command: arguments in, one JSON document out (ARCHITECTURE.md, ``commands/``).

The only place that sequences the stages (read a profile, open the knowledge base, advise, search ...). The CLI
(cli/) parses arguments, calls these and renders the document; the MCP server (mcp_server.py) calls the same
functions and returns the document to the agent. Nothing here prints: what a user should be told besides the
document (a KB file that could not be indexed, outcomes that could not be read) goes to ``warn``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable
from opprof_advisor.core.errors import AdvisorError, UnknownFormat
from opprof_advisor.core.i18n import M_
from opprof_advisor.profiles import build_profile
from opprof_advisor.readers.base import KernelTable, RawProfile
from opprof_advisor.readers.memory_files import add_memory
from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.profiles import load_profile
from opprof_advisor.advice.advisor import open_advisor
from opprof_advisor.advice.serving import serving_document
from opprof_advisor.core.vocabulary import check_stack
from opprof_advisor.readers.memory_files import memory_sources
from opprof_advisor.readers.serving import read_serving, serving_files, span_sources
from opprof_advisor.profiles import read_profile
from opprof_advisor.kb.search import run_search
from opprof_advisor.kb.search import search_to_json
from opprof_advisor.kb.stats import entry_to_json
from opprof_advisor.loop.compare import compare_profiles
from opprof_advisor.loop.compare import comparison_to_json
from opprof_advisor.profiles import read_side
from opprof_advisor.profile.roofline import roofline_document
from opprof_advisor.scan import rank_advice
from opprof_advisor.scan import scan_path
from opprof_advisor.scan import scan_to_json
from opprof_advisor.render.text.kb import problems_warning
from opprof_advisor.kb.store import open_index

Warn = Callable[[str], None]


def _ignore(_message: str) -> None:
    return None


def profile(path: str | Path, *, top: int = 20, peaks: str | Path | None = None, progress: Any = None,
            executor: Any = None) -> dict[str, Any]:
    """The ``profile/1`` document of ``advisor profile PATH --format json`` (``top`` op types)."""

    _raw, loaded = load_profile(Path(path), progress, peaks=Path(peaks) if peaks else None, executor=executor)
    document = profile_to_json(loaded)
    document["op_types"] = document["op_types"][:max(top, 1)]
    return document


def suggest(profile: str | Path, *, top: int = 5, model: str | None = None, kind: str | None = None,
            stack: str | None = None, explain: bool = False, db: str | Path | None = None, progress: Any = None,
            executor: Any = None, warn: Warn = _ignore) -> dict[str, Any]:
    """The ``suggest/2`` document of ``advisor suggest PATH --format json``; for an ms_service_profiler output, whose
    findings are the serving ones, its ``serving/1`` document, and for memory tables alone their ``memory/1``."""
    check_stack(stack)  # before reading: a serving or memory profile would not look at it
    try:
        return _suggest(profile, top=top, model=model, kind=kind, stack=stack, explain=explain, db=db,
                        progress=progress, executor=executor, warn=warn)
    except UnknownFormat:
        path = Path(profile)
        if path.is_dir() and (serving_files(path) or span_sources(path)):
            return serving(path, db=db, warn=warn)
        if path.is_dir() and memory_sources(path):
            return memory(path, db=db, progress=progress, executor=executor, warn=warn)
        raise


#: The document kinds ``suggest`` returns and the formats each is written in.
SUGGEST_FORMATS = {"suggest": ("table", "json", "markdown", "html", "csv", "xlsx"), "serving": ("table", "json", "html"),
                   "memory": ("table", "json", "html")}


def _suggest(profile: str | Path, *, top: int = 5, model: str | None = None, kind: str | None = None,
             stack: str | None = None, explain: bool = False, db: str | Path | None = None, progress: Any = None,
             executor: Any = None, warn: Warn = _ignore) -> dict[str, Any]:
    """The ``suggest/2`` document of a kernel profile."""
    parsed = read_profile(Path(profile), progress, executor=executor)
    advisor = open_advisor(Path(db) if db else None)
    for warning in advisor.warnings:
        warn(warning)  # a Message: the CLI says it in English where stderr cannot show Chinese
    return advisor.advise(parsed, top=max(top, 1), model=model, kind=kind, stack=stack, explain=explain)


def memory(path: str | Path, *, db: str | Path | None = None, progress: Any = None, executor: Any = None,
           warn: Warn = _ignore) -> dict[str, Any]:
    """The ``memory/1`` document of ``advisor memory PATH``: the memory peak, its gap and holders, and each memory
    finding with what it can save and its remedies (the memory section of the suggest document)."""
    try:
        document = _suggest(path, db=db, progress=progress, executor=executor, warn=warn)
    except AdvisorError:
        extra: dict[str, Any] = {}
        add_memory(extra, Path(path))  # a folder of memory tables alone (no kernel table): its memory is judged
        if not extra.get("memory"):
            raise
        raw = RawProfile(path=str(path), format="memory", kernels=KernelTable(), extra=extra)
        advisor = open_advisor(Path(db) if db else None)
        document = advisor.advise(build_profile(raw))
    section = document.get("memory")
    notes = list((document["profile_document"].get("memory") or {}).get("notes") or [])
    if section is None:
        notes.append(M_("cannot judge memory: the profile holds no memory data (collect with the torch_npu profiler's "
                        "profile_memory=True, or msprof --task-memory=on / --sys-hardware-mem=on)"))
    return {"schema": MEMORY_SCHEMA, "path": str(path), **(section or {"findings": []}), "notes": notes}


def serving(path: str | Path, *, db: str | Path | None = None, warn: Warn = _ignore) -> dict[str, Any]:
    """The ``serving/1`` document of ``advisor serving PATH``: TTFT, TPOT, batches, KV cache, and the findings."""
    data = read_serving(Path(path))
    advisor = open_advisor(Path(db) if db else None)
    for warning in advisor.warnings:
        warn(warning)  # a Message: the CLI says it in English where stderr cannot show Chinese
    return serving_document(data, str(path), advisor.entries, advisor.matcher)


#: The document of ``advisor memory PATH --format json``.
MEMORY_SCHEMA = "opprof-advisor/memory/1"


def search(query: str, *, top: int = 10, kind: str | None = None, operator: str | None = None,
           db: str | Path | None = None, warn: Warn = _ignore) -> dict[str, Any]:
    """The ``search/1`` document of ``advisor search QUERY --format json``."""
    index = _index(db, warn)
    return search_to_json(run_search(index, query, kind=kind, operator=operator, top=max(top, 1)))


def show(entry_id: str, *, db: str | Path | None = None, warn: Warn = _ignore) -> dict[str, Any]:
    """The ``entry/1`` document of ``advisor show ID --format json``."""
    return entry_to_json(_index(db, warn).get(entry_id.strip()))


def compare(before: str | Path, after: str | Path) -> dict[str, Any]:
    """The ``compare/1`` document of ``advisor compare BEFORE AFTER --format json`` (records no outcome)."""

    return comparison_to_json(compare_profiles(read_side(Path(before), "BEFORE"), read_side(Path(after), "AFTER")))


def roofline(path: str | Path, *, peaks: str | Path | None = None, progress: Any = None) -> dict[str, Any]:
    """The ``roofline/1`` document of ``advisor roofline PATH --format json``."""

    _raw, loaded = load_profile(Path(path), progress, peaks=Path(peaks) if peaks else None)
    return roofline_document(loaded)


def scan(path: str | Path, *, top: int = 5, exclude: list[str] | tuple[str, ...] | None = None,
         db: str | Path | None = None) -> dict[str, Any]:
    """The ``scan/1`` document of ``advisor scan PATH --format json``."""
    result = scan_path(Path(path), tuple(exclude or ()))
    suggestions, notes = rank_advice(result, top=top, db_path=Path(db) if db else None) if top else ([], [])
    result.notes.extend(notes)
    return scan_to_json(result, suggestions)


def _index(db: str | Path | None, warn: Warn):
    """The KB index (built or refreshed when needed); the files it could not index said through ``warn``."""

    index = open_index(Path(db) if db else None)
    warning = problems_warning(index.problems)
    if warning:
        warn(warning)
    return index
