"""`advisor remove ID`: take an entry you added out of your KB folder and the index, all or nothing.

Only the user KB (``$ADVISOR_HOME/kb``, where `advisor add` copies entries) is ever written: the
shipped knowledge base is read-only, so removing one of its entries is refused with one line. The
removal runs under the index lock that `advisor add` takes, so an add and a remove of the same
folder never interleave; the index is rebuilt before the lock is released, and when that fails
(full disk, read-only index) the entry file is put back, so the KB and its index never disagree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from opprof_advisor.core import paths
from opprof_advisor.core.errors import EntryReadOnly, KnowledgeBaseError
from opprof_advisor.core.i18n import M_, N_
from opprof_advisor.core.sqlite_files import file_lock, make_parent
from opprof_advisor.kb.add import served_index
from opprof_advisor.kb.index_build import check_index_target
from opprof_advisor.kb import store
from opprof_advisor.kb.user_files import _read_copies, _restore_copies

#: The JSON document of `advisor remove --format json`.
REMOVED_SCHEMA = "opprof-advisor/kb-remove/1"


@dataclass(frozen=True)
class Removed:
    """What a removal did: the entry's id and kind, the files taken out, whether a shipped entry is back."""

    id: str
    kind: str
    files: tuple[str, ...]
    builtin_back: bool

    def to_json(self) -> dict[str, Any]:
        return {"schema": REMOVED_SCHEMA, "removed": self.id, "kind": self.kind, "files": list(self.files),
                "builtin_back": self.builtin_back}


def remove_entry(entry_id: str, *, db_path: Path | str | None = None, kb_dirs: Sequence[Path | str] | None = None,
                 user_dir: Path | None = None) -> Removed:
    """Remove the user entry ``entry_id``; raise EntryNotFound (with close ids) or EntryReadOnly (a shipped one)."""
    db = Path(db_path) if db_path else paths.default_db_path()
    user_root = user_dir or paths.user_kb_dir()
    check_index_target(db)
    make_parent(db)
    with file_lock(db):
        index = served_index(db, kb_dirs)
        try:
            entry = index.get(entry_id)  # EntryNotFound says "did you mean ..."
        finally:
            index.close()  # its snapshot would hold off the update below
        copies = user_copies(user_root, entry_id, entry.path)
        if entry.origin != "user" or not copies:
            raise EntryReadOnly(entry_id)
        _refuse_outside(copies, user_root)
        previous = _read_copies(user_root, entry_id, copies[0])
        try:
            for path in copies:
                path.unlink()  # a link: the link, never the file it points to
            rebuilt = store.build_index(db, kb_dirs=kb_dirs, in_place=True)
            back = bool(rebuilt.existing([entry_id]))
            rebuilt.close()
        except BaseException:
            _restore_copies(previous, copies[0])
            raise
    return Removed(entry.id, entry.kind, tuple(str(p) for p in copies), back)


def user_copies(user_root: Path, entry_id: str, indexed_path: str | None) -> list[Path]:
    """The files of the user KB that hold ``entry_id``: ``<kind>s/<id>.md`` and the file the index names.

    Each is named as it is in the KB folder (its folder resolved, not the file): an entry that is a symbolic
    link stays the link, so removing it removes the link and never the file it points to.
    """
    found = {_in_folder(p) for p in user_root.glob(f"*/{entry_id}.md") if p.is_symlink() or p.is_file()}
    if indexed_path:
        indexed = _in_folder(Path(indexed_path))
        if (indexed.is_symlink() or indexed.is_file()) and indexed.is_relative_to(os.path.realpath(user_root)):
            found.add(indexed)
    return sorted(found)


def _in_folder(path: Path) -> Path:
    """``path`` with its folder resolved and its own name kept (not followed when it is a link)."""
    return Path(os.path.realpath(path.parent)) / path.name


def _refuse_outside(copies: list[Path], user_root: Path) -> None:
    """Refuse to delete an entry file that lives outside the user KB, in a kind folder linked from elsewhere."""
    root = Path(os.path.realpath(user_root))
    for path in copies:
        if not path.is_relative_to(root):
            raise KnowledgeBaseError(M_("is outside your KB folder ({root}), in a folder linked into it; advisor "
                                        "removes only what is in its own folder", root=str(root)), path=path,
                                     hint=N_("delete the file by hand if you meant to, or remove the link"))
