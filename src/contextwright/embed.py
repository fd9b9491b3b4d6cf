"""Compatibility path: the code lives in ``contextwright.clients.embed``."""

from contextwright.clients.embed import (
    DEFAULT_CACHE_SIZE,
    CallableEmbedder,
    Embedder,
    EmbeddingCache,
    LazyModel,
    SentenceTransformerEmbedder,
    _CachedEmbedder,
    _key,
    _np,
    logger,
    normalize_rows,
)

__all__ = [
    "CallableEmbedder",
    "DEFAULT_CACHE_SIZE",
    "Embedder",
    "EmbeddingCache",
    "LazyModel",
    "SentenceTransformerEmbedder",
    "_CachedEmbedder",
    "_key",
    "_np",
    "logger",
    "normalize_rows",
]
