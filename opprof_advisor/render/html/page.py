"""The frame of every HTML report: escaping, links, sections, tables, legends, the page and writing it.

Every string that comes from a profile or a KB file goes through ``esc``; only http(s) sources
become links. A Content-Security-Policy in the page blocks scripts and remote loads even if a bug
ever let markup through. ``write_report`` writes a page atomically through ``outputs``.
"""

from __future__ import annotations

import html
import re
import unicodedata
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlsplit

from opprof_advisor import __version__
from opprof_advisor.core.errors import DocumentError
from opprof_advisor.core.i18n import N_, _, html_lang, localize
from opprof_advisor.render.phrases import reference_name
from opprof_advisor.core.units import HTML as U
from opprof_advisor.core.units import as_float
from opprof_advisor.core.vocabulary import UNIT_CLASS, UNITS
from opprof_advisor.core.outputs import head_contains, write_text
from opprof_advisor.core.terminal import printable


MAX_TABLE_ROWS = 200


LABEL_CHARS = 32


#: Display class (vocabulary.UNIT_CLASS values) -> CSS class carrying its colour.
CLASS_CSS: dict[str, str] = {
    "AI Core": "u-core",
    "AI Vector": "u-vector",
    "AI CPU": "u-cpu",
    "communication": "u-comm",
    "other": "u-other",
    "unknown": "u-unknown",
}


# Content-Security-Policy: inline styles only; no script, no remote fetch of any kind.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def esc(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def esc_text(value: Any) -> str:
    """Escape text for an element's content only (quotes kept as they are)."""
    return html.escape("" if value is None else str(value), quote=False)


#: How many Latin characters one wide (CJK) character takes in a chart label: a 13px Han glyph is a full
#: em, about 13 units, against about 8 for a Latin character of the fallback fonts (see charts.label_chars).
WIDE_CHAR = 1.7


def char_width(char: str) -> float:
    """1 for a Latin (narrow) character, WIDE_CHAR for a wide or full-width one (Chinese text, full-width ，（）)."""
    return WIDE_CHAR if unicodedata.east_asian_width(char) in "WF" else 1.0


def shorten(text: Any, limit: int = LABEL_CHARS) -> str:
    """Cut a label to the width of ``limit`` Latin characters with an ellipsis (Chinese characters count wide)."""
    text = "" if text is None else str(text)
    if len(text) <= limit and (text.isascii() or sum(map(char_width, text)) <= limit):
        return text
    width, end = 0.0, 0
    for end, char in enumerate(text):
        width += char_width(char)
        if width > limit - 1:
            break
    return text[:end] + "…"


def unit_class(unit: Any) -> str:
    """The display class (AI Core / AI Vector / AI CPU / communication / other / unknown) of a unit id."""
    return UNIT_CLASS.get(str(unit or "unknown"), "unknown")


def unit_label(unit: Any) -> str:
    """A readable name of a unit id."""
    return UNITS.get(str(unit or "unknown"), str(unit or "unknown"))


def render_source(source: Any, *, short: bool = False) -> str:
    """A source as a link when it is an http(s) URL, as plain text otherwise."""
    if isinstance(source, dict):
        url, text = source.get("url") or "", source.get("title") or source.get("url") or ""
    else:
        url = text = "" if source is None else str(source)
    if is_web_url(url):
        text = short_url(text) if short and text == url else text
        return f'<a href="{esc(url.strip())}" rel="noopener noreferrer">{esc(text)}</a>'
    return f'<span class="source-text">{linkify(text, short=short)}</span>'


def linkify(text: str, *, short: bool = False) -> str:
    """Escaped text in which the http(s) URLs written inside it become links."""
    out, last = [], 0
    for match in URL_IN_TEXT.finditer(text):
        url = match.group(0).rstrip(".,;:")
        if not is_web_url(url):
            continue
        out.append(esc(text[last:match.start()]))
        shown = short_url(url) if short else url
        out.append(f'<a href="{esc(url)}" rel="noopener noreferrer">{esc(shown)}</a>')
        last = match.start() + len(url)
    out.append(esc(text[last:]))
    return "".join(out)


URL_IN_TEXT = re.compile(r"https?://[^\s<>\"'()\[\]{}]+", re.IGNORECASE)


def short_url(url: str) -> str:
    """host/…/last-part of a long URL, for narrow table cells (the link keeps the full URL)."""
    parts = urlsplit(url.strip())
    tail = parts.path.rstrip("/").rsplit("/", 1)[-1]
    full = parts.netloc + parts.path
    return full if len(full) <= 40 else f"{parts.netloc}/…/{tail}"


