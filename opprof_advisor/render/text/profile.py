"""`advisor profile` and `advisor roofline` in the terminal: where device time goes, op type by op type."""

from __future__ import annotations

from typing import Any

from opprof_advisor.render.units import TEXT as U

BAR_WIDTH = 10
#: Source keys of the profile document that are not producer versions.
SOURCE_FACTS = frozenset({"path", "format", "producer", "workload", "chip", "ranks"})


def profile_table(doc: dict[str, Any], *, top: int = 20, **_: Any) -> list:
    """The header lines, the op-type table (``top`` rows), ranks, symptoms and notes of a profile document."""
    from rich.text import Text

    out = _profile_head(doc)
    op_types = doc.get("op_types") or []
    if op_types:
        out.append(_op_type_table(doc, op_types[:top]))
    hidden = max(int(doc.get("op_types_total") or len(op_types)), len(op_types)) - min(top, len(op_types))
    if hidden > 0:
        out.append(Text(f"... {hidden} more op type(s) (use --top)"))
    ranks = (doc.get("source") or {}).get("ranks")
    if ranks:
        out.append(rank_table(ranks))
    symptoms = doc.get("symptoms") or []
    out.append(Text.assemble(("symptoms", "bold"), "" if symptoms else ": none found"))
    out += [Text(f"  {s.get('id')} ({U.share(s.get('share'))}): {s.get('detail')}") for s in symptoms]
    if doc.get("notes"):
        out.append(Text("notes", style="bold"))
        out += [Text(f"  {note}") for note in doc["notes"]]
    return out


def _profile_head(doc: dict[str, Any]) -> list:
    from rich.text import Text

    source = doc.get("source") or {}
    versions = ", ".join(f"{k} {v}" for k, v in source.items() if k not in SOURCE_FACTS and v is not None)
    chip = source.get("chip")
    out = [Text(f"{source.get('path')}  ({source.get('format')}{', ' + versions if versions else ''}"
                f"{', chip ' + chip if chip else ''})")]
    if doc.get("op_types"):
        out.append(Text(f"device time {U.time(doc.get('device_time_us'))} = compute "
                        f"{U.time(doc.get('compute_time_us'))} + communication "
                        f"{U.time(doc.get('communication_time_us'))}"))
    steps = doc.get("steps") or {}
    total = steps.get("total") or {}
    if total.get("stage_us"):
        count = len(steps.get("per_step") or [])
        shares = total.get("shares") or {}
        part = lambda name: f"{U.time(total.get(name + '_us'))} ({U.share(shares.get(name))})"  # noqa: E731
        out.append(Text(f"{f'{count} steps' if count > 1 else 'step'} {U.time(total['stage_us'])} = computing "
                        f"{part('computing')} + exposed communication {part('exposed')} + free {part('free')}; "
                        f"overlapped communication {U.time(total.get('overlapped_us'))} ({steps.get('source')})"))
    return out


def share_bar(share: Any) -> str:
    """``21.9 % ██········``: a share as text and as a bar of BAR_WIDTH cells."""
    return f"{U.share(share):>7} " + bar(float(share or 0.0))


def bound_text(row: dict[str, Any]) -> str:
    """``vector (vec 0.87)``: the bound class with the busiest pipe's ratio where it was measured."""
    bound = str(row.get("bound") or "unknown")
    pipe, ratio = row.get("busiest_pipe"), row.get("busiest_ratio")
    if pipe is None or ratio is None:
        return bound
    return f"{bound} ({str(pipe).split('_', 1)[-1]} {ratio:.2f})"


def efficiency_cell(roofline: dict[str, Any] | None, op_type: str, unit: str) -> str:
    """The efficiency of an op type as a table cell: ``38.8 %``, ``data?`` (implausible) or ``""`` (not judged)."""
    row = next((r for r in (roofline or {}).get("op_types") or []
                if r.get("op_type") == op_type and r.get("unit") == unit), None)
    if row is None or row.get("efficiency") is None:
        return ""
    return "data?" if row.get("status") == "implausible" else U.share(row["efficiency"])


def _op_type_table(doc: dict[str, Any], rows: list[dict[str, Any]]):
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, pad_edge=False)
    # numbers never shrink; op type and family give way on a narrow terminal
    for column, justify, width in (("op type", "left", None), ("family", "left", None), ("unit", "left", 9),
                                   ("count", "right", 5), ("time", "right", 9), ("share", "left", 8 + BAR_WIDTH),
                                   ("bound", "left", 7), ("eff", "right", 6)):
        table.add_column(column, justify=justify, no_wrap=True, overflow="ellipsis", min_width=width)
    for row in rows:
        table.add_row(Text(str(row.get("op_type"))), Text(str(row.get("family"))), str(row.get("unit")),
                      U.count(row.get("count")), U.time(row.get("time_us")), share_bar(row.get("share")),
                      bound_text(row), efficiency_cell(doc.get("roofline"), row.get("op_type"), row.get("unit")))
    return table


