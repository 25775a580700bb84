"""The candidate tables of `advisor search`: filled when the index is built (kb_search_fill), read by every search.

Scoring every entry of a 50,000-entry KB (its summary decoded, rapidfuzz over every title, id and
tag, the intent score of every entry) costs about a second, while one FTS5 query costs
milliseconds. These tables let a search score only the entries that can be hits, and give the
very same ranking as scoring them all (tests/test_search_candidates.py compares the two):

* Entries are named by their ``entries`` rowid (as FTS5 names them), and a search reads the
  summaries of the entries it scores only, straight from ``entries`` (SUMMARY: one JSON array).
* ``search_entries``: the id, kind and lower-case title of every entry, in small rows (an
  ``entries`` row holds the whole entry): what the fuzzy comparisons and the kind prior read.
* ``search_postings``: for each key, the rowids of the entries that have it, packed: operator
  families and symptoms with where they stand in the entry's list and its length (the intent
  signal, in the order of its value), kinds (the filters), and for the fuzzy signal the bigrams
  of ids, tags and models, and the lengths of ids and titles. Which key guarantees what is explained in
  kb_search_candidates. (The words of titles are looked up in the FTS5 index.)
* ``search_title_trigrams``: the titles run together, in an FTS5 table of the trigram tokenizer.
* ``search_blobs``: every id, kind and lower-case title, the text a Chinese query is matched
  against and the title and summary `advisor add` compares a new entry with, one a line at the line of its rowid, so that checking thousands of candidates reads a
  few values instead of thousands of rows; stored in parts of LINES_PER_PART lines, so that an add
  rewrites the part of its rowid, not 20 MB of text at 50,000 entries.
* ``search_words``: the words a misspelt query word is corrected to, with their counts, by length.
* Chinese postings: for each Han character (kind HAN) and each Latin word (ZH_WORD) of the ``zh_texts``
  lines, the entries holding it, so that a Chinese query reads the lines of the entries holding both characters
  of a pair only (kb_search_zh). Tables filled before them are of layout 2, which is not read.

``meta.search_tables`` holds the layout and content hash the tables describe; a search uses them only
when they are this layout's and the index's, and otherwise scores every entry (slower, never wrong).
"""

from __future__ import annotations

import json
import re
import sqlite3
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from opprof_advisor.kb import migrations
from opprof_advisor.kb.search_zh import han_runs, LATIN

STAMP_KEY = "search_tables"
#: Bump when the tables' layout changes: tables of another layout are then not read (every entry is
#: scored, as without tables) until the next build fills them again.
LAYOUT = "3"  # 2: search_blobs in parts; 3: the Chinese postings (kinds HAN and ZH_WORD)
#: Up to this many ids or titles are read row by row (more: all at once from search_blobs).
FEW_ROWS = 3000
#: Postings are packed rowids, four bytes each (an index holds far fewer than 2**32 rows).
ROWID_CODE = "I"
WORD = re.compile(r"[a-z0-9]+")
#: The FTS5 trigram table of titles run together.
TRIGRAMS = "search_title_trigrams"
#: The search summary of an entry row (store.EntrySummary's fields), built by SQLite.
SUMMARY = ("json_array(id, kind, title, json(coalesce(operators, '[]')), json(coalesce(symptoms, '[]')),"
           " json(coalesce(tags, '[]')), json(coalesce(models, '[]')))")

# Posting kinds (one letter, the first column of search_postings)
FAMILY, SYMPTOM, KIND, LABEL, ID_BIGRAM, HAN, ZH_WORD = "o", "s", "k", "l", "b", "h", "z"
#: A family or symptom key is the name, its position in the entry's list (0: first) and the list's length.
KEY_SEPARATOR = "\t"
ID_LENGTH, TITLE_SET_LENGTH, JOINED_LENGTH = "n", "m", "j"

