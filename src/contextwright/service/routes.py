"""The endpoints: ``POST /v1/assemble``, ``POST /v1/citations/resolve``, ``/healthz``, ``/metrics``, ``/``.

Note: no ``from __future__ import annotations`` here: FastAPI reads the endpoint
annotations at run time, and the request models are the app's own (built from its
limits), so the annotations must be the real classes.
"""

from typing import TYPE_CHECKING, Any

from fastapi.responses import HTMLResponse, Response

from contextwright.core.errors import (
    AssemblyCancelled,
    BudgetError,
    ConfigError,
    ContextwrightError,
    HistoryBudgetError,
    InputError,
    MissingDependencyError,
    StoreError,
)
from contextwright.render.cite import chat_messages
from contextwright.service.assemblers import Assemblers
from contextwright.service.chat import check_prompts
from contextwright.service.lifecycle import Lifecycle
from contextwright.service.metrics import Metrics
from contextwright.service.problems import VALID_KEYS, Failure, Loc, dotted_loc, input_error_loc, responses
from contextwright.service.runner import Runner
from contextwright.service.schemas import (
    AssembleResponse,
    CitationIn,
    Health,
    RequestModels,
    ResolveResponse,
    dumps,
)
from contextwright.service.settings import ServiceConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

    from contextwright.render.context import Citation

__all__ = ["add_routes", "build_default_assembler"]


def options_of(req: Any, cfg: ServiceConfig) -> dict[str, Any]:
    """The assembler's identity for a request: everything but the per-call budget."""
    options = {
        "preset": req.preset or cfg.preset,
        "config": req.config,
        "model": req.model or cfg.model,
        "tokenizer": req.tokenizer or cfg.tokenizer,
        "format": req.format if req.format is not None else cfg.format,
        "order": req.order or cfg.order,
        "system": req.system,
        "history_tokens": req.history_tokens,
        "output_tokens": req.output_tokens,
        "buffer_tokens": req.buffer_tokens,
        "fusion": req.fusion.model_dump() if hasattr(req.fusion, "model_dump") else req.fusion,
        "tool_tokens": req.tool_tokens,
        "tool_policy": req.tool_policy,
        "stable_order": req.stable_order,
    }
    # A budget-only assembler still needs a budget at construction; requests pass their own.
    return {**options, "budget_hint": None if options["model"] else 0}


def build_default_assembler(cfg: ServiceConfig, models: RequestModels, assemblers: Assemblers) -> None:
    """Build the default assembler now, when the settings name a budget or model.

    The stages are imported and the tokenizer loaded before the first request, and a
    server whose defaults cannot work does not start.
    """
    if cfg.budget is None and not cfg.model:
        return
    try:
        assemblers.get(options_of(models.AssembleRequest.model_validate({"chunks": []}), cfg))
    except Failure as exc:
        raise ConfigError(f"the server's default configuration does not work: {exc.detail}") from None


def assemble(req: Any, cfg: ServiceConfig, assemblers: Assemblers, metrics: Metrics) -> bytes:
    """Run one ``/v1/assemble`` request (in a pool thread) and encode its response."""
    from contextwright.assembly.inspector import block_rows, input_rows

    options = options_of(req, cfg)
    budget = request_budget(req, cfg, options)
    check_strings(req)
    check_prompts(req)
    assembler = assemblers.get(options)
    lists = chunk_lists(req, cfg)
    check_work(sum(len(v) for v in lists.values()), assembler.pipeline, cfg, tools=len(req.tools or ()))
    # An explicit "text": null stays, so the chunk is dropped as empty ("text is null"), not "has no text".
    given = {
        name: [
            {**c.model_dump(exclude_none=True), **({"text": None} if _null_text(c) else {})} for c in items
        ]
        for name, items in lists.items()
    }
    tools, history = zone_inputs(req)
    previous = req.previous.model_dump() if req.previous is not None else None
    chunks: Any = given if isinstance(req.chunks, dict) else given[""]
    try:
        ctx = assembler.assemble(
            req.query, chunks, budget=budget, history=history, tools=tools, previous=previous
        )
    except AssemblyCancelled:
        raise  # its request has had its 504 already; the runner counts it
    except ContextwrightError as exc:
        raise library_failure(exc, req) from None
    metrics.observe_context(ctx)
    out = ctx.to_dict()
    out["blocks"] = block_rows(ctx, assembler.pipeline.format, assembler.tokenizer)
    if req.inspect:
        out["inputs"] = [row for items in given.values() for row in input_rows(items)]
    if req.messages:
        out.update(chat_messages(ctx, req.system, req.reask_bare))
    return dumps(out)


def request_budget(req: Any, cfg: ServiceConfig, options: dict[str, Any]) -> int | None:
    """The documents budget of a request (its own, else the server's); ``None`` when the model gives it.

    Raises:
        Failure: 422 ``missing-budget`` when neither a budget nor a model is known.
    """
    budget: int | None = req.budget if req.budget is not None else cfg.budget
    if budget is None and not options["model"]:
        raise Failure(
            422,
            "missing-budget",
            "pass budget (documents tokens) or model (to derive it from the model's context window); "
            "this server has no default (set CONTEXTWRIGHT_BUDGET or CONTEXTWRIGHT_MODEL).",
            ["body", "budget"],
        )
    return budget


