"""The knowledge base: markdown entries (``entry``: parse; ``checks``: the rules of kb/README.md; ``load``: both),
their SQLite index (``store``, ``index_build``, ``index_sync``, ``migrations``), search (``search``, ``zh``),
``add`` / ``remove`` and ``stats``. The names most callers need are here."""

from opprof_advisor.kb.entry import (
    KEYS, ParsedFile, build_entry, check_duplicates, check_related, entry_too_big, find_kb_files, first_step,
    parse_file, related_problems, suggest_close,
)
from opprof_advisor.kb.load import check_paths, load_entries, load_entry, validate_file, validate_paths

__all__ = ["KEYS", "ParsedFile", "build_entry", "check_duplicates", "check_related", "check_paths", "entry_too_big",
           "find_kb_files", "first_step", "load_entries", "load_entry", "parse_file", "related_problems",
           "suggest_close", "validate_file", "validate_paths"]
