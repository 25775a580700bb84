"""`advisor mcp`: the advisor's commands as Model Context Protocol tools, served over stdio.

An agent (an MCP client) calls ``profile``, ``suggest``, ``search``, ``show``, ``compare``,
``roofline`` and ``scan`` with paths and options as arguments. Each tool computes exactly what
the command of the same name computes and returns its JSON document (``opprof-advisor/<command>/1``,
what ``--format json`` prints) as the structured content, plus one paragraph of text that
summarises it for the model to read (in Chinese with the ``lang`` argument every tool takes). A
bad input is a tool error carrying the one line the command would print (``error: <file>: <what>
— <what to do>``); nothing is ever written (``compare`` records no outcome: that stays a
deliberate ``advisor compare --applied`` on the command line).

Each call computes in a process of its own (``work``), so that no call sees what another set (the
language, options) and a cancelled one can be stopped; its arguments are bounded (``MAX_TEXT``,
``MAX_ITEMS``, ``MAX_TOP``) before any work. This module holds the tools and needs no SDK; the official
``mcp`` SDK (2.x), an optional extra (``pip install 'opprof-advisor[mcp]'``), is imported by
``mcp/wire.py`` only when the server starts, so nothing else pays for it.
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
import contextlib
import ctypes
import inspect
import math
import multiprocessing.forkserver
import os
import signal
import sys
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
                     stack: str | None = None, explain: bool = False, db: str | None = None) -> dict[str, Any]:
    """The ``suggest/2`` document of ``advisor suggest --profile PATH --format json``, with the warnings."""
    warnings: list[str] = []
    document = commands.suggest(profile, top=top, model=model, kind=kind, stack=stack, explain=explain, db=db,
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


def said_in(lang: str | None, exc: BaseException) -> str:
    """``error_message(exc)`` in ``lang`` (None: the server's language), which is put back before this returns.

    For the server process only, whose calls all run on one event loop thread: nothing else runs between
    the two ``set_lang``. The tools themselves compute in processes of their own (``work``).
    """
    previous = current_lang()
    set_lang(lang or previous)
    try:
        return error_message(exc)
    finally:
        set_lang(previous)


# ---------------------------------------------------------------------------------------------
# What one call may ask, and the process that answers it
# ---------------------------------------------------------------------------------------------

#: The longest message (one line of JSON) the server reads, in bytes; a longer one is refused unread.
MAX_REQUEST_BYTES = 1 << 20
#: The longest text any argument may be (a path, a query, an id, a pattern): PATH_MAX, and a query that
#: the search answers at once.
MAX_TEXT = 4096
#: The most items a list argument may hold (scan's exclude patterns are each matched against every file).
MAX_ITEMS = 100
#: The largest ``top`` a tool takes.
MAX_TOP = 10_000
#: How long one call may compute before it is stopped, in seconds (``advisor mcp --timeout``; 0: no limit).
DEFAULT_TIMEOUT_S = 600.0
#: How long a cancelled call's process has to stop on SIGINT (and clean up) before it is killed, in seconds.
STOP_GRACE_S = 0.5


def minimum_top(tool: str) -> int:
    """The smallest ``top`` of ``tool``: what its command's ``--top`` takes."""
    return 0 if tool == "scan" else 1


class BadArgument(AdvisorError):
    """An argument of a tool call the server refuses before any work."""


class CallStopped(AdvisorError):
    """A tool call that ran out of time, or whose process ended (or could not start) without an answer."""


def work(connection: Any, name: str, arguments: dict[str, Any], lang: str) -> None:
    """The body of the process that computes one tool call: sends ("done", document, summary) or ("failed", line).

    A process per call, so that nothing one call sets (the language above all) reaches another, and so that
    a cancelled call can be stopped: SIGINT to the process group made here (KeyboardInterrupt unwinds the
    computation through its clean-ups), SIGKILL if it is still there after ``STOP_GRACE_S``.
    """
    _own_process_group()
    try:
        try:
            use_language(lang)
            document, summary = run_tool(name, arguments)
            outcome: tuple[Any, ...] = ("done", json_safe(document), json_safe(summary))
        except Exception as exc:  # noqa: BLE001 - every failure is a tool error with the CLI's one line
            outcome = ("failed", json_safe(error_message(exc)))
        connection.send(outcome)
    except (KeyboardInterrupt, OSError):
        pass  # the call was cancelled, or the server is gone: nobody listens for the answer
    finally:
        connection.close()


#: The signal a call's process gets when its parent ends (the fork server, which ends when the server does):
#: it stops the call, its process and whatever that started (``_parent_gone``).
PARENT_GONE = getattr(signal, "SIGHUP", None)
#: How often a call's process looks whether its parent is still there where the kernel cannot say it
#: (``PR_SET_PDEATHSIG`` is Linux's), in seconds.
PARENT_WATCH_S = 0.25
#: prctl(2)'s option that makes the kernel signal this process when its parent ends (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _own_process_group() -> None:
    """Make this process the leader of a process group of its own (the server stops it and whatever it started
    with one signal), and have it stop that group when the server is gone, even killed outright (SIGKILL
    leaves the server no moment to stop anything)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with contextlib.suppress(OSError, AttributeError):
        os.setpgid(0, 0)
    parent = os.getppid()
    forked = _let_go_of_the_fork_server()
    _end_with_parent(parent, forked)


def _let_go_of_the_fork_server() -> bool:
    """Close this process's copy of the descriptor multiprocessing's fork server watches; whether there was one
    (this process was forked by the fork server).

    The fork server (the parent of every call's process) runs until every process holding that descriptor has
    closed it: the server, and each call's process, which got a copy. Closed here, the fork server ends when the
    server ends (its end of the pipe closes, however the server died), whatever the calls still do; and a
    process the call forks later (scan's helpers) holds no copy either.
    """
    fork_server = getattr(multiprocessing.forkserver, "_forkserver", None)
    alive = getattr(fork_server, "_forkserver_alive_fd", None)
    if not isinstance(alive, int):
        return False
    with contextlib.suppress(OSError):
        os.close(alive)
    # (a fork server this process might want would be its own)
    fork_server._forkserver_alive_fd = fork_server._forkserver_address = fork_server._forkserver_pid = None
    return True


def _end_with_parent(parent: int, forked: bool) -> None:
    """Stop the call (``_parent_gone``) when ``parent`` ends: on Linux the kernel says it (PR_SET_PDEATHSIG) when
    the parent is the fork server (single-threaded: the signal follows the thread that forked, and the fork
    server's only thread lives as long as it does); elsewhere, or if prctl fails, a timer looks every
    ``PARENT_WATCH_S`` whether this process was given another parent."""
    if PARENT_GONE is None:
        return  # no signals to speak of (Windows): the server's own stop is all there is
    signal.signal(PARENT_GONE, _parent_gone)
    watched = False
    if forked and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError, TypeError):
            libc = ctypes.CDLL(None, use_errno=True)
            watched = libc.prctl(_PR_SET_PDEATHSIG, int(PARENT_GONE), 0, 0, 0) == 0
    if not watched and hasattr(signal, "setitimer"):
        def look(_signum: int, _frame: Any) -> None:
            if os.getppid() != parent:
                _parent_gone()

        signal.signal(signal.SIGALRM, look)
        signal.siginterrupt(signal.SIGALRM, False)  # a system call the timer interrupts carries on
        signal.setitimer(signal.ITIMER_REAL, PARENT_WATCH_S, PARENT_WATCH_S)
    if os.getppid() != parent:  # the parent ended before the kernel was told: the server is gone
        _parent_gone()


def _parent_gone(_signum: int | None = None, _frame: Any = None) -> None:
    """The server is gone (this call's parent ended with it): nobody reads the answer. Kill this call at once,
    its process and whatever it started (its process group); a process the call forked (which inherits this
    handler) only ends itself."""
    with contextlib.suppress(OSError):
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(1)


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON holds it: text without lone surrogates (a file name that is not UTF-8 shows its
    bytes as ``\\x..``), no NaN or infinity (null), keys as text, anything else as its text."""
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, dict):
        return {_utf8(str(key)): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int)):
        return value
    return _utf8(str(value))


def _utf8(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:  # os.fsdecode's surrogateescape: the bytes of a name that is not UTF-8
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")


def signature_of(function: Callable[..., Any]) -> inspect.Signature:
    """The arguments of a tool: those of its document function, and ``lang``."""
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function)
    parameters = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
    # every tool also takes the language of its summary and errors (zh / en)
    parameters.append(inspect.Parameter("lang", inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=typing.Optional[str]))
    return signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty)
