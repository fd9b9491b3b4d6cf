"""Where assemblies run: a thread pool, with the per-request timeout and cancellation."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from contextwright.assembly.loop import cancel_on
from contextwright.core.errors import AssemblyCancelled
from contextwright.service.metrics import Metrics
from contextwright.service.problems import Failure
from contextwright.service.settings import ServiceConfig

__all__ = ["Runner"]


class Runner:
    """Runs blocking work in ``threads`` threads and gives up on it after ``timeout_s`` (504).

    The pool is made on first use and shut down when the app stops; an app can be started
    again (test clients, schemathesis run the lifespan per session), so it is made again then.

    When the timeout passes (or the request goes away), the work is cancelled: the
    pipeline stops at its next stage boundary (:func:`contextwright.assembly.loop.cancel_on`),
    so an abusive request does not keep a thread busy after its 504.
    """

    def __init__(self, cfg: ServiceConfig, metrics: Metrics) -> None:
        self.cfg = cfg
        self.metrics = metrics
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.cfg.threads, thread_name_prefix="cw-assemble"
            )
        return self._pool

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` in a pool thread; a :class:`Failure` (504) after ``timeout_s``."""
        stop = threading.Event()

        def work() -> Any:
            with cancel_on(stop):
                return fn()

        future = self.executor().submit(work)
        future.add_done_callback(self._count_cancelled)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.cfg.timeout_s)
        except TimeoutError:
            self.metrics.timeouts.inc()
            raise Failure(
                504,
                "timeout",
                f"assembly took longer than {self.cfg.timeout_s:g} s (timeout_s); send fewer chunks or a "
                "simpler config.",
            ) from None
        finally:
            if not future.done():
                stop.set()  # the pipeline stops at its next stage boundary
                future.cancel()  # or never starts, if it is still queued

    def _count_cancelled(self, future: concurrent.futures.Future[Any]) -> None:
        if not future.cancelled() and isinstance(future.exception(), AssemblyCancelled):
            self.metrics.cancelled.inc()

    def shutdown(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=False, cancel_futures=True)
