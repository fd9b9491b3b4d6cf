"""Every cache keyed by text content, in one registry, bounded by bytes, so that memory has a ceiling
and "cold" means cold.

Stages and renderers keep results by text (the sentence spans of a chunk, its
dedup key, its citation snippet, its rendered body), because the same passages
come back query after query. Each such cache is a :class:`ByteLRU` (or a
function wrapped by :func:`text_cache`, which keeps one): a least-recently-used
map bounded by entries *and* by bytes, where an entry's bytes are those of its
key and its value (:func:`sizeof`). A text longer than :data:`DIGEST_OVER`
characters is keyed by a BLAKE2b digest of it instead of itself, so a cache never
keeps a long text alive; shorter texts are their own key (a ``str`` keeps its
hash, so a lookup is one dict probe) and are counted in the bytes.

Each cache registers itself here when it is created: module-level caches for
good, per-object ones (a tokenizer's count cache) weakly, for as long as their
owner lives. :func:`clear_all` empties every one (``contextwright.clear_caches()``);
:func:`total_bytes` and :func:`total_max_bytes` sum what they hold and what they
may hold; :func:`stats` lists each.

Example:
    >>> @text_cache(max_bytes=4 * 2**20)
    ... def words(text: str) -> tuple[str, ...]: ...
    >>> cache = ByteLRU("my.cache", max_bytes=2**20)
    >>> cache.put("text", 3, sizeof("text") + 28)
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NamedTuple, Protocol, TypeVar, cast, overload

__all__ = [
    "DIGEST_OVER",
    "ENTRY_OVERHEAD",
    "ByteLRU",
    "CacheStats",
    "Clearable",
    "Scoped",
    "cache_of",
    "clear_all",
    "key_of",
    "register",
    "registered",
    "sizeof",
    "stats",
    "text_cache",
    "total_bytes",
    "total_max_bytes",
]

#: Texts longer than this (characters) are keyed by a 16-byte BLAKE2b digest, not by themselves.
DIGEST_OVER = 4_096
#: Bytes counted per entry beyond its key and value: the map's node and the (value, bytes) pair.
ENTRY_OVERHEAD = 160


class Clearable(Protocol):
    """A cache: anything with ``cache_clear()`` (a :class:`ByteLRU`, a ``functools.lru_cache`` function)."""

    def cache_clear(self) -> None: ...


C = TypeVar("C", bound=Clearable)
F = TypeVar("F", bound=Callable[..., Any])

_REGISTRY: dict[str, Clearable] = {}
# Per-object caches (one per CachedTokenizer): held weakly, under a unique name.
_WEAK: weakref.WeakValueDictionary[str, Clearable] = weakref.WeakValueDictionary()
_SERIAL = itertools.count(1)
_ENTRY_BYTES: dict[str, int] = {}  # lru_cache functions: the most bytes one entry holds
_LOCK = threading.Lock()
_MISSING: Any = object()


class CacheStats(NamedTuple):
    """One cache's state (:func:`stats`)."""

    name: str
    entries: int
    bytes: int
    max_bytes: int
    maxsize: int
    hits: int
    misses: int


def _name(cache: Any) -> str:
    return f"{getattr(cache, '__module__', '?')}.{getattr(cache, '__qualname__', repr(cache))}"


@overload
def register(cache: C, *, weak: bool = ..., entry_bytes: int | None = ...) -> C: ...


@overload
def register(cache: None = ..., *, weak: bool = ..., entry_bytes: int | None = ...) -> Callable[[C], C]: ...


def register(cache: Any = None, *, weak: bool = False, entry_bytes: int | None = None) -> Any:
    """Add ``cache`` to the registry (also a decorator, bare or called, over an ``lru_cache`` function).

    ``weak``: hold it only while its owner lives (a per-object cache), under a unique name.
    ``entry_bytes``: for an ``lru_cache`` (which cannot count bytes), the most bytes one entry can
    hold (its arguments are bounded), so that :func:`stats` can bound it: ``maxsize x entry_bytes``.
    """
    if cache is None:
        return lambda c: register(c, weak=weak, entry_bytes=entry_bytes)
    name = getattr(cache, "name", None) or _name(cache)
    with _LOCK:
        if weak:
            _WEAK[f"{name}#{next(_SERIAL)}"] = cache
        else:
            _REGISTRY[name] = cache
            if entry_bytes is not None:
                _ENTRY_BYTES[name] = entry_bytes
    return cache


