"""Compatibility path: the code lives in ``contextwright.clients.embed`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.clients.embed import CallableEmbedder as CallableEmbedder
from contextwright.clients.embed import Embedder as Embedder
from contextwright.clients.embed import EmbeddingCache as EmbeddingCache
from contextwright.clients.embed import LazyModel as LazyModel
from contextwright.clients.embed import SentenceTransformerEmbedder as SentenceTransformerEmbedder
from contextwright.clients.embed import normalize_rows as normalize_rows
