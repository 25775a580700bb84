"""Where the step goes, as pictures: one stacked bar per step (share of the step) and one per rank (time).

The parts are those of the profile document's step split (``steps`` and ``source.ranks``): computing,
exposed communication (not hidden behind computing), free (the device idle) and other (what is left of
the step's wall time when the three do not add up to it). The rank the others wait for is the one the
``slow_rank`` symptom names (its ``rank`` key); that bar is outlined.
"""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.i18n import N_, _
from opprof_advisor.core.units import HTML as U
from opprof_advisor.core.units import as_float
from opprof_advisor.render.html.charts import BarRow, Chart, Segment, render_chart
from opprof_advisor.render.html.page import render_legend

#: (document key, CSS class, label) of the parts of a step, in drawing order; "other" is the rest of the step.
STEP_PARTS = (
    ("computing_us", "u-core", N_("computing")),
    ("exposed_us", "u-comm", N_("exposed communication")),
    ("free_us", "u-unknown", N_("free")),
    (None, "u-other", N_("other")),
)

#: The most steps drawn (the longest, in step order); the JSON output has all.
MAX_STEP_ROWS = 20

#: A part below this share of its step is left out of the bar (rounding in the producers' tables).
MIN_PART = 0.0005


def step_parts(split: dict, base: float) -> list[tuple[str, str, float]]:
    """(CSS class, label, time µs) of each part of one split present in it; "other" is ``base`` less the rest."""
    parts, accounted = [], 0.0
    for key, css, label in STEP_PARTS:
        if key is None:
            value = base - accounted
        else:
            value = max(as_float(split.get(key)) or 0.0, 0.0)
            accounted += value
        if base > 0 and value / base >= MIN_PART:
            parts.append((css, label, value))
    return parts


def share_segments(parts: list[tuple[str, str, float]], base: float) -> list[Segment]:
    """The parts as segments in % of ``base``, each with its share written inside when it fits; the bar
    ends at 100 % (a producer's parts may add up to a few µs more than its stage)."""
    segments, start = [], 0.0
    for css, label, value in parts:
        end = min(start + value / base * 100, 100.0)
        if end <= start:
            break
        share = U.pct(end - start)
        tip = _("{part}: {share} of the step ({time})").format(part=_(label), share=share, time=U.time(value))
        segments.append(Segment(start, end, css, tip, text=share))
        start = end
    return segments


def step_label(step: Any) -> str:
    """How a step is named in the chart: its id, or "whole profile" for a split without one."""
    return _("step {id}").format(id=step) if step not in (None, "") else _("whole profile")


def shown_steps(per_step: list[dict]) -> tuple[list[dict], int]:
    """The steps drawn: all up to MAX_STEP_ROWS, else the longest in step order; and how many are left out."""
    steps = [s for s in per_step if isinstance(s, dict) and (as_float(s.get("stage_us")) or 0.0) > 0]
    if len(steps) <= MAX_STEP_ROWS:
        return steps, 0
    longest = sorted(range(len(steps)), key=lambda i: -(as_float(steps[i].get("stage_us")) or 0.0))[:MAX_STEP_ROWS]
    return [steps[i] for i in sorted(longest)], len(steps) - MAX_STEP_ROWS


def step_chart(profile: dict | None, *, excerpt: bool = False) -> str:
    """One stacked bar per step, each its step's wall time split into computing, exposed communication, free
    and other, in % of the step; with several steps the total first. Empty without a step split.

    ``excerpt``: the suggest document found the window to be an excerpt of the run (one idle gap holds most of
    it); the caption says its free time is that gap."""
    block = (profile or {}).get("steps")
    if not isinstance(block, dict):
        return ""
    steps, hidden = shown_steps(list(block.get("per_step") or []))
    if not steps:
        return ""
    splits = ([(_("all {n} steps").format(n=len(block.get("per_step") or [])), block.get("total") or {}, True)]
              if len(block.get("per_step") or []) > 1 else [])
    splits += [(step_label(s.get("step")), s, False) for s in steps]
    rows, present, said = [], set(), []
    for label, split, strong in splits:
        base = as_float(split.get("stage_us")) or 0.0
        if base <= 0:
            continue
        parts = step_parts(split, base)
        present.update(css for css, _label, _value in parts)
        rows.append(BarRow(label, [share_segments(parts, base)], U.time(base), strong=strong))
        said.append(_("{step}: {parts} of {time}").format(step=label, parts=parts_text(parts, base), time=U.time(base)))
    if not rows:
        return ""
    said_base = _("Share of the step: each bar is one step's wall time (written after it) split into computing, "
                  "exposed communication (not hidden behind computing), free (the device idle) and other (the rest). "
                  "Source: {source}.").format(source=block.get("source") or _("unknown"))
    caption = [whole_run_line(block), said_base]
    if hidden:
        caption.append(_("The {n} shorter steps are not drawn; the JSON output has all.").format(n=hidden))
    if excerpt:
        caption.insert(0, _("This window is an excerpt of the run: one idle gap holds most of it, so its free time "
                            "is that gap, not the device waiting inside a step (the findings take their shares of "
                            "device time)."))
    caption = " ".join(part for part in caption if part)
    chart = Chart(rows, 100.0, U.pct_tick, _("Where the step goes, per step"), caption, desc=_("; ").join(said))
    legend = render_legend([(css, _(label)) for _key, css, label in STEP_PARTS if css in present])
    return render_chart(chart) + legend


