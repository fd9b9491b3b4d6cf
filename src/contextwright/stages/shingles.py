"""Word shingles, Jaccard similarity, MinHash signatures and LSH bands: near-duplicate detection for a list or a corpus."""

from __future__ import annotations

import itertools
import re
import unicodedata
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextwright.core.errors import missing_extra

__all__ = [
    "band_key_array",
    "band_keys",
    "jaccard",
    "lsh_bands",
    "minhash",
    "minhash_signatures",
    "shingle_words",
    "shingles",
    "splitmix",
]

if TYPE_CHECKING:
    pass


_WORD = re.compile(r"\w+")
_WORD_BYTES = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_ASCII_WORDS = bytes(c if c in _WORD_BYTES else 32 for c in range(256))
_WORDS_OR_HIGH = bytes(c if c in _WORD_BYTES or c >= 0x80 else 32 for c in range(256))
#: Candidate recall the LSH banding must reach for a pair exactly at the threshold.
_LSH_RECALL = 0.999


def shingle_words(text: str) -> list[bytes]:
    """The words near-dup compares: ``\\w+`` runs of the NFKC, case-folded text, as UTF-8.

    ASCII text (most of it) takes a byte-level path (``lower`` + ``translate`` +
    ``split``) that gives the same words as the regex, several times faster.
    """
    if text.isascii():
        return text.encode().lower().translate(_ASCII_WORDS).split()
    # The same byte-level split on the UTF-8 of the normalized text, with every non-ASCII byte
    # kept: ASCII words come out as they are; a run holding a non-ASCII character (a word with
    # an accent, or words joined by a dash or a curly quote) is split by the regex on its own.
    # A UTF-8 sequence never holds an ASCII byte, so a run is whole characters. 29.5 -> 17.8 µs a
    # non-ASCII dev chunk against the regex over the whole text.
    out: list[bytes] = []
    for run in unicodedata.normalize("NFKC", text).casefold().encode().translate(_WORDS_OR_HIGH).split():
        if run.isascii():
            out.append(run)
        else:
            out += [w.encode() for w in _WORD.findall(run.decode())]
    return out


def shingles(text: str, k: int) -> frozenset[tuple[bytes, ...]]:
    """The set of ``k``-word shingles of ``text`` (see :func:`shingle_words`; punctuation ignored).

    A text of fewer than ``k`` words is one shingle; a text without words has none.
    """
    words = shingle_words(text)
    if not words:
        return frozenset()
    if len(words) < k:
        return frozenset((tuple(words),))
    return frozenset(zip(*(words[i:] for i in range(k)), strict=False))


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0.0 when either set is empty)."""
    if not a or not b:
        return 0.0
    inter = len(a & b) if len(a) <= len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter)


def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """``(bands, rows)`` for MinHash LSH.

    The most rows per band (fewest false candidates) such that a pair at
    exactly ``threshold`` still becomes a candidate with probability >= 0.999,
    i.e. ``1 - (1 - t**rows) ** bands >= 0.999`` with ``bands = num_perm // rows``.
    For t = 0.9 and 64 hashes: 10 bands of 6 rows.
    """
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= _LSH_RECALL:
            best = (bands, rows)
    return best


def splitmix(np: Any, x: Any) -> Any:
    """splitmix64's finalizer, vectorized (uint64 arithmetic wraps)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def minhash_signatures(
    texts: Sequence[str], *, k: int = 3, num_perm: int = 64, seed: int = 1
) -> tuple[Any, Any]:
    """MinHash signatures of the ``k``-word shingle sets of ``texts``, vectorized with numpy.

    Words are hashed with CRC-32 (stable across processes, unlike ``hash``),
    shingles are mixed from their words' hashes with splitmix64 (one numpy
    pass per word of the shingle), and the ``num_perm`` hash functions
    ``x -> (a·x + b) mod 2^32`` followed by an xor-shift are applied to all
    shingles of a batch of texts at once and reduced per text with
    ``np.minimum.reduceat``. Shingle hashes are already uniform, so these cheap
    32-bit permutations suffice to propose candidates; every candidate is
    verified with the exact Jaccard afterwards.

    Returns:
        ``(signatures, has_words)``: a ``(len(texts), num_perm)`` uint32 array
        and a boolean mask of the texts that have at least one word (the rows
        of the others are meaningless).
    """
    sig, has_words, _, _, _ = minhash([shingle_words(t) for t in texts], k, num_perm, seed)
    return sig, has_words


