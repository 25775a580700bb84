"""The tuning loop in the terminal: `advisor compare` per family, recorded outcomes, the one-line receipts."""

from __future__ import annotations

from opprof_advisor.core.terminal import one_line

from typing import Any

from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.render.text.fit import Column, dropped_note, fitted_table
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.core.vocabulary import UNIT_CLASS
from opprof_advisor.render.text.styled import Text
from rich.table import Table
from rich.text import Text as RichText


def compare_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """BEFORE and AFTER, the total change, one row per operator family, the kernel side by side, notes."""
    before, after, total = doc.get("before") or {}, doc.get("after") or {}, doc.get("total") or {}
    out: list = [Text(_("BEFORE {path} ({format})").format(path=one_line(before.get("path")), format=before.get("format"))),
                 Text(_("AFTER  {path} ({format})").format(path=one_line(after.get("path")), format=after.get("format"))),
                 Text(_("device time: {before} -> {after} ({change})").format(
                     before=U.time(total.get("before_us")), after=U.time(total.get("after_us")),
                     change=_change(total.get("delta_pct")))),
                 *_family_table(doc.get("op_types") or [], width)]
    if doc.get("kernel_rows"):
        out.append(_kernel_table(doc["kernel_rows"]))
    out += [Text(_("note:") + f" {localize(note)}") for note in doc.get("notes") or []]
    return out


#: `compare`'s family table; on a narrow terminal the unit and the bound class go first (the notes name unit moves).
FAMILY_COLUMNS = (Column(N_("op family")), Column(N_("before"), "right", whole=True),
                  Column(N_("after"), "right", whole=True), Column(N_("change"), "right", whole=True),
                  Column(N_("share before -> after"), "right"), Column(N_("unit"), drop=2),
                  Column(N_("bound"), drop=1))


def _family_table(families: list[dict[str, Any]], width: int) -> list:
    rows = [
        (
            str(row.get("op_type")),
            U.time(row.get("before_us")),
            U.time(row.get("after_us")),
            _("new") if row.get("status") == "appeared" else _change(row.get("delta_pct")),
            f"{U.share(row.get('before_share'))} -> {U.share(row.get('after_share'))}",
            _arrow(_unit_class(row.get("unit_before")), _unit_class(row.get("unit_after"))),
            _arrow(_(row.get("bound_before") or "-"), _(row.get("bound_after") or "-")),
        )
        for row in families
    ]
    table, dropped = fitted_table(FAMILY_COLUMNS, [[Text(cell) for cell in cells] for cells in rows], width,
                                  show_edge=False, pad_edge=False)  # family names come from the profile: text
    return [table, *dropped_note(dropped)]


def _kernel_table(kernel_rows: list[dict[str, Any]]):
    table = Table(title=_("kernel (msOpProf)"), show_edge=False, pad_edge=False)
    for name in (_("metric"), _("before"), _("after")):
        table.add_column(name, no_wrap=True)
    for row in kernel_rows:
        table.add_row(str(row.get("metric")), RichText(_value(row.get("before"))), RichText(_value(row.get("after"))))
    return table


def _unit_class(unit: str | None) -> str | None:
    return UNIT_CLASS.get(unit or "", unit)


def _arrow(old: str | None, new: str | None) -> str:
    old, new = old or "-", new or "-"
    return old if old == new else f"{old} -> {new}"


def _change(value: float | None) -> str:
    return "-" if value is None else U.pct(value, signed=True)


def _value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)


def _gain(value: float | None) -> str:
    return "-" if value is None else U.pct(value)


def outcome_line(outcome: dict[str, Any]) -> str:
    """``recorded outcome #3 of nms-on-npu: time saved on NMS 86.1 %, end to end 20.3 %``."""
    ops = ", ".join(outcome.get("matched_families") or []) or _("no matched operators")
    return _("recorded outcome #{id} of {entry}: time saved on {ops} {gain}, end to end {e2e}").format(
        id=outcome.get("id"), entry=outcome.get("entry_id"), ops=ops, gain=_gain(outcome.get("matched_gain_pct")),
        e2e=_gain(outcome.get("e2e_gain_pct")))


def removed_line(outcome: dict[str, Any]) -> str:
    """``removed outcome #3 of nms-on-npu (recorded 2025-01-09, 86.1 % on its operators)``."""
    return _("removed outcome #{id} of {entry} (recorded {date}, {gain} on its operators)").format(
        id=outcome.get("id"), entry=outcome.get("entry_id"), date=str(outcome.get("recorded_at") or "")[:10],
        gain=_gain(outcome.get("matched_gain_pct")))


#: The outcomes table: ids, dates and gains whole; on a narrow terminal the note goes first, then chip and operators.
OUTCOME_COLUMNS = (Column("#", whole=True), Column(N_("date"), whole=True), Column(N_("entry"), whole=True),
                   Column(N_("operators"), drop=3), Column(N_("operators gain"), "right", whole=True),
                   Column(N_("end-to-end gain"), "right", whole=True, drop=4), Column(N_("chip"), whole=True, drop=2),
                   Column(N_("note"), drop=1))


def outcomes_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """Every recorded outcome of an ``outcomes/1`` document, oldest first (nothing when there is none)."""
    rows = sorted((o for entry in doc.get("entries") or [] for o in entry.get("outcomes") or []),
                  key=lambda o: o.get("id") or 0)
    if not rows:
        return []
    cells = [[Text(one_line(cell)) for cell in (  # op families, chips and notes come from files: text, not markup
        str(o.get("id")), str(o.get("recorded_at") or "")[:10], str(o.get("entry_id")),
        ", ".join(o.get("matched_families") or []) or "-", _gain(o.get("matched_gain_pct")),
        _gain(o.get("e2e_gain_pct")), o.get("chip") or "-", o.get("note") or "-")] for o in rows]
    table, dropped = fitted_table(OUTCOME_COLUMNS, cells, width, show_edge=False, pad_edge=False)
    return [table, *dropped_note(dropped)]
