"""The candidate tables of `advisor search`: filled when the index is built, read by every search.

Scoring every entry of a 50,000-entry KB (its summary decoded, rapidfuzz over every title, id and
tag, the intent score of every entry) costs about a second, while one FTS5 query costs
milliseconds. These tables let a search score only the entries that can be hits, and give the
very same ranking as scoring them all (tests/test_search_candidates.py compares the two):

* ``search_entries``: one row per entry (keyed by the ``entries`` rowid, as FTS5 is): its id,
  title and search summary, so a search decodes only the summaries of its candidates.
* ``search_postings``: for each key, the rowids of the entries that have it, packed: operator
  families and symptoms with where they stand in the entry's list and its length (the intent
  signal, in the order of its value), kinds (the filters), and for the fuzzy signal the words of
  titles, the bigrams of ids, the trigrams of titles run together, tags and models, and the
  lengths of ids and titles. Which key guarantees what is explained in kb_search_candidates.
* ``search_blobs``: every id and every lower-case title, one a line at the line of its rowid, so
  that checking thousands of fuzzy candidates reads two values instead of thousands of rows.
* ``search_words``: the words a misspelt query word is corrected to, with their counts, by length.

``meta.search_tables`` holds the content hash the tables describe; a search uses them only when it
equals the index's, and otherwise scores every entry as before (slower, never wrong).
"""

from __future__ import annotations

import json
import re
import sqlite3
from array import array
from collections import defaultdict
from collections.abc import Iterable

STAMP_KEY = "search_tables"
#: Up to this many ids or titles are read row by row (more: all at once from search_blobs).
FEW_ROWS = 3000
#: Postings are packed rowids, four bytes each (an index holds far fewer than 2**32 rows).
ROWID_CODE = "I"
_WORD = re.compile(r"[a-z0-9]+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")

# Posting kinds (one letter, the first column of search_postings)
FAMILY, SYMPTOM, KIND, TITLE_WORD, ID_BIGRAM, JOINED_TRIGRAM, LABEL = "o", "s", "k", "w", "b", "t", "l"
#: A family or symptom key is the name, its position in the entry's list (0: first) and the list's length.
KEY_SEPARATOR = "\t"
ID_LENGTH, TITLE_SET_LENGTH, JOINED_LENGTH = "n", "m", "j"

_SCHEMA = (
    "drop table if exists search_entries",
    "drop table if exists search_postings",
    "drop table if exists search_words",
    "drop table if exists search_blobs",
    "create table search_entries (rowid integer primary key, id text not null, title text not null,"
    " summary text not null)",
    "create table search_postings (kind text not null, key text not null, rowids blob not null,"
    " primary key (kind, key)) without rowid",
    "create table search_words (length integer primary key, words text not null, counts blob not null)",
    "create table search_blobs (name text primary key, value text not null)",
)


# ---------------------------------------------------------------------------------------------
# Filling (at build time, inside the build's transaction)
# ---------------------------------------------------------------------------------------------


def fill_search_tables(conn: sqlite3.Connection) -> None:
    """(Re)fill the candidate tables from ``entries`` and stamp them with the index's content hash."""
    for statement in _SCHEMA:
        conn.execute(statement)
    rows = conn.execute("select rowid, id, kind, title, operators, symptoms, tags, models from entries").fetchall()
    postings: dict[tuple[str, str], list[int]] = defaultdict(list)
    counts: dict[str, int] = {}
    table = []
    for rowid, entry_id, kind, title, *lists in rows:
        operators, symptoms, tags, models = (json.loads(value or "[]") for value in lists)
        summary = [entry_id, kind, title, operators, symptoms, tags, models]
        table.append((rowid, entry_id, title, json.dumps(summary, ensure_ascii=False)))
        for key in entry_keys(entry_id, kind, title, operators, symptoms, tags, models):
            postings[key].append(rowid)
        text = " ".join([entry_id, title, *tags, *models, *symptoms, *operators])
        for word in _WORD.findall(text.lower()):
            counts[word] = counts.get(word, 0) + 1
    conn.executemany("insert into search_entries values (?, ?, ?, ?)", table)
    conn.executemany("insert into search_postings values (?, ?, ?)",
                     ((kind, key, pack(rowids)) for (kind, key), rowids in postings.items()))
    conn.executemany("insert into search_words values (?, ?, ?)", vocabulary_rows(counts))
    labels = sorted(key for kind, key in postings if kind == LABEL)
    conn.executemany("insert into search_blobs values (?, ?)",
                     [("ids", lines({row[0]: row[1] for row in table})),
                      ("titles", lines({row[0]: row[2].lower() for row in table})),
                      ("labels", json.dumps(labels, ensure_ascii=False)),
                      ("count", str(len(table)))])
    stamp = conn.execute("select value from meta where key = 'content_hash'").fetchone()
    conn.execute("insert or replace into meta (key, value) values (?, ?)", (STAMP_KEY, stamp[0] if stamp else ""))


