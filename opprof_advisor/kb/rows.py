"""The read side of the KB index: ``Index`` (a snapshot of one index file) and the entries' rows (Entry ⇄ row).

Reading uses the stdlib ``sqlite3`` module only, because ``advisor search`` must start fast and
``import sqlite_utils`` alone costs ~100 ms. The rows are written by ``index_sync``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from opprof_advisor.core.errors import EntryNotFound, KnowledgeBaseError, Problem
from opprof_advisor.core.models import Entry, Gain
from opprof_advisor.core.sqlite_files import connect_readonly
from opprof_advisor.kb import migrations
from opprof_advisor.kb.zh import fts_gram, gram_text
from json.encoder import c_make_encoder, encode_basestring

#: The entries table's columns: models.Entry's fields, in order.
_ENTRY_COLUMNS = tuple(item.name for item in dataclasses.fields(Entry))
_LIST_COLUMNS = ("operators", "symptoms", "tags", "models", "hardware", "sources", "related", "requires", "contradicts")


class EntrySummary(NamedTuple):
    """The searchable fields of an entry, without its body.

    A named tuple, not a frozen dataclass: a search builds one per entry, and a tuple is built
    four times faster (0.14 s against 0.58 s for 50,000 here).
    """

    id: str
    kind: str
    title: str
    operators: list[str]
    symptoms: list[str]
    tags: list[str]
    models: list[str]


class EntryText(NamedTuple):
    """The words a reader judges an entry by (near_duplicates compares them), without the rest of the row."""

    id: str
    title: str
    summary: str


class Index:
    """A read-only view of one built index file (a consistent snapshot while it is open)."""

    def __init__(self, db_path: Path, conn: sqlite3.Connection, meta: dict[str, str], *, immutable: bool = False):
        self.db_path = db_path
        self.content_hash: str = meta["content_hash"]
        self._meta = meta
        self._conn: sqlite3.Connection | None = conn
        self._immutable = immutable  # a stale index read as it is (see open_index)
        self._summaries: list[EntrySummary] | None = None

    def __repr__(self) -> str:
        return f"Index({str(self.db_path)!r}, content_hash={self.content_hash[:12]!r})"

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            if self._conn is None:
                self._conn = connect_readonly(self.db_path, immutable=self._immutable)
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.db_path, str(exc)) from exc

    def close(self) -> None:
        """Close the connection (the next query reopens the file, which may be a newer build)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __del__(self) -> None:
        # A sqlite3 connection sits in a reference cycle of its own and would keep its read
        # transaction (and so hold off an add) until the garbage collector runs; the Index is not.
        conn = getattr(self, "_conn", None)
        if conn is not None:
            try:
                conn.close()
            except sqlite3.ProgrammingError:
                # The collector may finalise an Index on any thread (a build's fill thread, say), where sqlite3
                # refuses close(); the connection's own finaliser then closes it, in the same collection.
                pass

    def entries(self, kind: str | None = None) -> list[Entry]:
        """All entries (of one kind if given), ordered by kind then id."""
        where, params = ("where kind = ?", (kind,)) if kind else ("", ())
        rows = self._query(f"select {_ENTRY_SELECT} from entries {where} order by kind, id", params)
        try:
            return _rows_to_entries(rows)
        except (ValueError, TypeError):
            return [self._entry(row) for row in rows]  # one by one, to name the damaged entry

    def texts(self) -> list[EntryText]:
        """Id, title and summary of every entry, sorted by id (what `advisor add` compares a new entry with)."""
        return [EntryText(*row) for row in self._query("select id, title, summary from entries order by id")]

    def existing(self, ids: Sequence[str]) -> list[str]:
        """Those of ``ids`` that name an entry, sorted."""
        return [row[0] for row in self._query(
            "select id from entries where id in (select value from json_each(?)) order by id", (json.dumps(list(ids)),))]

    def texts_of(self, ids: Sequence[str]) -> list[EntryText]:
        """``texts`` of the entries ``ids`` only."""
        return [EntryText(*row) for row in self._query(
            "select id, title, summary from entries where id in (select value from json_each(?)) order by id",
            (json.dumps(list(ids)),))]

    def ids(self) -> list[str]:
        """Every entry id, sorted."""
        return [row[0] for row in self._query("select id from entries order by id")]

    def get(self, entry_id: str) -> Entry:
        """The entry with this id; raise EntryNotFound with close ids as suggestions."""
        rows = self._query(f"select {_ENTRY_SELECT} from entries where id = ?", (entry_id,))
        if rows:
            return self._entry(rows[0])
        raise EntryNotFound(entry_id, suggest_ids(entry_id, self.ids()))

    def _entry(self, row: tuple) -> Entry:
        try:
            return _row_to_entry(row)
        except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
            raise _damaged(self.db_path, f"entry {row[0]!r}: {exc}") from exc

    def summaries(self) -> list[EntrySummary]:
        """Id, kind, title, operators, symptoms, tags and models of every entry (for search), sorted by id.

        The list columns of every row are decoded by one json.loads.
        """
        if self._summaries is None:
            rows = self._query("select id, kind, title, coalesce(operators, '[]'), coalesce(symptoms, '[]'),"
                               " coalesce(tags, '[]'), coalesce(models, '[]') from entries order by id")
            try:
                lists = json.loads("[" + ",".join(cell for row in rows for cell in row[3:]) + "]")
                if len(lists) != 4 * len(rows) or not all(isinstance(item, list) for item in lists):
                    raise ValueError("a list column holds something else")
                self._summaries = [EntrySummary(*row[:3], *lists[4 * number:4 * number + 4])
                                   for number, row in enumerate(rows)]
            except (ValueError, TypeError) as exc:
                raise _damaged(self.db_path, f"the search summaries: {exc}") from exc
        return self._summaries

    def fts_scores(self, match: str, limit: int = 500) -> dict[str, float]:
        """bm25 of entries matching an FTS5 query (more negative is better), keyed by id."""
        weights = ", ".join(str(weight) for _, weight in migrations.FTS_COLUMNS)
        rows = self._query(
            f"select entries.id, bm25(entries_fts, {weights}) as rank from entries_fts "
            "join entries on entries.rowid = entries_fts.rowid where entries_fts match ? order by rank limit ?",
            (match, limit),
        )
        return {row[0]: row[1] for row in rows}

    def zh_holders(self, grams: Iterable[str]) -> dict[str, set[str]]:
        """The ids of the entries holding each of ``grams`` (kb.zh) among their Chinese grams."""
        return {gram: {row[0] for row in self._query(
            f"select entries.id from {migrations.ZH_FTS} join entries on entries.rowid = {migrations.ZH_FTS}.rowid "
            f"where {migrations.ZH_FTS} match ?", (fts_gram(gram),))} for gram in grams}

    def zh_texts(self, ids: Iterable[str]) -> dict[str, dict[str, str]]:
        """The ``zh:`` mapping of the entries ``ids``."""
        rows = self._query("select id, zh from entries where id in (select value from json_each(?))",
                           (json.dumps(list(ids)),))
        try:
            return {entry_id: json.loads(zh or "{}") for entry_id, zh in rows}
        except ValueError as exc:
            raise _damaged(self.db_path, f"the zh texts: {exc}") from exc

    def term_exists(self, match: str) -> bool:
        """True when an FTS5 query matches at least one entry."""
        return bool(self._query("select 1 from entries_fts where entries_fts match ? limit 1", (match,)))

    @property
    def problems(self) -> list[Problem]:
        """Problems found while building: invalid files (not indexed), duplicate ids, dangling related ids."""
        rows = self._query("select path, problems from files where problems is not null order by source, path")
        try:
            found = [Problem(path, line, message) for path, problems in rows for line, message in json.loads(problems)]
            found.extend(Problem(*item) for item in json.loads(self._meta.get("problems", "[]")))
        except (ValueError, TypeError) as exc:
            raise _damaged(self.db_path, f"the list of problems: {exc}") from exc
        return found

    @property
    def file_count(self) -> int:
        """Number of source files the index was built from."""
        return self._query("select count(*) from files")[0][0]