SCHEMA = (
    "drop table if exists search_entries",
    "create table search_entries (rowid integer primary key, id text not null, kind text not null,"
    " title text not null)",
    "drop table if exists search_postings",
    "drop table if exists search_words",
    "drop table if exists search_blobs",
    "drop table if exists search_title_trigrams",
    "create table search_postings (kind text not null, key text not null, rowids blob not null,"
    " primary key (kind, key)) without rowid",
    "create table search_words (length integer primary key, words text not null, counts blob not null)",
    "create table search_blobs (name text not null, part integer not null, value text not null,"
    " primary key (name, part)) without rowid",
)


def stamp(content_hash: str) -> str:
    """What ``meta.search_tables`` holds for tables of this layout filled for that content."""
    return f"{LAYOUT}:{content_hash}"


def entry_keys(entry_id: str, kind: str, title: str, joined: str, operators: list[str], symptoms: list[str],
               tags: list[str], models: list[str]) -> set[tuple[str, str]]:
    """Every posting key of one entry (each once), from its lower-case title and that title run together."""
    keys = {(KIND, kind), (ID_LENGTH, str(len(entry_id))), (JOINED_LENGTH, str(len(joined))),
            (TITLE_SET_LENGTH, str(token_set_length(title)))}
    keys.update((FAMILY, key) for key in listed_keys(operators))
    keys.update((SYMPTOM, key) for key in listed_keys(symptoms))
    keys.update((LABEL, label) for label in tags)
    keys.update((LABEL, label) for label in models)
    keys.update((ID_BIGRAM, entry_id[i:i + 2]) for i in range(len(entry_id) - 1))
    return keys


#: The lines of one row of a one-line-per-rowid blob (part p holds the lines of rowids p * LINES_PER_PART ...).
LINES_PER_PART = 1024
#: The blobs of one line per rowid (the others are one value: part 0).
LINE_BLOBS = ("ids", "titles", "kinds", "zh_texts", "texts")
#: What near_duplicates compares of an entry (its compared_text, stripped in Python): the ``texts`` blob.
COMPARED_TEXT = "title || ' ' || coalesce(summary, '')"


def listed_keys(listed: list[str]) -> list[str]:
    """The family or symptom keys of one entry's list: each item where it first stands, and the list's length."""
    count = str(len(listed))
    return [KEY_SEPARATOR.join((item, str(position), count)) for position, item in enumerate(listed)
            if item not in listed[:position]]  # where it first stands, as kb_search.operator_score reads it


def zh_text(zh: dict[str, str], title: str, operators: list[str], tags: list[str]) -> str:
    """What a Chinese query is matched against (the ``zh_texts`` blob, once lower-case): the words of
    kb_search_zh.entry_text (the zh title, summary and first step, the title, operators and tags, joined by spaces;
    a gram never spans a space, so the order and the title's repeats do not matter)."""
    return " ".join((zh.get("title", ""), zh.get("summary", ""), zh.get("first_step", ""), title, " ".join(operators),
                     " ".join(tags)))


def han_characters(line: str) -> set[str]:
    """The HAN posting keys of one ``zh_texts`` line: the distinct characters of its Han runs (kb_search_zh.grams')."""
    return set("".join(han_runs(line)))


def zh_words(line: str) -> set[str]:
    """The ZH_WORD posting keys of one (lower-case) ``zh_texts`` line: its words as kb_search_zh.grams finds them."""
    return set(LATIN.findall(line))


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
# Updating (an add, a replace or a remove: the rows of the entries that changed, not a refill)
# ---------------------------------------------------------------------------------------------

#: Above this many changed entries the tables are refilled instead (one pass beats many small edits).
FEW_CHANGES = 500


class EntrySearchRow(NamedTuple):
    """What the candidate tables hold of one entry: its rowid, search summary, zh_text (lower-case) and compared text."""

    rowid: int
    summary: list
    zh_text: str
    text: str  # near_duplicates.compared_text


