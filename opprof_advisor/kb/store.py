"""The KB index: open it (built first when a KB file changed, or the file is missing or damaged) or build it.

The markdown is the source of truth: ``manifest`` tells whether the index still describes it, ``index_build``
writes it (``index_sync`` brings its rows up to date, schema in ``migrations``), ``rows`` reads it. Files are
keyed on their path and content hash and only changed files are parsed again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from opprof_advisor.core import paths
from opprof_advisor.core.errors import KnowledgeBaseError, StoreNotWritable
from opprof_advisor.core.i18n import _
from opprof_advisor.core.sqlite_files import file_lock
from opprof_advisor.kb.index_build import _write_in_place, build, write_index
from opprof_advisor.kb.manifest import FRESH, SAME_CONTENT, _freshness, _open_snapshot, _warn, folders_unchanged, kb_sources, scan_files
from opprof_advisor.kb.rows import Index

#: Says on stderr (cli/app.py shows it on a terminal) that the index is being built, the one slow open.
log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Opening and building
# ---------------------------------------------------------------------------------------------


def open_index(db_path: Path | str | None = None, *, kb_dirs: Sequence[Path | str] | None = None) -> Index:
    """Open the index, (re)building it first when a KB file changed or the file is missing or damaged.

    ``kb_dirs`` replaces the default sources (built-in KB, then the user KB folder). When the index
    is out of date but cannot be rebuilt there (read-only or full disk), the old one is used as it
    is, with a warning.
    """
    db = Path(db_path) if db_path else paths.default_db_path()
    sources = kb_sources(kb_dirs)
    scanned_at = time.time_ns()
    snapshot = _open_snapshot(db)
    first = snapshot is None
    if snapshot is not None and folders_unchanged(snapshot[1], sources):
        return Index(db, *snapshot)
    folders: list[list] = []
    files = scan_files(sources, folders)
    if snapshot is not None:
        state = _freshness(snapshot[1], sources, files, snapshot[0])
        if state == SAME_CONTENT:
            snapshot[0].close()  # its read transaction would hold off the update
            _refresh_signature(db, sources, files, scanned_at, folders)
            snapshot = _open_snapshot(db)
            if snapshot is not None:
                return Index(db, *snapshot)
        elif state == FRESH:
            return Index(db, *snapshot)
        else:
            snapshot[0].close()
    if first:
        log.info(_("building the knowledge-base index at %s (once: a few seconds)"), db)
    else:
        log.info(_("the knowledge base changed: updating its index at %s"), db)
    try:
        return build_index(db, kb_dirs=kb_dirs)
    except StoreNotWritable as exc:
        stale = _open_snapshot(db) or _open_snapshot(db, immutable=True)
        if stale is None:
            raise
        _warn(f"{db}: the index is out of date and cannot be rebuilt ({exc.message}); using it as it is,"
              " without the latest KB changes — make the folder writable or point ADVISOR_DB at a writable file")
        return Index(db, *stale, immutable=True)


def build_index(db_path: Path | str | None = None, *, kb_dirs: Sequence[Path | str] | None = None,
                rebuild: bool = False, in_place: bool = False) -> Index:
    """Bring the index up to date (parse only changed files); ``rebuild`` starts from an empty file,
    ``in_place`` writes into the live file in one transaction (an add or a remove) instead of a new copy."""
    return build(Path(db_path) if db_path else paths.default_db_path(), kb_sources(kb_dirs), rebuild=rebuild,
                 in_place=in_place)


def _refresh_signature(db_path: Path, sources, files, scanned_at: int, folders: list[list]) -> None:
    """Record the new file stats so the next open need not hash the files; skipped when busy or read-only.

    Written in place (one transaction: only the file stats and signature change), or as a new copy
    when readers hold the file.
    """
    lock = file_lock(db_path)
    if not lock.try_acquire():
        return
    try:
        if not _write_in_place(db_path, sources, files, scanned_at, folders):
            write_index(db_path, sources, files, scanned_at, base=db_path, folders=folders)
    except KnowledgeBaseError:
        pass  # an optimisation only: the next open hashes the files again
    finally:
        lock.release()
