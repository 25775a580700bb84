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
from opprof_advisor.kb import add as kb_add
from opprof_advisor.kb import index_build
from opprof_advisor.kb import store
from opprof_advisor.kb import manifest
from opprof_advisor.kb.search import search
from opprof_advisor.kb.remove import remove_entry

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
        # the Chinese grams' table, by entry id (rowids differ)
        zh = {gram: sorted(row[0] for row in conn.execute(
            "select entries.id from entries_zh join entries on entries.rowid = entries_zh.rowid "
            "where entries_zh match ?", (f'"{gram}"',))) for gram in ("算子", "融合", "nms", "ai_cpu")}
        for table in ("entries_fts", "entries_zh"):
            conn.execute(f"insert into {table} ({table}) values ('integrity-check')")  # raises when damaged
    finally:
        conn.close()
    return {"entries": entries, "files": files, "meta": meta, "fts_rows": fts_rows, "zh": zh}


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
    from opprof_advisor.advice.advisor import open_advisor
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
    kb_add.add_entry_file(source)
    assert os.stat(db).st_ino == inode  # written in place, not copied
    rebuilt = tmp_path / "rebuilt.db"
    store.build_index(rebuilt, rebuild=True)
    assert contents(db) == contents(rebuilt)
    assert store.open_index(db).problems == []  # the add resolved the dangling id, as a rebuild does
    assert rankings(db) == rankings(rebuilt)
    assert "fresh-nms-case" in [hit.id for hit in search(store.open_index(db), "nms")]
    assert suggested(db) == suggested(rebuilt) != []


def test_a_replace_and_a_remove_leave_the_index_a_rebuild_writes(tmp_path, advisor_home, user_kb):
    db = advisor_home / "advisor.db"
    store.build_index(db)
    over = write_entry(tmp_path / "drafts", "nms-on-npu", kind="tip", title="My own NMS advice", body=body_for("tip"))
    kb_add.add_entry_file(over, replace=True)  # overrides a shipped entry of the same id
    assert store.open_index(db).get("nms-on-npu").origin == "user"
    assert contents(db) == contents(store.build_index(tmp_path / "a.db", rebuild=True).db_path)
    remove_entry("nms-on-npu")  # the shipped entry wins again: its unchanged file is parsed again
    assert store.open_index(db).get("nms-on-npu").origin == "builtin"
    assert contents(db) == contents(store.build_index(tmp_path / "b.db", rebuild=True).db_path)
    assert rankings(db) == rankings(tmp_path / "b.db")


@pytest.fixture
def big_kb(monkeypatch):
    """The shipped KB and the user's count as big: an add lists only the folders whose mtime moved."""
    monkeypatch.setattr(manifest, "FULL_STAT_LIMIT", 10)

    def every_file(*args, **kwargs):
        raise AssertionError("an add on a big KB with a trusted manifest lists every file")

    return every_file


def save_by_replacement(path, text: str) -> None:
    """What vim, emacs and most editors do: a new file renamed over the old one (its folder's mtime moves)."""
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def test_on_a_big_kb_add_replace_and_remove_list_only_the_folders_that_moved(tmp_path, advisor_home, user_kb, big_kb,
                                                                             monkeypatch):
    db = advisor_home / "advisor.db"
    store.build_index(db).close()
    other = write_entry(tmp_path / "drafts", "unrelated", kind="tip", title="Shipped advice", body=body_for("tip"))
    kb_add.add_entry_file(other)  # the tips folder moved since the build: listed again
    monkeypatch.setattr(index_build, "scan_files", big_kb)
    index = kb_add.add_entry_file(write_entry(tmp_path / "drafts", "fresh-nms-case", kind="case", title="NMS moved off",
                                             operators=["NMS"], related=["host-nms-tip"], body=body_for("case")))
    assert index.id == "fresh-nms-case"
    over = write_entry(tmp_path / "drafts", "nms-on-npu", kind="tip", title="My own NMS advice", body=body_for("tip"))
    kb_add.add_entry_file(over, replace=True)
    # a user's edit saved meanwhile in another folder of the KB is in the index the next add leaves
    tip = user_kb / "tips" / "host-nms-tip.md"
    save_by_replacement(tip, tip.read_text(encoding="utf-8").replace("Run NMS on the host", "Run NMS on the CPU"))
    (user_kb / "recipes" / "dangling.md").unlink()  # and a file the user deleted
    write_entry(user_kb, "nms-on-npu", kind="case", title="A second file of one id", body=body_for("case"))
    kb_add.add_entry_file(write_entry(tmp_path / "drafts", "late-tip", kind="tip", title="Late", body=body_for("tip")))
    assert store.open_index(db).get("host-nms-tip").title == "Run NMS on the CPU"
    assert [p.message for p in store.open_index(db).problems] == [
        f"duplicate id 'nms-on-npu' (also {user_kb / 'cases' / 'nms-on-npu.md'}); not indexed"]
    monkeypatch.setattr(index_build, "scan_files", manifest.scan_files)  # the rebuilds list every file
    assert contents(db) == contents(store.build_index(tmp_path / "a.db", rebuild=True).db_path)
    assert rankings(db) == rankings(tmp_path / "a.db")
    monkeypatch.setattr(index_build, "scan_files", big_kb)
    remove_entry("nms-on-npu")  # the shipped entry wins again
    remove_entry("fresh-nms-case")
    monkeypatch.setattr(index_build, "scan_files", manifest.scan_files)
    assert contents(db) == contents(store.build_index(tmp_path / "b.db", rebuild=True).db_path)
    assert rankings(db) == rankings(tmp_path / "b.db")
    meta = manifest.read_meta(db)
    assert meta["stat_signature"] == manifest.stat_signature(manifest.kb_sources(), manifest.scan_files(manifest.kb_sources()))
    assert manifest.folders_unchanged(meta, manifest.kb_sources())  # the next search trusts the manifest the add left


