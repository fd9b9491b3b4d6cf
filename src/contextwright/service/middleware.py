"""ASGI middleware of the service, outermost first (see :func:`add_middleware`).

* :class:`RequestMetrics`: counts and times every request;
* :class:`RequestContext`: ``X-Request-ID`` on every response, the JSON access log;
* CORS (Starlette's), when ``cors_origins`` is set;
* :class:`Admission`: counts requests in flight; 503 while draining;
* :class:`Auth`: ``Authorization: Bearer`` against the API keys (401);
* :class:`RateLimit`: a token bucket per key or client (429 + ``Retry-After``);
* :class:`BodyLimit`: 413 over ``max_body_bytes``, 408 past ``body_timeout_s``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from contextwright.service.lifecycle import Lifecycle
from contextwright.service.metrics import Metrics
from contextwright.service.problems import (
    BodyTimeout,
    BodyTooLarge,
    body_too_large,
    problem_body,
    send_problem,
)
from contextwright.service.security import ApiKeys, AuthFailures, RateLimiter, TrustedProxies, forwarded_hops
from contextwright.service.settings import ServiceConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "ASGIApp",
    "Admission",
    "Auth",
    "BodyLimit",
    "RateLimit",
    "RequestContext",
    "RequestMetrics",
    "add_middleware",
]

access_logger = logging.getLogger("contextwright.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ROUTE_PATHS = frozenset({"/v1/assemble", "/v1/citations/resolve", "/healthz", "/metrics", "/"})


class BodyLimit:
    """413 for bodies over ``limit`` bytes (on ``Content-Length`` and on the bytes actually
    streamed); 408 when the whole body has not arrived ``timeout_s`` after the request began."""

    def __init__(self, app: ASGIApp, *, limit: int, timeout_s: float) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await send_problem(
                        send,
                        problem_body(
                            400,
                            "bad-content-length",
                            "Content-Length is not an integer.",
                            loc=["header", "content-length"],
                        ),
                    )
                    return
                if declared > limit:
                    await send_problem(
                        send, problem_body(413, "body-too-large", body_too_large(limit), loc=["body"])
                    )
                    return
        received = 0
        complete = False
        deadline = time.monotonic() + self.timeout_s

        async def limited() -> Message:
            nonlocal received, complete
            if complete:  # after the body, receive() only waits for the disconnect
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise BodyTimeout(self.timeout_s) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
                complete = not message.get("more_body", False)
            return message

        await self.app(scope, limited, send)


class RequestMetrics:
    """Count every request by route template, method and status, and time it."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            route = scope.get("route")
            # The route template, so that labels stay few; a 413 answered before routing
            # still counts under its path when that path is a route.
            path = getattr(route, "path", None) or (
                scope["path"] if scope["path"] in ROUTE_PATHS else "unmatched"
            )
            self.metrics.observe_request(
                path, scope.get("method", ""), status[0], time.perf_counter() - start
            )


_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")


def _state(scope: Scope) -> dict[str, Any]:
    """The per-request ``scope["state"]`` (what ``request.state`` reads)."""
    state: dict[str, Any] = scope.setdefault("state", {})
    return state


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class RequestContext:
    """Give every request an id (the client's ``X-Request-ID`` when it is sane, else a new one),
    send it back on the response, and write one JSON access-log line when the request ends."""

    def __init__(self, app: ASGIApp, *, log: bool) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        given = _header(scope, b"x-request-id")
        request_id = given if given is not None and _REQUEST_ID.match(given) else uuid.uuid4().hex
        state = _state(scope)
        state["request_id"] = request_id
        status = 500
        sent = 0

        async def tagged(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"x-request-id"]
                message["headers"] = [*headers, (b"x-request-id", request_id.encode())]
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, tagged)
        finally:
            if self.log:
                client = scope.get("client")
                access_logger.info(
                    json.dumps(
                        {
                            "ts": round(time.time(), 3),
                            "request_id": request_id,
                            "key_id": state.get("key_id"),
                            "client": client[0] if client else None,
                            "method": scope.get("method"),
                            "path": scope.get("path"),
                            "status": status,
                            "ms": round((time.perf_counter() - start) * 1000, 3),
                            "bytes_out": sent,
                        },
                        ensure_ascii=False,
                    )
                )


class Admission:
    """Count the requests in flight; while draining, answer new ones 503 (``Connection: close``)."""

    def __init__(self, app: ASGIApp, *, lifecycle: Lifecycle, exempt: frozenset[str]) -> None:
        self.app = app
        self.lifecycle = lifecycle
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        if self.lifecycle.draining:
            body = problem_body(503, "draining", "the server is shutting down; retry on another instance.")
            await send_problem(send, body, [(b"connection", b"close"), (b"retry-after", b"1")])
            return
        self.lifecycle.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.lifecycle.in_flight -= 1


