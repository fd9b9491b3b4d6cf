"""Chunk stores: where the expand stage finds a retrieved chunk's neighbours.

A retriever returns fragments; the sentences around a hit often carry the
answer's subject or its qualifier. A :class:`ChunkStore` answers one question,
batched: *give me the chunks of these documents in these index ranges*, so
that expanding 20 retrieved chunks costs one store round trip, not 40.

Three stores share one schema (primary key ``(doc_id, index)``, the
:class:`~contextwright.types.Chunk` fields, metadata as JSON):

* :class:`InMemoryStore` - a dict; for tests and small corpora.
* :class:`SQLiteStore` - the embedded default; a file or ``":memory:"``.
* :class:`PostgresStore` - psycopg 3 with a connection pool (extra ``store``).

:func:`open_store` builds one from a URL (``sqlite:///nq.db``,
``postgresql://user:pw@host/db``, ``memory://``). A store call that fails or
exceeds its timeout raises :class:`~contextwright.errors.StoreError`.

Example:
    >>> store = open_store("sqlite:///nq.db", mode="create")
    >>> store.load_jsonl("nq_corpus_chunks.jsonl.gz")
    3759
    >>> store.fetch({"wiki:Nobel Prize": [(0, 2)]})
    [Chunk(text='...', id='wiki:Nobel Prize:0', ...), ...]
"""

from __future__ import annotations

import abc
import contextlib
import gzip
import io
import json
import logging
import math
import os
import re
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from contextwright.errors import ConfigError, ContextwrightError, InputError, StoreError, missing_extra
from contextwright.io import batched
from contextwright.types import Chunk

__all__ = [
    "DEFAULT_TABLE",
    "DEFAULT_TIMEOUT_S",
    "ChunkStore",
    "CircuitBreaker",
    "InMemoryStore",
    "PostgresStore",
    "Progress",
    "Ranges",
    "SQLiteStore",
    "merge_ranges",
    "open_store",
    "read_jsonl",
    "redact_url",
]

logger = logging.getLogger(__name__)

#: ``{doc_id: [(first_index, last_index), ...]}``; both ends inclusive.
Ranges = Mapping[str, Sequence[tuple[int, int]]]

#: ``progress(chunks_loaded, bytes_read, bytes_total)``, called after each batch.
Progress = Callable[[int, int, int], None]

DEFAULT_TABLE = "chunks"
DEFAULT_TIMEOUT_S = 2.0
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@runtime_checkable
class ChunkStore(Protocol):
    """Fetch chunks by document and index range, many documents per call.

    ``fetch`` takes ``{doc_id: [(lo, hi), ...]}`` (inclusive ranges; they may
    overlap) and returns every stored chunk inside them, once, sorted by
    ``(doc_id, index)``. Indices that do not exist are simply absent. One call
    is one round trip to the backing store. On failure, or when the call takes
    longer than ``timeout_s`` (``None``: the store's default), it raises
    :class:`~contextwright.errors.StoreError`.

    Stores are shared across threads (one store per service), so ``fetch``
    must be thread-safe.

    Example:
        >>> store.fetch({"doc-a": [(0, 2)], "doc-b": [(4, 4)]}, timeout_s=1.0)
    """

    def fetch(self, ranges: Ranges, /, *, timeout_s: float | None = None) -> list[Chunk]: ...


def merge_ranges(ranges: Ranges) -> dict[str, list[tuple[int, int]]]:
    """Validate ranges and merge the overlapping or adjacent ones, per document.

    Negative starts are clipped to 0; empty documents and empty ranges vanish.

    Raises:
        InputError: for a range that is not two integers.

    Example:
        >>> merge_ranges({"d": [(3, 5), (0, 1), (2, 2), (-1, 0)]})
        {'d': [(0, 5)]}
    """
    out: dict[str, list[tuple[int, int]]] = {}
    for doc_id, spans in ranges.items():
        clean: list[tuple[int, int]] = []
        for span in spans:
            try:
                lo, hi = span
            except (TypeError, ValueError):
                raise InputError(
                    f"ranges[{doc_id!r}] must hold (first_index, last_index) pairs; got {span!r}."
                ) from None
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi)):
                raise InputError(f"ranges[{doc_id!r}] must hold integer pairs; got {span!r}.")
            lo = max(lo, 0)
            if hi >= lo:
                clean.append((lo, hi))
        if not clean:
            continue
        clean.sort()
        merged = [clean[0]]
        for lo, hi in clean[1:]:
            last_lo, last_hi = merged[-1]
            if lo <= last_hi + 1:
                merged[-1] = (last_lo, max(last_hi, hi))
            else:
                merged.append((lo, hi))
        out[str(doc_id)] = merged
    return out


