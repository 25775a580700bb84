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
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from opprof_advisor.cluster.summary import OP_COLUMNS, SCHEMA
from opprof_advisor import __version__
from opprof_advisor.core.errors import AdvisorWarning
from opprof_advisor.core.paths import home_dir
from opprof_advisor.readers.archive import EXTRACT_PREFIX

CACHE_DIR = "rank-summaries"
_META_KEY = b"opprof_advisor.summary"
DEFAULT_LIMIT_MB = 256


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
    """The cache's size limit: ``ADVISOR_CACHE_MB`` (a whole number of MiB), else 256 MiB."""
    value = os.environ.get("ADVISOR_CACHE_MB", "")
    return (int(value) if value.isdigit() else DEFAULT_LIMIT_MB) * 1024 ** 2


def prune(keep: set[str]) -> int:
    """Remove the least recently used summaries beyond ``limit_bytes()``, never one in ``keep``; how many went."""
    entries = []
    try:
        for folder in os.scandir(cache_dir()):
            if folder.is_dir(follow_symlinks=False):
                for item in os.scandir(folder.path):
                    if item.name.endswith(".parquet") and item.is_file(follow_symlinks=False):
                        stat = item.stat(follow_symlinks=False)
                        entries.append((stat.st_mtime_ns, stat.st_size, item.path, item.name[:-len(".parquet")]))
    except OSError:
        return 0
    total, limit, removed = sum(size for _, size, _, _ in entries), limit_bytes(), 0
    for _, size, path, key in sorted(entries):
        if total <= limit:
            break
        if key in keep:
            continue
        try:
            os.unlink(path)
        except OSError:
            continue
        total, removed = total - size, removed + 1
    return removed


def _ops_schema():
    import pyarrow as pa

    types = {"busiest_ratio": pa.float64(), "count": pa.int64(), "time_us": pa.float64(), "p50_us": pa.float64(),
             "p95_us": pa.float64(), "max_us": pa.float64(), "wait_us": pa.float64(), "block_dim": pa.int64(),
             "dtypes": pa.list_(pa.string()), "formats": pa.list_(pa.string())}
    return pa.schema([(name, types.get(name, pa.string())) for name in OP_COLUMNS])


def load(key: str) -> dict[str, Any] | None:
    """The cached summary under ``key``, or None (absent, or not readable: mapped again)."""
    path = cache_dir() / key[:2] / f"{key}.parquet"
    if not path.is_file():
        return None
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path).read(use_threads=False)  # a small file: threads and datasets cost more
        summary = json.loads(table.schema.metadata[_META_KEY])
    except Exception:  # noqa: BLE001 - a damaged cache file is a miss, never an error
        return None
    try:
        os.utime(path)  # recently used: pruned last
    except OSError:
        pass
    summary["ops"] = table.to_pylist()
    return summary


def store(key: str, summary: dict[str, Any]) -> None:
    """Keep ``summary`` under ``key`` (atomic); a failure warns once and is otherwise ignored."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = cache_dir() / key[:2]
    rest = {k: v for k, v in summary.items() if k != "ops"}
    table = pa.Table.from_pylist(summary.get("ops") or [], schema=_ops_schema())
    table = table.replace_schema_metadata({_META_KEY: json.dumps(rest).encode()})
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
        os.close(handle)
        try:
            pq.write_table(table, temporary)
            os.replace(temporary, folder / f"{key}.parquet")
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    except OSError as exc:
        _warn_once(f"rank summaries are not cached ({cache_dir()}: {exc.strerror or exc}): the next run reads the "
                   "ranks again")


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, AdvisorWarning, stacklevel=3)
