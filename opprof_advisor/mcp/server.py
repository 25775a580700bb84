"""`advisor mcp`: the advisor's commands as Model Context Protocol tools, served over stdio.

An agent (an MCP client) calls ``profile``, ``suggest``, ``search``, ``show``, ``compare``,
``roofline`` and ``scan`` with paths and options as arguments. Each tool computes exactly what
the command of the same name computes and returns its JSON document (``opprof-advisor/<command>/1``,
what ``--format json`` prints) as the structured content, plus one paragraph of text that
summarises it for the model to read (in Chinese with the ``lang`` argument every tool takes). A
bad input is a tool error carrying the one line the command would print (``error: <file>: <what>
— <what to do>``); nothing is ever written (``compare`` records no outcome: that stays a
deliberate ``advisor compare --applied`` on the command line).

The official ``mcp`` SDK (2.x) is an optional extra: ``pip install 'opprof-advisor[mcp]'``.
This module imports it only when the server is built, so nothing else pays for it.
"""

from __future__ import annotations

from typing import Any, Callable

from opprof_advisor import commands
from opprof_advisor.core.errors import AdvisorError, error_lines
from opprof_advisor.core.i18n import _
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.core.documents import document_kind
from opprof_advisor.core.i18n import localize
from opprof_advisor.render.phrases import NO_FINDING
from opprof_advisor.render.phrases import entry_text
from opprof_advisor.render.phrases import finding_title
from opprof_advisor.render.phrases import gain_line
from opprof_advisor.render.phrases import lead_first_step
from opprof_advisor.render.phrases import reference_name
from opprof_advisor.render.phrases import remedies_of
from opprof_advisor.render.phrases import show_command
from opprof_advisor.core.i18n import LANGS
from opprof_advisor.core.i18n import current_lang
from opprof_advisor.core.i18n import normalise_lang
from opprof_advisor.core.i18n import set_lang
from opprof_advisor import __version__
import inspect
import typing
from opprof_advisor.render.text.kb import no_hits_line

SERVER_NAME = "opprof-advisor"
INSTRUCTIONS = (
    "Ranked, evidence-backed tuning advice for Huawei Ascend NPU profiles (msprof op, system msprof, the torch_npu "
    "profiler). Start with `suggest` on a profile folder; `profile` shows where device time goes, `roofline` how far "
    "each op type is from the chip's roofs, `compare` what changed between two profiles, `scan` what a model's source "
    "risks before any profile exists, `search` / `show` the knowledge base. Every tool returns the command's JSON "
    "document; paths are read on the machine running the server."
)


class MissingSDK(AdvisorError):
    """The optional ``mcp`` package is not installed."""


# ---------------------------------------------------------------------------------------------
# The documents: what each command computes, without printing
# ---------------------------------------------------------------------------------------------


def profile_document(path: str, top: int = 20, peaks: str | None = None) -> dict[str, Any]:
    """The ``profile/1`` document of ``advisor profile PATH --format json``."""
    return commands.profile(path, top=top, peaks=peaks)


def suggest_document(profile: str, top: int = 5, model: str | None = None, kind: str | None = None,
                     explain: bool = False, db: str | None = None) -> dict[str, Any]:
    """The ``suggest/2`` document of ``advisor suggest --profile PATH --format json``, with the warnings."""
    warnings: list[str] = []
    document = commands.suggest(profile, top=top, model=model, kind=kind, explain=explain, db=db,
                                warn=warnings.append)
    document["warnings"] = warnings
    return document


def search_document(query: str, top: int = 10, kind: str | None = None, operator: str | None = None,
                    db: str | None = None) -> dict[str, Any]:
    """The ``search/1`` document of ``advisor search QUERY --format json``."""
    return commands.search(query, top=top, kind=kind, operator=operator, db=db)


def show_document(entry_id: str, db: str | None = None) -> dict[str, Any]:
    """The ``entry/1`` document of ``advisor show ID --format json``."""
    return commands.show(entry_id, db=db)


