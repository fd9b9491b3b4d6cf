"""Expansion: bring in the neighbours of each retrieved chunk from a chunk store.

Chunkers cut documents for embedding similarity, not for reading: the
sentence before a hit often names its subject, the one after finishes the
thought. :class:`ExpandNeighbors` fetches chunks ``index ± window`` of every
retrieved chunk from a :class:`~contextwright.stores.ChunkStore`, in one
batched store call, and adds them with a discounted score so they compete
for the budget below the hits they came from.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from contextwright.core.errors import ConfigError, StoreError
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import StageResult
from contextwright.stages.base import register_stage

__all__ = ["ExpandNeighbors", "with_expansion"]

logger = logging.getLogger(__name__)

MAX_WINDOW = 3


_warned_no_store = False


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ExpandNeighbors:
    """Add the chunks around each retrieved chunk (``index ± window``) from a chunk store.

    For every input chunk with a ``doc_id`` and an ``index``, the stage asks
    the store for indices ``index - window .. index + window`` of that
    document, all documents in one call. A neighbour already present (same
    ``(doc_id, index)`` or same id) is not added again; indices the store
    does not have are simply missing. A new chunk scores ``parent.score ×
    factor`` (the best parent when it neighbours several), has origin
    ``"expanded"`` and ranks after every input chunk, ordered by its best
    parent's rank and then its position, so results are deterministic.

    The stage never loses an input: all of them pass through unchanged. When
    the store fails or exceeds ``timeout_s`` the chunks pass through
    unexpanded and the report's note says why, unless ``strict`` is set, in
    which case :class:`~contextwright.core.errors.StoreError` is raised. With no
    store configured (``store=None``) the stage passes through with a note.

    The store is a resource, not a setting: pass it to the assembler.

    Args:
        window: How many neighbours on each side, 0-3 (0 disables expansion).
        factor: Score multiplier of an expanded chunk, in [0, 1].
        strict: Raise on a store failure instead of passing through.
        timeout_s: Timeout of the store call in seconds (``None``: the store's).

    Example:
        >>> store = SQLiteStore("nq.db")
        >>> asm = Assembler({"stages": [{"type": "expand", "window": 1}, ...]}, budget=1000, store=store)
        >>> ExpandNeighbors(window=1)(chunks, store=store).report.added
        ('wiki:X-ray:3', 'wiki:X-ray:5')
    """

    name: ClassVar[str] = "expand"
    requires: ClassVar[tuple[str, ...]] = ()
    # Optional so that presets with expansion (``documents``) still run without
    # a store: the report then says that nothing was expanded and why.
    optional: ClassVar[tuple[str, ...]] = ("store",)
    window: int = bounded(1, 64, work=True)
    factor: float = bounded(0.5, 1.0)
    strict: bool = False
    timeout_s: float | None = bounded(2.0, 600.0)

    def __post_init__(self) -> None:
        if (
            isinstance(self.window, bool)
            or not isinstance(self.window, int)
            or not 0 <= self.window <= MAX_WINDOW
        ):
            raise ConfigError(
                f"window must be an integer from 0 to {MAX_WINDOW} (neighbours on each side); "
                f"got {self.window!r}. Use window=1 for the chunk before and after.",
                loc=("window",),
            )
        if (
            isinstance(self.factor, bool)
            or not isinstance(self.factor, (int, float))
            or not math.isfinite(self.factor)
            or not 0 <= self.factor <= 1
        ):
            raise ConfigError(
                f"factor must be a number from 0 to 1 (expanded score = parent score × factor); "
                f"got {self.factor!r}. The default 0.5 ranks neighbours below their parents.",
                loc=("factor",),
            )
        if not isinstance(self.strict, bool):
            raise ConfigError(f"strict must be true or false; got {self.strict!r}.", loc=("strict",))
        if self.timeout_s is not None and (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, (int, float))
            or not math.isfinite(self.timeout_s)
            or self.timeout_s <= 0
        ):
            raise ConfigError(
                f"timeout_s must be a positive number of seconds or null; got {self.timeout_s!r}.",
                loc=("timeout_s",),
            )

    def __call__(self, chunks: Sequence[Chunk], /, *, store: Any = None) -> StageResult:
        inputs = tuple(chunks)
        parents = [c for c in inputs if c.doc_id is not None and c.index is not None]
        notes: list[str] = []
        skipped = len(inputs) - len(parents)
        if skipped:
            notes.append(f"{skipped} chunk(s) without doc_id/index passed through unexpanded")
        if not parents or self.window == 0:
            if self.window == 0 and parents:
                notes.append("window 0: expansion disabled")
            return StageResult.of(self.name, inputs, inputs, notes=notes)
        if store is None:
            global _warned_no_store
            if not _warned_no_store:  # once per process; every report still carries the note
                _warned_no_store = True
                logger.warning(
                    "expand stage has no chunk store; nothing expanded (logged once per process)",
                    extra={"chunks": len(inputs)},
                )
            notes.append("no chunk store configured (pass store= to the Assembler); nothing expanded")
            return StageResult.of(self.name, inputs, inputs, notes=notes)

        by_doc, ranges = _wanted(parents, self.window)
        if not ranges:
            notes.insert(0, "every neighbour in the window is already present; nothing to fetch")
            return StageResult.of(self.name, inputs, inputs, notes=notes)
        fetched = self._fetch(store, ranges, notes)
        if fetched is None:
            return StageResult.of(self.name, inputs, inputs, notes=notes)
        w = self.window
        base_rank = max((c.rank for c in inputs), default=-1) + 1
        candidates, outside = _neighbours(fetched, parents, inputs, by_doc, w)
        if outside:
            notes.append(f"ignored {outside} chunk(s) the store returned outside the requested ranges")

        candidates.sort(key=lambda t: (t[0], t[1], t[2]))
        added = [
            replace(n, score=score * self.factor, origin="expanded", rank=base_rank + k)
            for k, (_, _, _, score, n) in enumerate(candidates)
        ]
        notes.insert(
            0,
            f"added {len(added)} neighbour(s) of {len(parents)} chunk(s) in {len(ranges)} document(s) "
            f"(window ±{w}, factor {self.factor:g}) with one store call",
        )
        return StageResult.of(
            self.name,
            inputs,
            inputs + tuple(added),
            added=[c.id for c in added],
            notes=notes,
        )

    def _fetch(self, store: Any, ranges: dict[str, list[tuple[int, int]]], notes: list[str]) -> Any:
        """The store's chunks in ``ranges``; None (with a note) when the store fails and not ``strict``.

        Raises:
            StoreError: when the store fails and ``strict`` is set.
        """
        try:
            return store.fetch(ranges, timeout_s=self.timeout_s)
        except Exception as exc:
            reason = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
            logger.warning(
                "chunk store failed; passing chunks through unexpanded",
                extra={"store": repr(store), "documents": len(ranges), "error": reason},
            )
            if self.strict:
                if isinstance(exc, StoreError):
                    raise
                raise StoreError(f"chunk store {store!r} failed during expansion: {reason}") from exc
            notes.append(f"store failed, chunks passed through unexpanded: {reason}")
            return None


def _wanted(
    parents: Sequence[Chunk], w: int
) -> tuple[dict[str, list[tuple[int, float, int]]], dict[str, list[tuple[int, int]]]]:
    """``(by_doc, ranges)``: each document's retrieved ``(index, score, rank)``, and the index runs
    to fetch for it (the window around them, less the positions already present)."""
    by_doc: dict[str, list[tuple[int, float, int]]] = {}
    for c in parents:
        if c.doc_id is not None and c.index is not None:  # always, but narrows the types
            by_doc.setdefault(c.doc_id, []).append((c.index, c.score, c.rank))
    # Ask only for positions not already present: fewer rows to ship and build.
    ranges: dict[str, list[tuple[int, int]]] = {}
    for d, hits in by_doc.items():
        have = {i for i, _, _ in hits}
        want = sorted({j for i in have for j in range(max(0, i - w), i + w + 1)} - have)
        if want:
            ranges[d] = _runs(want)
    return by_doc, ranges


def _neighbours(
    fetched: Any,
    parents: Sequence[Chunk],
    inputs: Sequence[Chunk],
    by_doc: dict[str, list[tuple[int, float, int]]],
    w: int,
) -> tuple[list[tuple[int, str, int, float, Chunk]], int]:
    """The fetched chunks that are new neighbours, each with the best score and rank of the
    retrieved chunks it neighbours, and how many the store returned outside the ranges."""
    present_keys = {(c.doc_id, c.index) for c in parents}
    present_ids = {c.id for c in inputs}
    candidates: list[tuple[int, str, int, float, Chunk]] = []
    outside = 0
    for n in fetched:
        if n.doc_id is None or n.index is None or n.doc_id not in by_doc:
            outside += 1
            continue
        key = (n.doc_id, n.index)
        if key in present_keys or n.id in present_ids:
            continue
        near = [(s, r) for i, s, r in by_doc[n.doc_id] if abs(i - n.index) <= w]
        if not near:
            # A store that returns more than it was asked for must not widen the window.
            outside += 1
            continue
        best_score = max(s for s, _ in near)
        best_rank = min(r for s, r in near if s == best_score)
        present_keys.add(key)
        present_ids.add(n.id)
        candidates.append((best_rank, n.doc_id, n.index, best_score, n))
    return candidates, outside


def _runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted distinct indices as inclusive ``(first, last)`` runs: [1, 2, 3, 7] -> [(1, 3), (7, 7)]."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def with_expansion(
    pipeline: Any, *, window: int, factor: float | None = None, strict: bool | None = None
) -> Any:
    """A copy of ``pipeline`` that expands neighbours with ``window``.

    An existing ``expand`` stage gets the new window; otherwise one is
    inserted after the leading filter stages (``min_score``, ``top_k``), so
    neighbours are added before dedup, grouping and the budget see the chunks.

    Args:
        pipeline: A :class:`~contextwright.assembly.pipeline.Pipeline`.
        window: Neighbours on each side (0-3).
        factor: Score multiplier of an expanded chunk (``None``: keep the
            existing stage's, or the default 0.5).
        strict: Raise on a store failure (``None``: keep, or the default False).

    Example:
        >>> pipe = with_expansion(pipeline_from_config("qa"), window=1)
    """
    changes: dict[str, Any] = {"window": window}
    if factor is not None:
        changes["factor"] = factor
    if strict is not None:
        changes["strict"] = strict
    stages = list(pipeline.stages)
    for i, stage in enumerate(stages):
        if isinstance(stage, ExpandNeighbors):
            stages[i] = replace(stage, **changes)
            return replace(pipeline, stages=tuple(stages))
    at = 0
    while at < len(stages) and getattr(stages[at], "name", "") in ("min_score", "top_k"):
        at += 1
    stages.insert(at, ExpandNeighbors(**changes))
    return replace(pipeline, stages=tuple(stages))
