"""Every cache keyed by text content, in one registry, so that "cold" means cold.

Stages and renderers keep results by text (the sentence spans of a chunk, its
dedup key, its citation snippet), because the same passages come back query
after query. Each such cache registers itself here when it is defined;
:func:`clear_all` empties every one, and ``Assembler.clear_caches`` calls it, so
a benchmark that asks for a cold start gets one. Before the registry the
assembler cleared a hand-kept list that had missed the compressor's caches.

Example:
    >>> @register
    ... @functools.lru_cache(maxsize=1024)
    ... def words(text: str) -> tuple[str, ...]: ...
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, TypeVar

__all__ = ["Clearable", "clear_all", "register", "registered"]


class Clearable(Protocol):
    """A cache: anything with ``cache_clear()`` (``functools.lru_cache`` functions)."""

    def cache_clear(self) -> None: ...


C = TypeVar("C", bound=Clearable)

_REGISTRY: dict[str, Clearable] = {}
_LOCK = threading.Lock()


def _name(cache: Any) -> str:
    return f"{getattr(cache, '__module__', '?')}.{getattr(cache, '__qualname__', repr(cache))}"


def register(cache: C) -> C:
    """Add ``cache`` to the registry (a decorator over an ``lru_cache``-wrapped function)."""
    with _LOCK:
        _REGISTRY[_name(cache)] = cache
    return cache


def registered() -> dict[str, Clearable]:
    """The registered caches by qualified name."""
    with _LOCK:
        return dict(_REGISTRY)


def clear_all() -> None:
    """Empty every registered cache."""
    for cache in registered().values():
        cache.cache_clear()
