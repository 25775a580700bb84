"""The sentences every format says the same way: a gain, an evidence row, a finding's remedies, a similar case.

Text, markdown and HTML all take these from here with their own ``Units``, so an expected gain
reads alike in the terminal, in a markdown report and on a web page. They read the documents'
dicts (``opprof-advisor/suggest/2`` findings and their remedies, a KB entry's ``gain``) and compute nothing.
"""

from __future__ import annotations

from opprof_advisor.core.i18n import N_, _, localize
from opprof_advisor.core.units import TEXT, Units, as_float
from opprof_advisor.core.i18n import current_lang

NO_FIGURE = N_("no sourced figure")
#: What a share is of: the documents' ``reference`` value -> its words.
REFERENCES = {"step": N_("step"), "device time": N_("device time")}


def reference_name(reference: str | None) -> str:
    """``step`` / ``device time`` (a document's ``reference``) in the language in use."""
    reference = reference or "device time"
    return _(REFERENCES.get(reference, reference))


#: A symptom's share with what it is a share of (Symptom.base).
SHARE_OF = {"step": N_("{share} of the step"), "device time": N_("{share} of device time"),
            "memory peak": N_("{share} of the memory peak"), "device memory": N_("{share} of the device's memory")}


def share_of(symptom: dict, units: Units = TEXT) -> str:
    """``51.9 % of the step`` / ``12.5 % of device time``: a symptom's share, its base said."""
    template = SHARE_OF.get(str(symptom.get("base") or "device time"), SHARE_OF["device time"])
    return _(template).format(share=units.share(symptom.get("share")))


def gain_parts(gain: dict | None, units: Units = TEXT) -> tuple[str, str]:
    """(the range in %, the time it saves) of a suggestion's ``expected_gain``; an empty string for a part it lacks."""
    if not gain:
        return "", ""
    low, high = as_float(gain.get("low_pct")), as_float(gain.get("high_pct"))
    lo_us, hi_us = gain_us(gain)
    saved = units.time_range(lo_us, hi_us) if lo_us is not None and hi_us is not None else ""
    return (units.pct_range(low, high) if low is not None and high is not None else ""), saved


def gain_us(gain: dict | None) -> tuple[float | None, float | None]:
    """(low, high) µs a gain saves: ``low_us`` / ``high_us`` (suggest/2), else ``saved_us_low`` / ``saved_us_high``."""
    gain = gain or {}
    low, high = as_float(gain.get("low_us")), as_float(gain.get("high_us"))
    if low is None or high is None:
        low, high = as_float(gain.get("saved_us_low")), as_float(gain.get("saved_us_high"))
    return low, high


#: How an expected gain was obtained (``expected_gain.model`` of suggest/2) -> its word.
GAIN_MODELS = {"model": N_("model"), "sourced": N_("sourced"), "measured": N_("measured")}
#: The older ``kind`` values of a gain, read as the model they are.
_GAIN_KINDS = {"model estimate": "model", "sourced": "sourced", "calibrated": "measured"}


def gain_model(gain: dict | None, suggestion: dict | None = None) -> str:
    """``model`` / ``sourced`` / ``measured``: how a gain was obtained (``""`` when not said)."""
    gain = gain or {}
    model = gain.get("model") or (suggestion or {}).get("gain_basis") or gain.get("kind")
    return _GAIN_KINDS.get(str(model), str(model)) if model else ""


def gain_model_word(gain: dict | None, suggestion: dict | None = None) -> str:
    """The word of ``gain_model`` in the language in use: ``model``, ``sourced``, ``measured``."""
    model = gain_model(gain, suggestion)
    return _(GAIN_MODELS.get(model, model)) if model else ""


NO_MODEL = N_("no modelled gain")
#: What a suggest document without a finding says.
NO_FINDING = N_("No finding: nothing in this profile stands out.")


def no_gain_text(suggestion: dict | None) -> str:
    """What a row without a modelled gain says instead: its assumptions when it has them, else ``no model``."""
    suggestion = suggestion or {}
    said = (suggestion.get("expected_gain") or {}).get("assumptions") or suggestion.get("assumptions")
    return localize(said) if said else _(NO_MODEL)


