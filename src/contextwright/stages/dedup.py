"""Deduplication: exact, overlap, near-duplicate and semantic.

* :class:`ExactDedup` - normalized-text hash.
* :class:`OverlapDedup` - the overlap consecutive chunks of one document
  share, and chunks contained in another chunk of their document.
* :class:`NearDedup` - Jaccard similarity of word shingles (exact pairwise,
  or MinHash + LSH banding for large inputs).
* :class:`SemanticDedup` - cosine similarity of embeddings.

Every stage keeps the higher-scored copy (ties: the earlier in retrieval
order) and folds the dropped copy's id and source into the survivor, so the
survivor's citation names every place the text came from.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from contextwright.errors import ConfigError, InputError, missing_extra
from contextwright.limits import bounded
from contextwright.spans import compose
from contextwright.stages.base import register_stage
from contextwright.types import Change, Chunk, Drop, StageResult

if TYPE_CHECKING:
    from contextwright.embed import Embedder
    from contextwright.render.meter import Meter

__all__ = [
    "ExactDedup",
    "NearDedup",
    "OverlapDedup",
    "SemanticDedup",
    "fold_duplicate",
    "jaccard",
    "lsh_bands",
    "minhash_signatures",
    "normalize_text",
    "shingles",
    "suffix_prefix_overlap",
]

_SPACE = re.compile(r"\s+")


_ASCII_WS_RUNS = ("  ", "\n", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")


_NOT_SINGLE_SPACE = re.compile(r"[^\S ]|  ")


def normalize_text(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: the key two copies share."""
    if text.isascii():
        # NFKC is the identity and casefold is lower() on ASCII; collapse only
        # when there is something to collapse (most texts have single spaces).
        text = text.lower()
        if any(ws in text for ws in _ASCII_WS_RUNS):
            return " ".join(text.split())
        return text.strip()
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    # One regex scan finds any whitespace but a single space; without one,
    # split/join would give back the stripped text anyway.
    return " ".join(text.split()) if _NOT_SINGLE_SPACE.search(text) else text.strip()


@functools.lru_cache(maxsize=65_536)
def _exact_key(text: str) -> bytes:
    """Hash of the normalized text, cached by content across calls."""
    return hashlib.blake2b(normalize_text(text).encode(), digest_size=16).digest()


def fold_duplicate(survivor: Chunk, dropped: Chunk) -> Chunk:
    """The survivor, remembering the dropped copy's id, source, page and line for its citation."""
    sources = list(survivor.also_sources)
    for src in (dropped.source, *dropped.also_sources):
        if src and src != survivor.source and src not in sources:
            sources.append(src)
    dups = survivor.duplicates + tuple(
        i for i in (dropped.id, *dropped.duplicates) if i not in survivor.duplicates
    )
    known = {a[0] for a in survivor.also_at}
    also_at = survivor.also_at + tuple(
        a
        for a in ((dropped.id, dropped.source, dropped.page, dropped.line), *dropped.also_at)
        if a[0] not in known
    )
    # with_ops: a slot copy, half the time of replace() (containment dedup folds many copies)
    return survivor.with_ops(duplicates=dups, also_sources=tuple(sources), also_at=also_at)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ExactDedup:
    """Drop chunks whose normalized text equals a higher-scored chunk's.

    The key is a hash of the NFKC, case-folded, whitespace-collapsed text. The
    copy with the higher score survives (ties: the earlier one in retrieval
    order); the dropped copy is reported as ``duplicate_of`` and its id and
    source are recorded on the survivor, so the survivor's citation lists both
    places the text came from.

    Example:
        >>> ExactDedup()(chunks).report.dropped
    """

    name: ClassVar[str] = "exact_dedup"
    requires: ClassVar[tuple[str, ...]] = ()

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        best: dict[bytes, Chunk] = {}
        losers: list[tuple[Chunk, bytes]] = []
        for c in chunks:
            key = _exact_key(c.text)
            held = best.get(key)
            if held is None:
                best[key] = c
            elif (c.score, -c.rank) > (held.score, -held.rank):
                best[key] = c
                losers.append((held, key))
            else:
                losers.append((c, key))
        if not losers:
            return StageResult.of(self.name, chunks, chunks)
        folded = dict(best)
        drops: list[Drop] = []
        for loser, key in losers:
            folded[key] = fold_duplicate(folded[key], loser)
            drops.append(Drop(loser.id, "duplicate_of", related=best[key].id))
        survivors = {c.id: c for c in folded.values()}
        out = [survivors[c.id] for c in chunks if c.id in survivors]
        return StageResult.of(self.name, chunks, out, dropped=drops)