class CircuitBreaker:
    """Fail fast while a store is down, and probe for its recovery.

    Closed: calls go through; ``failures`` consecutive failures open it. Open:
    calls fail at once with :class:`~contextwright.errors.StoreError` (no
    connection wait), until ``reset_s`` has passed; then one call goes through
    as a probe (half-open) while the others still fail fast. The probe's
    success closes the breaker, its failure opens it for another ``reset_s``.
    Thread-safe.

    Example:
        >>> breaker = CircuitBreaker(failures=3, reset_s=2.0)
        >>> breaker.call(lambda: store_call(), what="PostgreSQL store fetch")
    """

    def __init__(self, *, failures: int = 3, reset_s: float = 2.0) -> None:
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ConfigError(f"breaker failures must be a positive integer; got {failures!r}.")
        _check_timeout(reset_s, "breaker reset_s")
        self.failures = failures
        self.reset_s = float(reset_s)
        self._lock = threading.Lock()
        self._count = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half-open``."""
        with self._lock:
            if self._opened_at is None:
                return "closed"
            return "half-open" if self._probing else "open"

    def call(self, fn: Callable[[], Any], *, what: str) -> Any:
        """Run ``fn`` unless the breaker is open; count its failure (any exception) or success."""
        with self._lock:
            probe = False
            if self._opened_at is not None:
                waited = time.monotonic() - self._opened_at
                if self._probing or waited < self.reset_s:
                    raise StoreError(
                        f"{what} skipped: the store failed {self._count} times in a row; "
                        f"the next try is in {max(0.0, self.reset_s - waited):.1f} s (circuit open)."
                    )
                self._probing = probe = True
        try:
            result = fn()
        except BaseException:
            with self._lock:
                self._count += 1
                if probe or self._count >= self.failures:
                    if self._opened_at is None or probe:
                        logger.warning("store circuit open", extra={"what": what, "failures": self._count})
                    self._opened_at = time.monotonic()
                self._probing = False
            raise
        with self._lock:
            if self._opened_at is not None:
                logger.warning("store circuit closed", extra={"what": what})
            self._count = 0
            self._opened_at = None
            self._probing = False
        return result


def _check_timeout(value: float | None, where: str) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{where} must be a positive number of seconds or None; got {value!r}.")


def _check_table(table: str) -> str:
    if not isinstance(table, str) or not _IDENT.fullmatch(table):
        raise ConfigError(
            f"table must be a plain SQL identifier (letters, digits, underscore; at most 63); got {table!r}."
        )
    return table


def _as_chunk(item: Chunk | Mapping[str, Any], position: int, where: str) -> Chunk:
    chunk = item if isinstance(item, Chunk) else Chunk.from_dict(item, position=position)
    if chunk.doc_id is None or chunk.index is None:
        raise InputError(
            f"{where}: chunk {chunk.id!r} has no doc_id/index; a store keys chunks by (doc_id, index). "
            "Add 'doc_id' and 'index' (the chunk's 0-based position in its document)."
        )
    return chunk


def read_jsonl(path: str | os.PathLike[str], *, progress: Progress | None = None) -> Iterator[Chunk]:
    """Read chunks from JSON Lines or a JSON array (gzip or not; ``-`` for stdin).

    The one input reader (:func:`contextwright.io.read_records`) reads the
    file: every record is one chunk mapping (see :meth:`Chunk.from_dict`);
    blank lines are skipped. ``progress`` is called every 1,000 chunks and at
    the end with the bytes read from disk (compressed, for ``.gz``) and the
    file size. A query file (records with ``chunks``) is refused, naming both
    shapes.

    Raises:
        InputError: naming the file and line of malformed JSON or a bad chunk.
    """
    from contextwright.io import read_records

    records = read_records(Path(path), need="chunks", command="index", progress=progress)
    for count, record in enumerate(records):
        yield _as_chunk(record.data, count, record.where)


_PLAIN_STR = ("id", "doc_id", "text", "title", "source", "section")
_PLAIN_INT = ("index", "page", "line")
_PLAIN_KEYS = frozenset((*_PLAIN_STR, *_PLAIN_INT, "score", "rank"))


def _plain_row(data: Any) -> tuple[Any, ...] | None:
    """The store row of a chunk mapping in canonical form, or None when it needs ``Chunk.from_dict``.

    Loading a million chunks spends most of its time building ``Chunk`` objects
    only to flatten them again. A mapping that uses only the canonical field
    names with plain values (``id``/``doc_id``/``text``/``title``/``source``/
    ``section`` strings, ``index``/``page``/``line`` integers, and ``score``/
    ``rank``, which a store does not keep) gives the same row directly;
    anything else (aliases, metadata, embeddings, odd types) takes the full
    path, with its checks and messages.
    """
    if type(data) is not dict or not data.keys() <= _PLAIN_KEYS:
        return None
    get = data.get
    for name in _PLAIN_STR:
        v = get(name)
        if v is not None and (type(v) is not str or not v):
            return None
    for name in _PLAIN_INT:
        v = get(name)
        if v is not None and type(v) is not int:
            return None
    text, cid, doc_id, idx = get("text"), get("id"), get("doc_id"), get("index")
    if text is None or not text.strip() or cid is None or doc_id is None or idx is None:
        return None
    return (
        doc_id,
        idx,
        cid,
        text,
        get("title"),
        get("source"),
        get("section"),
        get("page"),
        get("line"),
        None,
        None,
    )


def _read_rows(
    path: str | os.PathLike[str], *, progress: Progress | None = None
) -> Iterator[tuple[Any, ...]]:
    """Store rows of a corpus file.

    JSON Lines (gzip or not) take the fast path of :func:`_plain_row` line by
    line; anything else (a JSON array, stdin ``-``, a query file to refuse) goes
    through the one input reader, :func:`read_jsonl`.
    """
    if not _is_json_lines(path):
        for chunk in read_jsonl(path, progress=progress):
            yield _row(chunk)
        return
    file = Path(path)
    try:
        total = file.stat().st_size
        raw = file.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read corpus {str(file)!r}: {exc.strerror or exc}.") from None
    loads = json.loads
    with raw:
        stream: Any = gzip.GzipFile(fileobj=raw) if file.name.endswith(".gz") else raw
        text = io.TextIOWrapper(stream, encoding="utf-8")
        count = 0
        try:
            for lineno, line in enumerate(text, 1):
                try:
                    data = loads(line)
                except json.JSONDecodeError as exc:
                    if not line.strip():
                        continue
                    raise InputError(f"{file}:{lineno}: not valid JSON ({exc.msg}).") from None
                row = _plain_row(data)
                if row is None:
                    try:
                        row = _row(_as_chunk(data, count, f"{file}:{lineno}"))
                    except InputError as exc:
                        msg = str(exc)
                        raise InputError(
                            msg if msg.startswith(str(file)) else f"{file}:{lineno}: {msg}"
                        ) from None
                yield row
                count += 1
                if progress is not None and count % 10_000 == 0:
                    progress(count, raw.tell(), total)
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read corpus {str(file)!r}: {exc}.") from None
        if progress is not None:
            progress(count, total, total)


def _is_json_lines(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file whose first non-blank character opens a JSON object (JSON Lines)."""
    if str(path) == "-":
        return False
    try:
        with Path(path).open("rb") as raw:
            head = (gzip.GzipFile(fileobj=raw) if str(path).endswith(".gz") else raw).read(4096)
    except (OSError, EOFError):
        return False  # the input reader names the problem
    stripped = head.lstrip()
    if not stripped.startswith(b"{"):
        return False
    first_line = stripped.split(b"\n", 1)[0]
    try:
        first = json.loads(first_line)
    except ValueError:
        return False  # a pretty-printed object: not one record per line
    # A query file (records holding chunks) goes to the input reader, which names both shapes.
    return isinstance(first, dict) and "chunks" not in first


