"""Chunk stores: where the expand stage finds a retrieved chunk's neighbours.

A retriever returns fragments; the sentences around a hit often carry the
answer's subject or its qualifier. A :class:`ChunkStore` answers one question,
batched: *give me the chunks of these documents in these index ranges*, so
that expanding 20 retrieved chunks costs one store round trip, not 40.

Three stores share one schema (``stores.rows``) (primary key ``(doc_id, index)``, the
:class:`~contextwright.model.chunk.Chunk` fields, metadata as JSON):

* :class:`InMemoryStore` (``stores.memory``) - a dict; for tests and small corpora.
* :class:`SQLiteStore` (``stores.sqlite``) - the embedded default; a file or ``":memory:"``.
* :class:`PostgresStore` (``stores.postgres``) - psycopg 3 with a connection pool (extra ``store``).

:func:`open_store` (``stores.url``) builds one from a URL (``sqlite:///nq.db``,
``postgresql://user:pw@host/db``, ``memory://``). A store call that fails or
exceeds its timeout raises :class:`~contextwright.core.errors.StoreError`; after
repeated failures the PostgreSQL store fails fast (``stores.breaker``).

Example:
    >>> store = open_store("sqlite:///nq.db", mode="create")
    >>> store.load_jsonl("nq_corpus_chunks.jsonl.gz")
    3759
    >>> store.fetch({"wiki:Nobel Prize": [(0, 2)]})
    [Chunk(text='...', id='wiki:Nobel Prize:0', ...), ...]
"""

from contextwright.stores.base import (
    DEFAULT_TABLE,
    DEFAULT_TIMEOUT_S,
    ChunkStore,
    Progress,
    Ranges,
    merge_ranges,
    redact_url,
)
from contextwright.stores.breaker import CircuitBreaker
from contextwright.stores.memory import InMemoryStore
from contextwright.stores.postgres import PostgresStore
from contextwright.stores.rows import read_jsonl
from contextwright.stores.sqlite import SQLiteStore
from contextwright.stores.url import open_store

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
