"""Parsing and analysing the files `advisor scan` read: one file's outcome, and many files over the CPUs.

Parsing and analysing are CPU-bound and independent per file, so a large tree is split across
forked worker processes (the sources, already read, are inherited by the fork, not sent); the
outcomes come back in file order, so the result is the one a single process would give.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from opprof_advisor.core.cann_support import SupportTable
from opprof_advisor.scan.source import FileScan, Finding
import threading
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

#: Below this many bytes of source to parse, forking costs more than it saves (~3 MB/s per CPU).
PARALLEL_FROM_BYTES = 1_000_000
#: ``ADVISOR_SCAN_JOBS=1`` keeps a scan in one process (any N: at most N processes).
JOBS_VARIABLE = "ADVISOR_SCAN_JOBS"
_MAX_JOBS = 8


@dataclass
class FileOutcome:
    """What one parsed file contributes to a scan."""

    findings: list[Finding] = field(default_factory=list)
    error: str | None = None  # why it could not be parsed
    amp_used: bool = False
    low_precision: bool = False
    is_entry: bool = False


def analyse_source(rel: str, source: bytes, table: SupportTable) -> FileOutcome:
    """Parse one file and analyse it; a file that does not parse gets its error, not an exception."""
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        return FileOutcome(error=f"line {exc.lineno or '?'}: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileOutcome(error=f"cannot parse: {exc.__class__.__name__}: {exc}")
    scan = FileScan(rel, tree, table)
    scan.scan_api()
    scan.scan_patterns()
    swiglu_lines = {line for (op, line) in scan.findings if op == "hand-written SwiGLU"}
    findings = [
        finding for (op, line), finding in sorted(scan.findings.items(), key=lambda item: (item[0][1], item[0][0]))
        if not (op == "linear+activation" and line in swiglu_lines)  # silu(w1(x)) * w3(x) is reported once, as SwiGLU
    ]
    return FileOutcome(findings=findings, amp_used=scan.amp_used, low_precision=scan.low_precision,
                       is_entry=scan.is_entry)


def analyse_sources(sources: list[tuple[str, bytes]], table: SupportTable, jobs: int | None = None) -> list[FileOutcome]:
    """The outcome of each ``(relative path, source)``, in order; over several processes when worth it."""
    workers = min(jobs or default_jobs(), len(sources))
    if workers < 2 or sum(len(source) for _, source in sources) < PARALLEL_FROM_BYTES or not _can_fork():
        return [analyse_source(rel, source, table) for rel, source in sources]
    return _analyse_in_workers(sources, table, workers)


def default_jobs() -> int:
    """``ADVISOR_SCAN_JOBS`` when set, else the CPUs this process may run on that others leave idle
    (at most 8; at least 1).

    Like ``make --load-average``: on a machine whose CPUs are busy with other work, more processes
    only add the cost of forking (measured: 15 % slower with a load of 10 on 2 CPUs).
    """
    text = os.environ.get(JOBS_VARIABLE, "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = os.cpu_count() or 1
    try:
        idle = int(available - os.getloadavg()[0] + 1)  # this scan's own process counts as one
    except (AttributeError, OSError):
        idle = available
    return max(1, min(available, idle, _MAX_JOBS))


def _can_fork() -> bool:
    """Whether forking is available and safe: not with other threads running (an MCP server's, say),
    whose locks the child would inherit held."""
    return "fork" in multiprocessing.get_all_start_methods() and not _other_threads_running()


def _other_threads_running() -> bool:
    return threading.active_count() > 1


# The work of each forked worker, set before the fork so the sources are inherited, never pickled.
_SHARES: list[list[int]] = []
_SOURCES: list[tuple[str, bytes]] = []
_TABLE: list[SupportTable] = []


def _analyse_share(share: int) -> list[tuple[int, FileOutcome]]:
    table = _TABLE[0]
    return [(index, analyse_source(*_SOURCES[index], table)) for index in _SHARES[share]]


def _analyse_in_workers(sources: list[tuple[str, bytes]], table: SupportTable, workers: int) -> list[FileOutcome]:
    """This process analyses one share while ``workers - 1`` forked processes analyse the others."""
    _SHARES[:] = split_by_size([len(source) for _, source in sources], workers)
    _SOURCES[:] = sources
    _TABLE[:] = [table]
    outcomes: list[FileOutcome | None] = [None] * len(sources)
    try:
        with ProcessPoolExecutor(workers - 1, mp_context=multiprocessing.get_context("fork")) as pool:
            pending = [pool.submit(_analyse_share, share) for share in range(1, workers)]
            for index, outcome in _analyse_share(0):
                outcomes[index] = outcome
            for future in pending:
                for index, outcome in future.result():
                    outcomes[index] = outcome
    finally:
        _SHARES.clear()
        _SOURCES.clear()
        _TABLE.clear()
    return outcomes  # type: ignore[return-value]  # every index is in exactly one share


def split_by_size(sizes: list[int], shares: int) -> list[list[int]]:
    """Indexes of ``sizes`` in ``shares`` groups of about equal total size (largest first, each to the
    lightest group), each group in index order."""
    groups: list[list[int]] = [[] for _ in range(shares)]
    totals = [0] * shares
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        lightest = totals.index(min(totals))
        groups[lightest].append(index)
        totals[lightest] += sizes[index]
    return [sorted(group) for group in groups]