def entry_search_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, EntrySearchRow]:
    """The rows of ``ids`` as the tables see them, by id (taken before and after the entries change)."""
    rows = conn.execute(f"select rowid, {SUMMARY}, coalesce(zh, '{{}}'), {COMPARED_TEXT} from entries where id in "
                        "(select value from json_each(?))", (json.dumps(sorted(set(ids))),))
    found = {}
    for rowid, summary, zh, text in rows:
        summary = json.loads(summary)
        entry_id, _, title, operators, _, tags, _ = summary
        found[entry_id] = EntrySearchRow(rowid, summary, zh_text(json.loads(zh), title, operators, tags).lower(),
                                         text.strip())
    return found


def tables_current(conn: sqlite3.Connection) -> bool:
    """True when the tables are this layout's and describe the index's content (an update may start from them)."""
    rows = dict(conn.execute(f"select key, value from meta where key in ('content_hash', '{STAMP_KEY}')").fetchall())
    return STAMP_KEY in rows and rows[STAMP_KEY] == stamp(rows.get("content_hash", ""))


def update_search_tables(conn: sqlite3.Connection, before: dict[str, EntrySearchRow | None]) -> None:
    """Bring the tables from the entries ``before`` (by id, read by entry_search_rows before the change while
    the tables were current; None for an id then absent) to those entries as they are now, and stamp them:
    the rows a refill writes."""
    if before:
        _update_rows(conn, {row.rowid: row for row in before.values() if row is not None},
                     {row.rowid: row for row in entry_search_rows(conn, before).values()})
    content = conn.execute("select value from meta where key = 'content_hash'").fetchone()
    conn.execute("insert or replace into meta (key, value) values (?, ?)",
                 (STAMP_KEY, stamp(content[0] if content else "")))


def _update_rows(conn: sqlite3.Connection, old: dict[int, EntrySearchRow], new: dict[int, EntrySearchRow]) -> None:
    _update_postings(conn, old, new)
    _update_vocabulary(conn, old, new)
    conn.executemany("delete from search_entries where rowid = ?", [(rowid,) for rowid in old.keys() - new.keys()])
    conn.executemany("insert or replace into search_entries values (?, ?, ?, ?)", [
        (rowid, row.summary[0], row.summary[1], row.summary[2].lower().replace("\n", " ")) for rowid, row in new.items()])
    if conn.execute("select 1 from search_blobs where name = 'trigrams'").fetchone():
        conn.executemany(f"insert into {TRIGRAMS} ({TRIGRAMS}, rowid, joined) values ('delete', ?, ?)",
                         [(rowid, _joined(row)) for rowid, row in old.items()])
        conn.executemany(f"insert into {TRIGRAMS} (rowid, joined) values (?, ?)",
                         [(rowid, _joined(row)) for rowid, row in new.items()])
    _update_line_blobs(conn, old, new)
    labels = sorted(row[0] for row in conn.execute("select key from search_postings where kind = ?", (LABEL,)))
    count = conn.execute("select count(*) from entries").fetchone()[0]
    conn.executemany("insert or replace into search_blobs values (?, 0, ?)", [
        ("labels", json.dumps(labels, ensure_ascii=False)), ("count", str(count))])


def _joined(row: EntrySearchRow) -> str:
    return "".join(WORD.findall(row.summary[2].lower()))


def _keys(row: EntrySearchRow) -> set[tuple[str, str]]:
    entry_id, kind, title, operators, symptoms, tags, models = row.summary
    lower = title.lower()
    keys = entry_keys(entry_id, kind, lower, "".join(WORD.findall(lower)), operators, symptoms, tags, models)
    keys.update((HAN, character) for character in han_characters(row.zh_text))
    keys.update((ZH_WORD, word) for word in zh_words(row.zh_text))
    return keys