def whole_run_line(block: dict) -> str:
    """The split of all steps in words (every part's share, also those too narrow to write in their bar)."""
    total = block.get("total") or {}
    base = as_float(total.get("stage_us")) or 0.0
    parts = step_parts(total, base) if base > 0 else []
    if not parts:
        return ""
    return _("Over the whole run: {parts} of the step ({time}).").format(parts=parts_text(parts, base),
                                                                           time=U.time(base))


def parts_text(parts: list[tuple[str, str, float]], base: float) -> str:
    """``computing 6.5 %, exposed communication 74.7 %, free 18.8 %``: each part's share of ``base``."""
    return _(", ").join(_("{part} {share}").format(part=_(label), share=U.pct(value / base * 100))
                        for _css, label, value in parts)


# ----------------------------------------------------------------------------------------------
# Per rank
# ----------------------------------------------------------------------------------------------


#: Ranks drawn in the rank chart and listed in the rank table (the slowest and the fastest; JSON has all).
MAX_RANK_ROWS = 20


def _rank_key(rank: dict) -> float:
    computing = as_float(rank.get("computing_us"))
    return -(computing if computing is not None else -1.0)


def shown_ranks(ranks: list[dict], keep: str | None = None) -> tuple[list[dict], int, int]:
    """Ranks sorted by computation (slowest first), cut to the slowest and fastest (and ``keep``, the rank the
    others wait for, wherever it sorts); how many are left out, and how many of the slowest are shown."""
    ordered = sorted(ranks, key=_rank_key)
    if len(ordered) <= MAX_RANK_ROWS:
        return ordered, 0, len(ordered)
    slowest = MAX_RANK_ROWS - 5
    extra = [r for r in ordered[slowest:-5] if keep is not None and str(r.get("rank")) == keep]
    if extra:
        slowest -= 1
    shown = ordered[:slowest] + extra + ordered[-5:]
    return shown, len(ordered) - len(shown), slowest


def rank_chart(ranks: list[dict], waited: str | None = None) -> str:
    """Per-rank step split (computing, exposed communication, free, other) as stacked bars in time, slowest
    computation first; the rank the others wait for outlined."""
    shown, hidden, _slowest = shown_ranks([r for r in ranks if as_float(r.get("computing_us")) is not None], waited)
    if len(shown) < 2:
        return ""
    rows, largest, present = [], 0.0, set()
    for rank in shown:
        parts = step_parts(rank, rank_base(rank))
        segments, start = [], 0.0
        for css, label, value in parts:
            segments.append(Segment(start, start + value, css, f"{_(label)}: {U.time(value)}"))
            start += value
        present.update(css for css, _label, _value in parts)
        largest = max(largest, start)
        marked = waited is not None and str(rank.get("rank")) == waited
        value = _("computing {time}").format(time=U.time(as_float(rank.get("computing_us"))))
        if marked:
            value = _("{value} · waited for").format(value=value)
        rows.append(BarRow(str(rank.get("rank")), [segments], value, strong=marked, marked=marked))
    caption = _("Per rank: its step's time split into computing, exposed communication, free and other, sorted by "
                "computing.")
    if waited is not None and any(row.marked for row in rows):
        caption += " " + _("Outlined: {rank}, the rank the others wait for (see the slow_rank symptom).").format(
            rank=waited)
    if hidden:
        caption += " " + _("{n} ranks between the slowest and the fastest are not drawn; the JSON output has all.").format(
            n=hidden)
    items = [(css, _(label)) for _key, css, label in STEP_PARTS if css in present]
    if any(row.marked for row in rows):
        items.append(("mark", _("the rank the others wait for")))
    return render_chart(Chart(rows, largest, U.time, _("Ranks by computation"), caption)) + render_legend(items)


def rank_base(rank: dict) -> float:
    """A rank's step time: its stage, or the sum of its parts when the stage is not recorded (or is shorter)."""
    parts = sum(max(as_float(rank.get(key)) or 0.0, 0.0) for key, _css, _label in STEP_PARTS if key)
    return max(as_float(rank.get("stage_us")) or 0.0, parts)
