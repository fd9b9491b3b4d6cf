"""Opening a store from a URL (``sqlite:///nq.db``, ``postgresql://...``, ``memory://``)."""

from __future__ import annotations

from typing import Any

from contextwright.core.errors import ConfigError
from contextwright.stores.base import redact_url
from contextwright.stores.memory import InMemoryStore
from contextwright.stores.postgres import PostgresStore
from contextwright.stores.sqlite import SQLiteStore


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