def compare_document(before: str, after: str) -> dict[str, Any]:
    """The ``compare/1`` document of ``advisor compare BEFORE AFTER --format json`` (no outcome is recorded)."""
    return commands.compare(before, after)


def roofline_document(path: str, peaks: str | None = None) -> dict[str, Any]:
    """The ``roofline/1`` document of ``advisor roofline PATH --format json``."""
    return commands.roofline(path, peaks=peaks)


def scan_document(path: str, top: int = 5, exclude: list[str] | None = None, db: str | None = None) -> dict[str, Any]:
    """The ``scan/1`` document of ``advisor scan PATH --format json``."""
    return commands.scan(path, top=top, exclude=exclude, db=db)


# ---------------------------------------------------------------------------------------------
# One paragraph per document, for the model to read
# ---------------------------------------------------------------------------------------------


def summarize(document: dict[str, Any]) -> str:
    """A one-paragraph summary of any document a tool returns."""
    summary = _SUMMARIES.get(document_kind(document))
    return summary(document) if summary else f"{document.get('schema')} document."


def _listed(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (_(" and {n} more").format(n=len(items) - limit) if len(items) > limit else "")


def _none(text: str) -> str:
    return text or _("none")


def _summarize_suggest(doc: dict[str, Any]) -> str:

    profile = doc.get("profile") or {}
    reference = reference_name(profile.get("reference"))
    head = _("{path} ({format}): device time {time}").format(path=profile.get("path"), format=profile.get("format"),
                                                            time=U.time(profile.get("device_time_us")))
    if profile.get("reference") == "step":
        head += _(", step {time}").format(time=U.time(profile.get("reference_us")))
    head += "."
    context = (doc.get("context") or {}).get("line")
    if context:
        head += " " + _("Workload: {line}.").format(line=localize(context))
    suggestions = doc.get("suggestions") or []
    if not suggestions:
        return head + " " + _(NO_FINDING) + (" " + _sentence(localize(doc["rest"])) if doc.get("rest") else "")
    first = suggestions[0]
    text = head + " " + _("{n} finding(s). Top: {title} ({stake} at stake, {share} of the {reference}); expected gain "
                          "{gain}").format(
        n=len(suggestions), title=finding_title(first), stake=U.time(first.get("stake_us")),
        share=U.share(first.get("stake_share")), reference=reference, gain=gain_line(first.get("expected_gain"),
                                                                                      suggestion=first))
    remedies = remedies_of(first)
    if remedies:
        lead = remedies[0]
        text += _("; lead remedy: {title} ({id}, {kind}, evidence {grade})").format(
            title=entry_text(lead, "title"), id=lead.get("id"), kind=lead.get("kind"),
            grade=lead.get("evidence_grade") or "?")
        step = lead_first_step(first)
        if step:
            text += _("; first step: {step}").format(step=step)
        if len(remedies) > 1:
            text += _("; alternatives: {ids}").format(ids=_listed([str(r.get("id")) for r in remedies[1:]]))
        text += _("; the rest: {command}").format(command=show_command(first))
    text += "."
    if len(suggestions) > 1:
        text += " " + _("Then: {ids}.").format(ids=_listed([finding_title(s) for s in suggestions[1:]], 4))
    if doc.get("rest"):
        text += " " + _sentence(localize(doc["rest"]))
    if doc.get("similar_cases"):
        text += " " + _("Resembles {ids}.").format(ids=_listed([c.get("id") for c in doc["similar_cases"]]))
    if doc.get("notes"):
        text += " " + _("{n} note(s) say what the profile could not show.").format(n=len(doc["notes"]))
    return text


def _sentence(text: Any) -> str:
    """``text`` as a sentence of the summary: capitalised, ending in a full stop."""
    text = str(text or "").strip().rstrip(".。")
    return text[:1].upper() + text[1:] + "." if text else ""


def _summarize_profile(doc: dict[str, Any]) -> str:
    source = doc.get("source") or {}
    ops = [f"{r.get('op_type')} {U.share(r.get('share'))}" for r in doc.get("op_types") or []]
    symptoms = [s.get("id") for s in doc.get("symptoms") or []]
    return _("{path} ({format}): device time {device}, compute {compute}, communication {communication}. Top op "
             "types: {ops}. Symptoms: {symptoms}. {notes} note(s).").format(
        path=source.get("path"), format=source.get("format"), device=U.time(doc.get("device_time_us")),
        compute=U.time(doc.get("compute_time_us")), communication=U.time(doc.get("communication_time_us")),
        ops=_none(_listed(ops, 4)), symptoms=_none(_listed(symptoms, 6)), notes=len(doc.get("notes") or []))


def _summarize_search(doc: dict[str, Any]) -> str:
    hits = doc.get("results") or []
    if not hits:
        return no_hits_line(doc)
    return _("{n} entries for {query}: {hits}.").format(
        n=len(hits), query=repr(doc.get("query")),
        hits="; ".join(f"{h.get('id')} ({h.get('kind')}): {entry_text(h, 'title')}" for h in hits[:5]))


def _summarize_entry(doc: dict[str, Any]) -> str:
    entry = doc.get("entry") or {}
    return _("{id} ({kind}, evidence grade {grade}): {title}. {summary}").format(
        id=entry.get("id"), kind=entry.get("kind"), grade=entry.get("evidence"), title=entry_text(entry, "title"),
        summary=entry_text(entry, "summary") or "").strip()


def _summarize_compare(doc: dict[str, Any]) -> str:
    total = doc.get("total") or {}
    rows = sorted(doc.get("op_types") or [], key=lambda r: -abs((r.get("after_us") or 0) - (r.get("before_us") or 0)))
    changes = [f"{r.get('op_type')} {U.time(r.get('before_us'))} -> {U.time(r.get('after_us'))}" for r in rows]
    delta = total.get("delta_pct")
    return _("Device time {before} -> {after}{change}. Largest changes: {changes}. {notes} note(s).").format(
        before=U.time(total.get("before_us")), after=U.time(total.get("after_us")),
        change="" if delta is None else f" ({U.pct(delta, signed=True)})", changes=_none(_listed(changes, 3)),
        notes=len(doc.get("notes") or []))


def _summarize_roofline(doc: dict[str, Any]) -> str:
    peaks = doc.get("peaks") or {}
    judged = [r for r in doc.get("op_types") or [] if r.get("status") == "judged"]
    judged.sort(key=lambda r: -(r.get("headroom_us") or 0))
    rows = [_("{op} at {efficiency} of attainable ({headroom} headroom)").format(
        op=r.get("op_type"), efficiency=U.share(r.get("efficiency")), headroom=U.time(r.get("headroom_us")))
        for r in judged]
    return _("Chip {chip}: {judged} of {total} op types judged against the roofs. Most headroom: {rows}. "
             "{notes} note(s).").format(chip=peaks.get("chip") or _("unknown"), judged=len(judged),
                                        total=len(doc.get("op_types") or []), rows=_none(_listed(rows, 3)),
                                        notes=len(doc.get("notes") or []))


def _summarize_scan(doc: dict[str, Any]) -> str:
    advice = [f"{s.get('id')} ({entry_text(s, 'title')})" for s in doc.get("suggestions") or []]
    return _("{root}: {scanned} Python file(s) scanned, {failed} failed, {findings} finding(s). Advice (static, no "
             "expected gain): {advice}.").format(
        root=doc.get("root"), scanned=doc.get("files_scanned"), failed=len(doc.get("files_failed") or []),
        findings=len(doc.get("findings") or []), advice=_none(_listed(advice, 3)))


_SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "suggest": _summarize_suggest, "profile": _summarize_profile, "search": _summarize_search,
    "entry": _summarize_entry, "compare": _summarize_compare, "roofline": _summarize_roofline,
    "scan": _summarize_scan,
}


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------