# -- overlap ------------------------------------------------------------------

_WORD_RUN = re.compile(r"\S+")


def _collapse(text: str) -> str:
    """``text`` with whitespace runs collapsed to one space, no outer whitespace."""
    return " ".join(text.split())


def suffix_prefix_overlap(a: str, b: str, min_chars: int) -> int:
    """Length of the longest suffix of ``a`` that is a prefix of ``b`` (0 if < ``min_chars``).

    Both strings are compared as given; the caller collapses whitespace. The
    longest overlap starts at the earliest position of ``a`` where ``b``'s
    first ``min_chars`` characters occur and the rest of ``a`` matches, so
    ``str.find`` (C speed) proposes the few candidate positions.
    """
    if min_chars <= 0 or min(len(a), len(b)) < min_chars:
        return 0
    probe = b[:min_chars]
    p = a.find(probe, max(0, len(a) - len(b)))
    while p != -1:
        if b.startswith(a[p:]):
            return len(a) - p
        p = a.find(probe, p + 1)
    return 0


def _original_cut(text: str, collapsed_chars: int) -> int:
    """Offset in ``text`` just after its first ``collapsed_chars`` whitespace-collapsed characters."""
    seen = 0
    for m in _WORD_RUN.finditer(text):
        if seen > 0:
            seen += 1  # the single space standing for the whitespace run before this word
        word = m.end() - m.start()
        if seen + word >= collapsed_chars:
            return m.start() + (collapsed_chars - seen)
        seen += word
    return len(text)