def registered() -> dict[str, Clearable]:
    """The registered caches by name (per-object ones while their owner lives)."""
    with _LOCK:
        return {**_REGISTRY, **dict(_WEAK.items())}


def clear_all(*, per_object: bool = True) -> None:
    """Empty every registered cache: every text cache, every pipeline's rendered bodies and headers,
    and (``per_object``) every tokenizer's counts. ``contextwright.clear_caches()`` is this function.

    ``per_object=False`` keeps the per-object caches (the tokenizers' counts): what a benchmark
    clears to run one assembler cold beside another that keeps its tokenizer warm.
    """
    with _LOCK:
        caches = [*_REGISTRY.values(), *(_WEAK.values() if per_object else ())]
    for cache in caches:
        cache.cache_clear()


def stats() -> list[CacheStats]:
    """Every registered cache's state, by name: a :class:`ByteLRU` as it counts itself, an
    ``lru_cache`` registered with ``entry_bytes`` at that many bytes an entry (an upper bound)."""
    out = []
    for name, cache in sorted(registered().items()):
        if isinstance(cache, ByteLRU):
            out.append(cache.stats(name))
        elif name in _ENTRY_BYTES and hasattr(cache, "cache_info"):
            info, per = cache.cache_info(), _ENTRY_BYTES[name]
            out.append(
                CacheStats(
                    name,
                    info.currsize,
                    info.currsize * per,
                    info.maxsize * per,
                    info.maxsize,
                    info.hits,
                    info.misses,
                )
            )
    return out


def total_bytes() -> int:
    """The bytes the registered caches hold now (keys, values and entries; see :func:`stats`)."""
    return sum(s.bytes for s in stats())


def total_max_bytes() -> int:
    """The most bytes the registered caches may hold together (see :func:`stats`)."""
    return sum(s.max_bytes for s in stats())


_SCALARS = (str, bytes, int, float, bool, type(None))


def sizeof(obj: object) -> int:
    """Bytes of ``obj`` and what it holds: strings, bytes, numbers, and tuples/lists of them
    (recursively), numpy arrays by ``nbytes``; a shared object is counted at each place."""
    if type(obj) in _SCALARS:
        return sys.getsizeof(obj)
    if isinstance(obj, (tuple, list)):
        if all(type(x) in _SCALARS for x in obj):
            return sys.getsizeof(obj) + sum(map(sys.getsizeof, obj))
        return sys.getsizeof(obj) + sum(map(sizeof, obj))
    size = sys.getsizeof(obj)
    nbytes = getattr(obj, "nbytes", None)
    if isinstance(nbytes, int) and getattr(obj, "base", None) is not None:
        return size + nbytes  # a numpy view: its getsizeof leaves out the data it points into
    return size


def _flat(obj: Any) -> int:
    """Bytes of a scalar, or of a tuple of scalars and its items (one level: what cache keys are)."""
    if type(obj) is tuple:
        return sys.getsizeof(obj) + sum(map(sys.getsizeof, obj))
    return sys.getsizeof(obj)


def key_of(text: str) -> Hashable:
    """The key a text is cached under: itself, or a digest when over :data:`DIGEST_OVER` characters."""
    if len(text) <= DIGEST_OVER:
        return text
    return (len(text), hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())


