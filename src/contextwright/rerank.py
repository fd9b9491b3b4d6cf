"""Compatibility path: the code lives in ``contextwright.clients.rerank`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.clients.rerank import CrossEncoderReranker as CrossEncoderReranker
from contextwright.clients.rerank import Reranker as Reranker
