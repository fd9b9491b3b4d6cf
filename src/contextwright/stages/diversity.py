"""Diversity under the budget: maximal marginal relevance per token.

:class:`MMRBudget` is a selection stage (use it instead of ``token_budget``):
it fills the same exact budget, but picks each next block by maximal marginal
relevance (Carbonell & Goldstein, SIGIR 1998),

    MR(c) = λ · rel(c) − (1 − λ) · max_{s ∈ selected} cos(c, s)

where ``rel`` is the chunk's score as a share of the best score (min-max
scaled to 0-1 when some score is negative)
and ``cos`` the cosine of their embeddings (the vectors chunks carry, else
the ``embedder`` resource). It is token-aware: among the candidates that
still fit, it takes the one with the highest gain per token,
``(MR(c) + 1 − λ) / cost(c) ** r`` (``cost_exponent`` r, default 0.5; 1 = per token) (the shift makes every gain non-negative, so a
cheaper chunk of equal value wins and a poor chunk never wins by being
short), with ``cost`` the block's rendered cost as the pipeline counts it
(header, body, footer, a new document's header). ``cost_exponent=0`` picks by
MR alone, as classic MMR does. What does not fit is reported ``over_budget``;
the kept blocks keep their input order for the order stage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from contextwright.core.errors import ConfigError
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import Drop, StageResult
from contextwright.render.meter import Meter
from contextwright.stages.base import register_stage

__all__ = ["MMRBudget"]


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class MMRBudget:
    """Select blocks by maximal marginal relevance per token, within the exact budget.

    Args:
        lambda_mult: λ, from 0 (only diversity) to 1 (only relevance); default 0.7.
        cost_exponent: ``r`` in ``gain / cost**r``: 1 is marginal relevance per
            token, 0 classic per-block MMR; default 0.5. Measured on NQ dev at
            500 tokens (``bench/bench_fusion.py``), full per-token selection
            favours short weak chunks and loses answers; 0.5 keeps most of them.

    Example:
        >>> Assembler({"stages": [{"type": "exact_dedup"}, {"type": "mmr", "lambda_mult": 0.7},
        ...                       {"type": "auto_order"}]}, budget=500, embedder=embedder)
    """

    name: ClassVar[str] = "mmr"
    requires: ClassVar[tuple[str, ...]] = ("meter", "budget")
    optional: ClassVar[tuple[str, ...]] = ("embedder",)
    lambda_mult: float = bounded(0.7, 1.0)
    cost_exponent: float = bounded(0.5, 2.0)

    def __post_init__(self) -> None:
        v = self.lambda_mult
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ConfigError(
                f"mmr lambda_mult must be a number from 0 to 1; got {v!r}.", loc=("lambda_mult",)
            )
        r = self.cost_exponent
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r < 0:
            raise ConfigError(
                f"mmr cost_exponent must be a number from 0 (classic MMR) to 2; got {r!r}. 1 = per token.",
                loc=("cost_exponent",),
            )

    def __call__(
        self, chunks: Sequence[Chunk], /, *, meter: Meter, budget: int, embedder: Any = None
    ) -> StageResult:
        if not chunks:
            return StageResult.of(self.name, chunks, ())
        vectors = _vectors(chunks, embedder)
        meter.prime(chunks)
        n = len(chunks)
        scores = [c.score for c in chunks]
        lo, hi = min(scores), max(scores)
        if lo >= 0 and hi > 0:  # scores on a ratio scale (BM25, fused, cosine > 0): a share of the best
            rel = [s / hi for s in scores]
        else:
            rel = [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]
        room = budget - meter.frame_cost()
        lam, r = float(self.lambda_mult), float(self.cost_exponent)
        max_sim = [0.0] * n  # to the selected set; nothing selected yet
        candidates = set(range(n))
        chosen: list[int] = []
        docs: set[str] = set()
        while candidates:
            best, best_value = -1, -math.inf
            for i in sorted(candidates):
                c = chunks[i]
                cost = meter.added_cost(c, n, docs)
                if cost > room:
                    continue
                mr = lam * rel[i] - (1 - lam) * max_sim[i] if chosen else lam * rel[i]
                value = (mr + 1 - lam) / max(cost, 1) ** r if r else mr
                if value > best_value:
                    best, best_value = i, value
            if best < 0:
                break
            c = chunks[best]
            room -= meter.added_cost(c, n, docs)
            docs.add(c.group_key)
            chosen.append(best)
            candidates.discard(best)
            sims = vectors @ vectors[best]
            for i in candidates:
                max_sim[i] = max(max_sim[i], float(sims[i]))
        keep = set(chosen)
        out = [c for i, c in enumerate(chunks) if i in keep]
        drops = [
            Drop(
                c.id, "over_budget", detail=f"{meter.tokens(c)} tokens; not selected by MMR within the budget"
            )
            for i, c in enumerate(chunks)
            if i not in keep
        ]
        notes = (f"λ={lam:g}, cost exponent {r:g}; picked in order {chosen}",)
        return StageResult.of(self.name, chunks, out, dropped=drops, notes=notes)


def _vectors(chunks: Sequence[Chunk], embedder: Any) -> Any:
    """Unit vectors: the ones every chunk carries, else the embedder's."""
    import numpy as np

    if all(c.embedding is not None for c in chunks):
        m = np.asarray([c.embedding for c in chunks], dtype=np.float32)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return m / norms
    if embedder is None:
        raise ConfigError(
            "the mmr stage needs vectors: give every chunk an 'embedding', or pass an embedder, "
            "e.g. Assembler(..., embedder=SentenceTransformerEmbedder('/models/all-MiniLM-L6-v2'))."
        )
    return embedder.embed([c.text for c in chunks])
