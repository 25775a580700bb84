"""The knowledge base in the terminal: search hits, one entry, the entry list, the coverage tables, kb check.

`advisor search` prints through ``search_table``.
"""

from __future__ import annotations

from typing import Any

from opprof_advisor.core.i18n import M_, N_, _, localize
from opprof_advisor.render.phrases import entry_gain_line, entry_text, word
from opprof_advisor.render.text.fit import Column, dropped_note, fitted_table
from opprof_advisor.core.vocabulary import EVIDENCE_GRADES
from opprof_advisor.core.terminal import one_line
from opprof_advisor.render.text.styled import Text
from rich.text import Text as RichText
from rich.table import Table

#: The hit and entry tables: ids and scores whole; the operators give way first, then the kind.
SEARCH_COLUMNS = (Column("#", "right", whole=True), Column(N_("id"), whole=True), Column(N_("kind"), whole=True, drop=2),
                  Column(N_("score"), "right", whole=True), Column(N_("title"), least=24), Column(N_("operators"), drop=3))
LIST_COLUMNS = (Column(N_("id"), whole=True), Column(N_("kind"), whole=True, drop=2),
                Column(N_("grade"), whole=True, drop=1), Column(N_("title"), least=24), Column(N_("operators"), drop=3))


def no_hits_line(doc: dict[str, Any]) -> str:
    """The line printed when a search finds nothing (with did-you-mean words where there are some)."""
    query, close = doc.get("query"), doc.get("did_you_mean") or []
    if close:
        return _("no entries match {query}; did you mean {words}?").format(query=repr(query), words=", ".join(close))
    return _("no entries match {query}; see `advisor kb list` for every entry").format(query=repr(query))


def removed_line(doc: dict[str, Any]) -> str:
    """`advisor remove`: ``removed my-case (case) from your KB: <file>`` (and whether a shipped entry is back)."""
    line = _("removed {id} ({kind}) from your KB: {files}").format(id=doc.get("removed"), kind=word(doc.get("kind")),
                                                                   files=", ".join(doc.get("files") or []))
    if doc.get("builtin_back"):
        line += _("; the shipped entry {id} is in effect again").format(id=doc.get("removed"))
    return line


def near_duplicate_line(new_id: str, other_id: str, score: float, other_title: str) -> str:
    """The warning of `advisor add` when the new entry nearly copies an existing one."""
    return _("warning: {id} nearly duplicates {other} ({score:.0f}/100 alike in title and summary: \"{title}\"); "
             "check they are not the same advice (advisor show {other}, advisor remove {id})").format(
        id=new_id, other=other_id, score=score, title=other_title)


def problems_warning(problems: list[Any]) -> str | None:
    """A one-line warning about problems met while indexing, or None."""
    if not problems:
        return None
    files = len({problem.path for problem in problems})
    return M_("warning: {n} knowledge-base problem(s) in {files} file(s); invalid files are not indexed — run "
              "`advisor kb check` to list them", n=len(problems), files=files)


def search_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """The ranked hits (rank, id, kind, score, title, and operators when ``width`` allows), or why none."""
    hits = doc.get("results") or []
    if not hits:
        return [Text(no_hits_line(doc))]
    out: list = ([Text(_("showing results for {query}").format(query=repr(doc["corrected"])), style="dim")]
                 if doc.get("corrected") else [])
    rows = [(str(number), hit["id"], word(hit["kind"]), f"{hit['score']:.2f}", Text(entry_text(hit, "title")),
             ", ".join(hit.get("operators") or [])) for number, hit in enumerate(hits, 1)]  # Text: no markup
    table, dropped = fitted_table(SEARCH_COLUMNS, rows, width, box=None, pad_edge=False, header_style="bold")
    return out + [table, *dropped_note(dropped)]


def list_table(doc: dict[str, Any], *, width: int = 80, **_options: Any) -> list:
    """Entries as a table (id, kind, evidence, title, and operators when ``width`` allows) and their count."""
    entries = doc.get("entries") or []
    rows = [(entry["id"], word(entry["kind"]), entry["evidence"], Text(entry_text(entry, "title")),  # text, not markup
             ", ".join(entry.get("operators") or [])) for entry in entries]
    table, dropped = fitted_table(LIST_COLUMNS, rows, width, box=None, pad_edge=False, header_style="bold")
    return [table, *dropped_note(dropped), Text(_("{n} entries").format(n=len(entries)), style="dim")]


def stats_table(doc: dict[str, Any], **_options: Any) -> list:
    """Counts by kind, grade and origin, the symptom and family coverage tables, what is under-answered."""
    out: list = [RichText(_("{n} entries, {gain} with a sourced gain").format(n=doc["entries"], gain=doc["with_gain"]))]
    for title, key in ((_("by kind"), "by_kind"), (_("by evidence grade"), "by_evidence"), (_("by origin"), "by_origin")):
        out.append(RichText(f"  {title}: " + ", ".join(f"{word(name)} {count}" for name, count in doc[key].items())))
    out += [RichText(""), _symptom_coverage(doc), RichText(""), _family_coverage(doc)]
    uncovered = doc["uncovered_symptoms"]
    if uncovered:
        out.append(RichText(_("fewer than {n} answering entries: {ids}").format(n=doc["min_answers"], ids=", ".join(uncovered))))
    else:
        out.append(RichText(_("every symptom has at least {n} answering entries").format(n=doc["min_answers"])))
    return out


