"""Filling the candidate tables of `advisor search` (kb_search_index) from ``entries``, at build time.

At 50,000 entries the tables hold a million (bigram, entry) pairs, a million title words to count and 45 MB of
lines, all computed here while the build's FTS5 rebuild runs in a thread: their Python is on the build's critical
path. So the entries are read in one pass, a column at a time (each column's JSON decoded in one call, the titles
lower-cased and their words found in one pass over all of them), and the keys gathered a kind at a time (the ids'
bigrams sorted by numpy); the rows are those kb_search_index's entry-by-entry functions give (entry_keys,
entry_words, zh_text), which the incremental update of an add or a remove uses (tests/test_search_fill.py
compares the two).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

from opprof_advisor.kb import search_index as kb_search_index
from opprof_advisor.kb.search_index import (
    COMPARED_TEXT, FAMILY, HAN, ID_BIGRAM, ID_LENGTH, JOINED_LENGTH, KIND, LABEL, ROWID_CODE, SCHEMA,
    STAMP_KEY, SYMPTOM, TITLE_SET_LENGTH, TRIGRAMS, WORD, ZH_WORD, listed_keys, pack, stamp, vocabulary_rows, zh_text,
)
from opprof_advisor.kb.search_zh import HAN_RANGES


def fill_search_tables(conn: sqlite3.Connection, *, alongside: Callable[[], None] | None = None) -> None:
    """(Re)fill the candidate tables from ``entries`` and stamp them with the index's content hash.

    ``alongside`` (a build's FTS5 rebuild), then the trigram table's fill, run in a thread on ``conn`` while the
    other tables' rows are computed here in Python: SQLite releases the GIL while it works, so both cores do.
    Nothing else uses ``conn`` meanwhile; ``conn`` must allow it (``check_same_thread=False``). The rows are
    inserted once the thread is done (an insert a row at a time in the thread would wait for the GIL at each row).
    """
    for statement in SCHEMA:
        conn.execute(statement)
    # Every search lists the build's problems (files whose problems are not null): without this
    # index that read scans the whole files table, a tenth of a second at 50,000 entries.
    conn.execute("create index if not exists files_with_problems on files (source, path) where problems is not null")
    columns = _read_columns(conn)
    content = conn.execute("select value from meta where key = 'content_hash'").fetchone()
    rowids, titles = columns[0], _lower_lines(columns[3])
    # the titles without what is not [a-z0-9], at once (UTF-8: every byte of a non-ASCII character is >= 0x80)
    joined = titles.encode().translate(None, _NOT_WORD_NOR_BREAK).decode().split("\n") if rowids else []
    trigrams: list[bool] = []

    def in_sqlite() -> None:
        if alongside is not None:
            alongside()
        trigrams.append(fill_trigrams(conn, rowids, joined))

    worker = _start_thread(in_sqlite)
    try:
        inserts = list(_table_rows(columns, titles, joined))
    finally:
        _join_thread(*worker)
    for statement, rows in inserts:
        conn.executemany(statement, rows)
    if trigrams[0]:
        conn.execute("insert into search_blobs values ('trigrams', 0, 'yes')")
    conn.execute("insert or replace into meta (key, value) values (?, ?)",
                 (STAMP_KEY, stamp(content[0] if content else "")))


#: What a fill reads of each entry, in rowid order: the columns of SUMMARY (its lists as JSON text), the zh texts
#: (JSON) and COMPARED_TEXT, in one pass over the entries' rows.
_COLUMNS = ("select rowid, id, kind, title, coalesce(operators, '[]'), coalesce(symptoms, '[]'),"
            " coalesce(tags, '[]'), coalesce(models, '[]'), coalesce(zh, '{{}}'), {text} from entries order by rowid")
#: The bytes of UTF-8 text that are WORD's characters (those of a non-ASCII character are all >= 0x80), the bytes
#: that are not (but the line break) to delete, and a table turning every other byte into a space.
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
_NOT_WORD_NOR_BREAK = bytes(code for code in range(256) if code not in _WORD_BYTES and code != ord("\n"))
_SPACE_BUT_WORDS = bytes(code if code in _WORD_BYTES else ord(" ") for code in range(256))
#: A table turning every byte but those of kb_search_zh.LATIN's characters and the line break into a space.
_SPACE_BUT_LATIN_OR_BREAK = bytes(code if code in _WORD_BYTES or code in b"_\n" else ord(" ") for code in range(256))


def _count_words(text: str) -> Counter[str]:
    """Counter(WORD.findall(text)), several times faster: bytes split at the bytes that are not WORD's."""
    return Counter({word.decode(): times for word, times in
                    Counter(text.encode().translate(_SPACE_BUT_WORDS).split()).items()})


def _read_columns(conn: sqlite3.Connection) -> list[tuple]:
    """The columns of _COLUMNS, each a tuple in rowid order (a KB without entries: empty tuples)."""
    rows = conn.execute(_COLUMNS.format(text=COMPARED_TEXT)).fetchall()
    return list(zip(*rows)) if rows else [()] * 10


def _lower_lines(values: tuple[str, ...]) -> str:
    """``values`` lower-case, one a line (their line breaks spaces, as every scorer reads them), lowered in one call:
    a line break changes no letter's case around it (Python's one context rule, the final sigma, stops there as at
    the end of a string)."""
    text = "\n".join(values)
    if text.count("\n") >= len(values):  # a value holds a line break
        text = "\n".join(value.replace("\n", " ") for value in values)
    return text.lower()


def _json_lists(texts: Iterable[str]) -> list[list]:
    """The JSON arrays ``texts``, decoded in one call (a call per entry costs more than the decoding)."""
    return json.loads("[" + ",".join(texts) + "]")


def _table_rows(columns: list[tuple], titles: str, joined: list[str]) -> Iterator[tuple[str, list[tuple]]]:
    """The inserts (statement, rows) of search_entries, search_blobs (but the trigrams' mark), search_postings and
    search_words of the entries ``columns`` (_read_columns), their lower-case ``titles`` (_lower_lines) and those run
    together (``joined``): the keys of entry_keys, the words of entry_words and the lines of each entry, a kind at
    a time."""
    rowids, ids, kinds, raw_titles, operators, symptoms, tags, models, zh, texts = columns
    lowered, titles = titles, (titles.split("\n") if rowids else [])
    yield "insert into search_entries values (?, ?, ?, ?)", list(zip(rowids, ids, kinds, titles))
    blobs = (("ids", ids), ("titles", titles), ("kinds", kinds), ("texts", map(str.strip, texts)))
    yield _INSERT_BLOB, [(name, *part) for name, values in blobs for part in _line_parts(rowids, values)]
    operators, symptoms, tags, models, zh = (_json_lists(column) for column in (operators, symptoms, tags, models, zh))
    zh_texts = map(zh_text, zh, raw_titles, operators, tags)
    zh_parts = [part.lower() for _, part in _line_parts(rowids, zh_texts)]
    yield _INSERT_BLOB, [("zh_texts", number, part) for number, part in enumerate(zh_parts)]
    postings = _postings(rowids, ids, kinds, titles, joined, operators, symptoms, tags, models)
    postings = sorted(postings + [(HAN, key, found) for key, found in han_postings(zh_parts).items()]
                      + [(ZH_WORD, key, found) for key, found in zh_word_postings(zh_parts).items()])
    yield "insert into search_postings values (?, ?, ?)", postings
    labels = json.dumps(sorted(key for kind, key, _ in postings if kind == LABEL), ensure_ascii=False)
    yield _INSERT_BLOB, [("labels", 0, labels), ("count", 0, str(len(rowids)))]
    yield "insert into search_words values (?, ?, ?)", vocabulary_rows(
        _word_counts(ids, lowered, (operators, symptoms, tags, models)))


_INSERT_BLOB = "insert into search_blobs values (?, ?, ?)"


def _postings(rowids, ids, kinds, titles, joined, operators, symptoms, tags, models) -> list[tuple[str, str, bytes]]:
    """The rows of search_postings (sorted by key): the rowids of the entries having each key of entry_keys."""
    by_kind: dict[str, dict] = {name: defaultdict(list) for name in (KIND, ID_LENGTH, JOINED_LENGTH,
                                                                      TITLE_SET_LENGTH, LABEL)}
    of_kind, id_length, joined_length, set_length, label = by_kind.values()
    for rowid, entry_id, kind, title, together, listed_tags, listed_models in zip(
            rowids, ids, kinds, titles, joined, tags, models):
        of_kind[kind].append(rowid)
        id_length[len(entry_id)].append(rowid)
        joined_length[len(together)].append(rowid)
        tokens = set(title.split())  # token_set_length, inline: a call costs as much as the work
        set_length[sum(map(len, tokens)) + len(tokens) - 1 if tokens else 0].append(rowid)
        for name in {*listed_tags, *listed_models}:
            label[name].append(rowid)
    by_kind[ID_BIGRAM] = id_bigrams(rowids, ids)
    for kind_of_list, lists in ((FAMILY, operators), (SYMPTOM, symptoms)):
        by_kind[kind_of_list] = positions = defaultdict(list)
        keys_of: dict[tuple[str, ...], list[str]] = {}  # many entries list the same families or symptoms
        for rowid, listed in zip(rowids, lists):
            if listed:
                same = tuple(listed)
                keys = keys_of.get(same)
                if keys is None:
                    keys = keys_of[same] = listed_keys(listed)
                for key in keys:
                    positions[key].append(rowid)
    return sorted((kind, str(key), found if isinstance(found, bytes) else pack(found))
                  for kind, keys in by_kind.items() for key, found in keys.items())


def id_bigrams(rowids: tuple[int, ...], ids: tuple[str, ...]) -> dict[str, bytes]:
    """The ID_BIGRAM postings, packed: each bigram of the ids, with the rowids of the ids holding it.

    A million (bigram, entry) pairs at 50,000 entries: numpy sorts their codes (the two characters' code points and
    the entry's position, in one integer) instead of a dictionary taking them one at a time in Python."""
    import numpy as np

    count = len(ids)
    text = "".join(ids)
    if not 0 < count < 1 << 22 or "\0" in text:  # numpy ends its strings at a NUL; a position needs 22 bits
        return {pair: pack(found) for pair, found in _bigrams_in_python(rowids, ids).items()}
    points = np.array(ids)
    width = points.dtype.itemsize // 4
    codes = points.view(np.uint32).reshape(count, width).astype(np.uint64)
    pairs = (codes[:, :-1] << 43) | (codes[:, 1:] << 22) | np.arange(count, dtype=np.uint64)[:, None]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=count)
    pairs = np.sort(pairs[np.arange(width - 1) < (lengths - 1)[:, None]])  # by bigram, then position
    if not len(pairs):
        return {}
    pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]  # an id's bigram once
    keys, positions = pairs >> 22, (pairs & ((1 << 22) - 1)).astype(np.intp)
    found = np.asarray(rowids, dtype=np.dtype(ROWID_CODE))[positions]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    ends = [*starts[1:].tolist(), len(keys)]
    return {chr(key >> 21) + chr(key & 0x1FFFFF): found[start:end].tobytes()
            for start, end, key in zip(starts.tolist(), ends, keys[starts].tolist())}


