"""The bulk path of a big build (worker processes parse, FTS5 filled in one pass in a thread while the search
tables are computed) writes exactly the index the row-by-row path writes."""

from __future__ import annotations

import sqlite3

from conftest import ROOT
from opprof_advisor import index_sync, store

#: FTS5 words whose matches and bm25 scores are compared, and the terms of the title trigram table.
WORDS = ("nms", "matmul", "host", "attention", "transdata", "hccl", "float32", "tiling", "yolov8", "cast")


def everything(db) -> dict:
    """Every table a reader uses, rowids included, and what FTS5 answers (its segments may be laid out otherwise)."""
    conn = sqlite3.connect(db)
    try:
        tables = {name: conn.execute(f"select rowid, * from {name} order by rowid").fetchall()
                  for name in ("entries", "search_entries", "search_words")}
        tables["files"] = conn.execute("select * from files order by path").fetchall()
        tables["search_postings"] = conn.execute("select * from search_postings order by kind, key").fetchall()
        tables["search_blobs"] = conn.execute("select * from search_blobs order by name").fetchall()
        tables["meta"] = conn.execute("select * from meta where key != 'signed_at_ns' order by key").fetchall()
        tables["docsize"] = conn.execute("select * from entries_fts_docsize order by id").fetchall()
        tables["bm25"] = {word: conn.execute("select rowid, round(bm25(entries_fts), 9) from entries_fts where "
                                             "entries_fts match ? order by rowid", (word,)).fetchall() for word in WORDS}
        tables["trigrams"] = {word: conn.execute("select rowid from search_title_trigrams where search_title_trigrams "
                                                 "match ? order by rowid", (word[:3],)).fetchall() for word in WORDS}
        tables["triggers"] = conn.execute("select name, sql from sqlite_master where type = 'trigger' "
                                          "order by name").fetchall()
    finally:
        conn.close()
    return tables


def test_bulk_build_writes_the_index_of_the_row_by_row_build(tmp_path, monkeypatch):
    kb_dirs = [ROOT / "kb"]
    monkeypatch.setattr(index_sync, "BULK_FTS_ROWS", 10**9)
    monkeypatch.setattr(index_sync, "POOL_MIN_FILES", 10**9)
    store.build_index(tmp_path / "rows.db", kb_dirs=kb_dirs, rebuild=True).close()
    monkeypatch.setattr(index_sync, "BULK_FTS_ROWS", 10)
    monkeypatch.setattr(index_sync, "POOL_MIN_FILES", 10)
    store.build_index(tmp_path / "bulk.db", kb_dirs=kb_dirs, rebuild=True).close()
    rows, bulk = everything(tmp_path / "rows.db"), everything(tmp_path / "bulk.db")
    assert len(rows["entries"]) > 100 and rows["bm25"]["nms"]
    assert rows == bulk
    # and an entry added afterwards reaches FTS5 through the trigger the bulk path put back
    assert [name for name, _ in bulk["triggers"]] == ["entries_ad", "entries_ai", "entries_au"]
