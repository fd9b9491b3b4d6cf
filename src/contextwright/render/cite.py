"""Citations: numbered after ordering, resolvable from an answer."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from contextwright.core.caches import text_cache
from contextwright.model.chunk import Chunk
from contextwright.model.provenance import MAX_HELD_CHECKS, BlockWords
from contextwright.model.spans import Span, compose
from contextwright.render.context import AssembledContext, Citation
from contextwright.render.format import Format

if TYPE_CHECKING:
    from contextwright.render.messages import Message

__all__ = [
    "Answer",
    "CitationResolution",
    "aask",
    "ask",
    "bare_citation",
    "build_citations",
    "chat_messages",
    "labels_shown",
    "reask_wanted",
    "resolve_citations",
]

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


@text_cache(max_bytes=2 * 2**20, maxsize=16_384)
def _snippet(text: str) -> str:
    """The first ``SNIPPET_CHARS`` characters, whitespace collapsed (cached by text)."""
    head = text[: SNIPPET_CHARS + 1]
    if head.isprintable() and "  " not in head and head[:1] != " ":
        # Single spaces only (every other whitespace character is a separator or a control, not
        # printable): nothing to collapse in what the snippet shows, so no need to split the
        # first 600 characters.
        if len(head) > SNIPPET_CHARS:
            return head[: SNIPPET_CHARS - 1] + "…"
        if head[-1:] != " ":
            return head
    snippet = " ".join(text[: SNIPPET_CHARS * 3].split())
    return snippet if len(snippet) <= SNIPPET_CHARS else snippet[: SNIPPET_CHARS - 1] + "…"


def build_citations(blocks: Sequence[Chunk], fmt: Format) -> tuple[Citation, ...]:
    """One citation per block, numbered in the blocks' final order (invariant 3)."""
    out = []
    for n, c in enumerate(blocks, 1):
        # Positional, in field order (a keyword call of this 17-field dataclass costs more).
        out.append(
            Citation(
                n,
                fmt.label(n),
                c.member_ids,
                c.doc_id,
                c.source,
                c.title,
                c.section,
                c.page,
                c.line,
                c.score,
                _snippet(c.text),
                *_also(c),
                c.provenance,
            )
        )
    return tuple(out)


def _also(
    c: Chunk,
) -> tuple[
    tuple[str, ...], tuple[int, int] | None, tuple[Span, ...], tuple[str, ...], tuple[Mapping[str, Any], ...]
]:
    """``also_sources, index_span, spans, duplicates, also_at`` of ``c``'s citation, span-honest.

    A copy's source is in ``also_sources`` only when the copy holds every word of the block's
    text; each ``also_at`` entry says which ranges of it the copy holds (``held``, in the
    coordinates of ``spans``) and whether that is all (``whole``). See
    :mod:`contextwright.model.provenance`. A chunk built by hand without ``copies`` keeps its
    ``also_sources`` as given.
    """
    if not c.also_at:
        return c.also_sources, _span(c), c.spans, c.duplicates, ()
    if not c.copies:
        entries = tuple(
            MappingProxyType({"id": i, "source": src, "page": page, "line": line})
            for i, src, page, line in c.also_at
        )
        return c.also_sources, _span(c), c.spans, c.duplicates, entries
    texts = dict(c.copies)
    block = BlockWords(c.text)
    seen: dict[str, tuple[tuple[Span, ...] | None, bool]] = {}
    whole: set[str] = set()
    out = []
    for i, src, page, line in c.also_at:
        entry: dict[str, Any] = {"id": i, "source": src, "page": page, "line": line}
        copy = texts.get(i)
        if copy is not None:
            if copy not in seen:
                # past MAX_HELD_CHECKS distinct copies: not checked, so never named (bounded work)
                seen[copy] = block.held(copy) if len(seen) < MAX_HELD_CHECKS else (None, False)
            held, is_whole = seen[copy]
            entry["held"] = compose(c, held) if c.spans and held else held
            entry["whole"] = is_whole
            if is_whole and src:
                whole.add(src)
        out.append(MappingProxyType(entry))
    sources = tuple(s for s in c.also_sources if s in whole)
    return sources, _span(c), c.spans, c.duplicates, tuple(out)


@dataclass(frozen=True, slots=True)
class CitationResolution:
    """What an answer cites.

    Attributes:
        cited: The citations the answer refers to, in first-mention order.
        numbers: Every number mentioned, in first-mention order.
        missing: Numbers that match no block of the context (hallucinated).
        uncited: Citations of the context that the answer never mentions.
        bare: The answer is a citation and nothing else (``[1]``, ``See [2, 3].``): the model
            pointed at a source instead of answering (see :func:`bare_citation`). A small model
            does this under some prompts; re-ask it, or try the prompt ``light``.
    """

    cited: tuple[Citation, ...]
    numbers: tuple[int, ...]
    missing: tuple[int, ...]
    uncited: tuple[Citation, ...]
    bare: bool = False

    @property
    def ok(self) -> bool:
        """True when every cited number exists."""
        return not self.missing


