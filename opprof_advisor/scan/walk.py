"""The files `advisor scan` reads: a loop over the tree (never recursion), links followed once, exclusions, skips counted."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from opprof_advisor.core.errors import ScanError
from opprof_advisor.core.i18n import M_, N_

#: Folders never descended into (version control, caches, build output, dependencies).
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", "build", "dist", ".venv", "venv", ".tox", ".nox",
    ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "site-packages",
})


CUDA_SUFFIXES = (".cu", ".cuh")


#: At most this many exclude patterns, each of at most MAX_EXCLUDE_CHARS characters: an argument is bounded, and a
#: walk tests each path against all of them at once (``exclusions``), so they cost it next to nothing.
MAX_EXCLUDES = 1000
MAX_EXCLUDE_CHARS = 4096
#: ... and at most this many characters in all: compiling the globs into one expression costs what they hold.
MAX_EXCLUDE_TOTAL = 64 * 1024
#: The characters that make a pattern a glob; any other pattern is a name or a relative path, compared as it is.
_WILDCARDS = re.compile(r"[*?\[]")


def check_excludes(patterns: tuple[str, ...] | list[str]) -> None:
    """ScanError when there are more than MAX_EXCLUDES patterns or one is longer than MAX_EXCLUDE_CHARS."""
    if len(patterns) > MAX_EXCLUDES:
        given, limit = format(len(patterns), ","), format(MAX_EXCLUDES, ",")
        raise ScanError(M_("{n} exclude patterns: at most {limit} are taken", n=given, limit=limit),
                        hint=N_("merge them into fewer globs, such as 'tests/*' or '*_test.py'"))
    longest = max(patterns, key=len, default="")
    if len(longest) > MAX_EXCLUDE_CHARS:
        given, limit = format(len(longest), ","), format(MAX_EXCLUDE_CHARS, ",")
        raise ScanError(M_("an exclude pattern has {n} characters: at most {limit} are taken", n=given, limit=limit),
                        hint=N_("give a shorter glob (a name, or a relative path with * and ?)"))
    total = sum(map(len, patterns))
    if total > MAX_EXCLUDE_TOTAL:
        given, limit = format(total, ","), format(MAX_EXCLUDE_TOTAL, ",")
        raise ScanError(M_("the exclude patterns have {n} characters in all: at most {limit} are taken", n=given,
                           limit=limit), hint=N_("merge them into fewer globs, such as 'tests/*' or '*_test.py'"))


def exclusions(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """A test of one relative path or name against every pattern at once, as ``fnmatch.fnmatch`` would answer for
    any of them: the plain ones in a set, the globs as one compiled expression (built once per walk)."""
    patterns = tuple(os.path.normcase(pattern) for pattern in patterns)  # (as fnmatch.fnmatch compares)
    plain = {pattern for pattern in patterns if not _WILDCARDS.search(pattern)}
    globs = [pattern for pattern in dict.fromkeys(patterns) if pattern not in plain]
    any_glob = re.compile("|".join(fnmatch.translate(pattern) for pattern in globs)).match if globs else None

    def excluded(text: str) -> bool:
        text = os.path.normcase(text)
        return text in plain or (any_glob is not None and any_glob(text) is not None)

    return excluded


@dataclass
class Walk:
    root_real: str
    exclude: tuple[str, ...]
    python: list[tuple[str, str]] = field(default_factory=list)  # (relative path, real path)
    cuda: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    seen_dirs: set[str] = field(default_factory=set)
    seen_files: set[str] = field(default_factory=set)
    # Symlinks are followed after the real tree, so a file is reported under its real path.
    deferred: list[tuple[os.DirEntry, str]] = field(default_factory=list)

    following_links: bool = False
    excluded: Callable[[str], bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.excluded = exclusions(self.exclude)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _inside(path_real: str, root_real: str) -> bool:
    return path_real == root_real or path_real.startswith(root_real.rstrip(os.sep) + os.sep)


def _excluded(rel: str, name: str, walk: Walk) -> bool:
    return bool(walk.exclude) and (walk.excluded(rel) or walk.excluded(name) or walk.excluded(rel + "/"))


def _walk_dir(walk: Walk, dir_real: str, rel_dir: str) -> None:
    """Visit a folder and everything below it, depth first in name order.

    A loop over a stack of listings, not recursion: a tree 1,000 folders deep is a valid input.
    """
    pending = [iter(_list_dir(walk, dir_real, rel_dir))]
    while pending:
        item = next(pending[-1], None)
        if item is None:
            pending.pop()
            continue
        below = _visit_entry(walk, *item)
        if below is not None:
            pending.append(iter(_list_dir(walk, *below)))


def _list_dir(walk: Walk, dir_real: str, rel_dir: str) -> list[tuple[os.DirEntry, str]]:
    """The entries of one folder to visit, with their relative paths (none for a loop or a virtualenv)."""
    if dir_real in walk.seen_dirs:
        walk.skip("symlinked folders already visited (loops)")
        return []
    walk.seen_dirs.add(dir_real)
    try:
        with os.scandir(dir_real) as entries:
            listing = sorted(entries, key=lambda e: e.name)
    except OSError as exc:
        walk.failed.append((rel_dir or ".", f"cannot list folder: {exc.strerror or exc}"))
        return []
    if rel_dir and any(e.name == "pyvenv.cfg" for e in listing):
        walk.skip("virtual environments")
        return []
    return [(entry, f"{rel_dir}/{entry.name}" if rel_dir else entry.name) for entry in listing]


def _visit_entry(walk: Walk, entry: os.DirEntry, rel: str) -> tuple[str, str] | None:
    """Record a file; for a folder to descend into, return its (real path, relative path)."""
    name = entry.name
    if _excluded(rel, name, walk):
        walk.skip("paths matching --exclude")
        return None
    try:
        is_link = entry.is_symlink()
        is_dir = entry.is_dir()
        is_file = not is_dir and entry.is_file()
    except OSError:
        walk.skip("broken or looping symlinks")
        return None
    if is_link and not walk.following_links:
        walk.deferred.append((entry, rel))
        return None
    real = os.path.realpath(entry.path) if is_link else entry.path
    if is_link and not _inside(real, walk.root_real):
        walk.skip("symlinks pointing outside PATH")
        return None
    if is_dir:
        if name in SKIP_DIRS or name.endswith(".egg-info"):
            walk.skip(f"{name}/ folders" if name in SKIP_DIRS else "*.egg-info folders")
            return None
        return real, rel
    if not is_file:
        if is_link:
            walk.skip("broken or looping symlinks")
        return None
    _add_file(walk, name, rel, real)
    return None


def _add_file(walk: Walk, name: str, rel: str, real: str) -> None:
    if name.endswith(".py"):
        bucket = walk.python
    elif name.endswith(CUDA_SUFFIXES):
        bucket = walk.cuda
    else:
        return
    if real in walk.seen_files:
        walk.skip("files reached twice through symlinks")
        return
    walk.seen_files.add(real)
    bucket.append((rel, real))


def collect_files(root: Path, exclude: tuple[str, ...] = ()) -> Walk:
    """List the Python and CUDA files under ``root`` (a folder), honouring the skip rules."""
    root_real = os.path.realpath(root)
    walk = Walk(root_real=root_real, exclude=tuple(exclude))
    _walk_dir(walk, root_real, "")
    walk.following_links = True
    while walk.deferred:  # following a link may defer more links below it
        pending, walk.deferred = walk.deferred, []
        for entry, rel in pending:
            below = _visit_entry(walk, entry, rel)
            if below is not None:
                _walk_dir(walk, *below)
    return walk
