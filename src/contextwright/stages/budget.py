"""Selection: fit chunks into the documents budget.

Costs are the rendered cost of each block in the configured format (header,
escaped body, footer), plus each document's header once and the frame once,
so what is selected is what the final string is made of. The pipeline then
checks the final string exactly (invariant 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from contextwright.errors import ConfigError
from contextwright.limits import bounded
from contextwright.render.meter import Meter
from contextwright.sentences import split_sentences
from contextwright.spans import compose
from contextwright.stages.base import register_stage
from contextwright.stages.filter import by_relevance
from contextwright.types import Change, Chunk, Drop, StageResult

__all__ = ["TokenBudget", "sentence_ends"]

Policy = Literal["greedy", "stop", "truncate", "blocks"]
_POLICIES = ("greedy", "stop", "truncate", "blocks")


def sentence_ends(text: str) -> list[int]:
    """Character offsets just after each sentence end in ``text`` (the last is ``len(text.rstrip())``).

    Uses :func:`contextwright.sentences.split_sentences`, the one splitter of the library.
    """
    ends = [end for _, end in split_sentences(text)]
    if not ends or ends[-1] != len(text.rstrip()):
        ends.append(len(text.rstrip()))
    return ends


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class TokenBudget:
    """Select chunks so that the rendered context fits the budget.

    Policies:

    * ``greedy`` (default): by score, take each chunk that still fits and skip
      the ones that do not (skip-and-continue), so a long chunk does not block
      shorter ones after it.
    * ``stop``: by score, stop at the first chunk that does not fit.
    * ``truncate``: by score; the first chunk that does not fit is cut at
      the last sentence end that fits (when at least ``min_truncated_tokens``
      of it fit), before lower-ranked chunks can take the room; then greedy
      for the rest.
    * ``blocks``: whole documents (all their chunks, with their header) ranked
      by their best chunk, taken in rank order until the first one that does
      not fit; it and every lower-ranked document are dropped whole (the
      lowest-relevance trailing blocks go first, never a better document for
      a smaller worse one).

    Dropped chunks are reported as ``over_budget``; a truncated chunk is
    reported as changed with its tokens before and after.

    Args:
        policy: One of ``greedy``, ``stop``, ``truncate``, ``blocks``.
        min_truncated_tokens: The smallest useful remainder for ``truncate``.

    Example:
        >>> TokenBudget(policy="truncate")(chunks, meter=meter, budget=500)
    """

    name: ClassVar[str] = "token_budget"
    requires: ClassVar[tuple[str, ...]] = ("meter", "budget")
    policy: Policy = "greedy"
    min_truncated_tokens: int = bounded(24, 100_000)

    def __post_init__(self) -> None:
        if self.policy not in _POLICIES:
            raise ConfigError(f"policy must be one of {', '.join(_POLICIES)}; got {self.policy!r}.")
        if (
            isinstance(self.min_truncated_tokens, bool)
            or not isinstance(self.min_truncated_tokens, int)
            or self.min_truncated_tokens < 1
        ):
            raise ConfigError(
                f"min_truncated_tokens must be a positive integer; got {self.min_truncated_tokens!r}."
            )

    def __call__(self, chunks: Sequence[Chunk], /, *, meter: Meter, budget: int) -> StageResult:
        if not chunks:
            return StageResult.of(self.name, chunks, ())
        meter.prime(chunks)
        n = len(chunks)
        room = budget - meter.frame_cost()
        if self.policy == "blocks":
            return self._blocks(chunks, meter, room, n)
        kept: list[Chunk] = []
        skipped: list[Chunk] = []
        changes: list[Change] = []
        docs: set[str] = set()
        stopped = False
        truncated = False
        for c in by_relevance(chunks):
            if meter.tokens(c) > room and self.policy != "truncate":
                # Its body alone does not fit: no need to price its header.
                skipped.append(c)
                stopped = stopped or self.policy == "stop"
                continue
            doc = meter.doc_cost(c) if c.group_key not in docs else 0
            cost = meter.block_cost(c, n) + doc
            if not stopped and cost <= room:
                kept.append(c)
                docs.add(c.group_key)
                room -= cost
                continue
            if self.policy == "truncate" and not truncated and not stopped:
                # The first misfit is cut to the room left, before anything
                # ranked lower can take that room.
                cut = self._truncate(c, meter, room - doc, n)
                if cut is not None:
                    truncated = True
                    kept.append(cut)
                    docs.add(c.group_key)
                    room -= meter.block_cost(cut, n) + doc
                    changes.append(
                        Change(
                            c.id,
                            "truncated",
                            meter.tokens(c),
                            meter.tokens(cut),
                            detail=f"{len(cut.text)} of {len(c.text)} characters",
                        )
                    )
                    continue
            skipped.append(c)
            if self.policy == "stop":
                stopped = True
        keep_ids = {c.id: c for c in kept}
        out = [keep_ids[c.id] for c in chunks if c.id in keep_ids]
        drops = [Drop(c.id, "over_budget", detail=f"{meter.tokens(c)} tokens") for c in skipped]
        return StageResult.of(self.name, chunks, out, dropped=drops, changed=changes)

    def _truncate(self, c: Chunk, meter: Meter, room: int, n: int) -> Chunk | None:
        """``c`` cut at the last sentence end that fits in ``room``, or None."""
        overhead = meter.block_cost(c, n) - meter.tokens(c)
        if room - overhead < self.min_truncated_tokens:
            return None
        text = c.text.strip()
        lead = len(c.text) - len(c.text.lstrip())
        ends = sentence_ends(text)[:-1]  # the full text does not fit
        lo, hi, best = 0, len(ends) - 1, None
        while lo <= hi:  # the largest prefix that fits; costs grow with length
            mid = (lo + hi) // 2
            cand = c.with_ops("truncated", text=text[: ends[mid]])
            cost = meter.tokens(cand)
            if cost + overhead <= room:
                best, lo = (cand, cost), mid + 1
            else:
                hi = mid - 1
        if best is None or best[1] < self.min_truncated_tokens:
            return None
        kept = best[0]
        return replace(kept, spans=compose(c, [(lead, lead + len(kept.text))]))

    def _blocks(self, chunks: Sequence[Chunk], meter: Meter, room: int, n: int) -> StageResult:
        groups: dict[str, list[Chunk]] = {}
        for c in by_relevance(chunks):
            groups.setdefault(c.group_key, []).append(c)
        kept: set[str] = set()
        drops: list[Drop] = []
        full = False
        for members in groups.values():
            cost = meter.doc_cost(members[0]) + sum(meter.block_cost(c, n) for c in members)
            if not full and cost <= room:
                kept.update(c.id for c in members)
                room -= cost
                continue
            detail = (
                f"document block of {cost} tokens"
                if not full
                else f"document block after the first misfit ({cost} tokens)"
            )
            full = True
            drops.extend(Drop(c.id, "over_budget", detail=detail) for c in members)
        out = [c for c in chunks if c.id in kept]
        return StageResult.of(self.name, chunks, out, dropped=drops)