@dataclass(frozen=True, slots=True)
class Answer:
    """A model's answer over a context (:func:`ask`, :func:`aask`).

    Attributes:
        text: The reply shown: the second one when the first was a bare citation and the question
            was asked again.
        citations: What ``text`` cites (:func:`resolve_citations`); ``citations.bare`` still true
            means the second reply was a bare citation too.
        reasked: The first reply was a bare citation of the context, so the question was asked again.
        first: The first reply, when it was asked again ("" otherwise).
    """

    text: str
    citations: CitationResolution
    reasked: bool = False
    first: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``answer`` (the reply shown), ``cited`` (each cited block's
        :meth:`Citation.to_dict`), ``missing``, ``bare``, ``reasked`` and ``first``; what
        ``contextwright ask --json`` prints and ``batch --reader`` writes in each row."""
        resolved = self.citations
        return {
            "answer": self.text,
            "cited": [c.to_dict() for c in resolved.cited],
            "missing": list(resolved.missing),
            "bare": resolved.bare,
            "reasked": self.reasked,
            "first": self.first,
        }


_BARE_WORDS = re.compile(r"\b(?:the|sources?|see|according to|answer|is|in)\b", re.IGNORECASE)
_FILLER = re.compile(r"[\s\W_]*", re.UNICODE)


def bare_citation(answer: str) -> bool:
    """Whether ``answer`` is a citation and nothing else: ``[1]``, ``[1, 3].``, ``Source: [SOURCE 2]``.

    A reply that names no answer but points at a block answers nothing; ``eval --reader``
    counts such replies (``bare%``) and :func:`resolve_citations` flags one (``bare``).

    Example:
        >>> bare_citation("[1]"), bare_citation("[2, 3]."), bare_citation("Paris [1]")
        (True, True, False)
    """
    if not _BRACKET.search(answer):  # the brackets parse_citation_numbers reads as citations
        return False
    rest = _BARE_WORDS.sub(" ", _BRACKET.sub(" ", answer))
    return _FILLER.fullmatch(rest) is not None


_NOT_A_BLOCK = 10**12  # above any block count; what a number of more digits stands for


def _number(digits: str) -> int:
    """``int(digits)``, or :data:`_NOT_A_BLOCK` for one of more than 12 digits.

    ``int()`` refuses strings over 4,300 digits (a 500 in the service before, issue 26), and
    no context has that many blocks: such a number is text, not a citation.
    """
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 12 else _NOT_A_BLOCK


def parse_citation_numbers(answer: str, *, max_range: int = 1000, blocks: int | None = None) -> list[int]:
    """Numbers cited in ``answer``: ``[1]``, ``[1, 3]``, ``[1-3]``, ``[SOURCE 2]``.

    Not every bracketed number is a citation. The rule:

    * A number of four digits or more (``[1914]``, ``[2023]``) is a year or a
      page, not a block number, unless the context has that many blocks
      (``blocks``).
    * A range ``[a-b]`` is a citation run only when both ends are plausible
      block numbers: ``1 <= a <= b <= max(blocks + 5, 2 × blocks)``.
      ``[1914-1918]`` and, with 3 blocks, the page range ``[112-118]`` are
      not citations; ``[3-5]`` with 3 blocks is (4 and 5 are then reported
      missing). Without ``blocks``, ranges wider than ``max_range`` are
      ignored.
    * Footnote markers (``[^2]``) and anything with other words inside the
      brackets (``[pp. 12-15]``) never match.
    * A single number below 1000 always counts, so a hallucinated ``[7]`` in
      a three-block context is reported missing.

    Items of a list are judged one by one: ``[1, 1914]`` cites 1.
    """
    seen: dict[int, None] = {}
    # skip[k]: a number >= k that may be unseen (every number from k up to it is seen). A range
    # walks only its unseen numbers, so "[1-1000, 1-1000, ...]" costs its length, not 1000 per
    # range: the work is linear in the answer plus the distinct numbers (at most ``year``).
    skip: dict[int, int] = {}
    year = max(1000, (blocks or 0) + 1)  # the smallest number that cannot be a block number
    limit = max(blocks + 5, 2 * blocks) if blocks is not None else None
    for m in _BRACKET.finditer(answer):
        for item in _ITEM.finditer(m.group(1)):
            if item.group(3) is not None:
                k = _number(item.group(3))
                if k < year and k not in seen:
                    seen[k] = None
                    skip[k] = k + 1
                continue
            lo, hi = _number(item.group(1)), _number(item.group(2))
            if not 1 <= lo <= hi or hi >= year:
                continue
            if (limit is not None and hi > limit) or (limit is None and hi - lo > max_range):
                continue
            k = _unseen(skip, lo)
            while k <= hi:
                seen[k] = None
                skip[k] = k + 1
                k = _unseen(skip, k + 1)
            skip[lo] = k  # the next range from lo starts past what this one covered
    return list(seen)


def _unseen(skip: dict[int, int], k: int) -> int:
    """The smallest number >= ``k`` not yet seen, shortening the chain it followed."""
    root = k
    while root in skip:
        root = skip[root]
    while k in skip and skip[k] != root:
        skip[k], k = root, skip[k]
    return root


def resolve_citations(answer: str, ctx: AssembledContext | Sequence[Citation]) -> CitationResolution:
    """Map the citation markers in an LLM answer back to sources.

    Which bracketed numbers count as citations is the rule of
    :func:`parse_citation_numbers` with the context's block count: years,
    page ranges and footnote markers are not citations; a plausible number
    without a block is reported ``missing``.

    Args:
        answer: The model's answer text.
        ctx: The assembled context (or its citations) the answer was made from.

    Example:
        >>> r = resolve_citations("Paris [1], founded early [2-3].", ctx)
        >>> [c.source for c in r.cited], r.missing
    """
    citations = ctx.citations if isinstance(ctx, AssembledContext) else tuple(ctx)
    by_number = {c.index: c for c in citations}
    numbers = parse_citation_numbers(answer, blocks=len(citations))
    cited = tuple(by_number[k] for k in numbers if k in by_number)
    missing = tuple(k for k in numbers if k not in by_number)
    mentioned = set(numbers)
    uncited = tuple(c for c in citations if c.index not in mentioned)
    # Bare only when a number counts as a citation here: "[1914]" answers "when?" (a year).
    bare = bool(numbers) and bare_citation(answer)
    return CitationResolution(cited, tuple(numbers), missing, uncited, bare)


def ask(
    ctx: AssembledContext,
    llm: Callable[[list[Message]], str],
    query: str | None = None,
    *,
    system: str | None = "default",
    reask_bare: str | None = "auto",
    **options: Any,
) -> Answer:
    """Ask ``llm`` the question over ``ctx``, and once more when it answers with a bare citation.

    A small instruct model sometimes replies ``[1]`` and nothing else: it points at a source
    instead of answering. When the reply is such a citation of this context
    (:attr:`CitationResolution.bare`), the same question and context are sent again under the
    prompt ``reask_bare`` (by default ``light``: the answer first, then its sources), and that
    reply is the answer. Measured in docs/fit.md ("Asking again after a bare citation"): on Qwen2.5-Coder-0.5B
    it ends the bare replies; SmolLM2-135M gives almost none (2 of 640 replies), so it almost never
    fires there. A context without citation labels (``minimal``) is not asked again
    (:func:`reask_wanted`, the rule ``eval --reask-bare`` uses too).

    Args:
        ctx: The assembled context.
        llm: Your model: called with the chat messages (OpenAI format), returns the reply's text,
            e.g. ``lambda m: client.chat.completions.create(model=M, messages=m).choices[0].message.content``.
        query: The question; defaults to the query assembled for.
        system: The prompt of the first request (as :meth:`AssembledContext.messages`).
        reask_bare: The prompt of the second request (a name or a text); ``None``: never ask
            again. ``auto`` (default): the config's ``reask`` (a profile fitted with ``fit
            --reask-bare``; ``false`` there: never), else ``light``. Not sent when it is the first
            request's prompt (the same request).
        **options: Passed to :meth:`AssembledContext.messages` for both requests (``history``,
            ``context_in``, ...).

    Raises:
        InputError: when ``llm`` returns something other than a string.

    Example:
        >>> got = ask(ctx, my_llm)
        >>> got.text, [c.source for c in got.citations.cited], got.reasked
    """
    reask_bare = _reask_of(ctx, reask_bare)  # checked before the first request, not once a reply is bare
    first = _reply_text(llm(ctx.messages(query, system=system, **options)))
    answer = _first_answer(ctx, first, system, reask_bare)
    if answer is not None:  # not a bare citation, or not to be asked again
        return answer
    again = _reply_text(llm(ctx.messages(query, system=reask_bare, **options)))
    return Answer(again, resolve_citations(again, ctx), reasked=True, first=first)


async def aask(
    ctx: AssembledContext,
    llm: Callable[[list[Message]], Awaitable[str]],
    query: str | None = None,
    *,
    system: str | None = "default",
    reask_bare: str | None = "auto",
    **options: Any,
) -> Answer:
    """:func:`ask` with an async ``llm`` (e.g. ``AsyncOpenAI``): awaited once, and once more after a
    bare citation.

    Example:
        >>> got = await aask(ctx, my_async_llm)
    """
    reask_bare = _reask_of(ctx, reask_bare)
    first = _reply_text(await llm(ctx.messages(query, system=system, **options)))
    answer = _first_answer(ctx, first, system, reask_bare)
    if answer is not None:  # not a bare citation, or not to be asked again
        return answer
    again = _reply_text(await llm(ctx.messages(query, system=reask_bare, **options)))
    return Answer(again, resolve_citations(again, ctx), reasked=True, first=first)


def _reask_of(ctx: AssembledContext, reask_bare: str | None) -> str | None:
    """The re-ask prompt ``ask`` sends: ``reask_bare`` checked (a one-word typo is refused, as a
    config's ``prompt``), ``auto`` resolved against the context's config (``ctx.reask``)."""
    from contextwright.render.messages import check_reask, reask_prompt

    return reask_prompt(check_reask(reask_bare), ctx.reask)


def _first_answer(
    ctx: AssembledContext, first: str, system: str | None, reask_bare: str | None
) -> Answer | None:
    """The first reply as the answer, or None when it is a bare citation to ask again under
    ``reask_bare``: not when that is the first request's prompt (the same request), nor for a
    context without citation labels (``minimal``), whose prompt asks for no numbers."""
    from contextwright.render.messages import config_prompt

    cited = resolve_citations(first, ctx)
    same = config_prompt(reask_bare, ctx.prompt) == config_prompt(system, ctx.prompt)
    if reask_bare is None or same or not reask_wanted(first, ctx.format, len(ctx.citations)):
        return Answer(first, cited)
    return None


def chat_messages(
    ctx: AssembledContext, system: str | None = "default", reask_bare: str | None = "auto"
) -> dict[str, Any]:
    """The chat :func:`ask` sends, as data, for a caller that sends it itself (the service's
    ``messages: true``, ``contextwright assemble --messages``).

    ``messages``: the chat under ``system`` (:meth:`AssembledContext.messages`: the prompt, the kept
    history, the tools, the context and the query). ``reask_messages``: the same under
    ``reask_bare`` (``auto``: the config's ``reask``, else ``light``), to send once when the reply
    to ``messages`` is a bare citation (:attr:`CitationResolution.bare`); present only where ``ask``
    would ask again: the context shows citation labels and the re-ask differs from ``messages``.

    Example:
        >>> chat = chat_messages(ctx)
        >>> reply = llm(chat["messages"])
        >>> if resolve_citations(reply, ctx).bare and "reask_messages" in chat:
        ...     reply = llm(chat["reask_messages"])
    """
    again = _reask_of(ctx, reask_bare)
    first = ctx.messages(system=system)
    out: dict[str, Any] = {"messages": first}
    if again is not None and ctx.citations and labels_shown(ctx.format):
        second = ctx.messages(system=again)
        if second != first:
            out["reask_messages"] = second
    return out


def reask_wanted(answer: str, format: Format | None, blocks: int) -> bool:
    """Whether ``answer`` is a bare citation worth asking again: a context in ``format`` (``None``:
    ``[n]``) with ``blocks`` blocks shows citation labels, and the answer is one of them and
    nothing else (:attr:`CitationResolution.bare`'s rule). :func:`ask` and ``eval --reask-bare``
    both decide by it."""
    if not labels_shown(format):
        return False  # minimal: no labels shown, and its prompt asks for no numbers
    return bool(parse_citation_numbers(answer, blocks=blocks)) and bare_citation(answer)


def labels_shown(format: Format | None) -> bool:
    """Whether a context in ``format`` (``None``: ``[n]``) shows its blocks' citation labels, so a
    bare citation of it can be asked again (not ``minimal``, whose prompt asks for no numbers)."""
    return format is None or format.citation_style() is not None


def _reply_text(reply: Any) -> str:
    """The reply of the ``llm`` given to :func:`ask`, which must be its text."""
    if not isinstance(reply, str):
        from contextwright.core.errors import InputError

        raise InputError(
            f"llm must return the reply's text (a str); got {type(reply).__name__}. With the OpenAI "
            "client, return response.choices[0].message.content."
        )
    return reply