def chunk_lists(req: Any, cfg: ServiceConfig) -> dict[str, Any]:
    """The request's ranked lists by name (``""`` for a single list), at most ``max_chunks`` in all."""
    lists: dict[str, Any] = req.chunks if isinstance(req.chunks, dict) else {"": req.chunks}
    total = sum(len(v) for v in lists.values())
    if total > cfg.max_chunks:
        raise Failure(
            422,
            "too-many-chunks",
            f"the named lists hold {total:,} chunks in all; at most {cfg.max_chunks:,} (max_chunks).",
            ["body", "chunks"],
        )
    return lists


def zone_inputs(req: Any) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """The tool outputs and history turns as plain dicts, each refused without its zone's tokens."""
    tools = [t.model_dump() for t in req.tools] if req.tools is not None else None
    if tools is not None and req.tool_tokens <= 0:
        raise Failure(
            422,
            "missing-tool-zone",
            f"tools has {len(tools)} outputs but tool_tokens is 0; pass tool_tokens "
            "(the tokens the tool outputs may use), e.g. 1000.",
            ["body", "tool_tokens"],
        )
    history = [t.model_dump() for t in req.history] if req.history is not None else None
    if history is not None and req.history_tokens <= 0:
        raise Failure(
            422,
            "missing-history-zone",
            f"history has {len(history)} turns but history_tokens is 0; pass history_tokens "
            "(the tokens the history may use), e.g. 1000.",
            ["body", "history_tokens"],
        )
    return tools, history


def library_failure(exc: ContextwrightError, req: Any) -> Failure:
    """The problem for an error the library raised while assembling, naming the field it is about."""
    if isinstance(exc, InputError):
        return Failure(422, "invalid-chunk", str(exc), input_error_loc(exc))
    if isinstance(exc, HistoryBudgetError):
        return Failure(400, "no-room-for-history", str(exc), ["body", "history_tokens"])
    if isinstance(exc, BudgetError):
        return Failure(400, "no-room-for-documents", str(exc), ["body", "budget"])
    if isinstance(exc, (ConfigError, MissingDependencyError)):
        where: Loc = ["body", "config"] if req.config is not None else ["body", "preset"]
        return Failure(422, "invalid-option", str(exc), where)
    if isinstance(exc, StoreError):
        return Failure(503, "store-unavailable", str(exc))
    return Failure(422, "assembly-failed", str(exc))


def check_strings(req: Any) -> None:
    """Refuse a lone surrogate anywhere in the request, naming where (422 ``invalid-text``).

    JSON may spell one (``"\\ud800"``); it is not valid Unicode, so it would fail
    later in a hash, a tokenizer or the response encoder.
    """
    from contextwright.model.fields import check_tree

    try:
        check_tree(req.model_dump(), "body")
    except InputError as exc:
        where, _, rest = str(exc).partition(" ")
        loc = dotted_loc(where)  # the path names request keys: keep them short in the answer
        shown = where if len(where) <= 240 else ".".join(str(p) for p in loc)
        raise Failure(422, "invalid-text", f"{shown} {rest}", loc) from None


def check_work(chunks: int, pipeline: Any, cfg: ServiceConfig, *, tools: int = 0) -> None:
    """Refuse a request whose work (chunks × Σ stage work + tool outputs × TOOL_WORK) exceeds
    ``max_request_work``."""
    from contextwright.core.limits import stage_work
    from contextwright.render.tools import TOOL_WORK

    per_chunk = sum(stage_work(s) for s in pipeline.stages)
    work = chunks * per_chunk + tools * TOOL_WORK
    if work > cfg.max_request_work:
        heavy = ", ".join(f"{s.name} ({stage_work(s):,})" for s in pipeline.stages if stage_work(s) > 1)
        outputs = f" + {tools:,} tool outputs × {TOOL_WORK}" if tools else ""
        raise Failure(
            422,
            "too-much-work",
            f"this request asks for {work:,} units of work ({chunks} chunks × {per_chunk:,} per chunk"
            f"{outputs}{'; ' + heavy if heavy else ''}), over this server's max_request_work of "
            f"{cfg.max_request_work:,}; send fewer chunks{' or tool outputs' if tools else ''} or lower "
            "the stages' work settings (num_perm, window).",
            ["body", "tools" if tools and chunks * per_chunk <= cfg.max_request_work else "config"],
        )


def _null_text(chunk: Any) -> bool:
    return "text" in chunk.model_fields_set and chunk.text is None and not chunk.model_extra


def resolve(req: Any) -> bytes:
    """Answer one ``/v1/citations/resolve`` request."""
    from contextwright.render.cite import resolve_citations

    check_strings(req)
    if (req.citations is None) == (req.context is None):
        raise Failure(
            422,
            "citations-or-context",
            "pass exactly one of 'citations' (a list) or 'context' (a previous /v1/assemble response).",
            ["body", "citations"],
        )
    given = req.citations if req.citations is not None else req.context.citations
    res = resolve_citations(req.answer, [citation_obj(c) for c in given])
    body = {
        "numbers": list(res.numbers),
        "cited": [c.to_dict() for c in res.cited],
        "missing": list(res.missing),
        "uncited": [c.to_dict() for c in res.uncited],
        "ok": res.ok,
        "bare": res.bare,
    }
    return dumps(body)


