"""Request and response schemas of the HTTP service, and the JSON encoder.

The response models (and :class:`CitationIn`, :class:`FusionIn`) are the same for
every app, so they are module-level classes. The request models carry the app's
limits (``max_chunks``, ``max_text_chars``, ``max_query_chars``), so
:func:`request_models` builds them per app, one function per model family, and
``AssembleRequest`` from its field groups (input, tools, previous, pipeline,
history): two apps with different limits in one process each validate with their own.

Note: this module does not use ``from __future__ import annotations``: FastAPI
and pydantic resolve annotations at run time and need the real objects, and the
per-app classes are local to the functions that build them.
"""

import dataclasses
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from contextwright.model.fields import FIELD_ALIASES
from contextwright.render.format import format_names
from contextwright.service.settings import ServiceConfig
from contextwright.stages.order import order_classes

__all__ = [
    "AssembleResponse",
    "CitationIn",
    "CitationOut",
    "Health",
    "Problem",
    "RequestModels",
    "ResolveResponse",
    "dumps",
    "request_models",
]

# Positions are JSON integers of at most 53 bits: every JSON parser keeps
# them exact, and the response encoder can always write them back.
SafeInt = Annotated[int, Field(ge=-(2**53), le=2**53)]

# Built from the registries, so every name the library accepts is one the schema accepts.
FormatName: Any = Literal[format_names()]
OrderName: Any = Literal[tuple(order_classes())]
TEXT_ALIASES = FIELD_ALIASES["text"]


# -- responses (the same for every app) ----------------------------------------------


class ProvenanceOut(BaseModel):
    """One ranked list a fused chunk came from: its name, the 1-based rank and that list's score."""

    list: str
    rank: int
    score: float


class CitationOut(BaseModel):
    index: int
    label: str
    chunk_ids: list[str]
    doc_id: str | None
    source: str | None
    title: str | None
    section: str | None
    page: int | None
    line: int | None
    score: float
    snippet: str
    also_sources: list[str]
    index_span: list[int] | None
    spans: list[list[int]] = Field(
        default_factory=list,
        description="Character offsets (start, end) into the chunk's input text of what the block "
        "shows, when a stage cut it; empty when the block shows the text whole.",
    )
    duplicates: list[str] = Field(default_factory=list, description="Ids of copies folded into the block.")
    also_at: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Where each folded copy was: id, source, page, line; held: the [start, end] "
        "ranges of the block's text (coordinates of spans) that copy holds, whole: whether it holds "
        "all of it (only then is its source in also_sources).",
    )
    provenance: list[ProvenanceOut] | None = Field(
        None,
        description="The ranked lists the block was fused from (named lists in the request), best "
        "rank first; absent for a single list.",
    )


class DropOut(BaseModel):
    chunk_id: str
    reason: str
    related: str | None = None
    detail: str | None = None


class ChangeOut(BaseModel):
    chunk_id: str
    action: str
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: str | None = None


class StageReportOut(BaseModel):
    stage: str
    chunks_in: int
    chunks_out: int
    tokens_in: int | None
    tokens_out: int | None
    ms: float
    dropped: list[DropOut]
    changed: list[ChangeOut]
    added: list[str]
    notes: list[str]


class MessageOut(BaseModel):
    role: str
    content: str


class HistoryOut(BaseModel):
    tokens: int
    budget: int
    kept: int
    dropped: list[int] = Field(description="Positions in the request's history of the dropped turns.")
    summary: str | None
    notes: list[str]
    messages: list[MessageOut] = Field(description="The kept turns, oldest first, to send to the model.")


class ToolsOut(BaseModel):
    tokens: int
    budget: int
    kept: list[str] = Field(description="Names of the tool outputs in the section, in input order.")
    truncated: list[str] = Field(description="Kept outputs cut at a line boundary.")
    dropped: list[str] = Field(description="Outputs left out (they did not fit the tool zone).")
    text: str = Field(description="The rendered tool-output section (empty when nothing fit).")


