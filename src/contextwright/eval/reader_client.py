"""The reader: a chat model asked one question over one context, with its replies cached in SQLite."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from contextwright.clients.chat import ChatClient, ChatReply
from contextwright.clients.replies import ReplyCache, reply_key
from contextwright.core.errors import ConfigError, LLMError

logger = logging.getLogger(__name__)

CLOSED_BOOK = "closed-book"
ORACLE = "oracle"
#: The system prompt of the closed-book run (the grounded prompts talk about sources it does not have).
CLOSED_BOOK_PROMPT = "Answer the question in a few words."
#: The suffix asked of every reader: short answers score fairly and cost little.
BRIEF = " Answer in a few words."
Progress = Callable[[int, int], None]


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/contextwright/reader.sqlite`` (``~/.cache/...`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextwright" / "reader.sqlite"


class Reader:
    """A model that answers questions, with a reply cache on disk.

    Args:
        base_url: The OpenAI-compatible API root (``.../v1``).
        model: The model name the endpoint expects.
        api_key: Sent as a bearer token when given (read it from the environment, never a file).
        cache: SQLite file for replies (``None``: in memory, nothing kept).
        max_tokens: The most tokens per answer (short answers: the metric needs a few words).
        temperature: Sampling temperature (0: greedy, reproducible on most servers).
        max_concurrency: Requests in flight at once.
        timeout_s: Timeout of one request.
        retries: Retries with exponential backoff on 429/5xx/timeouts/connection errors.
        system: The grounded system prompt for contexts (a name in
            :data:`~contextwright.render.messages.PROMPTS` or the text).
        client: A ready :class:`~contextwright.clients.chat.ChatClient` (its URL and model are used).
        offline: Answer from the cache only: a request not in it fails (recorded per query)
            and nothing is sent, e.g. to re-print the report of a finished or interrupted run.
        cache_endpoint: What identifies the endpoint in the cache key (default: its URL). A
            stable label keeps the cache valid for a local server whose port changes per run.

    Example:
        >>> Reader("http://127.0.0.1:11434/v1", model="llama3.1", cache="reader.sqlite")
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api_key: str | None = None,
        cache: str | Path | None = None,
        max_tokens: int = 32,
        temperature: float = 0.0,
        max_concurrency: int = 4,
        timeout_s: float = 120.0,
        retries: int = 3,
        system: str = "default",
        client: ChatClient | None = None,
        offline: bool = False,
        cache_endpoint: str | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"max_tokens must be a positive integer; got {max_tokens!r}. Example: 32.")
        self.client = client or ChatClient(
            base_url,
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            retries=retries,
            max_concurrency=max_concurrency,
        )
        self.endpoint = self.client.url
        self.cache_endpoint = cache_endpoint or self.endpoint
        self.model = self.client.model
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.max_concurrency = self.client.max_concurrency
        self.system = system
        self._cache = ReplyCache(cache)
        self.cache_path = self._cache.path
        self._checked = False
        self.offline = offline

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool and the cache."""
        self.client.close()
        self._cache.close()

    def key(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The cache key of a request: endpoint, model, messages and generation settings."""
        return reply_key(self.cache_endpoint, self.model, messages, self.max_tokens, self.temperature)

    def cached(self, messages: Sequence[Mapping[str, str]]) -> ChatReply | None:
        """The cached reply to ``messages``, or ``None``."""
        return self._cache.get(self.key(messages))

    def check(self) -> None:
        """Send one tiny request; stop early on an unreachable endpoint or a rejected key.

        Raises:
            LLMError: for a connection failure, 401/403/404, naming the endpoint and the fix.
        """
        if self._checked or self.offline:
            return
        try:
            self.client.chat([{"role": "user", "content": "Say OK."}], max_tokens=1, temperature=0.0)
        except LLMError as exc:
            if exc.status is None or exc.status in (401, 403, 404):
                raise LLMError(
                    f"the reader endpoint {self.endpoint} (model {self.model!r}) cannot be used: {exc}",
                    status=exc.status,
                ) from None
            # Any other status (a 400 for the probe itself, 5xx after retries) is left to the queries.
        self._checked = True

    def ask(self, messages: Sequence[Mapping[str, str]]) -> tuple[ChatReply, bool]:
        """The reply to ``messages`` and whether it came from the cache.

        Raises:
            LLMError: when the request fails or the reply is empty.
        """
        key = self.key(messages)
        hit = self._cache.get(key)
        if hit is not None:
            return hit, True
        if self.offline:
            raise LLMError("not in the reply cache, and the reader is offline (nothing was sent)")
        reply = self.client.chat(messages, temperature=self.temperature, max_tokens=self.max_tokens)
        if not reply.content.strip():
            raise LLMError(
                f"the model returned an empty reply (finish_reason={reply.finish_reason!r}); "
                "check the chat template and max_tokens"
            )
        self._cache.put(key, self.endpoint, self.model, reply)
        return reply, False

    def ask_many(
        self, requests: Sequence[Sequence[Mapping[str, str]]], *, progress: Progress | None = None
    ) -> list[tuple[ChatReply, bool] | LLMError]:
        """:meth:`ask` for each request, ``max_concurrency`` at once; identical requests are sent once.

        Ctrl-C cancels what has not started, waits for the requests in flight
        (their replies go to the cache; a second Ctrl-C stops waiting) and
        re-raises; every reply that arrived is in the cache, so the same call
        resumes from there.
        """
        keys = [self.key(m) for m in requests]
        out: dict[str, tuple[ChatReply, bool] | LLMError] = {}
        uncached: dict[str, Sequence[Mapping[str, str]]] = {}
        for k, m in zip(keys, requests, strict=True):
            if k in out or k in uncached:
                continue
            hit = self._cache.get(k)
            if hit is not None:
                out[k] = (hit, True)
            else:
                uncached[k] = m
        total = len(out) + len(uncached)
        if progress is not None:
            progress(len(out), total)
        if uncached and not self.offline and callable(getattr(self.client, "chat_many", None)):
            self._ask_batched(uncached, out, total, progress)
        elif uncached:
            self.check()

            def one(messages: Sequence[Mapping[str, str]]) -> tuple[ChatReply, bool] | LLMError:
                try:
                    return self.ask(messages)
                except LLMError as exc:
                    return exc

            pool = ThreadPoolExecutor(max_workers=self.max_concurrency)
            try:
                pending: dict[Future[tuple[ChatReply, bool] | LLMError], str] = {}
                items = iter(uncached.items())
                # Submit a bounded window so Ctrl-C leaves little in flight.
                for k, m in items:
                    pending[pool.submit(one, m)] = k
                    if len(pending) >= 2 * self.max_concurrency:
                        break
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        out[pending.pop(fut)] = fut.result()
                        if progress is not None:
                            progress(len(out), total)
                    for k, m in items:
                        pending[pool.submit(one, m)] = k
                        if len(pending) >= 2 * self.max_concurrency:
                            break
            except BaseException:
                # Ctrl-C: drop what has not started, let the requests in flight land in the cache
                # (at most max_concurrency, each bounded by timeout_s), so the cache is complete
                # when the caller sees the interrupt; a second Ctrl-C stops waiting.
                try:
                    pool.shutdown(wait=True, cancel_futures=True)
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
        return [out[k] for k in keys]

    def _ask_batched(
        self,
        uncached: Mapping[str, Sequence[Mapping[str, str]]],
        out: dict[str, tuple[ChatReply, bool] | LLMError],
        total: int,
        progress: Progress | None,
    ) -> None:
        """Ask a batched engine (a client with ``chat_many``, e.g. transformers on a GPU) batch by batch.

        Each batch's replies go to the cache before the next starts, so Ctrl-C
        loses at most one batch.
        """
        size = max(1, int(getattr(self.client, "batch_size", 64)))
        items = list(uncached.items())
        for start in range(0, len(items), size):
            batch = items[start : start + size]
            replies = self.client.chat_many(  # type: ignore[attr-defined]
                [m for _, m in batch], temperature=self.temperature, max_tokens=self.max_tokens
            )
            for (k, _), reply in zip(batch, replies, strict=True):
                if isinstance(reply, ChatReply) and reply.content.strip():
                    self._cache.put(k, self.endpoint, self.model, reply)
                    out[k] = (reply, False)
                else:
                    out[k] = (
                        reply
                        if isinstance(reply, LLMError)
                        else LLMError("the engine returned an empty reply")
                    )
            if progress is not None:
                progress(len(out), total)
