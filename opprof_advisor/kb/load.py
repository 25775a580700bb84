"""Load KB files: each parsed (``kb.entry``) and checked (``kb.checks``), with the checks across files; `advisor kb check`.

A file with problems never becomes an ``Entry``; every problem is a ``Problem`` at ``path:line``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from opprof_advisor.core import paths as kb_paths
from opprof_advisor.core.errors import EntryValidationError, Problem
from opprof_advisor.core.models import Entry
from opprof_advisor.kb.checks import check_warnings, validate_parsed
from opprof_advisor.kb.entry import build_entry, check_duplicates, check_related, find_kb_files, parse_file
from opprof_advisor.kb.stats import check_to_json
import os
import stat


def load_entry(path: Path | str, *, origin: str = "builtin", require_stem_id: bool = True) -> Entry:
    """Parse and validate one KB file; raise EntryValidationError listing every problem."""
    entry, problems = validate_file(Path(path), origin=origin, require_stem_id=require_stem_id)
    if problems or entry is None:
        raise EntryValidationError(problems)
    return entry


def load_entries(dirs: Iterable[Path | str], *, origin: str = "builtin") -> list[Entry]:
    """Load every entry under ``dirs``; raise EntryValidationError with all problems of all files."""
    entries, problems = validate_paths(dirs, origin=origin)
    if problems:
        raise EntryValidationError(problems)
    return entries


def check_paths(paths: Iterable[Path | str], *, known_ids: Iterable[str] = ()) -> list[Problem]:
    """Lint KB files and folders: per-file schema checks, duplicate ids and dangling ``related`` ids.

    ``known_ids`` are ids that exist elsewhere (e.g. the installed KB) so ``related`` may name them.
    """
    return validate_paths(paths, known_ids=known_ids)[1]


def validate_paths(
    paths: Iterable[Path | str], *, origin: str = "builtin", known_ids: Iterable[str] = ()
) -> tuple[list[Entry], list[Problem]]:
    """Validate files and folders; return the valid entries and every problem (cross-file ones too)."""
    files = find_kb_files(paths)
    entries: list[Entry] = []
    problems: list[Problem] = []
    for path in files:
        if not _exists(path):
            problems.append(Problem(path, None, "no such file or folder"))
            continue
        entry, file_problems = validate_file(path, origin=origin)
        problems.extend(file_problems)
        if entry is not None:
            entries.append(entry)
    problems.extend(check_duplicates(entries))
    problems.extend(check_related(entries, set(known_ids)))
    return entries, problems


def _exists(path: Path) -> bool:
    """False only when nothing is at ``path`` (another failure, a name too long ..., is the parse's to name)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return True


def validate_file(
    path: Path, *, origin: str = "builtin", require_stem_id: bool = True, data: bytes | None = None
) -> tuple[Entry | None, list[Problem]]:
    """Parse and validate one file (``data``: its bytes, when the caller has read them); return (entry or None,
    problems)."""
    parsed = parse_file(path, data)
    if parsed.problems:
        return None, parsed.problems
    problems = sorted(validate_parsed(parsed, require_stem_id=require_stem_id), key=lambda p: p.line or 0)
    if problems:
        return None, problems
    return build_entry(parsed, origin=origin), []


# ---------------------------------------------------------------------------------------------
# The installed knowledge base (`advisor kb check`)
# ---------------------------------------------------------------------------------------------


def is_regular(path: Path) -> bool:
    """False for a FIFO, device or socket (reading one would block for good); True when missing or unreadable."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return True  # missing or unreadable: the loader names the problem


def check_installed(paths: Iterable[Path] | None = None) -> dict[str, Any]:
    """The ``kb-check/1`` document of ``paths`` (files or folders), by default of the built-in and user KB.

    Given paths may name ids of the installed KB in ``related``. Without paths, the built-in and
    user folders are checked for duplicate ids each on its own (the user KB may override a built-in
    id on purpose, with `advisor add --replace`), and ``related`` may point from one into the other.
    """
    roots = [root for root in (kb_paths.builtin_kb_dir(), kb_paths.user_kb_dir()) if root.is_dir()]
    if paths:
        files = find_kb_files(paths)
        odd = [path for path in files if not is_regular(path)]
        files = [path for path in files if path not in odd]
        problems = [Problem(path, 1, "not a regular file (a FIFO, device or socket)") for path in odd]
        checked = {os.path.realpath(path) for path in files}  # (realpath: a link loop is no error)
        installed = {path.stem for path in find_kb_files(roots) if os.path.realpath(path) not in checked}
        problems += check_paths(files, known_ids=installed)
        return check_to_json(len(files) + len(odd), problems, check_warnings(files))
    per_root = [find_kb_files([root]) for root in roots]
    files = [path for group in per_root for path in group]
    all_ids = {path.stem for path in files}
    problems = [problem for group in per_root for problem in check_paths(group, known_ids=all_ids)]
    return check_to_json(len(files), problems, check_warnings(files))
