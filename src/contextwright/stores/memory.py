"""An in-memory chunk store: a dict, for tests and small corpora."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from contextwright.model.chunk import Chunk
from contextwright.stores.base import (
    Progress,
    Ranges,
    merge_ranges,
)
from contextwright.stores.loader import LoaderMixin
from contextwright.stores.rows import (
    as_chunk,
    stored_chunk,
)


class InMemoryStore(LoaderMixin):
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
        staged = [as_chunk(c, i, f"chunks[{i}]") for i, c in enumerate(chunks)]
        with self._lock:
            for c in staged:
                if c.doc_id is not None and c.index is not None:  # checked by as_chunk
                    self._docs.setdefault(c.doc_id, {})[c.index] = stored_chunk(c)
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
