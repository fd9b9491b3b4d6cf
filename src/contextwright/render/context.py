"""The assembled context: text, citations and report, and the chat messages built from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from contextwright.render.messages import Message

from contextwright.model.chunk import Chunk
from contextwright.model.fields import _provenance_dicts
from contextwright.model.report import Report


@dataclass(frozen=True, slots=True)
class Citation:
    """Where block ``[index]`` of the context came from.

    ``chunk_ids`` lists every input chunk the block stands for (one, or several
    for a merged passage); ``also_sources`` lists the sources of duplicates that
    were folded into it and hold *all* of its text (every word, in order), so a
    citation names every other place the text appears and never lends a source
    to text it lacks. ``duplicates`` are the ids of copies folded into the block
    by dedup and ``also_at`` says where each copy was (``id``, ``source``,
    ``page``, ``line``) and which of the block's text it holds (``held``: ranges
    in the coordinates of ``spans``; ``whole``: all of it), so a reader can check
    the citation at any of its places (:mod:`contextwright.model.provenance`).
    ``spans`` says which text of the chunk the block shows when a stage cut it
    (compressed, truncated, overlap stripped): ``(start, end)`` character
    offsets into the chunk's text as it was passed in (for a merged passage,
    into the passage text); empty when the block shows the text whole.
    ``provenance`` says which ranked lists found the block and at which rank
    (``(list, rank, score)``), when named lists were fused.
    """

    index: int
    label: str
    chunk_ids: tuple[str, ...]
    doc_id: str | None
    source: str | None
    title: str | None
    section: str | None
    page: int | None
    line: int | None
    score: float
    snippet: str
    also_sources: tuple[str, ...] = ()
    index_span: tuple[int, int] | None = None
    spans: tuple[tuple[int, int], ...] = ()
    duplicates: tuple[str, ...] = ()
    also_at: tuple[Mapping[str, Any], ...] = ()
    provenance: tuple[tuple[str, int, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "label": self.label,
            "chunk_ids": list(self.chunk_ids),
            "doc_id": self.doc_id,
            "source": self.source,
            "title": self.title,
            "section": self.section,
            "page": self.page,
            "line": self.line,
            "score": self.score,
            "snippet": self.snippet,
            "also_sources": list(self.also_sources),
            "index_span": list(self.index_span) if self.index_span else None,
            "spans": [list(s) for s in self.spans],
            "duplicates": list(self.duplicates),
            "also_at": [dict(a) for a in self.also_at],
            **({"provenance": _provenance_dicts(self.provenance)} if self.provenance else {}),
        }


@dataclass(frozen=True, slots=True)
class AssembledContext:
    """The result of an assembly: the text the model reads and how it was made.

    Attributes:
        text: The context string; ``tokens <= budget`` always holds.
        tokens: Exact token count of ``text`` with the configured tokenizer.
        budget: The documents budget the text was fitted to.
        citations: ``citations[n-1]`` describes block ``[n]`` of ``text``.
        chunks: The final blocks, in the order they appear in ``text``.
        report: Per-stage counts, tokens, timings, drops and changes.
        query: The query the context was assembled for (may be empty).
        tokenizer: Name of the tokenizer that counted ``tokens``.
    """

    text: str
    tokens: int
    budget: int
    citations: tuple[Citation, ...]
    chunks: tuple[Chunk, ...]
    report: Report
    query: str = ""
    tokenizer: str = ""
    #: The :class:`~contextwright.render.format.Format` the text was rendered in
    #: (prompts ask for its citation label; summaries go through its escape).
    format: Any = field(default=None, compare=False, repr=False)
    #: The config's grounded prompt (a profile's ``prompt``): :meth:`messages` sends it for ``default``.
    prompt: str | None = field(default=None, compare=False, repr=False)
    #: The config's re-ask prompt (a profile's ``reask``; ``False``: never): :func:`contextwright.ask`
    #: asks again with it for ``reask_bare="auto"``.
    reask: str | bool | None = field(default=None, compare=False, repr=False)

    def messages(
        self,
        query: str | None = None,
        *,
        system: str | None = "default",
        history: Sequence[Mapping[str, str]] = (),
        context_in: Literal["system", "user"] = "user",
        history_budget: int | None = None,
        summarizer: Callable[[list[Message]], str] | None = None,
        cache: bool = False,
    ) -> list[Message]:
        """Chat messages in OpenAI format, with this context and a grounded prompt.

        One system message at most: the prompt, the history's system turns and
        summary, and (``context_in="system"``) the context, merged. A named
        prompt asks for the citation label of the context's format.

        Args:
            query: The user's question; defaults to the query assembled for.
            system: A prompt name (``default``, ``strict``, ``soft``, ``light``), a literal
                system prompt, or ``None`` for no system message. ``default`` is the
                config's ``prompt`` when it has one (a profile fitted with ``strict``
                sends ``strict``), else the shipped default.
            history: Earlier turns (``{"role", "content"}``), oldest first;
                by default the history passed to ``assemble``, already trimmed
                (``report.history``). Trimmed to ``history_budget``, or else to the assembler's
                history zone (``history_tokens``) when it is set: oldest turns
                first, never a system message or the latest user turn (see
                :func:`contextwright.render.history.trim_history`, which also
                reports what was dropped).
            context_in: Put the context in the ``system`` message or in the
                final ``user`` message (default).
            history_budget: The history budget in tokens; overrides the zone.
            summarizer: Summarizes dropped turns; the summary counts in the budget.
            cache: Mark Anthropic-style prompt-cache breakpoints
                (``cache_control: {"type": "ephemeral"}``) on the message that
                holds the context: its content becomes text blocks split after
                the stable prefix (``report.stable_prefix_tokens``) and at the
                end of the context. Put the context in the ``system`` message
                for the longest cacheable prefix.

        The tool outputs fitted by ``assemble(..., tools=...)`` come before the
        context, in their own section.
        """
        from contextwright.render.messages import build_messages, config_prompt

        if not history and self.report.history is not None:
            # the history passed to assemble(), trimmed there
            history = [{"role": m["role"], "content": m["content"]} for m in self.report.history.messages]
        elif history and (history_budget is not None or int(self.report.zones.get("history", 0)) > 0):
            zone = history_budget if history_budget is not None else int(self.report.zones["history"])
            from contextwright.render.history import trim_history
            from contextwright.tokens import get_tokenizer

            tokenizer = get_tokenizer(self.tokenizer or "cl100k_base")
            kept = trim_history(history, budget=zone, tokenizer=tokenizer, summarizer=summarizer).messages
            history = [{"role": m["role"], "content": m["content"]} for m in kept]
        if self.format is not None:
            from contextwright.render.history import SUMMARY_PREFIX

            # a summary of dropped turns is text from the conversation: escaped like the context
            history = [
                {
                    "role": "system",
                    "content": SUMMARY_PREFIX + self.format.escape(t["content"][len(SUMMARY_PREFIX) :]),
                }
                if t.get("role") == "system" and str(t.get("content", "")).startswith(SUMMARY_PREFIX)
                else t
                for t in history
            ]
        stable = None
        if cache and self.report.stable_prefix_tokens:
            stable = _prefix_chars(self.text, self.report.stable_prefix_tokens, self.tokenizer)
        return build_messages(
            self.text,
            self.query if query is None else query,
            system=config_prompt(system, self.prompt),
            history=history,
            context_in=context_in,
            format=self.format,
            tools=self.report.tools.text if self.report.tools is not None else "",
            cache=cache,
            stable_chars=stable,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping of text, tokens, citations and report."""
        return {
            "query": self.query,
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "tokenizer": self.tokenizer,
            "citations": [c.to_dict() for c in self.citations],
            "report": self.report.to_dict(),
        }


def _prefix_chars(text: str, tokens: int, tokenizer: str) -> int:
    """Characters of the line-aligned prefix of ``text`` that costs ``tokens`` tokens."""
    from contextwright.tokens import get_tokenizer

    tok = get_tokenizer(tokenizer or "cl100k_base")
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    lo, hi, best = 0, len(ends) - 1, 0
    while lo <= hi:  # the longest line-aligned prefix within ``tokens``
        mid = (lo + hi) // 2
        if tok.count(text[: ends[mid]]) <= tokens:
            best, lo = ends[mid], mid + 1
        else:
            hi = mid - 1
    return best
