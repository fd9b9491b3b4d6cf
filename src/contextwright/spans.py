"""Compatibility path: the code lives in ``contextwright.model.spans``."""

from contextwright.model.spans import Span, _trimmed, compose, join_pieces, pieces_of

__all__ = ["Span", "_trimmed", "compose", "join_pieces", "pieces_of"]
