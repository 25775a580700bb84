"""ms_service_profiler's parsed output (FORMATS-SERVING.md §3): requests, batches, forwards, KV cache, queues.

``msserviceprofiler parse`` / ``analyze`` write ``request.csv``, ``batch.csv``, ``forward.csv``, ``kvcache.csv``,
``request_status.csv`` and (analyze) ``request_summary.csv`` / ``batch_summary.csv`` / ``service_summary.csv``. Each
is found by its header, whatever its name, in the folder given or its ``output/`` folder. Times: ``(ms)`` columns
are milliseconds except batch.csv's ``start_time(ms)`` / ``end_time(ms)``, which hold epoch µs (only renamed by the
tool, §3); request.csv's ``start_time(ms)`` is µs // 1000, real ms.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.readers import columns, csvfile
from opprof_advisor.readers.layouts import header_names

#: Header fingerprints (normalised names).
FINGERPRINTS: dict[str, frozenset[str]] = {
    "request": frozenset({"http_rid", "first_token_latency(ms)", "reply_token_size"}),
    "batch": frozenset({"name", "res_list", "batch_size", "during_time(ms)"}),
    "forward": frozenset({"name", "during_time(ms)", "bubble_time(ms)", "batch_size"}),
    "kvcache": frozenset({"name", "kvcache_usage_rate"}),
    "status": frozenset({"waiting", "running", "swapped"}),
    "summary": frozenset({"metric", "average", "p50", "p90", "p99"}),
    "service": frozenset({"metric", "value"}),
}
#: Batch rows that execute a batch (the others schedule one).
EXEC_NAMES = frozenset({"modelexec", "modelrunnerexec", "execute"})
#: Folders the parsed files are looked for in.
FOLDERS = ("", "output")
#: Rows read from one table at most (a serving run of days would not fit; the first rows say the pattern).
MAX_ROWS = 2_000_000


@dataclass
class ServingData:
    """The parsed tables, as lists of dicts with float / str values; a table absent is []."""

    files: dict[str, str] = field(default_factory=dict)
    request: list[dict[str, Any]] = field(default_factory=list)
    batch: list[dict[str, Any]] = field(default_factory=list)
    forward: list[dict[str, Any]] = field(default_factory=list)
    kvcache: list[dict[str, Any]] = field(default_factory=list)
    status: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, dict[str, float]] = field(default_factory=dict)  # metric -> {average, p50, p90, p99, ...}
    service: dict[str, float] = field(default_factory=dict)


def serving_kind(path: Path) -> str | None:
    """The serving table a CSV's header says it is, else None."""
    names = header_names(path)
    return next((kind for kind, needed in FINGERPRINTS.items() if needed <= names), None)


def serving_files(path: Path) -> dict[str, Any]:
    """The parsed serving tables at ``path`` (a folder, or one CSV), one per kind (every summary table), by header."""
    if path.is_file():
        kind = serving_kind(path) if path.suffix.lower() == ".csv" else None
        return {kind: path} if kind else {}
    found: dict[str, Any] = {}
    for sub in FOLDERS:
        folder = path / sub if sub else path
        if not folder.is_dir():
            continue
        for file in sorted(folder.glob("*.csv")):
            kind = serving_kind(file)
            if kind == "summary":  # request_summary and batch_summary share a header: both are read
                found.setdefault("summary", [])
                found["summary"].append(file)  # type: ignore[union-attr]
            elif kind and kind not in found:
                found[kind] = file
    # a summary table alone is not a serving profile; request or batch rows are
    return found if {"request", "batch", "forward"} & set(found) else {}


def read_serving(path: str | Path) -> ServingData:
    """The serving tables at ``path``; MalformedProfile naming the file and line for a broken one."""
    path = Path(path)
    files = serving_files(path)
    if not files:
        raise MalformedProfile("no ms_service_profiler table (request.csv, batch.csv, forward.csv) found", path=path,
                               hint="run msserviceprofiler parse --input-path <raw> (or analyze) and give its output")
    data = ServingData(files={kind: [str(f) for f in file] if isinstance(file, list) else str(file)
                              for kind, file in files.items()})
    for kind in ("request", "batch", "forward", "kvcache", "status"):
        if kind in files:
            setattr(data, kind, _rows(files[kind]))
    for summary in files.get("summary") or []:
        for row in _rows(summary):
            name = str(row.get("metric") or "").strip()
            data.summary[name] = {k: v for k, v in row.items() if k != "metric" and isinstance(v, float)}
    if "service" in files:
        data.service = {str(r.get("metric")).strip(): r["value"] for r in _rows(files["service"])
                        if isinstance(r.get("value"), float)}
    return data


def _rows(path: Path) -> list[dict[str, Any]]:
    header, rows = csvfile.read_rows(path)
    names = [columns.normalise_header(cell) for cell in header]
    out = []
    for number, row in enumerate(rows, start=2):
        if number > MAX_ROWS:
            break
        item: dict[str, Any] = {}
        for name, cell in zip(names, row):
            cell = cell.strip()
            value = columns.parse_float(cell) if cell else None
            item[name] = value if value is not None and value == value and abs(value) < 1e18 else (cell or None)
        out.append(item)
    return out


def number(row: dict[str, Any], key: str) -> float | None:
    """A numeric cell, None when absent or text."""
    value = row.get(key)
    return value if isinstance(value, float) else None


def res_list(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A batch row's requests: ``res_list`` is a JSON or Python-literal list of ``{rid, iter, ...}`` (or of rids)."""
    text = row.get("res_list")
    if not isinstance(text, str) or not text.startswith("["):
        return []
    try:
        items = json.loads(text)
    except RecursionError:
        return []
    except ValueError:
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return []
    if not isinstance(items, list):
        return []
    return [item if isinstance(item, dict) else {"rid": item} for item in items]


def is_exec(row: dict[str, Any]) -> bool:
    return str(row.get("name") or "").strip().lower() in EXEC_NAMES
