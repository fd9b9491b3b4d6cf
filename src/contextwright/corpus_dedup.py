"""Compatibility path: the code lives in ``contextwright.batch.corpus_dedup``."""

from contextwright.batch.corpus_dedup import (
    _ALL_PAIRS_UP_TO,
    CorpusDedupResult,
    NearPair,
    _band_keys,
    _candidates,
    _check,
    _ordered,
    _signatures,
    iter_texts,
    near_duplicate_pairs,
)

__all__ = [
    "CorpusDedupResult",
    "NearPair",
    "_ALL_PAIRS_UP_TO",
    "_band_keys",
    "_candidates",
    "_check",
    "_ordered",
    "_signatures",
    "iter_texts",
    "near_duplicate_pairs",
]