def entry_keys(entry_id: str, kind: str, title: str, operators: list[str], symptoms: list[str], tags: list[str],
               models: list[str]) -> set[tuple[str, str]]:
    """Every posting key of one entry (each once)."""
    lower = title.lower()
    joined = _NOT_ALNUM.sub("", lower)
    keys = {(KIND, kind), (ID_LENGTH, str(len(entry_id))), (JOINED_LENGTH, str(len(joined))),
            (TITLE_SET_LENGTH, str(token_set_length(lower)))}
    keys.update((FAMILY, listed_key(family, operators)) for family in operators)
    keys.update((SYMPTOM, listed_key(symptom, symptoms)) for symptom in symptoms)
    keys.update((LABEL, label) for label in (*tags, *models))
    keys.update((TITLE_WORD, word) for word in _WORD.findall(lower))
    keys.update((ID_BIGRAM, entry_id[i:i + 2]) for i in range(len(entry_id) - 1))
    keys.update((JOINED_TRIGRAM, joined[i:i + 3]) for i in range(len(joined) - 2))
    return keys


def listed_key(item: str, listed: list[str]) -> str:
    """The posting key of a family or symptom: its name, where it first stands in the list, the list's length."""
    return KEY_SEPARATOR.join((item, str(listed.index(item)), str(len(listed))))


def lines(values: dict[int, str]) -> str:
    """``values`` one a line, each at the line of its rowid (empty lines for rowids without a value)."""
    # A title's line break is a space to every scorer (whitespace splits words; run together, it goes)
    text = [""] * (max(values, default=0) + 1)
    for rowid, value in values.items():
        text[rowid] = value.replace("\n", " ")
    return "\n".join(text)


def token_set_length(text: str) -> int:
    """Length of the distinct whitespace tokens of ``text`` joined by spaces (what token_set_ratio compares)."""
    tokens = set(text.split())
    return sum(map(len, tokens)) + max(len(tokens) - 1, 0)


def pack(rowids: Iterable[int]) -> bytes:
    return array(ROWID_CODE, rowids).tobytes()


def unpack(blob: bytes) -> array:
    packed = array(ROWID_CODE)
    packed.frombytes(blob)
    return packed


def vocabulary_rows(counts: dict[str, int]) -> list[tuple[int, str, bytes]]:
    """One row per word length: the words (newline-separated, sorted) and their counts."""
    by_length: dict[int, list[str]] = defaultdict(list)
    for word in counts:
        by_length[len(word)].append(word)
    rows = []
    for length, words in sorted(by_length.items()):
        words.sort()
        rows.append((length, "\n".join(words), pack(counts[word] for word in words)))
    return rows


# ---------------------------------------------------------------------------------------------
# Reading (at search time)
# ---------------------------------------------------------------------------------------------