def test_on_a_big_kb_a_removal_leaves_the_related_ids_it_left_dangling_in_the_problems(tmp_path, advisor_home, user_kb,
                                                                                         big_kb, monkeypatch):
    db = advisor_home / "advisor.db"
    store.build_index(db).close()
    monkeypatch.setattr(index_build, "scan_files", big_kb)
    kb_add.add_entry_file(write_entry(tmp_path / "drafts", "fresh-nms-case", kind="case", title="NMS moved off",
                                     related=["host-nms-tip"], body=body_for("case")))
    assert store.open_index(db).problems == []
    remove_entry("host-nms-tip")  # fresh-nms-case now names no entry
    assert [p.message for p in store.open_index(db).problems] == [
        "related id 'host-nms-tip' names no entry; did you mean 'host-os-tuning'?"]
    monkeypatch.setattr(index_build, "scan_files", manifest.scan_files)
    assert contents(db) == contents(store.build_index(tmp_path / "a.db", rebuild=True).db_path)


def test_an_add_waits_for_a_reader_s_snapshot_then_writes_a_new_file(tmp_path, advisor_home, monkeypatch):
    db = advisor_home / "advisor.db"
    reader = store.build_index(db)
    ids = reader.ids()  # the reader's read transaction holds the file
    monkeypatch.setattr(index_build, "IN_PLACE_WAIT_S", 0.2)
    source = write_entry(tmp_path / "drafts", "while-read", kind="tip", title="Added while read", body=body_for("tip"))
    kb_add.add_entry_file(source)
    assert reader.ids() == ids  # the reader still sees the state it opened
    assert "while-read" in store.open_index(db).ids()
    reader.close()


@pytest.mark.parametrize("limit", [manifest.FULL_STAT_LIMIT, 10], ids=["every-file", "moved-folders"])
def test_kill_9_inside_the_add_s_transaction_keeps_the_index_whole(tmp_path, advisor_home, limit):
    db = advisor_home / "advisor.db"
    store.build_index(db).close()
    source = write_entry(tmp_path / "drafts", "killed-add", kind="tip", title="Killed mid add", body=body_for("tip"))
    code = ("import os, sys\n"
            "from opprof_advisor.kb import add as kb_add, index_sync, manifest\n"
            f"manifest.FULL_STAT_LIMIT = {limit}\n"
            + ("from opprof_advisor.kb import index_build\nindex_build.scan_files = None\n" if limit == 10 else "") +
            "original = index_sync._write_meta\n"
            "def killed(conn, *args):\n"
            "    conn.execute('pragma cache_size = 1')\n"
            "    original(conn, *args)\n"
            "    conn.execute(\"update entries set body = body || ' x'\")\n"
            "    os.kill(os.getpid(), 9)\n"
            "index_sync._write_meta = killed\n"
            "kb_add.add_entry_file(sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", code, str(source)], cwd=ROOT, env={**os.environ}, check=False)
    assert os.path.exists(f"{db}-journal")  # killed inside the transaction: a hot journal
    index = store.open_index(db)  # rolled back under the lock, then the copied file indexed
    assert "killed-add" in index.ids()
    assert not os.path.exists(f"{db}-journal")
    assert sqlite3.connect(db).execute("pragma integrity_check").fetchone() == ("ok",)
    assert contents(db) == contents(store.build_index(tmp_path / "rebuilt.db", rebuild=True).db_path)
    assert json.loads(contents(db)["meta"]["problems"]) == []
