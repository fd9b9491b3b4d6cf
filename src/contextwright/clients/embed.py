"""Embedders: text -> unit vectors, for semantic dedup.

An :class:`Embedder` is anything with ``embed(texts) -> array (n, d)`` whose
rows are L2-normalized. Two implementations ship: a sentence-transformers
model (extra ``semantic``) and a wrapper around a plain callable (your own
API client, a vector store's embedding function). Both batch the texts that
are not cached yet into one call and keep a bounded cache keyed by a hash of
the text, so a chunk retrieved again by the next query is not embedded again.

numpy and sentence-transformers are imported lazily: ``import contextwright``
never loads them.
"""

from __future__ import annotations

import abc
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from contextwright.core.errors import ConfigError, missing_extra

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "CallableEmbedder",
    "Embedder",
    "EmbeddingCache",
    "LazyModel",
    "SentenceTransformerEmbedder",
    "normalize_rows",
]

logger = logging.getLogger(__name__)

DEFAULT_CACHE_SIZE = 50_000


class LazyModel:
    """A sentence-transformers model built on first use, once, by whichever thread asks first.

    Shared by :class:`SentenceTransformerEmbedder` and
    :class:`~contextwright.clients.rerank.CrossEncoderReranker`: the import is lazy (a missing
    package names the ``semantic`` extra), and concurrent first calls load one model.

    Args:
        class_name: ``SentenceTransformer`` or ``CrossEncoder``.
        path: The model directory or name.
        what: What the log line calls it (``embedding model``, ``cross-encoder``).
        offline: Set ``HF_HUB_OFFLINE=1`` before loading, so nothing is downloaded.
        **kwargs: Passed to the model class (``device``, ``local_files_only``).
    """

    def __init__(
        self, class_name: str, path: str, *, what: str, offline: bool = False, **kwargs: Any
    ) -> None:
        self.class_name = class_name
        self.path = path
        self.what = what
        self.offline = offline
        self.kwargs = kwargs
        self._model: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        """The loaded model."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    try:
                        import sentence_transformers
                    except ImportError:
                        raise missing_extra("sentence_transformers", "semantic") from None
                    if self.offline:
                        os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    logger.info(f"loading {self.what}", extra={"model": self.path})
                    self._model = getattr(sentence_transformers, self.class_name)(self.path, **self.kwargs)
        return self._model


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized vectors, one row per text.

    Example:
        >>> vectors = embedder.embed(["a text", "another"])   # shape (2, d), unit rows
    """

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


def _np() -> Any:
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy comes with the extra
        raise missing_extra("numpy", "semantic") from None
    return numpy


def normalize_rows(matrix: Any) -> NDArray[np.float32]:
    """``matrix`` as float32 with each row scaled to unit length (zero rows stay zero)."""
    np = _np()
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ConfigError(f"an embedder must return a 2-D array (n, d); got shape {m.shape}.")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms  # type: ignore[no-any-return]


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class EmbeddingCache:
    """A bounded LRU of vectors keyed by a hash of the text.

    Thread-safe. ``hits`` and ``misses`` count lookups, for benchmarks and logs.

    Args:
        maxsize: How many vectors to keep (0 disables the cache).

    Example:
        >>> cache = EmbeddingCache(maxsize=10_000)
    """

    def __init__(self, maxsize: int = DEFAULT_CACHE_SIZE) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ConfigError(f"cache_size must be a non-negative integer; got {maxsize!r}.")
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[bytes, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, text: str) -> Any | None:
        """The cached vector of ``text``, or None."""
        key = _key(text)
        with self._lock:
            vec = self._data.get(key)
            if vec is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return vec

    def put(self, text: str, vector: Any) -> None:
        """Remember ``vector`` for ``text``, evicting the least recently used."""
        if self.maxsize == 0:
            return
        key = _key(text)
        with self._lock:
            self._data[key] = vector
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget every vector and reset the counters."""
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0


class _CachedEmbedder(abc.ABC):
    """Shared logic: look up the cache, encode what is missing in one batch, normalize."""

    cache: EmbeddingCache

    @abc.abstractmethod
    def _encode(self, texts: list[str]) -> Any:
        """Raw vectors for ``texts``, one row per text, in order."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors for ``texts`` (shape ``(len(texts), d)``), cached by content."""
        np = _np()
        texts = list(texts)
        found: list[Any | None] = [self.cache.get(t) for t in texts]
        pending = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        fresh: dict[str, Any] = {}
        if pending:
            vectors = normalize_rows(self._encode(pending))
            if vectors.shape[0] != len(pending):
                raise ConfigError(
                    f"the embedder returned {vectors.shape[0]} vectors for {len(pending)} texts; "
                    "it must return one row per text, in order."
                )
            for t, v in zip(pending, vectors, strict=True):
                fresh[t] = v
                self.cache.put(t, v)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)  # type: ignore[no-any-return]
        rows = [v if v is not None else fresh[t] for t, v in zip(texts, found, strict=True)]
        return np.stack(rows).astype(np.float32, copy=False)  # type: ignore[no-any-return]


class SentenceTransformerEmbedder(_CachedEmbedder):
    """Embeds with a sentence-transformers model, loaded on first use.

    The model is loaded once, lazily (the first ``embed`` call), so building
    an assembler is cheap and ``import contextwright`` stays light. Texts are
    encoded in batches of ``batch_size``; vectors are cached by content hash.

    Args:
        model_name_or_path: A local model directory, or a model name (which
            sentence-transformers may download unless ``HF_HUB_OFFLINE=1``).
        batch_size: Texts per forward pass.
        device: Torch device, ``cpu`` by default.
        cache_size: Vectors kept in the content-hash cache (0 disables it).

    Raises:
        MissingDependencyError: when the ``semantic`` extra is not installed.

    Example:
        >>> emb = SentenceTransformerEmbedder("/models/all-MiniLM-L6-v2")
        >>> Assembler("documents", budget=1000, embedder=emb)
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        batch_size: int = 32,
        device: str = "cpu",
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if not isinstance(model_name_or_path, str) or not model_name_or_path:
            raise ConfigError(
                f"model_name_or_path must be a model directory or name; got {model_name_or_path!r}."
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer; got {batch_size!r}.")
        self.model_name_or_path = str(model_name_or_path)
        self.batch_size = batch_size
        self.device = device
        self.cache = EmbeddingCache(cache_size)
        self._loader = LazyModel(
            "SentenceTransformer", self.model_name_or_path, what="embedding model", device=device
        )

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loads it on first access)."""
        return self._loader.get()

    def _encode(self, texts: list[str]) -> Any:
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_name_or_path!r}, device={self.device!r})"


class CallableEmbedder(_CachedEmbedder):
    """Wraps a plain function ``texts -> vectors`` as an :class:`Embedder`.

    The function receives a list of texts (only those not cached, each once)
    and returns anything numpy can turn into an ``(n, d)`` array; rows are
    normalized here.

    Args:
        fn: The embedding function (an API client call, a vector store's
            embedding function, ...).
        cache_size: Vectors kept in the content-hash cache (0 disables it).

    Example:
        >>> emb = CallableEmbedder(lambda texts: client.embed(texts))
    """

    def __init__(self, fn: Callable[[list[str]], Any], *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        if not callable(fn):
            raise ConfigError(f"CallableEmbedder needs a callable texts -> vectors; got {fn!r}.")
        self.fn = fn
        self.cache = EmbeddingCache(cache_size)

    def _encode(self, texts: list[str]) -> Any:
        return self.fn(texts)

    def __repr__(self) -> str:
        return f"CallableEmbedder({getattr(self.fn, '__name__', repr(self.fn))})"
