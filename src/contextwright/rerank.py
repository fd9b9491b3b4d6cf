"""Compatibility path: the code lives in ``contextwright.clients.rerank``."""

# ruff: noqa: F401

from contextwright.clients.rerank import CrossEncoderReranker, Reranker, logger

__all__ = ["CrossEncoderReranker", "Reranker", "logger"]