def is_web_url(text: str) -> bool:
    """True for an absolute http(s) URL with a host (never javascript:, data:, file: ...)."""
    try:
        parts = urlsplit(text.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def render_sources(sources: Iterable[Any]) -> str:
    """The list of an entry's sources."""
    items = [f"<li>{render_source(s)}</li>" for s in sources or []]
    if not items:
        return muted(_("No source recorded."), "muted small")
    return f'<ul class="sources">{"".join(items)}</ul>'


def render_facts(facts: list[tuple[str, str]]) -> str:
    """A grid of label/value pairs (values are already escaped HTML)."""
    cells = "".join(f"<div><dt>{esc(label)}</dt><dd>{value}</dd></div>" for label, value in facts)
    return f'<dl class="facts">{cells}</dl>'


def render_notes(notes: Iterable[Any]) -> str:
    """The notes list; "cannot judge X" prefixes are emphasised."""
    items = []
    for note in notes:
        text = localize(note)
        head, sep, rest = text.partition(":")
        if sep and head.lower().startswith(("cannot judge", _("cannot judge"))):
            items.append(f"<li><strong>{esc(head)}:</strong>{esc(rest)}</li>")
        else:
            items.append(f"<li>{esc(text)}</li>")
    return f'<ul class="notes">{"".join(items)}</ul>'


def render_notes_section(notes: list[Any]) -> str:
    """The section with everything the data could not support."""
    if not notes:
        body = muted(_("No limits recorded: the data supported every check."))
    else:
        body = muted(_("What the data could not support, and what to collect next."), "muted small") + render_notes(notes)
    return section("notes", _("What the data cannot tell"), body)


def muted(text: str, css: str = "muted") -> str:
    """A paragraph of plain text in a muted class (the page's "nothing here" and explanation lines)."""
    return f'<p class="{css}">{esc(text)}</p>'


def heading(text: str) -> str:
    """A sub-heading inside a section."""
    return f"<h3>{esc(text)}</h3>"


def section(key: str, title: str, body: str) -> str:
    """A titled block of the page."""
    return (
        f'<section class="block" id="{esc(key)}" aria-labelledby="{esc(key)}-h">'
        f'<h2 id="{esc(key)}-h">{esc(title)}</h2>{body}</section>'
    )


def render_table(head: list[tuple[str, bool]], rows: list[str], caption: str = "", css: str = "") -> str:
    """A table: ``head`` holds (title, numeric) pairs, ``rows`` ready ``<tr>`` strings."""
    num_attr = ' class="num"'
    cells = "".join(f'<th scope="col"{num_attr if num else ""}>{esc(t)}</th>' for t, num in head)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    cls = f' class="{esc(css)}"' if css else ""
    return f'<div class="table-wrap"><table{cls}>{cap}<thead><tr>{cells}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def headings(head: Iterable[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """A table head of (title, numeric) pairs with each title in the language in use (titles marked with N_)."""
    return [(_(title), numeric) for title, numeric in head]


def render_legend(items: list[tuple[str, str]]) -> str:
    """A colour legend: (css class, label) pairs."""
    cells = "".join(f'<li><span class="swatch {cls}" aria-hidden="true"></span>{esc(label)}</li>' for cls, label in items)
    return f'<ul class="legend">{cells}</ul>'


#: The unit classes said in words (the AI Core / AI Vector / AI CPU names stay as Ascend writes them).
CLASS_WORDS = (N_("communication"), N_("other"), N_("unknown"))


def class_name(cls: str) -> str:
    """A unit class (CLASS_CSS key) in the language in use."""
    return _(cls) if cls in CLASS_WORDS else cls


def unit_legend(classes: Iterable[str]) -> str:
    """The legend of the unit classes present in a chart, in a fixed order."""
    present = set(classes)
    return render_legend([(css, class_name(name)) for name, css in CLASS_CSS.items() if name in present])


def is_scalar(value: Any) -> bool:
    """True for values that fit one table cell."""
    return value is None or isinstance(value, (str, int, float, bool))


@lru_cache(maxsize=1)
def load_css() -> str:
    """The report stylesheet shipped beside this module."""
    return resources.files("opprof_advisor.render.html").joinpath("report.css").read_text(encoding="utf-8")


FOOTER = N_("Generated by opprof-advisor {version}. Percentages are of the profile's device time unless stated "
            "otherwise; expected gains are bounded by the share of the matched operators (Amdahl).")


def render_page(title: str, kicker: str, subtitle: str, blocks: list[str]) -> str:
    """The full HTML document around the content blocks."""
    return (
        f'<!DOCTYPE html>\n<html lang="{html_lang()}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="opprof-advisor {esc(__version__)}">\n'
        f"<title>{esc(title)}</title>\n<style>\n{load_css()}</style>\n</head>\n<body>\n"
        f'<header class="page-header"><div class="wrap"><p class="kicker">{esc(kicker)}</p>'
        f'<h1>{esc(title)}</h1><p class="subtitle">{esc(subtitle)}</p></div></header>\n'
        f'<main class="wrap">\n{chr(10).join(blocks)}\n</main>\n'
        f'<footer class="page-footer"><div class="wrap"><p>{esc(_(FOOTER).format(version=__version__))}'
        "</p></div></footer>\n</body>\n</html>\n"
    )


def check_schema(doc: dict, command: str) -> None:
    """Refuse a document of another command (a wrong file passed to the wrong renderer)."""
    schema = str(doc.get("schema") or "") if isinstance(doc, dict) else ""
    if not schema.startswith(f"opprof-advisor/{command}/"):
        raise DocumentError(
            f"not an opprof-advisor {command} document (schema {schema or 'missing'!r})",
            hint=f"render it with the {command} report, or regenerate it with `advisor {command} --format json`",
        )


def file_name(path: Any) -> str:
    """A short name of a path for titles: its last part, or its parent's when the last is machine-made."""
    parts = [p for p in str(path or "").replace("\\", "/").split("/") if p]
    if not parts:
        return "profile"
    # Profilers name folders host_pid_timestamp_ascend_pt / PROF_000001_2025...: the folder above says more.
    if len(parts) > 1 and re.search(r"\d{8,}", parts[-1]):
        return parts[-2]
    return parts[-1]


VERSION_LABEL = {"cann": "CANN", "torch_npu": "torch_npu", "profiler_level": N_("Profiler level"), "torch": "PyTorch",
                 "driver": N_("Driver")}

#: The labels of the source, run and kernel keys the readers write (``fact_label`` makes them from the key);
#: marked here so the catalogue says them in Chinese. A key not listed keeps its English label.
FACT_LABELS = (N_("Path"), N_("Format"), N_("Chip"), N_("Producer"), N_("Workload"), N_("Reference"), N_("Cores"),
               N_("Rank id"), N_("Export type"), N_("Aic metrics"), N_("Db schema"), N_("Pipe utilization header"),
               N_("Compute task info block column"), N_("Fingerprint"), N_("Device time"), N_("Versions"),
               N_("Mode"), N_("Kernel"), N_("Op type"), N_("Task duration"), N_("Block dim"), N_("Mix block dim"),
               N_("Block imbalance"), N_("Bound pipe"))

#: Values of the ``workload`` key, said in words.
WORKLOAD_WORDS = {"inference": N_("inference"), "training": N_("training")}


def fact_label(key: Any) -> str:
    """The row title of a source / run key: ``VERSION_LABEL``, else the key in words, in the language in use."""
    key = str(key)
    return _(VERSION_LABEL.get(key) or key.replace("_", " ").capitalize())


def fact_value(key: Any, value: Any) -> str:
    """A source value as text: the workload and the reference in words, anything else as it is."""
    text = str(value)
    if key == "reference":
        return reference_name(text)
    return _(WORKLOAD_WORDS[text]) if key == "workload" and text in WORKLOAD_WORDS else text


def merged_source(summary: dict, profile: dict | None) -> dict:
    """Path/format/versions/chip/device time from the suggest summary and the profile document."""
    merged: dict[str, Any] = {}
    if profile:
        merged.update(profile.get("source") or {})
        for key in ("device_time_us", "compute_time_us", "communication_time_us"):
            if profile.get(key) is not None:
                merged[key] = profile[key]
    merged.update({k: v for k, v in summary.items() if v is not None and k not in ("op_types", "symptoms", "notes", "source")})
    return merged


def unique(items: list[Any]) -> list[Any]:
    """Items in order, first occurrence only."""
    seen, out = set(), []
    for item in items:
        key = str(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def subtitle_of(source: dict) -> str:
    """The subtitle under the title: path, format and device time."""
    bits = [str(source.get("path") or "")]
    if source.get("format"):
        bits.append(str(source["format"]))
    if as_float(source.get("device_time_us")) is not None:
        bits.append(_("device time {time}").format(time=U.time(source["device_time_us"])))
        if source.get("per_rank_of"):
            bits[-1] += _(" per rank (the mean of {n} ranks)").format(n=source["per_rank_of"])
    return " · ".join(b for b in bits if b)


def default_report_path(folder: Path, now: datetime | None = None) -> Path:
    """advisor-report-<timestamp>.html in ``folder``, with a -N suffix if that name is taken."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    candidate = folder / f"advisor-report-{stamp}.html"
    n = 2
    while candidate.exists():
        candidate = folder / f"advisor-report-{stamp}-{n}.html"
        n += 1
    return candidate


#: In the head of every report: how a file is recognised as an earlier report (replaceable without --force).
GENERATOR_MARKER = b'<meta name="generator" content="opprof-advisor'


def is_report(path: Path) -> bool:
    """True when ``path`` is an HTML report written by this tool."""
    return head_contains(path, GENERATOR_MARKER)


def write_report(html_text: str, output: Path | None = None, *, force: bool = False,
                 inputs: Iterable[Path | str] = ()) -> Path:
    """Write the page atomically to ``output`` (default: advisor-report-<timestamp>.html here); return its path.

    An existing ``output`` is replaced only when it is an earlier report or with ``force``; a path
    inside one of ``inputs`` (the profiles read) is refused.
    """
    target = Path(output) if output is not None else default_report_path(Path.cwd())
    # Control characters from profile text are harmless in a browser, but `cat report.html` replays them.
    return write_text(target.absolute(), printable(html_text), what="an HTML report", is_ours=is_report,
                      force=force, inputs=tuple(inputs))
