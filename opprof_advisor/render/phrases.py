"""The sentences every format says the same way: a gain, an evidence row, the score formula, a similar case.

Text, markdown and HTML all take these from here with their own ``Units``, so an expected gain
reads alike in the terminal, in a markdown report and on a web page. They read the documents'
dicts (``opprof-advisor/suggest/1`` items, a KB entry's ``gain``) and compute nothing.
"""

from __future__ import annotations

from opprof_advisor.render.units import TEXT, Units, as_float

NO_FIGURE = "no sourced figure"


def gain_parts(gain: dict | None, units: Units = TEXT) -> tuple[str, str]:
    """(the range in %, the time it saves) of a suggestion's ``expected_gain``; empty strings without one."""
    if not gain:
        return "", ""
    low, high = as_float(gain.get("low_pct")), as_float(gain.get("high_pct"))
    if low is None or high is None:
        return "", ""
    lo_us, hi_us = as_float(gain.get("saved_us_low")), as_float(gain.get("saved_us_high"))
    saved = units.time_range(lo_us, hi_us) if lo_us is not None and hi_us is not None else ""
    return units.pct_range(low, high), saved


def gain_line(gain: dict | None, units: Units = TEXT) -> str:
    """``4.5–6.3 % (4.87–6.80 ms)``, with ", model estimate" where it is one, or ``no sourced figure``."""
    pct, saved = gain_parts(gain, units)
    if not pct:
        return NO_FIGURE
    text = f"{pct} ({saved})" if saved else pct
    return f"{text}, model estimate" if gain.get("kind") == "model estimate" else text


def evidence_line(evidence: dict, units: Units = TEXT) -> str:
    """``NonMaxSuppressionV3 21.9 % (1.15 ms)`` for a row, the symptom id for a row-less symptom."""
    what = evidence.get("op_type") or str(evidence.get("why") or "").split(":", 1)[0]
    return f"{what} {units.share(evidence.get('share'))} ({units.time(evidence.get('time_us'))})"


def stake_line(suggestion: dict, reference: str, units: Units = TEXT) -> str:
    """``1.15 ms (21.9 % of the step)``: what a suggestion has at stake."""
    return (f"{units.time(suggestion.get('stake_us'))} ({units.share(suggestion.get('stake_share'))} "
            f"of the {reference})")


def score_line(suggestion: dict, units: Units = TEXT) -> str:
    """The ranking formula with a suggestion's numbers filled in (``score_parts`` of the document)."""
    parts = suggestion.get("score_parts") or {}
    kind = parts.get("evidence_kind")
    if suggestion.get("expected_gain") is not None and parts.get("saving_us") is not None:
        value = (f"saving if it applies {units.time(parts['saving_us'])} ({suggestion.get('gain_basis')}) × "
                 f"confidence {parts.get('confidence'):.2g} ({kind} evidence)")
    else:
        value = f"stake {units.time(suggestion.get('stake_us'))} × prior {parts.get('prior'):g} ({kind} evidence)"
    return (f"score {suggestion.get('score') or 0:,.1f} = {value} × ({parts.get('relevance_base'):g} + "
            f"{parts.get('relevance_span'):g} × relevance {parts.get('relevance'):.3f} × specificity "
            f"{parts.get('specificity'):g}) × hardware {parts.get('hardware'):g}")


def terms_line(suggestion: dict) -> str:
    """``nms 0.412, aicpu 0.120`` (the matcher's terms with their weights), or ``none``."""
    return ", ".join(f"{term} {weight:.3f}" for term, weight in suggestion.get("matched_terms") or []) or "none"


def similar_case_line(case: dict, *, explain: bool = False) -> str:
    """``your profile resembles <id> — <title> (0.83: op mix 0.83 (...), both inference)``."""
    text = (f"your profile resembles {case.get('id')} — {case.get('title')} "
            f"({case.get('similarity') or 0:.2f}: {'; '.join(case.get('why') or [])})")
    if explain:
        text += (f" [op mix cosine {case.get('mix_cosine') or 0:.2f}, "
                 f"symptom overlap {case.get('symptom_overlap') or 0:.2f}]")
    return text


def entry_gain_line(gain: dict | None, units: Units = TEXT) -> str:
    """A KB entry's own gain range: what it is a fraction of, and who states it."""
    if not gain:
        return NO_FIGURE
    span = units.quoted_pct(gain["low_pct"], gain["high_pct"])
    if gain.get("estimate"):
        return f"{span} {gain.get('metric')}, an unmeasured estimate in its source (not a measurement) — {gain.get('source')}"
    if gain.get("scope") == "end_to_end":
        return (f"{span} {gain.get('metric')}, observed end to end in that case (not a promise for your model)"
                f" — {gain.get('source')}")
    return f"{span} of the matched operators' {gain.get('metric')} — {gain.get('source')}"