#: Tool name -> (document function, description).
TOOLS: dict[str, tuple[Callable[..., dict[str, Any]], str]] = {
    "profile": (profile_document, "Where the device time of a profile goes: op types by time with unit and pipe-bound "
                                  "class, symptoms, and what the data cannot judge. `path`: a profiler output folder, "
                                  "CSV, DB or archive."),
    "suggest": (suggest_document, "Findings for a profile, one per diagnosis, ranked by expected gain (a range with "
                                  "its basis: model, sourced or measured; bounded by the time covered and the "
                                  "roofline), each with the knowledge-base remedies that apply to the workload."),
    "search": (search_document, "Typo-tolerant search of the knowledge base (words, an operator name, a symptom, an "
                                "id; Chinese works too)."),
    "show": (show_document, "One knowledge-base entry: front matter, gain, evidence grade, sources and body."),
    "compare": (compare_document, "What changed between two profiles, per operator family (time, share, unit, bound) "
                                  "and in total. Records nothing."),
    "roofline": (roofline_document, "How far each op type is from the chip's compute and bandwidth roofs: achieved "
                                    "TFLOP/s and GB/s, efficiency, headroom (model estimates)."),
    "scan": (scan_document, "Static analysis of a model's Python source before any profile exists: compute-heavy "
                            "operators, CPU-fallback risks, CUDA-only code, fusion candidates, ranked advice."),
}


