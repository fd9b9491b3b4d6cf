"""Contextualize: a per-document summary rendered once before the document's first block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.model.report import Change, StageResult
from contextwright.stages.base import register_stage
from contextwright.stages.filter import by_relevance

if TYPE_CHECKING:
    from contextwright.render.meter import Meter

__all__ = ["DocSummaries"]


@register_stage
@dataclass(frozen=True, slots=True, kw_only=True)
class DocSummaries:
    """Attach a summary to every chunk of a document; formats render it once per document.

    A retrieved passage often does not say what it is about ("In 1901 he
    received..."): one line on the document it comes from restores that. The
    summary comes from, in order of precedence:

    1. ``summaries``, a mapping ``doc_id -> summary`` passed in (stored as a
       tuple of pairs so the stage serializes; a dict is accepted);
    2. a ``doc_summary`` the chunk already carries;
    3. the chunk's ``metadata`` keys in ``metadata_keys`` (``doc_summary``,
       then ``page_summary``).

    Every chunk of one document gets the same summary (the best-ranked chunk
    that has one decides), so the header is the same wherever the document's
    first block lands. The formats render it in the document header
    (``<summary document="...">`` in ``xml``) and :class:`~contextwright.render.meter.Meter`
    counts it in ``doc_cost``, so place this stage *before* ``token_budget``:
    the summaries' tokens are then inside the budget.

    Args:
        summaries: ``doc_id -> summary`` pairs (a dict is converted).
        metadata_keys: Chunk metadata keys to read a summary from, in order.

    Example:
        >>> DocSummaries(summaries={"wiki:Nobel Prize": "The Nobel Prize is ..."})(chunks)
    """

    name: ClassVar[str] = "doc_summaries"
    requires: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ("meter",)
    summaries: tuple[tuple[str, str], ...] = ()
    metadata_keys: tuple[str, ...] = ("doc_summary", "page_summary")

    def __post_init__(self) -> None:
        raw = self.summaries
        pairs = tuple(raw.items()) if isinstance(raw, Mapping) else raw
        if not isinstance(pairs, (tuple, list)):
            raise ConfigError(
                f"summaries must be a mapping doc_id -> summary or a list of [doc_id, summary] pairs; "
                f"got {type(raw).__name__}.",
                loc=("summaries",),
            )
        clean: list[tuple[str, str]] = []
        for item in pairs:
            if (
                not isinstance(item, (tuple, list))
                or len(item) != 2
                or not all(isinstance(x, str) for x in item)
            ):
                raise ConfigError(
                    f"summaries entries must be [doc_id, summary] string pairs; got {item!r}. "
                    'Example: {"wiki:Paris": "Paris is the capital of France."}.',
                    loc=("summaries",),
                )
            clean.append((item[0], item[1]))
        object.__setattr__(self, "summaries", tuple(clean))
        keys = self.metadata_keys
        if (
            isinstance(keys, str)
            or not isinstance(keys, (tuple, list))
            or not all(isinstance(k, str) for k in keys)
        ):
            raise ConfigError(
                f"metadata_keys must be a list of strings; got {keys!r}.", loc=("metadata_keys",)
            )
        object.__setattr__(self, "metadata_keys", tuple(keys))

    def _own(self, c: Chunk) -> str | None:
        if c.doc_summary and c.doc_summary.strip():
            return c.doc_summary
        for key in self.metadata_keys:
            value = c.metadata.get(key) if c.metadata else None
            if isinstance(value, str) and value.strip():
                return value
        return None

    def __call__(self, chunks: Sequence[Chunk], /, *, meter: Meter | None = None) -> StageResult:
        given = {k: v for k, v in self.summaries if v.strip()}
        chosen: dict[str, str] = {}
        for c in by_relevance(chunks):
            key = c.group_key
            if key in chosen:
                continue
            summary = given.get(key) if c.doc_id is not None else None
            if summary is None:
                summary = self._own(c)
            if summary is not None:
                chosen[key] = summary
        if not chosen:
            return StageResult.of(self.name, chunks, chunks)
        out: list[Chunk] = []
        changes: list[Change] = []
        announced: set[str] = set()
        for c in chunks:
            summary = chosen.get(c.group_key)
            if summary is None or c.doc_summary == summary:
                out.append(c)
                if summary is not None:
                    announced.add(c.group_key)
                continue
            new = replace(c, doc_summary=summary)
            out.append(new)
            if c.group_key not in announced:
                announced.add(c.group_key)
                changes.append(
                    Change(
                        c.id,
                        "doc_summary",
                        None,
                        meter.doc_cost(new) if meter is not None else None,
                        detail=f"{len(summary)} characters for document {c.group_key}",
                    )
                )
        return StageResult.of(self.name, chunks, out, changed=changes)
