"""The bodies of `suggest`, `profile`, `show`, `search`, `add` and `remove`: the option values in, the rendered document out.

One body per command, called by the Typer app (cli/_common.typer_command) with the values of cli/options.py's
table; each calls ``opprof_advisor.commands`` and renders. No Typer here; the core is imported inside each body so that a command pays only for
what it uses (tests/test_import_budget.py lists what a plain `suggest` may import).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from opprof_advisor.cli.output import (
    DelayedProgress, console, emit_json, err_console, executor_choice, print_items, show, write_html,
    write_sheet_formats,
)
from opprof_advisor import commands
from opprof_advisor.core.documents import document_kind
from opprof_advisor.core.errors import AdvisorError
from opprof_advisor.core.i18n import M_, Message, localize
from opprof_advisor.core.terminal import can_carry, one_line
from opprof_advisor.core.units import TEXT as U
from opprof_advisor.profile.builder import profile_to_json
from opprof_advisor.profiles import load_profile
from opprof_advisor.readers import separate_profiles
from opprof_advisor.kb.store import open_index as open_store_index
from opprof_advisor.render.text.kb import problems_warning
from opprof_advisor.render.text.kb import no_hits_line
from opprof_advisor.render.text.kb import search_table
from opprof_advisor.kb.add import add_entry
from opprof_advisor.kb.near_duplicates import closest_in_index
from opprof_advisor.render.text.kb import near_duplicate_line
from opprof_advisor.kb.remove import remove_entry
from opprof_advisor.render.text.kb import removed_line
from opprof_advisor.render.text.kb import problem_line
from opprof_advisor.kb.checks import check_warnings
from opprof_advisor.profile.export import export_profile


def each_profile(values: dict[str, Any], key: str, body) -> bool:
    """``--each``: run ``body`` on every separate profile under ``values[key]``, a heading line before each in a
    table and a list of them all after (path, format, device time, top op; two runs of one workload -> compare),
    one ``opprof-advisor/each/1`` document of them all in json; False when there is nothing to split."""
    found = separate_profiles(values[key]) if values.get("each") else []
    if not found:
        return False
    documents = []
    for child, fmt in found:
        if values["fmt"] == "json":
            document = body({**values, key: child}, quiet=True)
        else:
            print_items([f"== {one_line(child)} ({fmt}) =="])
            document = body({**values, key: child})
        documents.append({"path": str(child), "format": fmt, "summary": _each_summary(document), "document": document})
    if values["fmt"] == "json":
        emit_json({"schema": EACH_SCHEMA, "path": str(values[key]), "profiles": documents})
    else:
        print_items(_each_listing(values[key], documents))
    return True


def _each_summary(document: dict[str, Any] | None) -> dict[str, Any]:
    """Device time, the op type that takes most of it and the three largest, from a profile or suggest document."""
    facts = (document or {}).get("profile_document") or document or {}
    device = facts.get("device_time_us")
    ops = sorted((row for row in facts.get("op_types") or [] if row.get("time_us") is not None),
                 key=lambda row: -row["time_us"])
    top = ops[0] if ops else None
    return {"device_time_us": device, "top_op": top["op_type"] if top else None,
            "top_share": round(top["time_us"] / device, 6) if top and device else None,
            "top_ops": [row["op_type"] for row in ops[:3]]}


def _each_listing(path: Path, documents: list[dict[str, Any]]) -> list[str]:
    """The profiles analysed, one line each, and a compare line for two of one format whose three largest op types
    are the same (a before and an after of one workload, most likely)."""
    lines = [localize(M_("{n} separate profiles in {path}:", n=len(documents), path=path))]
    for item in documents:
        summary = item["summary"]
        device = U.time(summary["device_time_us"]) if summary["device_time_us"] is not None else "-"
        top = (M_("top {op} {share}", op=summary["top_op"], share=U.share(summary["top_share"]))
               if summary["top_share"] is not None else M_("top {op}", op=summary["top_op"]) if summary["top_op"]
               else M_("no op types"))
        lines.append(localize(M_("  {path}  {format}  device time {device}  {top}", path=item["path"],
                                 format=item["format"], device=device, top=top)))
    seen: dict[tuple, str] = {}
    for item in documents:
        ops = tuple(sorted(op.rstrip("_") for op in item["summary"]["top_ops"]))
        mark = (item["format"], ops)
        if ops and mark in seen:
            lines.append(localize(M_("{a} and {b} may be two runs of one workload (both {format}, the same largest op "
                                     "types): advisor compare '{a}' '{b}'", a=seen[mark], b=item["path"],
                                     format=item["format"])))
        seen.setdefault(mark, item["path"])
    return lines


#: The document of ``--each --format json``: every separate profile's own document, in folder order.
EACH_SCHEMA = "opprof-advisor/each/1"


def run_suggest(values: dict[str, Any], quiet: bool = False) -> dict[str, Any] | None:
    """Make the findings of a profile, with their gains and remedies, and print them (``quiet``: return them)."""
    if not quiet and each_profile(values, "profile", run_suggest):
        return None
    profile: Path = values["profile"]
    choice = executor_choice(values["executor"], values["scheduler"])
    with DelayedProgress(f"reading {profile.name}") as progress:
        document = commands.suggest(profile, top=values["top"], model=values["model"], kind=values["kind"],
                                    stack=values["stack"], explain=values["explain"], db=values["db"], progress=progress, executor=choice,
                                    warn=lambda message: warn([message]))
    if quiet:
        return document
    kind = document_kind(document)
    if values["fmt"] not in commands.SUGGEST_FORMATS.get(kind, ()):  # a serving or memory-only profile
        raise AdvisorError(M_("{path} holds a {kind} profile: its findings are written as {formats}, not {fmt}",
                              path=profile, kind=kind, formats=", ".join(commands.SUGGEST_FORMATS[kind]),
                              fmt=values["fmt"]))
    if write_sheet_formats(document, values["fmt"], values["output"], force=values["force"], inputs=[profile]):
        return
    if values["fmt"] == "html":
        write_html(document, values["output"], force=values["force"], inputs=[profile])
    else:
        show(document, values["fmt"])
    return document


def warn(warnings: list[str]) -> None:
    """Print each warning as one `warning: ...` line on stderr; a stderr that cannot take it does not stop the command
    (the output on stdout is what was asked for)."""
    for warning in warnings:
        if not _stderr_line(warning, prefix="warning: "):
            return


_SURROGATES = re.compile("[\udc80-\udcff]")


def _stderr_line(message: str, *, prefix: str = "") -> bool:
    """``message`` (a Message says it in the language in use) as one line on stderr; in English when stderr cannot
    show that language (an ASCII or Latin-1 terminal with --lang zh), as the error lines do. False when stderr
    could not take it."""
    text = localize(message)
    # (a path's bytes that are not UTF-8, as surrogates, are written back as they are: they do not decide the language)
    if isinstance(message, Message) and not can_carry(sys.stderr, _SURROGATES.sub("", text)):
        text = str.__str__(message)
    try:
        err_console.print(prefix + one_line(text), markup=False)
    except OSError:
        return False
    return True


def run_profile(values: dict[str, Any], quiet: bool = False) -> dict[str, Any] | None:
    """Read a profile and print its operator profile (and write the --export database); ``quiet``: return it."""
    if not quiet and each_profile(values, "path", run_profile):
        return None
    path: Path = values["path"]
    choice = executor_choice(values["executor"], values["scheduler"])
    with DelayedProgress(f"reading {path.name}") as progress:
        raw, profile = load_profile(path, progress, peaks=values["peaks"], executor=choice)
    if values["export"] is not None:
        written, counts = export_profile(values["export"], raw, profile, force=values["force"], inputs=[path])
        if counts["ranks"] and not counts["kernels"]:
            written_what = (f"{counts['op_types']} op types and {counts['ranks']} ranks (a job keeps no kernel "
                            "rows: export one rank's folder for its kernels)")
        else:
            written_what = f"{counts['kernels']} kernels and {counts['op_types']} op types"
        err_console.print(f"wrote {written_what} to {written}", markup=False)
    document = profile_to_json(profile)
    fmt = values["fmt"]
    if fmt in ("json", "csv", "xlsx"):
        document["op_types"] = document["op_types"][:values["top"]]  # as the table: --top rows
    if quiet:
        return document
    if write_sheet_formats(document, fmt, values["output"], force=values["force"], inputs=[path]):
        return
    if fmt == "json":
        show(document, "json")
    elif fmt == "html":
        write_html(document, values["output"], force=values["force"], inputs=[path])
    else:
        show(document, "table", top=values["top"])
    return document


def open_index(db: Path | None):
    """The KB index (built or refreshed when needed), its problems printed as one warning."""
    index = open_store_index(db)
    warn_problems(index)
    return index


def _say(message: str) -> None:
    """A warning line as it is, on stderr."""
    _stderr_line(message)


def warn_problems(index) -> None:
    """Print the index's problems (files not indexed) as one warning line on stderr."""
    warning = problems_warning(index.problems)
    if warning:
        _stderr_line(warning)