class SearchTables:
    """The candidate tables of one open index (see the module docstring)."""

    def __init__(self, index):
        self._index = index

    def _rows(self, sql: str, params=()) -> list[tuple]:
        return self._index._query(sql, params)  # the index's own connection: the same snapshot

    def postings(self, kind: str, keys: Iterable[str]) -> set[int]:
        """Rowids of the entries that have any of ``keys`` of this kind."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return set()
        found: set[int] = set()
        for (blob,) in self._rows("select rowids from search_postings where kind = ? and key in "
                                  "(select value from json_each(?))", (kind, json.dumps(keys))):
            found.update(unpack(blob))
        return found

    def listed(self, kind: str, item: str) -> list[tuple[int, int, set[int]]]:
        """(position in the list, list length, rowids) of the entries listing ``item`` (a family or symptom)."""
        found = []
        for key, blob in self._rows("select key, rowids from search_postings where kind = ? and key > ? and key < ?",
                                    (kind, item + KEY_SEPARATOR, item + chr(ord(KEY_SEPARATOR) + 1))):
            _, position, count = key.split(KEY_SEPARATOR)
            found.append((int(position), int(count), set(unpack(blob))))
        return found

    def about(self, kind: str, item: str) -> set[int]:
        """Rowids of the entries listing ``item`` (a family or symptom) anywhere."""
        return set().union(*(rowids for _, _, rowids in self.listed(kind, item)))

    def blob(self, name: str) -> list[str]:
        """One of search_blobs, split into its lines (the value of rowid r is line r)."""
        rows = self._rows("select value from search_blobs where name = ?", (name,))
        return rows[0][0].split("\n") if rows and rows[0][0] else []

    def labels(self) -> list[str]:
        """Every distinct tag and model (the keys of the label postings)."""
        rows = self._rows("select value from search_blobs where name = 'labels'")
        return json.loads(rows[0][0]) if rows else []

    def values(self, column: str, rowids: list[int]) -> list[str]:
        """The id or lower-case title (``column``) of each of ``rowids``, in their order."""
        if len(rowids) > FEW_ROWS:  # one value of all entries' lines is read faster than many rows
            found = self.blob(f"{column}s")
            return [found[rowid] for rowid in rowids]
        rows = dict(self._rows(f"select rowid, {column} from search_entries where rowid in "
                               "(select value from json_each(?))", (json.dumps(rowids),)))
        return [rows[rowid].lower().replace("\n", " ") if column == "title" else rows[rowid] for rowid in rowids]

    def lengths(self, kind: str, low: int, high: int) -> set[int]:
        """Rowids of the entries whose length of this kind lies in ``low..high``."""
        found: set[int] = set()
        for (blob,) in self._rows("select rowids from search_postings where kind = ? and "
                                  "cast(key as integer) between ? and ?", (kind, low, high)):
            found.update(unpack(blob))
        return found

    def count(self) -> int:
        """The number of entries."""
        rows = self._rows("select value from search_blobs where name = 'count'")
        return int(rows[0][0]) if rows else 0

    def summaries(self, rowids: Iterable[int]) -> list[tuple[int, list]]:
        """(rowid, summary fields) of each of ``rowids``."""
        rows = self._rows("select rowid, summary from search_entries where rowid in "
                          "(select value from json_each(?))", (json.dumps(sorted(rowids)),))
        return [(rowid, json.loads(summary)) for rowid, summary in rows]

    def rowids_of(self, ids: Iterable[str]) -> dict[str, int]:
        rows = self._rows("select id, rowid from search_entries where id in (select value from json_each(?))",
                          (json.dumps(list(ids)),))
        return dict(rows)

    def fts_matches(self, match: str) -> dict[int, float]:
        """bm25 of every entry matching an FTS5 query, keyed by rowid (the weights of Index.fts_scores)."""
        from opprof_advisor import migrations

        weights = ", ".join(str(weight) for _, weight in migrations.FTS_COLUMNS)
        return dict(self._rows(f"select rowid, bm25(entries_fts, {weights}) from entries_fts "
                               "where entries_fts match ?", (match,)))

    def words(self, low: int, high: int) -> dict[str, int]:
        """The correction vocabulary's words of length ``low..high`` with their counts."""
        found: dict[str, int] = {}
        for words, counts in self._rows("select words, counts from search_words where length between ? and ?",
                                        (low, high)):
            found.update(zip(words.split("\n"), unpack(counts)))
        return found


def open_tables(index) -> SearchTables | None:
    """The candidate tables of ``index`` when they describe its content, else None (score every entry)."""
    rows = index._query("select value from meta where key = ?", (STAMP_KEY,))
    if not rows or rows[0][0] != index.content_hash:
        return None
    return SearchTables(index)
