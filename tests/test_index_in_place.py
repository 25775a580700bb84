"""`advisor add` and `remove` update the live index in one transaction: what they leave equals a full rebuild."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import ROOT
from kb_helpers import body_for, write_entry
from opprof_advisor import index_build, store
from opprof_advisor.kb_search import search
from opprof_advisor.kb_search_index import open_tables, unpack
from opprof_advisor.kb_remove import remove_entry

QUERIES = ("nms", "matmul float32", "host", "fused attention", "cast transdata")


def contents(db) -> dict:
    """Everything a reader of the index can see, without rowids (an add appends, a rebuild numbers by id)."""
    conn = sqlite3.connect(db)
    try:
        entries = conn.execute("select * from entries order by id").fetchall()
        files = conn.execute("select path, source, origin, sha256, entry_id, problems from files order by path").fetchall()
        meta = dict(conn.execute("select key, value from meta where key not in ('signed_at_ns', 'stat_signature', "
                                 "'folders')").fetchall())
        fts_rows = conn.execute("select count(*) from entries_fts").fetchone()
        # search's candidate tables, by entry id (rowids differ): an add must leave search on its fast path
        search_entries = conn.execute("select id, kind, title from search_entries order by id").fetchall()
        words = conn.execute("select length, words, counts from search_words order by length").fetchall()
        candidates = candidate_tables(conn)
    finally:
        conn.close()
    return {"entries": entries, "files": files, "meta": meta, "fts_rows": fts_rows, "search_entries": search_entries,
            "search_words": words, **candidates}


def candidate_tables(conn) -> dict:
    """The postings, blobs and title trigrams of the candidate tables, rowids replaced by entry ids."""
    id_of = dict(conn.execute("select rowid, id from entries"))
    postings = {(kind, key): sorted(id_of[rowid] for rowid in unpack(blob))
                for kind, key, blob in conn.execute("select kind, key, rowids from search_postings")}
    assert all(list(unpack(blob)) == sorted(unpack(blob)) for (blob,) in conn.execute("select rowids from search_postings"))
    blobs = dict(conn.execute("select name, value from search_blobs"))
    by_id = {name: sorted((id_of[rowid], line) for rowid, line in enumerate(blobs.pop(name).split("\n")) if rowid in id_of)
             for name in ("ids", "titles", "kinds", "zh_texts")}
    assert all(len(value.split("\n")) == max(id_of) + 1 for name, value in
               conn.execute("select name, value from search_blobs where name in ('ids', 'titles', 'kinds', 'zh_texts')"))
    trigrams = {gram: sorted(id_of[rowid] for (rowid,) in conn.execute(
        "select rowid from search_title_trigrams where search_title_trigrams match ?", (f'"{gram}"',)))
        for gram in ("nms", "hos", "ost", "mat", "ion", "zzz")}
    return {"postings": postings, "blobs": blobs, "lines": by_id, "trigrams": trigrams}


def rankings(db) -> dict:
    index = store.open_index(db)
    try:
        found = {query: [(hit.id, round(hit.score, 9)) for hit in search(index, query)] for query in QUERIES}
        found["bm25"] = sorted((round(score, 9), entry_id) for entry_id, score in index.fts_scores("nms OR host").items())
        return found
    finally:
        index.close()


@pytest.fixture
def user_kb(advisor_home):
    kb = advisor_home / "kb"
    write_entry(kb, "host-nms-tip", kind="tip", title="Run NMS on the host", related=["nms-on-npu"], body=body_for("tip"))
    write_entry(kb, "dangling", title="Points at an entry still to come", related=["fresh-nms-case"])
    return kb


def suggested(db) -> list[str]:
    from opprof_advisor.advisor import open_advisor
    from opprof_advisor.profiles import read_profile

    profile = read_profile(ROOT / "data" / "examples" / "yolov8_torch_npu")
    return [s.entry.id for s in open_advisor(db, outcomes=False).suggest(profile, top=10).suggestions]


def test_an_add_leaves_the_index_a_rebuild_writes(tmp_path, advisor_home, user_kb):
    db = advisor_home / "advisor.db"
    store.build_index(db)
    assert [p.message for p in store.open_index(db).problems] == [
        "related id 'fresh-nms-case' names no entry"]
    inode = os.stat(db).st_ino
    source = write_entry(tmp_path / "drafts", "fresh-nms-case", kind="case", title="NMS moved off the device",
                         operators=["NMS"], related=["host-nms-tip"], body=body_for("case"))
    store.add_entry_file(source)
    assert os.stat(db).st_ino == inode  # written in place, not copied
    rebuilt = tmp_path / "rebuilt.db"
    store.build_index(rebuilt, rebuild=True)
    assert contents(db) == contents(rebuilt)
    assert store.open_index(db).problems == []  # the add resolved the dangling id, as a rebuild does
    assert rankings(db) == rankings(rebuilt)
    assert open_tables(store.open_index(db)) is not None  # the stamp matches: candidates, not every entry
    assert "fresh-nms-case" in [hit.id for hit in search(store.open_index(db), "nms")]
    assert suggested(db) == suggested(rebuilt) != []


def test_a_replace_and_a_remove_leave_the_index_a_rebuild_writes(tmp_path, advisor_home, user_kb):
    db = advisor_home / "advisor.db"
    store.build_index(db)
    over = write_entry(tmp_path / "drafts", "nms-on-npu", kind="tip", title="My own NMS advice", body=body_for("tip"))
    store.add_entry_file(over, replace=True)  # overrides a shipped entry of the same id
    assert store.open_index(db).get("nms-on-npu").origin == "user"
    assert contents(db) == contents(store.build_index(tmp_path / "a.db", rebuild=True).db_path)
    remove_entry("nms-on-npu")  # the shipped entry wins again: its unchanged file is parsed again
    assert store.open_index(db).get("nms-on-npu").origin == "builtin"
    assert contents(db) == contents(store.build_index(tmp_path / "b.db", rebuild=True).db_path)
    assert rankings(db) == rankings(tmp_path / "b.db")


def test_an_add_waits_for_a_reader_s_snapshot_then_writes_a_new_file(tmp_path, advisor_home, monkeypatch):
    db = advisor_home / "advisor.db"
    reader = store.build_index(db)
    ids = reader.ids()  # the reader's read transaction holds the file
    monkeypatch.setattr(index_build, "IN_PLACE_WAIT_S", 0.2)
    source = write_entry(tmp_path / "drafts", "while-read", kind="tip", title="Added while read", body=body_for("tip"))
    store.add_entry_file(source)
    assert reader.ids() == ids  # the reader still sees the state it opened
    assert "while-read" in store.open_index(db).ids()
    reader.close()


def test_kill_9_inside_the_add_s_transaction_keeps_the_index_whole(tmp_path, advisor_home):
    db = advisor_home / "advisor.db"
    store.build_index(db).close()
    source = write_entry(tmp_path / "drafts", "killed-add", kind="tip", title="Killed mid add", body=body_for("tip"))
    code = ("import os, sys\n"
            "from opprof_advisor import index_sync, store\n"
            "original = index_sync._write_meta\n"
            "def killed(conn, *args):\n"
            "    conn.execute('pragma cache_size = 1')\n"
            "    original(conn, *args)\n"
            "    conn.execute(\"update entries set body = body || ' x'\")\n"
            "    os.kill(os.getpid(), 9)\n"
            "index_sync._write_meta = killed\n"
            "store.add_entry_file(sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", code, str(source)], cwd=ROOT, env={**os.environ}, check=False)
    assert os.path.exists(f"{db}-journal")  # killed inside the transaction: a hot journal
    index = store.open_index(db)  # rolled back under the lock, then the copied file indexed
    assert "killed-add" in index.ids()
    assert not os.path.exists(f"{db}-journal")
    assert sqlite3.connect(db).execute("pragma integrity_check").fetchone() == ("ok",)
    assert contents(db) == contents(store.build_index(tmp_path / "rebuilt.db", rebuild=True).db_path)
    assert json.loads(contents(db)["meta"]["problems"]) == []
