"""The knowledge base in the terminal: search hits, one entry, the entry list, the coverage tables, kb check.

Both `advisor search` paths (the Typer command and the Typer-free ``cli/fast_search.py``) print
through ``search_table``, so their output is the same byte for byte.
"""

from __future__ import annotations

from typing import Any

from opprof_advisor.render.phrases import entry_gain_line
from opprof_advisor.vocabulary import EVIDENCE_GRADES

#: Below this terminal width the operators column is left out so titles are not squeezed.
WIDE_COLUMNS = 120


def no_hits_line(doc: dict[str, Any]) -> str:
    """The line printed when a search finds nothing (with did-you-mean words where there are some)."""
    query, close = doc.get("query"), doc.get("did_you_mean") or []
    if close:
        return f"no entries match {query!r}; did you mean {', '.join(close)}?"
    return f"no entries match {query!r}; see `advisor kb list` for every entry"


def problems_warning(problems: list[Any]) -> str | None:
    """A one-line warning about problems met while indexing, or None."""
    if not problems:
        return None
    files = len({problem.path for problem in problems})
    return (f"warning: {len(problems)} knowledge-base problem(s) in {files} file(s); invalid files are "
            "not indexed — run `advisor kb check` to list them")


def search_table(doc: dict[str, Any], *, width: int = 80, **_: Any) -> list:
    """The ranked hits (rank, id, kind, score, title, and operators when ``width`` allows), or why none."""
    from rich.table import Table
    from rich.text import Text

    hits = doc.get("results") or []
    if not hits:
        return [Text(no_hits_line(doc))]
    out: list = [Text(f"showing results for {doc['corrected']!r}", style="dim")] if doc.get("corrected") else []
    table = Table(box=None, pad_edge=False, header_style="bold")
    wide = width >= WIDE_COLUMNS
    for column in ("#", "id", "kind", "score"):
        table.add_column(column, justify="right" if column in ("#", "score") else "left", no_wrap=True)
    table.add_column("title")
    if wide:
        table.add_column("operators")
    for number, hit in enumerate(hits, 1):
        row = [str(number), hit["id"], hit["kind"], f"{hit['score']:.2f}", Text(hit["title"])]  # Text: no markup
        table.add_row(*row, *([", ".join(hit.get("operators") or [])] if wide else []))
    return out + [table]


def list_table(doc: dict[str, Any], *, width: int = 80, **_: Any) -> list:
    """Entries as a table (id, kind, evidence, title, and operators when ``width`` allows) and their count."""
    from rich.table import Table
    from rich.text import Text

    entries = doc.get("entries") or []
    table = Table(box=None, pad_edge=False, header_style="bold")
    wide = width >= WIDE_COLUMNS
    for column in ("id", "kind", "ev"):
        table.add_column(column, no_wrap=True)
    table.add_column("title")
    if wide:
        table.add_column("operators")
    for entry in entries:
        row = [entry["id"], entry["kind"], entry["evidence"], Text(entry["title"])]  # a title is text, not markup
        table.add_row(*row, *([", ".join(entry.get("operators") or [])] if wide else []))
    return [table, Text(f"{len(entries)} entries", style="dim")]


def stats_table(doc: dict[str, Any], **_: Any) -> list:
    """Counts by kind, grade and origin, the symptom and family coverage tables, what is under-answered."""
    from rich.text import Text

    out: list = [Text(f"{doc['entries']} entries, {doc['with_gain']} with a sourced gain")]
    for title, key in (("kind", "by_kind"), ("evidence grade", "by_evidence"), ("origin", "by_origin")):
        out.append(Text(f"  by {title}: " + ", ".join(f"{name} {count}" for name, count in doc[key].items())))
    out += [Text(""), _symptom_coverage(doc), Text(""), _family_coverage(doc)]
    uncovered = doc["uncovered_symptoms"]
    if uncovered:
        out.append(Text(f"fewer than {doc['min_answers']} answering entries: " + ", ".join(uncovered)))
    else:
        out.append(Text(f"every symptom has at least {doc['min_answers']} answering entries"))
    return out


