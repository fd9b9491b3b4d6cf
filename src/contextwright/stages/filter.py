"""Filters: a relevance floor and top-k."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from contextwright.core.errors import ConfigError
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import Drop, StageResult
from contextwright.stages.base import register_stage

__all__ = ["MinScoreFilter", "TopKFilter", "by_relevance", "relevance_key"]


def relevance_key(chunk: Chunk) -> tuple[float, int]:
    """The relevance order, smallest first: the higher score, then the earlier retrieval rank.

    The one spelling of ``(-score, rank)``: sorting, picking the best of a
    group and choosing which copy survives all use it.
    """
    return (-chunk.score, chunk.rank)


def by_relevance(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Chunks sorted by score (highest first), ties kept in retrieval order."""
    return sorted(chunks, key=relevance_key)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class MinScoreFilter:
    """Drop chunks whose score is below a floor (reason ``below_min_score``).

    Scores are compared as given: use the scale of your retriever or reranker.

    Example:
        >>> MinScoreFilter(min_score=0.3)(chunks).chunks
    """

    name: ClassVar[str] = "min_score"
    requires: ClassVar[tuple[str, ...]] = ()
    min_score: float = bounded(0.0, 1e9)

    def __post_init__(self) -> None:
        if (
            isinstance(self.min_score, bool)
            or not isinstance(self.min_score, (int, float))
            or not math.isfinite(self.min_score)
        ):
            raise ConfigError(
                f"min_score must be a finite number; got {self.min_score!r}.", loc=("min_score",)
            )

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        keep = [c for c in chunks if c.score >= self.min_score]
        drops = [
            Drop(c.id, "below_min_score", detail=f"score {c.score:g} < {self.min_score:g}")
            for c in chunks
            if c.score < self.min_score
        ]
        return StageResult.of(self.name, chunks, keep, dropped=drops)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class TopKFilter:
    """Keep the ``k`` highest-scored chunks (ties in retrieval order); drop the rest as ``top_k``.

    The kept chunks stay in their input order; ordering is a later stage's job.
    """

    name: ClassVar[str] = "top_k"
    requires: ClassVar[tuple[str, ...]] = ()
    k: int = bounded(20, 100_000)

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 0:
            raise ConfigError(f"k must be a non-negative integer; got {self.k!r}.", loc=("k",))

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        best = {c.id for c in by_relevance(chunks)[: self.k]}
        keep = [c for c in chunks if c.id in best]
        drops = [Drop(c.id, "top_k", detail=f"not in the top {self.k}") for c in chunks if c.id not in best]
        return StageResult.of(self.name, chunks, keep, dropped=drops)
