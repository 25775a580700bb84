"""Documents as spreadsheets: ``--format csv`` (the main table on stdout) and ``--format xlsx`` (a sheet per table).

The rows are the document's own rows with its own keys as column names and its numbers unformatted
(``time_us`` in µs, ``share`` as 0..1), so a sheet filters and sums exactly like the JSON it came
from; lists are joined with ``; ``. ``suggest``: one row per finding with its expected gain
(``gain_low_us`` ... ``gain_model``), its remedies (the lead first), evidence, similar cases, the
entries left out, notes;
``profile``: op types, symptoms, notes; ``compare``: op families, the kernel side by side, notes.
The csv output is the first of these tables. XlsxWriter (``pip install 'opprof-advisor[xlsx]'``)
is imported only to write a workbook.
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Any, Sequence

from opprof_advisor.core.errors import OutputError
from opprof_advisor.core.documents import document_kind
from opprof_advisor.core.outputs import check_target, replacing
from opprof_advisor.render.phrases import gain_model, gain_us

Table = tuple[str, list[str], list[list[Any]]]  # (sheet name, columns, rows)

#: Written into the workbook's properties; how an earlier export is recognised (replaced without --force).
GENERATOR = "opprof-advisor"

_SUGGESTION_COLUMNS = ["rank", "id", "family", "title", "stake_us", "stake_share", "gain_low_us", "gain_high_us",
                       "gain_low_pct", "gain_high_pct", "gain_of", "gain_model", "gain_assumptions", "confidence",
                       "lead_remedy", "alternatives", "matched_symptoms", "matched_operators", "first_step", "show"]
_REMEDY_COLUMNS = ["rank", "finding", "order", "role", "id", "kind", "title", "first_step", "why_applies", "relevance",
                   "evidence_grade", "sources"]


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}={v}" for k, v in value.items())
    return value if value is None or isinstance(value, (int, float, bool)) else str(value)


def _rows(items: Sequence[dict[str, Any]], columns: list[str]) -> list[list[Any]]:
    return [[_cell(item.get(column)) for column in columns] for item in items]


def _notes(doc: dict[str, Any]) -> Table:
    return ("notes", ["note"], [[str(note)] for note in doc.get("notes") or []])


def suggest_tables(doc: dict[str, Any]) -> list[Table]:
    """Findings (each with its expected gain spread into columns), their remedies, evidence rows, similar cases,
    the entries left out, notes."""
    flat, remedies = [], []
    for s in doc.get("suggestions") or []:
        gain = s.get("expected_gain") or {}
        low_us, high_us = gain_us(gain)
        listed = s.get("remedies") if isinstance(s.get("remedies"), list) else []
        listed = [r for r in listed if isinstance(r, dict)]
        operators = list(dict.fromkeys(e.get("op_type") for e in s.get("evidence") or [] if e.get("op_type")))
        flat.append({**s, "gain_low_us": low_us, "gain_high_us": high_us, "gain_low_pct": gain.get("low_pct"),
                     "gain_high_pct": gain.get("high_pct"), "gain_of": gain.get("of"),
                     "gain_model": gain_model(gain, s) or None, "gain_assumptions": gain.get("assumptions"),
                     "lead_remedy": listed[0].get("id") if listed else None,
                     "alternatives": [r.get("id") for r in listed[1:]], "matched_operators": operators})
        remedies += [{**r, "rank": s.get("rank"), "finding": s.get("id"), "order": number,
                      "role": "lead" if number == 1 else "alternative"} for number, r in enumerate(listed, 1)]
    share_of = (doc.get("profile") or {}).get("reference") or "device time"  # what each evidence share is of
    evidence = [{"rank": s.get("rank"), "id": s.get("id"), **e, "share_of": share_of} for s in doc.get("suggestions") or []
                for e in s.get("evidence") or []]
    evidence_columns = ["rank", "id", "op_type", "time_us", "share", "share_of", "why"]
    case_columns = ["id", "title", "similarity", "mix_cosine", "symptom_overlap", "why"]
    left_out = [item for item in doc.get("left_out") or [] if isinstance(item, dict)]
    return [("suggestions", _SUGGESTION_COLUMNS, _rows(flat, _SUGGESTION_COLUMNS)),
            ("remedies", _REMEDY_COLUMNS, _rows(remedies, _REMEDY_COLUMNS)),
            ("evidence", evidence_columns, _rows(evidence, evidence_columns)),
            ("similar cases", case_columns, _rows(doc.get("similar_cases") or [], case_columns)),
            ("left out", ["id", "why"], _rows(left_out, ["id", "why"])), _notes(doc)]


def profile_tables(doc: dict[str, Any]) -> list[Table]:
    """Op types, symptoms, notes."""
    op_columns = ["op_type", "family", "unit", "count", "time_us", "share", "bound", "busiest_pipe", "busiest_ratio",
                  "block_dim", "bound_why"]
    symptom_columns = ["id", "share", "base", "time_us", "ceiling_us", "op_types", "detail"]
    return [("op types", op_columns, _rows(doc.get("op_types") or [], op_columns)),
            ("symptoms", symptom_columns, _rows(doc.get("symptoms") or [], symptom_columns)), _notes(doc)]


def compare_tables(doc: dict[str, Any]) -> list[Table]:
    """Op families before and after, the msOpProf kernel side by side, notes."""
    family_columns = ["op_type", "before_us", "after_us", "delta_pct", "before_share", "after_share", "unit_before",
                      "unit_after", "bound_before", "bound_after", "status"]
    kernel_columns = ["metric", "before", "after"]
    return [("op families", family_columns, _rows(doc.get("op_types") or [], family_columns)),
            ("kernel", kernel_columns, _rows(doc.get("kernel_rows") or [], kernel_columns)), _notes(doc)]


TABLES = {"suggest": suggest_tables, "profile": profile_tables, "compare": compare_tables}


def tables_of(doc: dict[str, Any]) -> list[Table]:
    """The tables of a suggest, profile or compare document."""
    return TABLES[document_kind(doc)](doc)


def render_csv(doc: dict[str, Any], **_options: Any) -> str:
    """The document's main table as CSV (a header row, then one row per item)."""
    _name, columns, rows = tables_of(doc)[0]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return buffer.getvalue()


