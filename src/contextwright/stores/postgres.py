"""A PostgreSQL chunk store: psycopg 3 with a connection pool (extra ``store``)."""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from contextwright.core.errors import ConfigError, ContextwrightError, InputError, StoreError, missing_extra
from contextwright.inputs.readers import batched
from contextwright.model.chunk import Chunk
from contextwright.stores.base import (
    DEFAULT_TABLE,
    DEFAULT_TIMEOUT_S,
    Progress,
    Ranges,
    check_table,
    check_timeout,
    failure_reason,
    logger,
    merge_ranges,
    redact_url,
)
from contextwright.stores.breaker import CircuitBreaker
from contextwright.stores.loader import LoaderMixin
from contextwright.stores.rows import (
    COLUMNS,
    as_chunk,
    chunk_from_row,
    chunk_row,
    read_rows,
)


class PostgresStore(LoaderMixin):
    """A chunk store in PostgreSQL, through psycopg 3 and a connection pool.

    Same schema as :class:`SQLiteStore` (``metadata`` is ``jsonb``,
    ``embedding`` a ``double precision[]``); the table is created if missing.
    ``fetch`` sends every range as three arrays and joins them with
    ``unnest``: one statement, one round trip, however many documents. A
    ``statement_timeout`` on the server and the pool's wait timeout bound
    each call; both surface as :class:`~contextwright.core.errors.StoreError`.

    Args:
        dsn: A libpq connection string or ``postgresql://`` URL.
        table: The table name (default ``chunks``).
        timeout_s: Default timeout of a call in seconds.
        min_size: Connections the pool keeps open.
        max_size: The most connections the pool opens. Size it to the
            threads that fetch at once: the service's ``threads`` per worker
            process (each worker has its own pool), so ``workers * max_size``
            must stay under the server's ``max_connections``.
        breaker_failures: Consecutive failed fetches that open the circuit
            breaker (:class:`CircuitBreaker`): fetches then fail at once.
        breaker_reset_s: Seconds before an open breaker lets one probe through.

    Every connection is checked when taken from the pool, so after the
    database restarts the next call reconnects instead of failing on a dead
    connection; while it is down, the breaker makes fetches fail fast (the
    expand stage then passes chunks through with a note) instead of each
    waiting ``timeout_s`` for a connection.

    Example:
        >>> store = PostgresStore("postgresql://postgres:postgres@127.0.0.1/rag")
        >>> store.load_jsonl("nq_corpus_chunks.jsonl.gz")
        3759
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = DEFAULT_TABLE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        min_size: int = 1,
        max_size: int = 8,
        breaker_failures: int = 3,
        breaker_reset_s: float = 2.0,
        create: bool = True,
    ) -> None:
        check_timeout(timeout_s, "timeout_s")
        self.breaker = CircuitBreaker(failures=breaker_failures, reset_s=breaker_reset_s)
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise missing_extra("psycopg", "store") from None
        self.table = check_table(table)
        self.timeout_s = float(timeout_s)
        self._psycopg = psycopg
        self._label = redact_url(dsn)
        ms = max(1, round(self.timeout_s * 1000))
        try:
            self._pool = ConnectionPool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=self.timeout_s,
                kwargs={
                    "autocommit": True,
                    "connect_timeout": max(1, math.ceil(self.timeout_s)),
                    "options": f"-c statement_timeout={ms}",
                },
                open=False,
                name="contextwright-store",
                check=ConnectionPool.check_connection,  # a restarted server: reconnect, don't fail
            )
            self._pool.open(wait=True, timeout=self.timeout_s)
        except Exception as exc:
            pool = getattr(self, "_pool", None)
            if pool is not None:
                pool.close()  # stop its background connection attempts
            raise StoreError(
                f"cannot connect to PostgreSQL store {self._label}: {failure_reason(exc)}. "
                "Check the DSN and that the server is running."
            ) from None
        try:
            if create:
                self._create_table()
            elif self._run("SELECT to_regclass(%s)", (self.table,), what="look up table")[0][0] is None:
                raise ConfigError(
                    f"PostgreSQL store {self._label} has no table {self.table!r}: nothing was indexed "
                    f"there. Load it first with: contextwright index CORPUS.jsonl --store URL --table {self.table}"
                )
        except ContextwrightError:
            self._pool.close()
            raise
        self._fetch_sql = (
            f"SELECT {', '.join('c.' + c for c in COLUMNS)} "
            "FROM unnest(%s::text[], %s::int[], %s::int[]) AS r(doc_id, lo, hi) "
            f"JOIN {self.table} AS c ON c.doc_id = r.doc_id AND c.idx BETWEEN r.lo AND r.hi "
            "ORDER BY c.doc_id, c.idx"
        )

    def _create_table(self) -> None:
        self._run(
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            "doc_id text NOT NULL, idx integer NOT NULL, id text NOT NULL, text text NOT NULL, "
            "title text, source text, section text, page integer, line integer, "
            "metadata jsonb, embedding double precision[], PRIMARY KEY (doc_id, idx))",
            what="create table",
        )

    def _run(self, sql: str, params: Sequence[Any] = (), *, what: str) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection(timeout=self.timeout_s) as conn:
                cur = conn.execute(sql, params)
                return cur.fetchall() if cur.description else []
        except Exception as exc:
            raise StoreError(
                f"PostgreSQL store {self._label} {what} failed: {failure_reason(exc)}."
            ) from None

    def load(self, chunks: Iterable[Chunk | Mapping[str, Any]], *, progress: Progress | None = None) -> int:
        """Insert or update chunks in one transaction (pipelined ``executemany`` per 1,000).

        Returns:
            The number of chunks loaded.

        Raises:
            InputError: for a chunk without ``doc_id``/``index`` (nothing is loaded).
            StoreError: when PostgreSQL fails (nothing is loaded).
        """
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS[2:])
        sql = (
            f"INSERT INTO {self.table} ({', '.join(COLUMNS)}) "
            f"VALUES ({', '.join(['%s'] * 9)}, %s::jsonb, %s::double precision[]) "
            f"ON CONFLICT (doc_id, idx) DO UPDATE SET {updates}"
        )
        items = (as_chunk(c, i, f"chunks[{i}]") for i, c in enumerate(chunks))
        count = 0
        with self._load_cursor() as cur:
            for batch in batched(items, 1000):
                cur.executemany(sql, [pg_row(c) for c in batch])
                count += len(batch)
                if progress is not None:
                    progress(count, 0, 0)
        logger.info("chunks loaded", extra={"store": "postgresql", "table": self.table, "chunks": count})
        return count

    @contextlib.contextmanager
    def _load_cursor(self) -> Iterator[Any]:
        """A cursor in one transaction for a bulk load; a PostgreSQL failure is a StoreError.

        Loading is not bounded by the fetch timeout: a big corpus takes minutes.
        """
        try:
            with self._pool.connection(timeout=self.timeout_s) as conn:
                conn.execute("SET statement_timeout = 0")
                try:
                    with conn.transaction(), conn.cursor() as cur:
                        yield cur
                finally:
                    conn.execute("RESET statement_timeout")
        except (InputError, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise StoreError(
                f"loading into PostgreSQL store {self._label} failed: {failure_reason(exc)}."
            ) from None

    def load_jsonl(self, path: str | os.PathLike[str], *, progress: Progress | None = None) -> int:
        """Load a JSON Lines corpus (``.gz`` ok) with ``COPY``, in one transaction.

        Rows are streamed with ``COPY`` into a temporary table and upserted from
        there in one statement (a later line with the same ``(doc_id, index)``
        wins, as with :meth:`load`); several times faster than ``INSERT``.

        Raises:
            InputError: for a malformed line (nothing is loaded).
            StoreError: when PostgreSQL fails (nothing is loaded).
        """
        cols = ", ".join(COLUMNS)
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS[2:])
        count = 0
        with self._load_cursor() as cur:
            cur.execute(f"CREATE TEMP TABLE cw_load (LIKE {self.table}, seq bigserial) ON COMMIT DROP")
            with cur.copy(f"COPY cw_load ({cols}) FROM STDIN") as copy:
                for row in read_rows(path, progress=progress):
                    if row[10] is not None:
                        row = (*row[:10], json.loads(row[10]))
                    copy.write_row(row)
                    count += 1
            cur.execute(
                f"INSERT INTO {self.table} ({cols}) "
                f"SELECT DISTINCT ON (doc_id, idx) {cols} FROM cw_load ORDER BY doc_id, idx, seq DESC "
                f"ON CONFLICT (doc_id, idx) DO UPDATE SET {updates}"
            )
        logger.info("chunks loaded", extra={"store": "postgresql", "table": self.table, "chunks": count})
        return count

    def fetch(self, ranges: Ranges, /, *, timeout_s: float | None = None) -> list[Chunk]:
        """Every stored chunk in ``ranges``, sorted by ``(doc_id, index)``, in one query.

        ``timeout_s`` other than the store's own is applied with a transaction-
        local ``statement_timeout`` sent in the same pipeline as the query.

        Raises:
            StoreError: when PostgreSQL fails or the call exceeds the timeout.
        """
        merged = merge_ranges(ranges)
        if not merged:
            return []
        check_timeout(timeout_s, "timeout_s")
        limit = self.timeout_s if timeout_s is None else float(timeout_s)
        docs: list[str] = []
        los: list[int] = []
        his: list[int] = []
        for doc_id, spans in merged.items():
            for lo, hi in spans:
                docs.append(doc_id)
                los.append(lo)
                his.append(hi)
        params = (docs, los, his)
        rows = self.breaker.call(
            lambda: self._fetch_rows(params, limit, len(merged)), what=f"PostgreSQL store {self._label} fetch"
        )
        return [chunk_from_row(r) for r in rows]

    def _fetch_rows(self, params: tuple[list[str], list[int], list[int]], limit: float, docs: int) -> Any:
        try:
            with self._pool.connection(timeout=limit) as conn:
                if limit == self.timeout_s:
                    rows = conn.execute(self._fetch_sql, params).fetchall()
                else:
                    with conn.pipeline(), conn.transaction():
                        conn.execute(
                            "SELECT set_config('statement_timeout', %s, true)",
                            (str(max(1, round(limit * 1000))),),
                        )
                        cur = conn.execute(self._fetch_sql, params)
                    rows = cur.fetchall()
        except Exception as exc:
            pg = self._psycopg
            timed_out = isinstance(exc, pg.errors.QueryCanceled) or type(exc).__name__ == "PoolTimeout"
            if timed_out:
                raise StoreError(
                    f"PostgreSQL store {self._label} fetch timed out after {limit:g} s "
                    f"({docs} documents): {failure_reason(exc)}; raise timeout_s."
                ) from None
            raise StoreError(f"PostgreSQL store {self._label} fetch failed: {failure_reason(exc)}.") from None
        return rows

    def count(self) -> int:
        """How many chunks the store holds."""
        return int(self._run(f"SELECT count(*) FROM {self.table}", what="count")[0][0])

    def drop_table(self) -> None:
        """Drop the store's table (for tests and re-indexing from scratch)."""
        self._run(f"DROP TABLE IF EXISTS {self.table}", what="drop table")

    def close(self) -> None:
        """Close the pool's connections."""
        self._pool.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self._label}, table={self.table!r})"


def pg_row(chunk: Chunk) -> tuple[Any, ...]:
    row = chunk_row(chunk)
    return (*row[:10], list(chunk.embedding) if chunk.embedding else None)
