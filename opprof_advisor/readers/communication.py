"""communication.json and communication_matrix.json: how the collectives' time splits, and what each link moved.

One rank's files (torch_npu / MindSpore ``ASCEND_PROFILER_OUTPUT``, FORMATS.md §4.4) are
``{step: {"p2p" | "collective": {op: {...}}}}``; msprof-analyze's ``cluster_communication.json`` adds a
rank level: ``{group: {step: {op: {rank: {...}}}}}``. Each op holds:

* ``Communication Time Info``: Elapse, Transit, Wait (Synchronization included) and Idle time (ms),
  Idle = Elapse − Transit − Wait;
* ``Communication Bandwidth Info``: per transport (RDMA, HCCS, PCIE, SDMA, SIO) the size (MB) and the
  time (ms) moved, and ``Size Distribution`` {packet MB: [count, ms]}. SDMA is the sum of HCCS, PCIE
  and SIO (msprof's ``combine_sdma_info``), so it is left out where those are present.

Some exports (torch_npu with CANN 8.3 on the real msinsight Level2 run) write Transit Time 0 in the time
info for ops whose links moved data: the transfer then sits inside Idle. Such an op's transit is taken
from its links (the longer of RDMA and SDMA, capped at Elapse − Wait) and its idle lowered by as much,
with a note; otherwise "all of it is waiting" would be reported for collectives that transfer.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from opprof_advisor.core.i18n import M_
from opprof_advisor.core.sidefile import read_text
from opprof_advisor.readers import columns
from opprof_advisor.readers.columns import parse_float

#: "Communication Time Info" fields summed (ms).
TIME_FIELDS = ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)", "Idle Time(ms)")
#: Sizes (MB) and times (ms) above this are not plausible and read as 0 (their sums would overflow).
MAX_VALUE = 1e12
#: The per-group summary torch_npu writes beside the per-op entries: it repeats their sum.
TOTAL_OP_INFO = "Total Op Info"
#: Transports whose sum SDMA is.
SDMA_PARTS = ("HCCS", "PCIE", "SIO")
#: Packets above this size (MB) are "large" for the transport: msprof's MessageSizeThreshold (HCCS / PCIE /
#: SIO 32, RDMA 0.5), Ascend/msprof@a3989db0:analysis/common_func/ms_constant/number_constant.py.
LARGE_PACKET_MB = {"HCCS": 32.0, "PCIE": 32.0, "SIO": 32.0, "RDMA": 0.5}


def number(value: Any) -> float:
    """A JSON number as float; anything else (missing, text, bool, non-finite, over MAX_VALUE) is 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return value if -MAX_VALUE <= value <= MAX_VALUE else 0.0  # NaN compares false


class Figures:
    """The numbers of one communication file as they are read: ``number`` gives each field's figure (0 for one that
    is not finite, or over MAX_VALUE in magnitude) and counts the bad ones per field; ``notes`` names the first of each
    field with its line, so the rest of the file is still summed."""

    def __init__(self, path: Path | None = None, text: str = ""):
        self.path, self.text = path, text
        self.bad: dict[str, list] = {}  # field -> [first value, count]

    def number(self, value: Any, field: str) -> float:
        figure = number(value)
        if not figure and (isinstance(value, columns.Bad) or (value and isinstance(value, (int, float))
                                                              and not isinstance(value, bool))):
            entry = self.bad.setdefault(field, [value.cell if isinstance(value, columns.Bad) else value, 0])
            entry[1] += 1
        return figure

    def _line(self, field: str, value: Any) -> int | None:
        """The line of ``"field": value`` in the file (error path only: one search)."""
        for found in re.finditer(re.escape(json.dumps(field)) + r"\s*:\s*([-+.\w]+)", self.text):
            token = found.group(1)
            if token == value or (not isinstance(value, str) and _same(token, value)):
                return self.text.count("\n", 0, found.start()) + 1
        return None

    def notes(self) -> list[str]:
        bad = columns.BadNumbers(self.path)
        for field, (value, count) in self.bad.items():
            bad.add(f'"{field}"', self._line(field, value), value, (-MAX_VALUE, MAX_VALUE), count)
        return bad.notes()


def _same(token: str, value: Any) -> bool:
    try:
        return float(token) == float(value)
    except (ValueError, OverflowError):
        return False


def _dicts(value: Any) -> Iterator[tuple[str, dict]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict):
                yield str(key), item


def rank_ops(document: Any) -> Iterator[tuple[str, dict]]:
    """(op name, op) of every p2p / collective op of every step of one rank's communication.json.

    A group's "Total Op Info" is skipped where the ops it sums are beside it."""
    for _, step in _dicts(document):
        for _, kind in _dicts(step):
            ops = dict(_dicts(kind))
            single = {name: op for name, op in ops.items() if name != TOTAL_OP_INFO}
            yield from (single or ops).items()


