"""Token costs of rendered pieces, counted once per call.

A :class:`Meter` pairs a format with a cached tokenizer. The token cost of a
chunk is the count of its *rendered body* (its escaped text as it will
appear in the context), so the number a stage budgets with is the number the
final string is made of; each body is built and counted once per call.
"""

from __future__ import annotations

import inspect
import re
import string
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from contextwright.core.caches import Scoped
from contextwright.core.cancel import check_cancelled
from contextwright.core.text import count_words
from contextwright.model.chunk import Chunk
from contextwright.model.report import Tally
from contextwright.render.format import Format, join_pieces
from contextwright.tokens import CachedTokenizer

__all__ = ["BATCH_CHARS", "Meter"]

#: Characters counted in one tokenizer call between two cancellation checks.
BATCH_CHARS = 1 << 18

_ASCII_PUNCTUATION = frozenset(string.punctuation)  # none is whitespace, a letter or a digit
#: Characters ``str.split`` splits at that are not whitespace to a BPE pre-tokenizer (``\\s``).
_SEPARATORS = "\x1c\x1d\x1e\x1f"
#: An ASCII control character other than tab, line feed and carriage return.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UNSPLIT = ("", "")  # never a real split: both parts of a real one are non-empty
_SENTINEL = 987_654_321  # a number no header shows by itself, to locate ``n`` in a header


_TAKES_BODY: dict[type, bool] = {}


def _takes_body(cls: type[Format]) -> bool:
    """Whether ``cls.layout`` accepts ``body=`` (a format written before it may not)."""
    known = _TAKES_BODY.get(cls)
    if known is None:
        known = _TAKES_BODY[cls] = "body" in inspect.signature(cls.layout).parameters
    return known


