"""The tokenizer protocol every implementation and the counting cache share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Tokenizer(Protocol):
    """What contextwright needs from a tokenizer.

    ``additive`` promises ``count(a + b) == count(a) + count(b)`` whenever ``a``
    ends with a newline and ``b`` starts with a non-whitespace character that
    is not in the tokenizer's ``joining_starts`` (an optional attribute; empty
    when absent).
    """

    @property
    def name(self) -> str: ...

    @property
    def additive(self) -> bool: ...

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...
