"""The bulk path of a big build (worker processes parse, FTS5 filled in one pass in a thread while the search
tables are computed) writes exactly the index the row-by-row path writes."""

from __future__ import annotations

import sqlite3

from conftest import ROOT
import subprocess
import sys

import pytest

from opprof_advisor.kb import index_build

from opprof_advisor.kb import index_fts_side

from opprof_advisor.kb import index_sync

from opprof_advisor.kb import store
from opprof_advisor.core.errors import StoreNotWritable

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
        conn.execute("insert into entries_fts (entries_fts) values ('integrity-check')")  # raises when damaged
        return True
    finally:
        conn.close()


@pytest.mark.parametrize("side", [False, True], ids=["fts-rebuild", "fts-by-helper"])
def test_bulk_build_writes_the_index_of_the_row_by_row_build(tmp_path, monkeypatch, side):
    # FTS5 filled in one pass here, or by a helper process in a side file copied in (index_fts_side)
    started = []
    start = index_fts_side._start_helper
    monkeypatch.setattr(index_fts_side, "SIDE_MIN_ROWS", 10 if side else 10**9)
    monkeypatch.setattr(index_fts_side, "_start_helper", lambda *args: started.append(1) or start(*args))
    rows, bulk = build_rows_then_bulk(tmp_path, monkeypatch)
    assert len(started) == side
    assert len(rows["entries"]) > 100 and rows["bm25"]["nms"]
    assert rows == bulk
    assert integrity_checked(tmp_path / "bulk.db")
    # and an entry added afterwards reaches FTS5 through the trigger the bulk path put back
    assert [name for name, _ in bulk["triggers"]] == ["entries_ad", "entries_ai", "entries_au"]


@pytest.mark.parametrize("exit_code", [3, -9])
def test_a_failed_fts_helper_leaves_the_build_to_fill_fts5_itself(tmp_path, monkeypatch, exit_code):
    # The helper exits with an error, or is killed, before writing its side file: the build fills FTS5 itself.
    def failing(path):
        code = "import sys; sys.exit(3)" if exit_code > 0 else "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
        # (the first one is given its input, which it leaves unread: the writing side sees a broken pipe)
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE if exit_code > 0 else None)

    monkeypatch.setattr(index_fts_side, "SIDE_MIN_ROWS", 10)
    monkeypatch.setattr(index_fts_side, "_start_helper", failing)
    rows, bulk = build_rows_then_bulk(tmp_path, monkeypatch)
    assert rows == bulk and rows["bm25"]["hccl"]
    assert integrity_checked(tmp_path / "bulk.db")


def recorded_helpers(monkeypatch) -> list:
    """The FTS5 helpers a bulk build (of 10 rows or more) starts, as they are started."""
    helpers = []
    start = index_fts_side._start_helper
    monkeypatch.setattr(index_fts_side, "SIDE_MIN_ROWS", 10)
    monkeypatch.setattr(index_fts_side, "_start_helper", lambda *args: helpers.append(start(*args)) or helpers[-1])
    monkeypatch.setattr(index_sync, "BULK_FTS_ROWS", 10)
    return helpers


def test_a_build_that_fails_after_starting_the_fts_helper_leaves_no_helper_nor_side_file(tmp_path, monkeypatch):
    helpers = recorded_helpers(monkeypatch)
    monkeypatch.setattr(index_sync, "POOL_MIN_FILES", 10)

    def broken(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(index_build, "fill_search_tables", broken)
    with pytest.raises(StoreNotWritable):
        store.build_index(tmp_path / "bulk.db", kb_dirs=[ROOT / "kb"], rebuild=True)
    assert len(helpers) == 1 and helpers[0].returncode is not None  # waited for (killed if it still ran)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bulk.db.lock"]


def test_an_fts_helper_whose_input_cannot_be_written_does_not_hold_the_build(tmp_path, monkeypatch):
    # Pickling the helper's input fails (memory ...): the helper is stopped rather than left waiting for the
    # rest of its input, and the build fills FTS5 itself.
    import pickle

    def failing_dump(*_args, **_kwargs):
        raise MemoryError

    monkeypatch.setattr(index_fts_side, "SIDE_MIN_ROWS", 10)
    monkeypatch.setattr(pickle, "dump", failing_dump)
    rows, bulk = build_rows_then_bulk(tmp_path, monkeypatch)
    assert rows == bulk and integrity_checked(tmp_path / "bulk.db")


def test_an_insert_that_fails_stops_the_fts_helper_started_for_it(tmp_path, monkeypatch):
    helpers = recorded_helpers(monkeypatch)
    monkeypatch.setattr(index_sync, "POOL_MIN_FILES", 10**9)  # parsed here, where the rows are damaged below
    values = index_sync._row_values
    title = index_sync._ROW_COLUMNS.index("title")
    monkeypatch.setattr(index_sync, "_row_values", lambda row: tuple(
        None if number == title and row["id"] == "nms-on-npu" else value for number, value in enumerate(values(row))))
    with pytest.raises(sqlite3.IntegrityError):  # entries.title is NOT NULL
        store.build_index(tmp_path / "bulk.db", kb_dirs=[ROOT / "kb"], rebuild=True)
    assert len(helpers) == 1 and helpers[0].returncode is not None
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bulk.db.lock"]
