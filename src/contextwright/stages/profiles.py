"""Word profiles for containment dedup: each text's ``k``-word shingle hashes, computed once per distinct text.

A profile is kept in a byte-bounded cache (:mod:`contextwright.core.caches`);
the texts of one call that are not cached yet are stored in one batch. Hashes
are keyed per process, so a text cannot be written to collide with another on
purpose: in Python, ``hash`` of each shingle (a tuple of its words: SipHash of
each word, keyed per process); in C (``contextwright._native``, built at install
when a compiler is there), SipHash-1-3 of each word under a key drawn from
``os.urandom`` and the tuple hash's combination of the ``k`` word hashes, kept as
``bytes`` (8 a shingle, no object each: a profile's cache entry is ~610 bytes
instead of ~2,940) and compared in C by ``ShingleTable``, the walk's index of the
text kept. The two give the same words and shingles, so containment decides alike
on either (a 64-bit collision aside); one process uses one of them, picked at
import (issue 33: an ASCII dev chunk's profile costs 2.3 µs in C against 14.5 µs,
where counting its tokens costs ~15 µs). (A numpy version was measured and dropped:
on lists of 20 chunks of ~70 words its per-call overhead cost more than the Python
passes it saved.)
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import NamedTuple

from contextwright.core.caches import ByteLRU, key_of
from contextwright.core.cancel import Pace
from contextwright.stages.shingles import shingle_words

__all__ = [
    "Hashes",
    "Profile",
    "implementation",
    "native_table",
    "profiles",
    "shingle_hashes",
    "word_bounds",
]

#: A text's shingle hashes: Python ints in the Python path; in C, ``bytes`` of 8-byte values
#: (no object per shingle, a fifth of the cache's bytes), read by ``_native.ShingleTable``.
Hashes = tuple[int, ...] | bytes
#: ``(number of words, shingle hashes)``.
Profile = tuple[int, Hashes]

_CACHE = ByteLRU("contextwright.stages.containment._profile", max_bytes=8 * 2**20, maxsize=8_192)
_HASH = sys.getsizeof(-(1 << 62))  # a Python int hash's bytes


def _py_hashes(words: Sequence[bytes], k: int) -> tuple[int, ...]:
    """One hash per overlapping ``k``-word shingle (zip and hash run in C); none for fewer words."""
    if len(words) < k:
        return ()
    return tuple(map(hash, zip(*(words[j:] for j in range(k)), strict=False)))


def _py_profile(text: str, k: int) -> Profile:
    words = shingle_words(text)
    return len(words), _py_hashes(words, k)


def _c_profile(text: str, k: int) -> Profile:
    """Words and hashes in one C pass; other text normalized as :func:`shingle_words` does first."""
    if text.isascii():
        return _native.ascii_profile(text, k)
    return _native.unicode_profile(unicodedata.normalize("NFKC", text).casefold(), k)


class _Impl(NamedTuple):
    name: str
    profile: Callable[[str, int], Profile]
    hashes: Callable[[list[bytes], int], Hashes]
    #: The comparison words' bounds in character ranges of a text, where this implementation has them.
    bounds: Callable[[str, Sequence[tuple[int, int]]], tuple[list[int], list[int]]] | None
    #: An empty index of the text kept, over this implementation's hashes (C only).
    table: Callable[[], _native.ShingleTable] | None


try:
    from contextwright import _native
except ImportError:  # installed without a C compiler, or with CONTEXTWRIGHT_PURE=1
    _native = None  # type: ignore[assignment]

PYTHON = _Impl("python", _py_profile, _py_hashes, None, None)
NATIVE = (
    _Impl("c", _c_profile, _native.word_hashes, _native.word_bounds, _native.ShingleTable)
    if _native is not None
    else None
)
_impl = NATIVE or PYTHON  # tests switch it (with the cache cleared: the two hashes never mix)


def implementation() -> str:
    """Which word profiles this process computes: ``"c"`` (``contextwright._native``) or ``"python"``."""
    return _impl.name


def shingle_hashes(words: list[bytes], k: int) -> Hashes:
    """One hash per overlapping ``k``-word shingle of ``words`` (a list, as :func:`shingle_words`
    gives: the C path reads it without a copy); none for fewer than ``k`` words."""
    return _impl.hashes(words, k)


def word_bounds(text: str, ranges: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]] | None:
    """Where each comparison word of ``text`` inside ``ranges`` starts and ends, in C: an ASCII word
    (``[A-Za-z0-9_]+``) once, a word with another character once per ``\\w+`` run of its NFKC,
    case-folded form (as :func:`shingle_words` reads it, normalized on its own); None without the
    C module (the caller's Python path)."""
    bounds = _impl.bounds
    return bounds(text, ranges) if bounds is not None else None


def native_table() -> _native.ShingleTable | None:
    """An empty C index of the text kept (each shingle -> the first kept chunk holding it) for
    this process's hashes; None in the Python path (containment keeps its sets)."""
    return _impl.table() if _impl.table is not None else None


def _bytes(profile: Profile) -> int:
    hashes = profile[1]
    return 64 + sys.getsizeof(hashes) + (len(hashes) * _HASH if type(hashes) is tuple else 0)


def profiles(texts: Sequence[str], k: int) -> list[Profile]:
    """The profile of each text (words, shingle hashes), cached by content; misses hashed in one batch."""
    keys = [(key_of(t), k) for t in texts]
    out: list[Profile | None] = [_CACHE.get(key) for key in keys]
    missing = [i for i, p in enumerate(out) if p is None]
    if missing:
        pace = Pace("containment_dedup")  # a deadline stops the hashing of a huge list (issue 31)
        profile_of = _impl.profile
        fresh = []
        for i in missing:
            pace.step(len(texts[i]))
            profile = out[i] = profile_of(texts[i], k)
            fresh.append((keys[i], profile, sys.getsizeof(keys[i][0]) + _bytes(profile)))
        _CACHE.put_many(fresh)
    return out  # type: ignore[return-value]