def _json_or_none(value: Mapping[str, Any] | Sequence[float] | None) -> str | None:
    if not value:
        return None
    return json.dumps(dict(value) if isinstance(value, Mapping) else list(value), ensure_ascii=False)


class _LoaderMixin(abc.ABC):
    """``load_jsonl`` on top of a store's ``load``, and ``with store:`` on top of its ``close``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @abc.abstractmethod
    def load(self, chunks: Iterable[Chunk | Mapping[str, Any]], *, progress: Progress | None = None) -> int:
        """Load ``chunks`` in one transaction; returns how many."""

    def load_jsonl(self, path: str | os.PathLike[str], *, progress: Progress | None = None) -> int:
        """Load every chunk of a JSON Lines corpus (``.gz`` ok) in one transaction.

        Args:
            path: The corpus file, one chunk mapping per line, each with
                ``doc_id`` and ``index``.
            progress: ``progress(chunks_loaded, bytes_read, bytes_total)``.

        Returns:
            The number of chunks loaded.
        """
        return self.load(read_jsonl(path, progress=progress))


class InMemoryStore(_LoaderMixin):
    """A chunk store in a dict: no I/O, no timeouts; for tests and small corpora.

    Loading replaces a chunk with the same ``(doc_id, index)``.

    Example:
        >>> store = InMemoryStore([{"text": "a", "doc_id": "d", "index": 0}])
        >>> store.fetch({"d": [(0, 1)]})
    """

    def __init__(self, chunks: Iterable[Chunk | Mapping[str, Any]] = ()) -> None:
        self._docs: dict[str, dict[int, Chunk]] = {}
        self._lock = threading.Lock()
        self.load(chunks)

    def load(self, chunks: Iterable[Chunk | Mapping[str, Any]], *, progress: Progress | None = None) -> int:
        """Add chunks (mappings or :class:`Chunk`, each with ``doc_id`` and ``index``).

        Returns:
            The number of chunks loaded.
        """
        staged = [_as_chunk(c, i, f"chunks[{i}]") for i, c in enumerate(chunks)]
        with self._lock:
            for c in staged:
                if c.doc_id is not None and c.index is not None:  # checked by _as_chunk
                    self._docs.setdefault(c.doc_id, {})[c.index] = _stored(c)
        if progress is not None:
            progress(len(staged), 0, 0)
        return len(staged)

    def fetch(self, ranges: Ranges, /, *, timeout_s: float | None = None) -> list[Chunk]:
        """Every stored chunk in ``ranges``, sorted by ``(doc_id, index)``."""
        out: list[Chunk] = []
        for doc_id, spans in sorted(merge_ranges(ranges).items()):
            doc = self._docs.get(doc_id)
            if not doc:
                continue
            for lo, hi in spans:
                if hi - lo > len(doc):
                    out.extend(doc[i] for i in sorted(doc) if lo <= i <= hi)
                else:
                    out.extend(doc[i] for i in range(lo, hi + 1) if i in doc)
        return out

    def count(self) -> int:
        """How many chunks the store holds."""
        return sum(len(d) for d in self._docs.values())

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"InMemoryStore({self.count()} chunks)"


def _stored(chunk: Chunk) -> Chunk:
    """The chunk as a store returns it: retrieval-only fields reset."""
    return Chunk(
        text=chunk.text,
        id=chunk.id,
        doc_id=chunk.doc_id,
        index=chunk.index,
        source=chunk.source,
        title=chunk.title,
        section=chunk.section,
        page=chunk.page,
        line=chunk.line,
        metadata=chunk.metadata,
        embedding=chunk.embedding,
    )


_COLUMNS = (
    "doc_id",
    "idx",
    "id",
    "text",
    "title",
    "source",
    "section",
    "page",
    "line",
    "metadata",
    "embedding",
)


def _row(chunk: Chunk) -> tuple[Any, ...]:
    return (
        chunk.doc_id,
        chunk.index,
        chunk.id,
        chunk.text,
        chunk.title,
        chunk.source,
        chunk.section,
        chunk.page,
        chunk.line,
        _json_or_none(chunk.metadata),
        _json_or_none(chunk.embedding),
    )


def _from_row(row: Sequence[Any]) -> Chunk:
    doc_id, idx, cid, text, title, source, section, page, line, metadata, embedding = row
    if isinstance(metadata, str):
        metadata = json.loads(metadata)
    if isinstance(embedding, str):
        embedding = json.loads(embedding)
    return Chunk(
        text=text,
        id=cid,
        doc_id=doc_id,
        index=idx,
        source=source,
        title=title,
        section=section,
        page=page,
        line=line,
        metadata=MappingProxyType(dict(metadata)) if metadata else _EMPTY,
        embedding=tuple(float(x) for x in embedding) if embedding else None,
    )


_MMAP_BYTES = 1 << 30  # per read connection; SQLite caps it at its compile-time maximum


class SQLiteStore(_LoaderMixin):
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
    :class:`~contextwright.errors.StoreError`.

    Args:
        path: A database file (created if missing) or ``":memory:"``.
        table: The table name (default ``chunks``).
        timeout_s: Default timeout of a ``fetch`` in seconds (``None``: none).
        create: ``False`` opens an existing store only: a missing file or
            table raises :class:`~contextwright.errors.ConfigError` instead of
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
        _check_timeout(timeout_s, "timeout_s")
        self.path = str(path)
        self.table = _check_table(table)
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._closed = False
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        if not create:
            _sqlite_must_exist(self.path, self.table)
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
            f"SELECT {', '.join('c.' + c for c in _COLUMNS)} FROM json_each(?) AS r "
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
        return self._insert(_read_rows(path, progress=progress), progress=None)

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
        rows = (_row(_as_chunk(c, i, f"chunks[{i}]")) for i, c in enumerate(chunks))
        return self._insert(rows, progress=progress)

    def _insert(self, rows: Iterable[tuple[Any, ...]], *, progress: Progress | None) -> int:
        sql = f"INSERT OR REPLACE INTO {self.table} ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
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
        _check_timeout(limit, "timeout_s")
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
        return [_from_row(r) for r in rows]

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
                conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
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
        return [_from_row(r) for r in rows]

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


class PostgresStore(_LoaderMixin):
    """A chunk store in PostgreSQL, through psycopg 3 and a connection pool.

    Same schema as :class:`SQLiteStore` (``metadata`` is ``jsonb``,
    ``embedding`` a ``double precision[]``); the table is created if missing.
    ``fetch`` sends every range as three arrays and joins them with
    ``unnest``: one statement, one round trip, however many documents. A
    ``statement_timeout`` on the server and the pool's wait timeout bound
    each call; both surface as :class:`~contextwright.errors.StoreError`.

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
        _check_timeout(timeout_s, "timeout_s")
        self.breaker = CircuitBreaker(failures=breaker_failures, reset_s=breaker_reset_s)
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise missing_extra("psycopg", "store") from None
        self.table = _check_table(table)
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
                f"cannot connect to PostgreSQL store {self._label}: {_reason(exc)}. "
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
            f"SELECT {', '.join('c.' + c for c in _COLUMNS)} "
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
            raise StoreError(f"PostgreSQL store {self._label} {what} failed: {_reason(exc)}.") from None

    def load(self, chunks: Iterable[Chunk | Mapping[str, Any]], *, progress: Progress | None = None) -> int:
        """Insert or update chunks in one transaction (pipelined ``executemany`` per 1,000).

        Returns:
            The number of chunks loaded.

        Raises:
            InputError: for a chunk without ``doc_id``/``index`` (nothing is loaded).
            StoreError: when PostgreSQL fails (nothing is loaded).
        """
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS[2:])
        sql = (
            f"INSERT INTO {self.table} ({', '.join(_COLUMNS)}) "
            f"VALUES ({', '.join(['%s'] * 9)}, %s::jsonb, %s::double precision[]) "
            f"ON CONFLICT (doc_id, idx) DO UPDATE SET {updates}"
        )
        items = (_as_chunk(c, i, f"chunks[{i}]") for i, c in enumerate(chunks))
        count = 0
        with self._load_cursor() as cur:
            for batch in batched(items, 1000):
                cur.executemany(sql, [_pg_row(c) for c in batch])
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
            raise StoreError(f"loading into PostgreSQL store {self._label} failed: {_reason(exc)}.") from None

    def load_jsonl(self, path: str | os.PathLike[str], *, progress: Progress | None = None) -> int:
        """Load a JSON Lines corpus (``.gz`` ok) with ``COPY``, in one transaction.

        Rows are streamed with ``COPY`` into a temporary table and upserted from
        there in one statement (a later line with the same ``(doc_id, index)``
        wins, as with :meth:`load`); several times faster than ``INSERT``.

        Raises:
            InputError: for a malformed line (nothing is loaded).
            StoreError: when PostgreSQL fails (nothing is loaded).
        """
        cols = ", ".join(_COLUMNS)
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS[2:])
        count = 0
        with self._load_cursor() as cur:
            cur.execute(f"CREATE TEMP TABLE cw_load (LIKE {self.table}, seq bigserial) ON COMMIT DROP")
            with cur.copy(f"COPY cw_load ({cols}) FROM STDIN") as copy:
                for row in _read_rows(path, progress=progress):
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
        _check_timeout(timeout_s, "timeout_s")
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
        return [_from_row(r) for r in rows]

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
                    f"({docs} documents): {_reason(exc)}; raise timeout_s."
                ) from None
            raise StoreError(f"PostgreSQL store {self._label} fetch failed: {_reason(exc)}.") from None
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


