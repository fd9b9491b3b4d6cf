"""Draining on SIGTERM: in-flight requests finish, new ones get 503, then the server stops.

Under uvicorn, :meth:`Lifecycle.install` (run at lifespan start-up, in the main
thread) puts a SIGTERM handler in front of uvicorn's: the first SIGTERM marks the
app as draining (``/healthz`` answers 503 ``draining``, other routes 503 with
``Connection: close``) and waits until the requests already admitted have
finished, at most ``drain_grace_s``; then it hands the signal to uvicorn, which
closes its sockets and exits. A second SIGTERM stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["Lifecycle"]

logger = logging.getLogger("contextwright.service")


class Lifecycle:
    """Counts the requests in flight and drains them on SIGTERM."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.draining = False
        self.in_flight = 0
        self._task: asyncio.Task[None] | None = None

    def install(self) -> bool:
        """Chain a draining SIGTERM handler before the server's; ``False`` where none can be set.

        Only in the main thread and only over a Python-level handler (uvicorn's); elsewhere
        (a test client's thread, a server without one) the process's handling is left alone.
        """
        if threading.current_thread() is not threading.main_thread():
            return False
        previous = signal.getsignal(signal.SIGTERM)
        if not callable(previous):
            return False
        loop = asyncio.get_running_loop()

        def on_sigterm(sig: int, frame: FrameType | None) -> None:
            if self.draining:  # a second SIGTERM: stop now
                previous(sig, frame)
                return
            self.draining = True
            loop.call_soon_threadsafe(self._start, previous, sig)

        signal.signal(signal.SIGTERM, on_sigterm)
        return True

    def _start(self, previous: Callable[[int, FrameType | None], Any], sig: int) -> None:
        self._task = asyncio.get_running_loop().create_task(self._drain(previous, sig))

    async def _drain(self, previous: Callable[[int, FrameType | None], Any], sig: int) -> None:
        start = time.monotonic()
        logger.warning("SIGTERM: draining %d request(s), grace %.1f s", self.in_flight, self.grace_s)
        while self.in_flight > 0 and time.monotonic() - start < self.grace_s:
            await asyncio.sleep(0.02)
        logger.warning(
            "drained in %.2f s; %d request(s) still in flight; stopping",
            time.monotonic() - start,
            self.in_flight,
        )
        previous(sig, None)
