"""The bulk path of a big build (worker processes parse, each FTS5 table filled in one pass) writes exactly the
index the row-by-row path writes."""

from __future__ import annotations

import sqlite3

from conftest import ROOT

import pytest

from opprof_advisor.kb import index_sync

from opprof_advisor.kb import store

#: FTS5 words whose matches and bm25 scores are compared, and grams of the Chinese table.
WORDS = ("nms", "matmul", "host", "attention", "transdata", "hccl", "float32", "tiling", "yolov8", "cast")
GRAMS = ("算子", "融合", "算", "nms", "ai_cpu", "通信")


def everything(db) -> dict:
    """Every table a reader uses, rowids included, and what FTS5 answers (its segments may be laid out otherwise)."""
    conn = sqlite3.connect(db)
    try:
        tables = {"entries": conn.execute("select rowid, * from entries order by rowid").fetchall()}
        tables["files"] = conn.execute("select * from files order by path").fetchall()
        tables["meta"] = conn.execute("select * from meta where key != 'signed_at_ns' order by key").fetchall()
        tables["docsize"] = conn.execute("select * from entries_fts_docsize order by id").fetchall()
        tables["bm25"] = {word: conn.execute("select rowid, round(bm25(entries_fts), 9) from entries_fts where "
                                             "entries_fts match ? order by rowid", (word,)).fetchall() for word in WORDS}
        tables["zh_docsize"] = conn.execute("select * from entries_zh_docsize order by id").fetchall()
        tables["zh"] = {gram: conn.execute("select rowid, round(bm25(entries_zh), 9) from entries_zh where entries_zh "
                                           "match ? order by rowid", (f'"{gram}"',)).fetchall() for gram in GRAMS}
        tables["triggers"] = conn.execute("select name, sql from sqlite_master where type = 'trigger' "
                                          "order by name").fetchall()
    finally:
        conn.close()
    return tables


def build_rows_then_bulk(tmp_path, monkeypatch) -> tuple[dict, dict]:
    kb_dirs = [ROOT / "kb"]
    monkeypatch.setattr(index_sync, "BULK_FTS_ROWS", 10**9)
    monkeypatch.setattr(index_sync, "POOL_MIN_FILES", 10**9)
    store.build_index(tmp_path / "rows.db", kb_dirs=kb_dirs, rebuild=True).close()
    monkeypatch.setattr(index_sync, "BULK_FTS_ROWS", 10)
    monkeypatch.setattr(index_sync, "POOL_MIN_FILES", 10)
    store.build_index(tmp_path / "bulk.db", kb_dirs=kb_dirs, rebuild=True).close()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bulk.db", "bulk.db.lock", "rows.db", "rows.db.lock"]
    return everything(tmp_path / "rows.db"), everything(tmp_path / "bulk.db")


def integrity_checked(db) -> bool:
    conn = sqlite3.connect(db)
    try:
        for table in ("entries_fts", "entries_zh"):
            conn.execute(f"insert into {table} ({table}) values ('integrity-check')")  # raises when damaged
        return True
    finally:
        conn.close()


def test_bulk_build_writes_the_index_of_the_row_by_row_build(tmp_path, monkeypatch):
    rows, bulk = build_rows_then_bulk(tmp_path, monkeypatch)
    assert len(rows["entries"]) > 100 and rows["bm25"]["nms"] and rows["zh"]["算子"]
    assert rows == bulk
    assert integrity_checked(tmp_path / "bulk.db")
    # and an entry added afterwards reaches both FTS5 tables through the triggers the bulk path put back
    assert [name for name, _ in bulk["triggers"]] == ["entries_ad", "entries_ai", "entries_au", "entries_zh_ad",
                                                      "entries_zh_ai", "entries_zh_au"]


def test_an_insert_that_fails_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(index_sync, "BULK_FTS_ROWS", 10)
    monkeypatch.setattr(index_sync, "POOL_MIN_FILES", 10**9)  # parsed here, where the rows are damaged below
    values = index_sync._row_values
    title = index_sync._ROW_COLUMNS.index("title")
    monkeypatch.setattr(index_sync, "_row_values", lambda row: tuple(
        None if number == title and row["id"] == "nms-on-npu" else value for number, value in enumerate(values(row))))
    with pytest.raises(sqlite3.IntegrityError):  # entries.title is NOT NULL
        store.build_index(tmp_path / "bulk.db", kb_dirs=[ROOT / "kb"], rebuild=True)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bulk.db.lock"]
