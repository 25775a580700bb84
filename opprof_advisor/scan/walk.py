"""The files `advisor scan` reads: a loop over the tree (never recursion), links followed once, exclusions, skips counted."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

#: Folders never descended into (version control, caches, build output, dependencies).
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", "build", "dist", ".venv", "venv", ".tox", ".nox",
    ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "site-packages",
})


CUDA_SUFFIXES = (".cu", ".cuh")


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

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _inside(path_real: str, root_real: str) -> bool:
    return path_real == root_real or path_real.startswith(root_real.rstrip(os.sep) + os.sep)


def _excluded(rel: str, name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(rel + "/", pat)
               for pat in patterns)


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
    if _excluded(rel, name, walk.exclude):
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
