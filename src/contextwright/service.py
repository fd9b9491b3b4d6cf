"""The HTTP service: context assembly behind FastAPI, thin over :class:`Assembler`.

Endpoints:

* ``POST /v1/assemble``: query + chunks + options -> text, tokens, citations, report;
* ``POST /v1/citations/resolve``: answer + citations -> cited / missing / uncited;
* ``GET /healthz``, ``GET /metrics`` (Prometheus), ``GET /`` (the inspector page),
  ``GET /openapi.json``.

Bad input never gives a 500: every error is an RFC 7807 problem detail
(``application/problem+json``) whose ``loc`` names the field path, e.g.
``["body", "chunks", 3, "score"]``. Bodies over ``max_body_bytes`` get 413
(checked on ``Content-Length`` and on the bytes actually streamed), an
assembly that outlives ``timeout_s`` gets 504.

Assemblers are cached per configuration (preset or config, model, tokenizer,
format, order, zones), so the tokenizer's count cache and the chunk store are
shared by every request that uses them.

Configuration comes from :class:`ServiceConfig`: a TOML file and
``CONTEXTWRIGHT_*`` environment variables (the variables win).

Example:
    >>> from contextwright.service import ServiceConfig, create_app
    >>> app = create_app(ServiceConfig(budget=1000))
    >>> # uvicorn.run(app, host="127.0.0.1", port=8000)

Note: this module does not use ``from __future__ import annotations``. The
request models are built per app, from that app's limits, so they are local
classes; FastAPI and pydantic resolve annotations at run time and need the
real objects, not their names.
"""

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from contextwright.errors import (
    BudgetError,
    ConfigError,
    ContextwrightError,
    HistoryBudgetError,
    InputError,
    MissingDependencyError,
    StoreError,
    TokenizerError,
    missing_extra,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

    from contextwright.assembler import Assembler

__all__ = ["ServiceConfig", "create_app"]

logger = logging.getLogger(__name__)

ENV_PREFIX = "CONTEXTWRIGHT_"
PROBLEM_JSON = "application/problem+json"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    """Settings of the HTTP service: where it listens, its limits and its defaults.

    Every field can be set in a TOML file (top level or a ``[service]`` table)
    and overridden by an environment variable ``CONTEXTWRIGHT_<FIELD>``
    (``CONTEXTWRIGHT_MAX_CHUNKS=500``). :meth:`load` reads both.

    Args:
        host: Interface to bind (``contextwright serve``).
        port: Port to bind.
        workers: uvicorn worker processes.
        max_body_bytes: Largest request body accepted (413 above).
        max_chunks: Most chunks in one request (422 above).
        max_text_chars: Longest chunk text, answer or system prompt (422 above).
        max_query_chars: Longest query (422 above).
        timeout_s: Per-request assembly timeout (504 after it).
        threads: Threads that run assemblies (one process's share of the CPU).
        preset: Default preset when a request names none.
        model: Default model (zones and tokenizer) when a request names none.
        budget: Default documents budget when a request gives none.
        tokenizer: Default tokenizer spec (else the model's, else ``cl100k_base``).
        format: Default format override (else the preset's).
        order: Default order override (else the preset's).
        store_url: A chunk store for stages that require ``store``
            (:func:`contextwright.stores.open_store`: ``sqlite:///chunks.db``,
            ``postgresql://...``).
        max_assemblers: How many distinct configurations to keep assemblers for.
        allow_templates: Accept ``{"type": "template"}`` formats from requests
            (a template can burn CPU, so it is off by default).
        allow_network_stages: Accept request stages with URL/endpoint settings
            (e.g. an LLM compressor); off by default so that a request cannot
            make the server call arbitrary hosts.
        log_level: uvicorn's log level.

    Example:
        >>> cfg = ServiceConfig.load("service.toml")      # then CONTEXTWRIGHT_* variables
        >>> cfg = ServiceConfig(budget=1_000, max_chunks=200, store_url="sqlite:///chunks.db")
    """

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    max_body_bytes: int = 2_000_000
    max_chunks: int = 1_000
    max_text_chars: int = 100_000
    max_query_chars: int = 10_000
    timeout_s: float = 10.0
    threads: int = 4
    preset: str = "qa"
    model: str | None = None
    budget: int | None = None
    tokenizer: str | None = None
    format: str | None = None
    order: str | None = None
    store_url: str | None = None
    max_assemblers: int = 64
    allow_templates: bool = False
    allow_network_stages: bool = False
    log_level: str = "info"

    def __post_init__(self) -> None:
        positive = ("port", "workers", "max_body_bytes", "max_chunks", "max_text_chars", "max_query_chars")
        for name in (*positive, "threads", "max_assemblers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"service setting {name!r} must be a positive integer; got {value!r}.")
        if self.port > 65535:
            raise ConfigError(f"service setting 'port' must be at most 65535; got {self.port!r}.")
        if (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, (int, float))
            or self.timeout_s <= 0
        ):
            raise ConfigError(
                f"service setting 'timeout_s' must be a positive number of seconds; got {self.timeout_s!r}."
            )
        if self.budget is not None and (
            isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0
        ):
            raise ConfigError(
                f"service setting 'budget' must be a non-negative integer; got {self.budget!r}."
            )

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> "ServiceConfig":
        """Read a TOML file, then ``CONTEXTWRIGHT_*`` variables, then ``overrides``.

        Args:
            path: A TOML file; defaults to ``$CONTEXTWRIGHT_CONFIG`` when set.
            env: The environment (default ``os.environ``).
            **overrides: Values that win over both (``None`` values are ignored).

        Raises:
            ConfigError: naming the file, key or variable and the expected type.
        """
        env = os.environ if env is None else env
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        path = path if path is not None else env.get(ENV_PREFIX + "CONFIG") or None
        if path is not None:
            values.update(_read_toml(Path(path), fields))
        for name in fields:
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None:
                values[name] = _coerce(name, raw, ENV_PREFIX + name.upper())
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ConfigError(f"unknown service setting(s) {unknown}; valid: {', '.join(fields)}.")
        return cls(**values)

    def to_env(self) -> dict[str, str]:
        """The ``CONTEXTWRIGHT_*`` variables that reproduce this config (for worker processes)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[ENV_PREFIX + f.name.upper()] = (
                    str(value).lower() if isinstance(value, bool) else str(value)
                )
        return out


_INT_FIELDS = {
    "port",
    "workers",
    "max_body_bytes",
    "max_chunks",
    "max_text_chars",
    "max_query_chars",
    "threads",
    "budget",
    "max_assemblers",
}
_BOOL_FIELDS = {"allow_templates", "allow_network_stages"}


def _coerce(name: str, raw: str, where: str) -> Any:
    """Turn an environment string into the field's type."""
    text = raw.strip()
    if name in _INT_FIELDS:
        if name == "budget" and text == "":
            return None
        try:
            return int(text.replace("_", ""))
        except ValueError:
            raise ConfigError(f"{where} must be an integer; got {raw!r}.") from None
    if name == "timeout_s":
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"{where} must be a number of seconds; got {raw!r}.") from None
    if name in _BOOL_FIELDS:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off", ""):
            return False
        raise ConfigError(f"{where} must be true or false; got {raw!r}.")
    return text or None