def _update_postings(conn: sqlite3.Connection, old: dict[int, EntrySearchRow], new: dict[int, EntrySearchRow]) -> None:
    """Take each changed entry's rowid out of the postings of its old keys, into those of its new ones (sorted, as a
    fill leaves them; a posting left empty goes)."""
    edits: dict[tuple[str, str], tuple[set[int], set[int]]] = defaultdict(lambda: (set(), set()))
    for rowid in old.keys() | new.keys():
        was = _keys(old[rowid]) if rowid in old else set()
        now = _keys(new[rowid]) if rowid in new else set()
        for key in was - now:
            edits[key][0].add(rowid)
        for key in now - was:
            edits[key][1].add(rowid)
    for (kind, key), (gone, added) in edits.items():
        row = conn.execute("select rowids from search_postings where kind = ? and key = ?", (kind, key)).fetchone()
        rowids = edited_posting(row[0] if row else b"", gone, added)
        if rowids:
            conn.execute("insert or replace into search_postings values (?, ?, ?)", (kind, key, rowids))
        else:
            conn.execute("delete from search_postings where kind = ? and key = ?", (kind, key))


def edited_posting(posting: bytes, gone: Iterable[int], added: Iterable[int]) -> bytes:
    """The packed ``posting`` (sorted, distinct rowids) without ``gone`` and with ``added``, still sorted and distinct.

    Each rowid is found by bisection and moved in by the array: a posting of a common Han character holds nearly
    every rowid, and an add changes a hundred such postings (decoding each into a set and sorting it cost 0.3 s at
    50,000 entries)."""
    from bisect import bisect_left

    rowids = unpack(posting)
    for rowid in gone:
        at = bisect_left(rowids, rowid)
        if at < len(rowids) and rowids[at] == rowid:
            del rowids[at]
    for rowid in sorted(added):
        at = bisect_left(rowids, rowid)
        if at == len(rowids) or rowids[at] != rowid:
            rowids.insert(at, rowid)
    return rowids.tobytes()


def entry_words(summary: list) -> list[str]:
    """The words one entry adds to the correction vocabulary (as fill_search_tables counts them): those of its id
    and title, and of each tag, model, symptom and operator it lists."""
    entry_id, _, title, operators, symptoms, tags, models = summary
    words = WORD.findall(entry_id.lower()) + WORD.findall(title.lower())
    for label in (*tags, *models, *symptoms, *operators):
        words += WORD.findall(label.lower())
    return words


def _update_vocabulary(conn: sqlite3.Connection, old: dict[int, EntrySearchRow], new: dict[int, EntrySearchRow]) -> None:
    delta: Counter[str] = Counter()
    for row in new.values():
        delta.update(entry_words(row.summary))
    for row in old.values():
        delta.subtract(entry_words(row.summary))
    by_length: dict[int, dict[str, int]] = defaultdict(dict)
    for word, change in delta.items():
        if change:
            by_length[len(word)][word] = change
    for length, changes in sorted(by_length.items()):
        row = conn.execute("select words, counts from search_words where length = ?", (length,)).fetchone()
        counts = dict(zip(row[0].split("\n"), unpack(row[1]))) if row else {}
        for word, change in changes.items():
            counts[word] = counts.get(word, 0) + change
            if counts[word] <= 0:
                del counts[word]
        conn.execute("delete from search_words where length = ?", (length,))
        conn.executemany("insert into search_words values (?, ?, ?)", vocabulary_rows(counts))


