"""The SQLite index: migrations, incremental and idempotent builds, freshness, recovery, adds."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest

from opprof_advisor.core.errors import AdvisorWarning
from kb_helpers import body_for, write_entry

from opprof_advisor import kb

from opprof_advisor.core import paths

from opprof_advisor.kb import add as kb_add

from opprof_advisor.kb import index_build

from opprof_advisor.kb import index_sync

from opprof_advisor.kb import migrations

from opprof_advisor.kb import store
from opprof_advisor.kb import manifest
from opprof_advisor.kb import rows as kb_rows

from opprof_advisor.advice import outcomes_store
from opprof_advisor.core.errors import EntryExists, EntryNotFound, EntryValidationError, KnowledgeBaseError


def rows(db_path, table="entries"):
    conn = sqlite3.connect(db_path)
    try:
        conn.row_factory = sqlite3.Row
        return {row[0]: dict(row) for row in conn.execute(f"select * from {table} order by 1")}
    finally:
        conn.close()


def schema(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return sorted(conn.execute("select type, name from sqlite_master where name not like 'sqlite_%'").fetchall())
    finally:
        conn.close()


@pytest.fixture
def kb_dir(tmp_path):
    folder = tmp_path / "kb"
    write_entry(folder, "alpha", title="Alpha recipe", operators=["MatMul"], related=["beta"])
    write_entry(folder, "beta", kind="tip", title="Beta tip", body=body_for("tip"))
    write_entry(folder, "gamma", kind="case", title="Gamma case", op_mix=["MatMul", "Cast"], body=body_for("case"))
    return folder


def test_migrations_end_state(tmp_path):
    import sqlite_utils

    db = sqlite_utils.Database(tmp_path / "m.db")
    migrations.index_migrations().apply(db)
    assert [m.name for m in migrations.index_migrations().applied(db)] == ["m001_create_tables", "m002_full_text_search",
                                                               "m003_entry_requires", "m004_entry_zh", "m005_file_stats",
                                                               "m006_entry_applies_to", "m007_chinese_grams"]
    assert {"requires", "zh_grams"} <= set(db["entries"].columns_dict)
    assert {"size", "mtime_ns"} <= set(db["files"].columns_dict)
    assert set(db.table_names()) >= {"meta", "files", "entries", "entries_fts", "entries_zh", "_sqlite_migrations"}
    assert db["entries"].pks == ["id"]
    assert db["entries_fts"].columns_dict.keys() == {name for name, _ in migrations.FTS_COLUMNS}
    assert {t.name for t in db["entries"].triggers} == {"entries_ai", "entries_ad", "entries_au", "entries_zh_ai",
                                                        "entries_zh_ad", "entries_zh_au"}
    assert migrations.index_migrations().pending(db) == []


def test_migrations_applied_in_steps_reach_the_same_schema(tmp_path):
    import sqlite_utils

    stepwise = sqlite_utils.Database(tmp_path / "a.db")
    migrations.index_migrations().apply(stepwise, stop_before="m002_full_text_search")
    assert "entries_fts" not in stepwise.table_names()
    migrations.index_migrations().apply(stepwise)
    direct = sqlite_utils.Database(tmp_path / "b.db")
    migrations.index_migrations().apply(direct)
    assert schema(tmp_path / "a.db") == schema(tmp_path / "b.db")


def test_build_twice_gives_identical_rows(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    store.build_index(db, kb_dirs=[kb_dir])
    first = rows(db)
    store.build_index(db, kb_dirs=[kb_dir], rebuild=True)
    assert rows(db) == first
    assert sorted(first) == ["alpha", "beta", "gamma"]


def test_editing_one_file_changes_only_its_row_and_parses_only_it(tmp_path, kb_dir, monkeypatch):
    db = tmp_path / "i.db"
    store.build_index(db, kb_dirs=[kb_dir])
    before = rows(db)
    write_entry(kb_dir, "beta", kind="tip", title="Beta tip, edited", body=body_for("tip"))
    parsed = []
    original = kb.validate_file
    monkeypatch.setattr(kb, "validate_file", lambda path, **kw: parsed.append(path.name) or original(path, **kw))
    index = store.open_index(db, kb_dirs=[kb_dir])
    after = rows(db)
    assert parsed == ["beta.md"]
    assert {key for key in after if after[key] != before[key]} == {"beta"}
    assert after["beta"]["title"] == "Beta tip, edited"
    assert index.get("beta").title == "Beta tip, edited"


def test_fts_follows_upserts_and_deletes(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    index = store.build_index(db, kb_dirs=[kb_dir])
    assert set(index.fts_scores('"gamma"')) == {"gamma"}
    (kb_dir / "cases" / "gamma.md").unlink()
    write_entry(kb_dir, "beta", kind="tip", title="Beta now mentions gamma", body=body_for("tip"))
    index = store.open_index(db, kb_dirs=[kb_dir])
    assert set(index.fts_scores('"gamma"')) == {"beta"}
    assert index.ids() == ["alpha", "beta"]


def test_unchanged_kb_is_not_rebuilt_and_touching_a_file_is_not_a_change(tmp_path, kb_dir, monkeypatch):
    db = tmp_path / "i.db"
    old = time.time() - 60  # files edited a minute ago: their stats can be trusted (not within the racy window)
    for path in kb_dir.rglob("*.md"):
        os.utime(path, (old, old))
    first = store.build_index(db, kb_dirs=[kb_dir])
    parsed, hashed = [], []
    original_validate, original_digests = kb.validate_file, manifest.file_digests
    monkeypatch.setattr(kb, "validate_file", lambda path, **kw: parsed.append(path.name) or original_validate(path, **kw))
    monkeypatch.setattr(manifest, "file_digests", lambda files, *known: hashed.append(len(files)) or original_digests(files, *known))
    os.utime(kb_dir / "recipes" / "alpha.md", (old + 30, old + 30))
    assert store.open_index(db, kb_dirs=[kb_dir]).content_hash == first.content_hash
    assert parsed == [] and len(hashed) >= 1  # stats moved: the files were hashed, none parsed again
    hashed.clear()
    assert store.open_index(db, kb_dirs=[kb_dir]).content_hash == first.content_hash
    assert hashed == []  # the new stats were recorded: the next open trusts them


def test_changed_content_changes_the_content_hash(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    first = store.build_index(db, kb_dirs=[kb_dir])
    write_entry(kb_dir, "delta", title="Delta")
    second = store.open_index(db, kb_dirs=[kb_dir])
    assert second.content_hash != first.content_hash
    assert "delta" in second.ids()


def test_same_size_edit_within_the_same_second_is_seen(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    store.build_index(db, kb_dirs=[kb_dir])
    path = kb_dir / "recipes" / "alpha.md"
    stat = path.stat()
    path.write_text(path.read_text().replace("Alpha recipe", "Alpha recipf"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime
    assert store.open_index(db, kb_dirs=[kb_dir]).get("alpha").title == "Alpha recipf"


def test_empty_index_file_is_rebuilt(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    db.write_bytes(b"")
    assert store.open_index(db, kb_dirs=[kb_dir]).ids() == ["alpha", "beta", "gamma"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("i.db.")) == ["i.db.lock"]


def _kept_aside(tmp_path) -> list:
    return [p for p in tmp_path.iterdir() if ".not-an-index-" in p.name]


def test_corrupt_index_file_is_kept_aside_and_rebuilt(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    db.write_bytes(b"not a database at all" * 100)
    with pytest.warns(AdvisorWarning, match="was not an opprof-advisor index"):
        assert store.open_index(db, kb_dirs=[kb_dir]).ids() == ["alpha", "beta", "gamma"]
    [kept] = _kept_aside(tmp_path)
    assert kept.read_bytes() == b"not a database at all" * 100  # nothing is lost


def test_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path, kb_dir):
    # A profile DB, the outcomes DB or a user's database given to --db by mistake is not renamed.
    db = tmp_path / "i.db"
    conn = sqlite3.connect(db)
    conn.execute("create table meta (key text, value text)")
    conn.execute("insert into meta values ('app', 'someone-else')")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(KnowledgeBaseError, match=r"not an opprof-advisor index: an SQLite database of another "
                                                 r"program \(tables meta\); it was left untouched"):
        store.open_index(db, kb_dirs=[kb_dir])
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.db", "kb"]  # not even a lock file beside it


def test_an_outdated_index_of_ours_is_replaced_without_a_copy(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    store.build_index(db, kb_dirs=[kb_dir])
    conn = sqlite3.connect(db)
    conn.execute("update meta set value = 'old' where key = 'build_version'")
    conn.commit()
    conn.close()
    assert store.open_index(db, kb_dirs=[kb_dir]).ids() == ["alpha", "beta", "gamma"]
    assert _kept_aside(tmp_path) == []


def test_index_with_an_older_schema_is_rebuilt(tmp_path, kb_dir, monkeypatch):
    db = tmp_path / "i.db"
    store.build_index(db, kb_dirs=[kb_dir])
    monkeypatch.setattr(migrations, "INDEX_NAMES", (*migrations.INDEX_NAMES, "m003_future"))
    assert manifest.read_meta(db) is None  # an index missing a migration is not trusted


def test_interrupted_build_leaves_the_previous_index_usable(tmp_path, kb_dir, monkeypatch):
    db = tmp_path / "i.db"
    store.build_index(db, kb_dirs=[kb_dir])

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(index_sync, "_sync_entries", fail)
    write_entry(kb_dir, "delta", title="Delta")
    with pytest.raises(KeyboardInterrupt):
        store.open_index(db, kb_dirs=[kb_dir])
    assert sorted(rows(db)) == ["alpha", "beta", "gamma"]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_invalid_files_are_not_indexed_and_are_reported(tmp_path, kb_dir):
    write_entry(kb_dir, "broken", evidence="Z")
    index = store.build_index(tmp_path / "i.db", kb_dirs=[kb_dir])
    assert "broken" not in index.ids()
    assert [str(p) for p in index.problems] == [
        f"{kb_dir / 'recipes' / 'broken.md'}:5: evidence 'Z' is not one of A, B, C, D"]


def test_later_sources_override_earlier_ones_and_duplicates_in_one_source_are_reported(tmp_path, kb_dir):
    user = tmp_path / "user"
    write_entry(user, "alpha", title="My own alpha")
    write_entry(user / "more", "gamma-2", title="x")
    write_entry(user / "more", "beta", kind="tip", title="My beta", body=body_for("tip"))
    write_entry(user / "other", "beta", kind="tip", title="Another beta", body=body_for("tip"))
    index = store.build_index(tmp_path / "i.db", kb_dirs=[kb_dir, user])
    assert index.get("alpha").title == "My own alpha"
    assert index.get("beta").title == "My beta"  # the first path of that source wins
    assert [p.message for p in index.problems] == [
        f"duplicate id 'beta' (also {user / 'more' / 'tips' / 'beta.md'}); not indexed"]


def test_get_unknown_id_suggests_close_ids(tmp_path, kb_dir):
    index = store.build_index(tmp_path / "i.db", kb_dirs=[kb_dir])
    with pytest.raises(EntryNotFound) as caught:
        index.get("alpah")
    assert caught.value.suggestions[0] == "alpha"


def test_entries_round_trip_through_the_index(tmp_path, kb_dir):
    index = store.build_index(tmp_path / "i.db", kb_dirs=[kb_dir])
    loaded = {entry.id: entry for entry in kb.load_entries([kb_dir])}
    assert {entry.id: entry for entry in index.entries()} == loaded
    assert [entry.id for entry in index.entries("tip")] == ["beta"]


def test_an_index_finalised_on_another_thread_raises_nothing(tmp_path, kb_dir, monkeypatch):
    # The garbage collector runs finalisers on whichever thread allocates, e.g. a build's fill thread.
    import sys
    import threading

    index = store.build_index(tmp_path / "i.db", kb_dirs=[kb_dir])
    assert index.get("beta").id == "beta"  # its connection is open
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    holder = [index]
    del index
    worker = threading.Thread(target=holder.clear)  # the last reference dies on the worker
    worker.start()
    worker.join()
    assert [str(hook.exc_value) for hook in unraisable] == []
    if os.path.isdir("/proc/self/fd"):  # and the file is closed once the connection's cycle is collected
        import gc

        gc.collect()
        held = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                if os.path.lexists(f"/proc/self/fd/{fd}")]
        assert str(tmp_path / "i.db") not in held


def test_unwritable_index_location_is_a_named_error(tmp_path, kb_dir):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(KnowledgeBaseError, match="cannot create the index folder"):
        store.open_index(blocker / "sub" / "i.db", kb_dirs=[kb_dir])


# ---------------------------------------------------------------------------------------------
# add_entry_file
# ---------------------------------------------------------------------------------------------


def test_add_copies_into_the_user_kb_and_indexes(tmp_path, advisor_home):
    source = write_entry(tmp_path / "mine", "my-case", kind="case", title="My case", body=body_for("case"))
    entry = kb_add.add_entry_file(source)
    target = advisor_home / "kb" / "cases" / "my-case.md"
    assert entry.path == str(target)
    assert target.read_bytes() == source.read_bytes()
    assert store.open_index().get("my-case").origin == "user"


def test_add_refuses_an_existing_id_unless_replace(tmp_path, advisor_home):
    source = write_entry(tmp_path / "mine", "my-tip", kind="tip", title="First", body=body_for("tip"))
    kb_add.add_entry_file(source)
    with pytest.raises(EntryExists):
        kb_add.add_entry_file(source)
    moved = write_entry(tmp_path / "v2", "my-tip", title="Second, now a recipe")
    kb_add.add_entry_file(moved, replace=True)
    assert store.open_index().get("my-tip").title == "Second, now a recipe"
    assert sorted(p.relative_to(advisor_home / "kb").as_posix() for p in (advisor_home / "kb").rglob("*.md")) == [
        "recipes/my-tip.md"]  # the old copy in tips/ is gone


def test_add_of_an_invalid_file_writes_nothing(tmp_path, advisor_home):
    store.open_index()
    db = advisor_home / "advisor.db"
    before = db.read_bytes()
    source = write_entry(tmp_path / "mine", "bad", symptoms=["not_a_symptom"], related=["nowhere"])
    with pytest.raises(EntryValidationError) as caught:
        kb_add.add_entry_file(source)
    assert [p.line for p in caught.value.problems] == [7]
    assert not (advisor_home / "kb").exists()
    assert db.read_bytes() == before


def test_add_checks_related_ids_against_the_index(tmp_path, advisor_home):
    source = write_entry(tmp_path / "mine", "lonely", related=["no-such-entry"])
    with pytest.raises(EntryValidationError) as caught:
        kb_add.add_entry_file(source)
    assert [str(p) for p in caught.value.problems] == [f"{source}:7: related id 'no-such-entry' names no entry"]
    assert not (advisor_home / "kb").exists()


def test_add_uses_the_front_matter_id_for_the_copy(tmp_path, advisor_home):
    source = write_entry(tmp_path / "mine", "draft", id="tuned-gemm")
    assert kb_add.add_entry_file(source).id == "tuned-gemm"
    assert (advisor_home / "kb" / "recipes" / "tuned-gemm.md").is_file()


# ---------------------------------------------------------------------------------------------
# Outcomes (user data beside the index)
# ---------------------------------------------------------------------------------------------


def outcome_row(entry_id, gain):
    return {"entry_id": entry_id, "matched_families": ["NMS"], "matched_before_us": 100.0,
            "matched_after_us": 100 - gain, "matched_gain_pct": gain, "matched_share": 0.3,
            "e2e_before_us": 1000.0, "e2e_after_us": 990.0, "e2e_gain_pct": 1.0, "before_fingerprint": "a",
            "after_fingerprint": f"b-{entry_id}", "before_path": "p1",
            "after_path": "p2", "chip": None, "cann": "8.0", "recorded_at": "2026-01-01T00:00:00Z", "note": ""}


def test_outcomes_are_recorded_beside_the_index_and_survive_rebuilds(tmp_path, kb_dir):
    db = tmp_path / "i.db"
    assert outcomes_store.list_outcomes(None, path=db) == []
    store.build_index(db, kb_dirs=[kb_dir])
    first = outcomes_store.record_outcome(outcome_row("alpha", 30.0), path=db)
    second = outcomes_store.record_outcome(outcome_row("beta", 10.0), path=db)
    assert (first, second) == (1, 2)
    assert (tmp_path / "i.outcomes.db").is_file()
    store.build_index(db, kb_dirs=[kb_dir], rebuild=True)
    db.write_bytes(b"corrupt")
    with pytest.warns(AdvisorWarning):
        store.open_index(db, kb_dirs=[kb_dir])
    [row] = outcomes_store.list_outcomes("alpha", path=db)
    assert row == {"id": 1, **outcome_row("alpha", 30.0)}
    assert [r["entry_id"] for r in outcomes_store.list_outcomes(None, path=db)] == ["alpha", "beta"]


def test_outcomes_schema_is_migrated(tmp_path):
    import sqlite_utils

    outcomes_store.record_outcome(outcome_row("alpha", 5.0), path=tmp_path / "i.db")
    db = sqlite_utils.Database(tmp_path / "i.outcomes.db")
    assert [m.name for m in migrations.outcome_migrations().applied(db)] == ["o001_create_outcomes"]
    assert db["outcomes"].pks == ["id"]


# ---------------------------------------------------------------------------------------------
# A big KB: freshness by the manifest of folders
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def big_kb(kb_dir, tmp_path, monkeypatch):
    """The three-entry KB treated as a big one (more than FULL_STAT_LIMIT files), built and signed."""
    monkeypatch.setattr(manifest, "FULL_STAT_LIMIT", 1)
    monkeypatch.setattr(manifest, "RACY_WINDOW_NS", 0)  # the files were written before the build signed them
    monkeypatch.setattr(manifest, "FINE_RACY_WINDOW_NS", 0)
    db = tmp_path / "index.db"
    store.build_index(db, kb_dirs=[kb_dir])
    return db, kb_dir


def test_a_big_kb_is_opened_without_listing_its_files_when_no_folder_changed(big_kb, monkeypatch):
    db, kb_dir = big_kb
    monkeypatch.setattr(store, "scan_files", lambda *args: pytest.fail("listed every file"))
    assert store.open_index(db, kb_dirs=[kb_dir]).ids() == ["alpha", "beta", "gamma"]


def test_a_file_added_removed_or_saved_by_replacement_is_seen_at_once(big_kb):
    db, kb_dir = big_kb
    time.sleep(0.01)
    write_entry(kb_dir, "delta", kind="tip", title="Delta tip", body=body_for("tip"))
    assert "delta" in store.open_index(db, kb_dirs=[kb_dir]).ids()
    (kb_dir / "tips" / "beta.md").unlink()
    assert "beta" not in store.open_index(db, kb_dirs=[kb_dir]).ids()
    saved = kb_dir / "recipes" / ".alpha.md.swp"  # an editor's safe save: a new file renamed over the old one
    saved.write_text((kb_dir / "recipes" / "alpha.md").read_text().replace("Alpha recipe", "Alpha renamed"))
    os.replace(saved, kb_dir / "recipes" / "alpha.md")
    assert store.open_index(db, kb_dirs=[kb_dir]).get("alpha").title == "Alpha renamed"


def test_a_file_of_a_big_kb_rewritten_in_place_is_seen_by_the_next_build(big_kb):
    db, kb_dir = big_kb
    path = kb_dir / "recipes" / "alpha.md"
    path.write_text(path.read_text().replace("Alpha recipe", "Alpha edited"))  # same folder, no rename
    assert store.open_index(db, kb_dirs=[kb_dir]).get("alpha").title == "Alpha recipe"
    assert store.build_index(db, kb_dirs=[kb_dir]).get("alpha").title == "Alpha edited"


def test_a_small_kb_sees_a_file_rewritten_in_place_at_once(kb_dir, tmp_path):
    db = tmp_path / "index.db"
    store.build_index(db, kb_dirs=[kb_dir])
    path = kb_dir / "recipes" / "alpha.md"
    path.write_text(path.read_text().replace("Alpha recipe", "Alpha edited"))
    assert store.open_index(db, kb_dirs=[kb_dir]).get("alpha").title == "Alpha edited"


def test_the_racy_window_follows_the_file_system_s_time_resolution():
    assert manifest.racy_window([1_700_000_000_000_000_000, 1_700_000_002_000_000_000]) == manifest.RACY_WINDOW_NS
    assert manifest.racy_window([1_700_000_000_000_000_000, 1_700_000_002_123_456_789]) == manifest.FINE_RACY_WINDOW_NS
    assert manifest.racy_window([-1]) == manifest.RACY_WINDOW_NS  # a missing folder tells nothing


def test_a_big_kb_folder_changed_just_before_the_signature_is_listed_again(big_kb, monkeypatch):
    db, kb_dir = big_kb
    monkeypatch.setattr(manifest, "RACY_WINDOW_NS", 10**18)  # every folder looks modified within the window
    monkeypatch.setattr(manifest, "FINE_RACY_WINDOW_NS", 10**18)
    listed = []
    real_scan = manifest.scan_files
    monkeypatch.setattr(store, "scan_files", lambda *args: listed.append(1) or real_scan(*args))
    assert store.open_index(db, kb_dirs=[kb_dir]).ids() == ["alpha", "beta", "gamma"]
    assert listed


def test_entry_rows_hold_the_json_that_json_dumps_writes():
    # _entry_to_row encodes its JSON cells with an encoder made once; the text must be json.dumps's own,
    # non-ASCII included (the shipped entries have Chinese), for every shipped entry and odd values.
    import json

    entries, _ = kb.validate_paths([paths.builtin_kb_dir()])
    assert len(entries) > 100
    for entry in entries:
        row = kb_rows._entry_to_row(entry)
        for column in kb_rows._ROW_JSON_COLUMNS:
            value = kb_rows.entry_dict(entry)[column]
            assert row[column] == (json.dumps(value, ensure_ascii=False) if value else None), (entry.id, column)
    for value in (["中文", "tab\t", 'quote"', "\x00\u2028"], {"x": 1.5, "y": [2**70, True, None, -0.0, 1e300]}):
        assert kb_rows._json_text(value) == json.dumps(value, ensure_ascii=False)
    with pytest.raises(TypeError, match="not JSON serializable"):
        kb_rows._json_text([object()])


def test_a_kb_file_is_read_to_its_end_whatever_its_listed_size(tmp_path):
    # The parse reads with the size the folder scan saw as a hint: a file that grew since is still read
    # whole, an empty one is empty, and what cannot be read gives why (the problem the parse records), what is gone None.
    path = tmp_path / "grown.md"
    path.write_bytes(b"x" * 200_000 + b"\r\nend")
    assert index_sync._read(str(path), 10) == path.read_bytes()
    assert index_sync._read(str(path), 200_005) == path.read_bytes()
    (tmp_path / "empty.md").write_bytes(b"")
    assert index_sync._read(str(tmp_path / "empty.md"), 0) == b""
    (tmp_path / "folder.md").mkdir()
    assert index_sync._read(str(tmp_path / "folder.md"), 0) == "not a regular file (a FIFO, device or socket)"
    assert index_sync._read(str(tmp_path / "missing.md"), 0) is None  # gone since it was listed