def _damaged(db_path: Path, detail: str) -> KnowledgeBaseError:
    return KnowledgeBaseError(f"the knowledge-base index is damaged ({detail})", path=db_path,
                              hint="run `advisor kb build --rebuild`, which builds it again from the KB files")


_ENTRY_SELECT = ", ".join(_ENTRY_COLUMNS)


def _row_to_entry(row: tuple) -> Entry:
    values = dict(zip(_ENTRY_COLUMNS, row))
    for column in _LIST_COLUMNS:
        values[column] = json.loads(values[column] or "[]")
    values["op_mix"] = json.loads(values["op_mix"] or "{}")
    values["applies_to"] = json.loads(values["applies_to"] or "{}")
    values["zh"] = json.loads(values["zh"] or "{}")
    values["gain"] = Gain(**json.loads(values["gain"])) if values["gain"] else None
    return Entry(**values)


def entry_dict(entry: Entry) -> dict[str, Any]:
    """``entry.to_dict()`` without its deep copies (the same JSON, a tenth of the time): for serialising only."""
    data = {name: getattr(entry, name) for name in _ENTRY_COLUMNS}
    if entry.gain is not None:  # the Gain's own fields
        data["gain"] = entry.gain.to_dict()
    return data


#: The JSON columns of an entry row, with what an empty cell stands for.
_DICT_COLUMNS = ("op_mix", "applies_to", "zh")
_JSON_DEFAULTS = {**dict.fromkeys(_LIST_COLUMNS, "[]"), **dict.fromkeys(_DICT_COLUMNS, "{}"), "gain": "null"}
_JSON_SHAPES = {**dict.fromkeys(_LIST_COLUMNS, list), **dict.fromkeys(_DICT_COLUMNS, dict), "gain": (dict, type(None))}
_GAIN = _ENTRY_COLUMNS.index("gain")


