"""What every chunk store shares: the protocol, ranges, progress callbacks and the checks on settings."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from contextwright.core.errors import ConfigError, InputError
from contextwright.model.chunk import Chunk

logger = logging.getLogger(__name__)

#: ``{doc_id: [(first_index, last_index), ...]}``; both ends inclusive.
Ranges = Mapping[str, Sequence[tuple[int, int]]]

#: ``progress(chunks_loaded, bytes_read, bytes_total)``, called after each batch.
Progress = Callable[[int, int, int], None]

DEFAULT_TABLE = "chunks"
DEFAULT_TIMEOUT_S = 2.0
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
EMPTY: Mapping[str, Any] = MappingProxyType({})


@runtime_checkable
class ChunkStore(Protocol):
    """Fetch chunks by document and index range, many documents per call.

    ``fetch`` takes ``{doc_id: [(lo, hi), ...]}`` (inclusive ranges; they may
    overlap) and returns every stored chunk inside them, once, sorted by
    ``(doc_id, index)``. Indices that do not exist are simply absent. One call
    is one round trip to the backing store. On failure, or when the call takes
    longer than ``timeout_s`` (``None``: the store's default), it raises
    :class:`~contextwright.core.errors.StoreError`.

    Stores are shared across threads (one store per service), so ``fetch``
    must be thread-safe.

    Example:
        >>> store.fetch({"doc-a": [(0, 2)], "doc-b": [(4, 4)]}, timeout_s=1.0)
    """

    def fetch(self, ranges: Ranges, /, *, timeout_s: float | None = None) -> list[Chunk]: ...


def merge_ranges(ranges: Ranges) -> dict[str, list[tuple[int, int]]]:
    """Validate ranges and merge the overlapping or adjacent ones, per document.

    Negative starts are clipped to 0; empty documents and empty ranges vanish.

    Raises:
        InputError: for a range that is not two integers.

    Example:
        >>> merge_ranges({"d": [(3, 5), (0, 1), (2, 2), (-1, 0)]})
        {'d': [(0, 5)]}
    """
    out: dict[str, list[tuple[int, int]]] = {}
    for doc_id, spans in ranges.items():
        clean: list[tuple[int, int]] = []
        for span in spans:
            try:
                lo, hi = span
            except (TypeError, ValueError):
                raise InputError(
                    f"ranges[{doc_id!r}] must hold (first_index, last_index) pairs; got {span!r}."
                ) from None
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi)):
                raise InputError(f"ranges[{doc_id!r}] must hold integer pairs; got {span!r}.")
            lo = max(lo, 0)
            if hi >= lo:
                clean.append((lo, hi))
        if not clean:
            continue
        clean.sort()
        merged = [clean[0]]
        for lo, hi in clean[1:]:
            last_lo, last_hi = merged[-1]
            if lo <= last_hi + 1:
                merged[-1] = (last_lo, max(last_hi, hi))
            else:
                merged.append((lo, hi))
        out[str(doc_id)] = merged
    return out


def check_timeout(value: float | None, where: str) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{where} must be a positive number of seconds or None; got {value!r}.")


def check_table(table: str) -> str:
    if not isinstance(table, str) or not IDENT.fullmatch(table):
        raise ConfigError(
            f"table must be a plain SQL identifier (letters, digits, underscore; at most 63); got {table!r}."
        )
    return table


def failure_reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def redact_url(dsn: str) -> str:
    """The DSN without its password, for messages and logs."""
    dsn = re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", dsn)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn)
