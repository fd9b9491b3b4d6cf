"""The local engine: worker processes, each holding one assembler, rows yielded in input order."""

from __future__ import annotations

import logging
import os
import pickle
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from contextwright.batch.rows import (
    BatchRow,
    BatchSettings,
    RowAssembler,
)
from contextwright.core.errors import ConfigError
from contextwright.core.spawn import spawn_blocker
from contextwright.inputs.readers import batched

logger = logging.getLogger(__name__)

LOCAL: dict[str, RowAssembler] = {}


def _init_local(settings: BatchSettings) -> None:
    LOCAL["worker"] = RowAssembler(settings)


def _local_many(rows: list[tuple[str, Any]]) -> list[BatchRow]:
    return LOCAL["worker"].many(rows)


def check_workers(workers: int | None) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer; got {workers!r}.")
    return workers


def settings_of(settings: BatchSettings | None, kwargs: Mapping[str, Any]) -> BatchSettings:
    if settings is not None:
        if kwargs:
            raise ConfigError(f"pass settings= or keyword settings, not both; got {sorted(kwargs)}.")
        return settings
    known = set(BatchSettings.__dataclass_fields__) - {"options"}
    options = {k: v for k, v in kwargs.items() if k not in known}
    return BatchSettings(**{k: v for k, v in kwargs.items() if k in known}, options=options)


def assemble_many(
    queries: Iterable[Any],
    *,
    workers: int | None = None,
    batch_size: int = 16,
    settings: BatchSettings | None = None,
    **kwargs: Any,
) -> Iterator[BatchRow]:
    """Assemble a context for every query, in worker processes, yielding rows in input order.

    Args:
        queries: Query rows: JSON lines (``str``), mappings in the shared data
            schema (``{"id", "question", "chunks"}``) or ``{"query", "chunks"}``,
            :class:`~contextwright.inputs.readers.QueryItem`, or the
            :class:`~contextwright.inputs.readers.Record` s of :func:`read_rows`. Consumed
            lazily: at most ``4 × workers`` batches are in flight.
        workers: Processes (default: one per CPU); ``1`` runs in this process.
        batch_size: Rows per task sent to a worker.
        settings: A :class:`BatchSettings`; or pass its fields as keywords
            (``preset=``, ``budget=``, ``model=``, ``store=``, ...; other
            keywords go to the :class:`~contextwright.assembly.assembler.Assembler`).

    Yields:
        One :class:`BatchRow` per query, in input order; a failed row is an
        error row and the others go on.

    Raises:
        ConfigError: for bad settings, at the call (before any row is read or worker starts, and
            before a caller that writes the rows opens its output).

    Example:
        >>> rows = list(assemble_many(lines, preset="qa", budget=500, workers=2))
    """
    s = settings_of(settings, kwargs)
    n = check_workers(workers)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer; got {batch_size!r}.")
    local = RowAssembler(s)  # validates the settings here, with a readable error
    return _assembled(queries, s, n, batch_size, local)


def _assembled(
    queries: Iterable[Any], s: BatchSettings, n: int, batch_size: int, local: RowAssembler
) -> Iterator[BatchRow]:
    """:func:`assemble_many`'s rows, once its settings are checked: in this process or in ``n`` workers."""
    try:
        yield from _rows(queries, s, n, batch_size, local)
    finally:
        local.close()


def _rows(
    queries: Iterable[Any], s: BatchSettings, n: int, batch_size: int, local: RowAssembler
) -> Iterator[BatchRow]:
    numbered = ((f"queries[{i}]", row) for i, row in enumerate(queries))
    blocker = spawn_blocker() if n > 1 else None
    if blocker is not None:  # spawned workers would restart forever: run here, say so once
        logger.warning(
            "workers=%s: %s; assembling in this process instead (same rows). To use workers, run "
            'a script file with the call under `if __name__ == "__main__":`',
            n,
            blocker,
            extra={"workers": n},
        )
        n = 1
    if n == 1:
        for batch in batched(numbered, batch_size):  # as a worker does (a reader: asked concurrently)
            yield from local.many(batch)
        return
    try:
        pickle.dumps(s)
    except Exception as exc:
        raise ConfigError(f"workers={n} needs picklable settings ({exc}); use workers=1.") from None
    import multiprocessing

    pending: deque[Future[list[BatchRow]]] = deque()
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_init_local,
                             initargs=(s,)) as pool:  # fmt: skip
        for batch in batched(numbered, batch_size):
            pending.append(pool.submit(_local_many, batch))
            while len(pending) >= 4 * n:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
