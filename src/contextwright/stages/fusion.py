"""Fusion: several ranked lists (hybrid search, one list per rewritten query) become one.

Hybrid retrieval returns a keyword list and a vector list, or one list per
rewritten query. :class:`Fuse` merges named lists into a single ranking
*before* every other stage, so dedup, selection and order see one list. A chunk
found by several lists (the same ``id``; without ids, the same text) appears
once and carries its provenance: which lists found it, at which rank, with
which score (``Chunk.provenance``, copied onto its citation and into the
report).

Methods:

* ``score`` (default): weighted score fusion over per-list min-max normalized
  scores, ``sum_l w_l * (s_l - min_l) / (max_l - min_l)`` (CombSUM of Fox &
  Shaw 1994 with Lee's 1997 normalization; Weaviate's "relative score
  fusion"). A chunk missing from a list gets 0 from it (at most the list's
  floor). It uses how *confident* each retriever is, not only where it put a
  chunk: a dense list whose top hit stands far above the rest keeps it on top,
  where rank fusion would interleave it with the other list's weaker top hits.
  A list whose scores do not vary (or carry none) is normalized by rank
  instead: ``1 - (r - 1) / (n - 1)``.
* ``rrf``: reciprocal rank fusion, ``sum_l w_l / (k + r_l)`` with 1-based
  ranks and ``k = 60`` (Cormack, Clarke and Büttcher, SIGIR 2009). Scores are
  ignored, which makes it robust to scores on different scales and blind to
  how sure each retriever is.

On the NQ dev set (BM25 and all-MiniLM-L6-v2 top-20 lists, ``qa`` at 500
tokens) the dense list alone keeps .983 of the answers, BM25 .913, RRF .967
and ``score`` .983 (``bench/bench_fusion.py`` prints the table with paired
intervals).

Example:
    >>> ctx = assemble("who wrote it?", {"bm25": bm25_hits, "dense": vector_hits}, budget=500)
    >>> ctx.citations[0].provenance   # (("dense", 1, 0.71), ("bm25", 4, 12.3))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from contextwright.core.errors import ConfigError, InputError
from contextwright.core.limits import bounded
from contextwright.inputs.frameworks import read_item
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.report import Change, Drop, StageReport, StageResult
from contextwright.stages.base import register_stage

__all__ = ["Fuse", "is_named_lists"]

Method = Literal["score", "rrf"]
_METHODS = ("score", "rrf")
_MAX_K = 10_000
_MAX_WEIGHT = 1_000.0


def is_named_lists(value: object) -> bool:
    """Whether ``value`` is a mapping of list name -> ranked list (rather than one list)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(v, Iterable) and not isinstance(v, (str, bytes, Mapping)) for v in value.values())
    )


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class Fuse:
    """Fuse named ranked lists into one ranking (see the module docstring).

    Put it first in a config to choose the method; without it, named lists are
    fused with the defaults (``score``). On a single list it does nothing.

    Args:
        method: ``score`` (weighted min-max score fusion, default) or ``rrf``.
        k: The RRF constant (1 to 10,000; default 60).
        weights: A weight per list name (0 to 1,000; default 1 each). A name
            that is not among the lists is an error at assembly time.

    Example:
        >>> Fuse(method="rrf", weights={"dense": 2.0}).fuse({"bm25": a, "dense": b}).chunks
    """

    name: ClassVar[str] = "fuse"
    requires: ClassVar[tuple[str, ...]] = ()
    method: Method = "score"
    k: int = bounded(60, _MAX_K)
    weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in _METHODS:
            raise ConfigError(
                f"fuse method must be one of {', '.join(_METHODS)}; got {self.method!r}. "
                "'score' fuses min-max normalized scores, 'rrf' reciprocal ranks.",
                loc=("method",),
            )
        if (
            isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1
        ):  # the upper bound: bounded()
            raise ConfigError(
                f"fuse k must be an integer from 1 to {_MAX_K:,}; got {self.k!r}. The usual is 60.",
                loc=("k",),
            )
        if not isinstance(self.weights, Mapping):
            raise ConfigError(
                f'fuse weights must be an object of list name -> weight; got {self.weights!r}. Example: {{"dense": 2}}.',
                loc=("weights",),
            )
        for key, w in self.weights.items():
            if (
                not isinstance(key, str)
                or isinstance(w, bool)
                or not isinstance(w, (int, float))
                or not math.isfinite(w)
                or not 0 <= w <= _MAX_WEIGHT
            ):
                raise ConfigError(
                    f"fuse weights[{key!r}] must be a number from 0 to {_MAX_WEIGHT:g}; got {w!r}.",
                    loc=("weights", key),
                )
        object.__setattr__(self, "weights", {str(k): float(v) for k, v in self.weights.items()})

    def __hash__(self) -> int:
        return hash((self.method, self.k, tuple(sorted(self.weights.items()))))

    def __call__(self, chunks: Sequence[Chunk], /) -> StageResult:
        # One list: already ranked; the pipeline calls fuse() itself for named lists.
        return StageResult.of(self.name, chunks, chunks, notes=("one list: nothing to fuse",))

    def fuse(
        self, lists: Mapping[str, Iterable[Chunk | Mapping[str, Any]]], *, empty: list[Drop] | None = None
    ) -> StageResult:
        """Merge ``lists`` (name -> ranked chunks, best first) into one ranking.

        The fused chunks carry the fused score, their fused position as
        ``rank`` and ``provenance`` = ``((list, rank, score), ...)`` (1-based
        ranks, the list's own score), best list rank first.

        Raises:
            InputError: a list that is not a list of chunks, or one id with two
                different texts.
            ConfigError: a weight for a list that is not there.
        """
        if not is_named_lists(lists):
            raise InputError(
                "named lists must be an object of list name -> list of chunks, e.g. "
                f'{{"bm25": [...], "dense": [...]}}; got {type(lists).__name__}.'
            )
        unknown = sorted(set(self.weights) - set(lists))
        if unknown:
            raise ConfigError(
                f"fuse weights name {', '.join(map(repr, unknown))}, but the lists are "
                f"{', '.join(map(repr, lists))}; use the lists' names."
            )
        parsed = _parsed(lists, empty)
        first: dict[str, Chunk] = {}
        where: dict[str, str] = {}
        fused: dict[str, float] = {}
        prov: dict[str, list[tuple[str, int, float]]] = {}
        entries = 0
        for name, items in parsed.items():
            weight = self.weights.get(name, 1.0)
            norm = self._normalized(items)
            for r, c in enumerate(items, 1):
                entries += 1
                seen = first.get(c.id)
                if seen is None:
                    first[c.id], where[c.id] = c, f"lists[{name!r}][{r - 1}]"
                elif seen.text != c.text:
                    raise InputError(
                        f"lists[{name!r}][{r - 1}].id {c.id!r} is also {where[c.id]}.id, with a different "
                        "text; one id must mean one chunk across lists. Give the chunks distinct ids."
                    )
                fused[c.id] = fused.get(c.id, 0.0) + weight * norm[r - 1]
                prov.setdefault(c.id, []).append((name, r, c.score))
        best_rank = {cid: min(r for _, r, _ in p) for cid, p in prov.items()}
        arrival = {cid: i for i, cid in enumerate(first)}
        ranking = sorted(first, key=lambda cid: (-fused[cid], best_rank[cid], arrival[cid]))
        out = []
        changes = []
        for position, cid in enumerate(ranking):
            trail = tuple(sorted(prov[cid], key=lambda p: (p[1], list(parsed).index(p[0]))))
            out.append(replace(first[cid], score=fused[cid], rank=position, provenance=trail))
            if len(trail) > 1:
                changes.append(
                    Change(cid, "fused", detail=", ".join(f"{n} #{r} ({s:g})" for n, r, s in trail))
                )
        sizes = ", ".join(f"{n} {len(v)}" for n, v in parsed.items())
        notes = (
            f"{self.method} fusion of {len(parsed)} lists ({sizes}): {entries} entries -> {len(out)} chunks",
        )
        report = StageReport(
            stage=self.name,
            chunks_in=entries,
            chunks_out=len(out),
            changed=tuple(changes),
            notes=notes,
        )
        return StageResult(tuple(out), report)

    def _normalized(self, items: Sequence[Chunk]) -> list[float]:
        n = len(items)
        if self.method == "rrf":
            return [1.0 / (self.k + r) for r in range(1, n + 1)]
        scores = [c.score for c in items]
        lo, hi = (min(scores), max(scores)) if scores else (0.0, 0.0)
        if hi > lo:
            return [(s - lo) / (hi - lo) for s in scores]
        # No score information: the rank is all there is.
        return [1.0 - (r / (n - 1)) if n > 1 else 1.0 for r in range(n)]


def _parsed(
    lists: Mapping[str, Iterable[Chunk | Mapping[str, Any]]], empty: list[Drop] | None
) -> dict[str, tuple[Chunk, ...]]:
    """Each named list as chunks; chunks without text go to ``empty`` (once per id), naming their list.

    Raises:
        InputError: for a name that is not a non-empty string, or a malformed list.
    """
    parsed: dict[str, tuple[Chunk, ...]] = {}
    for name, items in lists.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"list names must be non-empty strings; got {name!r}.")
        blank: list[Drop] | None = [] if empty is not None else None
        try:
            parsed[name] = chunks_from_dicts(items, empty=blank, read=read_item)
        except InputError as exc:
            raise InputError(f"lists[{name!r}]: {exc}") from None
        if empty is not None and blank:
            known = {d.chunk_id for d in empty}
            empty.extend(
                replace(d, detail=f"list {name!r}: {d.detail}") for d in blank if d.chunk_id not in known
            )
    return parsed
