"""The counting cache around a tokenizer: each distinct text is tokenized once (invariant 6)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from contextwright.core.caches import ByteLRU
from contextwright.core.errors import ConfigError
from contextwright.tokens.base import Tokenizer

_INT = sys.getsizeof(1 << 40)  # a count's bytes, at most


class CachedTokenizer:
    """Wraps a tokenizer with a bounded LRU cache of counts keyed by text.

    Python hashes a ``str`` once and keeps the hash, so a lookup costs one
    dict probe; the cache is what makes "count once" (invariant 6) hold across
    stages and across calls.

    Args:
        base: The tokenizer to wrap.
        maxsize: How many distinct texts to remember.
        max_bytes: How many bytes to remember (the texts by ``sys.getsizeof``, their counts and the
            map's entries; default 64 MiB); a text over an eighth of it is counted but not kept.
    """

    def __init__(self, base: Tokenizer, *, maxsize: int = 65_536, max_bytes: int = 64 * 2**20) -> None:
        if maxsize < 1:
            raise ConfigError(f"maxsize must be >= 1; got {maxsize!r}.")
        if max_bytes < 1:
            raise ConfigError(f"max_bytes must be >= 1; got {max_bytes!r}. The default is 64 MiB.")
        self.base = base
        self.name = base.name
        self.additive = base.additive
        self.digits_isolated = bool(getattr(base, "digits_isolated", False))
        self.joining_starts: frozenset[str] = frozenset(getattr(base, "joining_starts", ()))
        self.known_splits = bool(getattr(base, "known_splits", False))
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        # The core's byte-bounded LRU, registered weakly (contextwright.clear_caches() empties it):
        # a text over an eighth of the byte bound is counted but never kept.
        self._lru = ByteLRU(
            f"contextwright.tokens.CachedTokenizer[{base.name}]",
            max_bytes=max_bytes,
            maxsize=maxsize,
            weak=True,
        )
        self._cache = self._lru._data  # text -> count: the hot path reads it directly
        self.hits = 0
        self.misses = 0

    @property
    def bytes(self) -> int:
        """Bytes held: the cached texts (``sys.getsizeof``), their counts and the map's entries."""
        return self._lru.bytes

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is not None:
            self.hits += 1
            try:  # noqa: SIM105 - the hot path; contextlib.suppress costs more than the lookup
                self._cache.move_to_end(text)
            except KeyError:  # another thread evicted it between the get and here
                pass
            return n  # type: ignore[no-any-return]
        n = self.base.count(text)
        self.misses += 1
        self._lru.put(text, n, sys.getsizeof(text) + _INT)
        return n

    def count_many(self, texts: Sequence[str]) -> list[int]:
        cache = self._cache
        out: list[int | None] = [cache.get(t) for t in texts]
        missing = [i for i, n in enumerate(out) if n is None]
        if missing:
            pending = list(dict.fromkeys(texts[i] for i in missing))
            counts = dict(zip(pending, self.base.count_many(pending), strict=True))
            self.misses += len(pending)
            self._lru.put_many([(t, n, sys.getsizeof(t) + _INT) for t, n in counts.items()])
            for i in missing:
                out[i] = counts[texts[i]]
        self.hits += len(texts) - len(missing)
        return out  # type: ignore[return-value]

    def encode(self, text: str) -> list[int]:
        return self.base.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.base.decode(ids)

    def clear(self) -> None:
        """Forget every cached count."""
        self._lru.cache_clear()

    def __repr__(self) -> str:
        return f"CachedTokenizer({self.base!r}, maxsize={self.maxsize}, max_bytes={self.max_bytes})"