def _update_line_blobs(conn: sqlite3.Connection, old: dict[int, EntrySearchRow], new: dict[int, EntrySearchRow]) -> None:
    """Rewrite the parts of the line blobs that hold a changed rowid; the blob ends at the last entry's line, as
    lines() writes it (parts past it go, a part that was the last is filled up)."""
    last = conn.execute("select max(rowid) from entries").fetchone()[0] or 0
    last_part = last // LINES_PER_PART
    for name in LINE_BLOBS:
        stored_last = conn.execute("select max(part) from search_blobs where name = ?", (name,)).fetchone()[0] or 0
        conn.execute("delete from search_blobs where name = ? and part > ?", (name, last_part))
        parts = {rowid // LINES_PER_PART for rowid in old.keys() | new.keys()}
        parts.update(range(min(stored_last, last_part), last_part + 1))
        for part in sorted(number for number in parts if number <= last_part):
            stored = conn.execute("select value from search_blobs where name = ? and part = ?", (name, part)).fetchone()
            text = stored[0].split("\n") if stored else []
            size = LINES_PER_PART if part < last_part else last % LINES_PER_PART + 1
            text = (text + [""] * size)[:size]
            for rowid in old.keys() - new.keys():
                if rowid // LINES_PER_PART == part and rowid <= last:
                    text[rowid % LINES_PER_PART] = ""
            for rowid, row in new.items():
                if rowid // LINES_PER_PART == part:
                    text[rowid % LINES_PER_PART] = _line_value(name, row).replace("\n", " ")
            conn.execute("insert or replace into search_blobs values (?, ?, ?)", (name, part, "\n".join(text)))


def _line_value(name: str, row: EntrySearchRow) -> str:
    if name == "ids":
        return row.summary[0]
    if name == "kinds":
        return row.summary[1]
    if name == "texts":
        return row.text
    return row.summary[2].lower() if name == "titles" else row.zh_text


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
        rows = self._rows("select value from search_blobs where name = ? order by part", (name,))
        text = "\n".join(row[0] for row in rows)
        return text.split("\n") if text else []

    def posted(self, kind: str, keys: Iterable[str]) -> dict[str, set[int]]:
        """The rowids of the entries having each of ``keys`` of this kind (none: an empty set), key by key."""
        found: dict[str, set[int]] = {key: set() for key in keys}
        if found:
            for key, blob in self._rows("select key, rowids from search_postings where kind = ? and key in "
                                        "(select value from json_each(?))", (kind, json.dumps(list(found)))):
                found[key] = set(unpack(blob))
        return found

    def zh_lines(self, rowids: set[int]) -> dict[int, str]:
        """The ``zh_texts`` line of each of ``rowids``, from the blob's parts holding them (a part of a thousand lines
        costs what decoding the zh texts of 10 to 35 entries' rows does, measured at 3,000 and 50,000 entries)."""
        if not rowids:
            return {}
        by_part: dict[int, list[int]] = defaultdict(list)
        for rowid in rowids:
            by_part[rowid // LINES_PER_PART].append(rowid)
        found = {}
        for part, value in self._rows("select part, value from search_blobs where name = 'zh_texts' and part in "
                                      "(select value from json_each(?))", (json.dumps(sorted(by_part)),)):
            lines = value.split("\n")
            found.update((rowid, lines[rowid % LINES_PER_PART]) for rowid in by_part[part])
        return found

    def zh_rows(self, rowids: Iterable[int]) -> list[tuple[int, str, dict]]:
        """(rowid, id, zh texts) of each of ``rowids``."""
        rows = self._rows("select rowid, id, zh from entries where rowid in (select value from json_each(?))",
                          (json.dumps(sorted(rowids)),))
        return [(rowid, entry_id, json.loads(zh or "{}")) for rowid, entry_id, zh in rows]

    def labels(self) -> list[str]:
        """Every distinct tag and model (the keys of the label postings)."""
        rows = self._rows("select value from search_blobs where name = 'labels'")
        return json.loads(rows[0][0]) if rows else []

    def values(self, column: str, rowids: list[int]) -> list[str]:
        """The id, kind or lower-case title (``column``) of each of ``rowids``, in their order."""
        if len(rowids) > FEW_ROWS:  # one value of all entries' lines is read faster than many rows
            found = self.blob(f"{column}s")
            return [found[rowid] for rowid in rowids]
        rows = dict(self._rows(f"select rowid, {column} from search_entries where rowid in "
                               "(select value from json_each(?))", (json.dumps(rowids),)))
        return [rows[rowid] for rowid in rowids]

    def columns(self, names: tuple[str, ...], rowids: list[int]) -> list[list[str]]:
        """``values`` of each column of ``names`` (id, kind, title), read at once."""
        if len(rowids) > FEW_ROWS:
            return [self.values(name, rowids) for name in names]
        rows = {row[0]: row[1:] for row in self._rows(
            f"select rowid, {', '.join(names)} from search_entries where rowid in (select value from json_each(?))",
            (json.dumps(rowids),))}
        return [[rows[rowid][at] for rowid in rowids] for at in range(len(names))]

    def lengths(self, kind: str, low: int, high: int) -> set[int]:
        """Rowids of the entries whose length of this kind lies in ``low..high``."""
        found: set[int] = set()
        for (blob,) in self._rows("select rowids from search_postings where kind = ? and "
                                  "cast(key as integer) between ? and ?", (kind, low, high)):
            found.update(unpack(blob))
        return found

    def compared_texts(self) -> list[tuple[str, str]]:
        """(id, title and summary as near_duplicates compares them) of every entry, in rowid order (line breaks
        read as spaces, which split words as they do)."""
        return [(entry_id, text) for entry_id, text in zip(self.blob("ids"), self.blob("texts")) if entry_id]

    def count(self) -> int:
        """The number of entries."""
        rows = self._rows("select value from search_blobs where name = 'count'")
        return int(rows[0][0]) if rows else 0

    def summaries(self, rowids: Iterable[int]) -> list[tuple[int, list]]:
        """(rowid, summary fields) of each of ``rowids``."""
        rows = self._rows(f"select rowid, {SUMMARY} from entries where rowid in "
                          "(select value from json_each(?))", (json.dumps(sorted(rowids)),))
        return [(rowid, json.loads(summary)) for rowid, summary in rows]

    def rowids_of(self, ids: Iterable[str]) -> dict[str, int]:
        rows = self._rows("select id, rowid from entries where id in (select value from json_each(?))",
                          (json.dumps(list(ids)),))
        return dict(rows)

    def fts_matches(self, match: str) -> dict[int, float]:
        """bm25 of every entry matching an FTS5 query, keyed by rowid, best first (the weights of
        Index.fts_scores)."""
        weights = ", ".join(str(weight) for _, weight in migrations.FTS_COLUMNS)
        return dict(self._rows(f"select rowid, bm25(entries_fts, {weights}) as score from entries_fts "
                               "where entries_fts match ? order by score", (match,)))

    def with_title_words(self, words: Iterable[str]) -> set[int]:
        """Rowids of the entries whose title holds one of ``words`` (alphanumeric) as a word, and a few more:
        FTS5 matches the words' stems."""
        words = list(dict.fromkeys(words))
        if not words:
            return set()
        match = "title : (" + " OR ".join(f'"{word}"' for word in words) + ")"
        return {row[0] for row in self._rows("select rowid from entries_fts where entries_fts match ?", (match,))}

    def with_trigrams(self, trigrams: Iterable[str]) -> set[int] | None:
        """Rowids of the entries whose title run together holds one of ``trigrams``, or None when the index
        has no trigram table (built with an SQLite older than 3.34)."""
        if not self._rows("select 1 from search_blobs where name = 'trigrams'"):
            return None
        trigrams = list(dict.fromkeys(trigrams))
        if not trigrams:
            return set()
        match = " OR ".join('"' + trigram.replace('"', '""') + '"' for trigram in trigrams)
        return {row[0] for row in self._rows(f"select rowid from {TRIGRAMS} where {TRIGRAMS} match ?", (match,))}

    def everyone(self) -> set[int]:
        """Every entry's rowid."""
        return {row[0] for row in self._rows("select rowid from entries")}

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
    if not rows or rows[0][0] != stamp(index.content_hash):
        return None
    return SearchTables(index)