def _read_toml(path: Path, fields: Mapping[str, Any]) -> dict[str, Any]:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read service config {str(path)!r}: {exc.strerror}.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"service config {str(path)!r} is not valid TOML: {exc}.") from None
    table = data.get("service", data)
    if not isinstance(table, dict):
        raise ConfigError(f"service config {str(path)!r}: [service] must be a table.")
    unknown = sorted(k for k in table if k not in fields and not isinstance(table[k], dict))
    if unknown:
        raise ConfigError(
            f"service config {str(path)!r} has unknown key(s) {unknown}; valid: {', '.join(fields)}."
        )
    return {k: v for k, v in table.items() if k in fields}


# -- problem details ---------------------------------------------------------

_PHRASES = {
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    500: "Internal Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}

Loc = list[str | int]


def _problem_body(
    status: int, code: str, detail: str, *, loc: Loc | None = None, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": _PHRASES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
    }
    if loc is not None:
        body["loc"] = loc
    if errors:
        body["errors"] = errors
    return body


_CHUNK_PATH = re.compile(r"^chunks\[(\d+)\](?:\.((?:metadata\.)?\w+))?")
_STAGE_PATH = re.compile(r"^stages\[(\d+)\]")


def _input_loc(message: str) -> Loc:
    """The field path an InputError message names (``chunks[3].score`` -> body/chunks/3/score)."""
    m = _CHUNK_PATH.match(message)
    if not m:
        return ["body", "chunks"]
    loc: Loc = ["body", "chunks", int(m.group(1))]
    if m.group(2):
        loc.extend(m.group(2).split("."))
    return loc


_UNION_TAG = re.compile(r"^(str|int|float|bool|none|constrained-\w+|function-\w+|.*\[.*\].*)$")


def _union_tag(part: Any) -> bool:
    """Whether a pydantic error-location part names a union member (``literal[...]``), not a field."""
    return isinstance(part, str) and bool(_UNION_TAG.match(part))


def _config_loc(message: str, base: Loc) -> Loc:
    m = _STAGE_PATH.match(message)
    if m and base == ["body", "config"]:
        return [*base, "stages", int(m.group(1))]
    return base


class _Failure(Exception):
    """An error already translated to a problem detail."""

    def __init__(self, status: int, code: str, detail: str, loc: Loc | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.loc = loc


# -- the assembler cache -----------------------------------------------------

# Settings a request may not choose for its own stages: where the server connects to, and which
# of the server's secrets (api_key_env names an environment variable) it sends along.
_NETWORK_SETTING = re.compile(r"url|endpoint|host|api_key|_env$", re.IGNORECASE)


class _Assemblers:
    """A small LRU of :class:`Assembler` objects keyed by their configuration."""

    def __init__(self, config: ServiceConfig, resources: Mapping[str, Any]) -> None:
        self.config = config
        self.resources = dict(resources)
        self._cache: OrderedDict[str, Assembler] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def get(self, options: Mapping[str, Any]) -> "Assembler":
        key = json.dumps(options, sort_keys=True, default=str)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        built = self._build(options)
        with self._lock:
            self._cache[key] = built
            while len(self._cache) > self.config.max_assemblers:
                self._cache.popitem(last=False)
        return built

    def _build(self, o: Mapping[str, Any]) -> "Assembler":
        """Build an assembler, attributing each library error to the request field that caused it."""
        from contextwright.assembler import Assembler
        from contextwright.budget import get_model
        from contextwright.config import get_preset, pipeline_from_config
        from contextwright.render.format import get_format
        from contextwright.stages.order import order_stage
        from contextwright.tokens import get_tokenizer

        def check(loc: Loc, fn: Callable[[], Any]) -> Any:
            try:
                return fn()
            except BudgetError as exc:
                raise _Failure(400, "no-room-for-documents", str(exc), loc) from None
            except (ConfigError, TokenizerError, MissingDependencyError) as exc:
                raise _Failure(422, "invalid-option", str(exc), _config_loc(str(exc), loc)) from None

        spec = o["tokenizer"]
        if spec and (spec.endswith(".json") or os.path.exists(spec)):
            # get_tokenizer also loads tokenizer.json files and directories; a request must not
            # make the server open its own files.
            raise _Failure(
                422,
                "invalid-option",
                f"tokenizer {spec!r} names a file; pass a tokenizer name such as 'cl100k_base', "
                "'o200k_base' or 'chars:4'.",
                ["body", "tokenizer"],
            )
        model = check(["body", "model"], lambda: get_model(o["model"])) if o["model"] else None
        tokenizer = o["tokenizer"] or (model.tokenizer if model is not None else "cl100k_base")
        check(
            ["body", "tokenizer"] if o["tokenizer"] else ["body", "model"], lambda: get_tokenizer(tokenizer)
        )
        if o["format"] is not None:
            check(["body", "format"], lambda: get_format(o["format"]))
        if o["order"] is not None:
            check(["body", "order"], lambda: order_stage(o["order"]))
        config: Any = o["preset"]
        loc: Loc = ["body", "preset"]
        check(loc, lambda: get_preset(o["preset"]))
        if o["config"] is not None:
            config = (
                {"preset": o["preset"], **o["config"]} if "stages" not in o["config"] else dict(o["config"])
            )
            loc = ["body", "config"]
            if "preset" in o["config"]:
                check(["body", "config", "preset"], lambda: get_preset(str(o["config"]["preset"])))
        pipeline = check(loc, lambda: pipeline_from_config(config, order=o["order"], format=o["format"]))
        self._vet(pipeline, o)
        zones_loc: Loc = ["body", "output_tokens"] if o["output_tokens"] is not None else ["body", "model"]
        return check(  # type: ignore[no-any-return]
            zones_loc if model is not None else loc,
            lambda: Assembler(
                pipeline,
                model=model,
                budget=o["budget_hint"],
                tokenizer=tokenizer,
                system=o["system"],
                history_tokens=o["history_tokens"],
                output_tokens=o["output_tokens"],
                buffer_tokens=o["buffer_tokens"],
                **self.resources,
            ),
        )

    def _vet(self, pipeline: Any, o: Mapping[str, Any]) -> None:
        """Refuse what a request must not make the server do (templates, network calls)."""
        from contextwright.render.format import TemplateFormat

        if (
            isinstance(pipeline.format, TemplateFormat)
            and not self.config.allow_templates
            and (o["format"] is not None or (o["config"] or {}).get("format") is not None)
        ):
            where: Loc = ["body", "format"] if o["format"] is not None else ["body", "config", "format"]
            raise _Failure(
                422,
                "template-not-allowed",
                "template formats are disabled on this server (a template can run long); use a named "
                "format (xml, numbered, sources, markdown, grouped, minimal) or start the server with "
                "allow_templates = true.",
                where,
            )
        if o["config"] is None or "stages" not in o["config"] or self.config.allow_network_stages:
            return  # the stages are the server's preset's, which the operator chose
        for i, stage in enumerate(pipeline.stages):
            for f in dataclasses.fields(stage):
                if _NETWORK_SETTING.search(f.name) and getattr(stage, f.name) not in (None, "", ()):
                    raise _Failure(
                        422,
                        "network-stage-not-allowed",
                        f"stage {stage.name!r} has the network setting {f.name!r}; request-supplied stages "
                        "may not call other hosts on this server. Use a server preset, or start the "
                        "server with allow_network_stages = true.",
                        ["body", "config", "stages", i, f.name],
                    )


# -- the app -----------------------------------------------------------------


def create_app(config: ServiceConfig | None = None) -> "FastAPI":
    """Build the FastAPI app.

    Args:
        config: The service settings; ``None`` reads them with
            :meth:`ServiceConfig.load` (TOML file from ``CONTEXTWRIGHT_CONFIG``,
            then ``CONTEXTWRIGHT_*`` variables). This is what worker processes
            started from the import string ``contextwright.service:create_app``
            (``factory=True``) do.

    Raises:
        MissingDependencyError: without the ``service`` extra.
        ConfigError: for invalid settings or an unreachable store URL scheme.
    """
    try:
        from fastapi import FastAPI, Request
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import HTMLResponse, Response
        from pydantic import BaseModel, ConfigDict, Field, model_validator
        from starlette.exceptions import HTTPException as StarletteHTTPException
    except ImportError as exc:
        raise missing_extra(exc.name or "fastapi", "service") from None
    try:
        import prometheus_client as prom
    except ImportError:
        raise missing_extra("prometheus_client", "service") from None

    import contextwright
    from contextwright.config import list_presets
    from contextwright.inspector import block_rows, input_rows, render_page
    from contextwright.render.cite import resolve_citations
    from contextwright.types import Citation

    cfg = config if config is not None else ServiceConfig.load()
    resources: dict[str, Any] = {}
    if cfg.store_url:
        try:
            from contextwright.stores import open_store
        except ImportError:
            raise ConfigError(
                "store_url is set but contextwright.stores is not available in this installation."
            ) from None
        resources["store"] = open_store(cfg.store_url)
    assemblers = _Assemblers(cfg, resources)
    # The pool is made on first use and shut down when the app stops; an app can be started
    # again (test clients, schemathesis run the lifespan per session), so it is made again then.
    pool: list[concurrent.futures.ThreadPoolExecutor] = []

    def executor() -> concurrent.futures.ThreadPoolExecutor:
        if not pool:
            pool.append(
                concurrent.futures.ThreadPoolExecutor(
                    max_workers=cfg.threads, thread_name_prefix="cw-assemble"
                )
            )
        return pool[0]

    dumps = _json_dumps()

    # -- request / response models (limits come from cfg) --------------------

    max_text = cfg.max_text_chars
    # Enums for the schema (and for clients); the library still checks the values.
    PresetName: Any = Literal[tuple(sorted(list_presets()))]
    FormatName: Any = Literal["minimal", "numbered", "xml", "grouped", "sources", "markdown"]
    OrderName: Any = Literal[
        "relevance",
        "score",
        "chronological",
        "document",
        "document_first",
        "lost_in_the_middle",
        "litm",
        "interleave",
        "bookend",
        "auto",
    ]
    text_aliases = ("text", "content", "page_content", "chunk", "passage")

    # Positions are JSON integers of at most 53 bits: every JSON parser keeps
    # them exact, and the response encoder can always write them back.
    SafeInt = Annotated[int, Field(ge=-(2**53), le=2**53)]

    class TurnIn(BaseModel):
        """One conversation turn."""

        model_config = ConfigDict(extra="forbid", strict=True)
        role: str = Field(max_length=50, description="system, user, assistant, tool, ...")
        content: str = Field(max_length=max_text)

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
            for key in text_aliases[1:]:
                value = extra.get(key)
                if isinstance(value, str) and len(value) > max_text:
                    raise ValueError(f"{key} must have at most {max_text} characters")
            return self

    class AssembleRequest(BaseModel):
        """Chunks to assemble for a query, and how."""

        model_config = ConfigDict(
            extra="forbid",
            strict=True,
            json_schema_extra={
                "examples": [
                    {
                        "query": "Who discovered X-rays?",
                        "budget": 300,
                        "chunks": [
                            {"id": "a", "text": "Wilhelm Röntgen discovered X-rays in 1895.", "score": 0.9},
                            {"id": "b", "text": "X-rays are electromagnetic radiation.", "score": 0.4},
                        ],
                    }
                ]
            },
        )
        query: str = Field("", max_length=cfg.max_query_chars, description="The user's query.")
        chunks: list[ChunkIn] = Field(
            max_length=cfg.max_chunks, description="Retrieved chunks, best first or with scores."
        )
        preset: PresetName | None = Field(None, description="A server preset (default: the server's).")
        config: dict[str, Any] | None = Field(
            None,
            description='A pipeline config ({"stages": [...], "format": ...}), or overrides of the '
            'preset ({"format": "numbered"}). Same shape as contextwright config files.',
        )
        model: str | None = Field(None, max_length=200, description="Model name: tokenizer and zone budget.")
        budget: int | None = Field(None, ge=0, le=10_000_000, description="Documents budget in tokens.")
        tokenizer: str | None = Field(
            None, max_length=100, pattern=r"^[A-Za-z0-9_.\-]+(:[0-9.]+)?$", description="Tokenizer name."
        )
        format: FormatName | dict[str, Any] | None = Field(
            None, description='Format override: a name, or {"type": "template", ...} if the server allows it.'
        )
        order: OrderName | None = Field(
            None, description="Order override (replaces the preset's order stage)."
        )
        system: str | None = Field(
            "default", max_length=max_text, description="System prompt name or text (counted in zones)."
        )
        history_tokens: int = Field(0, ge=0, le=10_000_000)
        history: list[TurnIn] | None = Field(
            None,
            max_length=cfg.max_chunks,
            description="Earlier conversation turns, oldest first, trimmed to history_tokens (oldest "
            "first; never a system message or the latest user turn); report.history has the kept "
            "messages and the dropped positions.",
        )
        output_tokens: int | None = Field(None, ge=0, le=10_000_000)
        buffer_tokens: int = Field(128, ge=0, le=10_000_000)
        inspect: bool = Field(False, description="Also return the normalized inputs (for the inspector).")

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

    class ContextIn(BaseModel):
        """A previous /v1/assemble response; only its citations are read."""

        model_config = ConfigDict(extra="ignore", strict=True)
        citations: list[CitationIn] = Field(max_length=cfg.max_chunks)

    class ResolveRequest(BaseModel):
        """An answer and the citations (or the whole assemble response) it was written from."""

        model_config = ConfigDict(extra="forbid", strict=True)
        answer: str = Field(max_length=max_text)
        citations: list[CitationIn] | None = Field(None, max_length=cfg.max_chunks)
        context: ContextIn | None = None

    class ResolveResponse(BaseModel):
        numbers: list[int] = Field(description="Every cited number, in first-mention order.")
        cited: list[CitationOut] = Field(description="The citations the answer refers to.")
        missing: list[int] = Field(description="Numbers that match no citation (hallucinated).")
        uncited: list[CitationOut] = Field(description="Citations the answer never mentions.")
        ok: bool

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
        status: str
        version: str
        assemblers: int

    problem_content = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}

    def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
        return {c: {"model": Problem, "description": _PHRASES[c], "content": problem_content} for c in codes}

    # -- app, metrics, middleware ------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        yield
        if pool:
            pool.pop().shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="contextwright",
        version=contextwright.__version__,
        description="Context assembly for RAG: exact token budgets, dedup, ordering, citations.",
        responses=problems(400, 413, 422, 500),
        lifespan=lifespan,
    )
    app.state.config = cfg
    app.state.assemblers = assemblers

    registry = prom.CollectorRegistry()
    m_requests = prom.Counter(
        "contextwright_http_requests",
        "HTTP requests by route and status.",
        ["route", "method", "status"],
        registry=registry,
    )
    m_latency = prom.Histogram(
        "contextwright_http_request_duration_seconds",
        "HTTP request latency by route.",
        ["route"],
        buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        registry=registry,
    )
    m_tokens_in = prom.Counter(
        "contextwright_tokens_in", "Tokens of the input chunks assembled.", registry=registry
    )
    m_tokens_out = prom.Counter(
        "contextwright_tokens_out", "Tokens of the assembled contexts returned.", registry=registry
    )
    m_drops = prom.Counter(
        "contextwright_chunks_dropped", "Input chunks left out, by reason.", ["reason"], registry=registry
    )
    m_chunks = prom.Counter("contextwright_chunks_in", "Input chunks received.", registry=registry)
    app.state.registry = registry

    class _BodyTooLarge(StarletteHTTPException):
        def __init__(self) -> None:
            super().__init__(413, f"request body exceeds {cfg.max_body_bytes} bytes")

    async def send_problem(send: Send, body: dict[str, Any]) -> None:
        payload = dumps(body)
        await send(
            {
                "type": "http.response.start",
                "status": body["status"],
                "headers": [
                    (b"content-type", PROBLEM_JSON.encode()),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    limit = cfg.max_body_bytes
    too_large = (
        f"request body exceeds the limit of {limit} bytes (max_body_bytes); send fewer or shorter chunks."
    )

    def body_limit(inner: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            for name, value in scope["headers"]:
                if name == b"content-length":
                    try:
                        declared = int(value)
                    except ValueError:
                        await send_problem(
                            send,
                            _problem_body(
                                400,
                                "bad-content-length",
                                "Content-Length is not an integer.",
                                loc=["header", "content-length"],
                            ),
                        )
                        return
                    if declared > limit:
                        await send_problem(
                            send, _problem_body(413, "body-too-large", too_large, loc=["body"])
                        )
                        return
            received = 0

            async def limited() -> Message:
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > limit:
                        raise _BodyTooLarge()
                return message

            await inner(scope, limited, send)

        return middleware

    def metrics_layer(inner: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            start = time.perf_counter()
            status = [500]

            async def watch(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status[0] = message["status"]
                await send(message)

            try:
                await inner(scope, receive, watch)
            finally:
                route = scope.get("route")
                # The route template, so that labels stay few; a 413 answered before routing
                # still counts under its path when that path is a route.
                path = getattr(route, "path", None) or (
                    scope["path"] if scope["path"] in route_paths else "unmatched"
                )
                m_requests.labels(path, scope.get("method", ""), str(status[0])).inc()
                m_latency.labels(path).observe(time.perf_counter() - start)

        return middleware

    route_paths = {"/v1/assemble", "/v1/citations/resolve", "/healthz", "/metrics", "/"}

    # Starlette applies the last added middleware outermost: metrics see the 413s too.
    app.add_middleware(_Wrap, factory=body_limit)
    app.add_middleware(_Wrap, factory=metrics_layer)

    def problem_response(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Any:
        return Response(dumps(body), status_code=body["status"], media_type=PROBLEM_JSON, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> Any:
        errors: list[dict[str, Any]] = []
        for e in exc.errors():
            loc: Loc = [p if isinstance(p, int) else str(p) for p in e.get("loc", ()) if not _union_tag(p)]
            errors.append({"loc": loc, "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))})
        first_loc: Loc = errors[0]["loc"] if errors else ["body"]
        first_msg = errors[0]["msg"] if errors else "invalid request"
        path = ".".join(str(p) for p in first_loc)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return problem_response(
            _problem_body(422, "validation-error", f"{path}: {first_msg}{more}", loc=first_loc, errors=errors)
        )

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Any:
        if isinstance(exc, _BodyTooLarge):
            return problem_response(_problem_body(413, "body-too-large", too_large, loc=["body"]))
        code = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        if exc.status_code == 400 and request.method == "POST":
            code, detail = (
                "unparseable-body",
                f"{detail}: send a UTF-8 JSON object (Content-Type: application/json).",
            )
        status = exc.status_code if exc.status_code in _PHRASES else 400
        return problem_response(
            _problem_body(status, code, detail), headers=exc.headers
        )  # keeps Allow on 405

    @app.exception_handler(_Failure)
    async def on_failure(request: Request, exc: _Failure) -> Any:
        return problem_response(_problem_body(exc.status, exc.code, exc.detail, loc=exc.loc))

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception) -> Any:  # a bug, not bad input
        logger.exception("unhandled error", extra={"path": request.url.path})
        return problem_response(_problem_body(500, "internal-error", "internal error; see the server log."))

    async def in_thread(fn: Callable[[], Any]) -> Any:
        future = executor().submit(fn)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=cfg.timeout_s)
        except TimeoutError:
            future.cancel()  # only helps if it has not started; a running assembly finishes in the background
            raise _Failure(
                504,
                "timeout",
                f"assembly took longer than {cfg.timeout_s:g} s (timeout_s); send fewer chunks or a "
                "simpler config.",
            ) from None

    # -- endpoints ----------------------------------------------------------

    def options_of(req: AssembleRequest) -> dict[str, Any]:
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
        }
        # A budget-only assembler still needs a budget at construction; requests pass their own.
        return {**options, "budget_hint": None if options["model"] else 0}

    def do_assemble(req: AssembleRequest) -> bytes:
        options = options_of(req)
        budget = req.budget if req.budget is not None else cfg.budget
        if budget is None and not options["model"]:
            raise _Failure(
                422,
                "missing-budget",
                "pass budget (documents tokens) or model (to derive it from the model's context window); "
                "this server has no default (set CONTEXTWRIGHT_BUDGET or CONTEXTWRIGHT_MODEL).",
                ["body", "budget"],
            )
        assembler = assemblers.get(options)
        chunks = [c.model_dump(exclude_none=True) for c in req.chunks]
        history = [t.model_dump() for t in req.history] if req.history is not None else None
        if history is not None and req.history_tokens <= 0:
            raise _Failure(
                422,
                "missing-history-zone",
                f"history has {len(history)} turns but history_tokens is 0; pass history_tokens "
                "(the tokens the history may use), e.g. 1000.",
                ["body", "history_tokens"],
            )
        try:
            ctx = assembler.assemble(req.query, chunks, budget=budget, history=history)
        except InputError as exc:
            raise _Failure(422, "invalid-chunk", str(exc), _input_loc(str(exc))) from None
        except HistoryBudgetError as exc:
            raise _Failure(400, "no-room-for-history", str(exc), ["body", "history_tokens"]) from None
        except BudgetError as exc:
            raise _Failure(400, "no-room-for-documents", str(exc), ["body", "budget"]) from None
        except (ConfigError, MissingDependencyError) as exc:
            where: Loc = ["body", "config"] if req.config is not None else ["body", "preset"]
            raise _Failure(422, "invalid-option", str(exc), where) from None
        except StoreError as exc:
            raise _Failure(503, "store-unavailable", str(exc)) from None
        except ContextwrightError as exc:
            raise _Failure(422, "assembly-failed", str(exc)) from None
        report = ctx.report
        m_chunks.inc(report.input_chunks)
        m_tokens_in.inc(report.input_tokens)
        m_tokens_out.inc(ctx.tokens)
        for reason, n in report.reasons().items():
            m_drops.labels(reason).inc(n)
        out = ctx.to_dict()
        out["blocks"] = block_rows(ctx, assembler.pipeline.format, assembler.tokenizer)
        if req.inspect:
            out["inputs"] = input_rows(chunks)
        return dumps(out)

    if cfg.budget is not None or cfg.model:
        # Build the default assembler now: the stages are imported and the tokenizer loaded
        # before the first request, and a server whose defaults cannot work does not start.
        try:
            assemblers.get(options_of(AssembleRequest.model_validate({"chunks": []})))
        except _Failure as exc:
            raise ConfigError(f"the server's default configuration does not work: {exc.detail}") from None

    @app.post(
        "/v1/assemble",
        response_model=AssembleResponse,
        responses=problems(400, 413, 422, 503, 504),
        summary="Assemble the context for a query from retrieved chunks",
    )
    async def assemble_endpoint(req: AssembleRequest) -> Any:
        return Response(await in_thread(lambda: do_assemble(req)), media_type="application/json")

    def citation_obj(c: CitationIn) -> Citation:
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

    @app.post(
        "/v1/citations/resolve",
        response_model=ResolveResponse,
        responses=problems(400, 413, 422),
        summary="Map the [n] markers of an answer back to the context's citations",
    )
    async def resolve_endpoint(req: ResolveRequest) -> Any:
        if (req.citations is None) == (req.context is None):
            raise _Failure(
                422,
                "citations-or-context",
                "pass exactly one of 'citations' (a list) or 'context' (a previous /v1/assemble response).",
                ["body", "citations"],
            )
        given = req.citations if req.citations is not None else req.context.citations  # type: ignore[union-attr]
        res = resolve_citations(req.answer, [citation_obj(c) for c in given])
        body = {
            "numbers": list(res.numbers),
            "cited": [c.to_dict() for c in res.cited],
            "missing": list(res.missing),
            "uncited": [c.to_dict() for c in res.uncited],
            "ok": res.ok,
        }
        return Response(dumps(body), media_type="application/json")

    @app.get("/healthz", response_model=Health, summary="Liveness")
    async def healthz() -> Any:
        return {"status": "ok", "version": contextwright.__version__, "assemblers": len(assemblers)}

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
    )
    async def metrics() -> Any:
        return Response(prom.generate_latest(registry), media_type=prom.CONTENT_TYPE_LATEST)

    page_options = {
        "presets": list(list_presets()),
        "preset": cfg.preset,
        "budget": cfg.budget,
        "model": cfg.model,
    }

    @app.get("/", response_class=HTMLResponse, summary="The assembly inspector")
    async def inspector_page() -> Any:
        return HTMLResponse(render_page(None, interactive=True, options=page_options))

    return app


class _Wrap:
    """Adapts a function ``ASGIApp -> ASGIApp`` to Starlette's ``add_middleware``."""

    def __init__(self, app: ASGIApp, factory: Callable[[ASGIApp], ASGIApp]) -> None:
        self._inner = factory(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._inner(scope, receive, send)


def _json_dumps() -> Callable[[Any], bytes]:
    try:
        import orjson
    except ImportError:
        return lambda obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()

    def dumps(obj: Any) -> bytes:
        try:
            return orjson.dumps(obj)  # type: ignore[no-any-return]
        except TypeError:  # e.g. an integer beyond 64 bits in user metadata
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()

    return dumps
