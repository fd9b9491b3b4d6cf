"""Grouping: chunks of one document together, contiguous chunks merged into passages."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import ClassVar

from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.model.report import Drop, StageResult
from contextwright.stages.base import register_stage
from contextwright.stages.filter import relevance_key

__all__ = ["GroupMerge", "merge_run"]


def _span(c: Chunk) -> tuple[int, int]:
    """The (first, last) index a chunk covers (a merged passage covers several)."""
    span = c.metadata.get("index_span") if c.metadata else None
    if isinstance(span, (tuple, list)) and len(span) == 2:
        return (int(span[0]), int(span[1]))
    index = c.index if c.index is not None else 0
    return (index, index)


def merge_run(run: Sequence[Chunk], *, separator: str = "\n") -> Chunk:
    """One passage standing for ``run``, chunks of one document with consecutive indices.

    The passage's text is the pieces' texts joined in index order. Where the
    overlap of two pieces was stripped (op ``overlap_stripped`` on the later
    piece, or ``overlap_stripped_tail`` on the earlier one) they are joined as
    they are: :class:`~contextwright.stages.dedup.OverlapDedup` keeps the
    whitespace between the pieces, so they join exactly as in the document.
    Other pieces are joined with ``separator``.

    The passage's id is ``"<doc_id>:<first>-<last>"``; its ``chunk_ids`` list
    every input chunk it stands for, its score is the best member's, its
    ``index`` the first index and ``metadata["index_span"]`` the
    ``(first, last)`` pair that its citation reports.
    """
    first, last = run[0], run[-1]
    parts = [first.text]
    for before, piece in itertools.pairwise(run):
        joined = "overlap_stripped" in piece.ops or "overlap_stripped_tail" in before.ops
        parts.append(piece.text if joined else separator + piece.text)
    best = min(run, key=relevance_key)
    ids: list[str] = []
    dups: list[str] = []
    also_at: list[tuple[str, str | None, int | None, int | None]] = []
    copies: dict[str, str] = {}
    sources: list[str] = []
    ops: list[str] = []
    for c in run:
        ids.extend(i for i in c.member_ids if i not in ids)
        dups.extend(i for i in c.duplicates if i not in dups)
        also_at.extend(a for a in c.also_at if a not in also_at)
        for i, text in c.copies:
            copies.setdefault(i, text)
        if c.source and c.source != first.source and c.id not in copies:
            # a member from another source holds its own part of the passage, not all of it
            also_at.append((c.id, c.source, c.page, c.line))
            copies[c.id] = c.text
        for src in (c.source, *c.also_sources):
            if src and src != first.source and src not in sources:
                sources.append(src)
        ops.extend(o for o in c.ops if o not in ops)
    meta = dict(first.metadata)
    span = (_span(first)[0], _span(last)[1])
    meta["index_span"] = span
    return replace(
        first,
        text="".join(parts),
        id=f"{first.group_key}:{span[0]}-{span[1]}",
        score=best.score,
        rank=best.rank,
        origin="merged",
        ops=(*ops, "merged"),
        chunk_ids=tuple(ids),
        duplicates=tuple(dups),
        also_sources=tuple(sources),
        also_at=tuple(also_at),
        copies=tuple(copies.items()),
        metadata=MappingProxyType(meta),
        embedding=None,
        spans=(),
        doc_summary=next((c.doc_summary for c in run if c.doc_summary), None),
    )


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMerge:
    """Group chunks by document, merge contiguous ones into passages, rank groups by their best chunk.

    Neighbouring chunks shown as separate blocks cost a header each, split
    sentences across citations and read as fragments. This stage groups
    chunks by document (``doc_id``, else ``source``; chunks with neither stand alone), orders
    each group by ``index`` and merges every run of consecutive indices into
    one passage (see :func:`merge_run`) with one header and one citation that
    carries every chunk id and the index span. Run it after
    :class:`~contextwright.stages.dedup.OverlapDedup` so the passage does not
    repeat the windows' overlap: the passage then equals the document text
    the pieces came from.

    Groups are output by their best score (ties: retrieval order), chunks
    within a group in document order. The merged-away ids are reported as
    ``merged_into`` the passage.

    Args:
        separator: What joins two pieces that did not overlap (a newline by
            default; formats keep it inside the block).

    Example:
        >>> GroupMerge()(OverlapDedup()(chunks).chunks).chunks[0].metadata["index_span"]
        (3, 5)
    """

    name: ClassVar[str] = "group_merge"
    requires: ClassVar[tuple[str, ...]] = ()
    separator: str = "\n"

    def __post_init__(self) -> None:
        if not isinstance(self.separator, str) or not self.separator or self.separator.strip():
            raise ConfigError(
                f"separator must be non-empty whitespace (e.g. '\\n' or ' '); got {self.separator!r}. "
                "Text between pieces would read as part of the document.",
                loc=("separator",),
            )

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        groups: dict[str, list[Chunk]] = {}
        for c in chunks:
            groups.setdefault(c.group_key, []).append(c)
        taken = {c.id for c in chunks}
        out_groups: list[tuple[tuple[float, int], list[Chunk]]] = []
        drops: list[Drop] = []
        added: list[str] = []
        for members in groups.values():
            if members[0].doc_key is None:
                out_groups.append((relevance_key(members[0]), members))
                continue
            members = sorted(members, key=lambda c: (c.index is None, c.index or 0, c.rank))
            runs: list[list[Chunk]] = []
            for c in members:
                prev = runs[-1][-1] if runs else None
                if (
                    prev is not None
                    and c.index is not None
                    and prev.index is not None
                    and c.index == _span(prev)[1] + 1
                ):
                    runs[-1].append(c)
                else:
                    runs.append([c])
            blocks: list[Chunk] = []
            for run in runs:
                if len(run) == 1:
                    blocks.append(run[0])
                    continue
                merged = merge_run(run, separator=self.separator)
                if merged.id in taken:  # an input already uses the natural id
                    merged = replace(merged, id=f"{merged.id}~merged")
                taken.add(merged.id)
                added.append(merged.id)
                drops.extend(Drop(c.id, "merged_into", related=merged.id) for c in run)
                blocks.append(merged)
            best = min(blocks, key=relevance_key)
            out_groups.append((relevance_key(best), blocks))
        out_groups.sort(key=lambda g: g[0])
        out = [c for _, blocks in out_groups for c in blocks]
        notes = (f"{len(added)} passages merged from {len(drops)} chunks",) if added else ()
        return StageResult.of(self.name, chunks, out, dropped=drops, added=added, notes=notes)
