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
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opprof_advisor.core.errors import MalformedProfile
from opprof_advisor.core.sqlite_files import connect_readonly, table_names
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
    notes: list[str] = field(default_factory=list)  # numbers read as missing: not finite, or absurd


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
    if not files and (sources := span_sources(path)):
        notes: list[str] = []
        spans = [span for source, kind in sources for span in read_spans(source, kind, notes)]
        data = data_from_spans(spans, ", ".join(str(source) for source, _ in sources))
        data.notes.extend(notes)
        return data
    if not files:
        raise MalformedProfile("no ms_service_profiler table (request.csv, batch.csv, forward.csv) found", path=path,
                               hint="run msserviceprofiler parse --input-path <raw> (or analyze) and give its output")
    data = ServingData(files={kind: [str(f) for f in file] if isinstance(file, list) else str(file)
                              for kind, file in files.items()})
    for kind in ("request", "batch", "forward", "kvcache", "status"):
        if kind in files:
            setattr(data, kind, _rows(files[kind], data.notes))
    for summary in files.get("summary") or []:
        for row in _rows(summary, data.notes):
            name = str(row.get("metric") or "").strip()
            data.summary[name] = {k: v for k, v in row.items() if k != "metric" and isinstance(v, float)}
    if "service" in files:
        data.service = {str(r.get("metric")).strip(): r["value"] for r in _rows(files["service"], data.notes)
                        if isinstance(r.get("value"), float)}
    return data


