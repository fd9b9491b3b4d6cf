"""``ceil(len(text) / chars_per_token)``: only when asked for by name (``chars``/``chars:4``), never chosen silently."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from contextwright.core.errors import ConfigError, TokenizerError


@dataclass(frozen=True)
class CharTokenizer:
    """An explicit estimate: ``ceil(len(text) / chars_per_token)``.

    Use it only when no real tokenizer is available; the budget then holds for
    this estimate, not for the model. ``encode`` yields one id per character
    group so that truncation still works.
    """

    chars_per_token: float = 4.0
    # Counting the final string costs only len(); doing so keeps ctx.tokens the
    # exact estimate of ctx.text rather than a sum of per-piece ceilings.
    additive = False

    def __post_init__(self) -> None:
        if not self.chars_per_token > 0:
            raise ConfigError(f"chars_per_token must be > 0; got {self.chars_per_token!r}. Use e.g. 4.0.")

    @property
    def name(self) -> str:
        return f"chars:{self.chars_per_token:g}"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def encode(self, text: str) -> list[int]:
        step = self.chars_per_token
        return [int(i * step) for i in range(self.count(text))]

    def decode(self, ids: Sequence[int]) -> str:
        raise TokenizerError("CharTokenizer cannot decode ids; it is an estimate, not a vocabulary.")
