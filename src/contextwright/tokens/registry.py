"""Tokenizer names to loaded tokenizers: a bounded, lock-guarded registry, as ``tiktoken.registry`` is for encodings."""

from __future__ import annotations

import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from contextwright.core.errors import ConfigError, TokenizerError
from contextwright.tokens.base import Tokenizer
from contextwright.tokens.cache import CachedTokenizer
from contextwright.tokens.chars import CharTokenizer
from contextwright.tokens.huggingface import HFTokenizer
from contextwright.tokens.openai import (
    TiktokenTokenizer,
)

# Loaded tokenizers by canonical spec, least recently used first. Bounded: every distinct spec a
# request sends must not keep a tokenizer (and its cache) for ever. Registered factories' names
# are rebuilt after eviction like any other.
_REGISTRY: OrderedDict[str, CachedTokenizer] = OrderedDict()
_MAX_LOADED = 32
_FACTORIES: dict[str, Callable[[], Tokenizer]] = {}
_LOCK = threading.RLock()  # guards the dicts only; never held while a tokenizer loads
_LOADING: dict[str, threading.Lock] = {}  # one lock per spec being loaded
# Refusals by spec with when they happened: a spec that failed is refused at once for a while.
_FAILED: OrderedDict[str, tuple[float, Exception]] = OrderedDict()
_FAILED_TTL_S = 60.0
_MAX_FAILED = 1024


def register_tokenizer(name: str, factory: Callable[[], Tokenizer]) -> None:
    """Make ``get_tokenizer(name)`` build a tokenizer with ``factory`` (lazily)."""
    with _LOCK:
        _FACTORIES[name] = factory
        _REGISTRY.pop(name, None)
        _FAILED.pop(name, None)


def loaded_tokenizers() -> list[str]:
    """The canonical specs of the tokenizers loaded now (at most 32, least recently used first)."""
    with _LOCK:
        return list(_REGISTRY)


def registered_tokenizers() -> list[str]:
    """The names given to :func:`register_tokenizer`, sorted."""
    with _LOCK:
        return sorted(_FACTORIES)


def canonical_spec(spec: str) -> str:
    """One name per tokenizer: ``chars``, ``chars:4.0`` and ``chars:4.00`` are all ``chars:4``.

    Raises:
        ConfigError: for a ``chars:`` ratio that is not a positive number.
    """
    if spec in _FACTORIES:
        return spec
    if spec == "chars" or spec.startswith("chars:"):
        ratio = spec.partition(":")[2] or "4"
        try:
            value = float(ratio)
        except ValueError:
            raise ConfigError(
                f"tokenizer {spec!r}: the part after 'chars:' must be a number, e.g. 'chars:4'."
            ) from None
        if not (value > 0 and math.isfinite(value)):
            raise ConfigError(
                f"tokenizer {spec!r}: chars per token must be a positive number, e.g. 'chars:4'."
            )
        return f"chars:{value:g}"
    return spec


def get_tokenizer(spec: str | Tokenizer = "cl100k_base") -> CachedTokenizer:
    """Resolve a tokenizer spec to a cached tokenizer, loading it once.

    Args:
        spec: One of

            * a tiktoken encoding or model name: ``"o200k_base"``, ``"cl100k_base"``, ``"gpt-4o"``;
            * ``"hf:<hub name>"`` or a path to a ``tokenizer.json`` (or its directory); a hub name
              loads from the local Hugging Face cache only, never from the network;
            * ``"chars"`` or ``"chars:<chars per token>"`` for the explicit estimate;
            * a name registered with :func:`register_tokenizer`;
            * a :class:`Tokenizer` object (wrapped in a cache unless it is one).

    At most 32 loaded tokenizers are kept (least recently used evicted; equivalent specs share
    one). A spec that failed to load is refused at once for 60 s. Loading one tokenizer never
    blocks a caller that wants another.

    Raises:
        TokenizerError: if it cannot be loaded (with what to install or set).
        ConfigError: if the spec names nothing known.
    """
    if isinstance(spec, CachedTokenizer):
        return spec
    if not isinstance(spec, str):
        if not isinstance(spec, Tokenizer):
            raise ConfigError(
                f"tokenizer must be a name or an object with count/count_many/encode/decode; "
                f"got {type(spec).__name__}."
            )
        return CachedTokenizer(spec)
    key = canonical_spec(spec)
    found = _lookup(key)
    if found is not None:
        return found
    with _LOCK:
        loading = _LOADING.setdefault(key, threading.Lock())
    with loading:  # one load per spec; other specs go on
        found = _lookup(key)
        if found is not None:
            return found
        try:
            built = CachedTokenizer(_build(key))
        except (TokenizerError, ConfigError) as exc:
            with _LOCK:
                _FAILED[key] = (time.monotonic(), exc)
                while len(_FAILED) > _MAX_FAILED:
                    _FAILED.popitem(last=False)
                _LOADING.pop(key, None)
            raise
        with _LOCK:
            _REGISTRY[key] = built
            while len(_REGISTRY) > _MAX_LOADED:
                _REGISTRY.popitem(last=False)
            _LOADING.pop(key, None)
        return built


def _lookup(key: str) -> CachedTokenizer | None:
    """The loaded tokenizer for ``key``, or ``None``; re-raises a recent refusal."""
    with _LOCK:
        cached = _REGISTRY.get(key)
        if cached is not None:
            _REGISTRY.move_to_end(key)
            return cached
        failed = _FAILED.get(key)
        if failed is not None:
            if time.monotonic() - failed[0] < _FAILED_TTL_S:
                raise failed[1]
            del _FAILED[key]
    return None


def _build(spec: str) -> Tokenizer:
    if spec in _FACTORIES:
        return _FACTORIES[spec]()
    if spec.startswith("chars:"):
        return CharTokenizer(float(spec.partition(":")[2]))
    if spec.startswith("hf:"):
        return HFTokenizer(spec[3:])
    if spec.endswith(".json") or os.sep in spec or Path(spec).is_dir():
        return HFTokenizer(spec)
    return TiktokenTokenizer(spec)
