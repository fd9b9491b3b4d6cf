"""Relevance by meaning: a query-chunk similarity floor, and reranking.

* :class:`SimilarityFilter` drops chunks whose cosine similarity to the query
  (with the ``embedder`` resource) is below a floor: a retriever's score is
  on its own scale (BM25 has no fixed range), a cosine is comparable across
  retrievers. Dropped chunks are reported as ``below_similarity`` with the value.
* :class:`Rerank` scores every chunk with the ``reranker`` resource
  (:class:`contextwright.clients.rerank.Reranker`: ``score(query, texts) -> scores``,
  e.g. a cross-encoder), replaces the scores, re-sorts, and records each
  chunk's old and new rank and score in the report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from contextwright.core.errors import ConfigError
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, Drop, StageResult
from contextwright.stages.base import register_stage
from contextwright.stages.filter import by_relevance

__all__ = ["Rerank", "SimilarityFilter", "query_similarities"]


def query_similarities(query: str, chunks: Sequence[Chunk], embedder: Any) -> list[float]:
    """Cosine similarity of each chunk's text to ``query`` (unit vectors from ``embedder``)."""
    if not chunks:
        return []
    vectors = embedder.embed([query, *(c.text for c in chunks)])
    q = vectors[0]
    return [float(v @ q) for v in vectors[1:]]


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class SimilarityFilter:
    """Drop chunks whose query cosine is below ``min_similarity`` (reason ``below_similarity``).

    Args:
        min_similarity: The floor, from -1 to 1 (default 0.2). For
            all-MiniLM-L6-v2 on NQ, answer-bearing chunks mostly score above
            0.3 and unrelated ones below 0.15.

    Example:
        >>> Assembler({"stages": [{"type": "min_similarity", "min_similarity": 0.25}, ...]},
        ...           budget=1000, embedder=SentenceTransformerEmbedder("/models/all-MiniLM-L6-v2"))
    """

    name: ClassVar[str] = "min_similarity"
    requires: ClassVar[tuple[str, ...]] = ("query", "embedder")
    min_similarity: float = bounded(0.2, 1.0)  # a cosine: -1 to 1

    def __post_init__(self) -> None:
        v = self.min_similarity
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):  # -1..1: bounded()
            raise ConfigError(
                f"min_similarity must be a cosine from -1 to 1; got {v!r}.", loc=("min_similarity",)
            )

    def __call__(self, chunks: Sequence[Chunk], /, *, query: str, embedder: Any) -> StageResult:
        sims = query_similarities(query, chunks, embedder)
        keep = [c for c, s in zip(chunks, sims, strict=True) if s >= self.min_similarity]
        drops = [
            Drop(c.id, "below_similarity", detail=f"cosine {s:.4f} < {self.min_similarity:g}")
            for c, s in zip(chunks, sims, strict=True)
            if s < self.min_similarity
        ]
        return StageResult.of(self.name, chunks, keep, dropped=drops)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class Rerank:
    """Re-score chunks with the ``reranker`` resource and re-sort by the new scores.

    Every chunk gets the reranker's score as ``score`` and its new position as
    ``rank``; the report lists, per chunk, ``rank a -> b`` and the old and new
    scores. ``top_n`` keeps only the best ``n`` after reranking (the rest are
    dropped as ``top_k``).

    Args:
        top_n: Keep this many after reranking (1 to 10,000), or all (default).

    Example:
        >>> Assembler({"stages": [{"type": "rerank"}, {"type": "token_budget"}, {"type": "score_order"}]},
        ...           budget=1000, reranker=CrossEncoderReranker("/models/ms-marco-MiniLM-L-6-v2"))
    """

    name: ClassVar[str] = "rerank"
    requires: ClassVar[tuple[str, ...]] = ("query", "reranker")
    top_n: int | None = bounded(None, 10_000)

    def __post_init__(self) -> None:
        n = self.top_n
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ConfigError(
                f"rerank top_n must be an integer from 1 to 10,000, or null for all; got {n!r}.",
                loc=("top_n",),
            )

    def __call__(self, chunks: Sequence[Chunk], /, *, query: str, reranker: Any) -> StageResult:
        if not chunks:
            return StageResult.of(self.name, chunks, ())
        scores = list(reranker.score(query, [c.text for c in chunks]))
        if len(scores) != len(chunks):
            raise ConfigError(
                f"the reranker returned {len(scores)} scores for {len(chunks)} texts; "
                "score(query, texts) must return one number per text, in order."
            )
        before = {c.id: i for i, c in enumerate(by_relevance(chunks))}
        rescored = []
        for c, s in zip(chunks, scores, strict=True):
            value = float(s)
            if not math.isfinite(value):
                raise ConfigError(f"the reranker returned {s!r} for chunk {c.id!r}; scores must be finite.")
            rescored.append(replace(c, score=value))
        ranked = sorted(rescored, key=lambda c: (-c.score, before[c.id]))
        old = {c.id: c.score for c in chunks}
        out = [replace(c, rank=i) for i, c in enumerate(ranked)]
        changes = [
            Change(
                c.id,
                "reranked",
                detail=f"rank {before[c.id] + 1} -> {i + 1}, score {old[c.id]:g} -> {c.score:g}",
            )
            for i, c in enumerate(out)
        ]
        drops: list[Drop] = []
        if self.top_n is not None and len(out) > self.top_n:
            drops = [
                Drop(c.id, "top_k", detail=f"not in the reranker's top {self.top_n}")
                for c in out[self.top_n :]
            ]
            out = out[: self.top_n]
        return StageResult.of(self.name, chunks, out, dropped=drops, changed=changes)
