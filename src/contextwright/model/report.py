"""What each stage reports: drops with their reasons, changes, counts and timings (invariant 2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from contextwright.model.zones import HistoryResult, ToolsResult

from contextwright.model.chunk import Chunk
from contextwright.model.fields import _EMPTY

#: Why a chunk left the pipeline. Stages may add their own reasons; these are
#: the ones the built-in stages use.
DropReason = Literal[
    "below_min_score",
    "top_k",
    "duplicate_of",
    "near_duplicate_of",
    "semantic_duplicate_of",
    "merged_into",
    "contained_in",
    "over_budget",
    "irrelevant",
    "not_rendered",
]


@dataclass(frozen=True, slots=True)
class Drop:
    """A chunk that left the pipeline, and why.

    ``related`` is the id of the chunk it is a duplicate of or was merged into,
    when the reason has one.
    """

    chunk_id: str
    reason: str
    related: str | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"chunk_id": self.chunk_id, "reason": self.reason}
        if self.related is not None:
            out["related"] = self.related
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class Change:
    """A chunk that stayed but was altered (truncated, compressed, stripped, expanded)."""

    chunk_id: str
    action: str
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"chunk_id": self.chunk_id, "action": self.action}
        if self.tokens_before is not None:
            out["tokens_before"] = self.tokens_before
        if self.tokens_after is not None:
            out["tokens_after"] = self.tokens_after
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class StageReport:
    """What one stage did: counts, tokens, time, and every drop and change.

    Stages fill in ``stage``, the counts, ``dropped``, ``changed``, ``added``
    and ``notes``; the pipeline fills in ``tokens_in``, ``tokens_out`` and
    ``ms``.
    """

    stage: str
    chunks_in: int
    chunks_out: int
    dropped: tuple[Drop, ...] = ()
    changed: tuple[Change, ...] = ()
    added: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    tokens_in: int | None = None
    tokens_out: int | None = None
    ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "chunks_in": self.chunks_in,
            "chunks_out": self.chunks_out,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "ms": round(self.ms, 3),
            "dropped": [d.to_dict() for d in self.dropped],
            "changed": [c.to_dict() for c in self.changed],
            "added": list(self.added),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class StageResult:
    """What a stage returns: the new chunks and its report."""

    chunks: tuple[Chunk, ...]
    report: StageReport

    @classmethod
    def of(
        cls,
        stage: str,
        chunks_in: Sequence[Chunk],
        chunks_out: Iterable[Chunk],
        *,
        dropped: Iterable[Drop] = (),
        changed: Iterable[Change] = (),
        added: Iterable[str] = (),
        notes: Iterable[str] = (),
    ) -> StageResult:
        """Build a result and its report in one call."""
        out = tuple(chunks_out)
        return cls(
            out,
            StageReport(
                stage=stage,
                chunks_in=len(chunks_in),
                chunks_out=len(out),
                dropped=tuple(dropped),
                changed=tuple(changed),
                added=tuple(added),
                notes=tuple(notes),
            ),
        )


@dataclass(frozen=True, slots=True)
class Report:
    """The reports of every stage of one assembly, in order.

    ``input_tokens`` is the token count of the input chunk texts, ``tokens``
    the exact count of the final text and ``budget`` the documents budget.
    ``history`` is the conversation history trimmed to its zone (what was
    kept, dropped and summarized) when ``assemble(..., history=...)`` got one;
    ``tools`` the tool outputs fitted to their zone (``tools=``);
    ``stable_prefix_tokens`` how many tokens at the start of the text equal the
    previous context's (``previous=``/``session=``).
    """

    stages: tuple[StageReport, ...]
    input_chunks: int
    input_tokens: int
    output_chunks: int
    tokens: int
    budget: int
    zones: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    history: HistoryResult | None = None
    tools: ToolsResult | None = None
    stable_prefix_tokens: int | None = None

    @property
    def dropped(self) -> tuple[Drop, ...]:
        """Every drop of every stage, in pipeline order."""
        return tuple(d for s in self.stages for d in s.dropped)

    @property
    def changed(self) -> tuple[Change, ...]:
        """Every change of every stage, in pipeline order."""
        return tuple(c for s in self.stages for c in s.changed)

    def reasons(self) -> dict[str, int]:
        """How many chunks were dropped for each reason."""
        counts: dict[str, int] = {}
        for d in self.dropped:
            counts[d.reason] = counts.get(d.reason, 0) + 1
        return counts

    def summary(self) -> str:
        """One line, e.g. ``20 → 11 chunks · 1,912 → 996 tokens (budget 1,000; 4 unused)``.

        Every preset says the tokens sent against the budget the same way: the budget, and
        the tokens of it left unused when there are any (by the cut of a chunk that did not
        fit, or because ``relevance_stop`` in ``frugal`` ended the list early; its note says which).
        """
        unused = self.budget - self.tokens
        saved = f"; {unused:,} unused" if unused > 0 else ""
        return (
            f"{self.input_chunks:,} → {self.output_chunks:,} chunk{'' if self.output_chunks == 1 else 's'} · "
            f"{self.input_tokens:,} → {self.tokens:,} tokens (budget {self.budget:,}{saved})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "input_chunks": self.input_chunks,
            "input_tokens": self.input_tokens,
            "output_chunks": self.output_chunks,
            "tokens": self.tokens,
            "budget": self.budget,
            "zones": dict(self.zones),
            "stages": [s.to_dict() for s in self.stages],
            **({"history": self.history.to_dict()} if self.history is not None else {}),
            **({"tools": self.tools.to_dict()} if self.tools is not None else {}),
            **(
                {"stable_prefix_tokens": self.stable_prefix_tokens}
                if self.stable_prefix_tokens is not None
                else {}
            ),
        }