def _rows_to_entries(rows: Sequence[tuple]) -> list[Entry]:
    """``_row_to_entry`` of every row, their JSON cells decoded by one json.loads (ten per entry were ~10 ms of a
    suggest's start-up); ValueError / TypeError when a cell is not what the build writes (decode row by row then)."""
    at = [(_ENTRY_COLUMNS.index(column), column) for column in _JSON_DEFAULTS]
    cells = [row[index] or _JSON_DEFAULTS[column] for row in rows for index, column in at]
    decoded = json.loads("[" + ",".join(cells) + "]")
    if len(decoded) != len(cells):
        raise ValueError("a JSON cell holds more than one value")
    out = []
    for number, row in enumerate(rows):
        values = dict(zip(_ENTRY_COLUMNS, row))
        for (_index, column), value in zip(at, decoded[number * len(at):(number + 1) * len(at)]):
            if not isinstance(value, _JSON_SHAPES[column]):
                raise TypeError(f"{column} is not a {_JSON_SHAPES[column]}")
            values[column] = value
        values["gain"] = Gain(**values["gain"]) if row[_GAIN] else None  # as _row_to_entry: a "null" cell is damage
        out.append(Entry(**values))
    return out


_ROW_JSON_COLUMNS = (*_LIST_COLUMNS, "op_mix", "applies_to", "gain", "zh")


def _json_text(value: list | dict) -> str:
    """``json.dumps(value, ensure_ascii=False)``, by an encoder made once: json.dumps builds a new encoder per
    call when given an option, and eleven calls per entry were a third of turning an entry into its row."""
    global _JSON_TEXT
    if _JSON_TEXT is None:
        if c_make_encoder is None:  # an interpreter without the C accelerator: the same text, the slow way
            _JSON_TEXT = json.JSONEncoder(ensure_ascii=False).encode
        else:
            # The arguments JSONEncoder.iterencode passes for ensure_ascii=False and the other defaults;
            # no circular-reference markers: an entry's values are trees of lists, dicts and scalars.
            encoder = c_make_encoder(None, json.JSONEncoder().default, encode_basestring, None, ": ", ", ", False, False, True)
            _JSON_TEXT = lambda tree: "".join(encoder(tree, 0))  # noqa: E731
    return _JSON_TEXT(value)


_JSON_TEXT = None


def _entry_to_row(entry: Entry) -> dict[str, Any]:
    row = entry_dict(entry)
    for column in _ROW_JSON_COLUMNS:
        row[column] = _json_text(row[column]) if row[column] else None
    row["zh_grams"] = gram_text(entry.zh, entry.title, entry.operators, entry.tags)  # the Chinese search's tokens
    # A change detector only: the JSON of the column values (text or None, after the line above) is
    # unambiguous, and with the encoder made once a third of the cost of their repr.
    row["row_hash"] = hashlib.sha256(_json_text(list(row.values())).encode()).hexdigest()
    return row


def suggest_ids(word: str, ids: Iterable[str], limit: int = 3) -> list[str]:
    """Ids close to ``word`` (typos, partial ids), best first."""
    from rapidfuzz import fuzz, process

    matches = process.extract(word.lower(), list(ids), scorer=fuzz.WRatio, limit=limit, score_cutoff=60)
    return [match[0] for match in matches]