def _rows(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """The rows of a serving CSV as dicts: numbers as floats, other cells as text; a number that is not finite,
    negative (every figure of these tables is a time, a size, a count, a rate or an id) or beyond columns.MAX_FIGURE is
    None, with a note naming its line and column."""
    header, rows = csvfile.read_rows(path)
    names = [columns.normalise_header(cell) for cell in header]
    out = []
    bad = columns.BadNumbers(path)
    for number, (row, line) in enumerate(zip(rows, rows.lines), start=2):
        if number > MAX_ROWS:
            break
        item: dict[str, Any] = {}
        for name, label, cell in zip(names, header, row):
            cell = cell.strip()
            value = columns.checked_float(cell, columns.NON_NEGATIVE) if cell else None
            if isinstance(value, columns.Bad):
                bad.add(label.strip(), line, cell, columns.NON_NEGATIVE)
                value = None
            elif value is None:
                value = cell or None
            item[name] = value
        out.append(item)
    notes.extend(bad.notes())
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


# ------------------------------------------------------------------------------------------------
# Spans: the raw DB (before `msserviceprofiler parse`) and the 2024 prototype's tx_data_df.csv
# ------------------------------------------------------------------------------------------------

#: The prototype's span table (FORMATS-SERVING.md §6), by header.
PROTOTYPE = frozenset({"start_time", "end_time", "name", "rid_list", "batch_size"})
#: Spans that end a request (its last response) and that bring it in.
_REQUEST_ENDS = frozenset({"httpres", "decodeend", "sendresponse", "outputsync"})


@dataclass
class Span:
    name: str
    start_us: float
    end_us: float
    attrs: dict[str, Any]
    pid: str = ""


#: Where the raw per-process DBs sit under a collection folder (FORMATS-SERVING.md §1).
RAW_FOLDERS = ("", "output", "Trace_Service")


def span_sources(path: Path) -> list[tuple[Path, str]]:
    """Every raw serving DB (one per process, each with a ``slice`` table) at ``path``, or a prototype
    tx_data_df.csv; [] when there is none. A parsed profiler.db (its ``request`` / ``batch`` tables) is not raw."""
    if path.is_file():
        candidates = [path]
    elif path.is_dir():
        candidates = [f for sub in RAW_FOLDERS if ((path / sub) if sub else path).is_dir()
                      for f in sorted(((path / sub) if sub else path).glob("*")) if f.suffix.lower() in (".db", ".csv")]
    else:
        candidates = []
    raw = [(f, "raw") for f in candidates if f.suffix.lower() == ".db" and _is_raw(f)]
    if raw:
        return raw
    return [(f, "prototype") for f in candidates if f.suffix.lower() == ".csv" and PROTOTYPE <= header_names(f)][:1]


def _is_raw(path: Path) -> bool:
    tables = table_names(path)
    return "slice" in tables and not {"request", "batch"} & tables


#: Span times (ns since the epoch).
_NS = (0.0, 9.2e18)


def read_spans(path: Path, kind: str, notes: list[str] | None = None) -> list[Span]:
    """The spans of a raw DB (ns since epoch, ``args`` JSON) or of the prototype's table (µs); a span whose times are
    not finite or not plausible is left out, and a number in ``args`` that is not finite reads as missing, each with a
    note naming the slice row."""
    notes = notes if notes is not None else []
    if kind == "raw":
        try:
            conn = connect_readonly(path, immutable=True)
            try:
                rows = conn.execute("SELECT name, timestamp, end_time, duration, args, pid, rowid FROM slice LIMIT ?",
                                    (MAX_ROWS,)).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise MalformedProfile(f"cannot read the slice table: {exc}", path=path,
                                   hint="give the ms_service_*.db of one process, or its parsed output") from None
        spans = []
        bad = columns.BadNumbers(path)
        for name, start, end, duration, args, pid, rowid in rows:
            if not isinstance(start, (int, float)):
                continue
            where = f"slice rowid {rowid}"
            length = duration if isinstance(duration, (int, float)) else 0
            stop = end if isinstance(end, (int, float)) and end else start + length
            for column, value in (("slice.timestamp", start), ("slice.end_time", stop)):
                if isinstance(columns.checked_float(value, _NS), columns.Bad):
                    bad.add(column, where, value, _NS, dropped=True)
                    break
            else:
                spans.append(Span(str(name or ""), start / 1000.0, stop / 1000.0, _attrs(args, bad, where),
                                  str(pid or "")))
        notes.extend(bad.notes())
        return spans
    spans = []
    for row in _rows(path, notes):
        start, end = number(row, "start_time"), number(row, "end_time")
        if start is None:
            continue
        attrs = {key.strip("=+").lower(): value for key, value in row.items() if value is not None}
        spans.append(Span(str(row.get("name") or ""), start, end if end is not None else start, attrs,
                          str(row.get("pid") or "")))
    return spans


def _attrs(text: Any, bad: columns.BadNumbers | None = None, where: str = "") -> dict[str, Any]:
    """A span's ``args`` JSON as a dict; a number in it that is not finite or beyond columns.MAX_FIGURE is None
    (counted in ``bad``)."""
    if not isinstance(text, str) or not text.startswith("{"):
        return {}
    found: list[str] = []

    def checked(token: str) -> float | None:
        number = columns.checked_float(token)
        if isinstance(number, columns.Bad) or number is None:
            found.append(token)
            return None
        return number

    try:
        value = json.loads(text, parse_constant=checked, parse_float=checked)
    except (ValueError, RecursionError):
        return {}
    if found and bad is not None:
        bad.add("slice.args", where, found[0], columns.ANY, len(found))
    return {str(k).strip("=+").lower(): v for k, v in value.items()} if isinstance(value, dict) else {}


def _literal(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            try:
                return ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return None
    return value


#: MindIE's integer batchType (FORMATS-SERVING.md §5).
_MINDIE_BATCH = {0: "Prefill", 1: "Decode", 3: "Prefill,Decode"}


def _batch_type(span: Span, carried: list[dict[str, Any]]) -> str | None:
    """vLLM's batch_type, MindIE's batchType, else from the iterations: all 0 prefill, all above decode."""
    named = span.attrs.get("batch_type")
    if isinstance(named, str) and named:
        return named
    number = span.attrs.get("batchtype")
    if isinstance(number, (int, float)) and int(number) in _MINDIE_BATCH:
        return _MINDIE_BATCH[int(number)]
    steps = [item.get("iter") for item in carried if isinstance(item.get("iter"), (int, float))]
    if not steps:
        return None
    if all(step == 0 for step in steps):
        return "Prefill"
    return "Decode" if all(step > 0 for step in steps) else "Prefill,Decode"


def _rid(value: Any) -> str | None:
    """A request id as text: ``0.0`` read from a CSV cell is the rid ``0``; lists and empties are none."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    return None


def _requests_of(span: Span) -> list[dict[str, Any]]:
    """The requests a batch span carries: ``rid`` as a list of {rid, iter}, or the prototype's rid_list with
    token_id_list (the iteration of each)."""
    rid = _literal(span.attrs.get("rid"))
    if isinstance(rid, list):
        return [item if isinstance(item, dict) else {"rid": item} for item in rid]
    rids, iters = _literal(span.attrs.get("rid_list")), _literal(span.attrs.get("token_id_list"))
    if isinstance(rids, list):
        iters = iters if isinstance(iters, list) and len(iters) == len(rids) else [None] * len(rids)
        return [{"rid": r, "iter": i} for r, i in zip(rids, iters)]
    return []


def data_from_spans(spans: list[Span], source: str) -> ServingData:
    """The tables `msserviceprofiler parse` would write, rebuilt from the spans (same column names)."""
    data = ServingData(files={"spans": source})
    arrival: dict[str, float] = {}
    finish: dict[str, float] = {}
    tokens: dict[str, dict[str, float]] = {}
    first: dict[str, float] = {}
    for span in sorted(spans, key=lambda s: s.start_us):
        name = span.name.lower()
        rid = _rid(span.attrs.get("rid"))
        if name == "httpreq" and rid is not None:
            arrival.setdefault(rid, span.start_us)
        if rid is not None:
            for key in ("recvtokensize", "replytokensize"):
                if isinstance(span.attrs.get(key), (int, float)):
                    tokens.setdefault(rid, {})[key] = float(span.attrs[key])
            if name in _REQUEST_ENDS:
                finish[rid] = max(finish.get(rid, 0.0), span.end_us)
        if name in EXEC_NAMES:
            carried = _requests_of(span)
            if not carried:
                continue
            for item in carried:
                key = _rid(item.get("rid"))
                if key is None:
                    continue
                first.setdefault(key, span.end_us)
                finish[key] = max(finish.get(key, 0.0), span.end_us)
            carried = [{**item, "rid": _rid(item.get("rid"))} for item in carried]
            data.batch.append({"name": span.name, "res_list": json.dumps(carried, default=str),
                               "batch_size": float(len(carried)), "batch_type": _batch_type(span, carried),
                               "during_time(ms)": (span.end_us - span.start_us) / 1000.0,
                               "start_time(ms)": span.start_us, "end_time(ms)": span.end_us})  # epoch µs, as batch.csv
        elif name == "forward":
            data.forward.append({"name": "forward", "during_time(ms)": (span.end_us - span.start_us) / 1000.0,
                                 "start_time(ms)": span.start_us / 1000.0, "end_time(ms)": span.end_us / 1000.0,
                                 "pid": span.pid})
        elif name == "kvcachestatus":
            usage = span.attrs.get("usagepercent")
            total, free = span.attrs.get("totalblocks"), span.attrs.get("freeblocks")
            if not isinstance(usage, (int, float)) and isinstance(total, (int, float)) and isinstance(free, (int, float)) \
                    and total:
                usage = (total - free) / total
            if isinstance(usage, (int, float)):
                data.kvcache.append({"kvcache_usage_rate": float(usage),
                                     "total_blocks": float(total) if isinstance(total, (int, float)) else None})
    by_pid: dict[str, list[dict[str, Any]]] = {}
    for row in data.forward:
        by_pid.setdefault(row.pop("pid"), []).append(row)
    for rows in by_pid.values():
        for this, after in zip(rows, rows[1:]):
            this["bubble_time(ms)"] = max(0.0, after["start_time(ms)"] - this["end_time(ms)"])
    for rid, start in arrival.items():
        end = finish.get(rid)
        data.request.append({
            "http_rid": rid, "start_time(ms)": start / 1000.0,
            "execution_time(ms)": (end - start) / 1000.0 if end else None,
            "first_token_latency(ms)": (first[rid] - start) / 1000.0 if rid in first else None,
            "recv_token_size": tokens.get(rid, {}).get("recvtokensize"),
            "reply_token_size": tokens.get(rid, {}).get("replytokensize")})
    return data