def cluster_ops(document: Any) -> Iterator[tuple[str, str, dict]]:
    """(op name, rank label, op) of msprof-analyze's cluster_communication.json."""
    for _, group in _dicts(document):
        for _, step in _dicts(group):
            for name, ranks in _dicts(step):
                if name == TOTAL_OP_INFO:
                    continue  # msprof-analyze repeats the sum of the step's ops under it
                for rank, op in _dicts(ranks):
                    yield name, f"rank{rank}" if rank.isdigit() else rank, op


def links_of(op: dict) -> dict[str, dict]:
    """The op's per-transport bandwidth info, SDMA left out where its parts are given."""
    links = dict(_dicts(op.get("Communication Bandwidth Info")))
    if any(number(links.get(part, {}).get("Transit Time(ms)")) for part in SDMA_PARTS):
        links.pop("SDMA", None)
    return links


def time_info(op: dict, figures: Figures | None = None) -> dict[str, float] | None:
    """The op's time fields (ms); a Transit of 0 beside links that moved data is taken from the links.

    ``"transit_from_links"`` is 1.0 when that was done."""
    info = op.get("Communication Time Info")
    if not isinstance(info, dict):
        return None
    figures = figures if figures is not None else Figures()
    times = {key: figures.number(info.get(key), key) for key in TIME_FIELDS}
    if times["Transit Time(ms)"] == 0:
        bandwidth = dict(_dicts(op.get("Communication Bandwidth Info")))
        sdma = number(bandwidth.get("SDMA", {}).get("Transit Time(ms)")) or sum(
            number(bandwidth.get(part, {}).get("Transit Time(ms)")) for part in SDMA_PARTS)
        moved = max(number(bandwidth.get("RDMA", {}).get("Transit Time(ms)")), sdma)
        room = max(0.0, times["Elapse Time(ms)"] - times["Wait Time(ms)"])
        transit = min(moved, room)
        if transit > 0:
            times["Transit Time(ms)"] = transit
            times["Idle Time(ms)"] = max(0.0, times["Idle Time(ms)"] - transit)
            times["transit_from_links"] = 1.0
    return times


def add_links(totals: dict[str, list[float]], op: dict, figures: Figures | None = None) -> None:
    """Add the op's links to ``totals`` {transport: [MB, ms, packets, large packets]}."""
    figures = figures if figures is not None else Figures()
    for transport, link in links_of(op).items():
        size = figures.number(link.get("Transit Size(MB)"), "Transit Size(MB)")
        ms = figures.number(link.get("Transit Time(ms)"), "Transit Time(ms)")
        if not size and not ms:
            continue
        entry = totals.setdefault(transport, [0.0, 0.0, 0.0, 0.0])
        entry[0] += size
        entry[1] += ms
        large = LARGE_PACKET_MB.get(transport)
        for packet, counted in _dicts_or_lists(link.get("Size Distribution")):
            count = number(counted[0]) if isinstance(counted, list) and counted else 0.0
            entry[2] += count
            if large is not None and number(parse_float(packet)) > large:
                entry[3] += count


def _dicts_or_lists(value: Any) -> list[tuple[str, Any]]:
    return [(str(k), v) for k, v in value.items()] if isinstance(value, dict) else []


def sum_times(infos: list[dict[str, float]], notes: list[str], path: Path) -> dict[str, float]:
    """The time fields summed over ``infos`` with "ops"; a note when transits were taken from links."""
    if not infos:
        return {}
    totals = {key: sum(info[key] for info in infos) for key in TIME_FIELDS}
    fixed = sum(1 for info in infos if info.get("transit_from_links"))
    if fixed:
        notes.append(M_("{file}: {fixed} of {ops} communication ops give 0 ms transit while their links moved data; "
                        "their transit is taken from the links' time (an upper bound where an op uses several links "
                        "at once) and their idle time lowered by it", file=path.name, fixed=fixed, ops=len(infos)))
    return {**totals, "ops": float(len(infos))}


def add_collectives(extra: dict[str, Any], folder: Path, notes: list[str]) -> None:
    """Put a rank folder's communication.json and communication_matrix.json into a RawProfile's ``extra``:
    ``communication`` (time totals), ``transports`` and ``matrix`` (each only when found)."""
    communication, transports = read_rank_communication(folder / "communication.json", notes)
    matrix = read_matrix(folder / "communication_matrix.json", notes)
    for key, value in (("communication", communication), ("transports", transports), ("matrix", matrix)):
        if value:
            extra[key] = value