def _symptom_coverage(stats: dict[str, Any]):
    """Symptom -> the entries that answer it (see kb_stats.answers_symptom), with how many list it per kind."""
    kinds = list(next(iter(stats["symptoms"].values()), {}))
    table = Table(box=None, pad_edge=False, header_style="bold", title=_("symptom coverage (entries that answer it)"),
                  title_justify="left")
    table.add_column(_("symptom"), no_wrap=True)
    table.add_column(_("answers"), justify="right", no_wrap=True)
    for kind in kinds:
        table.add_column(word(kind), justify="right", no_wrap=True)
    table.add_column(_("answered by"), overflow="fold")
    for symptom, ids in stats["answering"].items():
        short = len(ids) < stats["min_answers"]
        count = RichText(str(len(ids)), style="bold red" if short else "")
        table.add_row(symptom, count, *(str(stats["symptoms"][symptom][kind]) for kind in kinds),
                      RichText(", ".join(ids)))
    return table


def _family_coverage(stats: dict[str, Any]):
    """Operator family -> the entries about it (families no entry names included, so gaps show)."""
    table = Table(box=None, pad_edge=False, header_style="bold", title=_("operator-family coverage"),
                  title_justify="left")
    table.add_column(_("family"), no_wrap=True)
    table.add_column(_("entries"), justify="right", no_wrap=True)
    table.add_column(_("ids"), overflow="fold")
    for family, ids in stats["families"].items():
        table.add_row(family, str(len(ids)), RichText(", ".join(ids)))
    return table


def entry_table(doc: dict[str, Any], **_options: Any) -> list:
    """One entry: its title, its front matter as a grid, and its body as markdown (links show their address)."""
    from rich.markdown import Markdown  # (markdown-it: only here)

    entry = doc.get("entry") or {}
    # The title is text: no markup, no markdown link. Links in the body keep their address: a
    # terminal hyperlink would hide where it goes.
    return [RichText(entry_text(entry, "title"), style="bold"), entry_facts(entry), RichText(""),
            Markdown(str(entry.get("body") or ""), hyperlinks=False)]


def entry_facts(entry: dict[str, Any]):
    """The front matter of an entry as a two-column grid (empty fields left out).

    Every value is Rich ``Text``: an entry's words are shown as written, never read as markup (a
    ``[link=...]`` in a summary would otherwise hide its address behind harmless words).
    """
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    joined = lambda key, sep=", ": sep.join(entry.get(key) or [])  # noqa: E731
    rows = [
        (N_("id"), f"{entry.get('id')} ({word(entry.get('kind'))}, {word(entry.get('origin'))})"),
        (N_("summary"), entry_text(entry, "summary")),
        (N_("first step"), entry_text(entry, "first_step")),  # the zh first step; English has it in the body
        (N_("gain"), entry_gain_line(entry.get("gain"))),
        (N_("evidence"), f"{entry.get('evidence')}: {_(EVIDENCE_GRADES.get(entry.get('evidence'), '?'))}"),
        (N_("operators"), joined("operators")),
        (N_("symptoms"), joined("symptoms")),
        (N_("tags"), joined("tags")),
        (N_("models"), joined("models")),
        (N_("hardware"), joined("hardware") or _("any")),
        ("CANN", entry.get("cann") or _("any")),
        (N_("op mix"), " > ".join(entry.get("op_mix") or [])),
        (N_("related"), joined("related")),
        (N_("sources"), joined("sources", "\n")),
        (N_("file"), entry.get("path")),
    ]
    for name, value in rows:
        if value:
            grid.add_row(_(name), RichText(value))
    return grid


def check_table(doc: dict[str, Any], **_options: Any) -> list:
    """`advisor kb check`: one line per problem (``path:line: message``), whatever the file name holds."""
    return [one_line(problem_line(p)) for p in doc.get("problems") or []]  # plain lines: never wrapped


def problem_line(problem: dict[str, Any]) -> str:
    """``path:line: message`` of a kb-check problem or warning."""
    return f"{problem.get('path')}:{problem.get('line') or 1}: {localize(problem.get('message'))}"


def check_summary(doc: dict[str, Any]) -> str:
    """``158 file(s) checked: no problems, 2 warning(s)``."""
    problems, warnings = doc.get("problems") or [], doc.get("warnings") or []
    bad = len({p.get("path") for p in problems})
    found = _("{n} problem(s) in {files} file(s)").format(n=len(problems), files=bad) if problems else _("no problems")
    if warnings:
        found += _(", {n} warning(s)").format(n=len(warnings))
    return _("{n} file(s) checked: {found}").format(n=doc.get("files"), found=found)
