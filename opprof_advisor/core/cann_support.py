"""The CANN / torch_npu support table (``data/cann_support.yaml``) that classifies what a scan finds.

Each row names an operator or API, whether torch_npu runs it natively, risks a CPU / AI CPU fallback
or needs a replacement, the replacement API, and the sources that say so. The table is data: add a
row there, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from opprof_advisor.core import plain_yaml
from opprof_advisor.core.errors import SupportTableError
from opprof_advisor.core.i18n import N_

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # opprof_advisor/

#: Allowed values of ``support``.
SUPPORT_LEVELS: dict[str, str] = {
    "native": "runs on the NPU (AI Core / AI Vector, or HCCL for collectives)",
    "cpu_fallback_risk": "may run on the AI CPU / host, or split into AI CPU kernels",
    "needs_replacement": "does not run on the NPU as written; use the replacement",
}

#: Allowed values of ``category``, in report order.
CATEGORIES: tuple[str, ...] = ("fallback", "custom_kernel", "fusion", "compute", "migration", "distributed")

#: Each category as a heading, for the table, markdown and HTML renderings of a scan.
CATEGORY_TITLES: dict[str, str] = {
    "fallback": N_("CPU / AI CPU fallback risks"),
    "custom_kernel": N_("Custom CUDA kernels and CUDA-only libraries"),
    "fusion": N_("Fusion candidates"),
    "compute": N_("Compute-heavy operators"),
    "migration": N_("Migration (CUDA → NPU)"),
    "distributed": N_("Distributed (NCCL → HCCL)"),
}

_ROW_KEYS = {"op", "aliases", "family", "category", "support", "replacement", "note", "source"}


@dataclass(frozen=True)
class SupportRow:
    """One row of the support table."""

    op: str
    family: str | None
    category: str
    support: str
    replacement: str | None
    note: str
    sources: tuple[str, ...]  # full citations, resolved from the table's ``sources`` keys
    source_keys: tuple[str, ...]

    def source_text(self) -> str:
        """All citations of the row in one string."""
        return "; ".join(self.sources)


@dataclass(frozen=True)
class SupportTable:
    """The loaded table: rows by op and alias, plus the source list."""

    path: str
    rows: tuple[SupportRow, ...]
    index: dict[str, SupportRow]
    sources: dict[str, str]

    def lookup(self, op: str) -> SupportRow | None:
        """The row for an op name or alias, or None."""
        return self.index.get(op)


def support_table_path() -> Path:
    """``data/cann_support.yaml`` of a source checkout, else the copy shipped inside the package."""
    source_tree = _PACKAGE_DIR.parent / "data" / "cann_support.yaml"
    if source_tree.is_file():
        return source_tree
    return _PACKAGE_DIR / "_data" / "cann_support.yaml"


@lru_cache(maxsize=4)
def load_support_table(path: str | None = None) -> SupportTable:
    """Read and validate the support table (cached per path)."""
    table_path = Path(path) if path else support_table_path()
    try:
        text = table_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SupportTableError(
            f"cannot read the CANN support table ({exc.strerror or exc})",
            path=table_path,
            hint="reinstall opprof-advisor or restore data/cann_support.yaml",
        ) from None
    document = plain_yaml.parse(text, table_path, SupportTableError, "fix the YAML syntax")
    return _build_table(document, text, table_path)


def _build_table(document: object, text: str, path: Path) -> SupportTable:
    if not isinstance(document, dict) or not isinstance(document.get("ops"), list):
        raise SupportTableError("expected a mapping with `sources` and an `ops` list", path=path, line=1)
    sources = document.get("sources") or {}
    if not isinstance(sources, dict):
        raise SupportTableError("`sources` must map keys to citations", path=path, line=_line_of(text, "sources:"))
    rows: list[SupportRow] = []
    index: dict[str, SupportRow] = {}
    for raw in document["ops"]:
        row = _build_row(raw, sources, text, path)
        rows.append(row)
        for name in (row.op, *(raw.get("aliases") or ())):
            if name in index:
                raise SupportTableError(f"{name!r} is listed twice", path=path, line=_line_of(text, name))
            index[name] = row
    return SupportTable(path=str(path), rows=tuple(rows), index=index, sources=dict(sources))


def _build_row(raw: object, sources: dict, text: str, path: Path) -> SupportRow:
    if not isinstance(raw, dict) or not raw.get("op"):
        raise SupportTableError("every row needs an `op`", path=path, line=_line_of(text, "- op:"))
    op = str(raw["op"])
    line = _line_of(text, f"op: {op}")
    unknown = set(raw) - _ROW_KEYS
    if unknown:
        raise SupportTableError(f"row {op!r} has unknown keys {sorted(unknown)}", path=path, line=line)
    if raw.get("support") not in SUPPORT_LEVELS:
        raise SupportTableError(
            f"row {op!r}: support must be one of {', '.join(SUPPORT_LEVELS)}", path=path, line=line
        )
    if raw.get("category") not in CATEGORIES:
        raise SupportTableError(f"row {op!r}: category must be one of {', '.join(CATEGORIES)}", path=path, line=line)
    keys = raw.get("source") or []
    if isinstance(keys, str):
        keys = [keys]
    if not keys:
        raise SupportTableError(f"row {op!r} has no source", path=path, line=line, hint="every row must cite a source")
    missing = [key for key in keys if key not in sources]
    if missing:
        raise SupportTableError(f"row {op!r} cites unknown source keys {missing}", path=path, line=line)
    return SupportRow(
        op=op,
        family=raw.get("family"),
        category=raw["category"],
        support=raw["support"],
        replacement=raw.get("replacement"),
        note=str(raw.get("note") or ""),
        sources=tuple(str(sources[key]) for key in keys),
        source_keys=tuple(keys),
    )


def _line_of(text: str, needle: str) -> int | None:
    position = text.find(needle)
    return None if position < 0 else text.count("\n", 0, position) + 1