class ReportOut(BaseModel):
    summary: str
    input_chunks: int
    input_tokens: int
    output_chunks: int
    tokens: int
    budget: int
    zones: dict[str, int]
    stages: list[StageReportOut]
    history: HistoryOut | None = None
    tools: ToolsOut | None = Field(None, description="The tool outputs fitted to their zone ('tools').")
    stable_prefix_tokens: int | None = Field(
        None,
        description="Tokens at the start of the text equal to the previous context's ('previous'); "
        "absent without one.",
    )


class BlockOut(BaseModel):
    index: int
    label: str
    id: str
    chunk_ids: list[str]
    doc_id: str | None
    title: str | None
    source: str | None
    score: float
    tokens: int = Field(description="Tokens of the block (header, text, footer) in the context.")
    start: int | None = Field(description="Offset of the block in text (None if not locatable).")
    end: int | None
    ops: list[str]
    origin: str


class InputOut(BaseModel):
    id: str
    text: str
    score: float
    doc_id: str | None
    title: str | None


class AssembleResponse(BaseModel):
    query: str
    text: str
    tokens: int
    budget: int
    tokenizer: str
    citations: list[CitationOut]
    report: ReportOut
    blocks: list[BlockOut]
    inputs: list[InputOut] | None = None
    messages: list[MessageOut] | None = Field(
        None, description="The chat to send the model (with messages: true; absent otherwise)."
    )
    reask_messages: list[MessageOut] | None = Field(
        None,
        description="The same chat under reask_bare, to send once more when the reply is a bare citation "
        "(with messages: true, for a context that shows citation labels; absent otherwise).",
    )