@dataclass(slots=True)
class Meter:
    """Counts what blocks cost in a given format.

    Args:
        format: The format the context is rendered in.
        tokenizer: The (cached) tokenizer.
        bodies: Rendered bodies by chunk text; a pipeline passes one dict
            across calls so each text is escaped once.
        header_parts: Number-free header parts by the chunk fields a header
            shows; shared across calls the same way.
    """

    format: Format
    tokenizer: CachedTokenizer
    bodies: dict[str, str] | Scoped = field(default_factory=dict, repr=False)
    _counts: dict[str, int] = field(default_factory=dict, repr=False)
    _text_tokens: dict[str, int] = field(default_factory=dict, repr=False)
    header_parts: dict[tuple[object, ...], tuple[str, str] | None] | Scoped = field(
        default_factory=dict, repr=False
    )
    # This call's bodies and header parts (plain dicts in front of the shared caches), and what it
    # rendered new: stored in the shared caches at once by :meth:`flush`.
    _bodies: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _parts: dict[tuple[object, ...], tuple[str, str] | None] = field(
        default_factory=dict, init=False, repr=False
    )
    _fresh: list[tuple[str, str]] = field(default_factory=list, init=False, repr=False)
    _fresh_parts: list[tuple[tuple[object, ...], tuple[str, str] | None]] = field(
        default_factory=list, init=False, repr=False
    )
    _digits_isolated: bool = field(default=False, init=False, repr=False)
    # Header costs of this call by (header key, block number).
    _header_costs: dict[tuple[tuple[object, ...], int], int] = field(
        default_factory=dict, init=False, repr=False
    )
    _known_splits: bool = field(default=False, init=False, repr=False)
    # Whether the format's escape is a built-in one (tabs and line breaks stay whitespace).
    _plain_breaks: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        self._plain_breaks = type(self.format).escape.__module__ == Format.__module__
        self._known_splits = bool(
            getattr(self.tokenizer, "known_splits", False)
            and self.tokenizer.additive
            and self.format.additive
        )
        self._digits_isolated = bool(
            getattr(self.tokenizer, "digits_isolated", False)
            and self.tokenizer.additive
            and self.format.additive
        )

    def scratch(self) -> Meter:
        """A meter for texts that are only tried (candidate cuts), with its own memo.

        The same format and tokenizer, so it counts exactly as this one does; but what it
        renders is forgotten with it, so a search over many candidate cuts of a long chunk
        leaves none of them in the pipeline's body and header caches (issue 31: 1 GB of
        tried texts after one request).
        """
        return Meter(self.format, self.tokenizer)

    def body(self, chunk: Chunk) -> str:
        """The rendered body of ``chunk`` (memoized by text)."""
        text = chunk.text
        body = self._bodies.get(text)
        if body is None:
            body = self.bodies.get(text)
            if body is None:
                body = self.format.body(chunk)
                if isinstance(self.bodies, Scoped):
                    self._fresh.append((text, body))
                else:
                    self.bodies[text] = body
            self._bodies[text] = body
        return body

    def flush(self) -> None:
        """Store the bodies and header parts this call rendered in the shared caches, in one batch each."""
        if self._fresh and isinstance(self.bodies, Scoped):
            self.bodies.put_many(self._fresh)
            self._fresh = []
        if self._fresh_parts and isinstance(self.header_parts, Scoped):
            self.header_parts.put_many(self._fresh_parts)
            self._fresh_parts = []

    def count(self, text: str) -> int:
        """Tokens of one string (memoized for this call, then the tokenizer's LRU)."""
        n = self._counts.get(text)
        if n is None:
            n = self.tokenizer.count(text)
            self._counts[text] = n
        return n

    def count_all(self, texts: Iterable[str]) -> None:
        """Count many strings at once (batches of about :data:`BATCH_CHARS` characters for the tokenizer).

        Between batches the assembly's deadline is checked (:mod:`contextwright.core.cancel`):
        a batch is counted in native code that no check can interrupt, and 2 MB of chunks
        take about half a second.
        """
        pending = [t for t in dict.fromkeys(texts) if t not in self._counts]
        start, size = 0, 0
        for i, text in enumerate(pending):
            size += len(text)
            if size >= BATCH_CHARS or i == len(pending) - 1:
                check_cancelled("counting tokens")
                batch = pending[start : i + 1]
                self._counts.update(zip(batch, self.tokenizer.count_many(batch), strict=True))
                start, size = i + 1, 0

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

    def known_tokens(self, chunk: Chunk) -> int | None:
        """:meth:`tokens` of ``chunk`` when this call has counted it, else None (nothing is counted)."""
        return self._text_tokens.get(chunk.text)

    def at_least(self, chunk: Chunk, cap: int) -> int:
        """A lower bound of :meth:`tokens` of ``chunk``, exact enough to compare with ``cap``, found
        without counting it: the count when this call has it, else ``min(bound, cap + 1)``.

        With cl100k's or o200k's pre-tokenizer (``known_splits``), no pre-token holds whitespace
        between two other characters, so a text has at least one token per whitespace-separated
        word (``str.split``, at most ``cap + 1`` of them: bounded work, whatever the text).
        ``str.split`` also splits at U+001C-U+001F, which those pre-tokenizers do not take for
        whitespace: each of those is taken off. The words are the rendered body's; for printable
        ASCII, the text's, without rendering it (escaping then only strips and collapses spaces
        and inserts characters: the body has at least the text's words; elsewhere it may drop
        invisible characters, a word of them included). With a built-in format, ASCII text whose
        only other characters are tabs and line breaks (``\\t``, ``\\n``, ``\\r``: most retrieved
        passages) is read the same way: those escapes keep each as whitespace. Any other
        tokenizer: 1 (0 for an empty body).
        """
        known = self._text_tokens.get(chunk.text)
        if known is not None:
            return known
        if not getattr(self.tokenizer, "known_splits", False):  # the body alone: any format
            return 1 if self.body(chunk) else 0
        text = chunk.text
        if text.isascii() and (text.isprintable() or (self._plain_breaks and not _CONTROLS.search(text))):
            # Printable ASCII, or ASCII whose only controls are tab, line feed and carriage
            # return: the built-in escapes keep each as whitespace (a carriage return becomes a
            # line feed), so the text's words are the body's; no need to render it.
            return count_words(text, max(cap, 0))
        text = self.body(chunk)
        words = count_words(text, max(cap, 0))
        if words and not text.isprintable():  # a control character: a separator str.split took for space?
            words -= sum(text.count(ch) for ch in _SEPARATORS)
        return max(words, 0)

    def total_tokens(self, chunks: Sequence[Chunk]) -> int:
        """Sum of the rendered bodies' tokens."""
        known = self._text_tokens
        if not all(c.text in known for c in chunks):
            self.prime(chunks)
            for c in chunks:
                known[c.text] = self._counts[self.body(c)]
        return sum(known[c.text] for c in chunks)

    def tally(self, chunks: Sequence[Chunk]) -> Tally:
        """:meth:`total_tokens` of ``chunks``, taken when a report first reads it (:class:`Tally`)."""
        return Tally(lambda: self.total_tokens(chunks))

    def header_cost(self, chunk: Chunk, n: int) -> int:
        """Tokens of ``chunk``'s block header as block ``n``.

        When the tokenizer pre-tokenizes digit runs on their own (tiktoken's
        cl100k/o200k: ``\\p{N}{1,3}``) and the header shows ``n`` once, the
        header's count is ``count(before) + count(str(n)) + count(after)``: the
        number-free parts are counted once per chunk and reused for whatever
        number the block gets after ordering.
        """
        if self._digits_isolated:
            # What the header depends on (by default every field it may show and the text: ``lean``
            # with titles leaves out a title the text names, and a cut block keeps its id).
            key = self.format.header_key(chunk)
            known = self._header_costs.get((key, n))
            if known is not None:  # selection prices every candidate as the same block n
                return known
            parts = self._parts.get(key, _UNSPLIT)
            if parts == _UNSPLIT:
                # One get(): the cache is shared across threads and may be cleared at any time.
                parts = self.header_parts.get(key, _UNSPLIT)
                if parts == _UNSPLIT:
                    parts = self._split_header(chunk)
                    if isinstance(self.header_parts, Scoped):
                        self._fresh_parts.append((key, parts))
                    else:
                        self.header_parts.setdefault(key, parts)
                self._parts[key] = parts
            if parts is not None:
                cost = self.count(parts[0]) + self.count(str(n)) + self.count(parts[1])
                self._header_costs[key, n] = cost
                return cost
        header = self.format.block_header(chunk, n)
        return self.count(header) if header else 0

    def _split_header(self, chunk: Chunk) -> tuple[str, str] | None:
        header = self.format.block_header(chunk, _SENTINEL)
        mark = str(_SENTINEL)
        if header.count(mark) != 1:
            return None
        before, after = header.split(mark)
        if before[-1:].isdigit() or after[:1].isdigit() or not before or not after:
            return None
        return before, after

    def block_cost(self, chunk: Chunk, n: int) -> int:
        """Header + body + footer of ``chunk`` as block ``n``."""
        cost = self.tokens(chunk) + self.header_cost(chunk, n)
        footer = self.format.block_footer(chunk, n)
        return cost + self.count(footer) if footer else cost

    def doc_cost(self, chunk: Chunk) -> int:
        """The document header shown before the first block of ``chunk``'s document."""
        head = self.format.doc_header(chunk, first=True)
        return self.count(head) if head else 0

    def header_once(self, chunk: Chunk, docs: Collection[str]) -> int:
        """``chunk``'s document header when the set so far shows none of its document (``docs``), else 0."""
        return self.doc_cost(chunk) if chunk.group_key not in docs else 0

    def added_cost(self, chunk: Chunk, n: int, docs: Collection[str]) -> int:
        """What adding ``chunk`` as one of ``n`` blocks costs a set showing the documents ``docs``."""
        return self.block_cost(chunk, n) + self.header_once(chunk, docs)

    def set_cost(self, chunks: Iterable[Chunk], n: int, *, frame: bool = True) -> int:
        """What rendering all of ``chunks`` as ``n`` blocks costs: the frame once (unless
        ``frame=False``), every block, and each document's header once.

        The one spelling of the set-cost rule; a stage that picks blocks one at a time
        adds :meth:`added_cost` for each and keeps the documents it has shown.
        """
        docs: set[str] = set()
        total = self.frame_cost() if frame else 0
        for c in chunks:
            total += self.added_cost(c, n, docs)
            docs.add(c.group_key)
        return total

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
        layout = (
            self.format.layout(blocks, query=query, body=self.body)
            if _takes_body(type(self.format))
            else self.format.layout(blocks, query=query)
        )
        pieces = [piece for piece, _, _ in layout]
        text = join_pieces(pieces)
        if verify or not (self.format.additive and self.tokenizer.additive) or self._joins(pieces):
            return text, self.tokenizer.count(text)
        if not pieces:
            return text, 0
        total = 0
        for piece, chunk, n in layout[:-1]:
            total += self.header_cost(chunk, n) if chunk is not None else self.count(piece)
        last, chunk, n = layout[-1]
        stripped = last.rstrip("\n")
        if chunk is not None and stripped == last:
            total += self.header_cost(chunk, n)
        else:
            total += self._count_stripped(last, stripped)
        return text, total

    def _joins(self, pieces: Sequence[str]) -> bool:
        """Whether a piece after the first starts with a character that joins across a line end.

        o200k's punctuation pre-token takes the slashes after its newlines, so ``"[1]\\n"`` then
        ``"/usr"`` is not the sum of the two counts (issue 26); the joined text is counted instead.
        """
        starts = self.tokenizer.joining_starts
        return bool(starts) and any(p[:1] in starts for p in pieces[1:])

    def _count_stripped(self, last: str, stripped: str) -> int:
        """Tokens of ``stripped``, the last piece without its trailing newlines.

        The piece itself is counted already (a block body), and the final text is nearly always
        new; so where the tokenizer's pre-tokenizer is known (cl100k, o200k: trailing newlines
        join a final run of punctuation, with one space before it, into one pre-token, and are
        a pre-token of their own after a letter or digit), the count is derived from the
        piece's by re-counting only that last pre-token with and without the newlines. Only
        for ASCII endings; anything else is counted whole.
        """
        if self._known_splits and stripped and len(stripped) < len(last):
            i = len(stripped)
            while i and stripped[i - 1] in _ASCII_PUNCTUATION:
                i -= 1
            if i:
                before = stripped[i - 1]
                tail: str | None = None
                if before == " " and i < len(stripped):
                    tail = stripped[i - 1 :]
                elif before.isascii() and before.isalnum():
                    tail = stripped[i:]
                if tail is not None:
                    newlines = last[len(stripped) :]
                    return self.count(last) - self.count(tail + newlines) + (self.count(tail) if tail else 0)
        return self.count(stripped)
