"""`advisor profile` and `advisor roofline` in the terminal: where device time goes, op type by op type."""

from __future__ import annotations

from opprof_advisor.core.terminal import one_line

from typing import Any

from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.render.phrases import share_of, symptom_label, waited_rank
from opprof_advisor.render.text.fit import Column, dropped_note, fitted_table
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.render.text.styled import Text

BAR_WIDTH = 10
#: Source keys of the profile document that are not producer versions.
SOURCE_FACTS = frozenset({"path", "format", "producer", "workload", "chip", "ranks"})


def profile_table(doc: dict[str, Any], *, top: int = 20, width: int = 80, **_options: Any) -> list:
    """The header lines, the op-type table (``top`` rows), ranks, symptoms and notes of a profile document."""
    out = _profile_head(doc)
    op_types = doc.get("op_types") or []
    if op_types:
        out += _op_type_table(doc, op_types[:top], width)
    hidden = max(int(doc.get("op_types_total") or len(op_types)), len(op_types)) - min(top, len(op_types))
    if hidden > 0:
        out.append(Text(_("... {n} more op type(s) (use --top)").format(n=hidden)))
    ranks = (doc.get("source") or {}).get("ranks")
    if ranks:
        out += rank_table(ranks, width, waited_rank(doc))
    located = [row for row in doc.get("op_types") or [] if row.get("stacks")][:min(top, 5)]
    if located:
        out.append(Text(_("where in your code (the innermost frame of yours that launched it)"), style="bold"))
        out += [Text("  " + _("{op}: {where} ({count} of its launches, {time})").format(
            op=row.get("op_type"), where=row["stacks"][0].get("where"), count=row["stacks"][0].get("count"),
            time=U.time(row["stacks"][0].get("time_us")))) for row in located]
    symptoms = doc.get("symptoms") or []
    out.append(Text.assemble((_("symptoms"), "bold"), "" if symptoms else _(": none found")))
    out += [Text(f"  {symptom_label(s.get('id'))} ({share_of(s)}): {localize(s.get('detail'))}") for s in symptoms]
    if doc.get("notes"):
        out.append(Text(_("notes"), style="bold"))
        out += [Text(f"  {localize(note)}") for note in doc["notes"]]
    return out


def _profile_head(doc: dict[str, Any]) -> list:
    source = doc.get("source") or {}
    versions = ", ".join(f"{k} {v}" for k, v in source.items() if k not in SOURCE_FACTS and v is not None)
    chip = source.get("chip")
    chip_text = _(", chip {chip}").format(chip=chip) if chip else ""
    out = [Text(f"{one_line(source.get('path'))}  ({source.get('format')}{', ' + versions if versions else ''}{chip_text})")]
    if doc.get("op_types"):
        out.append(Text(_("device time {device} = compute {compute} + communication {communication}").format(
            device=U.time(doc.get("device_time_us")), compute=U.time(doc.get("compute_time_us")),
            communication=U.time(doc.get("communication_time_us")))))
    steps = doc.get("steps") or {}
    total = steps.get("total") or {}
    if total.get("stage_us"):
        count = len(steps.get("per_step") or [])
        shares = total.get("shares") or {}
        part = lambda name: f"{U.time(total.get(name + '_us'))} ({U.share(shares.get(name))})"  # noqa: E731
        steps_text = _("{n} steps").format(n=count) if count > 1 else _("step")
        out.append(Text(_("{steps} {time} = computing {computing} + exposed communication {exposed} + free {free}; "
                          "overlapped communication {overlapped} ({source})").format(
            steps=steps_text, time=U.time(total["stage_us"]), computing=part("computing"), exposed=part("exposed"),
            free=part("free"), overlapped=U.time(total.get("overlapped_us")), source=steps.get("source"))))
    return out


def bound_text(row: dict[str, Any]) -> str:
    """``vector (vec 0.87)``: the bound class with the busiest pipe's ratio where it was measured."""
    bound = _(str(row.get("bound") or "unknown"))
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


#: The op-type table; on a narrow terminal the share bar goes first, then the (often empty) efficiency,
#: the family, the count and the unit: op type, time, share and bound stay.
OP_TYPE_COLUMNS = (Column(N_("op type")), Column(N_("family"), drop=4), Column(N_("unit"), whole=True, drop=2),
                   Column(N_("count"), "right", whole=True, drop=3), Column(N_("time"), "right", whole=True),
                   Column(N_("device %"), "right", whole=True), Column("", whole=True, drop=6, label=N_("share bar")),
                   Column(N_("bound"), drop=1), Column(N_("efficiency"), "right", whole=True, drop=5))


def _op_type_table(doc: dict[str, Any], rows: list[dict[str, Any]], width: int) -> list:
    cells = [(Text(str(row.get("op_type"))), Text(str(row.get("family"))), str(row.get("unit")),
              U.count(row.get("count")), U.time(row.get("time_us")), U.share(row.get("share")),
              bar(float(row.get("share") or 0.0)), bound_text(row),
              efficiency_cell(doc.get("roofline"), row.get("op_type"), row.get("unit"))) for row in rows]
    table, dropped = fitted_table(OP_TYPE_COLUMNS, cells, width, show_edge=False, pad_edge=False)
    return [table, *dropped_note(dropped)]


#: A rank table longer than this shows the slowest and the fastest ranks (the JSON has every rank).
RANK_ROWS = 20


