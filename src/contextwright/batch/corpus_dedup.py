"""Near-duplicate detection over a whole corpus (a million chunks), with MinHash LSH.

The ``near_dedup`` stage compares the 20-200 chunks of one retrieval. Before
indexing, a corpus wants the same question answered once for all its chunks:
which chunks are near copies of an earlier one (mirrors, revisions, quoting
pages)? :func:`near_duplicate_pairs` answers it in roughly linear time and
bounded memory:

1. The corpus is streamed in batches; each chunk's ``k``-word shingles
   (normalized as in ``near_dedup``) get ``num_perm`` MinHash values,
   computed with numpy for a whole batch at once. Only the signatures
   (``num_perm`` × 4 bytes per chunk) are kept.
2. LSH banding: per band, chunks are sorted by the band's key and equal keys
   form buckets; a bucket's members become candidate pairs (every pair in a
   bucket of up to 16 members, else each member with the bucket's first).
   The bands are chosen so that a pair exactly at the threshold becomes a
   candidate with probability >= 0.999 (:func:`~contextwright.stages.dedup.lsh_bands`).
3. Every candidate is verified with the exact Jaccard of its shingle sets
   (a second pass reads only the texts involved), so no reported pair is
   below the threshold.

Example:
    >>> result = near_duplicate_pairs(texts, threshold=0.9)
    >>> [(p.a, p.b, p.jaccard) for p in result.pairs][:3]

From the command line: ``contextwright dedup-corpus corpus.jsonl.gz --out pairs.jsonl``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextwright.core.errors import ConfigError, missing_extra
from contextwright.stages.shingles import (
    band_key_array,
    jaccard,
    lsh_bands,
    minhash,
    shingle_words,
    shingles,
)

__all__ = ["CorpusDedupResult", "NearPair", "near_duplicate_pairs"]

_ALL_PAIRS_UP_TO = 16


@dataclass(frozen=True, slots=True)
class NearPair:
    """Chunks at positions ``a < b`` whose shingle sets have Jaccard ``jaccard`` >= the threshold."""

    a: int
    b: int
    jaccard: float


@dataclass(frozen=True, slots=True)
class CorpusDedupResult:
    """The verified pairs, the clusters they form, and what it cost.

    Attributes:
        pairs: Verified near-duplicate pairs, sorted by ``(a, b)``.
        duplicates: Positions that are near copies of an earlier chunk of their
            cluster (the cluster's first chunk is kept): what to drop.
        chunks: Chunks read.
        candidates: Candidate pairs the LSH proposed (all verified).
        bands: LSH bands × rows.
        seconds: Wall time of signatures, banding and verification.
    """

    pairs: tuple[NearPair, ...]
    duplicates: frozenset[int]
    chunks: int
    candidates: int
    bands: tuple[int, int]
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)


def _check(threshold: float, shingle_size: int, num_perm: int, batch: int, workers: int) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
        raise ConfigError(f"threshold must be a Jaccard similarity in (0, 1]; got {threshold!r}.")
    for name, v, low in (
        ("shingle_size", shingle_size, 1),
        ("num_perm", num_perm, 8),
        ("batch", batch, 1),
        ("workers", workers, 1),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ConfigError(f"{name} must be an integer >= {low}; got {v!r}.")


def _signatures(texts: list[str], k: int, num_perm: int, seed: int) -> tuple[Any, Any]:
    sig, has_words, _, _, _ = minhash([shingle_words(t) for t in texts], k, num_perm, seed)
    return sig, has_words


def _ordered(
    pool: Any, parts: Iterator[list[str]], settings: tuple[int, int, int], ahead: int
) -> Iterator[Any]:
    """Signatures of each part from the pool, in order, with at most ``ahead`` parts in flight."""
    from collections import deque

    pending: deque[Any] = deque()
    for part in parts:
        pending.append(pool.submit(_signatures, part, *settings))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _candidates(np: Any, keys: Any, valid: Any) -> Any:
    """Candidate pairs ``a * n + b`` (a < b) from every band's buckets, unique."""
    n = keys.shape[0]
    idx = np.flatnonzero(valid)
    found = []
    for band in range(keys.shape[1]):
        col = keys[idx, band]
        order = np.argsort(col, kind="stable")
        members = idx[order]
        sorted_keys = col[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
        sizes = np.diff(np.concatenate((starts, [len(sorted_keys)])))
        multi = sizes > 1
        if not multi.any():
            continue
        g_start, g_size = starts[multi], sizes[multi]
        # each member with its bucket's first member (members are in corpus order: a stable sort)
        rep = np.repeat(members[g_start], g_size - 1)
        pos = np.repeat(g_start, g_size - 1) + (
            np.arange(int((g_size - 1).sum()))
            - np.repeat(np.cumsum(g_size - 1) - (g_size - 1), g_size - 1)
            + 1
        )
        other = members[pos]
        found.append(rep.astype(np.int64) * n + other)
        # small buckets: every pair, not only those with the first member
        for s, g in zip(
            g_start[(g_size > 2) & (g_size <= _ALL_PAIRS_UP_TO)],
            g_size[(g_size > 2) & (g_size <= _ALL_PAIRS_UP_TO)],
            strict=True,
        ):
            group = members[s : s + g]
            pairs = [a * n + b for a, b in itertools.combinations(sorted(group.tolist()), 2)]
            found.append(np.array(pairs, dtype=np.int64))
    if not found:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(found))


def near_duplicate_pairs(
    texts: Iterable[str],
    *,
    threshold: float = 0.9,
    shingle_size: int = 3,
    num_perm: int = 32,
    seed: int = 1,
    batch: int = 20_000,
    reread: Callable[[set[int]], dict[int, str]] | None = None,
    progress: Callable[[int], None] | None = None,
    workers: int = 1,
) -> CorpusDedupResult:
    """Find every pair of near-duplicate chunks in a corpus (Jaccard of word shingles >= ``threshold``).

    Args:
        texts: The chunks' texts, in corpus order (streamed; pass a generator).
        threshold: Jaccard similarity at which two chunks are near duplicates.
        shingle_size: Words per shingle (as the ``near_dedup`` stage).
        num_perm: MinHash hash functions (32: 10 bands × 3 rows at 0.8, 8 × 4 at 0.9).
        seed: Seed of the hash functions.
        batch: Texts hashed together (bounds the temporary memory).
        reread: ``reread(positions) -> {position: text}`` for verification; by
            default the texts of candidate pairs are kept from the first pass,
            which needs ``texts`` to be a sequence.
        progress: Called with the number of chunks hashed after each batch.
        workers: Processes computing signatures (batches in order; same result).

    Returns:
        The verified pairs and the duplicate positions (see :class:`CorpusDedupResult`).
    """
    _check(threshold, shingle_size, num_perm, batch, workers)
    try:
        import numpy as np
    except ImportError:
        raise missing_extra("numpy", "semantic") from None
    if reread is None and not isinstance(texts, Sequence):
        texts = list(texts)
    start = time.perf_counter()
    sigs, valid, count = _all_signatures(texts, batch, (shingle_size, num_perm, seed), workers, progress)
    t_sig = time.perf_counter()
    bands, rows = lsh_bands(threshold, num_perm)
    if not sigs:
        return CorpusDedupResult((), frozenset(), 0, 0, (bands, rows), 0.0)
    sig_all = np.concatenate(sigs)
    valid_all = np.concatenate(valid)
    del sigs
    keys = band_key_array(sig_all, bands, rows)
    del sig_all
    cand = _candidates(np, keys, valid_all)
    del keys
    t_lsh = time.perf_counter()
    n = count
    a_pos, b_pos = (cand // n).tolist(), (cand % n).tolist()
    needed = set(a_pos) | set(b_pos)
    if reread is not None:
        source = reread(needed)
    else:
        assert isinstance(texts, Sequence)
        source = {i: texts[i] for i in needed}
    pairs = _verified(a_pos, b_pos, source, shingle_size, threshold)
    duplicates = _clustered(pairs)
    end = time.perf_counter()
    return CorpusDedupResult(
        pairs=tuple(pairs),
        duplicates=duplicates,
        chunks=n,
        candidates=len(a_pos),
        bands=(bands, rows),
        seconds=end - start,
        timings={"signatures": t_sig - start, "lsh": t_lsh - t_sig, "verify": end - t_lsh},
    )


def _all_signatures(
    texts: Iterable[str],
    batch: int,
    settings: tuple[int, int, int],
    workers: int,
    progress: Callable[[int], None] | None,
) -> tuple[list[Any], list[Any], int]:
    """The MinHash signatures of every text, batch by batch (in worker processes when
    ``workers > 1``), in input order: ``(signatures, has_words, count)``."""
    sigs, valid = [], []
    count = 0
    it = iter(texts)
    parts = iter(lambda: list(itertools.islice(it, batch)), [])
    if workers == 1:
        results: Iterator[tuple[Any, Any]] = (_signatures(part, *settings) for part in parts)
        pool = None
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        results = _ordered(pool, parts, settings, ahead=2 * workers)
    try:
        for sig, has_words in results:
            sigs.append(sig)
            valid.append(has_words)
            count += len(has_words)
            if progress is not None:
                progress(count)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return sigs, valid, count


def _verified(
    a_pos: list[int], b_pos: list[int], source: Mapping[int, str], shingle_size: int, threshold: float
) -> list[NearPair]:
    """The candidate pairs whose exact shingle Jaccard reaches ``threshold``."""
    pairs = []
    # verify in blocks of candidates (sorted by a), holding only the block's shingle sets
    step = 100_000
    for at in range(0, len(a_pos), step):
        block = list(zip(a_pos[at : at + step], b_pos[at : at + step], strict=True))
        sets = {i: shingles(source[i], shingle_size) for pair in block for i in pair}
        for a, b in block:
            j = jaccard(sets[a], sets[b])
            if j >= threshold:
                pairs.append(NearPair(a, b, round(j, 6)))
        del sets
    return pairs


def _clustered(pairs: list[NearPair]) -> frozenset[int]:
    """The duplicates: union-find over the verified pairs, each cluster keeping its first chunk."""
    # clusters: union-find over verified pairs; each cluster keeps its first chunk
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    for p in pairs:
        ra, rb = find(p.a), find(p.b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return frozenset(x for x in {p.b for p in pairs} | {p.a for p in pairs} if find(x) != x)


def iter_texts(path: str, *, field: str = "text") -> Iterator[str]:
    """The ``text`` of every chunk of a corpus, in order, through the one input reader.

    JSON Lines, a JSON array of chunk objects, ``.gz`` of either, or Parquet:
    what ``index`` and ``assemble`` accept.
    """
    from contextwright.core.errors import InputError
    from contextwright.inputs.readers import read_records

    for record in read_records(path, need="chunks", command="dedup-corpus"):
        value = record.data.get(field)
        if not isinstance(value, str):
            raise InputError(f"{record.where}: {field!r} must be a string; got {type(value).__name__}.")
        yield value
