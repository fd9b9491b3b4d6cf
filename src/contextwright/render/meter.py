"""Token costs of rendered pieces, counted once per call.

A :class:`Meter` pairs a format with a cached tokenizer. The token cost of a
chunk is the count of its *rendered body* (its escaped text as it will
appear in the context), so the number a stage budgets with is the number the
final string is made of; each body is built and counted once per call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from contextwright.render.format import Format, join_pieces
from contextwright.tokens import CachedTokenizer
from contextwright.types import Chunk

__all__ = ["Meter"]


@dataclass(slots=True)
class Meter:
    """Counts what blocks cost in a given format.

    Args:
        format: The format the context is rendered in.
        tokenizer: The (cached) tokenizer.
        bodies: Rendered bodies by chunk text; a pipeline passes one dict
            across calls so each text is escaped once.
    """

    format: Format
    tokenizer: CachedTokenizer
    bodies: dict[str, str] = field(default_factory=dict, repr=False)
    _counts: dict[str, int] = field(default_factory=dict, repr=False)
    _text_tokens: dict[str, int] = field(default_factory=dict, repr=False)

    def body(self, chunk: Chunk) -> str:
        """The rendered body of ``chunk`` (memoized by text)."""
        body = self.bodies.get(chunk.text)
        if body is None:
            body = self.format.body(chunk)
            self.bodies[chunk.text] = body
        return body

    def count(self, text: str) -> int:
        """Tokens of one string (memoized for this call, then the tokenizer's LRU)."""
        n = self._counts.get(text)
        if n is None:
            n = self.tokenizer.count(text)
            self._counts[text] = n
        return n

    def count_all(self, texts: Iterable[str]) -> None:
        """Count many strings at once (one batch for the tokenizer)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._counts]
        if todo:
            self._counts.update(zip(todo, self.tokenizer.count_many(todo), strict=True))

    def prime(self, chunks: Sequence[Chunk]) -> None:
        """Count the bodies of ``chunks`` in one batch."""
        self.count_all(self.body(c) for c in chunks)

    def tokens(self, chunk: Chunk) -> int:
        """Tokens of the chunk's rendered body."""
        n = self._text_tokens.get(chunk.text)
        if n is None:
            n = self.count(self.body(chunk))
            self._text_tokens[chunk.text] = n
        return n

    def total_tokens(self, chunks: Sequence[Chunk]) -> int:
        """Sum of the rendered bodies' tokens."""
        known = self._text_tokens
        if not all(c.text in known for c in chunks):
            self.prime(chunks)
            for c in chunks:
                known[c.text] = self._counts[self.body(c)]
        return sum(known[c.text] for c in chunks)

    def block_cost(self, chunk: Chunk, n: int) -> int:
        """Header + body + footer of ``chunk`` as block ``n``."""
        fmt = self.format
        cost = self.tokens(chunk)
        for piece in (fmt.block_header(chunk, n), fmt.block_footer(chunk, n)):
            if piece:
                cost += self.count(piece)
        return cost

    def doc_cost(self, chunk: Chunk) -> int:
        """The document header shown before the first block of ``chunk``'s document."""
        head = self.format.doc_header(chunk, first=True)
        return self.count(head) if head else 0

    def frame_cost(self) -> int:
        """Frame start + frame end."""
        return sum(self.count(p) for p in (self.format.frame_start(), self.format.frame_end()) if p)

    def measure(self, blocks: Sequence[Chunk], *, query: str = "", verify: bool = False) -> tuple[str, int]:
        """Render ``blocks`` and return ``(text, exact token count)``.

        With an additive tokenizer and format, the count is the sum of the
        pieces' cached counts (the last piece without its trailing newlines),
        which equals the count of the joined text; otherwise, or with
        ``verify``, the joined text is tokenized.
        """
        pieces = self.format.pieces(blocks, query=query)
        text = join_pieces(pieces)
        if verify or not (self.format.additive and self.tokenizer.additive):
            return text, self.tokenizer.count(text)
        if not pieces:
            return text, 0
        last = pieces[-1].rstrip("\n")
        self.count_all([*pieces[:-1], last])
        counts = self._counts
        return text, sum(counts[p] for p in pieces[:-1]) + counts[last]
