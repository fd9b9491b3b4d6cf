"""Citations: numbered after ordering, resolvable from an answer."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from contextwright.render.format import Format
from contextwright.types import AssembledContext, Chunk, Citation

__all__ = ["CitationResolution", "build_citations", "resolve_citations"]

SNIPPET_CHARS = 200

# [1]  [1, 3]  [1-3]  [1–3]  [SOURCE 2]  [Source 2, 4]  [2][3]
_BRACKET = re.compile(
    r"\[\s*(?:source\s*)?(\d+(?:\s*(?:[-–,;]|and)\s*(?:source\s*)?\d+)*)\s*\]", re.IGNORECASE
)
_ITEM = re.compile(r"(\d+)\s*[-–]\s*(?:source\s*)?(\d+)|(\d+)", re.IGNORECASE)


def _span(chunk: Chunk) -> tuple[int, int] | None:
    span = chunk.metadata.get("index_span") if chunk.metadata else None
    if isinstance(span, (list, tuple)) and len(span) == 2:
        return (int(span[0]), int(span[1]))
    return (chunk.index, chunk.index) if chunk.index is not None else None


@functools.lru_cache(maxsize=16_384)
def _snippet(text: str) -> str:
    """The first ``SNIPPET_CHARS`` characters, whitespace collapsed (cached by text)."""
    snippet = " ".join(text[: SNIPPET_CHARS * 3].split())
    return snippet if len(snippet) <= SNIPPET_CHARS else snippet[: SNIPPET_CHARS - 1] + "…"


def build_citations(blocks: Sequence[Chunk], fmt: Format) -> tuple[Citation, ...]:
    """One citation per block, numbered in the blocks' final order (invariant 3)."""
    out = []
    for n, c in enumerate(blocks, 1):
        snippet = _snippet(c.text)
        out.append(
            Citation(
                index=n,
                label=fmt.label(n),
                chunk_ids=c.member_ids,
                doc_id=c.doc_id,
                source=c.source,
                title=c.title,
                section=c.section,
                page=c.page,
                line=c.line,
                score=c.score,
                snippet=snippet,
                also_sources=c.also_sources,
                index_span=_span(c),
                spans=c.spans,
                provenance=c.provenance,
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class CitationResolution:
    """What an answer cites.

    Attributes:
        cited: The citations the answer refers to, in first-mention order.
        numbers: Every number mentioned, in first-mention order.
        missing: Numbers that match no block of the context (hallucinated).
        uncited: Citations of the context that the answer never mentions.
    """

    cited: tuple[Citation, ...]
    numbers: tuple[int, ...]
    missing: tuple[int, ...]
    uncited: tuple[Citation, ...]

    @property
    def ok(self) -> bool:
        """True when every cited number exists."""
        return not self.missing


def parse_citation_numbers(answer: str, *, max_range: int = 1000) -> list[int]:
    """Numbers cited in ``answer``: ``[1]``, ``[1, 3]``, ``[1-3]``, ``[SOURCE 2]``.

    Ranges wider than ``max_range`` are ignored (a year range like
    ``[1914-1918]`` is not a citation run).
    """
    seen: dict[int, None] = {}
    for m in _BRACKET.finditer(answer):
        for item in _ITEM.finditer(m.group(1)):
            if item.group(3) is not None:
                seen.setdefault(int(item.group(3)), None)
                continue
            lo, hi = int(item.group(1)), int(item.group(2))
            if lo <= hi and hi - lo <= max_range:
                for k in range(lo, hi + 1):
                    seen.setdefault(k, None)
    return list(seen)


def resolve_citations(answer: str, ctx: AssembledContext | Sequence[Citation]) -> CitationResolution:
    """Map the citation markers in an LLM answer back to sources.

    Args:
        answer: The model's answer text.
        ctx: The assembled context (or its citations) the answer was made from.

    Example:
        >>> r = resolve_citations("Paris [1], founded early [2-3].", ctx)
        >>> [c.source for c in r.cited], r.missing
    """
    citations = ctx.citations if isinstance(ctx, AssembledContext) else tuple(ctx)
    by_number = {c.index: c for c in citations}
    numbers = parse_citation_numbers(answer)
    cited = tuple(by_number[k] for k in numbers if k in by_number)
    missing = tuple(k for k in numbers if k not in by_number)
    mentioned = set(numbers)
    uncited = tuple(c for c in citations if c.index not in mentioned)
    return CitationResolution(cited, tuple(numbers), missing, uncited)
