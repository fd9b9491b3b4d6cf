"""``load_jsonl`` and ``with store:`` on top of a store's ``load`` and ``close``."""

from __future__ import annotations

import abc
import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Self

from contextwright.model.chunk import Chunk
from contextwright.stores.base import (
    Progress,
)
from contextwright.stores.rows import (
    read_jsonl,
)


class LoaderMixin(abc.ABC):
    """``load_jsonl`` on top of a store's ``load``, and ``with store:`` on top of its ``close``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @abc.abstractmethod
    def load(self, chunks: Iterable[Chunk | Mapping[str, Any]], *, progress: Progress | None = None) -> int:
        """Load ``chunks`` in one transaction; returns how many."""

    def load_jsonl(self, path: str | os.PathLike[str], *, progress: Progress | None = None) -> int:
        """Load every chunk of a JSON Lines corpus (``.gz`` ok) in one transaction.

        Args:
            path: The corpus file, one chunk mapping per line, each with
                ``doc_id`` and ``index``.
            progress: ``progress(chunks_loaded, bytes_read, bytes_total)``.

        Returns:
            The number of chunks loaded.
        """
        return self.load(read_jsonl(path, progress=progress))
