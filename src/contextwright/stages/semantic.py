"""Semantic dedup: cosine similarity of the embeddings the chunks carry, or of an embedder's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from contextwright.core.errors import ConfigError, InputError
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import Drop, StageResult
from contextwright.stages.base import register_stage

if TYPE_CHECKING:
    from contextwright.clients.embed import Embedder
from contextwright.stages.dedup import fold_duplicate
from contextwright.stages.filter import relevance_key

__all__ = ["SemanticDedup"]

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
                "of one passage and keeps passages that merely share a topic.",
                loc=("threshold",),
            )
        if not isinstance(self.use_chunk_embeddings, bool):
            raise ConfigError(
                f"use_chunk_embeddings must be true or false; got {self.use_chunk_embeddings!r}.",
                loc=("use_chunk_embeddings",),
            )

    def vectors(self, chunks: Sequence[Chunk], embedder: Embedder | None) -> tuple[Any, str]:
        """Unit vectors for ``chunks`` and where they came from."""
        from contextwright.clients.embed import normalize_rows

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
        order = np.asarray(sorted(range(n), key=lambda i: relevance_key(chunks[i])))
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
