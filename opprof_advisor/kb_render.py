"""Turn knowledge-base results into output: JSON documents, one-line messages and Rich tables.

No printing and no Typer here, so both the Typer commands (cli/kb_commands.py) and the Typer-free
fast path of `advisor search` (fast_search.py) build exactly the same output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opprof_advisor.vocabulary import EVIDENCE_GRADES

if TYPE_CHECKING:
    from rich.table import Table

    from opprof_advisor.errors import Problem
    from opprof_advisor.models import Entry
    from opprof_advisor.search import SearchHit

SEARCH_SCHEMA = "opprof-advisor/search/1"
#: Below this terminal width the operators column is left out so titles are not squeezed.
WIDE_COLUMNS = 120


def search_document(query: str, hits: Sequence[SearchHit]) -> dict[str, Any]:
    """The JSON document of `advisor search --format json`."""
    return {"schema": SEARCH_SCHEMA, "query": query, "results": [hit.to_dict() for hit in hits]}


def no_hits_line(query: str, suggestions: Sequence[str]) -> str:
    """The line printed when a search finds nothing."""
    if suggestions:
        return f"no entries match {query!r}; did you mean {', '.join(suggestions)}?"
    return f"no entries match {query!r}; see `advisor kb list` for every entry"


def corrected_line(corrected: str) -> str:
    """The line printed when a query word was corrected before searching."""
    return f"showing results for {corrected!r}"


def problems_warning(problems: Sequence[Problem]) -> str | None:
    """A one-line warning about problems met while indexing, or None."""
    if not problems:
        return None
    files = len({problem.path for problem in problems})
    return (f"warning: {len(problems)} knowledge-base problem(s) in {files} file(s); invalid files are "
            "not indexed — run `advisor kb check` to list them")


def hits_table(hits: Sequence[SearchHit], width: int) -> Table:
    """Ranked hits as a table (rank, id, kind, score, title, and operators when ``width`` allows)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    wide = width >= WIDE_COLUMNS
    for column in ("#", "id", "kind", "score"):
        table.add_column(column, justify="right" if column in ("#", "score") else "left", no_wrap=True)
    table.add_column("title")
    if wide:
        table.add_column("operators")
    for number, hit in enumerate(hits, 1):
        row = [str(number), hit.id, hit.kind, f"{hit.score:.2f}", Text(hit.title)]  # Text: no markup
        table.add_row(*row, *([", ".join(hit.operators)] if wide else []))
    return table


def entries_table(entries: Sequence[Entry], width: int) -> Table:
    """Entries as a table (id, kind, evidence, title, and operators when ``width`` allows)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    wide = width >= WIDE_COLUMNS
    for column in ("id", "kind", "ev"):
        table.add_column(column, no_wrap=True)
    table.add_column("title")
    if wide:
        table.add_column("operators")
    for entry in entries:
        row = [entry.id, entry.kind, entry.evidence, Text(entry.title)]  # a title is text, not markup
        table.add_row(*row, *([", ".join(entry.operators)] if wide else []))
    return table


def symptom_coverage_table(stats: dict[str, Any]) -> Table:
    """Symptom -> the entries that answer it (see kb.answers_symptom), with how many list it per kind."""
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


def family_coverage_table(stats: dict[str, Any]) -> Table:
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


def describe_gain(entry: Entry) -> str:
    """One line for an entry's gain range, saying what it is a fraction of and who states it."""
    gain = entry.gain
    if gain is None:
        return "no sourced figure"
    span = f"{gain.low_pct:g}–{gain.high_pct:g} %" if gain.low_pct != gain.high_pct else f"{gain.low_pct:g} %"
    if gain.estimate:
        return f"{span} {gain.metric}, an unmeasured estimate in its source (not a measurement) — {gain.source}"
    if gain.scope == "end_to_end":
        return (f"{span} {gain.metric}, observed end to end in that case (not a promise for your model)"
                f" — {gain.source}")
    return f"{span} of the matched operators' {gain.metric} — {gain.source}"


def entry_facts(entry: Entry) -> Table:
    """The front matter of an entry as a two-column grid (empty fields left out).

    Every value is Rich ``Text``: an entry's words are shown as written, never read as markup (a
    ``[link=...]`` in a summary would otherwise hide its address behind harmless words).
    """
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    rows = [
        ("id", f"{entry.id} ({entry.kind}, {entry.origin})"),
        ("summary", entry.summary),
        ("gain", describe_gain(entry)),
        ("evidence", f"{entry.evidence}: {EVIDENCE_GRADES.get(entry.evidence, '?')}"),
        ("operators", ", ".join(entry.operators)),
        ("symptoms", ", ".join(entry.symptoms)),
        ("tags", ", ".join(entry.tags)),
        ("models", ", ".join(entry.models)),
        ("hardware", ", ".join(entry.hardware) or "any"),
        ("CANN", entry.cann or "any"),
        ("op mix", " > ".join(entry.op_mix)),
        ("related", ", ".join(entry.related)),
        ("sources", "\n".join(entry.sources)),
        ("file", entry.path),
    ]
    for name, value in rows:
        if value:
            grid.add_row(name, Text(value))
    return grid
