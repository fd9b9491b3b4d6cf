"""An OpenAI-compatible chat client and the LLM compression stage.

:class:`ChatClient` talks to any ``/chat/completions`` endpoint (OpenAI,
vLLM, Ollama's ``/v1``, llama.cpp's server) with ``httpx`` (extra ``llm``):
a concurrency limit (a thread pool of ``max_concurrency`` workers), a timeout
per request, and retries with exponential backoff on 429, 5xx, timeouts and
connection errors (``Retry-After`` is honoured, capped at ``max_backoff_s``).

:class:`LLMCompress` (stage ``llm_compress``) asks the model to copy, word
for word, the sentences of a chunk that help answer the query, and trusts
nothing it returns: every returned sentence must occur in the chunk after
normalization (NFKC, case-folded, whitespace collapsed), otherwise the reply
is rejected and the chunk kept whole. The kept text is rebuilt from the
chunk's own sentences, so the output is always a subsequence of the input
with ``spans`` pointing at it. ``IRRELEVANT`` drops the chunk with reason
``irrelevant``. Any failure (HTTP, timeout, malformed JSON, non-extractive
output) keeps the original chunk and is reported in the stage's notes.

The API key is never a setting (settings are serialized into configs): the
stage reads it from the environment variable named by ``api_key_env``.
"""

from __future__ import annotations

import logging
import math
import os
import random
import re
import threading
import time
import unicodedata
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from contextwright.errors import CompressionError, ConfigError, missing_extra
from contextwright.limits import bounded
from contextwright.render.meter import Meter
from contextwright.sentences import split_sentences
from contextwright.spans import compose, join_pieces
from contextwright.stages.base import register_stage
from contextwright.stages.compress import check_plan_settings, plan_compression
from contextwright.types import Change, Chunk, Drop, StageResult

__all__ = ["ChatClient", "LLMCompress", "extractive_prompt", "verify_extract"]

logger = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ChatClient:
    """A small client for OpenAI-compatible chat completions.

    Args:
        base_url: The API root, e.g. ``https://api.openai.com/v1`` or
            ``http://127.0.0.1:11434/v1``; ``/chat/completions`` is appended.
        model: The model name the endpoint expects.
        api_key: Sent as ``Authorization: Bearer ...`` when given.
        timeout_s: Timeout of one request (connect, read, write), in seconds.
        retries: Retries after the first attempt, on 429/5xx/timeouts/connection errors.
        backoff_s: First backoff; doubles each retry (with jitter).
        max_backoff_s: Upper bound of one backoff, also for ``Retry-After``.
        max_concurrency: Requests in flight at once in :meth:`complete_many`.

    Raises:
        MissingDependencyError: when ``httpx`` (extra ``llm``) is not installed.

    Example:
        >>> client = ChatClient("http://127.0.0.1:11434/v1", model="llama3.1")
        >>> client.complete([{"role": "user", "content": "Say hi"}])
        'Hi!'
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_concurrency: int = 4,
    ) -> None:
        try:
            import httpx
        except ImportError:
            raise missing_extra("httpx", "llm") from None
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base_url must be an http(s) URL of an OpenAI-compatible API; got {base_url!r}. "
                "Example: 'https://api.openai.com/v1' or 'http://127.0.0.1:11434/v1'."
            )
        _check_settings(model=model, timeout_s=timeout_s, retries=retries, max_concurrency=max_concurrency)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout_s = float(timeout_s)
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_concurrency = max_concurrency
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._httpx = httpx
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s),
            limits=httpx.Limits(max_connections=max_concurrency),
        )
        self._lock = threading.Lock()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """The assistant's reply to ``messages``.

        Raises:
            CompressionError: after the retries, for HTTP errors, timeouts and
                replies that are not chat-completion JSON; the message says which.
        """
        httpx = self._httpx
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        last = "no attempt"
        for attempt in range(self.retries + 1):
            retry_after: float | None = None
            try:
                response = self._http.post(self.url, json=payload)
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout_s:g} s"
            except httpx.TransportError as exc:
                last = f"connection failed: {type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    return _content(response)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in _RETRY_STATUS:
                    raise CompressionError(f"chat completion failed: {last}")
                retry_after = _retry_after(response.headers.get("retry-after"))
            if attempt < self.retries:
                delay = retry_after if retry_after is not None else self.backoff_s * 2**attempt
                delay = min(self.max_backoff_s, delay) * (
                    1.0 if retry_after is not None else 0.75 + random.random() / 2
                )
                logger.info(
                    "chat completion retry",
                    extra={"attempt": attempt + 1, "error": last, "delay_s": round(delay, 3)},
                )
                time.sleep(delay)
        raise CompressionError(f"chat completion failed after {self.retries + 1} attempt(s): {last}")

    def complete_many(
        self, requests: Sequence[Sequence[Mapping[str, str]]], **options: Any
    ) -> list[str | CompressionError]:
        """Run :meth:`complete` for each message list, at most ``max_concurrency`` at once.

        Returns one reply or :class:`CompressionError` per request, in order.
        """

        def one(messages: Sequence[Mapping[str, str]]) -> str | CompressionError:
            try:
                return self.complete(messages, **options)
            except CompressionError as exc:
                return exc

        if len(requests) <= 1:
            return [one(m) for m in requests]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(one, requests))


def _content(response: Any) -> str:
    try:
        data = response.json()
    except ValueError:
        raise CompressionError(f"the endpoint replied with invalid JSON: {response.text[:200]!r}") from None
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise CompressionError(
            f"the reply is not a chat completion (no choices[0].message.content): {str(data)[:200]}"
        ) from None
    if not isinstance(content, str):
        raise CompressionError(f"choices[0].message.content is not a string: {content!r}")
    return content


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _check_settings(*, model: str, timeout_s: float, retries: int, max_concurrency: int) -> None:
    if not isinstance(model, str) or not model:
        raise ConfigError(
            f"model must be the endpoint's model name; got {model!r}. Example: model='gpt-4o-mini'."
        )
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
        raise ConfigError(f"timeout_s must be a positive number of seconds; got {timeout_s!r}.")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries must be a non-negative integer; got {retries!r}.")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise ConfigError(f"max_concurrency must be a positive integer; got {max_concurrency!r}.")


# -- verification -------------------------------------------------------------

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

    def __post_init__(self) -> None:
        if not isinstance(self.base_url, str) or not isinstance(self.model, str):
            raise ConfigError(
                f"base_url and model must be strings; got base_url={self.base_url!r}, model={self.model!r}. "
                "Example: base_url='https://api.openai.com/v1', model='gpt-4o-mini'."
            )
        if self.base_url and not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base_url must be an http(s) URL; got {self.base_url!r}. Example: 'https://api.openai.com/v1'."
            )
        if self.base_url or self.model:
            _check_settings(
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
                f"got {self.api_key_env!r}. Example: api_key_env='OPENAI_API_KEY'."
            )
        check_plan_settings(self.max_sentences, self.whole_share)

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
                [extractive_prompt(query, c.text, max_sentences=self.max_sentences) for c in targets]
            )
        finally:
            if own:
                client.close()
        current = {c.id: c for c in chunks}
        drops: list[Drop] = []
        changes: list[Change] = []
        notes: list[str] = []
        for c, reply in zip(targets, replies, strict=True):
            if isinstance(reply, CompressionError):
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