def gain_line(gain: dict | None, units: Units = TEXT, *, suggestion: dict | None = None) -> str:
    """``10.9–19.7 % (575 µs – 1.03 ms), model``; without a figure, what the row says instead (``no model``)."""
    pct, saved = gain_parts(gain, units)
    if not pct and not saved:
        return no_gain_text({**(suggestion or {}), "expected_gain": gain})
    text = f"{pct} ({saved})" if pct and saved else pct or saved
    model = gain_model_word(gain, suggestion)
    return text + _(", {basis}").format(basis=model) if model else text


def gain_assumptions(gain: dict | None) -> str:
    """The one line saying what a gain assumes (``assumptions``, else the older ``basis``), in the language in use."""
    gain = gain or {}
    return localize(gain.get("assumptions") or gain.get("basis") or "")


#: A finding's ``confidence`` values, marked for the catalogue (``word`` says them).
CONFIDENCE_WORDS = (N_("high"), N_("medium"), N_("low"))


def finding_title(suggestion: dict) -> str:
    """A finding's diagnosis sentence in the language in use (its ``zh`` title, or its Message said in Chinese)."""
    if current_lang() == "zh":
        chinese = (suggestion.get("zh") or {}).get("title")
        if chinese:
            return str(chinese)
    return localize(suggestion.get("title")) or str(suggestion.get("id") or "")


def remedies_of(suggestion: dict) -> list[dict]:
    """A finding's remedies, the lead first; a suggest/1 or scan row (a KB entry itself) is its own one remedy."""
    remedies = suggestion.get("remedies")
    if isinstance(remedies, list):
        return [r for r in remedies if isinstance(r, dict)]
    return [suggestion] if suggestion.get("kind") else []


def lead_first_step(suggestion: dict) -> str:
    """The first step of a finding's lead remedy in the language in use (the row's own ``first_step`` else)."""
    remedies = remedies_of(suggestion)
    step = entry_text(remedies[0], "first_step") if remedies else ""
    return step or entry_text(suggestion, "first_step")


def show_command(suggestion: dict) -> str:
    """``advisor show <lead remedy id>``: where the rest of the steps are."""
    remedies = remedies_of(suggestion)
    if suggestion.get("show"):
        return str(suggestion["show"])
    return f"advisor show {(remedies[0] if remedies else suggestion).get('id')}"


def evidence_line(evidence: dict, reference: str | None, units: Units = TEXT) -> str:
    """``NonMaxSuppressionV3 21.9 % of the step (1.15 ms)`` for a row (its share is of the document's ``reference``),
    the symptom id for a row-less symptom."""
    what = evidence.get("op_type") or str(evidence.get("why") or "").split(":", 1)[0]
    share = share_of({"share": evidence.get("share"), "base": reference or "device time"}, units)
    return f"{what} {share} ({units.time(evidence.get('time_us'))})"


def stake_line(suggestion: dict, reference: str, units: Units = TEXT) -> str:
    """``1.15 ms (21.9 % of the step)``: what a suggestion has at stake."""
    return _("{time} ({share} of the {reference})").format(
        time=units.time(suggestion.get("stake_us")), share=units.share(suggestion.get("stake_share")),
        reference=reference_name(reference))


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
    if current_lang() == "zh":
        chinese = (item.get("zh") or {}).get(key)
        if chinese:
            return str(chinese)
    return str(item.get(key) or "")


def localized(items) -> list[str]:
    """Each note / reason of a document in the language in use."""
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


def waited_rank(profile: dict | None) -> str | None:
    """The rank the others wait for: the one the ``slow_rank`` symptom names, or None (computation and idle
    time balanced, or a document from before symptoms named it)."""
    for symptom in (profile or {}).get("symptoms") or []:
        if isinstance(symptom, dict) and symptom.get("id") == "slow_rank" and symptom.get("rank"):
            return str(symptom["rank"])
    return None
