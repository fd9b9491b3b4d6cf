"""ASGI middleware of the service: body size limit and request metrics.

Each class wraps the next ASGI app; :func:`add_middleware` installs them in order.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from contextwright.service.metrics import Metrics
from contextwright.service.problems import BodyTooLarge, body_too_large, problem_body, send_problem
from contextwright.service.settings import ServiceConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ASGIApp", "BodyLimit", "RequestMetrics", "add_middleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ROUTE_PATHS = frozenset({"/v1/assemble", "/v1/citations/resolve", "/healthz", "/metrics", "/"})


class BodyLimit:
    """413 for bodies over ``limit`` bytes: on ``Content-Length`` and on the bytes actually streamed."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

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

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
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


def add_middleware(app: FastAPI, cfg: ServiceConfig, metrics: Metrics) -> None:
    """Install the middleware; Starlette applies the last added outermost, so metrics see the 413s too."""
    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes)
    app.add_middleware(RequestMetrics, metrics=metrics)