class Auth:
    """Require ``Authorization: Bearer KEY`` with a known key (401 otherwise) outside ``open_paths``.

    The 401 is the same for a missing, malformed or unknown key, so it tells nothing
    about which keys exist. The key's id (never the key) goes to ``scope["state"]["key_id"]``.
    """

    def __init__(
        self, app: ASGIApp, *, keys: ApiKeys, open_paths: frozenset[str], failures: AuthFailures | None = None
    ) -> None:
        self.app = app
        self.keys = keys
        self.open_paths = open_paths
        self.failures = failures

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = client[0] if client else "unknown"
        if self.failures is not None and (wait := self.failures.wait(address)) > 0:
            await self._too_many(send, wait)
            return
        scheme, _, token = (_header(scope, b"authorization") or "").strip().partition(" ")
        key_id = self.keys.identify(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if key_id is None:
            if self.failures is not None:
                self.failures.record(address)
            body = problem_body(
                401,
                "unauthorized",
                "missing or invalid API key; send the header Authorization: Bearer <key>.",
            )
            await send_problem(send, body, [(b"www-authenticate", b'Bearer realm="contextwright"')])
            return
        _state(scope)["key_id"] = key_id
        await self.app(scope, receive, send)

    async def _too_many(self, send: Send, wait: float) -> None:
        assert self.failures is not None
        retry = RateLimiter.retry_after(wait)
        body = problem_body(
            429,
            "too-many-failed-keys",
            f"{self.failures.limit} failed authentications from this address within "
            f"{self.failures.window_s:g} s (auth_fail_limit, auth_fail_window_s); no key is checked "
            f"until the window ends. Retry after {retry} s with a valid key.",
        )
        await send_problem(send, body, [(b"retry-after", retry.encode())])


class RateLimit:
    """At most ``rate`` requests per second per key (or client address), ``burst`` at once; 429 above."""

    def __init__(self, app: ASGIApp, *, limiter: RateLimiter, exempt: frozenset[str]) -> None:
        self.app = app
        self.limiter = limiter
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        caller = _state(scope).get("key_id") or (client[0] if client else "unknown")
        wait = self.limiter.take(caller)
        if wait > 0:
            retry = self.limiter.retry_after(wait)
            body = problem_body(
                429,
                "rate-limited",
                f"over the rate limit of {self.limiter.rate:g} requests/s (burst {self.limiter.burst:g}); "
                f"retry after {retry} s.",
            )
            await send_problem(send, body, [(b"retry-after", retry.encode())])
            return
        await self.app(scope, receive, send)


class ForwardedClient:
    """Set the request's client (and scheme) from ``X-Forwarded-For`` (``-Proto``), or else from
    RFC 7239 ``Forwarded`` (``for=``, ``proto=``), but only for a request that arrives from a
    trusted proxy (:class:`~contextwright.service.security.TrustedProxies`).

    Outermost, so the access log, the failed-login limit and the rate limit all see the same client.
    The server runs uvicorn with its own proxy-header handling off (``contextwright serve``), so
    the peer address reaching this middleware is the connection's.
    """

    def __init__(self, app: ASGIApp, *, proxies: TrustedProxies) -> None:
        self.app = app
        self.proxies = proxies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client") if scope["type"] in ("http", "websocket") else None
        if client and self.proxies.trusts(client[0]):
            forwarded = [v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for"]
            proto = (_header(scope, b"x-forwarded-proto") or "").strip().lower()
            if not forwarded:  # RFC 7239: Forwarded: for=192.0.2.60;proto=https
                standard = [v.decode("latin-1") for k, v in scope["headers"] if k == b"forwarded"]
                forwarded, named = forwarded_hops(standard)
                proto = proto or (named or "")
            if forwarded:
                scope = {**scope, "client": (self.proxies.client(client[0], forwarded), 0)}
            if proto in ("http", "https"):
                scope = {**scope, "scheme": proto}
        await self.app(scope, receive, send)


def add_middleware(
    app: FastAPI, cfg: ServiceConfig, metrics: Metrics, lifecycle: Lifecycle, keys: ApiKeys | None
) -> None:
    """Install the middleware. Starlette applies the last added outermost, so they are added
    innermost first: metrics and request ids then see every answer, 401s and 413s included."""
    probes = frozenset({"/healthz", "/metrics"})
    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes, timeout_s=cfg.body_timeout_s)
    if cfg.rate_limit_per_s > 0:
        app.add_middleware(
            RateLimit, limiter=RateLimiter(cfg.rate_limit_per_s, cfg.rate_limit_burst), exempt=probes
        )
    if keys is not None:
        open_paths = frozenset(
            p for p, is_open in (("/healthz", cfg.open_healthz), ("/metrics", cfg.open_metrics)) if is_open
        )
        failures = (
            AuthFailures(
                limit=cfg.auth_fail_limit,
                window_s=cfg.auth_fail_window_s,
                max_clients=cfg.auth_fail_max_clients,
            )
            if cfg.auth_fail_limit > 0
            else None
        )
        app.add_middleware(Auth, keys=keys, open_paths=open_paths, failures=failures)
    app.add_middleware(Admission, lifecycle=lifecycle, exempt=probes)
    if cfg.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cfg.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type", "x-request-id"],
            expose_headers=["x-request-id", "retry-after"],
            max_age=600,
        )
    app.add_middleware(RequestContext, log=cfg.access_log)
    app.add_middleware(RequestMetrics, metrics=metrics)
    if cfg.trusted_proxies:
        app.add_middleware(ForwardedClient, proxies=TrustedProxies(cfg.trusted_proxies))


def setup_access_log(cfg: ServiceConfig) -> None:
    """Send the access log (one JSON object per line) to stderr unless logging is set up already."""
    if not cfg.access_log or access_logger.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    access_logger.addHandler(handler)
    access_logger.setLevel(logging.INFO)
    access_logger.propagate = False
