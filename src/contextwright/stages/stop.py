"""The budget as a ceiling: stop adding chunks when the ranked list says the rest is weak.

The rule (``relevance_stop``), one paragraph: scores are normalised per list, as
``(score - min) / (top - min)`` over the candidates, so BM25 scores, cosine similarities (flat,
0.3–0.8), reranker logits (negative) and fused lists all map the best chunk to 1 and the worst to
0. Walking the chunks in rank order, each is kept while the tokens kept so far are below a floor
(``min_tokens``, default 200), and after that only while its normalised score is at least
``min_relative`` (default 0.2); the first chunk under the threshold past the floor ends the walk,
and it and every chunk ranked below it are dropped with reason ``below_relevance`` and the numbers
that decided it. The budget stays the ceiling: ``token_budget`` after this stage fills from what
is left. The threshold never exceeds the top score (it is computed so that it cannot overflow,
even for scores of ±1e308), so a chunk holding the top score is never dropped. A list without usable scores (fewer than two distinct finite scores, or any NaN) keeps
every chunk, and the stage's note says why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from contextwright.core.errors import ConfigError
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import Drop, StageResult
from contextwright.render.meter import Meter
from contextwright.stages.base import register_stage
from contextwright.stages.filter import by_relevance

__all__ = ["RelevanceStop"]


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class RelevanceStop:
    """Keep chunks in rank order while their per-list normalised score is high enough.

    Args:
        min_relative: The threshold on ``(score - min) / (top - min)``, 0–1 (default 0.2).
        min_tokens: The floor: chunks are kept regardless of score until their bodies hold
            this many tokens (default 200; never more than the budget).

    Example:
        >>> RelevanceStop(min_relative=0.2)(chunks, meter=meter, budget=1000)
    """

    name: ClassVar[str] = "relevance_stop"
    requires: ClassVar[tuple[str, ...]] = ("meter", "budget")
    min_relative: float = bounded(0.2, 1.0)
    min_tokens: int = bounded(200, 10_000_000)

    def __post_init__(self) -> None:
        r = self.min_relative
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not (0.0 <= r <= 1.0):
            raise ConfigError(
                f"relevance_stop.min_relative must be a number from 0 to 1; got {r!r}. Use e.g. 0.2.",
                loc=("min_relative",),
            )
        t = self.min_tokens
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise ConfigError(
                f"relevance_stop.min_tokens must be a non-negative integer; got {t!r}. Use e.g. 200.",
                loc=("min_tokens",),
            )

    def __call__(self, chunks: Sequence[Chunk], /, *, meter: Meter, budget: int) -> StageResult:
        if not chunks:
            return StageResult.of(self.name, chunks, ())
        scores = [c.score for c in chunks]
        if any(math.isnan(s) for s in scores):
            return StageResult.of(self.name, chunks, chunks, notes=["scores include NaN: every chunk kept"])
        finite = [s for s in scores if math.isfinite(s)]
        if len(set(finite)) < 2:
            why = "all chunks have the same score" if finite else "no finite scores"
            return StageResult.of(
                self.name, chunks, chunks, notes=[f"{why}: no usable scores, every chunk kept"]
            )
        top, low = max(finite), min(finite)
        threshold = _threshold(low, top, self.min_relative)
        floor = min(self.min_tokens, budget)
        ranked = by_relevance(chunks)
        tokens = 0
        cut = len(ranked)
        for i, c in enumerate(ranked):
            if tokens >= floor and c.score < threshold:
                cut = i
                break
            tokens += meter.tokens(c)
        rule = (
            f"threshold {threshold:.4g} = lowest {low:.4g} + min_relative {self.min_relative:g} × "
            f"(top {top:.4g} − lowest {low:.4g})"
        )
        by_floor = sum(1 for c in ranked[:cut] if c.score < threshold)
        floor_note = (
            f"; {by_floor} chunk{'s' if by_floor != 1 else ''} under the threshold kept by the "
            f"{floor:,}-token floor (min_tokens: the first tokens are kept whatever their score)"
            if by_floor
            else ""
        )
        if cut == len(ranked):
            return StageResult.of(
                self.name,
                chunks,
                chunks,
                notes=[f"every chunk kept: past the floor, each scored at or above the {rule}{floor_note}"],
            )
        below = {c.id for c in ranked[cut:]}
        keep = [c for c in chunks if c.id not in below]
        drops = [
            Drop(
                c.id,
                "below_relevance",
                detail=(
                    f"score {c.score:.4g} < threshold {threshold:.4g} (top {top:.4g}, lowest {low:.4g}, "
                    f"min_relative {self.min_relative:g}) after {tokens} tokens (floor {floor})"
                ),
            )
            for c in ranked[cut:]
        ]
        note = (
            f"stopped after {cut} of {len(ranked)} chunks ({tokens:,} body tokens, budget {budget:,}): "
            f"the next scored {ranked[cut].score:.4g} < {rule}{floor_note}"
        )
        return StageResult.of(self.name, chunks, keep, dropped=drops, notes=[note])


def _threshold(low: float, top: float, r: float) -> float:
    """``low + r * (top - low)``, finite and within ``[low, top]`` for any finite scores.

    ``top - low`` overflows to inf when the scores span more than a float holds (1e308 and
    -1e308), which made the threshold inf (or NaN for ``r = 0``) and dropped the best chunks.
    Then the convex form ``low * (1 - r) + top * r`` is used: its terms have opposite signs, so
    it cannot overflow. Scores in the ordinary range keep the exact expression they always had.
    """
    span = top - low
    threshold = low + r * span if math.isfinite(span) else low * (1.0 - r) + top * r
    return min(max(threshold, low), top)