def read_rank_communication(path: Path, notes: list[str]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """One rank's communication.json: (time totals + "ops", {transport: [MB, ms, packets, large]}); ({}, {})
    when absent or unreadable (with a note)."""
    document, figures = _load(path, notes)
    infos, transports = [], {}
    for _, op in rank_ops(document):
        info = time_info(op, figures)
        if info is not None:
            infos.append(info)
        add_links(transports, op, figures)
    notes.extend(figures.notes())
    return sum_times(infos, notes, path), _rounded(transports)


def read_cluster_communication(path: Path, notes: list[str]
                               ) -> tuple[dict[str, float], dict[str, dict[str, list[float]]]]:
    """cluster_communication.json: (time totals + "ops" (distinct op names), {transport: {rank: [MB, ms, packets,
    large]}})."""
    document, figures = _load(path, notes)
    infos, names = [], set()
    per_rank: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for name, rank, op in cluster_ops(document):
        info = time_info(op, figures)
        if info is not None:
            infos.append(info)
            names.add(name)
        add_links(per_rank[rank], op, figures)
    notes.extend(figures.notes())
    totals = sum_times(infos, notes, path)
    if totals:
        totals["ops"] = float(len(names))
    bandwidth: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for rank, transports in per_rank.items():
        for transport, entry in _rounded(transports).items():
            bandwidth[transport][rank] = entry
    return totals, dict(bandwidth)


def read_matrix(path: Path, notes: list[str]) -> list[list]:
    """communication_matrix.json links summed over ops and steps: [src, dst, transport, MB, ms]."""
    links: dict[tuple[str, str, str], list[float]] = {}
    document, figures = _load(path, notes)
    for _, step in _dicts(document):
        for _, kind in _dicts(step):
            ops = dict(_dicts(kind))
            # torch_npu groups each collective's ops as -top1, -middle, -bottom1..3 and their sum, -total: the
            # total alone, where it is written, or every link would count two to five times
            totals = {name: op for name, op in ops.items() if name.split("@")[0].endswith("-total")}
            for _, op in (totals or ops).items():
                for pair, link in _dicts(op):
                    src, _, dst = pair.partition("-")
                    if dst:
                        key = (src, dst, str(link.get("Transport Type") or ""))
                        total = links.setdefault(key, [0.0, 0.0])
                        total[0] += figures.number(link.get("Transit Size(MB)"), "Transit Size(MB)")
                        total[1] += figures.number(link.get("Transit Time(ms)"), "Transit Time(ms)")
    notes.extend(figures.notes())
    return [[src, dst, transport, round(size, 6), round(ms, 6)]
            for (src, dst, transport), (size, ms) in sorted(links.items())]


def _rounded(transports: dict[str, list[float]]) -> dict[str, list[float]]:
    return {t: [round(v, 6) for v in entry] for t, entry in sorted(transports.items()) if entry[0] or entry[1]}


#: analysis.db CommAnalyzerTime column -> the communication.json field it holds (ms).
_ANALYZER_COLUMNS = {"elapse_time": "Elapse Time(ms)", "transit_time": "Transit Time(ms)", "wait_time": "Wait Time(ms)",
                     "synchronization_time": "Synchronization Time(ms)", "idle_time": "Idle Time(ms)"}


def analysis_communication(con: sqlite3.Connection) -> dict[str, float]:
    """msprof-analyze's analysis.db CommAnalyzerTime summed like communication.json (one row per communication op,
    its "Total Op Info" rows left out); {} without it."""
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'CommAnalyzerTime'").fetchone():
            return {}
        cols = [row[1] for row in con.execute('PRAGMA table_info("CommAnalyzerTime")') if row[1] in _ANALYZER_COLUMNS]
        if "elapse_time" not in cols:
            return {}
        row = con.execute(f"SELECT COUNT(*), {', '.join(f'SUM({c})' for c in cols)} FROM CommAnalyzerTime "
                          "WHERE hccl_op_name != 'Total Op Info'").fetchone()
    except sqlite3.DatabaseError:
        return {}
    if not row or not row[0]:
        return {}
    totals = {_ANALYZER_COLUMNS[c]: number(v) for c, v in zip(cols, row[1:])}  # a sum over 1e12 ms is no figure
    return {**{field: 0.0 for field in _ANALYZER_COLUMNS.values()}, **totals, "ops": float(row[0])}


def _load(path: Path, notes: list[str]) -> tuple[Any, Figures]:
    """The JSON document at ``path`` and the Figures that read its numbers; None when absent, and a note when
    unreadable (read_text bounds the size). A number JSON does not allow (NaN, Infinity, 1e400, a 30-digit integer)
    decodes as ``columns.Bad``: its field reads as 0, with a note, and the rest of the file is read."""
    if not path.is_file():
        return None, Figures(path)
    try:
        text = read_text(path)
        return json.loads(text, **columns.LENIENT_JSON_NUMBERS), Figures(path, text)
    except RecursionError:
        notes.append(f"ignored {path}: not readable JSON (JSON nested too deeply)")
    except (OSError, ValueError) as exc:
        notes.append(f"ignored {path}: not readable JSON ({exc})")
    return None, Figures(path)