def _relevance_key(c: Chunk) -> tuple[float, int]:
    return (-c.score, c.rank)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class OverlapDedup:
    """Strip the text consecutive chunks of one document share; drop chunks contained in another.

    Chunkers cut documents into overlapping windows (LangChain's
    ``chunk_overlap``, LlamaIndex's sentence windows; the shared NQ corpus uses
    100-word windows with 20 shared words), so neighbours retrieved or expanded
    together repeat that overlap and the model reads it twice.

    For two chunks of one document with consecutive ``index`` values, the
    longest suffix of the earlier chunk that is a prefix of the later one
    (compared with whitespace collapsed, at least ``min_overlap_chars``
    characters) is cut from the less relevant of the two (lower score, then
    later rank; the later chunk on a tie): the later chunk loses its head (op
    ``overlap_stripped``) or the earlier one its tail (op
    ``overlap_stripped_tail``). Cutting the less relevant copy matters when a
    budget follows: an expanded neighbour (scored below the hit it was
    fetched for) is the first chunk a budget drops, and the overlap's words
    must not leave with it while the hit that needed them stays without
    them. The cut is made on the original text and the whitespace between
    the two is kept, so ``earlier.text + later.text`` is the document text
    again (this is what :class:`~contextwright.stages.group.GroupMerge` relies
    on; formats strip outer whitespace when a stripped chunk is rendered
    alone). The overlap is always measured on the texts as they came in, so
    chains of three or more windows are cut correctly even when windows
    overlap by more than half; where a chunk's head and tail cuts would meet,
    the later chunk of the pair takes the cut.

    A chunk whose (whitespace-collapsed) text is contained in another chunk of
    the same document is dropped as ``merged_into`` the container (detail
    ``contained``); its id goes into the container's ``duplicates`` and the
    container takes the higher of the two scores, because it holds the text
    that scored.

    Use it with :class:`~contextwright.stages.group.GroupMerge` or the
    ``blocks`` budget policy: a stripped chunk shown without its neighbour
    starts or ends mid-passage.

    Args:
        min_overlap_chars: The shortest overlap (in whitespace-collapsed
            characters) worth cutting; shorter matches are coincidence.

    Example:
        >>> OverlapDedup()(chunks, meter=meter).report.changed   # 'overlap_stripped'
    """

    name: ClassVar[str] = "overlap_dedup"
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ("meter",)
    min_overlap_chars: int = bounded(20, 1_000_000)

    def __post_init__(self) -> None:
        m = self.min_overlap_chars
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ConfigError(
                f"min_overlap_chars must be a positive integer; got {m!r}. The default, 20, ignores "
                "coincidental matches of a few words."
            )

    def __call__(self, chunks: Sequence[Chunk], /, *, meter: Meter | None = None) -> StageResult:
        by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            if c.doc_id is not None:
                by_doc.setdefault(c.doc_id, []).append(c)
        current: dict[str, Chunk] = {c.id: c for c in chunks}
        dropped: set[str] = set()
        drops: list[Drop] = []
        changes: list[Change] = []
        collapsed = {c.id: _collapse(c.text) for c in chunks if c.doc_id is not None}

        def keep(chunk_id: str, op: str, piece: tuple[int, int], detail: str) -> None:
            """Keep only ``piece`` of the chunk's current text, and report the strip."""
            held = current[chunk_id]
            stripped = held.with_ops(op, text=held.text[piece[0] : piece[1]], spans=compose(held, [piece]))
            current[chunk_id] = stripped
            before = meter.tokens(held) if meter is not None else None
            after = meter.tokens(stripped) if meter is not None else None
            changes.append(Change(chunk_id, "overlap_stripped", before, after, detail=detail))

        for members in by_doc.values():
            if len(members) < 2:
                continue
            # containment: longest first, so a chunk is compared with every possible container
            order = sorted(members, key=lambda c: (-len(collapsed[c.id]), -c.score, c.rank))
            kept: list[Chunk] = []
            for c in order:
                text = collapsed[c.id]
                container = next((k for k in kept if text in collapsed[k.id]), None)
                if container is None:
                    kept.append(c)
                    continue
                held = current[container.id]
                folded = fold_duplicate(held, c)
                if c.score > held.score:
                    folded = replace(folded, score=c.score)
                current[container.id] = folded
                dropped.add(c.id)
                drops.append(Drop(c.id, "merged_into", related=container.id, detail="contained"))
            # overlap: consecutive indices, measured on the texts as they came in; the copy is cut
            # from the less relevant chunk of the pair, so a budget that later drops that chunk
            # (an expanded neighbour, usually) never takes the overlap's words with it
            indexed = sorted((c for c in kept if c.index is not None), key=lambda c: (c.index, c.rank))
            head_cut: dict[str, int] = {}  # offset into the original text where a chunk now starts
            for prev, cur in itertools.pairwise(indexed):
                if prev.index is None or cur.index != prev.index + 1:
                    continue
                k = suffix_prefix_overlap(collapsed[prev.id], collapsed[cur.id], self.min_overlap_chars)
                if k == 0:
                    continue
                if _relevance_key(prev) > _relevance_key(cur):
                    start = head_cut.get(prev.id, 0)
                    end = _original_cut(prev.text, len(collapsed[prev.id]) - k)
                    if prev.text[start:end].strip():
                        detail = (
                            f"last {len(prev.text) - end} of {len(prev.text)} characters shared with {cur.id}"
                        )
                        keep(
                            prev.id,
                            "overlap_stripped_tail",
                            (0, end - start),
                            f"{detail}, which ranks higher",
                        )
                        continue
                    # its head is already cut and the two cuts would meet: cut the later chunk
                cut = _original_cut(cur.text, k)
                head_cut[cur.id] = cut
                keep(
                    cur.id,
                    "overlap_stripped",
                    (cut, len(cur.text)),
                    f"{cut} of {len(cur.text)} characters shared with {prev.id}",
                )
        if not drops and not changes:
            return StageResult.of(self.name, chunks, chunks)
        out = [current[c.id] for c in chunks if c.id not in dropped]
        return StageResult.of(self.name, chunks, out, dropped=drops, changed=changes)


# -- near duplicates ------------------------------------------------------------

_WORD = re.compile(r"\w+")
_WORD_BYTES = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_ASCII_WORDS = bytes(c if c in _WORD_BYTES else 32 for c in range(256))
#: Candidate recall the LSH banding must reach for a pair exactly at the threshold.
_LSH_RECALL = 0.999


def shingle_words(text: str) -> list[bytes]:
    """The words near-dup compares: ``\\w+`` runs of the NFKC, case-folded text, as UTF-8.

    ASCII text (most of it) takes a byte-level path (``lower`` + ``translate`` +
    ``split``) that gives the same words as the regex, several times faster.
    """
    if text.isascii():
        return text.encode().lower().translate(_ASCII_WORDS).split()
    return [w.encode() for w in _WORD.findall(unicodedata.normalize("NFKC", text).casefold())]


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


