"""The FTS5 index of a big build, made by a helper interpreter in a side file while the build writes the rest.

A bulk insert fills FTS5 in one pass ('rebuild'): ~4 s of SQLite at 50,000 entries, on the build's one
connection, so it ran in turn with everything else the build asks SQLite for (the entries, files and search
tables). Its input is known before the rows go in: the rows of an empty ``entries`` table get rowids 1..N in
insert order. So a helper interpreter indexes those values, under the same FTS5 declaration, into a side database
on the other core, and the build copies the side's shadow tables in at the end (~0.2 s). FTS5 then holds what a
rebuild writes: the same documents, terms, sizes and averages, hence the same matches and bm25 scores (its
segments may be cut otherwise; tests/test_bulk_build.py compares with the row-by-row build, and FTS5's
integrity-check passes). Whatever goes wrong on the helper's side (it cannot start, is killed, the side file
cannot be written) and the build runs the rebuild itself, as before.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from opprof_advisor.core.sqlite_files import connect_readonly, remove_with_journals

#: Below this many rows the helper's start (~0.1 s) costs more than the rebuild it takes off the build.
SIDE_MIN_ROWS = 5_000
#: FTS5's shadow tables of a table named entries_fts (the content itself stays in ``entries``).
SHADOW_TABLES = ("entries_fts_data", "entries_fts_idx", "entries_fts_docsize", "entries_fts_config")
REBUILD = "insert into entries_fts (entries_fts) values ('rebuild')"


class SideIndex:
    """A helper process indexing rows into ``path``; ``copy_into`` waits for it and copies its FTS5 tables in."""

    def __init__(self, process, path: Path, task: tuple) -> None:
        """``task``: what the helper indexes, written to it by a thread (~100 MB at 50,000 entries), so the build
        goes on with its inserts meanwhile (they leave the GIL to SQLite) instead of waiting for the helper to
        start and read it."""
        import threading

        self.process = process
        self.path = path
        self.writer = None
        if process.stdin is not None:
            self.writer = threading.Thread(target=_write_input, args=(process, task), name="fts-side-input",
                                           daemon=True)
            self.writer.start()

    def _wait(self) -> int:
        if self.writer is not None:
            self.writer.join()
        return self.process.wait()

    def copy_into(self, conn: sqlite3.Connection) -> bool:
        """Replace the rows of ``conn``'s FTS5 shadow tables by the side's; False (``conn`` as it was) when the
        helper failed. Only plain tables are written: ``conn`` must not have used entries_fts in this transaction
        (its FTS5 module would keep what it read), which a build's bulk insert does not."""
        try:
            if self._wait() != 0:
                return False
            side = connect_readonly(self.path)
        except (OSError, sqlite3.Error):
            return False
        try:
            counts = {table: side.execute(f"select count(*) from {table}").fetchone()[0] for table in SHADOW_TABLES}
            if not all(count for table, count in counts.items() if table != "entries_fts_idx"):
                return False  # a side file without FTS5's records: not what the helper writes
            return _copy_tables(side, conn)
        except sqlite3.Error:  # the side file cannot be read after all
            return False
        finally:
            side.close()

    def discard(self) -> None:
        """Stop the helper if it still runs and remove its file."""
        if self.process.poll() is None:
            self.process.kill()
        self._wait()
        remove_with_journals(self.path)


def start_side_index(conn: sqlite3.Connection, rows: Sequence[tuple], columns: Sequence[str]) -> SideIndex | None:
    """A helper indexing ``rows`` (values in ``columns`` order) as the rows 1..N of ``entries`` would be; None
    when that cannot be: too few rows, one core, entries not empty, or no file beside the index to write."""
    if len(rows) < SIDE_MIN_ROWS or (os.cpu_count() or 1) < 2:
        return None
    if conn.execute("select exists (select 1 from entries)").fetchone()[0]:
        return None  # the new rows' rowids would not be 1..N
    declaration = conn.execute("select sql from sqlite_master where name = 'entries_fts'").fetchone()
    fts_columns = [row[1] for row in conn.execute("select * from pragma_table_info('entries_fts')")]
    database = conn.execute("select file from pragma_database_list where name = 'main'").fetchone()
    if declaration is None or not database or not database[0] or not set(fts_columns) <= set(columns):
        return None
    path = Path(database[0] + ".fts.tmp")  # beside a build's temporary file: removed with it if the build dies
    at = [columns.index(name) for name in fts_columns]
    values = [(rowid, *(row[index] for index in at)) for rowid, row in enumerate(rows, 1)]
    try:
        process = _start_helper(path)
    except OSError:
        return None
    return SideIndex(process, path, (declaration[0], fts_columns, values))


def _copy_tables(side: sqlite3.Connection, conn: sqlite3.Connection) -> bool:
    """The shadow tables' rows of ``side`` into ``conn``, streamed (~70 MB at 50,000 entries); on a failure, ``conn``
    is left as it was and False returned (the caller rebuilds, which meets the same disk if that was the cause)."""
    conn.execute("savepoint fts_side_copy")
    try:
        for table in SHADOW_TABLES:
            conn.execute(f"delete from {table}")
            rows = side.execute(f"select * from {table}")
            conn.executemany(f"insert into {table} values ({', '.join('?' * len(rows.description))})", rows)
    except sqlite3.Error:
        conn.execute("rollback to fts_side_copy")
        conn.execute("release fts_side_copy")
        return False
    conn.execute("release fts_side_copy")
    return True


def _start_helper(path: Path):
    # A plain child interpreter, as index_sync's parse workers: no file descriptor inherited (the index lock).
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "opprof_advisor.kb.index_fts_side", str(path)], stdin=subprocess.PIPE)


def _write_input(process, task: tuple) -> None:
    import pickle

    try:
        pickle.dump(task, process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # noqa: BLE001 - the helper died (broken pipe), or the dump failed (memory ...):
        process.kill()  # either way it must not wait for the rest of its input; its exit status tells
    finally:
        try:
            process.stdin.close()
        except OSError:
            pass


def _serve_helper() -> None:
    import pickle
    import sys

    path = sys.argv[1]
    parent = os.getppid()
    declaration, columns, values = pickle.load(sys.stdin.buffer)
    Path(path).unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        # A scratch file the build copies and removes: no journal, no sync.
        conn.execute("pragma journal_mode = off")
        conn.execute("pragma synchronous = off")
        conn.execute("pragma cache_size = -131072")
        conn.execute(declaration)
        with conn:
            conn.executemany(f"insert into entries_fts (rowid, {', '.join(columns)}) "
                             f"values ({', '.join('?' * (len(columns) + 1))})", values)
    finally:
        conn.close()
    if os.getppid() != parent:  # the build was killed meanwhile: nobody will copy or remove the file
        Path(path).unlink(missing_ok=True)


def run_quietly(serve) -> None:
    """Run a helper process's ``serve`` and exit 0, or exit 1 without a word on any failure (a killed parent, a
    full disk, Ctrl-C in the terminal, which reaches the whole process group): the parent sees the status and
    does the work itself (or, on Ctrl-C, stops as the user asked), so nothing is said twice, and no traceback."""
    try:
        serve()
    except BaseException:  # noqa: BLE001 - see above
        os._exit(1)


if __name__ == "__main__":
    run_quietly(_serve_helper)
