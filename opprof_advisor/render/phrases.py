"""The sentences every format says the same way: a gain, an evidence row, the score formula, a similar case.

Text, markdown and HTML all take these from here with their own ``Units``, so an expected gain
reads alike in the terminal, in a markdown report and on a web page. They read the documents'
dicts (``opprof-advisor/suggest/1`` items, a KB entry's ``gain``) and compute nothing.
"""

from __future__ import annotations

from opprof_advisor.i18n import N_, _
from opprof_advisor.render.units import TEXT, Units, as_float

NO_FIGURE = N_("no sourced figure")
#: What a share is of: the documents' ``reference`` value -> its words.
REFERENCES = {"step": N_("step"), "device time": N_("device time")}


def reference_name(reference: str | None) -> str:
    """``step`` / ``device time`` (a document's ``reference``) in the language in use."""
    reference = reference or "device time"
    return _(REFERENCES.get(reference, reference))


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
        return _(NO_FIGURE)
    text = f"{pct} ({saved})" if saved else pct
    return text + _(", model estimate") if gain.get("kind") == "model estimate" else text


def evidence_line(evidence: dict, units: Units = TEXT) -> str:
    """``NonMaxSuppressionV3 21.9 % (1.15 ms)`` for a row, the symptom id for a row-less symptom."""
    what = evidence.get("op_type") or str(evidence.get("why") or "").split(":", 1)[0]
    return f"{what} {units.share(evidence.get('share'))} ({units.time(evidence.get('time_us'))})"


def stake_line(suggestion: dict, reference: str, units: Units = TEXT) -> str:
    """``1.15 ms (21.9 % of the step)``: what a suggestion has at stake."""
    return _("{time} ({share} of the {reference})").format(
        time=units.time(suggestion.get("stake_us")), share=units.share(suggestion.get("stake_share")),
        reference=reference_name(reference))


def score_line(suggestion: dict, units: Units = TEXT) -> str:
    """The ranking formula with a suggestion's numbers filled in (``score_parts`` of the document)."""
    parts = suggestion.get("score_parts") or {}
    kind = parts.get("evidence_kind")
    if suggestion.get("expected_gain") is not None and parts.get("saving_us") is not None:
        value = _("saving if it applies {saving} ({basis}) × confidence {confidence} ({kind} evidence)").format(
            saving=units.time(parts["saving_us"]), basis=word(suggestion.get("gain_basis")),
            confidence=f"{parts.get('confidence'):.2g}", kind=word(kind))
    else:
        value = _("stake {stake} × prior {prior} ({kind} evidence)").format(
            stake=units.time(suggestion.get("stake_us")), prior=f"{parts.get('prior'):g}", kind=word(kind))
    return _("score {score} = {value} × ({base} + {span} × relevance {relevance} × specificity {specificity}) × "
             "hardware {hardware}").format(
        score=f"{suggestion.get('score') or 0:,.1f}", value=value, base=f"{parts.get('relevance_base'):g}",
        span=f"{parts.get('relevance_span'):g}", relevance=f"{parts.get('relevance'):.3f}",
        specificity=f"{parts.get('specificity'):g}", hardware=f"{parts.get('hardware'):g}")


def terms_line(suggestion: dict) -> str:
    """``nms 0.412, aicpu 0.120`` (the matcher's terms with their weights), or ``none``."""
    return ", ".join(f"{term} {weight:.3f}" for term, weight in suggestion.get("matched_terms") or []) or _("none")


def similar_case_line(case: dict, *, explain: bool = False) -> str:
    """``your profile resembles <id> — <title> (0.83: op mix 0.83 (...), both inference)``."""
    text = _("your profile resembles {id} — {title} ({similarity}: {why})").format(
        id=case.get("id"), title=entry_text(case, "title"), similarity=f"{case.get('similarity') or 0:.2f}",
        why="; ".join(localized(case.get("why"))))
    if explain:
        text += " " + _("[op mix cosine {cosine}, symptom overlap {overlap}]").format(
            cosine=f"{case.get('mix_cosine') or 0:.2f}", overlap=f"{case.get('symptom_overlap') or 0:.2f}")
    return text


