"""Compatibility path: the code lives in ``contextwright.core.sentences`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.core.sentences import sentences as sentences
from contextwright.core.sentences import split_sentences as split_sentences