def han_postings(parts: list[str]) -> dict[str, bytes]:
    """The HAN postings, packed: each Han character of the ``zh_texts`` lines (``parts``: the blob's parts in order,
    so that line r is rowid r), with the rowids of the lines holding it (kb_search_index.han_characters of each).

    numpy finds them (3 million Han characters at 50,000 entries): each character's offset from the first Han code
    point and its line, a part at a time; then one stable sort by offset (a radix sort of 16-bit numbers), which
    keeps each character's lines rising, so that a line's repeats of a character lie side by side."""
    import numpy as np

    base = min(low for low, _ in HAN_RANGES)
    span = max(high for _, high in HAN_RANGES) - base
    offset_type = np.uint16 if span < 1 << 16 else np.uint32
    offsets, rows, first = [], [], 0
    for part in parts:
        codes = np.frombuffer(part.encode("utf-32-le"), dtype=np.uint32)
        han = np.zeros(len(codes), dtype=bool)
        for low, high in HAN_RANGES:
            han |= (codes >= low) & (codes <= high)
        at, breaks = np.flatnonzero(han), np.flatnonzero(codes == ord("\n"))
        rows.append(np.searchsorted(breaks, at).astype(np.dtype(ROWID_CODE)) + first)  # breaks before: the line
        offsets.append((codes[at] - base).astype(offset_type))
        first += len(breaks) + 1
    offset, row = (np.concatenate(offsets), np.concatenate(rows)) if parts else ([], [])
    if not len(offset):
        return {}
    order = np.argsort(offset, kind="stable")
    offset, row = offset[order], row[order]
    starts = np.flatnonzero(np.concatenate(([True], offset[1:] != offset[:-1])))
    distinct = np.concatenate(([True], (offset[1:] != offset[:-1]) | (row[1:] != row[:-1])))
    ends = [*starts[1:].tolist(), len(offset)]
    return {chr(base + key): row[start:end][distinct[start:end]].tobytes()
            for start, end, key in zip(starts.tolist(), ends, offset[starts].tolist())}


