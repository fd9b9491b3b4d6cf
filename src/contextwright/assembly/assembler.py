"""The entry points: :func:`assemble` and the reusable :class:`Assembler`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from contextwright.assembly.loop import check_cancelled
from contextwright.assembly.pipeline import Pipeline, Plan
from contextwright.assembly.presets import pipeline_from_config, with_overrides
from contextwright.assembly.spec import DEFAULT_BUFFER, AssemblerSpec
from contextwright.core.cancel import cancel_on
from contextwright.core.errors import ConfigError, InputError, did_you_mean, located
from contextwright.core.limits import MAX_BUDGET_TOKENS, check_number
from contextwright.core.telemetry import span
from contextwright.model.chunk import Chunk
from contextwright.model.report import held, settle
from contextwright.render.context import AssembledContext
from contextwright.render.format import Format, get_format
from contextwright.render.history import HistoryResult, trim_history
from contextwright.render.messages import Message, config_prompt, system_prompt
from contextwright.render.tools import ToolPolicy, ToolsResult, fit_tools
from contextwright.stages.fusion import Fuse
from contextwright.stages.stable import StableOrder
from contextwright.tokens import CachedTokenizer, Tokenizer, get_tokenizer
from contextwright.tokens.zones import ModelSpec, ZoneBudget, get_model

__all__ = ["Assembler", "aassemble", "assemble"]

MAX_SESSIONS = 4_096  # contexts remembered for stable_order sessions (least recently used go first)


class Assembler:
    """A reusable assembler: one tokenizer (and its cache), one pipeline, shared resources.

    Build it once and call :meth:`assemble` per query; the token cache then
    spans calls, so a chunk seen before is not tokenized again.

    Args:
        config: A preset name (``qa``, ``citations``, ``chat``, ``summarize``,
            ...), a config mapping, a path to a ``.toml``/``.json`` config, or a
            :class:`Pipeline`.
        model: A model name from the registry; sets the tokenizer and the
            zone arithmetic (window − system − history − query − output − buffer).
        budget: An explicit documents budget in tokens; overrides the zones.
        tokenizer: A tokenizer spec or object; overrides the model's.
        format: Override the config's format.
        order: Override the config's order (``relevance``, ``bookend``, ...).
        system: The system prompt (name or text) counted in the system zone.
        history_tokens: Tokens reserved for conversation history.
        output_tokens: Tokens reserved for the answer (default: the model's max output).
        buffer_tokens: Safety margin (default 128).
        fusion: How named ranked lists are fused: ``score`` (default) or
            ``rrf``, or a mapping of :class:`~contextwright.stages.fusion.Fuse`
            settings (``{"method": "rrf", "k": 60, "weights": {"dense": 2}}``);
            replaces the config's ``fuse`` stage.
        tool_tokens: Tokens reserved for tool outputs (``assemble(..., tools=)``).
        tool_policy: ``drop_largest`` (default) or ``truncate`` (line boundaries).
        stable_order: Keep the blocks that survive from the previous context
            (``session=``/``previous=``) first, in their previous order, so the
            prompt prefix stays identical for the provider's prompt cache.
        resources: Things stages may require, e.g. ``store=SQLiteStore(...)``.

    Example:
        >>> asm = Assembler("qa", model="gpt-4o-mini", output_tokens=1_000)
        >>> ctx = asm.assemble("who won?", chunks)
    """

    def __init__(
        self,
        config: str | Path | Mapping[str, Any] | Pipeline = "qa",
        *,
        model: str | ModelSpec | None = None,
        budget: int | None = None,
        tokenizer: str | Tokenizer | None = None,
        format: str | Format | Mapping[str, Any] | None = None,
        order: str | None = None,
        system: str | None = "default",
        history_tokens: int = 0,
        output_tokens: int | None = None,
        buffer_tokens: int = DEFAULT_BUFFER,
        fusion: str | Mapping[str, Any] | None = None,
        tool_tokens: int = 0,
        tool_policy: ToolPolicy = "drop_largest",
        stable_order: bool = False,
        **resources: Any,
    ) -> None:
        spec = AssemblerSpec(
            config,
            model=model,
            budget=budget,
            tokenizer=tokenizer,
            format=format,
            order=order,
            system=system,
            history_tokens=history_tokens,
            output_tokens=output_tokens,
            buffer_tokens=buffer_tokens,
            fusion=fusion,
            tool_tokens=tool_tokens,
            tool_policy=tool_policy,
            stable_order=stable_order,
        )
        self._setup(spec, resources, where="Assembler", arguments=_ASSEMBLER_ARGS)

    @classmethod
    def from_spec(cls, spec: AssemblerSpec, /, **resources: Any) -> Assembler:
        """The assembler ``spec`` describes, with ``resources`` (``store=``, ``embedder=``, ...) for its stages.

        Example:
            >>> Assembler.from_spec(AssemblerSpec("qa", budget=800), store=SQLiteStore("nq.db"))
        """
        return cls._checked(spec, resources, where="Assembler", arguments=_ASSEMBLER_ARGS)

    @classmethod
    def _checked(
        cls, spec: AssemblerSpec, resources: Mapping[str, Any], *, where: str, arguments: Sequence[str]
    ) -> Assembler:
        """An assembler from a checked spec; ``resources`` are checked once, in the words of ``where``."""
        assembler = cls.__new__(cls)
        assembler._setup(spec, resources, where=where, arguments=arguments)
        return assembler

    def _setup(
        self, spec: AssemblerSpec, resources: Mapping[str, Any], *, where: str, arguments: Sequence[str]
    ) -> None:
        """Build the pipeline, the tokenizer and the zones of ``spec`` (whose values are checked)."""
        config, fmt = spec.config, None
        if spec.format is not None:
            with located("format"):
                fmt = get_format(spec.format)
        if isinstance(config, Pipeline):
            self.pipeline = with_overrides(config, format=fmt)
        else:
            with located("config"):
                self.pipeline = pipeline_from_config(config, format=fmt)
        self.pipeline = with_overrides(self.pipeline, order=spec.order)  # loc ("order",)
        if spec.fusion is not None:
            with located("fusion"):
                self.pipeline = _with_fusion(self.pipeline, spec.fusion)
        if spec.stable_order and not any(isinstance(s, StableOrder) for s in self.pipeline.stages):
            self.pipeline = replace(self.pipeline, stages=(*self.pipeline.stages, StableOrder()))
        self.tool_tokens = spec.tool_tokens
        self.tool_policy: ToolPolicy = spec.tool_policy  # type: ignore[assignment]  # checked by the spec
        self.stable_order = spec.stable_order
        self._sessions: OrderedDict[str, AssembledContext] = OrderedDict()
        self._sessions_lock = threading.Lock()
        _check_resources(where, resources, arguments, self.pipeline.stages)
        model = spec.model
        with located("model"):
            self.model = get_model(model) if isinstance(model, str) else model
        if spec.budget is None and self.model is None:
            raise ConfigError(
                "pass budget= (documents tokens) or model= (to derive it from the model's "
                "context window), e.g. Assembler('qa', budget=1000) or Assembler('qa', model='gpt-4o-mini').",
                loc=("budget",),
            )
        given = spec.tokenizer
        with located("tokenizer" if given is not None else "model"):
            named = given if given is not None else (self.model.tokenizer if self.model else "cl100k_base")
            self.tokenizer: CachedTokenizer = get_tokenizer(named)
        # A tokenizer named by a string is the registry's, shared by every assembler using it; one
        # passed as a bare Tokenizer was wrapped here, so its count cache is this assembler's own.
        self._owns_tokenizer = not isinstance(named, (str, CachedTokenizer))
        self.budget = spec.budget
        self.system = spec.system
        self.history_tokens = spec.history_tokens
        self.output_tokens = spec.output_tokens
        self.buffer_tokens = spec.buffer_tokens
        self.resources = dict(resources)
        system = config_prompt(spec.system, self.pipeline.prompt)  # a profile's prompt for "default"
        self._system_tokens = (
            self.tokenizer.count(system_prompt(system, format=self.pipeline.format)) if system else 0
        )
        if spec.budget is None:
            self.zones("")  # fail now, not on the first call, when the zones do not add up

    def clear_caches(self) -> None:
        """Forget this assembler's own caches: its pipeline's rendered bodies and headers, and its
        token counts when the tokenizer is its own (passed as a bare :class:`Tokenizer` object; a
        tokenizer named by a string is shared with every assembler using it and is kept).

        The process-wide caches (sentence analyses, dedup keys, word profiles, snippets, every
        tokenizer's counts) are emptied by ``contextwright.clear_caches()``: a cold start for
        benchmarks.
        """
        self.pipeline.clear_caches()
        if self._owns_tokenizer:
            self.tokenizer.clear()

    def zones(self, query: str = "", *, budget: int | None = None) -> ZoneBudget:
        """The zone breakdown for ``query`` (explicit ``budget`` wins)."""
        explicit = budget if budget is not None else self.budget
        model = self.model
        if model is None:
            return ZoneBudget(history=self.history_tokens, tools=self.tool_tokens, budget=explicit)
        window = (
            model.context_window
            if model.max_input is None
            else model.max_input
            + (self.output_tokens if self.output_tokens is not None else model.max_output)
        )
        return ZoneBudget(
            window=window,
            system=self._system_tokens,
            history=self.history_tokens,
            tools=self.tool_tokens,
            query=self.tokenizer.count(query) if query else 0,
            output=self.output_tokens if self.output_tokens is not None else model.max_output,
            buffer=self.buffer_tokens,
            budget=explicit,
        )

    def assemble(
        self,
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        *,
        budget: int | None = None,
        history: Sequence[Mapping[str, str]] | None = None,
        summarizer: Callable[[list[Message]], str] | None = None,
        tools: Sequence[Mapping[str, str]] | None = None,
        session: str | None = None,
        previous: AssembledContext | Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> AssembledContext:
        """Assemble one context.

        Args:
            query: The user's query.
            chunks: Retrieved chunks, as :class:`Chunk` or mappings; or named
                ranked lists (``{"bm25": [...], "dense": [...]}``), fused first.
            budget: Override the documents budget for this call.
            history: Earlier conversation turns (``{"role", "content"}``, oldest
                first), trimmed to the history zone (``history_tokens``): the
                oldest turns go first, never a system message or the latest
                user turn. ``report.history`` says what was kept and dropped,
                and ``ctx.messages()`` sends the kept turns.
            summarizer: Summarizes the dropped turns; the summary is counted
                inside the history zone.
            tools: Tool outputs ``{"name", "content"}``, fitted to the tool zone
                (``tool_tokens``) and rendered in their own section
                (``report.tools``; ``ctx.messages()`` sends it).
            session: A conversation key: the previous context of this session
                is remembered and used as ``previous`` (``stable_order``).
            previous: The previous turn's context (or its ``to_dict()``): with
                ``stable_order`` its surviving blocks come first, in order;
                ``report.stable_prefix_tokens`` says how many tokens of the
                new text equal its prefix.
            timeout_s: Stop after this many seconds of work (None: no limit). The
                stages check between and inside their long loops
                (:mod:`contextwright.core.cancel`), so the call returns within a
                fraction of a second of its deadline.

        Raises:
            ConfigError: ``history`` or ``tools`` given but the assembler has no zone for them.
            HistoryBudgetError: the system messages and latest user turn alone exceed it.
            DeadlineExceeded: ``timeout_s`` passed (also a :class:`TimeoutError`).
        """
        check_number(budget, "budget", MAX_BUDGET_TOKENS, where="assemble")
        with (
            cancel_on(timeout_s=timeout_s),
            span("contextwright.assemble", **{"contextwright.assembly.pipeline": self.pipeline.name}) as sp,
        ):
            trimmed = self._history(history, summarizer)
            fitted = self._tools(tools)
            previous = self._previous(session, previous)
            ctx: AssembledContext = self._through(
                self.pipeline.run, query, chunks, budget, self._resources_for(previous)
            )
            ctx = self._complete(ctx, trimmed, fitted, previous, session)
            _annotate(sp, ctx)
            return ctx

    def _previous(
        self, session: str | None, previous: AssembledContext | Mapping[str, Any] | None
    ) -> AssembledContext | Mapping[str, Any] | None:
        """The previous context: the one given, else the session's last one."""
        if session is not None and not isinstance(session, str):
            raise InputError(f"session must be a string key; got {type(session).__name__}.")
        if previous is None and session is not None:
            with self._sessions_lock:
                previous = self._sessions.get(session)
        return previous

    def _resources_for(self, previous: AssembledContext | Mapping[str, Any] | None) -> Mapping[str, Any]:
        keys = _block_keys(previous) if previous is not None else None
        return dict(self.resources, previous=keys) if keys is not None else self.resources

    def _complete(
        self,
        ctx: AssembledContext,
        trimmed: HistoryResult | None,
        fitted: ToolsResult | None,
        previous: AssembledContext | Mapping[str, Any] | None,
        session: str | None,
    ) -> AssembledContext:
        """``ctx`` with history, tools and the stable prefix in its report; remembered for ``session``."""
        stable = _stable_prefix(previous, ctx, self.tokenizer) if previous is not None else None
        if trimmed is not None or fitted is not None or stable is not None:
            ctx = replace(
                ctx,
                report=held(ctx.report, history=trimmed, tools=fitted, stable_prefix_tokens=stable),
            )
        if session is not None:
            # A remembered context holds numbers, not its call's meter and chunks: 4,096 sessions
            # of large inputs would otherwise keep every input alive until each report is read.
            settle(ctx.report)
            with self._sessions_lock:
                self._sessions[session] = ctx
                self._sessions.move_to_end(session)
                while len(self._sessions) > MAX_SESSIONS:
                    self._sessions.popitem(last=False)
        return ctx

    def _tools(self, tools: Sequence[Mapping[str, str]] | None) -> ToolsResult | None:
        """``tools`` fitted to the tool zone, or None when none were given."""
        if tools is None:
            return None
        if self.tool_tokens <= 0:
            raise ConfigError(
                f"tools= was given ({len(tools)} outputs) but the assembler has no tool zone "
                "(tool_tokens=0), so nothing bounds it; set Assembler(..., tool_tokens=N), e.g. tool_tokens=1000."
            )
        return fit_tools(
            tools,
            budget=self.tool_tokens,
            tokenizer=self.tokenizer,
            format=self.pipeline.format,
            policy=self.tool_policy,
            checkpoint=check_cancelled,  # a request past its deadline stops between passes
        )

    async def aassemble(
        self,
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        *,
        budget: int | None = None,
        history: Sequence[Mapping[str, str]] | None = None,
        summarizer: Callable[[list[Message]], str] | None = None,
        tools: Sequence[Mapping[str, str]] | None = None,
        session: str | None = None,
        previous: AssembledContext | Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> AssembledContext:
        """:meth:`assemble` for asyncio applications: the same bytes, without blocking the event loop.

        Stages that do I/O (a store fetch for ``expand``, requests to an LLM
        for ``llm_compress``) run in worker threads, or on the loop when the
        stage offers an async ``acall``; concurrent calls overlap their I/O.
        Named lists, ``tools``, ``session`` and ``previous`` work as in :meth:`assemble`.

        Example:
            >>> ctxs = await asyncio.gather(*(asm.aassemble(q, hits[q]) for q in queries))
        """
        import asyncio

        check_number(budget, "budget", MAX_BUDGET_TOKENS, where="aassemble")
        with (
            cancel_on(timeout_s=timeout_s),  # a context variable: it follows the work into to_thread
            span("contextwright.assemble", **{"contextwright.assembly.pipeline": self.pipeline.name}) as sp,
        ):
            trimmed = (
                await asyncio.to_thread(self._history, history, summarizer) if history is not None else None
            )
            fitted = await asyncio.to_thread(self._tools, tools) if tools is not None else None
            previous = self._previous(session, previous)
            resources = self._resources_for(previous)
            zones = await asyncio.to_thread(self.zones, query, budget=budget)
            ctx = await self.pipeline.arun(
                query,
                chunks,
                tokenizer=self.tokenizer,
                budget=zones.documents,
                zones=zones.as_dict(),
                resources=resources,
            )
            ctx = await asyncio.to_thread(self._complete, ctx, trimmed, fitted, previous, session)
            _annotate(sp, ctx)
            return ctx

    def _through(
        self,
        step: Callable[..., Any],
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        budget: int | None,
        resources: Mapping[str, Any] | None = None,
    ) -> Any:
        """``step`` (``pipeline.run`` or ``pipeline.plan``) with this assembler's zones and resources."""
        zones = self.zones(query, budget=budget)
        return step(
            query,
            chunks,
            tokenizer=self.tokenizer,
            budget=zones.documents,
            zones=zones.as_dict(),
            resources=self.resources if resources is None else resources,
        )

    def _history(
        self,
        history: Sequence[Mapping[str, str]] | None,
        summarizer: Callable[[list[Message]], str] | None,
    ) -> HistoryResult | None:
        """``history`` trimmed to the history zone, or None when there is none to trim."""
        if history is None:
            return None
        if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
            raise InputError(
                f"history must be a list of {{'role', 'content'}} turns, oldest first; got {type(history).__name__}."
            )
        if self.history_tokens <= 0:
            raise ConfigError(
                f"history= was given ({len(history)} turns) but the assembler has no history zone "
                "(history_tokens=0), so nothing bounds it; set Assembler(..., history_tokens=N), "
                "e.g. history_tokens=1000."
            )
        return trim_history(
            history, budget=self.history_tokens, tokenizer=self.tokenizer, summarizer=summarizer
        )

    def plan(
        self,
        query: str,
        chunks: Iterable[Chunk | Mapping[str, Any]],
        *,
        budget: int | None = None,
        history: Sequence[Mapping[str, str]] | None = None,
        summarizer: Callable[[list[Message]], str] | None = None,
    ) -> Plan:
        """A dry run: the per-zone budget and what would be dropped or compressed, without rendering.

        Example:
            >>> plan = asm.plan("who won?", chunks)
            >>> plan.zones["documents"], plan.fits, [d.reason for d in plan.dropped]

        ``history`` and ``summarizer`` are trimmed as in :meth:`assemble`
        (``plan.history``).
        """
        trimmed = self._history(history, summarizer)
        plan: Plan = self._through(self.pipeline.plan, query, chunks, budget)
        return plan if trimmed is None else replace(plan, history=trimmed)

    def fits(
        self, query: str, chunks: Iterable[Chunk | Mapping[str, Any]], *, budget: int | None = None
    ) -> bool:
        """Whether every chunk fits whole (nothing dropped for budget, nothing compressed)."""
        return self.plan(query, chunks, budget=budget).fits


def _annotate(sp: Any, ctx: AssembledContext) -> None:
    """The assemble span's attributes (OpenTelemetry; ``sp`` is None without it)."""
    if sp is not None:
        sp.set_attributes(
            {
                "contextwright.input_chunks": ctx.report.input_chunks,
                "contextwright.output_chunks": ctx.report.output_chunks,
                "contextwright.tokens": ctx.tokens,
                "contextwright.tokens.zones": ctx.budget,
                "contextwright.tokenizer": ctx.tokenizer,
            }
        )


def _with_fusion(pipeline: Pipeline, fusion: str | Mapping[str, Any]) -> Pipeline:
    """``pipeline`` with its ``fuse`` stage replaced (or one put first)."""
    if isinstance(fusion, str):
        fuser = Fuse(method=fusion)  # type: ignore[arg-type]  # validated in Fuse
    elif isinstance(fusion, Mapping):
        bad = sorted(set(fusion) - {"method", "k", "weights"})
        if bad:
            raise ConfigError(
                f"fusion has no setting {', '.join(map(repr, bad))}; valid: k, method, weights."
            )
        fuser = Fuse(**fusion)
    else:
        raise ConfigError(f"fusion must be 'score', 'rrf' or a mapping of fuse settings; got {fusion!r}.")
    rest = tuple(s for s in pipeline.stages if not isinstance(s, Fuse))
    return replace(pipeline, stages=(fuser, *rest))


def _block_keys(previous: AssembledContext | Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """The previous context's blocks, each as the input chunk ids it stands for."""
    if isinstance(previous, AssembledContext):
        return tuple(c.member_ids for c in previous.chunks)
    citations = previous.get("citations") if isinstance(previous, Mapping) else None
    if not isinstance(citations, Sequence) or not all(
        isinstance(c, Mapping) and isinstance(c.get("chunk_ids"), Sequence) for c in citations
    ):
        raise InputError(
            "previous must be the previous AssembledContext or its to_dict() (with 'citations' and "
            f"'text'); got {type(previous).__name__}."
        )
    return tuple(tuple(str(i) for i in c["chunk_ids"]) for c in citations)


def _stable_prefix(
    previous: AssembledContext | Mapping[str, Any], ctx: AssembledContext, tokenizer: CachedTokenizer
) -> int:
    """Tokens of the longest line-aligned prefix of ``ctx.text`` that equals the previous text's."""
    old = previous.text if isinstance(previous, AssembledContext) else str(previous.get("text", ""))
    new = ctx.text
    n = 0
    limit = min(len(old), len(new))
    while n < limit and old[n] == new[n]:
        n += 1
    if n == len(new) and (n == len(old) or old[n] == "\n"):
        return ctx.tokens
    cut = new.rfind("\n", 0, n) + 1
    return tokenizer.count(new[:cut]) if cut else 0


def assemble(
    query: str,
    chunks: Iterable[Chunk | Mapping[str, Any]],
    *,
    preset: str | Path | Mapping[str, Any] | Pipeline = "qa",
    model: str | None = None,
    budget: int | None = None,
    tokenizer: str | Tokenizer | None = None,
    format: str | Format | Mapping[str, Any] | None = None,
    order: str | None = None,
    history: Sequence[Mapping[str, str]] | None = None,
    tools: Sequence[Mapping[str, str]] | None = None,
    previous: AssembledContext | Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
    **options: Any,
) -> AssembledContext:
    """Turn ranked chunks into the context an LLM reads, within a token budget.

    Args:
        query: The user's query.
        chunks: Retrieved chunks: :class:`Chunk` objects or mappings with the
            field names you already have (``text``/``page_content``,
            ``score``/``rerank_score``, ...).
        preset: ``qa`` (default), ``citations``, ``chat``, ``summarize``, ...,
            a config mapping or file.
        model: A registered model name; sets tokenizer and zone budget.
        budget: The documents budget in tokens; overrides the model's zones.
        tokenizer: Tokenizer spec; defaults to the model's, else ``cl100k_base``.
        format: Override the preset's format.
        order: Override the preset's order.
        history: Earlier conversation turns, trimmed to ``history_tokens``
            (pass it in ``options``); see :meth:`Assembler.assemble`.
        tools: Tool outputs, fitted to ``tool_tokens`` (pass it in ``options``).
        previous: The previous turn's context, for ``stable_order=True``.
        timeout_s: Stop the assembly after this many seconds of work
            (:class:`~contextwright.core.errors.DeadlineExceeded`, a :class:`TimeoutError`).
        **options: Further :class:`Assembler` options (``output_tokens``,
            ``system``, ``store``, ...).

    Returns:
        The assembled context: ``text``, ``tokens``, ``citations``, ``report``.

    Example:
        >>> ctx = assemble("who discovered x-rays?", chunks, budget=500)
        >>> print(ctx.text); ctx.report.summary()
    """
    named = {"model": model, "budget": budget, "tokenizer": tokenizer, "format": format, "order": order}
    assembler = _for_call("assemble", preset, {**named, **options})
    return assembler.assemble(
        query, chunks, history=history, tools=tools, previous=previous, timeout_s=timeout_s
    )


async def aassemble(
    query: str,
    chunks: Iterable[Chunk | Mapping[str, Any]],
    *,
    preset: str | Path | Mapping[str, Any] | Pipeline = "qa",
    model: str | None = None,
    budget: int | None = None,
    tokenizer: str | Tokenizer | None = None,
    format: str | Format | Mapping[str, Any] | None = None,
    order: str | None = None,
    history: Sequence[Mapping[str, str]] | None = None,
    tools: Sequence[Mapping[str, str]] | None = None,
    previous: AssembledContext | Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
    **options: Any,
) -> AssembledContext:
    """:func:`assemble` for asyncio: the same arguments and result (see :meth:`Assembler.aassemble`).

    Building an :class:`Assembler` loads a tokenizer; for many calls build one
    and await its :meth:`~Assembler.aassemble` instead.

    Example:
        >>> ctx = await contextwright.aassemble("who discovered x-rays?", chunks, budget=500)
    """
    import asyncio

    named = {"model": model, "budget": budget, "tokenizer": tokenizer, "format": format, "order": order}
    assembler = await asyncio.to_thread(_for_call, "aassemble", preset, {**named, **options})
    return await assembler.aassemble(
        query, chunks, history=history, tools=tools, previous=previous, timeout_s=timeout_s
    )


#: The options assemble() names in its signature (the others come in ``**options``).
_NAMED = ("model", "budget", "tokenizer", "format", "order")
#: What ``assemble(**options)`` accepts: the spec's options, less ``config`` (``preset=``) and the named ones.
_ASSEMBLER_OPTIONS = tuple(o for o in AssemblerSpec.options() if o not in ("config", *_NAMED))
_ASSEMBLER_ARGS = AssemblerSpec.options()
_ASSEMBLE_ARGS = (
    "query",
    "chunks",
    "preset",
    *_NAMED,
    "history",
    "tools",
    "previous",
    "timeout_s",
    *_ASSEMBLER_OPTIONS,
)


def _for_call(where: str, preset: Any, given: Mapping[str, Any]) -> Assembler:
    """The assembler of one assemble()/aassemble() call: ``given`` split into the spec's options and
    resources, each checked once (an unknown keyword is named in ``where``'s words)."""
    options, resources = AssemblerSpec.split(given, exclude=("config",))  # assemble() says preset=
    spec = AssemblerSpec(preset, **options)
    return Assembler._checked(spec, resources, where=where, arguments=_ASSEMBLE_ARGS)


def _check_resources(
    where: str,
    given: Mapping[str, Any],
    arguments: Sequence[str],
    stages: Sequence[Any],
) -> None:
    """Reject a keyword that is neither an argument nor a declared resource, suggesting the closest name.

    Resources are what stages declare (``requires``/``optional``: ``store``,
    ``embedder``, ``llm``) plus :func:`~contextwright.stages.base.register_resource`
    names; anything else is a typo (``fromat=``, ``buget=``, ``tokenzier=``)
    that would otherwise be carried along unused.
    """
    from contextwright.stages.base import resource_names

    resources = resource_names(stages)
    unknown = [k for k in given if k not in resources]
    if not unknown:
        return
    valid = sorted(arguments)
    name = unknown[0]
    hint = did_you_mean(name, [*valid, *sorted(resources)])
    raise ConfigError(
        f"{where}() got an unknown argument {name!r}.{hint} "
        f"Valid arguments: {', '.join(valid)}; resources for stages: {', '.join(sorted(resources)) or '(none)'}. "
        "A resource your own stage reads must be declared in its requires/optional, "
        "or registered with contextwright.register_resource(name)."
    )
