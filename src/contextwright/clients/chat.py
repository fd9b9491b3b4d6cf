"""An OpenAI-compatible chat client: the one way contextwright talks to a model.

:class:`ChatClient` talks to any ``/chat/completions`` endpoint (OpenAI,
vLLM, Ollama's ``/v1``, llama.cpp's server) with ``httpx`` (extra ``llm``):
a concurrency limit (a thread pool of ``max_concurrency`` workers), a timeout
per request, and retries with exponential backoff on 429, 5xx, timeouts and
connection errors (``Retry-After`` is honoured, capped at ``max_backoff_s``).
Every failure raises :class:`~contextwright.core.errors.LLMError` with the status
and the start of the body, after the retries.

This module is an edge, like a chunk store: it imports no stage. The stages
that call a model (``llm_compress`` in :mod:`contextwright.stages.compress`)
and the reader evaluation (:mod:`contextwright.eval.reader`) import it.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from contextwright.core.errors import ConfigError, LLMError, missing_extra

__all__ = ["ChatClient", "ChatReply", "check_client_settings"]

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
        max_reply_bytes: The most bytes a reply may have (default 4 MiB); a longer one is an
            ``LLMError``, never read whole.

    ``timeout_s`` is also a deadline for the whole request: a reply still arriving when it has
    passed is abandoned (an endpoint dripping a byte a second took 43 s a request before, as
    each read had its own timeout); a silent connection ends at the read timeout, so one
    attempt takes at most about twice ``timeout_s``. A reply that is not JSON, nests deeper
    than Python can parse, or is not a chat completion is an ``LLMError`` too, so an
    evaluation records it for that query and goes on (issue 26).

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
        max_reply_bytes: int = 4 << 20,
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
        check_client_settings(
            model=model, timeout_s=timeout_s, retries=retries, max_concurrency=max_concurrency
        )
        if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, int) or max_reply_bytes < 1:
            raise ConfigError(
                f"max_reply_bytes must be a positive number of bytes; got {max_reply_bytes!r}. "
                "The default is 4194304 (4 MiB)."
            )
        self.max_reply_bytes = max_reply_bytes
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

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> ChatReply:
        """The assistant's reply to ``messages``, with the usage the endpoint reports.

        Raises:
            LLMError: after the retries, for HTTP errors, timeouts and replies
                that are not chat-completion JSON; the message says which.
                ``status`` holds the HTTP status (``None`` for no response).
        """
        httpx = self._httpx
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        if seed is not None:
            payload["seed"] = seed
        last = "no attempt"
        status: int | None = None
        for attempt in range(self.retries + 1):
            retry_after: float | None = None
            start = time.perf_counter()
            try:
                status, body, headers = self._post(payload, start + self.timeout_s)
            except httpx.TimeoutException:
                last, status = f"timed out after {self.timeout_s:g} s", None
            except _Deadline:
                last, status = f"the reply was still arriving at the {self.timeout_s:g} s deadline", None
            except httpx.TransportError as exc:
                last, status = f"connection to {self.url} failed: {type(exc).__name__}: {exc}", None
            else:
                if status == 200:
                    return _reply(body, (time.perf_counter() - start) * 1000)
                last = f"HTTP {status} from {self.url}: {body[:300].decode('utf-8', 'replace')}"
                if status not in _RETRY_STATUS:
                    hint = _HINTS.get(status, "")
                    raise LLMError(f"chat completion failed: {last}{hint}", status=status)
                retry_after = _retry_after(headers.get("retry-after"))
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
        raise LLMError(f"chat completion failed after {self.retries + 1} attempt(s): {last}", status=status)

    def _post(self, payload: Mapping[str, Any], deadline: float) -> tuple[int, bytes, Mapping[str, str]]:
        """POST ``payload``; the status, the body (at most ``max_reply_bytes``) and the headers.

        Raises:
            LLMError: for a body over ``max_reply_bytes``.
            _Deadline: when the body is still arriving at ``deadline``.
        """
        with self._http.stream("POST", self.url, json=payload) as response:
            length = response.headers.get("content-length", "")
            if length.isdigit() and int(length) > self.max_reply_bytes:
                raise LLMError(self._too_long(), status=response.status_code)
            body = bytearray()
            for part in response.iter_bytes():
                body += part
                if len(body) > self.max_reply_bytes:
                    raise LLMError(self._too_long(), status=response.status_code)
                if time.perf_counter() > deadline:
                    raise _Deadline
            return response.status_code, bytes(body), response.headers

    def _too_long(self) -> str:
        return (
            f"the endpoint's reply is over {self.max_reply_bytes:,} bytes (max_reply_bytes); "
            "a chat completion of a few tokens is a few hundred bytes"
        )

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """The text of the assistant's reply to ``messages`` (see :meth:`chat`).

        Raises:
            LLMError: as :meth:`chat`.
        """
        return self.chat(messages, temperature=temperature, max_tokens=max_tokens).content

    def complete_many(
        self, requests: Sequence[Sequence[Mapping[str, str]]], **options: Any
    ) -> list[str | LLMError]:
        """Run :meth:`complete` for each message list, at most ``max_concurrency`` at once.

        Returns one reply or :class:`~contextwright.core.errors.LLMError` per request, in order.
        """

        def one(messages: Sequence[Mapping[str, str]]) -> str | LLMError:
            try:
                return self.complete(messages, **options)
            except LLMError as exc:
                return exc

        if len(requests) <= 1:
            return [one(m) for m in requests]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(one, requests))


_HINTS = {
    401: " (check the API key: the environment variable named by --reader-key-env / api_key_env)",
    403: " (the key is not allowed to use this model or endpoint)",
    404: " (check the base URL, which must end in /v1 for most servers, and the model name)",
}


@dataclass(frozen=True, slots=True)
class ChatReply:
    """One chat completion.

    Attributes:
        content: The assistant's text.
        finish_reason: ``stop``, ``length`` (cut at ``max_tokens``), ... as the endpoint says.
        prompt_tokens: Prompt tokens the endpoint counted (``None`` when it reports no usage).
        completion_tokens: Completion tokens the endpoint counted.
        latency_ms: Wall time of the successful request.
    """

    content: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0


class _Deadline(Exception):
    """The whole-request deadline passed while the reply was arriving."""


def _reply(body: bytes, latency_ms: float) -> ChatReply:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise LLMError(f"the endpoint replied with invalid JSON: {body[:200]!r}") from None
    except RecursionError:
        raise LLMError("the endpoint replied with JSON nested too deeply to be a chat completion") from None
    try:
        choice = data["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMError(
            f"the reply is not a chat completion (no choices[0].message.content): {str(data)[:200]}"
        ) from None
    if not isinstance(content, str):
        raise LLMError(f"choices[0].message.content is not a string: {content!r}")
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    return ChatReply(
        content=content,
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
        latency_ms=latency_ms,
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def check_client_settings(*, model: str, timeout_s: float, retries: int, max_concurrency: int) -> None:
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
