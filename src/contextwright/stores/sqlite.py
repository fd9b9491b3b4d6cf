"""The embedded default store: SQLite, a file or ``":memory:"``."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from contextwright.core.errors import ConfigError, StoreError
from contextwright.inputs.readers import batched
from contextwright.model.chunk import Chunk
from contextwright.stores.base import (
    DEFAULT_TABLE,
    DEFAULT_TIMEOUT_S,
    Progress,
    Ranges,
    check_table,
    check_timeout,
    logger,
    merge_ranges,
)
from contextwright.stores.loader import LoaderMixin
from contextwright.stores.rows import (
    COLUMNS,
    as_chunk,
    chunk_from_row,
    chunk_row,
    read_rows,
)

MMAP_BYTES = 1 << 30  # per read connection; SQLite caps it at its compile-time maximum


class SQLiteStore(LoaderMixin):
    """The embedded default chunk store: one SQLite file (or ``":memory:"``).

    One table keyed by ``(doc_id, idx)`` (a ``WITHOUT ROWID`` table, so a
    document's chunks sit together on disk and a range is one index seek).
    ``fetch`` sends all ranges as one JSON parameter to a constant query, so
    it is one statement, prepared once, whatever the batch size.

    The store may be shared across threads (the service shares one store
    across requests). A file database is in WAL mode and each thread reads
    through its own read-only connection, so fetches run concurrently and
    never wait for a lock; loading goes through one writer connection.
    (``":memory:"`` has one connection, shared under a lock.) A call that
    runs longer than its timeout is interrupted and raises
    :class:`~contextwright.core.errors.StoreError`.

    Args:
        path: A database file (created if missing) or ``":memory:"``.
        table: The table name (default ``chunks``).
        timeout_s: Default timeout of a ``fetch`` in seconds (``None``: none).
        create: ``False`` opens an existing store only: a missing file or
            table raises :class:`~contextwright.core.errors.ConfigError` instead of
            creating an empty store that silently expands nothing.

    Example:
        >>> store = SQLiteStore("nq.db")
        >>> store.load_jsonl("../shared/data/nq_corpus_chunks.jsonl.gz")
        3759
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        table: str = DEFAULT_TABLE,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        create: bool = True,
    ) -> None:
        check_timeout(timeout_s, "timeout_s")
        self.path = str(path)
        self.table = check_table(table)
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._closed = False
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        if not create:
            sqlite_must_exist(self.path, self.table)
        try:
            # ``timeout`` bounds waiting for another process's write lock on the file.
            busy = timeout_s if timeout_s is not None else 60.0
            self._busy = busy
            self._conn = sqlite3.connect(
                self.path, timeout=busy, check_same_thread=False, isolation_level=None
            )
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} ("
                "doc_id TEXT NOT NULL, idx INTEGER NOT NULL, id TEXT NOT NULL, text TEXT NOT NULL, "
                "title TEXT, source TEXT, section TEXT, page INTEGER, line INTEGER, "
                "metadata TEXT, embedding TEXT, PRIMARY KEY (doc_id, idx)) WITHOUT ROWID"
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.path!r}: {exc}.") from None
        self._fetch_sql = (
            f"SELECT {', '.join('c.' + c for c in COLUMNS)} FROM json_each(?) AS r "
            f"JOIN {self.table} AS c ON c.doc_id = json_extract(r.value, '$[0]') "
            "AND c.idx BETWEEN json_extract(r.value, '$[1]') AND json_extract(r.value, '$[2]') "
            "ORDER BY c.doc_id, c.idx"
        )

    def load_jsonl(self, path: str | os.PathLike[str], *, progress: Progress | None = None) -> int:
        """Load every chunk of a JSON Lines corpus (``.gz`` ok) in one transaction.

        Rows in canonical form skip building :class:`Chunk` objects (the same
        rows result), and the load runs with a large page cache; a million
        chunks load in well under two minutes.

        Returns:
            The number of chunks loaded.
        """
        return self._insert(read_rows(path, progress=progress), progress=None)

    def load(self, chunks: Iterable[Chunk | Mapping[str, Any]], *, progress: Progress | None = None) -> int:
        """Insert or replace chunks in one transaction (``executemany`` per 1,000).

        Args:
            chunks: Mappings or :class:`Chunk`, each with ``doc_id`` and ``index``.
            progress: Called after each batch with the running count (bytes 0).

        Returns:
            The number of chunks loaded.

        Raises:
            InputError: for a chunk without ``doc_id``/``index`` (nothing is loaded).
            StoreError: when SQLite fails (nothing is loaded).
        """
        rows = (chunk_row(as_chunk(c, i, f"chunks[{i}]")) for i, c in enumerate(chunks))
        return self._insert(rows, progress=progress)

    def _insert(self, rows: Iterable[tuple[Any, ...]], *, progress: Progress | None) -> int:
        sql = f"INSERT OR REPLACE INTO {self.table} ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
        count = 0
        with self._lock:
            # A 256 MB page cache for the load keeps the key B-tree in memory (set back after).
            cache = self._conn.execute("PRAGMA cache_size").fetchone()[0]
            self._conn.execute("PRAGMA cache_size = -262144")
            try:
                self._conn.execute("BEGIN")
                for batch in batched(rows, 5000):
                    self._conn.executemany(sql, batch)
                    count += len(batch)
                    if progress is not None:
                        progress(count, 0, 0)
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"loading into SQLite store {self.path!r} failed: {exc}.") from None
                raise
            finally:
                self._conn.execute(f"PRAGMA cache_size = {int(cache)}")
        logger.info("chunks loaded", extra={"store": "sqlite", "path": self.path, "chunks": count})
        return count

    def fetch(self, ranges: Ranges, /, *, timeout_s: float | None = None) -> list[Chunk]:
        """Every stored chunk in ``ranges``, sorted by ``(doc_id, index)``, in one query.

        Raises:
            StoreError: when SQLite fails or the call exceeds ``timeout_s``.
        """
        merged = merge_ranges(ranges)
        if not merged:
            return []
        payload = json.dumps([[d, lo, hi] for d, spans in merged.items() for lo, hi in spans])
        limit = self.timeout_s if timeout_s is None else timeout_s
        check_timeout(limit, "timeout_s")
        if self.path != ":memory:":
            return self._fetch_with(self._reader(), payload, limit, len(merged))
        start = time.perf_counter()
        if not self._lock.acquire(timeout=-1 if limit is None else limit):
            raise StoreError(
                f"SQLite store {self.path!r} timed out after {limit:g} s waiting for its connection "
                "(another call holds it); raise timeout_s or use a store per worker."
            )
        try:
            if self._closed:
                raise StoreError(f"SQLite store {self.path!r} is closed; open a new one.")
            if limit is not None:
                deadline = start + limit
                # SQLite calls this every 1,000 VM steps; a non-zero return interrupts the query.
                self._conn.set_progress_handler(lambda: int(time.perf_counter() > deadline), 1000)
            rows = self._conn.execute(self._fetch_sql, (payload,)).fetchall()
        except sqlite3.Error as exc:
            if limit is not None and "interrupted" in str(exc):
                raise StoreError(
                    f"SQLite store {self.path!r} fetch timed out after {limit:g} s "
                    f"({len(merged)} documents); raise timeout_s."
                ) from None
            raise StoreError(f"SQLite store {self.path!r} fetch failed: {exc}.") from None
        finally:
            if limit is not None and not self._closed:
                self._conn.set_progress_handler(None, 0)
            self._lock.release()
        return [chunk_from_row(r) for r in rows]

    def _reader(self) -> sqlite3.Connection:
        """This thread's read-only connection (opened on first use)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StoreError(f"SQLite store {self.path!r} is closed; open a new one.")
            uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
            try:
                conn = sqlite3.connect(
                    uri, uri=True, timeout=self._busy, check_same_thread=False, isolation_level=None
                )
                # Reads map the file instead of copying pages through read() calls: a fetch is ~20
                # B-tree seeks into random pages, so at a million chunks this keeps it as cheap as
                # at 10k (measured: p50 0.70 -> 0.60-0.64 ms at 1M). Address space only; pages are the OS's.
                conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open SQLite store {self.path!r} for reading: {exc}.") from None
            with self._readers_lock:  # not self._lock, which a long load holds
                self._readers.append(conn)
            self._local.conn = conn
        return conn

    def _fetch_with(
        self, conn: sqlite3.Connection, payload: str, limit: float | None, docs: int
    ) -> list[Chunk]:
        """One fetch on this thread's own connection: no lock, a deadline through the progress handler."""
        if self._closed:
            raise StoreError(f"SQLite store {self.path!r} is closed; open a new one.")
        try:
            if limit is not None:
                deadline = time.perf_counter() + limit
                # SQLite calls this every 1,000 VM steps; a non-zero return interrupts the query.
                conn.set_progress_handler(lambda: int(time.perf_counter() > deadline), 1000)
            rows = conn.execute(self._fetch_sql, (payload,)).fetchall()
        except sqlite3.Error as exc:
            if limit is not None and "interrupted" in str(exc):
                raise StoreError(
                    f"SQLite store {self.path!r} fetch timed out after {limit:g} s ({docs} documents); "
                    "raise timeout_s."
                ) from None
            raise StoreError(f"SQLite store {self.path!r} fetch failed: {exc}.") from None
        finally:
            if limit is not None and not self._closed:
                conn.set_progress_handler(None, 0)
        return [chunk_from_row(r) for r in rows]

    def count(self) -> int:
        """How many chunks the store holds."""
        with self._lock:
            try:
                return int(self._conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0])
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path!r} count failed: {exc}.") from None

    def close(self) -> None:
        """Close the connections; the store cannot be used afterwards."""
        with self._lock:
            self._closed = True
            self._conn.close()
            with self._readers_lock:
                for conn in self._readers:
                    conn.close()
                self._readers.clear()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, table={self.table!r})"


def sqlite_must_exist(path: str, table: str) -> None:
    """Raise unless ``path`` is an SQLite file holding ``table`` (read mode: only ``index`` creates stores)."""
    fix = f"Create it with: contextwright index CORPUS.jsonl --store sqlite:///{path}" + (
        "" if table == DEFAULT_TABLE else f" --table {table}"
    )
    if path == ":memory:":
        raise ConfigError(
            "an in-memory SQLite store starts empty, so reading from it finds nothing; "
            "open it with mode='create' and load chunks, or point at an indexed file. " + fix
        )
    if not os.path.isfile(path):
        raise ConfigError(f"chunk store {path!r} does not exist. {fix}")
    try:
        conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
        try:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ConfigError(f"chunk store {path!r} is not a readable SQLite database ({exc}). {fix}") from None
    if found is None:
        raise ConfigError(f"chunk store {path!r} has no table {table!r}: nothing was indexed there. {fix}")