def is_workbook(path: Path) -> bool:
    """True when ``path`` is an xlsx workbook written by advisor (its properties name the generator)."""
    try:
        with zipfile.ZipFile(path) as book:
            return GENERATOR.encode() in book.read("docProps/core.xml")
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def write_xlsx(doc: dict[str, Any], output: Path | None, *, force: bool = False, inputs: Sequence[Path] = ()) -> Path:
    """Write every table of ``doc`` into one workbook, a sheet each (atomically, never into an input)."""
    if output is None:
        raise OutputError("--format xlsx needs --output FILE.xlsx", hint="add --output advice.xlsx")
    try:
        import xlsxwriter
    except ImportError:
        raise OutputError("--format xlsx needs XlsxWriter", hint="pip install 'opprof-advisor[xlsx]'") from None
    target = check_target(output, what="a workbook", is_ours=is_workbook, force=force, inputs=inputs)
    with replacing(target) as tmp:
        book = xlsxwriter.Workbook(str(tmp), {"nan_inf_to_errors": True})
        book.set_properties({"title": str(doc.get("schema")), "author": GENERATOR, "comments": GENERATOR})
        bold = book.add_format({"bold": True})
        for name, columns, rows in tables_of(doc):
            sheet = book.add_worksheet(name[:31])
            sheet.write_row(0, 0, columns, bold)
            for number, row in enumerate(rows, 1):
                sheet.write_row(number, 0, row)
            sheet.freeze_panes(1, 0)
        book.close()
    return target
