"""The named, append-only schema migrations of advisor's two databases: the KB index and the recorded outcomes.

Each database has its own ``sqlite_utils.Migrations`` set, applied when the file is written: the
index (``opprof-advisor-index``, m001...) is a build artefact rebuilt from the markdown, the
outcomes (``opprof-advisor-outcomes``, o001...) are user data that only ever migrate forward. Add
a step by appending a function to its tuple; never edit or reorder a step that has shipped.
"""

from __future__ import annotations

INDEX_SET = "opprof-advisor-index"
OUTCOMES_SET = "opprof-advisor-outcomes"

#: Columns of the full-text index, in order, and their bm25 weights.
FTS_COLUMNS: tuple[tuple[str, float], ...] = (
    ("id", 6.0), ("kind", 1.0), ("title", 6.0), ("summary", 2.0), ("operators", 5.0),
    ("symptoms", 2.0), ("tags", 3.0), ("models", 2.0), ("body", 1.0),
)


# ---------------------------------------------------------------------------------------------
# The KB index
# ---------------------------------------------------------------------------------------------


def m001_create_tables(db) -> None:
    """Tables for build metadata, one row per source file, and one row per entry."""
    db["meta"].create({"key": str, "value": str}, pk="key", not_null={"value"})
    db["files"].create(
        {"path": str, "source": int, "origin": str, "sha256": str, "entry_id": str, "entry": str, "problems": str},
        pk="path", not_null={"source", "origin", "sha256"},
    )
    db["entries"].create(
        {
            "id": str, "kind": str, "title": str, "summary": str, "operators": str, "symptoms": str, "tags": str,
            "models": str, "hardware": str, "cann": str, "gain": str, "evidence": str, "sources": str,
            "related": str, "op_mix": str, "body": str, "path": str, "origin": str, "row_hash": str,
        },
        pk="id", not_null={"kind", "title", "row_hash"},
    )
    db["entries"].create_index(["kind"])


def m002_full_text_search(db) -> None:
    """FTS5 over the searchable columns, kept in sync with ``entries`` by triggers."""
    db["entries"].enable_fts([name for name, _ in FTS_COLUMNS], fts_version="FTS5", create_triggers=True,
                             tokenize="porter")


def m003_entry_requires(db) -> None:
    """The entry's ``requires:`` preconditions (JSON list of one-key mappings)."""
    db["entries"].add_column("requires", str)


def m004_entry_zh(db) -> None:
    """The entry's Chinese title, summary and first step (JSON mapping)."""
    db["entries"].add_column("zh", str)


def m005_file_stats(db) -> None:
    """Each file's size and mtime when its digest was taken: an unchanged file is not read again to be hashed."""
    db["files"].add_column("size", int)
    db["files"].add_column("mtime_ns", int)


def m006_entry_applies_to(db) -> None:
    """Where the entry's advice applies (JSON mapping) and the entries it contradicts (JSON list)."""
    db["entries"].add_column("applies_to", str)
    db["entries"].add_column("contradicts", str)


#: The tables of the search candidates and Chinese postings of earlier versions (hand-made postings beside FTS5).
_CANDIDATE_TABLES = ("search_entries", "search_postings", "search_words", "search_blobs", "search_title_trigrams")
#: The FTS5 table of the entries' Chinese grams (kb.zh): one token per gram, ``_`` kept inside Latin words.
ZH_FTS = "entries_zh"
#: What a build's bulk insert drops and puts back: each FTS5 table's insert trigger (migrations m002, m007).
INSERT_TRIGGERS = {"entries_fts": "entries_ai", ZH_FTS: "entries_zh_ai"}


def m007_chinese_grams(db) -> None:
    """Chinese search on FTS5: each entry's character grams (kb.zh) in ``zh_grams``, indexed token by token by
    ``entries_zh`` and kept in sync by triggers; the candidate tables and postings of earlier versions go."""
    for name in _CANDIDATE_TABLES:
        db.execute(f"drop table if exists {name}")
    db.execute("delete from meta where key = 'search_tables'")
    db["entries"].add_column("zh_grams", str)
    db.execute(f"create virtual table {ZH_FTS} using fts5(zh_grams, content='entries', content_rowid='rowid', "
               "tokenize=\"unicode61 tokenchars '_'\")")
    db.execute(f"insert into {ZH_FTS} ({ZH_FTS}) values ('rebuild')")  # consistent with the rows already there
    db.execute(f"create trigger {INSERT_TRIGGERS[ZH_FTS]} after insert on entries begin "
               f"insert into {ZH_FTS} (rowid, zh_grams) values (new.rowid, new.zh_grams); end")
    db.execute(f"create trigger entries_zh_ad after delete on entries begin "
               f"insert into {ZH_FTS} ({ZH_FTS}, rowid, zh_grams) values ('delete', old.rowid, old.zh_grams); end")
    db.execute(f"create trigger entries_zh_au after update on entries begin "
               f"insert into {ZH_FTS} ({ZH_FTS}, rowid, zh_grams) values ('delete', old.rowid, old.zh_grams); "
               f"insert into {ZH_FTS} (rowid, zh_grams) values (new.rowid, new.zh_grams); end")


INDEX_STEPS = (m001_create_tables, m002_full_text_search, m003_entry_requires, m004_entry_zh, m005_file_stats,
               m006_entry_applies_to, m007_chinese_grams)


INDEX_NAMES = tuple(step.__name__ for step in INDEX_STEPS)


def index_migrations():
    """The ``sqlite_utils.Migrations`` set that creates the index schema."""
    from sqlite_utils import Migrations

    steps = Migrations(INDEX_SET)
    for step in INDEX_STEPS:
        steps()(step)
    return steps


# ---------------------------------------------------------------------------------------------
# The recorded outcomes (user data: kept in their own file beside the index, never inside it,
# because the index is a build artefact that a rebuild replaces)
# ---------------------------------------------------------------------------------------------


def o001_create_outcomes(db) -> None:
    """One row per measured outcome of applied advice (see opprof_advisor.advice.outcomes.Outcome)."""
    db["outcomes"].create(
        {
            "id": int, "entry_id": str, "matched_families": str, "matched_before_us": float,
            "matched_after_us": float, "matched_gain_pct": float, "matched_share": float, "e2e_before_us": float,
            "e2e_after_us": float, "e2e_gain_pct": float, "before_fingerprint": str, "after_fingerprint": str,
            "before_path": str, "after_path": str, "chip": str, "cann": str, "recorded_at": str, "note": str,
        },
        pk="id", not_null={"entry_id"},
    )
    db["outcomes"].create_index(["entry_id"])


OUTCOME_STEPS = (o001_create_outcomes,)


def outcome_migrations():
    """The ``sqlite_utils.Migrations`` set of the outcomes database."""
    from sqlite_utils import Migrations

    steps = Migrations(OUTCOMES_SET)
    for step in OUTCOME_STEPS:
        steps()(step)
    return steps