def _pg_row(chunk: Chunk) -> tuple[Any, ...]:
    row = _row(chunk)
    return (*row[:10], list(chunk.embedding) if chunk.embedding else None)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def redact_url(dsn: str) -> str:
    """The DSN without its password, for messages and logs."""
    dsn = re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", dsn)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn)


def _sqlite_must_exist(path: str, table: str) -> None:
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


def open_store(
    url: str, *, mode: str = "read", **options: Any
) -> InMemoryStore | SQLiteStore | PostgresStore:
    """Open a chunk store from a URL.

    * ``memory://`` - :class:`InMemoryStore`
    * ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
      ``sqlite://:memory:`` - :class:`SQLiteStore`
    * ``postgresql://user:password@host:port/db`` (or ``postgres://``) -
      :class:`PostgresStore`

    Args:
        url: The store URL.
        mode: ``"read"`` (default) opens an existing store and fails when the
            database or its chunk table does not exist (a typo in the path
            would otherwise give an empty store that silently expands
            nothing); ``"create"`` creates it if needed, as
            ``contextwright index`` does.
        **options: Passed to the store (``table``, ``timeout_s``, ...).

    Raises:
        ConfigError: for an unknown scheme (showing the accepted ones), an
            unknown mode, or, in read mode, a store that does not exist
            (naming the path and ``contextwright index``).

    Example:
        >>> store = open_store("sqlite:///nq.db", timeout_s=1.0)
        >>> new = open_store("sqlite:///new.db", mode="create"); new.load_jsonl("corpus.jsonl")
    """
    if not isinstance(url, str):
        raise ConfigError(f"store URL must be a string; got {type(url).__name__} {url!r}.")
    if mode not in ("read", "create"):
        raise ConfigError(f"open_store mode must be 'read' or 'create'; got {mode!r}.")
    create = mode == "create"
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if sep and scheme == "memory":
        if not create:
            raise ConfigError(
                "memory:// is an empty store, so reading from it finds nothing; use "
                "open_store('memory://', mode='create') and load chunks, or InMemoryStore(chunks)."
            )
        return InMemoryStore(**options)
    if sep and scheme == "sqlite":
        if rest in ("", ":memory:", "/:memory:"):
            return SQLiteStore(":memory:", create=create, **options)
        if not rest.startswith("/") or rest == "/":
            raise ConfigError(
                f"SQLite store URL {url!r} has no path; use sqlite:///relative.db, "
                "sqlite:////absolute/path.db or sqlite://:memory:."
            )
        return SQLiteStore(rest[1:], create=create, **options)
    if sep and (scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+")):
        return PostgresStore("postgresql://" + rest, create=create, **options)
    raise ConfigError(
        f"unknown store URL {redact_url(url)!r}; expected sqlite:///path.db, sqlite://:memory:, "
        "postgresql://user:password@host/db or memory://."
    )