def entry_gain_line(gain: dict | None, units: Units = TEXT) -> str:
    """A KB entry's own gain range: what it is a fraction of, and who states it."""
    if not gain:
        return _(NO_FIGURE)
    values = {"span": units.quoted_pct(gain["low_pct"], gain["high_pct"]), "metric": gain.get("metric"),
              "source": gain.get("source")}
    if gain.get("estimate"):
        return _("{span} {metric}, an unmeasured estimate in its source (not a measurement) — {source}").format(**values)
    if gain.get("scope") == "end_to_end":
        return _("{span} {metric}, observed end to end in that case (not a promise for your model) — {source}"
                 ).format(**values)
    return _("{span} of the matched operators' {metric} — {source}").format(**values)


def entry_text(item: dict, key: str) -> str:
    """An entry's ``title`` / ``summary`` / ``first_step`` in the language in use (its ``zh`` texts for Chinese)."""
    from opprof_advisor.i18n import current_lang

    if current_lang() == "zh":
        chinese = (item.get("zh") or {}).get(key)
        if chinese:
            return str(chinese)
    return str(item.get(key) or "")


def localized(items) -> list[str]:
    """Each note / reason of a document in the language in use."""
    from opprof_advisor.i18n import localize

    return [localize(item) for item in items or []]


#: The words documents hold as values (entry kinds and origins, bound classes, gain kinds and evidence kinds),
#: marked for the catalogue.
VALUE_WORDS = (N_("case"), N_("recipe"), N_("pattern"), N_("tip"), N_("builtin"), N_("user"), N_("unknown"),
               N_("none"), N_("sourced"), N_("calibrated"), N_("model estimate"), N_("problem"), N_("descriptive"),
               N_("loose"))

#: A short name per symptom id, printed beside the id in Chinese (the id itself never changes).
SYMPTOM_NAMES = {
    "aicpu_fallback": N_("AI CPU fallback"), "double_dtype": N_("float64 / int64 work"),
    "transdata_overhead": N_("TransData overhead"), "low_block_dim": N_("block dim leaves cores idle"),
    "block_imbalance": N_("uneven blocks"), "cube_bound": N_("cube bound"), "vector_bound": N_("vector bound"),
    "mte2_bound": N_("MTE2 (load) bound"), "mte3_bound": N_("MTE3 (store) bound"), "scalar_bound": N_("scalar bound"),
    "fixpipe_bound": N_("fixpipe bound"), "no_bound": N_("no pipe bound"), "dynamic_shape": N_("dynamic shapes"),
    "launch_bound": N_("launch bound"), "unfused_attention": N_("unfused attention"),
    "unfused_norm": N_("unfused norm / activation"), "fp32_compute": N_("float32 on the cube"),
    "communication_exposed": N_("exposed communication"), "communication_wait": N_("communication waiting"),
    "nms_cpu": N_("NMS on the CPU"), "host_bound": N_("host bound"), "small_kernels": N_("many small kernels"),
    "low_parallelism": N_("one or two blocks"), "setup_in_window": N_("set-up in the window"),
    "shape_recompile": N_("recompiled for new shapes"), "slow_rank": N_("slow rank"), "slow_link": N_("slow link"),
    "ub_bank_conflict": N_("UB bank conflicts"), "l2_cache_miss": N_("L2 cache misses"),
}


def word(value) -> str:
    """A value word of a document (``recipe``, ``unknown`` ...) in the language in use; ``""`` for none."""
    return _(str(value)) if value else ""


def symptom_label(symptom_id) -> str:
    """``aicpu_fallback`` in English; ``aicpu_fallback（AI CPU 回退）`` in Chinese (the id stays, for search)."""
    name = SYMPTOM_NAMES.get(str(symptom_id))
    if not name or _(name) == name:
        return str(symptom_id)
    return f"{symptom_id}（{_(name)}）"
