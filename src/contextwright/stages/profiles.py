"""Word profiles for containment dedup: each text's ``k``-word shingle hashes, computed once per distinct text.

A profile is kept in a byte-bounded cache (:mod:`contextwright.core.caches`);
the texts of one call that are not cached yet are stored in one batch. Hashes
are Python's ``hash`` of each shingle (a tuple of its words: SipHash of each
word, keyed per process), so a text cannot be written to collide with another
on purpose. (A numpy version was measured and dropped: on lists of 20 chunks of
~70 words its per-call overhead cost more than the Python passes it saved.)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from contextwright.core.caches import ByteLRU, key_of
from contextwright.core.cancel import Pace
from contextwright.stages.shingles import shingle_words

__all__ = ["Profile", "profiles", "shingle_hashes"]

#: ``(number of words, shingle hashes)``.
Profile = tuple[int, tuple[int, ...]]

_CACHE = ByteLRU("contextwright.stages.containment._profile", max_bytes=8 * 2**20, maxsize=8_192)
_HASH = sys.getsizeof(-(1 << 62))  # a Python int hash's bytes


def shingle_hashes(words: Sequence[bytes], k: int) -> tuple[int, ...]:
    """One hash per overlapping ``k``-word shingle (zip and hash run in C); none for fewer words."""
    if len(words) < k:
        return ()
    return tuple(map(hash, zip(*(words[j:] for j in range(k)), strict=False)))


def _bytes(profile: Profile) -> int:
    return 64 + sys.getsizeof(profile[1]) + len(profile[1]) * _HASH


def profiles(texts: Sequence[str], k: int) -> list[Profile]:
    """The profile of each text (words, shingle hashes), cached by content; misses hashed in one batch."""
    keys = [(key_of(t), k) for t in texts]
    out: list[Profile | None] = [_CACHE.get(key) for key in keys]
    missing = [i for i, p in enumerate(out) if p is None]
    if missing:
        pace = Pace("containment_dedup")  # a deadline stops the hashing of a huge list (issue 31)
        words = []
        for i in missing:
            pace.step(len(texts[i]))
            words.append(shingle_words(texts[i]))
        fresh = []
        for i, w in zip(missing, words, strict=True):
            profile = out[i] = (len(w), shingle_hashes(w, k))
            fresh.append((keys[i], profile, sys.getsizeof(keys[i][0]) + _bytes(profile)))
        _CACHE.put_many(fresh)
    return out  # type: ignore[return-value]