def run_show(values: dict[str, Any]) -> None:
    """Print one entry."""
    show(commands.show(values["entry_id"], db=values["db"], warn=_say), values["fmt"])


def run_search(values: dict[str, Any]) -> None:
    """Search the knowledge base and print the hits (a line on stderr when there is none, with JSON)."""

    document = commands.search(" ".join(values["query"]), kind=values["kind"], operator=values["operator"],
                               top=values["top"], db=values["db"], warn=_say)
    if document.get("query_cut_from"):  # (kb.search.MAX_QUERY_CHARS)
        given, kept = format(document["query_cut_from"], ","), format(len(document["query"]), ",")
        warn([M_("the query has {n} characters: only its first {kept} were searched", n=given, kept=kept)])
    if values["fmt"] == "json":
        emit_json(document)
        if not document["results"]:
            err_console.print(no_hits_line(document), markup=False)
        return
    print_items(search_table(document, width=console.width))


def run_add(values: dict[str, Any]) -> None:
    """Add a markdown entry to the user's KB and the index (a warning when it nearly copies an entry)."""

    entry, index = add_entry(values["file"], replace=values["replace"], db_path=values["db"])
    console.print(f"added {entry.id} ({entry.kind}) → {entry.path}", markup=False)
    close = closest_in_index(entry, index)  # the index the add left: no second freshness check
    index.close()
    if close is not None:  # a warning, not a refusal: two entries may rightly share their words
        err_console.print(near_duplicate_line(entry.id, close[0].id, close[1], close[0].title), markup=False)
    for warning in check_warnings([entry.path]):  # what the KB guide asks and the entry lacks: added anyway
        # named by the file the user gave (the one they edit), not by the copy in their KB folder
        line = problem_line({"path": values["file"], "line": warning.line, "message": warning.message})
        err_console.print(one_line(line), markup=False)


def run_remove(values: dict[str, Any]) -> None:
    """Remove an entry the user added, from their KB folder and the index."""

    document = remove_entry(values["entry_id"].strip(), db_path=values["db"]).to_json()
    if values["fmt"] == "json":
        emit_json(document)
    else:
        console.print(removed_line(document), markup=False)
