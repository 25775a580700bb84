"""Rank summaries kept as Parquet under the advisor home, keyed by the rank's file fingerprints.

The key is a hash of the summary schema, the advisor version, the rank folder's absolute path and
(relative path, size, mtime_ns) of every file under it: a warm run stats the files and re-reads
nothing that did not change; a rewritten or touched file, a new file or a new advisor version maps
the rank again. One file per rank: the op-type rows are the Parquet table, the rest of the summary
(kilobytes of plain values) is JSON in the file's metadata. Writes are atomic (temporary file +
os.replace); a cache that cannot be written only costs the next run its speed.

The cache is bounded: after a run stores new summaries, the least recently used files beyond
``ADVISOR_CACHE_MB`` (default 256 MiB, tens of thousands of ranks) are removed, never those of the job
just read. Ranks inside an extracted archive are not cached: their temporary path never comes back.

A file is *ours* when its Parquet metadata names the key it is stored under; a summary is used only
if its digest (key, summary and op rows) still matches, so a damaged or edited file of ours is a miss,
mapped again and replaced. Anything else in the place of a summary (another program's Parquet, random
bytes, a folder, a link, a FIFO, a device) is never opened through, replaced or removed: the rank is
mapped again on every run and a warning names the file once.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from opprof_advisor.cluster.runtime import warn_once
from opprof_advisor.cluster.summary import OP_COLUMNS, SCHEMA
from opprof_advisor import __version__
from opprof_advisor.core.i18n import M_
from opprof_advisor.core.paths import home_dir
from opprof_advisor.readers.archive import EXTRACT_PREFIX

CACHE_DIR = "rank-summaries"
_META_KEY = b"opprof_advisor.summary"
_KEY_KEY = b"opprof_advisor.key"  # the key the file is stored under: the file is ours
_DIGEST_KEY = b"opprof_advisor.digest"  # sha256 of key, summary and op rows: the file is whole
_SCHEMA_PREFIX = "opprof-advisor/rank-summary/"  # summaries written before the key was kept are ours too
DEFAULT_LIMIT_MB = 256
#: A summary is kilobytes (a rank with thousands of op types: a few MB); a larger file is not one of ours.
MAX_FILE_BYTES = 64 * 1024 ** 2
ABSENT, OURS, FOREIGN = "absent", "ours", "foreign"


def cache_dir() -> Path:
    """``<advisor home>/rank-summaries``."""
    return home_dir() / CACHE_DIR


def fingerprint(rank: Path) -> tuple[str, int]:
    """(cache key, bytes of the rank's files) from path, size and mtime_ns of every file under ``rank``."""
    files, total = [], 0
    for folder, dirs, names in os.walk(rank):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(folder, name)
            try:
                stat = os.stat(full)
            except OSError:
                continue
            files.append((os.path.relpath(full, rank), stat.st_size, stat.st_mtime_ns))
            total += stat.st_size
    text = json.dumps([SCHEMA, __version__, os.path.abspath(rank), files])
    return hashlib.sha256(text.encode()).hexdigest(), total


def cacheable(rank: Path) -> bool:
    """False for a rank inside an extracted archive (a fresh temporary folder on every run)."""
    return not any(part.startswith(EXTRACT_PREFIX) for part in Path(os.path.abspath(rank)).parts)


def limit_bytes() -> int:
    """The cache's size limit: ``ADVISOR_CACHE_MB`` (a whole number of MiB), else 256 MiB (with a warning if set)."""
    value = os.environ.get("ADVISOR_CACHE_MB", "").strip()
    if not value:
        return DEFAULT_LIMIT_MB * 1024 ** 2
    if value.isascii() and value.isdigit() and len(value) <= 9:
        return int(value) * 1024 ** 2
    shown = value if len(value) <= 32 else value[:32] + "…"
    warn_once(M_("ADVISOR_CACHE_MB={value} is not a whole number of MiB: the cache keeps to {default} MiB",
                 value=repr(shown), default=DEFAULT_LIMIT_MB))
    return DEFAULT_LIMIT_MB * 1024 ** 2


def prune(keep: set[str]) -> int:
    """Remove the least recently used summaries beyond ``limit_bytes()``, never one in ``keep``; how many went.

    Only files of ours are removed; another program's file in the folder does not count towards the limit."""
    entries = []
    try:
        for folder in os.scandir(cache_dir()):
            if folder.is_dir(follow_symlinks=False):
                for item in os.scandir(folder.path):
                    if item.name.endswith(".parquet") and item.is_file(follow_symlinks=False):
                        info = item.stat(follow_symlinks=False)
                        entries.append((info.st_mtime_ns, info.st_size, item.path, item.name[:-len(".parquet")]))
    except OSError:
        return 0
    total, limit, removed = sum(size for _, size, _, _ in entries), limit_bytes(), 0
    for _, size, path, key in sorted(entries):
        if total <= limit:
            break
        if key in keep:
            continue
        if ownership(path, key) != OURS:
            total -= size  # not ours: left alone, and not ours to count
            continue
        try:
            os.unlink(path)
        except OSError:
            continue
        total, removed = total - size, removed + 1
    return removed


def _arrow():
    """pyarrow and pyarrow.parquet, imported on first use (a profile of one rank never needs them)."""
    import pyarrow.parquet  # binds pyarrow too

    return pyarrow, pyarrow.parquet


def _ops_schema():
    pa, _ = _arrow()

    types = {"busiest_ratio": pa.float64(), "count": pa.int64(), "time_us": pa.float64(), "p50_us": pa.float64(),
             "p95_us": pa.float64(), "max_us": pa.float64(), "wait_us": pa.float64(), "block_dim": pa.int64(),
             "dtypes": pa.list_(pa.string()), "formats": pa.list_(pa.string())}
    return pa.schema([(name, types.get(name, pa.string())) for name in OP_COLUMNS])


def summary_path(key: str) -> Path:
    """Where the summary under ``key`` is kept."""
    return cache_dir() / key[:2] / f"{key}.parquet"


def load(key: str) -> dict[str, Any] | None:
    """The cached summary under ``key``, or None (absent, damaged, stale or not ours: the rank is mapped again)."""
    path = summary_path(key)
    data = _read_regular(path)
    if not isinstance(data, bytes):
        return None
    try:
        summary = _whole_summary(key, data)
    except Exception:  # noqa: BLE001 - whatever is wrong with the file, the rank is mapped again
        return None
    if summary is None:
        return None
    try:
        os.utime(path, follow_symlinks=False)  # recently used: pruned last
    except (OSError, NotImplementedError):
        pass
    return summary


def _whole_summary(key: str, data: bytes) -> dict[str, Any] | None:
    """The summary in ``data`` if it is ours, under ``key``, of this schema and its digest matches."""
    pa, pq = _arrow()

    parquet = pq.ParquetFile(pa.BufferReader(data))  # a small file: threads and datasets cost more
    meta = parquet.schema_arrow.metadata or {}
    if meta.get(_KEY_KEY) != key.encode() or _DIGEST_KEY not in meta or _META_KEY not in meta:
        return None
    table = parquet.read(use_threads=False)
    if not table.schema.remove_metadata().equals(_ops_schema()):
        return None
    rows = table.to_pylist()
    if meta[_DIGEST_KEY] != _digest(key, meta[_META_KEY], rows).encode():
        return None
    summary = json.loads(meta[_META_KEY])
    if not isinstance(summary, dict) or summary.get("schema") != SCHEMA or summary.get("ops") is not None:
        return None
    summary["ops"] = rows
    return summary


def _digest(key: str, meta: bytes, rows: list[dict[str, Any]]) -> str:
    text = json.dumps(rows, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(b"\0".join((key.encode(), meta, text.encode()))).hexdigest()


def ownership(path: Path | str, key: str) -> str:
    """ABSENT, OURS (a summary advisor wrote under ``key``, whole or not) or FOREIGN (anything else there)."""
    data = _read_regular(path)
    if not isinstance(data, bytes):
        return data
    pa, pq = _arrow()

    try:
        meta = pq.read_metadata(pa.BufferReader(data)).metadata or {}
        if _KEY_KEY in meta:
            return OURS if meta[_KEY_KEY] == key.encode() else FOREIGN
        legacy = json.loads(meta[_META_KEY])  # written before the key was kept: its schema says it is ours
        return OURS if isinstance(legacy, dict) and str(legacy.get("schema", "")).startswith(_SCHEMA_PREFIX) \
            else FOREIGN
    except Exception:  # noqa: BLE001 - not Parquet, no metadata of ours, bad JSON ...
        return FOREIGN


def _read_regular(path: Path | str) -> bytes | str:
    """The bytes of the regular file at ``path``, or ABSENT, or FOREIGN (a link, a folder, a FIFO, a device, a file
    too large or unreadable): never follows a link, never opens what is not a regular file (a FIFO would block)."""
    try:
        before = os.lstat(path)
    except (OSError, ValueError):  # nothing there, or a folder on the way that is not one (a loop, a file ...)
        return ABSENT  # writing there fails too, with a warning
    if not stat.S_ISREG(before.st_mode) or before.st_size > MAX_FILE_BYTES:
        return FOREIGN
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                         | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return FOREIGN
    try:
        now = os.fstat(handle)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            return FOREIGN  # replaced between the two looks
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(handle, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return FOREIGN
    finally:
        os.close(handle)
    return b"".join(chunks) if size <= MAX_FILE_BYTES else FOREIGN


def store(key: str, summary: dict[str, Any]) -> bool:
    """Keep ``summary`` under ``key`` (atomic); a failure warns once and is otherwise ignored.

    A file that is not ours in its place is left as it is and nothing is stored: False (``warn_foreign``)."""
    pa, pq = _arrow()

    folder = cache_dir() / key[:2]
    target = folder / f"{key}.parquet"
    if ownership(target, key) == FOREIGN:
        return False
    rest = {k: v for k, v in summary.items() if k != "ops"}
    table = pa.Table.from_pylist(summary.get("ops") or [], schema=_ops_schema())
    meta = json.dumps(rest).encode()
    table = table.replace_schema_metadata({_META_KEY: meta, _KEY_KEY: key.encode(),
                                           _DIGEST_KEY: _digest(key, meta, table.to_pylist()).encode()})
    temporary = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
        os.close(handle)
        pq.write_table(table, temporary)
        os.replace(temporary, target)
        temporary = None
    except OSError as exc:
        warn_once(M_("rank summaries are not cached ({folder}: {reason}): the next run reads the ranks again",
                     folder=cache_dir(), reason=exc.strerror or str(exc)))
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
    return True


def warn_foreign(keys: list[str]) -> None:
    """One warning for the summaries of ``keys`` not stored: another file is in their place (left as it is)."""
    if not keys:
        return
    first = str(summary_path(keys[0]))
    if len(keys) == 1:
        warn_once(M_("{path} is not a rank summary advisor wrote: it is left as it is, and this rank is read again "
                     "on every run (move it away to cache the rank again)", path=first))
    else:
        warn_once(M_("{path} and {count} more files under {folder} are not rank summaries advisor wrote: they are "
                     "left as they are, and these ranks are read again on every run (move them away to cache the "
                     "ranks again)", path=first, count=len(keys) - 1, folder=str(cache_dir())))
