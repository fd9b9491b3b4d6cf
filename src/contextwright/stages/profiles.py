"""Word profiles for containment dedup: each text's ``k``-word shingle hashes, and the shingles a list shares.

A profile is computed once per distinct text and kept in a byte-bounded cache
(:mod:`contextwright.core.caches`); the texts of one call that are not cached
yet are hashed in one batch. With numpy (imported on first use, never at
import time) a profile is a ``uint64`` array (8 bytes a shingle) and a batch is
a handful of array operations; without it, a tuple of Python hashes.

:func:`shared_positions` answers, for a list of profiles, which shingle
positions of each hold a hash that another profile of the list also holds:
the only positions whose comparison can find anything. A list in which no two
texts share a shingle (most lists) is settled by one sort, without a
dictionary operation per shingle.

Hashes are built from Python's ``hash`` of each word (SipHash, keyed per
process), so a text cannot be written to collide with another on purpose.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from typing import Any

from contextwright.core.caches import ByteLRU, key_of
from contextwright.stages.shingles import shingle_words

__all__ = ["Profile", "profiles", "shared_positions", "shingle_hashes"]

#: ``(number of words, shingle hashes)``; the hashes a numpy ``uint64`` array or a tuple of ints.
Profile = tuple[int, Any]

_CACHE = ByteLRU("contextwright.stages.containment._profile", max_bytes=8 * 2**20, maxsize=8_192)
_HASH = sys.getsizeof(-(1 << 62))  # a Python int hash's bytes
_NUMPY: list[Any] = []  # [numpy or None], filled on first use
# Odd multipliers, one per word of a shingle: h = (h ^ word) * M[j], wrapping at 2**64.
_MIX = [(0x9E3779B97F4A7C15 * (2 * j + 1)) % 2**64 | 1 for j in range(64)]


def _np() -> Any | None:
    if not _NUMPY:
        try:
            import numpy
        except ImportError:  # pragma: no cover - numpy ships with every extra that tests run
            numpy = None  # type: ignore[assignment]
        _NUMPY.append(numpy)
    return _NUMPY[0]


def _tuple_hashes(words: Sequence[bytes], k: int) -> tuple[int, ...]:
    """One hash per overlapping ``k``-word shingle (zip and hash run in C): the path without numpy."""
    if len(words) < k:
        return ()
    return tuple(map(hash, zip(*(words[j:] for j in range(k)), strict=False)))


def shingle_hashes(word_lists: Sequence[Sequence[bytes]], k: int) -> list[Any]:
    """The shingle hashes of each word list (none for fewer than ``k`` words), in one batch."""
    np = _np()
    if np is None:
        return [_tuple_hashes(w, k) for w in word_lists]
    lengths = [len(w) for w in word_lists]
    total = sum(lengths)
    empty = np.zeros(0, dtype=np.uint64)
    if total < k:
        return [empty] * len(word_lists)
    words = np.fromiter(map(hash, itertools.chain.from_iterable(word_lists)), dtype=np.int64, count=total)
    words = words.view(np.uint64)
    m = total - k + 1
    h = words[:m] * np.uint64(_MIX[0])
    for j in range(1, k):
        h ^= words[j : j + m]
        h *= np.uint64(_MIX[j])
    out = []
    at = 0
    for n in lengths:
        out.append(h[at : at + n - k + 1].copy() if n >= k else empty)
        at += n
    return out


def _bytes(profile: Profile) -> int:
    hashes = profile[1]
    nbytes = getattr(hashes, "nbytes", None)
    if nbytes is not None:
        return 64 + sys.getsizeof(hashes)  # an array that owns its data counts it
    return 64 + sys.getsizeof(hashes) + len(hashes) * _HASH


def profiles(texts: Sequence[str], k: int) -> list[Profile]:
    """The profile of each text (words, shingle hashes), cached by content; misses hashed in one batch."""
    keys = [(key_of(t), k) for t in texts]
    out: list[Profile | None] = [_CACHE.get(key) for key in keys]
    missing = [i for i, p in enumerate(out) if p is None]
    if missing:
        words = [shingle_words(texts[i]) for i in missing]
        for i, w, hashes in zip(missing, words, shingle_hashes(words, k), strict=True):
            profile = (len(w), hashes)
            out[i] = profile
            key = keys[i]
            _CACHE.put(key, profile, sys.getsizeof(key[0]) + _bytes(profile))
    return out  # type: ignore[return-value]


def shared_positions(hashes: Sequence[Any]) -> list[list[int]]:
    """For each hash sequence, the positions (ascending) whose hash another sequence also holds."""
    np = _np()
    if np is None or not all(hasattr(h, "dtype") for h in hashes):
        return _shared_python(hashes)
    lengths = [len(h) for h in hashes]
    none: list[list[int]] = [[] for _ in hashes]
    if sum(lengths) == 0:
        return none
    flat = np.concatenate(hashes)
    order = flat.argsort()
    srt = flat[order]
    same = srt[1:] == srt[:-1]
    if not same.any():  # no hash twice: nothing shared (most lists of distinct passages)
        return none
    who = np.repeat(np.arange(len(hashes)), lengths)[order]
    runs = np.flatnonzero(np.concatenate(([True], ~same)))  # where each run of one hash starts
    across = np.minimum.reduceat(who, runs) != np.maximum.reduceat(who, runs)  # held by two texts
    if not across.any():
        return none
    flag = np.empty(len(flat), dtype=bool)
    flag[order] = np.repeat(across, np.diff(np.append(runs, len(flat))))
    starts = np.cumsum([0, *lengths])
    where = np.flatnonzero(flag)
    cuts = np.searchsorted(where, starts).tolist()
    at = where.tolist()
    first = starts.tolist()
    return [[p - first[i] for p in at[cuts[i] : cuts[i + 1]]] for i in range(len(hashes))]


def _shared_python(hashes: Sequence[Sequence[int]]) -> list[list[int]]:
    seen: set[int] = set()
    shared: set[int] = set()
    sets = [set(h) for h in hashes]
    for s in sets:
        shared |= seen & s
        seen |= s
    if not shared:
        return [[] for _ in hashes]
    return [
        [p for p, h in enumerate(hs) if h in shared] if not s.isdisjoint(shared) else []
        for hs, s in zip(hashes, sets, strict=True)
    ]
