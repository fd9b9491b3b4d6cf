"""Cooperative cancellation and deadlines: how a long assembly is stopped from outside.

An assembly runs in one thread and nothing can interrupt a Python thread, so
the work stops itself: the stage loop checks before each stage and before the
render, and the stages whose work grows with the input (``compress``,
``token_budget``, ...) check inside their loops, every few thousand steps or
once per costly step. A check is :func:`check_cancelled`; it raises when

* the event given to :func:`cancel_on` is set (the HTTP service sets it when a
  request gets its 504, or its client goes away): :class:`AssemblyCancelled`;
* the deadline given to :func:`cancel_on` (``timeout_s``) has passed:
  :class:`DeadlineExceeded`, which is also a :class:`TimeoutError`.

Both live in a context variable, so they follow the assembly into
``asyncio.to_thread`` and cost a stage nothing to receive. Outside
:func:`cancel_on` a check does nothing (one context-variable read).

Example:
    >>> with cancel_on(timeout_s=2.0):
    ...     ctx = assembler.assemble(query, chunks)   # DeadlineExceeded after ~2 s of work
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from contextwright.core.errors import AssemblyCancelled, ConfigError, DeadlineExceeded

__all__ = ["CHECK_EVERY", "Pace", "cancel_on", "check_cancelled"]

#: How many cheap steps (a sentence, a chunk) a hot loop takes between two checks.
CHECK_EVERY = 1024


@dataclass(frozen=True, slots=True)
class _Stop:
    events: tuple[threading.Event, ...]
    deadline: float  # time.monotonic(); inf when none
    timeout_s: float | None


_stop: contextvars.ContextVar[_Stop | None] = contextvars.ContextVar("contextwright_stop", default=None)


@contextlib.contextmanager
def cancel_on(event: threading.Event | None = None, *, timeout_s: float | None = None) -> Iterator[None]:
    """Within this block, assemblies stop once ``event`` is set or ``timeout_s`` seconds have passed.

    Blocks nest: an inner block adds its event and can only bring the deadline
    closer, never push an outer one back.

    Args:
        event: Set it (from any thread) to cancel: the work raises
            :class:`AssemblyCancelled` at its next check.
        timeout_s: Seconds from now after which the work raises
            :class:`DeadlineExceeded` at its next check (None: no deadline).

    Raises:
        ConfigError: ``timeout_s`` is not a positive finite number.
    """
    if timeout_s is not None and (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, (int, float))
        or not math.isfinite(timeout_s)
        or timeout_s <= 0
    ):
        raise ConfigError(
            f"timeout_s must be a positive number of seconds or None; got {timeout_s!r}. Example: timeout_s=5.",
            loc=("timeout_s",),
        )
    outer = _stop.get()
    events = outer.events if outer is not None else ()
    deadline = outer.deadline if outer is not None else math.inf
    limit = outer.timeout_s if outer is not None else None
    if event is not None:
        events = (*events, event)
    if timeout_s is not None and time.monotonic() + timeout_s < deadline:
        deadline, limit = time.monotonic() + timeout_s, timeout_s
    token = _stop.set(_Stop(events, deadline, limit))
    try:
        yield
    finally:
        _stop.reset(token)


def check_cancelled(where: str) -> None:
    """Raise when the assembly running in this context was cancelled or is past its deadline.

    Args:
        where: What is about to run or is running (a stage name), for the message.

    Raises:
        AssemblyCancelled: the event of :func:`cancel_on` is set.
        DeadlineExceeded: the ``timeout_s`` of :func:`cancel_on` has passed.
    """
    stop = _stop.get()
    if stop is None:
        return
    for event in stop.events:
        if event.is_set():
            raise AssemblyCancelled(
                f"assembly cancelled at {where!r} (its request was cancelled or timed out)."
            )
    if stop.deadline < math.inf and time.monotonic() > stop.deadline:
        raise DeadlineExceeded(
            f"assembly stopped at {where!r}: it ran past its deadline (timeout_s={stop.timeout_s:g}); "
            "send fewer or shorter chunks, a simpler config, or a longer timeout_s."
        )


class Pace:
    """Checks every ``every`` units of work, for loops whose steps differ in size.

    A loop over sentences or terms calls :meth:`step` with each step's size (its terms,
    its characters); the check runs once that much work has been done since the last.

    Example:
        >>> pace = Pace("compress")
        >>> for doc in docs:
        ...     pace.step(len(doc))
        ...     counts.append(Counter(doc))
    """

    __slots__ = ("_every", "_left", "where")

    def __init__(self, where: str, every: int = 65_536) -> None:
        self.where = where
        self._every = every
        self._left = 0  # the first step checks

    def step(self, size: int = 1) -> None:
        self._left -= size
        if self._left <= 0:
            self._left = self._every
            check_cancelled(self.where)