def run_tool(name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(document, summary) of tool ``name``; an AdvisorError propagates (the server makes it a tool error)."""
    function = TOOLS[name][0]
    document = function(**arguments)
    return document, summarize(document)


class UnknownLanguage(AdvisorError):
    """The ``lang`` argument of a tool names no language advisor speaks."""


def use_language(lang: str | None) -> str:
    """Speak ``lang`` (zh / en; None: the server's own, from its environment) until the next call; the previous one."""
    previous = current_lang()
    if lang is not None and normalise_lang(lang) is None:
        raise UnknownLanguage(f"lang {lang!r} is not one of {', '.join(LANGS)}")
    set_lang(lang)
    return previous


def error_message(exc: BaseException) -> str:
    """The one line the command would print for ``exc``."""
    return " ".join(error_lines(exc))


def build_server():
    """The MCPServer with every tool registered (imports the ``mcp`` SDK)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp_types import CallToolResult, TextContent
    except ImportError as exc:
        raise MissingSDK(f"the MCP server needs the mcp SDK 2.x ({exc.name or exc} is missing)",
                         hint="pip install 'opprof-advisor[mcp]'") from None


    # WARNING: a tool error is an answer the agent reads, not something to log on every call.
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    def register(name: str, function: Callable[..., dict[str, Any]], description: str) -> None:
        def call(lang: str | None = None, **arguments: Any) -> CallToolResult:
            # `lang` changes the summary, the entries' titles and the error line, never the JSON document

            previous = None
            try:
                previous = use_language(lang)
                document, summary = run_tool(name, arguments)
            except Exception as exc:  # noqa: BLE001 - every failure is a tool error with the CLI's one line
                raise ToolError(error_message(exc)) from None
            finally:
                set_lang(previous)
            return CallToolResult(content=[TextContent(type="text", text=summary)], structured_content=document)

        call.__name__ = name
        call.__doc__ = description
        call.__signature__ = _signature_of(function)  # the arguments the agent sees are the document function's
        server.add_tool(call, name=name, description=description, structured_output=False)

    for name, (function, description) in TOOLS.items():
        register(name, function, description)
    return server


def _signature_of(function: Callable[..., Any]):

    signature = inspect.signature(function)
    hints = typing.get_type_hints(function)
    parameters = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
    # every tool also takes the language of its summary and errors (zh / en)
    parameters.append(inspect.Parameter("lang", inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=typing.Optional[str]))
    return signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty)


def serve() -> None:
    """Serve the tools over stdio until the client closes the connection."""
    build_server().run("stdio")
