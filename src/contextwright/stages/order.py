"""Ordering: where each block sits in the window.

Language models use the beginning and the end of a long context best and
the middle worst (Liu et al., "Lost in the Middle: How Language Models Use
Long Contexts", TACL 2024). The orders here put the strongest evidence where
it is read.

In every relevance-based order the best chunk comes first, for odd and even
counts alike. LangChain's and LlamaIndex's ``LongContextReorder`` reverse the
list and alternate, which puts the best chunk *last* when the count is even;
we keep it first because the start of the window is the position models use
most reliably, and because a stable "best first" makes outputs comparable
across budgets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from contextwright.core.errors import ConfigError, did_you_mean
from contextwright.core.limits import bounded
from contextwright.model.chunk import Chunk
from contextwright.model.report import StageResult
from contextwright.stages.base import is_order_stage, register_stage, registered_stages
from contextwright.stages.filter import by_relevance

__all__ = [
    "AutoOrder",
    "BookendOrder",
    "ChronologicalOrder",
    "DocumentOrder",
    "LostInTheMiddleOrder",
    "PriorOrder",
    "ScoreOrder",
    "order_classes",
    "order_names",
    "order_stage",
]


def _natural(value: str | None) -> tuple[object, ...]:
    """Sort key that puts ``doc2`` before ``doc10``.

    A digit run sorts by its value as (length, digits) without leading zeros, the
    order of the integers, so runs longer than ``int()`` takes (4,300 digits) sort
    too; only the runs the regex split off count as numbers (``'²'.isdigit()`` is
    true, but it is not a decimal digit).
    """
    if value is None:
        return ((1, ""),)
    parts = re.split(r"(\d+)", value)
    return tuple(_digits(p) if i % 2 else (1, p) for i, p in enumerate(parts) if p)


def _digits(run: str) -> tuple[int, int, str]:
    # str(int()) maps other scripts' decimal digits ('٣') to ASCII; past int()'s limit
    # the run is compared as written.
    v = str(int(run)) if len(run) <= 4000 else run.lstrip("0") or "0"
    return (0, len(v), v)


def _position(c: Chunk) -> tuple[int, int, int]:
    """(page, index, rank) with unknowns last."""
    return (
        c.page if c.page is not None else 1 << 60,
        c.index if c.index is not None else 1 << 60,
        c.rank,
    )


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreOrder:
    """Highest score first; ties keep retrieval order."""

    name: ClassVar[str] = "score_order"
    #: The names ``order=`` accepts for this stage (the first is the one listed).
    order_names: ClassVar[tuple[str, ...]] = ("relevance", "score")
    requires: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "order"

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        return StageResult.of(self.name, chunks, by_relevance(chunks))


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class ChronologicalOrder:
    """Reading order: by document (``doc_id``, else ``source``; natural sort), then page, then index."""

    name: ClassVar[str] = "chronological_order"
    order_names: ClassVar[tuple[str, ...]] = ("chronological",)
    requires: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "order"

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        out = sorted(chunks, key=lambda c: (_natural(c.doc_key), _position(c)))
        return StageResult.of(self.name, chunks, out)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentOrder:
    """Document-first: documents (``doc_id``, else ``source``) ranked by their best chunk, chunks in document order."""

    name: ClassVar[str] = "document_order"
    order_names: ClassVar[tuple[str, ...]] = ("document", "document_first")
    requires: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "order"

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        doc_rank: dict[str, int] = {}
        for i, c in enumerate(by_relevance(chunks)):
            doc_rank.setdefault(c.group_key, i)
        out = sorted(chunks, key=lambda c: (doc_rank[c.group_key], _position(c)))
        return StageResult.of(self.name, chunks, out)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class LostInTheMiddleOrder:
    """Interleave: ranks 1, 3, 5, ... from the front, ranks 2, 4, 6, ... from the back.

    The weakest chunks end up in the middle. The best chunk is always first
    and the second best always last.

    Example:
        scores 5 4 3 2 1  ->  5 3 1 2 4
    """

    name: ClassVar[str] = "lost_in_the_middle_order"
    order_names: ClassVar[tuple[str, ...]] = ("lost_in_the_middle", "litm", "interleave")
    requires: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "order"

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        ranked = by_relevance(chunks)
        out = ranked[0::2] + ranked[1::2][::-1]
        return StageResult.of(self.name, chunks, out)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class BookendOrder:
    """Best first, second best last, the rest by relevance in between.

    Example:
        scores 5 4 3 2 1  ->  5 3 2 1 4
    """

    name: ClassVar[str] = "bookend_order"
    order_names: ClassVar[tuple[str, ...]] = ("bookend",)
    requires: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "order"

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        ranked = by_relevance(chunks)
        out = ranked if len(ranked) < 3 else [ranked[0], *ranked[2:], ranked[1]]
        return StageResult.of(self.name, chunks, out)


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class AutoOrder:
    """Relevance order for up to ``threshold`` chunks, bookend beyond."""

    name: ClassVar[str] = "auto_order"
    order_names: ClassVar[tuple[str, ...]] = ("auto",)
    requires: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "order"
    threshold: int = bounded(3, 10_000)

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int) or self.threshold < 0:
            raise ConfigError(
                f"threshold must be a non-negative integer; got {self.threshold!r}.", loc=("threshold",)
            )

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        inner = ScoreOrder() if len(chunks) <= self.threshold else BookendOrder()
        result = inner(chunks)
        return StageResult.of(self.name, chunks, result.chunks, notes=(f"used {inner.name}",))


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class PriorOrder:
    """Put the strongest chunks where *your* reader reads best, from a measured positional prior.

    ``prior`` is a prior file (JSON/TOML, as written by ``contextwright eval
    --reader ... --positions K --prior-out FILE``), ``liu2024`` (Liu et al.,
    GPT-3.5), or the mapping such a file holds (inline data: the only form,
    besides the server's own names, that the HTTP service accepts). For n blocks, each position ``i`` gets the prior's expected
    accuracy at ``i / (n - 1)``; positions are ranked by that accuracy (ties:
    earlier first) and the chunks by relevance, and the k-th best chunk goes to
    the k-th best position. With a U-shaped prior this is a bookend order; with
    a prior that falls off steadily it is relevance order.

    Example:
        >>> PriorOrder(prior="smollm2-prior.json")
    """

    name: ClassVar[str] = "prior_order"
    order_names: ClassVar[tuple[str, ...]] = ("prior",)
    requires: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = "order"
    # Not hashed: an inline prior is a mapping (compared, and serialized as it came).
    prior: str | Mapping[str, Any] = field(default="liu2024", hash=False)
    _curve: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.prior, (str, Mapping)) or not self.prior:
            raise ConfigError(
                f"prior must be 'liu2024' or the path of a prior file (or a prior mapping); got {self.prior!r}. "
                "Write one with: contextwright eval --reader URL --positions 5 --prior-out prior.json",
                loc=("prior",),
            )
        # A leaf module (it imports only errors); loaded lazily so stages stay free of eval at import.
        from contextwright.stages.priors import load_prior

        object.__setattr__(self, "_curve", load_prior(self.prior))

    def positions(self, n: int) -> list[int]:
        """The n positions, best first, under the prior."""
        span = max(1, n - 1)
        return sorted(range(n), key=lambda i: (-self._curve.accuracy(i / span if n > 1 else 0.0), i))

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        ranked = by_relevance(chunks)
        out: list[Chunk | None] = [None] * len(ranked)
        for chunk, slot in zip(ranked, self.positions(len(ranked)), strict=True):
            out[slot] = chunk
        placed = [c for c in out if c is not None]
        return StageResult.of(self.name, chunks, placed, notes=(f"prior {self._curve.name}",))


def order_classes() -> dict[str, type[Any]]:
    """Every name ``order=`` accepts, mapped to its stage class: built from the stage registry.

    Each registered order stage (``kind = "order"``) is reachable by its registered name
    (``prior_order``) and by the short names its class lists in ``order_names``
    (``prior``); a new order stage needs no list here.
    """
    out: dict[str, type[Any]] = {}
    for cls in registered_stages().values():
        if is_order_stage(cls):
            for name in (*getattr(cls, "order_names", ()), cls.name):
                out.setdefault(name, cls)
    return out


def order_names() -> tuple[str, ...]:
    """The order names to list (one per order stage: the first of its ``order_names``, else its name)."""
    return tuple(
        (getattr(cls, "order_names", ()) or (cls.name,))[0]
        for cls in registered_stages().values()
        if is_order_stage(cls)
    )


def order_stage(name: str) -> Any:
    """An order stage from its short name (see :func:`order_names`; aliases such as ``litm`` too).

    Raises:
        ConfigError: listing the valid names, with the closest one.
    """
    classes = order_classes()
    cls = classes.get(name.replace("-", "_").lower()) if isinstance(name, str) else None
    if cls is None:
        raise ConfigError(
            f"unknown order {name!r}.{did_you_mean(str(name), classes)} Valid: {', '.join(order_names())}."
        )
    return cls()
