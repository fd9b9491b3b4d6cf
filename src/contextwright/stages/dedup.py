"""Deduplication: exact (normalized text hash).

Near-duplicate, overlap and semantic dedup live beside it in this module
family (see the document-aware stages).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from contextwright.stages.base import register_stage
from contextwright.types import Chunk, Drop, StageResult

__all__ = ["ExactDedup", "fold_duplicate", "normalize_text"]

_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: the key two copies share."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def fold_duplicate(survivor: Chunk, dropped: Chunk) -> Chunk:
    """The survivor, remembering the dropped copy's id and source for its citation."""
    sources = list(survivor.also_sources)
    for src in (dropped.source, *dropped.also_sources):
        if src and src != survivor.source and src not in sources:
            sources.append(src)
    dups = survivor.duplicates + tuple(i for i in (dropped.id, *dropped.duplicates) if i not in survivor.duplicates)
    return replace(survivor, duplicates=dups, also_sources=tuple(sources))


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ExactDedup:
    """Drop chunks whose normalized text equals a higher-scored chunk's.

    The key is a hash of the NFKC, case-folded, whitespace-collapsed text. The
    copy with the higher score survives (ties: the earlier one in retrieval
    order); the dropped copy is reported as ``duplicate_of`` and its id and
    source are recorded on the survivor, so the survivor's citation lists both
    places the text came from.

    Example:
        >>> ExactDedup()(chunks).report.dropped
    """

    name: ClassVar[str] = "exact_dedup"
    requires: ClassVar[tuple[str, ...]] = ()

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        best: dict[bytes, Chunk] = {}
        losers: list[tuple[Chunk, bytes]] = []
        for c in chunks:
            key = hashlib.blake2b(normalize_text(c.text).encode(), digest_size=16).digest()
            held = best.get(key)
            if held is None:
                best[key] = c
            elif (c.score, -c.rank) > (held.score, -held.rank):
                best[key] = c
                losers.append((held, key))
            else:
                losers.append((c, key))
        if not losers:
            return StageResult.of(self.name, chunks, chunks)
        folded = dict(best)
        drops: list[Drop] = []
        for loser, key in losers:
            folded[key] = fold_duplicate(folded[key], loser)
            drops.append(Drop(loser.id, "duplicate_of", related=best[key].id))
        survivors = {c.id: c for c in folded.values()}
        out = [survivors[c.id] for c in chunks if c.id in survivors]
        return StageResult.of(self.name, chunks, out, dropped=drops)
