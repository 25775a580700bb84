"""`advisor add FILE.md`: validate an entry, copy it atomically into the user KB folder and index it in place.

The add runs under the index lock (as a build and `advisor remove`); a copy that cannot be indexed
is taken back, so the KB folder and its index never disagree. On a big KB the index is updated by
listing only the folders whose mtime moved (index_sync.sync_moved_folders).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from opprof_advisor.core import paths
from opprof_advisor.core.errors import EntryExists, EntryValidationError
from opprof_advisor.core.sqlite_files import file_lock, make_parent
from opprof_advisor.kb.manifest import STALE, _freshness, _open_snapshot, folders_unchanged, kb_sources, scan_files
from opprof_advisor.kb.rows import Index
from opprof_advisor.kb.store import build_index
from opprof_advisor.kb import check_related, entry_too_big, load_entry
from opprof_advisor.kb.index_build import check_index_target
from opprof_advisor.kb.user_files import (
    _copy_atomically, _read_copies, _remove_other_copies, _restore_copies, check_entry_file,
)

if TYPE_CHECKING:
    from opprof_advisor.core.models import Entry

def add_entry_file(path: Path | str, replace: bool = False, *, db_path: Path | str | None = None,
                   kb_dirs: Sequence[Path | str] | None = None, user_dir: Path | None = None) -> Entry:
    """Validate a markdown entry, copy it atomically into the user KB folder and index it.

    Raises EntryValidationError (every problem, nothing written) or EntryExists (unless ``replace``).
    The copy is ``<user kb>/<kind>s/<id>.md``; the id may differ from the source file's name.
    """
    entry, index = add_entry(path, replace, db_path=db_path, kb_dirs=kb_dirs, user_dir=user_dir)
    index.close()
    return entry


def add_entry(path: Path | str, replace: bool = False, *, db_path: Path | str | None = None,
              kb_dirs: Sequence[Path | str] | None = None, user_dir: Path | None = None) -> tuple[Entry, Index]:
    """``add_entry_file``, also returning the index as the add left it (close it when done)."""
    source = Path(path)
    check_entry_file(source)
    too_big = entry_too_big(source, source.stat().st_size if source.is_file() else 0)
    if too_big:
        raise EntryValidationError([too_big])
    entry = load_entry(source, origin="user", require_stem_id=False)
    db = Path(db_path) if db_path else paths.default_db_path()
    user_root = user_dir or paths.user_kb_dir()
    target = user_root / f"{entry.kind}s" / f"{entry.id}.md"

    check_index_target(db)
    make_parent(db)
    with file_lock(db):
        index = served_index(db, kb_dirs)
        ids = set(index.existing([entry.id, *entry.related]))  # every id only when a related one is missing (hints)
        if not set(entry.related) <= ids | {entry.id}:
            ids = set(index.ids())
        index.close()  # its snapshot would hold off the update below
        problems = check_related([entry], ids)
        if problems:
            raise EntryValidationError(problems)
        if entry.id in ids and not replace:
            raise EntryExists(f"an entry with id {entry.id!r} already exists", path=source,
                              hint="use --replace to overwrite it, or choose another id")
        # All or nothing: an entry that cannot be indexed (full disk ...) does not stay in the KB
        # folder, so the next command does not trip over a half-done add.
        previous = _read_copies(user_root, entry.id, target)
        try:
            _copy_atomically(source, target)
            _remove_other_copies(user_root, entry.id, keep=target)
            index = build_index(db, kb_dirs=kb_dirs, in_place=True)  # every file's stats compared
        except BaseException:
            _restore_copies(previous, target)
            raise
    entry.path = str(target)
    return entry, index


def served_index(db: Path, kb_dirs: Sequence[Path | str] | None) -> Index:
    """The index as it holds the KB's content now, updated in place only when a file's content changed.

    Only its ids are needed (is the new id taken, do its related ids exist): stats that moved
    without a change of content are left for the update that follows the copy to record.
    """
    sources = kb_sources(kb_dirs)
    snapshot = _open_snapshot(db)
    if snapshot is not None:
        if folders_unchanged(snapshot[1], sources) or _freshness(snapshot[1], sources, scan_files(sources),
                                                                snapshot[0]) != STALE:
            return Index(db, *snapshot)
        snapshot[0].close()
    return build_index(db, kb_dirs=kb_dirs, in_place=True)
