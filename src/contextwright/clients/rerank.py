"""Rerankers: ``score(query, texts) -> scores``, for the ``rerank`` stage.

A :class:`Reranker` is anything with ``score(query, texts)`` returning one
number per text (higher is more relevant). :class:`CrossEncoderReranker`
wraps a sentence-transformers ``CrossEncoder`` loaded from a local directory:
nothing is downloaded at run time (the model must be on disk, and
``HF_HUB_OFFLINE`` is forced while loading it), and a missing package or
directory is a :class:`~contextwright.core.errors.MissingDependencyError` that
says what to install or where to put the model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from contextwright.clients.embed import LazyModel
from contextwright.core.errors import ConfigError, MissingDependencyError

__all__ = ["CrossEncoderReranker", "Reranker"]

logger = logging.getLogger(__name__)


@runtime_checkable
class Reranker(Protocol):
    """Scores texts against a query, one number per text, higher is more relevant.

    Example:
        >>> reranker.score("who wrote it?", ["a text", "another"])   # [3.2, -1.5]
    """

    def score(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` from a local model directory.

    Args:
        model_path: A directory holding the cross-encoder (``config.json``,
            weights, tokenizer), e.g. a saved ``cross-encoder/ms-marco-MiniLM-L-6-v2``.
        batch_size: Pairs per forward pass.
        device: Torch device, ``cpu`` by default.

    Raises:
        MissingDependencyError: without sentence-transformers (extra
            ``semantic``), or when ``model_path`` is not a local directory.

    Example:
        >>> Assembler(rerank_config, budget=1000, reranker=CrossEncoderReranker("/models/ms-marco-MiniLM-L-6-v2"))
    """

    def __init__(self, model_path: str | Path, *, batch_size: int = 32, device: str = "cpu") -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 4096:
            raise ConfigError(f"batch_size must be an integer from 1 to 4096; got {batch_size!r}.")
        path = Path(model_path)
        if not (path / "config.json").is_file():
            raise MissingDependencyError(
                f"no cross-encoder model at {str(path)!r} (no config.json there); contextwright never "
                "downloads models at run time. Save one there first, e.g. "
                "CrossEncoder('cross-encoder/ms-marco-MiniLM-L-6-v2').save('/models/ms-marco') on a "
                "machine with network access, and pass that directory."
            )
        self.model_path = str(path)
        self.batch_size = batch_size
        self.device = device
        self._loader = LazyModel(
            "CrossEncoder",
            self.model_path,
            what="cross-encoder",
            offline=True,
            device=device,
            local_files_only=True,
        )

    @property
    def model(self) -> Any:
        """The loaded ``CrossEncoder`` (loaded on first use, offline)."""
        return self._loader.get()

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text."""
        if not texts:
            return []
        scores = self.model.predict(
            [(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False
        )
        return [float(s) for s in scores]

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model_path!r})"
