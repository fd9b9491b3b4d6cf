"""Compatibility path: the code lives in ``contextwright.clients.rerank``."""

from contextwright.clients.rerank import CrossEncoderReranker, Reranker, logger

__all__ = ["CrossEncoderReranker", "Reranker", "logger"]
