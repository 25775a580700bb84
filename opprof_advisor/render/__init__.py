"""Documents to output: one renderer per (document, format), found by the document's schema id.

A command computes its result and turns it into one ``opprof-advisor/<command>/1`` JSON document
(``--format json`` prints it as it is). Every other format renders that document and computes
nothing; a saved document renders again with ``advisor report DOC.json --format ...``.

* ``table``: styled lines and tables for the terminal (``render.text``), printed by the CLI's console;
* ``markdown``: one string (``render.markdown``);
* ``html``: one self-contained page (``render.html``), written with ``render.html.page.write_report``.

Renderers get their numbers from ``render.units`` and their shared sentences from
``render.phrases``. Adding a format is one module and one line per document in ``RENDERERS``;
modules are imported only when used, so a command pays for the renderer it prints with.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from opprof_advisor.core.documents import document_kind
from opprof_advisor.core.errors import DocumentError

#: The formats renderers are registered for (``json`` is the document itself), with what each returns.
FORMATS: dict[str, str] = {
    "table": "a list of styled lines and tables (render.text.styled) for the terminal",
    "markdown": "a markdown string",
    "html": "a self-contained HTML page",
    "csv": "the main table as CSV text (xlsx: render.sheets.write_xlsx, a sheet per table)",
}

#: (document kind, format) -> "module:function". The kind is the middle of the schema id.
RENDERERS: dict[tuple[str, str], str] = {
    ("suggest", "table"): "opprof_advisor.render.text.suggest:suggest_table",
    ("suggest", "markdown"): "opprof_advisor.render.markdown:suggest_markdown",
    ("suggest", "html"): "opprof_advisor.render.html.suggest:render_suggest",
    ("suggest", "csv"): "opprof_advisor.render.sheets:render_csv",
    ("profile", "csv"): "opprof_advisor.render.sheets:render_csv",
    ("compare", "csv"): "opprof_advisor.render.sheets:render_csv",
    ("profile", "table"): "opprof_advisor.render.text.profile:profile_table",
    ("profile", "html"): "opprof_advisor.render.html.profile:render_profile",
    ("roofline", "table"): "opprof_advisor.render.text.profile:roofline_table",
    ("roofline", "html"): "opprof_advisor.render.html.roofline:render_roofline",
    ("memory", "table"): "opprof_advisor.render.text.workload:memory_table",
    ("serving", "table"): "opprof_advisor.render.text.workload:serving_table",
    ("memory", "html"): "opprof_advisor.render.html.workload:render_memory",
    ("serving", "html"): "opprof_advisor.render.html.workload:render_serving",
    ("compare", "table"): "opprof_advisor.render.text.loop:compare_table",
    ("compare", "html"): "opprof_advisor.render.html.compare:render_compare",
    ("scan", "table"): "opprof_advisor.render.text.scan:scan_table",
    ("scan", "markdown"): "opprof_advisor.render.markdown:scan_markdown",
    ("scan", "html"): "opprof_advisor.render.html.scan:render_scan",
    ("eval", "table"): "opprof_advisor.render.text.suggest:eval_table",
    ("outcomes", "table"): "opprof_advisor.render.text.loop:outcomes_table",
    ("outcomes", "markdown"): "opprof_advisor.render.markdown:outcomes_markdown",
    ("search", "table"): "opprof_advisor.render.text.kb:search_table",
    ("entry", "table"): "opprof_advisor.render.text.kb:entry_table",
    ("kb-list", "table"): "opprof_advisor.render.text.kb:list_table",
    ("kb-stats", "table"): "opprof_advisor.render.text.kb:stats_table",
    ("kb-check", "table"): "opprof_advisor.render.text.kb:check_table",
}

def formats_of(kind: str) -> list[str]:
    """The formats a document kind renders to, in FORMATS order."""
    return [fmt for fmt in FORMATS if (kind, fmt) in RENDERERS]


def renderer(kind: str, fmt: str) -> Callable[..., Any]:
    """The function rendering ``kind`` documents as ``fmt``; DocumentError when there is none."""
    target = RENDERERS.get((kind, fmt))
    if target is None:
        have = formats_of(kind)
        what = f"an opprof-advisor {kind} document" if kind else "an opprof-advisor document"
        hint = (f"use --format {' or '.join(have + ['json'])}" if have else
                "give a document saved from `advisor ... --format json`")
        raise DocumentError(f"no {fmt} rendering of {what}", hint=hint)
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def render(document: dict[str, Any], fmt: str, **options: Any) -> Any:
    """``document`` rendered as ``fmt`` (see FORMATS for what each returns); ``options`` go to the renderer."""
    return renderer(document_kind(document), fmt)(document, **options)
