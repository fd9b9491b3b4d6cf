"""Compression by an LLM: a strictly extractive prompt, and a check that every kept line is in the source."""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from contextwright.clients.chat import ChatClient, check_client_settings
from contextwright.core.errors import ConfigError, LLMError
from contextwright.core.limits import bounded
from contextwright.core.sentences import split_sentences
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, Drop, StageResult
from contextwright.model.spans import compose, join_pieces
from contextwright.render.meter import Meter
from contextwright.stages.base import register_stage
from contextwright.stages.compress import check_plan_settings, plan_compression

logger = logging.getLogger(__name__)

__all__ = ["LLMCompress", "extractive_prompt", "verify_extract"]

# -- LLM compression: verification ----------------------------------------------------------

_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'", "–": "-", "—": "-"})


def _normalize_with_map(text: str) -> tuple[str, list[int]]:
    """NFKC, case-folded, quotes unified, whitespace collapsed; and each output char's source index."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            space = bool(out)
            continue
        norm = unicodedata.normalize("NFKC", ch).casefold().translate(_QUOTES)
        if space:
            out.append(" ")
            where.append(i)
            space = False
        for c in norm:
            out.append(c)
            where.append(i)
    return "".join(out), where


def _normalize(text: str) -> str:
    return _normalize_with_map(text)[0]


_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+")


def verify_extract(source: str, reply: str) -> list[tuple[int, int]] | None:
    """The source sentences a reply copied, or ``None`` when it copied anything not in the source.

    Every sentence of ``reply`` (list markers and surrounding quotes removed)
    must occur in ``source`` after normalization. The result is the spans of
    the source sentences that overlap what was copied, in source order, so the
    kept text is always the source's own sentences.
    """
    norm, where = _normalize_with_map(source)
    sentence_spans = split_sentences(source)
    hit: set[int] = set()
    pieces = [_BULLET.sub("", line).strip().strip("\"'“”") for line in reply.splitlines()]
    found_any = False
    for piece in pieces:
        for s, e in split_sentences(piece):
            needle = _normalize(piece[s:e])
            if not needle:
                continue
            at = norm.find(needle)
            if at < 0:
                return None
            found_any = True
            lo, hi = where[at], where[at + len(needle) - 1] + 1
            for k, (a, b) in enumerate(sentence_spans):
                if a < hi and lo < b:
                    hit.add(k)
    if not found_any:
        return None
    return [sentence_spans[k] for k in sorted(hit)]


def extractive_prompt(query: str, text: str, *, max_sentences: int | None) -> list[dict[str, str]]:
    """The strictly extractive instructions and the passage, as chat messages."""
    limit = f" Copy at most {max_sentences} sentence(s)." if max_sentences else ""
    system = (
        "You select evidence for a question-answering system. From the passage, copy word for word "
        "the sentences that help answer the question, in their original order, one per line." + limit + " "
        "Never paraphrase, shorten, reorder, translate or add words, and add no commentary. "
        "If no sentence helps answer the question, reply with exactly: IRRELEVANT"
    )
    user = f"Question: {query}\n\nPassage:\n{text}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class LLMCompress:
    """Compress what does not fit with an LLM, strictly extractively, verified against the source.

    Runs only when the chunks would overflow the budget, on the same chunks
    :class:`~contextwright.stages.compress.ExtractiveCompress` would shrink
    (everything below the best chunks that fill ``whole_share`` of the budget;
    never the top chunk). Requests run concurrently (``max_concurrency``).
    The reply must consist of sentences copied from the chunk; a reply with
    anything else is rejected and the chunk kept whole, as on any failure.
    ``IRRELEVANT`` drops the chunk (reason ``irrelevant``).

    A :class:`ChatClient` passed to the assembler as the resource ``llm`` is
    used instead of building one from the settings (connection reuse).

    Args:
        base_url: The OpenAI-compatible API root (``.../v1``).
        model: The model name.
        api_key_env: Name of the environment variable holding the API key
            (empty: send no key, e.g. for a local server).
        max_concurrency: Requests in flight at once.
        timeout_s: Timeout of one request, in seconds.
        retries: Retries on 429/5xx/timeouts.
        max_sentences: The most sentences to ask for per chunk.
        whole_share: Share of the budget kept for whole top chunks.
        max_tokens: The most tokens per reply (``None``: the endpoint's default); a
            reply cut short still has to be copied from the chunk to be used.

    Example:
        >>> LLMCompress(base_url="http://127.0.0.1:11434/v1", model="llama3.1", api_key_env="")
    """

    name: ClassVar[str] = "llm_compress"
    requires: ClassVar[tuple[str, ...]] = ("query", "meter", "budget")
    optional: ClassVar[tuple[str, ...]] = ("llm",)
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = bounded(4, 64)
    timeout_s: float = bounded(30.0, 600.0)
    retries: int = bounded(2, 10)
    max_sentences: int | None = bounded(2, 1_000)
    whole_share: float = bounded(0.9, 1.0)
    max_tokens: int | None = bounded(None, 32_768)

    def __post_init__(self) -> None:
        if not isinstance(self.base_url, str) or not isinstance(self.model, str):
            raise ConfigError(
                f"base_url and model must be strings; got base_url={self.base_url!r}, model={self.model!r}. "
                "Example: base_url='https://api.openai.com/v1', model='gpt-4o-mini'.",
                loc=("base_url",),
            )
        if self.base_url and not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base_url must be an http(s) URL; got {self.base_url!r}. Example: 'https://api.openai.com/v1'.",
                loc=("base_url",),
            )
        if self.base_url or self.model:
            check_client_settings(
                model=self.model,
                timeout_s=self.timeout_s,
                retries=self.retries,
                max_concurrency=self.max_concurrency,
            )
        if not isinstance(self.api_key_env, str) or (
            self.api_key_env and not self.api_key_env.isidentifier()
        ):
            raise ConfigError(
                f"api_key_env must name an environment variable (the key itself is never a setting); "
                f"got {self.api_key_env!r}. Example: api_key_env='OPENAI_API_KEY'.",
                loc=("api_key_env",),
            )
        check_plan_settings(self.max_sentences, self.whole_share)
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise ConfigError(
                f"max_tokens must be a positive integer or None; got {self.max_tokens!r}.",
                loc=("max_tokens",),
            )

    def client(self) -> ChatClient:
        """A client built from the settings (the key read from ``api_key_env`` now)."""
        if not self.base_url or not self.model:
            raise ConfigError(
                "llm_compress needs base_url and model settings (or an 'llm' ChatClient resource); "
                f"got base_url={self.base_url!r}, model={self.model!r}."
            )
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return ChatClient(
            self.base_url,
            model=self.model,
            api_key=key,
            timeout_s=self.timeout_s,
            retries=self.retries,
            max_concurrency=self.max_concurrency,
        )

    def __call__(
        self,
        chunks: Sequence[Chunk],
        /,
        *,
        query: str,
        meter: Meter,
        budget: int,
        llm: ChatClient | None = None,
    ) -> StageResult:
        if not chunks:
            return StageResult.of(self.name, chunks, ())
        plan = plan_compression(chunks, meter, budget, whole_share=self.whole_share)
        if plan is None:
            return StageResult.of(self.name, chunks, chunks, notes=["fits the budget; nothing compressed"])
        targets = plan.squeeze
        if not targets:
            return StageResult.of(
                self.name, chunks, chunks, notes=["nothing to compress below the top chunks"]
            )
        own = llm is None
        client = self.client() if llm is None else llm
        try:
            replies = client.complete_many(
                [extractive_prompt(query, c.text, max_sentences=self.max_sentences) for c in targets],
                max_tokens=self.max_tokens,
            )
        finally:
            if own:
                client.close()
        current = {c.id: c for c in chunks}
        drops: list[Drop] = []
        changes: list[Change] = []
        notes: list[str] = []
        for c, reply in zip(targets, replies, strict=True):
            if isinstance(reply, LLMError):
                notes.append(f"kept original {c.id}: {reply}")
                logger.warning(
                    "llm compression failed; original kept", extra={"chunk_id": c.id, "error": str(reply)}
                )
                continue
            if reply.strip().strip(".").upper() == "IRRELEVANT":
                del current[c.id]
                drops.append(
                    Drop(c.id, "irrelevant", detail="the model found no sentence that helps answer the query")
                )
                continue
            spans = verify_extract(c.text, reply)
            if spans is None:
                notes.append(f"kept original {c.id}: rejected a reply that is not copied from the chunk")
                logger.warning("llm reply not extractive; original kept", extra={"chunk_id": c.id})
                continue
            text = join_pieces(c.text, spans)
            if len(text) >= len(c.text.strip()):
                continue
            new = c.with_ops("compressed", text=text, spans=compose(c, spans))
            current[c.id] = new
            changes.append(
                Change(
                    c.id,
                    "compressed",
                    meter.tokens(c),
                    meter.tokens(new),
                    detail=f"{len(spans)} sentence(s) by LLM",
                )
            )
        out = [current[c.id] for c in chunks if c.id in current]
        return StageResult.of(self.name, chunks, out, dropped=drops, changed=changes, notes=notes)