class ByteLRU:
    """A thread-safe least-recently-used map bounded by entries and by bytes.

    Args:
        name: Its name in the registry (``module.function`` for a module cache).
        max_bytes: The most bytes of keys and values it holds; an entry over an eighth of it is
            not kept (its value is computed each time: a huge text cannot flush the cache).
        maxsize: The most entries it holds.
        weak: Register it weakly (a per-object cache), or not at all with ``None``.
    """

    __slots__ = (
        "__weakref__",
        "_data",
        "_last",
        "_lock",
        "_max_entry",
        "_sizes",
        "bytes",
        "hits",
        "max_bytes",
        "maxsize",
        "misses",
        "name",
    )

    def __init__(
        self, name: str, *, max_bytes: int, maxsize: int = 1 << 20, weak: bool | None = False
    ) -> None:
        if max_bytes < 1 or maxsize < 1:
            raise ValueError(f"{name}: max_bytes and maxsize must be >= 1; got {max_bytes!r}, {maxsize!r}.")
        self.name = name
        self.max_bytes = max_bytes
        self.maxsize = maxsize
        self._max_entry = max(1, max_bytes // 8)
        # key -> (value, bytes)
        # key -> value, in LRU order; key -> bytes beside it (no (value, bytes) pair per entry: a
        # tuple per store is one more object for the garbage collector to track)
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        # The last entry too big to keep (see :func:`text_cache`), held alone; cleared with the rest.
        self._last: tuple[Hashable, Any] | None = None
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        if weak is not None:
            register(self, weak=weak)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (marked recently used), or ``default``."""
        got = self._data.get(key, _MISSING)
        if got is _MISSING:
            self.misses += 1
            return default
        self.hits += 1
        try:  # noqa: SIM105 - the hot path; contextlib.suppress costs more than the lookup
            self._data.move_to_end(key)
        except KeyError:  # another thread evicted it between the get and here
            pass
        return got

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Keep ``value`` under ``key`` (``nbytes``: the entry's bytes, key included), then evict the
        least recently used until both bounds hold. An entry over an eighth of the bytes is not kept
        (:func:`text_cache` holds the last such result alone, outside the bound)."""
        nbytes += ENTRY_OVERHEAD
        if nbytes > self._max_entry:
            return
        with self._lock:
            data, sizes = self._data, self._sizes
            old = sizes.get(key)
            if old is not None:
                self.bytes -= old
            data[key] = value
            sizes[key] = nbytes
            self.bytes += nbytes
            if self.bytes > self.max_bytes or len(data) > self.maxsize:
                self._evict()

    def _evict(self) -> None:
        data, sizes = self._data, self._sizes
        while data and (len(data) > self.maxsize or self.bytes > self.max_bytes):
            key, _ = data.popitem(last=False)
            self.bytes -= sizes.pop(key)

    def put_many(self, items: Iterable[tuple[Hashable, Any, int]]) -> None:
        """:meth:`put` for several entries under one lock."""
        data, sizes, limit = self._data, self._sizes, self._max_entry
        with self._lock:
            for key, value, size in items:
                nbytes = size + ENTRY_OVERHEAD
                if nbytes > limit or key in data:
                    continue
                data[key] = value
                sizes[key] = nbytes
                self.bytes += nbytes
            self._evict()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def cache_clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._last = None
            self._data.clear()
            self._sizes.clear()
            self.bytes = 0

    def stats(self, name: str | None = None) -> CacheStats:
        return CacheStats(
            name or self.name,
            len(self._data),
            self.bytes,
            self.max_bytes,
            self.maxsize,
            self.hits,
            self.misses,
        )

    def __repr__(self) -> str:
        return f"ByteLRU({self.name!r}, {len(self._data)} entries, {self.bytes} of {self.max_bytes} bytes)"


def text_cache(
    *, max_bytes: int, maxsize: int = 1 << 20, size: Callable[[Any], int] = sizeof
) -> Callable[[F], F]:
    """Memoize a function of texts (and other hashable arguments) in a registered :class:`ByteLRU`.

    Each ``str`` argument is keyed by :func:`key_of` (a long text by its digest); an entry's bytes
    are its key's plus ``size(result)``. The wrapper has ``cache`` (the :class:`ByteLRU`),
    ``cache_clear()`` and ``__wrapped__``. Positional arguments only.
    """

    def wrap(fn: F) -> F:
        cache = ByteLRU(_name(fn), max_bytes=max_bytes, maxsize=maxsize)
        data, put = cache._data, cache.put

        @functools.wraps(fn)
        def cached(*args: Any) -> Any:
            # one text: keyed by itself (or its digest); several arguments: a tuple of their keys
            if len(args) == 1 and type(args[0]) is str:
                key: Hashable = args[0] if len(args[0]) <= DIGEST_OVER else key_of(args[0])
            else:
                key = tuple([key_of(a) if type(a) is str else a for a in args])
            got = data.get(key, _MISSING)
            if got is not _MISSING:
                cache.hits += 1
                try:  # noqa: SIM105 - the hot path
                    data.move_to_end(key)
                except KeyError:
                    pass
                return got
            # The last result too big to keep (over an eighth of the cap: a long text's analysis)
            # is held alone, so a caller that asks again within one call (per sentence, or from
            # two helpers) pays once; without it such a loop was quadratic (a 100 KB run of short
            # sentences in `tight` took over 120 s). One such entry per cache, replaced by the next.
            held = cache._last
            if held is not None and held[0] == key:
                cache.hits += 1
                return held[1]
            cache.misses += 1
            value = fn(*args)
            nbytes = sizeof(key) + size(value)
            if nbytes + ENTRY_OVERHEAD > cache._max_entry:
                cache._last = (key, value)
            else:
                put(key, value, nbytes)
            return value

        cached.cache = cache  # type: ignore[attr-defined]
        cached.cache_clear = cache.cache_clear  # type: ignore[attr-defined]
        return cast(F, cached)

    return wrap


def _keyed(key: Hashable) -> Hashable:
    """``key`` with each text in it replaced by :func:`key_of` (a long text by its digest)."""
    if isinstance(key, str):
        return key_of(key)
    if type(key) is tuple:
        # only a long text is replaced (a header key's fields are short; its text may not be)
        return tuple([key_of(k) if type(k) is str and len(k) > DIGEST_OVER else k for k in key])
    return key


class Scoped:
    """One owner's view of a shared :class:`ByteLRU`: its keys are prefixed with the view's own
    number, so owners never see each other's entries and share one byte bound.

    :meth:`renew` forgets this view's entries (a new number: the old entries are unreachable and
    leave the LRU as it fills). A pipeline keeps its rendered bodies this way, so a process with
    many pipelines (the service caches 64) still holds at most the shared cache's bytes.
    """

    __slots__ = ("_lru", "_scope")

    def __init__(self, lru: ByteLRU) -> None:
        self._lru = lru
        self._scope = next(_SERIAL)

    def get(self, key: Hashable, default: Any = None) -> Any:
        k = (key if len(key) <= DIGEST_OVER else key_of(key)) if type(key) is str else _keyed(key)
        full, lru = (self._scope, k), self._lru  # ByteLRU.get inlined: one call fewer on the hot path
        got = lru._data.get(full, _MISSING)
        if got is _MISSING:
            lru.misses += 1
            return default
        lru.hits += 1
        try:  # noqa: SIM105 - the hot path
            lru._data.move_to_end(full)
        except KeyError:  # another thread evicted it between the get and here
            pass
        return got

    def __setitem__(self, key: Hashable, value: Any) -> None:
        # keys and values here are texts or tuples of scalars (a header's fields, its two parts)
        k = key_of(key) if type(key) is str else _keyed(key)
        self._lru.put((self._scope, k), value, _flat(k) + _flat(value))

    def setdefault(self, key: Hashable, value: Any) -> Any:
        got = self.get(key, _MISSING)
        if got is _MISSING:
            self[key] = value
            return value
        return got

    def put_many(self, items: Iterable[tuple[Hashable, Any]]) -> None:
        """Keep several entries under one lock (what a call rendered, stored once at its end)."""
        scope = self._scope
        entries = []
        for key, value in items:
            k = key_of(key) if type(key) is str else _keyed(key)
            entries.append(((scope, k), value, _flat(k) + _flat(value)))
        self._lru.put_many(entries)

    def renew(self) -> None:
        """Forget this view's entries."""
        self._scope = next(_SERIAL)


def cache_of(fn: Callable[..., Any]) -> ByteLRU:
    """The :class:`ByteLRU` behind a function wrapped by :func:`text_cache`."""
    cache = getattr(fn, "cache", None)
    if not isinstance(cache, ByteLRU):
        raise TypeError(f"{fn!r} is not wrapped by text_cache")
    return cache
