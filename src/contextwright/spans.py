"""Compatibility path: the code lives in ``contextwright.model.spans`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.model.spans import Span as Span
from contextwright.model.spans import compose as compose
from contextwright.model.spans import join_pieces as join_pieces
from contextwright.model.spans import pieces_of as pieces_of
