"""A circuit breaker: after repeated failures a store fails fast for a while instead of waiting on timeouts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from contextwright.core.errors import ConfigError, StoreError
from contextwright.stores.base import (
    check_timeout,
    logger,
)


class CircuitBreaker:
    """Fail fast while a store is down, and probe for its recovery.

    Closed: calls go through; ``failures`` consecutive failures open it. Open:
    calls fail at once with :class:`~contextwright.core.errors.StoreError` (no
    connection wait), until ``reset_s`` has passed; then one call goes through
    as a probe (half-open) while the others still fail fast. The probe's
    success closes the breaker, its failure opens it for another ``reset_s``.
    Thread-safe.

    Example:
        >>> breaker = CircuitBreaker(failures=3, reset_s=2.0)
        >>> breaker.call(lambda: store_call(), what="PostgreSQL store fetch")
    """

    def __init__(self, *, failures: int = 3, reset_s: float = 2.0) -> None:
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ConfigError(f"breaker failures must be a positive integer; got {failures!r}.")
        check_timeout(reset_s, "breaker reset_s")
        self.failures = failures
        self.reset_s = float(reset_s)
        self._lock = threading.Lock()
        self._count = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half-open``."""
        with self._lock:
            if self._opened_at is None:
                return "closed"
            return "half-open" if self._probing else "open"

    def call(self, fn: Callable[[], Any], *, what: str) -> Any:
        """Run ``fn`` unless the breaker is open; count its failure (any exception) or success."""
        with self._lock:
            probe = False
            if self._opened_at is not None:
                waited = time.monotonic() - self._opened_at
                if self._probing or waited < self.reset_s:
                    raise StoreError(
                        f"{what} skipped: the store failed {self._count} times in a row; "
                        f"the next try is in {max(0.0, self.reset_s - waited):.1f} s (circuit open)."
                    )
                self._probing = probe = True
        try:
            result = fn()
        except BaseException:
            with self._lock:
                self._count += 1
                if probe or self._count >= self.failures:
                    if self._opened_at is None or probe:
                        logger.warning("store circuit open", extra={"what": what, "failures": self._count})
                    self._opened_at = time.monotonic()
                self._probing = False
            raise
        with self._lock:
            if self._opened_at is not None:
                logger.warning("store circuit closed", extra={"what": what})
            self._count = 0
            self._opened_at = None
            self._probing = False
        return result
