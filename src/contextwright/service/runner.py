"""Where assemblies run: a thread pool, with the per-request deadline, cancellation and load."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import ctypes.util
import functools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contextwright.core.cancel import cancel_on, check_cancelled
from contextwright.core.errors import AssemblyCancelled
from contextwright.service.metrics import Metrics
from contextwright.service.problems import Failure
from contextwright.service.settings import ServiceConfig

__all__ = ["TRIM_AFTER_S", "Load", "Runner", "release_freed_memory"]

#: An assembly that computed this long (seconds), or was stopped, hands freed heap back to the OS.
TRIM_AFTER_S = 0.1


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None on a C library without it (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> bool:
    """Give the heap that freed Python objects left behind back to the OS; False where it can't.

    A long assembly (a 4 MB body, tens of thousands of split and scored sentences) frees
    what it allocated when it ends, but glibc keeps those pages in the worker thread's
    arena, and the next long request rarely fits in the holes: measured on
    ``tests/service/test_deadline.py``'s slow request, 40 abandoned requests took a worker
    from 200 MiB to 380–550 MiB of RSS, rising; with ``malloc_trim(0)`` after each it stayed
    at 201–216 MiB. The call takes 2–20 ms on a heap of a few hundred MB (it releases the
    GIL), which is why only long or stopped assemblies pay it (:data:`TRIM_AFTER_S`).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@dataclass(frozen=True, slots=True)
class Load:
    """What the pool is doing now (``/healthz``).

    Attributes:
        threads: The pool's size (``threads``).
        busy: Threads computing an assembly.
        queued: Assemblies waiting for a thread.
        abandoned: Assemblies still running or queued after their request was answered
            (504, or the client went away); they stop at their next check.
    """

    threads: int
    busy: int
    queued: int
    abandoned: int

    @property
    def saturated(self) -> bool:
        """Every thread is computing: a new request would wait in the queue."""
        return self.busy >= self.threads


class Runner:
    """Runs blocking work in ``threads`` threads and gives up on it after ``timeout_s`` (504).

    The pool is made on first use and shut down when the app stops; an app can be started
    again (test clients, schemathesis run the lifespan per session), so it is made again then.

    The work runs under :func:`contextwright.core.cancel.cancel_on` with the request's
    deadline (``timeout_s`` from when it was submitted, queueing included) and an event set
    when the request is answered without it (its 504, or its client gone). The stages check
    both between and inside their long loops, so a request past its deadline frees its
    thread within a fraction of a second, whether or not the event loop has got round to
    its 504 yet. :meth:`load` counts busy threads, the queue and abandoned work.
    """

    def __init__(self, cfg: ServiceConfig, metrics: Metrics) -> None:
        self.cfg = cfg
        self.metrics = metrics
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._busy = 0
        self._queued = 0
        self._abandoned = 0

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.cfg.threads, thread_name_prefix="cw-assemble"
            )
        return self._pool

    def load(self) -> Load:
        with self._lock:
            return Load(self.cfg.threads, self._busy, self._queued, self._abandoned)

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` in a pool thread; a :class:`Failure` (504) after ``timeout_s``."""
        stop = threading.Event()
        deadline = time.monotonic() + self.cfg.timeout_s

        def work() -> Any:
            self._count(queued=-1, busy=1)
            began = time.monotonic()
            try:
                # what is left of the request's timeout after its wait in the queue
                with cancel_on(stop, timeout_s=max(deadline - time.monotonic(), 1e-6)):
                    check_cancelled("the start of the assembly")
                    return fn()
            finally:
                if stop.is_set() or time.monotonic() - began >= TRIM_AFTER_S:
                    release_freed_memory()
                self._count(busy=-1)

        self._count(queued=1)
        future = self.executor().submit(work)
        future.add_done_callback(self._done)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.cfg.timeout_s)
        except TimeoutError:  # asyncio's, or the assembly's own DeadlineExceeded (a TimeoutError)
            self.metrics.timeouts.inc()
            raise Failure(
                504,
                "timeout",
                f"assembly took longer than {self.cfg.timeout_s:g} s (timeout_s); send fewer chunks or a "
                "simpler config.",
            ) from None
        finally:
            if not future.done():
                stop.set()  # the assembly stops at its next check
                if not future.cancel():  # running: count it until it has stopped
                    self._count(abandoned=1)
                    future.add_done_callback(lambda _: self._count(abandoned=-1))

    def _count(self, *, busy: int = 0, queued: int = 0, abandoned: int = 0) -> None:
        with self._lock:
            self._busy += busy
            self._queued += queued
            self._abandoned += abandoned

    def _done(self, future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            self._count(queued=-1)  # cancelled before it started: work() never ran
        elif isinstance(future.exception(), AssemblyCancelled):
            self.metrics.cancelled.inc()

    def shutdown(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=False, cancel_futures=True)