class CitationIn(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    index: int = Field(ge=1, le=1_000_000)
    label: str | None = Field(None, max_length=100)
    chunk_ids: list[str] = Field(default_factory=list)
    doc_id: str | None = None
    source: str | None = None
    title: str | None = None
    section: str | None = None
    page: SafeInt | None = None
    line: SafeInt | None = None
    score: float = Field(0.0, allow_inf_nan=False)
    snippet: str = ""
    also_sources: list[str] = Field(default_factory=list)
    index_span: list[SafeInt] | None = Field(None, min_length=2, max_length=2)
    spans: list[Annotated[list[SafeInt], Field(min_length=2, max_length=2)]] = Field(
        default_factory=list, max_length=10_000
    )


class ResolveResponse(BaseModel):
    numbers: list[int] = Field(description="Every cited number, in first-mention order.")
    cited: list[CitationOut] = Field(description="The citations the answer refers to.")
    missing: list[int] = Field(description="Numbers that match no citation (hallucinated).")
    uncited: list[CitationOut] = Field(description="Citations the answer never mentions.")
    ok: bool
    bare: bool = Field(
        description="The answer is a citation and nothing else ('[1]'): the model pointed at a source "
        "instead of answering; re-ask it, or use the prompt 'light'."
    )


class Problem(BaseModel):
    """An RFC 7807 problem detail."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    code: str
    loc: list[str | int] | None = None
    errors: list[dict[str, Any]] | None = None


class Health(BaseModel):
    status: str = Field(
        description="ok; busy while every assembly thread is computing (a new request would queue); "
        "draining after SIGTERM. The status code is 503 when busy or draining: a readiness signal."
    )
    version: str
    assemblers: int = Field(description="Assemblers built and cached in this worker process.")
    in_flight: int = Field(
        0,
        description="Requests being answered by this worker process, plus assemblies still running "
        "after their request was answered (504); they stop at their next check.",
    )
    threads: int = Field(0, description="Assembly threads of this worker process (threads).")
    busy_threads: int = Field(0, description="Assembly threads computing now.")
    queued: int = Field(0, description="Assemblies waiting for a thread.")


# -- requests (limits from the app's settings) ---------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class RequestModels:
    """The request models of one app, built with that app's limits."""

    TurnIn: type[BaseModel]
    ChunkIn: type[BaseModel]
    AssembleRequest: type[BaseModel]
    ContextIn: type[BaseModel]
    ResolveRequest: type[BaseModel]


ASSEMBLE_EXAMPLE: dict[str, Any] = {
    "query": "Who discovered X-rays?",
    "budget": 300,
    "chunks": [
        {"id": "a", "text": "Wilhelm Röntgen discovered X-rays in 1895.", "score": 0.9},
        {"id": "b", "text": "X-rays are electromagnetic radiation.", "score": 0.4},
    ],
}


class FusionIn(BaseModel):
    """Fusion settings for named lists."""

    model_config = ConfigDict(extra="forbid", strict=True)
    method: Literal["score", "rrf"] = "score"
    k: int = Field(60, ge=1, le=10_000)
    weights: dict[Annotated[str, Field(max_length=100)], Annotated[float, Field(ge=0, le=1000)]] = Field(
        default_factory=dict
    )


def request_models(cfg: ServiceConfig) -> RequestModels:
    """Build the request models whose limits come from ``cfg``."""
    TurnIn, ToolIn = conversation_models(cfg)
    ChunkIn = chunk_model(cfg)
    AssembleRequest = create_model(
        "AssembleRequest",
        __config__=ConfigDict(
            extra="forbid", strict=True, json_schema_extra={"examples": [ASSEMBLE_EXAMPLE]}
        ),
        __doc__="Chunks to assemble for a query, and how.",
        __module__=__name__,
        **input_fields(cfg, ChunkIn),
        **tool_fields(cfg, ToolIn),
        **previous_fields(previous_model(cfg)),
        **pipeline_fields(cfg),
        **history_fields(cfg, TurnIn),
        **chat_fields(cfg),
        inspect=(bool, Field(False, description="Also return the normalized inputs (for the inspector).")),
    )
    ContextIn, ResolveRequest = resolve_models(cfg)
    return RequestModels(TurnIn, ChunkIn, AssembleRequest, ContextIn, ResolveRequest)


def conversation_models(cfg: ServiceConfig) -> tuple[type[BaseModel], type[BaseModel]]:
    """The models of one conversation turn and of one tool output."""
    max_text = cfg.max_text_chars

    class TurnIn(BaseModel):
        """One conversation turn."""

        model_config = ConfigDict(extra="forbid", strict=True)
        role: Literal["system", "user", "assistant", "tool"] = Field(
            description="system, user, assistant or tool."
        )
        content: str = Field(max_length=max_text)

    class ToolIn(BaseModel):
        """One tool output."""

        model_config = ConfigDict(extra="forbid", strict=True)
        name: str = Field(min_length=1, max_length=200)
        content: str = Field(max_length=max_text)

    return TurnIn, ToolIn


def chunk_model(cfg: ServiceConfig) -> type[BaseModel]:
    """The model of one retrieved chunk; its text aliases are held to the same length as ``text``."""
    max_text = cfg.max_text_chars

    class ChunkIn(BaseModel):
        """A retrieved chunk. Only ``text`` (or an alias: content, page_content) is required;
        unknown fields are kept as metadata."""

        model_config = ConfigDict(extra="allow", strict=True)
        text: str | None = Field(None, max_length=max_text)
        id: Annotated[str, Field(max_length=1_000)] | int | None = None
        score: float | None = Field(None, allow_inf_nan=False)
        doc_id: str | int | None = None
        index: SafeInt | None = None
        source: str | None = None
        title: str | None = None
        section: str | None = None
        page: SafeInt | None = None
        line: SafeInt | None = None
        metadata: dict[str, Any] | None = None
        embedding: list[float] | None = Field(None, max_length=8_192)

        @model_validator(mode="after")
        def _alias_lengths(self) -> "ChunkIn":
            extra = self.model_extra
            if not extra:
                return self
            for key in TEXT_ALIASES[1:]:
                value = extra.get(key)
                if isinstance(value, str) and len(value) > max_text:
                    raise ValueError(f"{key} must have at most {max_text} characters")
            return self

    return ChunkIn


def previous_model(cfg: ServiceConfig) -> type[BaseModel]:
    """The model of a previous ``/v1/assemble`` response, as a request sends it back."""

    class PreviousIn(BaseModel):
        """A previous /v1/assemble response; its citations and text are read."""

        model_config = ConfigDict(extra="ignore", strict=True)
        text: str = Field("", max_length=cfg.max_text_chars * 100)
        citations: list[CitationIn] = Field(default_factory=list, max_length=cfg.max_chunks)

    return PreviousIn


def resolve_models(cfg: ServiceConfig) -> tuple[type[BaseModel], type[BaseModel]]:
    """The ``/v1/citations/resolve`` request and the context it may carry its citations in."""

    class ContextIn(BaseModel):
        """A previous /v1/assemble response; only its citations are read."""

        model_config = ConfigDict(extra="ignore", strict=True)
        citations: list[CitationIn] = Field(max_length=cfg.max_chunks)

    class ResolveRequest(BaseModel):
        """An answer and the citations (or the whole assemble response) it was written from."""

        model_config = ConfigDict(extra="forbid", strict=True)
        answer: str = Field(max_length=cfg.max_text_chars)
        citations: list[CitationIn] | None = Field(None, max_length=cfg.max_chunks)
        context: ContextIn | None = None

    return ContextIn, ResolveRequest


# -- the fields of AssembleRequest, by concern, in the order the schema lists them --------
# Each maps a name to ``(annotation, Field(...))``, as pydantic.create_model takes them.


def input_fields(cfg: ServiceConfig, chunk: Any) -> dict[str, Any]:
    """The query, the chunks (one ranked list, or named lists) and how named lists are fused."""
    chunk_list = Annotated[list[chunk], Field(max_length=cfg.max_chunks)]
    named_lists = Annotated[
        dict[Annotated[str, Field(min_length=1, max_length=100)], chunk_list],
        Field(min_length=1, max_length=32),
    ]
    return {
        "query": (str, Field("", max_length=cfg.max_query_chars, description="The user's query.")),
        "chunks": (
            chunk_list | named_lists,
            Field(
                description="Retrieved chunks, best first or with scores; or named ranked lists "
                '({"bm25": [...], "dense": [...]}), fused first (see fusion). At most max_chunks in all.'
            ),
        ),
        "fusion": (
            Literal["score", "rrf"] | FusionIn | None,
            Field(
                None,
                description='How named lists are fused: "score" (default: weighted sum of min-max '
                'normalized scores), "rrf", or {"method", "k", "weights": {"dense": 2}}.',
            ),
        ),
    }


def tool_fields(cfg: ServiceConfig, tool: Any) -> dict[str, Any]:
    """Tool outputs, their zone and what gives way when they do not fit."""
    return {
        "tools": (
            list[tool] | None,
            Field(
                None,
                max_length=cfg.max_chunks,
                description="Tool outputs, fitted to tool_tokens and rendered in their own escaped "
                "section (response: report.tools, with the section's text).",
            ),
        ),
        "tool_tokens": (int, Field(0, ge=0, le=10_000_000, description="The tool-output zone in tokens.")),
        "tool_policy": (
            Literal["drop_largest", "truncate"],
            Field("drop_largest", description="What gives way when the tools exceed tool_tokens."),
        ),
    }


def previous_fields(previous: Any) -> dict[str, Any]:
    """The previous context of the conversation, and whether its blocks keep their places."""
    return {
        "stable_order": (
            bool,
            Field(False, description="Keep the blocks of previous first, in their order (prompt caching)."),
        ),
        "previous": (
            previous | None,
            Field(
                None,
                description="The previous /v1/assemble response of this conversation (its citations and "
                "text are read): with stable_order its surviving blocks come first; "
                "report.stable_prefix_tokens says how much of the text is unchanged.",
            ),
        ),
    }


def pipeline_fields(cfg: ServiceConfig) -> dict[str, Any]:
    """Which pipeline: preset or config, model, budget, tokenizer, format and order overrides."""
    from contextwright.assembly.presets import list_presets

    # Enums for the schema (and for clients); the library still checks the values.
    preset_name: Any = Literal[tuple(sorted(list_presets()))]
    return {
        "preset": (preset_name | None, Field(None, description="A server preset (default: the server's).")),
        "config": (
            dict[str, Any] | None,
            Field(
                None,
                description='A pipeline config ({"stages": [...], "format": ...}), or overrides of the '
                'preset ({"format": "numbered"}). Same shape as contextwright config files.',
            ),
        ),
        "model": (
            str | None,
            Field(None, max_length=200, description="Model name: tokenizer and zone budget."),
        ),
        "budget": (
            int | None,
            Field(None, ge=0, le=10_000_000, description="Documents budget in tokens."),
        ),
        "tokenizer": (
            str | None,
            Field(
                None, max_length=100, pattern=r"^[A-Za-z0-9_.\-]+(:[0-9.]+)?$", description="Tokenizer name."
            ),
        ),
        "format": (
            FormatName | dict[str, Any] | None,
            Field(
                None,
                description='Format override: a name, or {"type": "template", ...} if the server allows it.',
            ),
        ),
        "order": (
            OrderName | None,
            Field(None, description="Order override (replaces the preset's order stage)."),
        ),
    }


def history_fields(cfg: ServiceConfig, turn: Any) -> dict[str, Any]:
    """The system prompt, the conversation history and the zones around the documents."""
    return {
        "system": (
            str | None,
            Field(
                "default",
                max_length=cfg.max_text_chars,
                description="System prompt name or text (counted in zones).",
            ),
        ),
        "history_tokens": (int, Field(0, ge=0, le=10_000_000)),
        "history": (
            list[turn] | None,
            Field(
                None,
                max_length=cfg.max_chunks,
                description="Earlier conversation turns, oldest first, trimmed to history_tokens (oldest "
                "first; never a system message or the latest user turn); report.history has the kept "
                "messages and the dropped positions.",
            ),
        ),
        "output_tokens": (int | None, Field(None, ge=0, le=10_000_000)),
        "buffer_tokens": (int, Field(128, ge=0, le=10_000_000)),
    }


def chat_fields(cfg: ServiceConfig) -> dict[str, Any]:
    """Whether to return the chat to send the model, and what to send again after a bare citation."""
    return {
        "messages": (
            bool,
            Field(
                False,
                description="Also return messages: the chat to send the model (OpenAI format) under system: "
                "the prompt, the kept history, the tool section, the context and the query; and "
                "reask_messages (see reask_bare).",
            ),
        ),
        "reask_bare": (
            str | None,
            Field(
                "auto",
                max_length=cfg.max_text_chars,
                description="With messages, for a context that shows citation labels: reask_messages is the "
                "same chat under this prompt (a name or a text), to send once more when the reply is a bare "
                "citation ('[1]' and no answer: /v1/citations/resolve says bare), as contextwright.ask "
                "does. auto: the profile's reask (a profile fitted with fit --reask-bare; false there: "
                "none), else light. null: none.",
            ),
        ),
    }


def dumps(obj: Any) -> bytes:
    """Encode a response body (orjson when installed, else the standard library).

    Never fails on text: a string that is not valid Unicode (a lone surrogate in
    an error's field path) is written with ``\\u`` escapes instead of giving a 500.
    """
    if _orjson is not None:
        try:
            return _orjson.dumps(obj)  # type: ignore[no-any-return]
        except TypeError:  # e.g. an integer beyond 64 bits in user metadata, or a lone surrogate
            pass
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()


def _load_orjson() -> Any:
    try:
        import orjson
    except ImportError:
        return None
    return orjson


_orjson = _load_orjson()
