"""Stable order across turns, so a provider's prompt cache stays warm.

Providers cache the longest identical prompt prefix (OpenAI's automatic
prefix caching, Anthropic's ``cache_control`` breakpoints, vLLM's prefix
caching). In a conversation, the context of turn ``t + 1`` usually keeps
some blocks of turn ``t``; :class:`StableOrder` puts those survivors first,
in their previous order, and appends the new blocks after them in the
pipeline's order. A survivor keeps its position, hence its citation number
and its bytes, as long as every block before it survived too; the assembler
reports how many tokens of the new context equal the previous one's prefix
(``report.stable_prefix_tokens``).

Enable it with ``Assembler(..., stable_order=True)`` and pass ``session=`` (the
assembler remembers the last context of each session) or ``previous=`` (the
previous :class:`AssembledContext` or its ``to_dict()``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from contextwright.model.chunk import Chunk
from contextwright.model.report import StageResult
from contextwright.stages.base import register_stage

__all__ = ["StableOrder"]


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class StableOrder:
    """Previous blocks first, in their previous order; new blocks after them.

    Runs after the order stage. Without a previous context (the first turn)
    it keeps the order it is given. Blocks are matched by the input chunk ids
    they stand for.

    Example:
        >>> asm = Assembler("qa", budget=1000, stable_order=True)
        >>> asm.assemble(q1, hits1, session="u42"); ctx = asm.assemble(q2, hits2, session="u42")
        >>> ctx.report.stable_prefix_tokens
    """

    name: ClassVar[str] = "stable_order"
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ("previous",)

    def __call__(
        self, chunks: Sequence[Chunk], /, *, previous: Sequence[tuple[str, ...]] = ()
    ) -> StageResult:
        if not previous:
            return StageResult.of(self.name, chunks, chunks, notes=("no previous context",))
        where = {key: i for i, key in enumerate(previous)}
        old = sorted((c for c in chunks if c.member_ids in where), key=lambda c: where[c.member_ids])
        new = [c for c in chunks if c.member_ids not in where]
        out = [replace(c, rank=i) for i, c in enumerate([*old, *new])]
        in_place = 0
        for i, c in enumerate(old):
            if where[c.member_ids] != i:
                break
            in_place += 1
        notes = (
            f"{len(old)} of {len(previous)} previous blocks kept ({in_place} in place), {len(new)} new appended",
        )
        return StageResult.of(self.name, chunks, out, notes=notes)