def _symptom_coverage(stats: dict[str, Any]):
    """Symptom -> the entries that answer it (see kb_stats.answers_symptom), with how many list it per kind."""
    from rich.table import Table
    from rich.text import Text

    kinds = list(next(iter(stats["symptoms"].values()), {}))
    table = Table(box=None, pad_edge=False, header_style="bold", title="symptom coverage (entries that answer it)",
                  title_justify="left")
    table.add_column("symptom", no_wrap=True)
    table.add_column("answers", justify="right", no_wrap=True)
    for kind in kinds:
        table.add_column(kind, justify="right", no_wrap=True)
    table.add_column("answered by", overflow="fold")
    for symptom, ids in stats["answering"].items():
        short = len(ids) < stats["min_answers"]
        count = Text(str(len(ids)), style="bold red" if short else "")
        table.add_row(symptom, count, *(str(stats["symptoms"][symptom][kind]) for kind in kinds),
                      Text(", ".join(ids)))
    return table


def _family_coverage(stats: dict[str, Any]):
    """Operator family -> the entries about it (families no entry names included, so gaps show)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold", title="operator-family coverage",
                  title_justify="left")
    table.add_column("family", no_wrap=True)
    table.add_column("entries", justify="right", no_wrap=True)
    table.add_column("ids", overflow="fold")
    for family, ids in stats["families"].items():
        table.add_row(family, str(len(ids)), Text(", ".join(ids)))
    return table


def entry_table(doc: dict[str, Any], **_: Any) -> list:
    """One entry: its title, its front matter as a grid, and its body as markdown (links show their address)."""
    from rich.markdown import Markdown
    from rich.text import Text

    entry = doc.get("entry") or {}
    # The title is text: no markup, no markdown link. Links in the body keep their address: a
    # terminal hyperlink would hide where it goes.
    return [Text(str(entry.get("title")), style="bold"), entry_facts(entry), Text(""),
            Markdown(str(entry.get("body") or ""), hyperlinks=False)]


def entry_facts(entry: dict[str, Any]):
    """The front matter of an entry as a two-column grid (empty fields left out).

    Every value is Rich ``Text``: an entry's words are shown as written, never read as markup (a
    ``[link=...]`` in a summary would otherwise hide its address behind harmless words).
    """
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    joined = lambda key, sep=", ": sep.join(entry.get(key) or [])  # noqa: E731
    rows = [
        ("id", f"{entry.get('id')} ({entry.get('kind')}, {entry.get('origin')})"),
        ("summary", entry.get("summary")),
        ("gain", entry_gain_line(entry.get("gain"))),
        ("evidence", f"{entry.get('evidence')}: {EVIDENCE_GRADES.get(entry.get('evidence'), '?')}"),
        ("operators", joined("operators")),
        ("symptoms", joined("symptoms")),
        ("tags", joined("tags")),
        ("models", joined("models")),
        ("hardware", joined("hardware") or "any"),
        ("CANN", entry.get("cann") or "any"),
        ("op mix", " > ".join(entry.get("op_mix") or [])),
        ("related", joined("related")),
        ("sources", joined("sources", "\n")),
        ("file", entry.get("path")),
    ]
    for name, value in rows:
        if value:
            grid.add_row(name, Text(value))
    return grid


def check_table(doc: dict[str, Any], **_: Any) -> list:
    """`advisor kb check`: one line per problem (``path:line: message``), whatever the file name holds."""
    from opprof_advisor.terminal import one_line

    return [one_line(problem_line(p)) for p in doc.get("problems") or []]  # plain lines: never wrapped


def problem_line(problem: dict[str, Any]) -> str:
    """``path:line: message`` of a kb-check problem or warning."""
    return f"{problem.get('path')}:{problem.get('line') or 1}: {problem.get('message')}"


def check_summary(doc: dict[str, Any]) -> str:
    """``158 file(s) checked: no problems, 2 warning(s)``."""
    problems, warnings = doc.get("problems") or [], doc.get("warnings") or []
    bad = len({p.get("path") for p in problems})
    found = f"{len(problems)} problem(s) in {bad} file(s)" if problems else "no problems"
    if warnings:
        found += f", {len(warnings)} warning(s)"
    return f"{doc.get('files')} file(s) checked: {found}"
