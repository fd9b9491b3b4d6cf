"""Character spans: where a cut-down chunk's text sits in the text it came in with.

Stages that shorten a chunk (``compress``, ``llm_compress``, the budget's
``truncate`` policy, ``overlap_dedup``) keep pieces of the text they receive.
``Chunk.spans`` records those pieces as ``(start, end)`` offsets into the
chunk's text *as it entered the pipeline*, so a citation can point at exactly
the text the model read, however many stages cut it.

The invariant every such stage keeps: the chunk's current text is its spans'
pieces of the original text, in order, separated by whitespace only (possibly
none between contiguous pieces), and every piece starts and ends with a
non-whitespace character. :func:`join_pieces` builds such a text;
:func:`compose` maps offsets into the current text back to the original by
walking the current text with that rule, so no stage needs the original text.

A merged passage (``group_merge``) starts a new origin: its spans, when a later
stage cuts it, are offsets into the passage text (its members joined in
document order).

Example:
    >>> c = Chunk("One. Two. Three.", id="c")
    >>> kept = [(0, 4), (10, 16)]
    >>> c2 = c.with_ops("compressed", text=join_pieces(c.text, kept), spans=compose(c, kept))
    >>> c2.text, c2.spans
    ('One. Three.', ((0, 4), (10, 16)))
    >>> compose(c2, [(5, 11)])  # "Three." in the cut text is 10..16 of the original
    ((10, 16),)
"""

from __future__ import annotations

from collections.abc import Sequence

from contextwright.model.chunk import Chunk

__all__ = ["Span", "compose", "join_pieces", "pieces_of"]

Span = tuple[int, int]


def join_pieces(text: str, pieces: Sequence[Span]) -> str:
    """The ``pieces`` of ``text`` in order, with the whitespace between neighbours kept.

    Pieces are trimmed of surrounding whitespace (and dropped when blank). When
    the text between two kept pieces is whitespace only it is kept as is (the
    pieces were neighbours); otherwise the skipped text becomes one newline if
    it held one, else one space.
    """
    parts: list[str] = []
    prev_end: int | None = None
    for start, end in _trimmed(text, pieces):
        if prev_end is not None:
            gap = text[prev_end:start]
            parts.append(gap if not gap.strip() else ("\n" if "\n" in gap else " "))
        parts.append(text[start:end])
        prev_end = end
    return "".join(parts)


def _trimmed(text: str, pieces: Sequence[Span]) -> list[Span]:
    out: list[Span] = []
    for start, end in pieces:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            out.append((start, end))
    return out


def pieces_of(chunk: Chunk) -> list[tuple[int, int, int]]:
    """The pieces of ``chunk.text`` as ``(start, end, original_start)`` triples.

    A chunk without spans is one piece: its whole text, at offset 0.
    """
    text = chunk.text
    if not chunk.spans:
        return [(0, len(text), 0)]
    out: list[tuple[int, int, int]] = []
    pos = 0
    for a, b in chunk.spans:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        out.append((pos, pos + (b - a), a))
        pos += b - a
    return out


def compose(chunk: Chunk, pieces: Sequence[Span]) -> tuple[Span, ...]:
    """Offsets into the original text of ``pieces``, which are offsets into ``chunk.text``.

    Each piece is trimmed of surrounding whitespace, split where it crosses
    from one of the chunk's earlier pieces into the next, and mapped back;
    contiguous results are merged.
    """
    text = chunk.text
    segments = pieces_of(chunk)
    out: list[Span] = []
    for start, end in _trimmed(text, pieces):
        for seg_start, seg_end, origin in segments:
            lo, hi = max(start, seg_start), min(end, seg_end)
            if lo >= hi:
                continue
            span = _trimmed(text, [(lo, hi)])
            if not span:
                continue
            lo, hi = span[0]
            a, b = origin + lo - seg_start, origin + hi - seg_start
            if out and out[-1][1] == a:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
    return tuple(out)