def minhash(per_text: list[list[bytes]], k: int, num_perm: int, seed: int) -> tuple[Any, Any, Any, Any, Any]:
    """Signatures, has-words mask, and the 64-bit shingle hashes with each text's first index and count."""
    try:
        import numpy as np
    except ImportError:
        raise missing_extra("numpy", "semantic") from None
    per_text = list(per_text)
    lengths = np.fromiter((len(w) for w in per_text), dtype=np.int64, count=len(per_text))
    has_words = lengths > 0
    rng = np.random.default_rng(seed)
    mul = rng.integers(1, 1 << 32, size=num_perm, dtype=np.uint64).astype(np.uint32) | np.uint32(1)
    add = rng.integers(0, 1 << 32, size=num_perm, dtype=np.uint64).astype(np.uint32)
    sig = np.full((num_perm, len(per_text)), np.iinfo(np.uint32).max, dtype=np.uint32)
    if not has_words.any():
        empty = np.zeros(0, dtype=np.uint64)
        return sig.T.copy(), has_words, empty, np.zeros_like(lengths), np.zeros_like(lengths)
    short = (lengths > 0) & (lengths < k)
    if short.any():  # pad with an empty word so a short text still forms one shingle
        for i in np.flatnonzero(short):
            per_text[i] = per_text[i] + [b""] * (k - int(lengths[i]))
        lengths = np.where(short, k, lengths)
    w = np.fromiter(
        map(zlib.crc32, itertools.chain.from_iterable(per_text)), dtype=np.uint64, count=int(lengths.sum())
    )
    offsets = np.cumsum(lengths) - lengths
    n_sh = np.where(has_words, lengths - k + 1, 0)
    first = np.cumsum(n_sh) - n_sh  # index of each text's first shingle
    starts = np.arange(int(n_sh.sum()), dtype=np.int64) + np.repeat(offsets - first, n_sh)
    h = np.zeros(starts.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):
            h = splitmix(np, h * np.uint64(0x9E3779B97F4A7C15) + w[starts + j])
        h32 = (h >> np.uint64(32)).astype(np.uint32)
        rows = np.flatnonzero(has_words)
        bounds = np.concatenate((first[rows], [h32.shape[0]]))
        batch = 1 << 16  # shingles per batch: bounds memory to batch × num_perm × 4 bytes
        at = 0
        while at < len(rows):
            stop = int(np.searchsorted(bounds, bounds[at] + batch, side="right")) - 1
            stop = min(max(stop, at + 1), len(rows))
            lo, hi = bounds[at], bounds[stop]
            hv = mul[:, None] * h32[None, lo:hi] + add[:, None]
            hv ^= hv >> np.uint32(15)
            sig[:, rows[at:stop]] = np.minimum.reduceat(hv, bounds[at:stop] - lo, axis=1)
            at = stop
    return sig.T.copy(), has_words, h, first, n_sh


def band_key_array(sig: Any, bands: int, rows: int) -> Any:
    """One uint64 key per (text, band), as a numpy array: the band's rows mixed together."""
    import numpy as np

    keys = np.zeros((sig.shape[0], bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for r in range(rows):
            keys = splitmix(np, keys * np.uint64(0x9E3779B97F4A7C15) + sig[:, r : bands * rows : rows])
    return keys


def band_keys(sig: Any, bands: int, rows: int) -> list[list[int]]:
    """:func:`band_key_array` as lists of ints (what a list's LSH buckets look up)."""
    return band_key_array(sig, bands, rows).tolist()  # type: ignore[no-any-return]
