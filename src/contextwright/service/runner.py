"""Where assemblies run: a thread pool, with the per-request timeout."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from contextwright.service.problems import Failure
from contextwright.service.settings import ServiceConfig

__all__ = ["Runner"]


class Runner:
    """Runs blocking work in ``threads`` threads and gives up on it after ``timeout_s`` (504).

    The pool is made on first use and shut down when the app stops; an app can be started
    again (test clients, schemathesis run the lifespan per session), so it is made again then.
    """

    def __init__(self, cfg: ServiceConfig) -> None:
        self.cfg = cfg
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.cfg.threads, thread_name_prefix="cw-assemble"
            )
        return self._pool

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` in a pool thread; a :class:`Failure` (504) after ``timeout_s``."""
        future = self.executor().submit(fn)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.cfg.timeout_s)
        except TimeoutError:
            future.cancel()  # only helps if it has not started; a running assembly finishes in the background
            raise Failure(
                504,
                "timeout",
                f"assembly took longer than {self.cfg.timeout_s:g} s (timeout_s); send fewer chunks or a "
                "simpler config.",
            ) from None

    def shutdown(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=False, cancel_futures=True)