def _splitmix(np: Any, x: Any) -> Any:
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
    sig, has_words, _, _, _ = _minhash([shingle_words(t) for t in texts], k, num_perm, seed)
    return sig, has_words


def _minhash(per_text: list[list[bytes]], k: int, num_perm: int, seed: int) -> tuple[Any, Any, Any, Any, Any]:
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
            h = _splitmix(np, h * np.uint64(0x9E3779B97F4A7C15) + w[starts + j])
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


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class NearDedup:
    """Drop chunks whose word shingles nearly equal a higher-scored chunk's (Jaccard).

    The same paragraph arrives from a mirror, an older revision or a quoting
    page with a word changed; exact hashing misses it. Each chunk becomes the
    set of its ``shingle_size``-word shingles (normalized words, punctuation
    ignored) and two chunks are near duplicates when their Jaccard similarity
    is at least ``threshold``.

    Chunks are visited by relevance (score, then retrieval order); a chunk that
    is a near duplicate of an already kept chunk is dropped as
    ``near_duplicate_of`` the best such survivor, which records the dropped
    copy's id in ``duplicates`` and its source in ``also_sources``. The
    higher-scored copy is therefore never the one dropped.

    ``shingle_size=3``: one changed word alters 3 of a 100-word chunk's 98
    shingles, so a one- or two-word edit stays above 0.9 while texts that
    merely share phrases fall far below; 1-word shingles ignore order, and
    5-word shingles push a single edit to the threshold.

    For up to ``minhash_above`` chunks the comparison is exact: an inverted
    index from shingle to kept chunks counts the shingles each earlier chunk
    shares with the new one, so every pair that can reach the threshold (any
    pair sharing a shingle) gets its exact Jaccard, and unrelated pairs cost
    nothing. Above it, MinHash signatures (``num_perm`` hash functions applied
    to all shingles at once with numpy) and LSH banding propose candidates,
    with the bands chosen so that a pair exactly at the threshold is proposed
    with probability >= 0.999; every candidate is then verified with the exact
    Jaccard, so both methods make the same decisions except for a (rare) pair
    the banding misses, and neither ever drops a pair below the threshold.
    ``minhash_above=200``: measured on the shared corpus, the two cost the same
    (~7 ms) at 100-200 chunks; past that the exact path grows faster than
    linearly (posting lists get longer) and is 2x slower at 1,000-2,000.

    Args:
        threshold: Jaccard similarity (0-1] at which two chunks are duplicates.
        shingle_size: Words per shingle.
        method: ``auto`` (exact up to ``minhash_above`` chunks, MinHash above),
            ``exact`` or ``minhash``.
        minhash_above: The input size at which ``auto`` switches to MinHash.
        num_perm: MinHash hash functions.
        seed: Seed of the MinHash hash functions.

    Example:
        >>> NearDedup(threshold=0.85)(chunks).report.dropped
    """

    name: ClassVar[str] = "near_dedup"
    requires: ClassVar[tuple[str, ...]] = ()
    threshold: float = bounded(0.9, 1.0)
    shingle_size: int = bounded(3, 64)
    method: Literal["auto", "exact", "minhash"] = "auto"
    minhash_above: int = bounded(200, 1_000_000)
    num_perm: int = bounded(64, 1_024, work=True)
    seed: int = bounded(1, 2**32 - 1)

    def __post_init__(self) -> None:
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 < t <= 1.0:
            raise ConfigError(
                f"threshold must be a Jaccard similarity in (0, 1]; got {t!r}. 0.9 catches copies "
                "with a word or two changed."
            )
        for name, low in (("shingle_size", 1), ("minhash_above", 0), ("num_perm", 8)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{name} must be an integer >= {low}; got {v!r}.")
        if self.method not in ("auto", "exact", "minhash"):
            raise ConfigError(f"method must be one of auto, exact, minhash; got {self.method!r}.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer; got {self.seed!r}.")

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        n = len(chunks)
        if n < 2:
            return StageResult.of(self.name, chunks, chunks)
        method = self.method
        if method == "auto":
            method = "minhash" if n > self.minhash_above else "exact"
        order = sorted(range(n), key=lambda i: _relevance_key(chunks[i]))
        sets: dict[int, frozenset[tuple[bytes, ...]]] = {}

        def shingle_set(i: int) -> frozenset[tuple[bytes, ...]]:
            s = sets.get(i)
            if s is None:
                s = sets[i] = shingles(chunks[i].text, self.shingle_size)
            return s

        t = self.threshold
        related: dict[int, int] = {}
        checked = 0
        if method == "exact":
            # every kept chunk sharing a shingle is compared, exactly: an inverted index
            # counts the shared shingles, so unrelated pairs cost nothing
            postings: dict[tuple[bytes, ...], list[int]] = {}
            position = {i: p for p, i in enumerate(order)}
            for i in order:
                a = shingle_set(i)
                shared: dict[int, int] = {}
                for sh_ in a:
                    for j in postings.get(sh_, ()):
                        shared[j] = shared.get(j, 0) + 1
                for j in sorted(shared, key=position.__getitem__):
                    checked += 1
                    inter = shared[j]
                    if inter / (len(a) + len(shingle_set(j)) - inter) >= t:
                        related[i] = j
                        break
                if i not in related:
                    for sh_ in a:
                        postings.setdefault(sh_, []).append(i)
            note = f"exact (inverted index), {checked} pairs sharing a shingle compared"
        else:
            sig, has_words, sh, first, n_sh = _minhash(
                [shingle_words(c.text) for c in chunks], self.shingle_size, self.num_perm, self.seed
            )
            hashed: dict[int, frozenset[int]] = {}

            def hashed_set(i: int) -> frozenset[int]:
                # verification on 64-bit shingle hashes: equal to the word-tuple Jaccard
                # unless two distinct shingles collide (probability ~ 2^-64 per pair)
                s = hashed.get(i)
                if s is None:
                    s = hashed[i] = frozenset(sh[first[i] : first[i] + n_sh[i]].tolist())
                return s

            bands, rows = lsh_bands(t, self.num_perm)
            keys = _band_keys(sig, bands, rows)
            buckets: list[dict[int, list[int]]] = [{} for _ in range(bands)]
            position = {i: p for p, i in enumerate(order)}
            for i in order:
                if not has_words[i]:
                    continue
                found: set[int] = set()
                row = keys[i]
                for band in range(bands):
                    hit = buckets[band].get(row[band])
                    if hit:
                        found.update(hit)
                for j in sorted(found, key=position.__getitem__):
                    checked += 1
                    if jaccard(hashed_set(i), hashed_set(j)) >= t:
                        related[i] = j
                        break
                if i not in related:
                    for band in range(bands):
                        buckets[band].setdefault(row[band], []).append(i)
            note = (
                f"minhash {self.num_perm} perms, {bands} bands × {rows} rows, {checked} candidates verified"
            )
        if not related:
            return StageResult.of(self.name, chunks, chunks, notes=(note,))
        survivors = {i: chunks[i] for i in range(n) if i not in related}
        drops: list[Drop] = []
        for i in order:  # relevance order: the folded ids read best first
            winner = related.get(i)
            if winner is None:
                continue
            survivors[winner] = fold_duplicate(survivors[winner], chunks[i])
            drops.append(
                Drop(chunks[i].id, "near_duplicate_of", related=chunks[winner].id, detail=f"jaccard >= {t}")
            )
        out = [survivors[i] for i in range(n) if i in survivors]
        return StageResult.of(self.name, chunks, out, dropped=drops, notes=(note,))


def _band_keys(sig: Any, bands: int, rows: int) -> list[list[int]]:
    """One uint64 key per (text, band): the band's rows mixed together."""
    import numpy as np

    keys = np.zeros((sig.shape[0], bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for r in range(rows):
            keys = _splitmix(np, keys * np.uint64(0x9E3779B97F4A7C15) + sig[:, r : bands * rows : rows])
    return keys.tolist()  # type: ignore[no-any-return]


# -- semantic duplicates ------------------------------------------------------------


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class SemanticDedup:
    """Drop chunks whose embedding is within cosine ``threshold`` of a higher-scored chunk's.

    Paraphrases (the same fact told by two sources) share few shingles but
    nearly the same embedding. Chunks are visited by relevance; a chunk whose
    cosine similarity with an already kept chunk is at least ``threshold`` is
    dropped as ``semantic_duplicate_of`` the best such survivor, which records
    its id and source. The better-ranked copy therefore always survives;
    LangChain's ``EmbeddingsRedundantFilter`` instead drops the *earlier*
    (better-ranked) document of a similar pair.

    Vectors come from ``chunk.embedding`` when every chunk carries one (most
    vector stores can return them; no model runs), otherwise from the
    ``embedder`` resource (``Assembler(..., embedder=SentenceTransformerEmbedder(path))``),
    which batches and caches by content. The similarity matrix is one matrix
    product; the greedy pass is one loop over chunks with vector operations.

    Args:
        threshold: Cosine similarity in (0, 1] at which two chunks are duplicates.
        use_chunk_embeddings: Use the vectors chunks carry when all have one
            (set False to always embed with the embedder).

    Raises:
        ConfigError: at call time, when chunks carry no (or not all) vectors and
            no embedder was passed.

    Example:
        >>> SemanticDedup(threshold=0.9)(chunks, embedder=embedder).report.dropped
    """

    name: ClassVar[str] = "semantic_dedup"
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ("embedder",)
    threshold: float = bounded(0.92, 1.0)
    use_chunk_embeddings: bool = True

    def __post_init__(self) -> None:
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 < t <= 1.0:
            raise ConfigError(
                f"threshold must be a cosine similarity in (0, 1]; got {t!r}. 0.92 drops paraphrases "
                "of one passage and keeps passages that merely share a topic."
            )
        if not isinstance(self.use_chunk_embeddings, bool):
            raise ConfigError(
                f"use_chunk_embeddings must be true or false; got {self.use_chunk_embeddings!r}."
            )

    def vectors(self, chunks: Sequence[Chunk], embedder: Embedder | None) -> tuple[Any, str]:
        """Unit vectors for ``chunks`` and where they came from."""
        from contextwright.embed import normalize_rows

        carried = sum(c.embedding is not None for c in chunks)
        if self.use_chunk_embeddings and carried == len(chunks):
            dims = {len(c.embedding) for c in chunks if c.embedding is not None}
            if len(dims) > 1:
                raise InputError(
                    f"chunk embeddings have different dimensions {sorted(dims)}; semantic_dedup compares "
                    "vectors of one model. Attach vectors of one model, or pass an embedder and "
                    "use_chunk_embeddings=False."
                )
            return normalize_rows([c.embedding for c in chunks]), "chunk embeddings"
        if embedder is None:
            raise ConfigError(
                f"semantic_dedup needs vectors: {len(chunks) - carried} of {len(chunks)} chunks carry no "
                "embedding and no embedder was passed. Pass embedder=SentenceTransformerEmbedder(...) "
                "(or CallableEmbedder(fn)) to Assembler (CLI: --embedder MODEL), or attach an embedding to every chunk."
            )
        return normalize_rows(embedder.embed([c.text for c in chunks])), "embedder"

    def __call__(self, chunks: Sequence[Chunk], /, *, embedder: Embedder | None = None) -> StageResult:
        n = len(chunks)
        if n < 2:
            return StageResult.of(self.name, chunks, chunks)
        import numpy as np

        vecs, origin = self.vectors(chunks, embedder)
        order = np.asarray(sorted(range(n), key=lambda i: _relevance_key(chunks[i])))
        e = vecs[order]
        t = np.float32(self.threshold) - np.float32(1e-6)  # float32 rounding of an exact copy's cosine
        sims = e @ e.T if n <= 4096 else None
        kept = np.zeros(n, dtype=bool)
        related: dict[int, int] = {}
        for p in range(n):
            row = sims[p, :p] if sims is not None else e[:p] @ e[p]
            hits = np.flatnonzero((row >= t) & kept[:p])
            if hits.size:
                related[int(order[p])] = int(order[hits[0]])
            else:
                kept[p] = True
        note = f"vectors from {origin}"
        if not related:
            return StageResult.of(self.name, chunks, chunks, notes=(note,))
        survivors = {i: chunks[i] for i in range(n) if i not in related}
        drops = []
        for p in range(n):
            i = int(order[p])
            j = related.get(i)
            if j is None:
                continue
            survivors[j] = fold_duplicate(survivors[j], chunks[i])
            cos = float(vecs[i] @ vecs[j])
            drops.append(
                Drop(chunks[i].id, "semantic_duplicate_of", related=chunks[j].id, detail=f"cosine {cos:.3f}")
            )
        out = [survivors[i] for i in range(n) if i in survivors]
        return StageResult.of(self.name, chunks, out, dropped=drops, notes=(note,))