def zh_word_postings(parts: list[str]) -> dict[str, bytes]:
    """The ZH_WORD postings, packed: each Latin word of the ``zh_texts`` lines (``parts`` as han_postings reads them),
    with the rowids of the lines holding it (kb_search_index.zh_words of each): the lines' bytes that are not those
    of a word, nor a line break, made spaces at once (every byte of a non-ASCII character is >= 0x80), each line's
    words then split off and made distinct."""
    found: dict[bytes, list[int]] = defaultdict(list)
    first = 0
    for part in parts:
        lines = part.encode().translate(_SPACE_BUT_LATIN_OR_BREAK).split(b"\n")
        for rowid, line in enumerate(lines, first):
            for word in set(line.split()):
                found[word].append(rowid)
        first += len(lines)
    return {word.decode(): pack(rowids) for word, rowids in found.items()}


def _bigrams_in_python(rowids: tuple[int, ...], ids: tuple[str, ...]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = defaultdict(list)
    for rowid, entry_id in zip(rowids, ids):
        for pair in set(map(str.__add__, entry_id, entry_id[1:])):
            found[pair].append(rowid)
    return found


def _word_counts(ids: Iterable[str], titles: str, lists: Iterable[list[list[str]]]) -> Counter:
    """The counts of entry_words over all entries: the words of ids and of the lower-case ``titles`` (_lower_lines),
    then of each distinct label (tags, models, symptoms and operators repeat: their words are found once each)."""
    counts = _count_words("\n".join(ids).lower())  # one pass over all ids: no word runs across a line break
    counts.update(_count_words(titles))
    labels = Counter(chain.from_iterable(chain.from_iterable(lists)))
    for name, times in labels.items():
        for word in WORD.findall(name.lower()):
            counts[word] += times
    return counts


def _start_thread(work: Callable[[], None]) -> tuple:
    import threading

    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # raised again by _join_thread, in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="search-tables-sqlite", daemon=True)
    thread.start()
    return thread, failed


def _join_thread(thread, failed: list[BaseException]) -> None:
    thread.join()
    if failed:
        raise failed[0]


def fill_trigrams(conn: sqlite3.Connection, rowids: Iterable[int], joined: Iterable[str]) -> bool:
    """Index the titles run together (``joined``, of ``rowids``) by trigram (FTS5's trigram tokenizer, SQLite 3.34+);
    False without it."""
    try:
        conn.execute(f"create virtual table {TRIGRAMS} using fts5(joined, tokenize='trigram', detail='none',"
                     " content='')")
    except sqlite3.OperationalError:
        return False  # an older SQLite: every entry is a candidate of that comparison
    # One statement reading a JSON object (rowid: title run together, in rowid order), not a row at a time: SQLite
    # then holds no GIL from the first row to the last, while the caller's thread computes the other tables
    conn.execute(f"insert into {TRIGRAMS} (rowid, joined) select cast(key as integer), value from json_each(?)",
                 (json.dumps(dict(zip(rowids, joined))),))
    return True


def _line_parts(rowids: tuple[int, ...], values: Iterable[str]) -> list[tuple[int, str]]:
    """The (part, value) rows of a line blob: each of ``values`` at the line of its rowid (empty lines for rowids
    without a value), in parts of LINES_PER_PART lines."""
    values = list(values)
    if not rowids or (rowids[0] == 1 and rowids[-1] == len(rowids)):  # rowids 1..n (they ascend): the values in turn
        text = ["", *values]
    else:
        text = [""] * (max(rowids, default=0) + 1)
        for rowid, value in zip(rowids, values):
            text[rowid] = value
    if "\n".join(text).count("\n") >= len(text):  # a value holds a line break: a space to every scorer
        text = [value.replace("\n", " ") for value in text]
    return [(number, "\n".join(text[start:start + kb_search_index.LINES_PER_PART]))
            for number, start in enumerate(range(0, len(text), kb_search_index.LINES_PER_PART))]