def bar(fraction: float) -> str:
    """``██████····``: a fraction 0..1 as a bar of BAR_WIDTH cells."""
    filled = round(max(0.0, min(1.0, fraction)) * BAR_WIDTH)
    return "█" * filled + "·" * (BAR_WIDTH - filled)


#: The rank table; on a narrow terminal the bar goes first, then free and exposed communication.
RANK_COLUMNS = (Column(N_("rank"), whole=True), Column(N_("computing"), "right", whole=True),
                Column("", whole=True, drop=3, label=N_("computing bar")),
                Column(N_("exposed communication"), "right", whole=True, drop=2), Column(N_("free"), "right", whole=True, drop=1),
                Column(N_("device time"), "right", whole=True))


def rank_table(ranks: list[dict[str, Any]], width: int = 80, waited: str | None = None) -> list:
    """The rank table, slowest computation first, with a bar of each rank's computing against the slowest's; the rank
    the others wait for (the slow_rank symptom's) marked."""
    ordered = sorted(ranks, key=lambda r: -(r["computing_us"] if r.get("computing_us") is not None else -1.0))
    slowest = max((r["computing_us"] for r in ordered if r.get("computing_us") is not None), default=0.0)
    shown = ordered if len(ordered) <= RANK_ROWS else ordered[:RANK_ROWS - 5] + [None] + ordered[-5:]
    rows = []
    for rank in shown:
        if rank is None:
            rows.append([Text("…"), Text(_("{n} more ranks (--format json lists all)").format(n=len(ordered) - RANK_ROWS + 1)),
                         Text(""), Text(""), Text(""), Text("")])
            continue
        name = one_line(rank.get("rank"))  # folder names: text, not markup
        if rank.get("error"):
            rows.append([Text(name), Text(_("not read: {error}").format(error=one_line(rank["error"]))),
                         Text(""), Text(""), Text(""), Text("")])
            continue
        if waited is not None and str(rank.get("rank")) == waited:
            name += " ← " + _("waited for")
        cells = [U.time(rank.get(key)) for key in ("computing_us", "exposed_us", "free_us", "device_time_us")]
        computing = rank.get("computing_us")
        fill = bar(computing / slowest) if computing is not None and slowest else ""
        rows.append([Text(name), Text(cells[0]), Text(fill), *(Text(cell) for cell in cells[1:])])
    table, dropped = fitted_table(RANK_COLUMNS, rows, width, show_edge=False, pad_edge=False,
                                  title=_("ranks, slowest computation first"), title_justify="left")
    return [table, *dropped_note(dropped)]


#: The roofline table; on a narrow terminal the achieved rates go first, then dtype, roof and headroom.
ROOFLINE_COLUMNS = (Column(N_("op type")), Column(N_("time"), "right", whole=True),
                    Column(N_("dtype"), whole=True, drop=4), Column("TFLOP/s", "right", whole=True, drop=6),
                    Column("GB/s", "right", whole=True, drop=6), Column("flop/B", "right", whole=True, drop=5),
                    Column(N_("roof"), drop=3), Column(N_("efficiency"), "right", whole=True),
                    Column(N_("headroom"), "right", whole=True, drop=2), Column(N_("gain*"), "right", whole=True, drop=1))


def roofline_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """The chip's peaks, one row per op type against the roofs, why rows are not judged, the notes."""
    peaks = doc.get("peaks") or {}
    cube = ", ".join(f"{k} {v:.1f}" for k, v in (peaks.get("cube_tflops") or {}).items())
    out: list = [Text(f"{one_line((doc.get('source') or {}).get('path'))}  " + _(
        "(chip {chip}, AIC {aic}, {freq} MHz; cube peak TFLOP/s: {cube}; HBM {hbm} GB/s)").format(
        chip=peaks.get("chip") or _("unknown"), aic=peaks.get("aic") or "?", freq=peaks.get("freq_mhz") or "?",
        cube=cube or _("unknown"), hbm=peaks.get("hbm_gbps") or "?"))]
    rows = doc.get("op_types") or []
    if rows:
        cells = []
        for row in rows:
            gain = "" if row.get("model_gain_high") is None else U.share_range(row.get("model_gain_low"),
                                                                              row["model_gain_high"])
            headroom = "" if row.get("headroom_us") is None else U.time(row["headroom_us"])
            cells.append((Text(f"{row.get('op_type')} ({row.get('unit')})"), U.time(row.get("time_us")),
                          str(row.get("dtype") or ""), U.number(row.get("achieved_tflops"), 1),
                          U.number(row.get("achieved_gbps"), 0), U.number(row.get("intensity"), 0),
                          str(row.get("roof") or ""), efficiency_cell(doc, row.get("op_type"), row.get("unit")) or "-",
                          headroom, gain))
        table, dropped = fitted_table(ROOFLINE_COLUMNS, cells, width, show_edge=False, pad_edge=False)
        out += [table, *dropped_note(dropped)]
        out.append(Text(_("gain* = model estimate: the fraction of the op type's time saved if it reached 60–70 % of "
                          "attainable; not a sourced figure")))
        out += [Text(f"  {row.get('op_type')}: {localize(row['reason'])}") for row in rows if row.get("reason")]
    out += [Text(f"  {localize(note)}") for note in doc.get("notes") or []]
    return out
