"""Tokens: a small protocol, three tokenizers, a counting cache, a registry, and zone budgets.

* :class:`TiktokenTokenizer` (``tokens.openai``) — OpenAI's BPE encodings
  (``o200k_base``, ``cl100k_base``, ...) by encoding or model name.
* :class:`HFTokenizer` (``tokens.huggingface``) — any Hugging Face
  ``tokenizers`` tokenizer, from a ``tokenizer.json`` path or a hub name
  (offline from the local cache).
* :class:`CharTokenizer` (``tokens.chars``) — ``ceil(len(text) /
  chars_per_token)``, only when asked for by name (``chars``/``chars:4``);
  never chosen silently.
* :func:`get_tokenizer` (``tokens.registry``) resolves a name to a tokenizer
  and wraps it in a :class:`CachedTokenizer` (``tokens.cache``), so each
  distinct text is tokenized once and counts are reused across calls
  (invariant 6).
* ``tokens.zones`` — the model registry and zone budgets (window − system −
  history − query − output − buffer = documents).
"""

from __future__ import annotations

from contextwright.tokens.base import Tokenizer
from contextwright.tokens.cache import CachedTokenizer
from contextwright.tokens.chars import CharTokenizer
from contextwright.tokens.huggingface import HFTokenizer
from contextwright.tokens.openai import TiktokenTokenizer
from contextwright.tokens.registry import (
    canonical_spec,
    get_tokenizer,
    loaded_tokenizers,
    register_tokenizer,
    registered_tokenizers,
)

__all__ = [
    "CachedTokenizer",
    "CharTokenizer",
    "HFTokenizer",
    "TiktokenTokenizer",
    "Tokenizer",
    "canonical_spec",
    "get_tokenizer",
    "loaded_tokenizers",
    "register_tokenizer",
    "registered_tokenizers",
]
