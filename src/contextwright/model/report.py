"""What each stage reports: drops with their reasons, changes, counts and timings (invariant 2)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

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


class Tally:
    """A token count that is taken when it is first read, then kept.

    The pipeline counts every input chunk and every stage's output only for the report's
    ``input_tokens``, ``tokens_in`` and ``tokens_out``; the stages themselves count what
    they select from (``qa``'s budget stops counting once the budget is full). So these
    figures are tallies: a caller that reads ``ctx.text`` and never the report's token
    figures does not pay a tokenizer pass over all the inputs (issue 33: at 500 tokens,
    that pass was a third of a ``qa`` assembly). Reading one counts it, in the calling
    thread, exactly as before (in async code with large inputs, read the report in a worker
    thread). Until then it holds the call's meter and chunks; pickling or copying a report
    stores the count itself.

    Example:
        >>> Tally(lambda: 42)()
        42
    """

    __slots__ = ("_count", "_value")

    def __init__(self, count: Callable[[], int]) -> None:
        self._count: Callable[[], int] | None = count
        self._value: int | None = None

    def __call__(self) -> int:
        if self._value is None:
            count = self._count
            assert count is not None  # set until the value is
            self._value = count()
            self._count = None  # what it counted (a meter, the chunks) is released
        return self._value

    def __reduce__(self) -> tuple[type[int], tuple[int]]:
        return int, (self(),)


_T = TypeVar("_T", int, "int | None")
_NO_DEFAULT: Any = object()


class Counted(Generic[_T]):
    """A report field that holds a count or a :class:`Tally` of it (a dataclass field descriptor).

    Reading the field returns the count, taking the tally on first read; a report built
    with plain numbers behaves as it always did. Used for ``Report.input_tokens`` and
    ``StageReport.tokens_in`` / ``tokens_out``.
    """

    def __init__(self, default: _T = _NO_DEFAULT) -> None:
        self._default: _T = default
        self._key = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._key = "_counted_" + name

    def __get__(self, obj: object | None, owner: type | None = None) -> _T:
        if obj is None:  # the class: the field's default, or none (dataclass asks this way)
            if self._default is _NO_DEFAULT:
                raise AttributeError(self._key)
            return self._default
        stored = obj.__dict__
        value: _T | Tally = stored[self._key]
        if isinstance(value, Tally):
            value = stored[self._key] = value()
        return value

    def __set__(self, obj: object, value: _T | Tally) -> None:
        obj.__dict__[self._key] = value  # frozen dataclasses set fields once, in __init__


def tallied(tally: Tally) -> int:
    """``tally`` where a report field is typed ``int`` (``Report.input_tokens``): it is counted when read."""
    return cast(int, tally)


def settle(report: Report) -> Report:
    """Count ``report``'s tallies now, so it holds numbers (and no longer the call's meter and chunks)."""
    _ = report.input_tokens
    for stage in report.stages:
        _ = stage.tokens_in, stage.tokens_out
    return report


def held(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace(obj, **changes)`` for a report: its untaken tallies stay untaken."""
    stored = vars(obj)
    values = {}
    for f in fields(obj):
        if f.init and f.name not in changes:
            key = "_counted_" + f.name
            values[f.name] = stored[key] if key in stored else getattr(obj, f.name)
    return type(obj)(**values, **changes)


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


@dataclass(frozen=True)
class StageReport:
    """What one stage did: counts, tokens, time, and every drop and change.

    Stages fill in ``stage``, the counts, ``dropped``, ``changed``, ``added``
    and ``notes``; the pipeline fills in ``tokens_in``, ``tokens_out`` and
    ``ms``. The token figures are counted when first read (:class:`Tally`).
    """

    stage: str
    chunks_in: int
    chunks_out: int
    dropped: tuple[Drop, ...] = ()
    changed: tuple[Change, ...] = ()
    added: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    tokens_in: Counted[int | None] = Counted(None)
    tokens_out: Counted[int | None] = Counted(None)
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


@dataclass(frozen=True)
class Report:
    """The reports of every stage of one assembly, in order.

    ``input_tokens`` is the token count of the input chunk texts, ``tokens``
    the exact count of the final text and ``budget`` the documents budget.
    ``history`` is the conversation history trimmed to its zone (what was
    kept, dropped and summarized) when ``assemble(..., history=...)`` got one;
    ``tools`` the tool outputs fitted to their zone (``tools=``);
    ``stable_prefix_tokens`` how many tokens at the start of the text equal the
    previous context's (``previous=``/``session=``). ``input_tokens`` and the stages'
    token figures are counted when first read (:class:`Tally`).
    """

    stages: tuple[StageReport, ...]
    input_chunks: int
    if TYPE_CHECKING:  # a plain int to type checkers (a Counted field has no default)
        input_tokens: int
    else:
        input_tokens: Counted[int] = Counted()
    output_chunks: int
    tokens: int
    budget: int
    zones: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    history: HistoryResult | None = None
    tools: ToolsResult | None = None
    stable_prefix_tokens: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle ``zones`` as a dict: the shared empty default is a read-only mapping proxy,
        which pickle refuses (tallies pickle as their counts)."""
        state = dict(vars(self))
        state["zones"] = dict(self.zones)
        return state

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
