"""Compatibility path: the code lives in ``contextwright.batch.corpus_dedup`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.batch.corpus_dedup import CorpusDedupResult as CorpusDedupResult
from contextwright.batch.corpus_dedup import NearPair as NearPair
from contextwright.batch.corpus_dedup import near_duplicate_pairs as near_duplicate_pairs
