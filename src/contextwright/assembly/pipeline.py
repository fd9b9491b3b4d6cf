"""Run stages in order, fit the final string, number the citations.

The pipeline owns invariants 1-3: it passes each stage only what it
``requires``, collects the reports, renders the final blocks, and, should the
exact count of the final string exceed the budget (possible only through the
numbering or a non-additive tokenizer or template), drops the weakest block
and renders again until it fits. Citations are numbered on the final order.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from contextwright.assembly.loop import StageLoop, cancel_on, check_cancelled
from contextwright.core.caches import ByteLRU, Scoped
from contextwright.core.errors import ConfigError, InputError
from contextwright.core.telemetry import span
from contextwright.core.text import check_text
from contextwright.inputs.frameworks import check_list, read_item
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.report import Change, Drop, Report, StageReport, StageResult, Tally, tallied
from contextwright.render.cite import build_citations
from contextwright.render.context import AssembledContext
from contextwright.render.format import Format, get_format
from contextwright.render.meter import Meter
from contextwright.stages.filter import relevance_key
from contextwright.stages.fusion import Fuse, is_named_lists
from contextwright.tokens import CachedTokenizer

if TYPE_CHECKING:
    from contextwright.render.history import HistoryResult

__all__ = ["Pipeline", "Plan", "cancel_on"]

logger = logging.getLogger(__name__)

# Rendered bodies and number-free header parts of every pipeline, by text, in two shared caches
# bounded by bytes (each pipeline sees its own entries through a Scoped view): the service keeps
# up to 64 pipelines, and they share these bounds instead of each holding its own.
_BODIES = ByteLRU("contextwright.assembly.pipeline.bodies", max_bytes=12 * 2**20, maxsize=65_536)
_HEADERS = ByteLRU("contextwright.assembly.pipeline.headers", max_bytes=6 * 2**20, maxsize=65_536)


@dataclass(frozen=True, slots=True)
class Plan:
    """What an assembly would do, without rendering (see :meth:`Pipeline.plan`).

    Attributes:
        budget: The documents budget.
        zones: The per-zone breakdown (window, system, history, query, output,
            buffer, documents) when the assembler knows the model.
        input_chunks: How many chunks came in.
        input_tokens: Their bodies' tokens.
        chunks: The blocks that would be rendered, in order.
        tokens: Their cost as rendered (frame, headers, bodies), before the final check.
        stages: Every stage's report.
        history: The conversation history trimmed to its zone, when one was given.
    """

    budget: int
    zones: Mapping[str, int]
    input_chunks: int
    input_tokens: int
    chunks: tuple[Chunk, ...]
    tokens: int
    stages: tuple[StageReport, ...]
    history: HistoryResult | None = None

    @property
    def dropped(self) -> tuple[Drop, ...]:
        """Every chunk that would be dropped, with its reason."""
        return tuple(d for s in self.stages for d in s.dropped)

    @property
    def compressed(self) -> tuple[Change, ...]:
        """Every kept chunk that would be compressed or truncated, with tokens before and after."""
        kept = {c.id for c in self.chunks}
        return tuple(
            c
            for s in self.stages
            for c in s.changed
            if c.action in ("compressed", "truncated") and c.chunk_id in kept
        )

    @property
    def fits(self) -> bool:
        """Whether every input chunk fits whole: nothing dropped for budget, nothing shrunk."""
        return not self.compressed and not any(d.reason in _BUDGET_REASONS for d in self.dropped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "zones": dict(self.zones),
            "input_chunks": self.input_chunks,
            "input_tokens": self.input_tokens,
            "output_chunks": len(self.chunks),
            "tokens": self.tokens,
            "fits": self.fits,
            "chunk_ids": [c.id for c in self.chunks],
            "dropped": [d.to_dict() for d in self.dropped],
            "compressed": [c.to_dict() for c in self.compressed],
            **({"history": self.history.to_dict()} if self.history is not None else {}),
        }


def _inputs(query: str, chunks: Iterable[Chunk | Mapping[str, Any]], empty: list[Drop]) -> tuple[Chunk, ...]:
    """The query checked and the chunks normalized (every string that enters is checked);
    chunks with no text are appended to ``empty`` as ``empty`` drops instead."""
    if not isinstance(query, str):
        raise InputError(f"query must be a string; got {type(query).__name__}.")
    check_text(query, "query")
    check_list(chunks)
    return chunks_from_dicts(chunks, empty=empty, read=read_item)


_BUDGET_REASONS = frozenset({"over_budget", "irrelevant"})

#: The render stage's note (and the logged warning) when the documents budget is 0.
ZERO_BUDGET_NOTE = "budget 0: nothing fits a zero budget, so the context is empty; pass a budget > 0"


def zero_budget_notes(budget: int, chunks: int) -> tuple[str, ...]:
    """The zero-budget warning, logged and returned as a report note, when there was something to fit."""
    if budget != 0 or chunks == 0:
        return ()
    logger.warning(ZERO_BUDGET_NOTE, extra={"budget": budget, "chunks": chunks})
    return (ZERO_BUDGET_NOTE,)


#: The budgets (and ceilings) the "no chunk fits" warning was logged for (an eval at 20 tokens warns once, not per query).
_SMALL_BUDGETS_LOGGED: set[object] = set()


def small_budget_notes(
    budget: int,
    inputs: Sequence[Chunk],
    kept: int,
    meter: Meter,
    reports: Sequence[StageReport],
    stages: Sequence[object] = (),
) -> tuple[str, ...]:
    """The warning, logged and noted, when a budget > 0 is too small for any one chunk.

    Only when the budget emptied the context: chunks dropped as ``over_budget`` and none kept
    (a relevance stop that keeps nothing says so in its own report). When a ``token_budget``
    of ``stages`` has a ``ceiling`` (a fitted profile's cap) under the budget and the smallest
    chunk, the note names the ceiling: raising the budget alone would change nothing.
    """
    if budget <= 0 or kept or not inputs:
        return ()
    if not any(d.reason == "over_budget" for r in reports for d in r.dropped):
        return ()
    need = min(meter.set_cost([c], 1) for c in inputs)
    # Looked up only here, when the context came out empty (a stage's ceiling: ``token_budget``'s).
    ceiling = min(
        (c for c in (getattr(st, "ceiling", None) for st in stages) if isinstance(c, int)), default=None
    )
    # One template: over many queries the CLI shows it once (the first call's figures).
    if ceiling is not None and ceiling < min(need, budget):
        template = (
            "ceiling %s: no chunk fits under token_budget's ceiling, so the context is empty; the smallest "
            "chunk needs %s tokens with its header: raise the ceiling to at least %s, or remove it to fill "
            "the budget (%s)"
        )
        budget_too = "would hold it" if need <= budget else f"to be raised to {need:,} too"
        figures: tuple[str, ...] = (
            f"{ceiling:,}",
            f"{need:,}",
            f"{need:,}",
            f"the budget, {budget:,}, {budget_too}",
        )
        key: object = ("ceiling", ceiling)
    else:
        template = (
            "budget %s: no chunk fits, so the context is empty; the smallest chunk needs "
            "%s tokens with its header: pass a budget of at least %s"
        )
        figures, key = (f"{budget:,}", f"{need:,}", f"{need:,}"), budget
    if key not in _SMALL_BUDGETS_LOGGED:  # logged once per budget (or ceiling) and process; noted every time
        _SMALL_BUDGETS_LOGGED.add(key)
        logger.warning(template, *figures, extra={"budget": budget, "chunks": len(inputs), "smallest": need})
    return (template % figures,)


def _report_empty(reports: list[StageReport], empty: list[Drop], kept: int) -> None:
    """Put the input chunks left out for having no text first in the report (reason ``empty``)."""
    if empty:
        reports.insert(
            0,
            StageReport(
                stage="input",
                chunks_in=kept + len(empty),
                chunks_out=kept,
                dropped=tuple(empty),
                notes=(f"{len(empty)} chunk(s) without text left out",),
            ),
        )


@dataclass(frozen=True, slots=True)
class Pipeline:
    """An ordered list of stages and the format they render into.

    Args:
        stages: The stages, in order.
        format: The output format (name, mapping or :class:`Format`).
        verify: ``auto`` tokenizes the final string only when the count cannot
            be derived exactly from the pieces; ``always`` always does.
        name: A label for reports (the preset name).
        prompt: The grounded prompt this pipeline was fitted with (a name or the text; a
            config's ``prompt``): it stands in for ``default`` when the context's messages are
            built. ``None``: the shipped default prompt.
        reask: The prompt :func:`contextwright.ask` asks again with after a bare citation (a
            config's ``reask``, what ``fit --reask-bare`` measured), ``False`` for never;
            ``None``: ``light``. It stands in for ``reask_bare="auto"``.
    """

    stages: tuple[Any, ...]
    format: Format = field(default_factory=lambda: get_format("xml"))
    verify: Literal["auto", "always"] = "auto"
    name: str = "custom"
    prompt: str | None = None
    reask: str | bool | None = None
    # Rendered bodies by chunk text, kept across calls (escaping is a pure
    # function of the text and the format), in this pipeline's view of the shared caches.
    # init=False: dataclasses.replace() (a new format, new stages) starts with
    # its own view instead of sharing bodies rendered for another format.
    _bodies: Scoped = field(default_factory=lambda: Scoped(_BODIES), compare=False, repr=False, init=False)
    _headers: Scoped = field(default_factory=lambda: Scoped(_HEADERS), compare=False, repr=False, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stages", tuple(self.stages))
        object.__setattr__(self, "format", get_format(self.format))
        if self.verify not in ("auto", "always"):
            raise ConfigError(f"verify must be 'auto' or 'always'; got {self.verify!r}.")
        for i, stage in enumerate(self.stages):
            if not callable(stage) or not isinstance(getattr(stage, "name", None), str):
                raise ConfigError(
                    f"stages[{i}] ({stage!r}) is not a stage: it needs a 'name' and a __call__."
                )

    def clear_caches(self) -> None:
        """Forget this pipeline's rendered bodies and headers (kept across calls, by text and format)."""
        self._bodies.renew()
        self._headers.renew()

    def run(
        self,
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        *,
        tokenizer: CachedTokenizer,
        budget: int,
        zones: Mapping[str, int] | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> AssembledContext:
        """Assemble ``chunks`` for ``query`` into at most ``budget`` tokens.

        Args:
            query: The user's query (only stages that require it see it).
            chunks: Chunks or mappings (see :meth:`Chunk.from_dict`).
            tokenizer: The cached tokenizer that defines the budget.
            budget: The documents budget in tokens (>= 0).
            zones: The zone breakdown, copied into the report.
            resources: Extra things stages may require (``store``, ``embedder``).

        ``chunks`` may also be named ranked lists, ``{"bm25": [...], "dense": [...]}``:
        they are fused first, by the pipeline's ``fuse`` stage or the default
        :class:`~contextwright.stages.fusion.Fuse`.
        """
        empty: list[Drop] = []
        inputs, fused = self._inputs(query, chunks, empty)
        meter, current, reports, input_tokens, tokens_now = self._run_stages(
            query, inputs, tokenizer=tokenizer, budget=budget, resources=resources, fused=fused
        )
        _report_empty(reports, empty, len(inputs))
        check_cancelled("render")
        return self._finish(
            query, inputs, empty, meter, current, reports, input_tokens, tokens_now, budget, zones, tokenizer
        )

    def _inputs(
        self, query: str, chunks: Any, empty: list[Drop]
    ) -> tuple[tuple[Chunk, ...], StageResult | None]:
        """One list of chunks, fusing named lists first (with the pipeline's ``fuse`` stage);
        chunks without text go to ``empty`` (reason ``empty``), in one list or in named lists."""
        if not is_named_lists(chunks):
            return _inputs(query, chunks, empty), None
        _inputs(query, (), empty)  # the query checks
        fuser = next((s for s in self.stages if isinstance(s, Fuse)), None) or Fuse()
        start = time.perf_counter()
        result = fuser.fuse(chunks, empty=empty)
        ms = (time.perf_counter() - start) * 1000
        return result.chunks, replace(result, report=replace(result.report, ms=ms))

    def _meter_and_env(
        self, query: str, tokenizer: CachedTokenizer, budget: int, resources: Mapping[str, Any] | None
    ) -> tuple[Meter, dict[str, Any]]:
        """The call's meter (over the pipeline's bounded body/header caches) and what stages may receive;
        shared by the sync and async paths."""
        meter = Meter(self.format, tokenizer, bodies=self._bodies, header_parts=self._headers)
        env: dict[str, Any] = {
            "query": query,
            "tokenizer": tokenizer,
            "budget": budget,
            "meter": meter,
            "format": self.format,
            **(resources or {}),
        }
        return meter, env

    def _run_stages(
        self,
        query: str,
        inputs: tuple[Chunk, ...],
        *,
        tokenizer: CachedTokenizer,
        budget: int,
        resources: Mapping[str, Any] | None,
        fused: StageResult | None = None,
    ) -> tuple[Meter, tuple[Chunk, ...], list[StageReport], Tally, int | Tally]:
        """Run every stage; shared by :meth:`run` and :meth:`plan` (which skips the render).

        The inputs' tokens and each stage's are tallies (:class:`~contextwright.model.report.Tally`):
        counted when the report is read, not here; a stage counts what it needs to select.
        """
        meter, env = self._meter_and_env(query, tokenizer, budget, resources)
        input_tokens = meter.tally(inputs)
        loop = StageLoop.begin(self.stages, env, inputs, input_tokens, fused)
        for stage, needs in loop.steps():
            with loop.span(stage) as sp:
                start = time.perf_counter()
                result: StageResult = stage(loop.current, **needs)
                ms = (time.perf_counter() - start) * 1000
                loop.record(result, ms, meter.tally(result.chunks), sp)
        return meter, loop.current, loop.reports, input_tokens, loop.tokens_now

    async def arun(
        self,
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        *,
        tokenizer: CachedTokenizer,
        budget: int,
        zones: Mapping[str, int] | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> AssembledContext:
        """:meth:`run` for asyncio: the same result, without blocking the event loop.

        A stage that offers an async ``acall(chunks, **needs)`` is awaited
        (its I/O then runs on the loop); every other stage, and the render,
        runs in a worker thread (``asyncio.to_thread``), so a store fetch or
        an LLM request of one call overlaps with other calls and tasks.
        """
        import asyncio

        inputs, fused, empty, meter, env = await asyncio.to_thread(
            self._prepare, query, chunks, tokenizer, budget, resources
        )
        input_tokens = meter.tally(inputs)  # counted when the report is read
        loop = StageLoop.begin(self.stages, env, inputs, input_tokens, fused)
        for stage, needs in loop.steps():
            with loop.span(stage) as sp:
                start = time.perf_counter()
                acall = getattr(stage, "acall", None)
                if acall is not None and inspect.iscoroutinefunction(acall):
                    result: StageResult = await acall(loop.current, **needs)
                else:
                    result = await asyncio.to_thread(stage, loop.current, **needs)
                ms = (time.perf_counter() - start) * 1000
                loop.record(result, ms, meter.tally(result.chunks), sp)
        _report_empty(loop.reports, empty, len(inputs))
        check_cancelled("render")
        return await asyncio.to_thread(
            self._finish,
            query,
            inputs,
            empty,
            meter,
            loop.current,
            loop.reports,
            input_tokens,
            loop.tokens_now,
            budget,
            zones,
            tokenizer,
        )

    def _prepare(
        self,
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        tokenizer: CachedTokenizer,
        budget: int,
        resources: Mapping[str, Any] | None,
    ) -> tuple[tuple[Chunk, ...], StageResult | None, list[Drop], Meter, dict[str, Any]]:
        empty: list[Drop] = []
        inputs, fused = self._inputs(query, chunks, empty)
        meter, env = self._meter_and_env(query, tokenizer, budget, resources)
        return inputs, fused, empty, meter, env

    def _finish(
        self,
        query: str,
        inputs: tuple[Chunk, ...],
        empty: list[Drop],
        meter: Meter,
        current: tuple[Chunk, ...],
        reports: list[StageReport],
        input_tokens: Tally,
        tokens_now: int | Tally,
        budget: int,
        zones: Mapping[str, int] | None,
        tokenizer: CachedTokenizer,
    ) -> AssembledContext:
        start = time.perf_counter()
        with span("contextwright.stage.render", **{"contextwright.stage": "render"}) as sp:
            blocks, text, total, drops = self._fit(current, meter, budget, query)
            meter.flush()
            if sp is not None:
                sp.set_attributes(
                    {
                        "contextwright.chunks_in": len(current),
                        "contextwright.chunks_out": len(blocks),
                        "contextwright.tokens_out": total,
                        "contextwright.dropped": len(drops),
                    }
                )
        render = StageReport(
            stage="render",
            chunks_in=len(current),
            chunks_out=len(blocks),
            dropped=tuple(drops),
            tokens_in=tokens_now,
            tokens_out=total,
            ms=(time.perf_counter() - start) * 1000,
            notes=(f"format {self.format.name}", *zero_budget_notes(budget, len(inputs))),
        )
        small = small_budget_notes(budget, inputs, len(blocks), meter, [*reports, render], self.stages)
        reports.append(replace(render, notes=(*render.notes, *small)) if small else render)
        report = Report(
            stages=tuple(reports),
            input_chunks=len(inputs) + len(empty),
            input_tokens=tallied(input_tokens),
            output_chunks=len(blocks),
            tokens=total,
            budget=budget,
            zones=dict(zones or {}),
        )
        return AssembledContext(
            text=text,
            tokens=total,
            budget=budget,
            citations=build_citations(blocks, self.format),
            chunks=blocks,
            report=report,
            query=query,
            tokenizer=tokenizer.name,
            format=self.format,
            prompt=self.prompt,
            reask=self.reask,
        )

    def plan(
        self,
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        *,
        tokenizer: CachedTokenizer,
        budget: int,
        zones: Mapping[str, int] | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> Plan:
        """A dry run: run the stages, skip the render, and say what would happen.

        The blocks' cost is the meter's (frame, block headers, bodies,
        document headers), the same numbers the selection stages budget with;
        the render may still drop a block if the exact count of the final
        string differs (see :meth:`run`).
        """
        empty: list[Drop] = []
        inputs, fused = self._inputs(query, chunks, empty)
        meter, current, reports, input_tokens, _ = self._run_stages(
            query, inputs, tokenizer=tokenizer, budget=budget, resources=resources, fused=fused
        )
        _report_empty(reports, empty, len(inputs))
        cost = meter.set_cost(current, len(current)) if current else 0
        return Plan(
            budget=budget,
            zones=dict(zones or {}),
            input_chunks=len(inputs) + len(empty),
            input_tokens=input_tokens(),
            chunks=current,
            tokens=cost,
            stages=tuple(reports),
        )

    def _fit(
        self, blocks: Sequence[Chunk], meter: Meter, budget: int, query: str
    ) -> tuple[tuple[Chunk, ...], str, int, list[Drop]]:
        """Render, and drop the weakest block until the exact count fits."""
        current = list(blocks)
        drops: list[Drop] = []
        verify = self.verify == "always"
        while True:
            text, total = meter.measure(current, query=query, verify=verify)
            hidden = self.format.unrendered(current, query=query)
            if hidden:
                # a template that leaves a block out must not cite it (invariant 3)
                for i in sorted(hidden, reverse=True):
                    victim = current.pop(i)
                    drops.append(
                        Drop(victim.id, "not_rendered", detail="the template does not show its text")
                    )
                continue
            if total <= budget:
                return tuple(current), text, total, drops
            weakest = max(range(len(current)), key=lambda i: relevance_key(current[i]))
            victim = current.pop(weakest)
            logger.info(
                "final text over budget; dropping the weakest block",
                extra={"tokens": total, "budget": budget, "chunk_id": victim.id},
            )
            drops.append(Drop(victim.id, "over_budget", detail=f"final text was {total} tokens > {budget}"))