#: A rank table longer than this shows the slowest and the fastest ranks (the JSON has every rank).
RANK_ROWS = 20


def bar(fraction: float) -> str:
    """``██████····``: a fraction 0..1 as a bar of BAR_WIDTH cells."""
    filled = round(max(0.0, min(1.0, fraction)) * BAR_WIDTH)
    return "█" * filled + "·" * (BAR_WIDTH - filled)


def rank_table(ranks: list[dict[str, Any]]):
    """The rank table, slowest computation first, with a bar of each rank's computing against the slowest's."""
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, pad_edge=False, title="ranks, slowest computation first", title_justify="left")
    for column in ("rank", "computing", "", "exposed comm", "free", "device time"):
        table.add_column(column, justify="left" if column in ("rank", "") else "right", no_wrap=True)
    ordered = sorted(ranks, key=lambda r: -(r["computing_us"] if r.get("computing_us") is not None else -1.0))
    slowest = max((r["computing_us"] for r in ordered if r.get("computing_us") is not None), default=0.0)
    shown = ordered if len(ordered) <= RANK_ROWS else ordered[:RANK_ROWS - 5] + [None] + ordered[-5:]
    for rank in shown:
        if rank is None:
            table.add_row("…", f"{len(ordered) - RANK_ROWS + 1} more ranks (--format json lists all)", "", "", "", "")
            continue
        if rank.get("error"):
            # folder names and errors: text, not markup
            table.add_row(Text(str(rank.get("rank"))), Text(f"not read: {rank['error']}"), "", "", "", "")
            continue
        cells = [U.time(rank.get(key)) for key in ("computing_us", "exposed_us", "free_us", "device_time_us")]
        computing = rank.get("computing_us")
        fill = bar(computing / slowest) if computing is not None and slowest else ""
        table.add_row(Text(str(rank.get("rank"))), cells[0], fill, *cells[1:])
    return table


def roofline_table(doc: dict[str, Any], **_: Any) -> list:
    """The chip's peaks, one row per op type against the roofs, why rows are not judged, the notes."""
    from rich.table import Table
    from rich.text import Text

    peaks = doc.get("peaks") or {}
    cube = ", ".join(f"{k} {v:.1f}" for k, v in (peaks.get("cube_tflops") or {}).items())
    out: list = [Text(f"{(doc.get('source') or {}).get('path')}  (chip {peaks.get('chip') or 'unknown'}, "
                      f"AIC {peaks.get('aic') or '?'}, {peaks.get('freq_mhz') or '?'} MHz; cube peak TFLOP/s: "
                      f"{cube or 'unknown'}; HBM {peaks.get('hbm_gbps') or '?'} GB/s)")]
    rows = doc.get("op_types") or []
    if rows:
        table = Table(show_edge=False, pad_edge=False)
        # numbers never shrink; the op type gives way on a narrow terminal
        for column, justify, width in (("op type", "left", None), ("time", "right", 9), ("dtype", "left", 5),
                                       ("TFLOP/s", "right", 7), ("GB/s", "right", 5), ("flop/B", "right", 6),
                                       ("roof", "left", 9), ("eff", "right", 6), ("headroom", "right", 9),
                                       ("gain*", "right", 11)):
            table.add_column(column, justify=justify, no_wrap=True, overflow="ellipsis", min_width=width)
        for row in rows:
            gain = "" if row.get("model_gain_high") is None else U.share_range(row.get("model_gain_low"),
                                                                              row["model_gain_high"])
            headroom = "" if row.get("headroom_us") is None else U.time(row["headroom_us"])
            table.add_row(Text(f"{row.get('op_type')} ({row.get('unit')})"), U.time(row.get("time_us")),
                          str(row.get("dtype") or ""), U.number(row.get("achieved_tflops"), 1),
                          U.number(row.get("achieved_gbps"), 0), U.number(row.get("intensity"), 0),
                          str(row.get("roof") or ""), efficiency_cell(doc, row.get("op_type"), row.get("unit")) or "-",
                          headroom, gain)
        out.append(table)
        out.append(Text("gain* = model estimate: the fraction of the op type's time saved if it reached 60–70 % of "
                        "attainable; not a sourced figure"))
        out += [Text(f"  {row.get('op_type')}: {row['reason']}") for row in rows if row.get("reason")]
    out += [Text(f"  {note}") for note in doc.get("notes") or []]
    return out
