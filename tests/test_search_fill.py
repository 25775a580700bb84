"""A fill of the search candidate tables (all entries at once, a column at a time) writes the rows the entry-by-entry
path writes (update_search_tables, which add and remove use): both are compared on the shipped KB with entries whose
titles, ids and texts take the fill's shortcuts to their edges (letters whose lower case depends on what follows,
line breaks, non-ASCII words, gaps between rowids)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from conftest import ROOT
from kb_helpers import body_for, write_entry
from opprof_advisor.kb import search_fill as kb_search_fill
from opprof_advisor.kb import search_index as kb_search_index
from opprof_advisor.kb import store
from opprof_advisor.kb.search_fill import fill_search_tables
from opprof_advisor.kb.search_index import ID_BIGRAM, entry_keys, pack, update_search_tables

#: Titles Python lower-cases with care: a final sigma (ς only at the end of a word), the Kelvin sign and a dotted
#: capital I (non-ASCII letters whose lower case holds ASCII ones), Han and fullwidth characters.
TITLES = ["ΟΔΟΣ ΣΟΦΟΣ: NMS on the host", "Tile at 512 \u212a (KELVIN) for MatMul", "İstanbul İNDEX cast",
          "Two words", "非极大值抑制 NMS 回退 ＮＭＳ", "Σ", "ΑΣ-ΣΑ σ.Σ'Σ host"]


@pytest.fixture
def edge_kb(tmp_path):
    kb = tmp_path / "kb"
    for number, title in enumerate(TITLES):
        write_entry(kb, f"edge-{number}", kind=("tip", "case", "recipe")[number % 3], title=title,
                    summary=f"Summary ΣΑΣ {number}\nsecond line", operators=["NMS", "MatMul"][: number % 3],
                    symptoms=["host_bound"] if number % 2 else None, tags=["ascend", f"tag-{number}", "σοφός"],
                    models=["yolov8"] if number == 2 else None,
                    zh={"title": f"标题 {title}", "summary": "摘要 ΣΟΦΟΣ", "first_step": "第一步"}
                    if number % 2 else None,
                    body=body_for(("tip", "case", "recipe")[number % 3]))
    return kb


def tables(conn) -> dict:
    """Every row of the candidate tables, and the rowids each trigram of the trigram table matches."""
    found = {name: conn.execute(f"select * from {name} order by 1, 2").fetchall()
             for name in ("search_entries", "search_postings", "search_words", "search_blobs")}
    conn.execute("create virtual table temp.trigram_terms using fts5vocab(main, search_title_trigrams, 'row')")
    terms = [term for (term,) in conn.execute("select term from temp.trigram_terms order by term")]
    conn.execute("drop table temp.trigram_terms")
    found["trigrams"] = {term: conn.execute("select rowid from search_title_trigrams where search_title_trigrams "
                                            "match ? order by rowid", ('"' + term.replace('"', '""') + '"',)).fetchall()
                         for term in terms}
    found["stamp"] = conn.execute("select value from meta where key = ?", (kb_search_index.STAMP_KEY,)).fetchall()
    return found


def entry_by_entry(conn) -> dict:
    """The tables update_search_tables leaves when every entry is added to tables filled for no entry."""
    saved = conn.execute("select rowid, * from entries").fetchall()
    columns = [row[1] for row in conn.execute("pragma table_info(entries)")]
    conn.execute("delete from entries")
    fill_search_tables(conn)
    marks = ", ".join("?" * (len(columns) + 1))
    conn.executemany(f"insert into entries (rowid, {', '.join(columns)}) values ({marks})", saved)
    update_search_tables(conn, {row[1 + columns.index("id")]: None for row in saved})
    return tables(conn)


def test_a_fill_writes_the_rows_of_adding_each_entry(tmp_path, edge_kb, monkeypatch):
    monkeypatch.setattr(kb_search_index, "LINES_PER_PART", 16)  # several parts, the last one short
    db = tmp_path / "index.db"
    store.build_index(db, kb_dirs=[ROOT / "kb", edge_kb]).close()
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    try:
        assert dict(conn.execute("select id, title from entries where id like 'edge-%'")) == {
            f"edge-{number}": title for number, title in enumerate(TITLES)}  # every edge reaches the index
        # a title of two lines (a check refuses it in a KB file; the tables read it as one line either way)
        conn.execute("update entries set title = 'Two lines\nof a ΣΑΣ\ntitle' where id = 'edge-3'")
        for gaps in (False, True):
            if gaps:  # rowids with holes (entries removed in place), the last rowid's line included
                conn.execute("delete from entries where rowid in (2, 17, 18, (select max(rowid) - 1 from entries))")
            conn.execute("begin")
            fill_search_tables(conn)
            filled = tables(conn)
            assert entry_by_entry(conn) == filled
            conn.execute("rollback")
        lower = {entry_id: title for _, entry_id, _, title in filled["search_entries"]}
        assert lower["edge-0"] == "οδος σοφος: nms on the host"  # a final sigma at each word's end
        assert lower["edge-3"] == "two lines of a σας title"
    finally:
        conn.close()


def test_id_bigrams_are_those_of_entry_keys():
    rng = random.Random(18)
    alphabet = "ab-0\u00e9\u4e2d\U0001f600\x00"
    for ids in ([], ["a"], ["", "ab"], ["abab", "baba", "ab"], ["x\x00y", "z"],
                ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9))) for _ in range(300)]):
        rowids = tuple(range(3, 3 + 2 * len(ids), 2))
        expected: dict[str, list[int]] = {}
        for rowid, entry_id in zip(rowids, ids):
            for kind, key in sorted(entry_keys(entry_id, "tip", "", "", [], [], [], [])):
                if kind == ID_BIGRAM:
                    expected.setdefault(key, []).append(rowid)
        assert kb_search_fill.id_bigrams(rowids, tuple(ids)) == {key: pack(found) for key, found in expected.items()}


#: Lines for the Chinese postings: Han of both ranges and their edges, characters next to them, a wide character;
#: words next to Han, underscores, digits, a dotted i's combining mark (lower-case İ), separators of every kind.
ZH_PIECES = ["\u3400", "\u9fff", "\uf900", "\ufaff", "\u33ff", "\ua000", "\uf8ff", "\ufb00", "算", "子", "\U00020000",
             "nms", "回退", "launch_bound", "_", "a1", "i\u0307", "-", ".", "\t", "\u3000", "σ", "é", "x", " "]


@pytest.mark.parametrize("fill, keys_of", [(kb_search_fill.han_postings, kb_search_index.han_characters),
                                           (kb_search_fill.zh_word_postings, kb_search_index.zh_words)])
def test_chinese_postings_are_those_of_each_line(monkeypatch, fill, keys_of):
    monkeypatch.setattr(kb_search_index, "LINES_PER_PART", 4)  # lines across several parts
    rng = random.Random(18)
    for lines in ([], ["算"], ["nms"], ["", "算子", "", "子 a", "nms回退nms", "a_b a-b"],
                  ["".join(rng.choice(ZH_PIECES) for _ in range(rng.randint(0, 12))) for _ in range(61)]):
        rowids = tuple(range(1, len(lines) + 1))
        parts = [part for _, part in kb_search_fill._line_parts(rowids, lines)]
        expected: dict[str, list[int]] = {}
        for rowid, line in zip(rowids, lines):
            for key in sorted(keys_of(line)):
                expected.setdefault(key, []).append(rowid)
        assert fill(parts) == {key: pack(found) for key, found in expected.items()}


def test_the_keys_of_a_chinese_line():
    assert kb_search_index.han_characters("\u3400\u9fff\uf900\ufaff\u33ff\ua000\uf8ff\ufb00\U00020000a") == {
        "\u3400", "\u9fff", "\uf900", "\ufaff"}
    assert kb_search_index.zh_words("nms回退nms a_b-c é1") == {"nms", "a_b", "c", "1"}


def test_tables_of_the_layout_before_the_chinese_postings_are_filled_again_at_the_next_change(tmp_path, advisor_home):
    from opprof_advisor.kb import add as kb_add
    from opprof_advisor.kb import search as kb_search

    index = store.open_index()
    expected = kb_search.search_to_json(kb_search.run_search(index, "非极大值抑制 nms"))
    db = index.db_path
    index.close()
    conn = sqlite3.connect(db)
    with conn:  # as an earlier version left them: layout 2, without the Chinese postings
        conn.execute("delete from search_postings where kind in (?, ?)", (kb_search_index.HAN, kb_search_index.ZH_WORD))
        conn.execute("update meta set value = '2' || substr(value, instr(value, ':')) where key = ?",
                     (kb_search_index.STAMP_KEY,))
    conn.close()
    index = store.open_index()
    assert kb_search_index.open_tables(index) is None  # not read: every entry is scored
    assert kb_search.search_to_json(kb_search.run_search(index, "非极大值抑制 nms")) == expected
    index.close()

    kb_add.add_entry_file(write_entry(tmp_path / "mine", "my-tip", kind="tip", title="Host NMS", body=body_for("tip"),
                                      zh={"title": "主机上的非极大值抑制", "summary": "摘要", "first_step": "第一步"}))
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    try:
        assert kb_search_index.tables_current(conn)
        after_add = tables(conn)
        conn.execute("begin")
        fill_search_tables(conn)
        assert after_add == tables(conn)
        assert any(kind == kb_search_index.HAN for kind, _, _ in after_add["search_postings"])
        conn.execute("rollback")
    finally:
        conn.close()
    index = store.open_index()
    assert kb_search_index.open_tables(index) is not None
    assert kb_search.run_search(index, "主机上的非极大值抑制").hits[0].id == "my-tip"
    index.close()


def test_an_edited_posting_is_the_sorted_set_of_its_rowids():
    rng = random.Random(18)
    for _ in range(300):
        stored = sorted(rng.sample(range(1, 200), rng.randint(0, 40)))
        gone = set(rng.sample(range(1, 200), rng.randint(0, 10)))
        added = set(rng.sample(range(1, 200), rng.randint(0, 10))) - gone  # an entry's key is either gone or added
        expected = sorted(set(stored) - gone | added)
        assert kb_search_index.edited_posting(pack(stored), gone, added) == pack(expected)