def citation_obj(c: CitationIn) -> "Citation":
    from contextwright.render.context import Citation

    return Citation(
        index=c.index,
        label=c.label or f"[{c.index}]",
        chunk_ids=tuple(c.chunk_ids),
        doc_id=c.doc_id,
        source=c.source,
        title=c.title,
        section=c.section,
        page=c.page,
        line=c.line,
        score=c.score,
        snippet=c.snippet,
        also_sources=tuple(c.also_sources),
        index_span=(c.index_span[0], c.index_span[1]) if c.index_span else None,
        spans=tuple((s[0], s[1]) for s in c.spans),
    )


def add_routes(
    app: "FastAPI",
    cfg: ServiceConfig,
    models: RequestModels,
    assemblers: Assemblers,
    metrics: Metrics,
    runner: Runner,
    lifecycle: Lifecycle,
) -> None:
    """Register the endpoints on ``app`` (in this order: it is the order of the OpenAPI paths)."""
    VALID_KEYS["/v1/assemble"] = sorted(models.AssembleRequest.model_fields)
    VALID_KEYS["/v1/citations/resolve"] = sorted(models.ResolveRequest.model_fields)
    add_work_routes(app, cfg, models, assemblers, metrics, runner)
    add_probe_routes(app, assemblers, metrics, lifecycle, runner)
    add_inspector_route(app, cfg)


def add_work_routes(
    app: "FastAPI",
    cfg: ServiceConfig,
    models: RequestModels,
    assemblers: Assemblers,
    metrics: Metrics,
    runner: Runner,
) -> None:
    """``POST /v1/assemble`` and ``POST /v1/citations/resolve``: the request models are the app's own."""
    AssembleRequest = models.AssembleRequest
    ResolveRequest = models.ResolveRequest

    @app.post(
        "/v1/assemble",
        response_model=AssembleResponse,
        responses=responses(400, 413, 422, 503, 504),
        summary="Assemble the context for a query from retrieved chunks",
    )
    async def assemble_endpoint(req: AssembleRequest) -> Any:  # type: ignore[valid-type]
        body = await runner.run(lambda: assemble(req, cfg, assemblers, metrics))
        return Response(body, media_type="application/json")

    @app.post(
        "/v1/citations/resolve",
        response_model=ResolveResponse,
        responses=responses(400, 413, 422),
        summary="Map the [n] markers of an answer back to the context's citations",
    )
    async def resolve_endpoint(req: ResolveRequest) -> Any:  # type: ignore[valid-type]
        # In the pool, not on the event loop: a 100 KB answer of ranges is tens of ms of CPU
        # (linear: parse_citation_numbers), and 16 at once on the loop stalled /healthz for seconds.
        body = await runner.run(lambda: resolve(req))
        return Response(body, media_type="application/json")


def add_probe_routes(
    app: "FastAPI", assemblers: Assemblers, metrics: Metrics, lifecycle: Lifecycle, runner: Runner
) -> None:
    """``GET /healthz`` (the version is the app's, set by create_app) and ``GET /metrics``."""

    @app.get(
        "/healthz",
        response_model=Health,
        responses={
            503: {"model": Health, "description": "Busy (every assembly thread computing) or draining."}
        },
        summary="Readiness: 200 ok; 503 busy while every assembly thread computes, or draining",
    )
    async def healthz() -> Any:
        load = runner.load()
        status = "draining" if lifecycle.draining else "busy" if load.saturated else "ok"
        body = {
            "status": status,
            "version": app.version,
            "assemblers": len(assemblers),
            "in_flight": lifecycle.in_flight + load.abandoned,
            "threads": load.threads,
            "busy_threads": load.busy,
            "queued": load.queued,
        }
        return Response(
            dumps(body), status_code=200 if status == "ok" else 503, media_type="application/json"
        )

    @app.get(
        "/metrics",
        response_class=Response,
        responses={
            200: {
                "content": {"text/plain": {"schema": {"type": "string"}}},
                "description": "Prometheus metrics.",
            }
        },
        summary="Prometheus metrics",
        name="metrics",  # the OpenAPI operation id: metrics_metrics_get
    )
    async def metrics_endpoint() -> Any:
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)


def add_inspector_route(app: "FastAPI", cfg: ServiceConfig) -> None:
    """``GET /``: the interactive assembly inspector, offering the server's presets and defaults."""
    from contextwright.assembly.inspector import render_page
    from contextwright.assembly.presets import list_presets

    page_options = {
        "presets": list(list_presets()),
        "preset": cfg.preset,
        "budget": cfg.budget,
        "model": cfg.model,
    }

    @app.get("/", response_class=HTMLResponse, summary="The assembly inspector")
    async def inspector_page() -> Any:
        return HTMLResponse(render_page(None, interactive=True, options=page_options))
