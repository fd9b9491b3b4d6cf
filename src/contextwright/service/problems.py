"""Errors as RFC 7807 problem details (``application/problem+json``).

Bad input never gives a 500: :class:`Failure` carries a status, a code, a detail
and the field path (``loc``) it is about, and :func:`add_handlers` turns it, and
FastAPI's own validation and HTTP errors, into problem bodies.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from starlette.exceptions import HTTPException as StarletteHTTPException

from contextwright.core.errors import AssemblyCancelled, did_you_mean
from contextwright.service.schemas import Problem, dumps

if TYPE_CHECKING:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError

__all__ = [
    "PHRASES",
    "PROBLEM_JSON",
    "VALID_KEYS",
    "BodyTimeout",
    "BodyTooLarge",
    "Failure",
    "Loc",
    "add_handlers",
    "body_too_large",
    "capped",
    "config_error_loc",
    "config_loc",
    "input_error_loc",
    "input_loc",
    "problem_body",
    "responses",
    "send_problem",
]

logger = logging.getLogger("contextwright.service")

PROBLEM_JSON = "application/problem+json"

PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}

Loc = list[str | int]

#: The top-level keys of each endpoint's request body (filled by the routes), named
#: in the problem for an unknown key.
VALID_KEYS: dict[str, list[str]] = {}


def problem_body(
    status: int, code: str, detail: str, *, loc: Loc | None = None, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The JSON body of a problem detail."""
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": PHRASES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
    }
    if loc is not None:
        body["loc"] = loc
    if errors:
        body["errors"] = errors
    return body


class Failure(Exception):
    """An error already translated to a problem detail."""

    def __init__(self, status: int, code: str, detail: str, loc: Loc | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.loc = loc


class BodyTooLarge(StarletteHTTPException):
    """Raised while reading a body that streams past ``max_body_bytes``."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body exceeds {limit} bytes")
        self.limit = limit


class BodyTimeout(StarletteHTTPException):
    """Raised while reading a body that has not arrived within ``body_timeout_s``."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(408, f"request body not received within {timeout_s:g} s")
        self.timeout_s = timeout_s


def body_too_large(limit: int) -> str:
    return f"request body exceeds the limit of {limit} bytes (max_body_bytes); send fewer or shorter chunks."


# The message regexes below are the fallback for errors that carry no ``loc``
# (:attr:`contextwright.core.errors.ContextwrightError.loc`). Those that remain: every InputError
# (``chunks[3].score: ...``, raised in model/inputs, which set no loc yet), check_tree's paths
# (``body.chunks[0].metadata.k``, see dotted_loc), and a ConfigError naming ``stages[n]`` that
# pipeline_from_config did not raise (Pipeline given a non-stage object).
# Anchored, one bounded or single unbounded run each: linear in the message. Indices have at most
# 9 digits, so int() never meets a number too long to convert.
_CHUNK_PATH = re.compile(r"^chunks\[(\d{1,9})\](?:\.((?:metadata\.)?\w+))?")
_HISTORY_PATH = re.compile(r"^history\[(\d{1,9})\](?:\.(\w+))?")
_STAGE_PATH = re.compile(r"^stages\[(\d{1,9})\]")


def dotted_loc(path: str) -> Loc:
    """``body.chunks[0].metadata.12`` -> body/chunks/0/metadata/"12": ``[n]`` is an index, a dotted
    part a key (kept a string, capped); linear in the path."""
    loc: Loc = []
    for segment in path.split("."):
        indices: list[str | int] = []
        end = len(segment)  # peel "[n]" groups from the right, each scanned once
        while end > 0 and segment[end - 1] == "]":
            start = segment.rfind("[", max(0, end - 11), end - 1)
            number = segment[start + 1 : end - 1]
            if start < 0 or not number.isdigit():
                break
            indices.append(int(number))
            end = start
        if end:
            loc.append(capped(segment[:end]))
        loc.extend(reversed(indices))
    return loc


def input_loc(message: str) -> Loc:
    """The field path an InputError message names (``chunks[3].score`` -> body/chunks/3/score)."""
    m = _CHUNK_PATH.match(message)
    if not m:
        h = _HISTORY_PATH.match(message)
        if h:
            return ["body", "history", int(h.group(1)), *([h.group(2)] if h.group(2) else [])]
        if message.startswith("query "):
            return ["body", "query"]
        return ["body", "chunks"]
    loc: Loc = ["body", "chunks", int(m.group(1))]
    if m.group(2):
        loc.extend(m.group(2).split("."))
    return loc


def input_error_loc(exc: BaseException) -> Loc:
    """The request field an InputError from ``assemble`` is about.

    Its ``loc`` is relative to ``assemble``'s arguments (``("chunks", 3, "score")``), which the
    request body names alike; without one, the message is read (:func:`input_loc`).
    """
    loc: tuple[str | int, ...] = getattr(exc, "loc", ())
    if loc:
        return ["body", *(capped(p) for p in loc)]
    return input_loc(str(exc))


def config_loc(message: str, base: Loc) -> Loc:
    """Narrow ``body.config`` to the stage a ConfigError message names (``stages[2]: ...``)."""
    m = _STAGE_PATH.match(message)
    if m and base == ["body", "config"]:
        return [*base, "stages", int(m.group(1))]
    return base


def config_error_loc(exc: BaseException, base: Loc) -> Loc:
    """Narrow ``body.config`` to the stage a library error is about, from its ``loc``.

    ``("stages", 2, "threshold")`` gives body/config/stages/2: the answer names the stage, as
    it always has, not the setting below it (the message names that). Without a ``loc``, the
    message is read (:func:`config_loc`).
    """
    loc: tuple[str | int, ...] = getattr(exc, "loc", ())
    if not loc:
        return config_loc(str(exc), base)
    if base == ["body", "config"] and len(loc) >= 2 and loc[0] == "stages" and isinstance(loc[1], int):
        return [*base, "stages", loc[1]]
    return base


_SCALAR_TAGS = frozenset({"str", "int", "float", "bool", "none"})
_SHOWN_KEY = 60  # characters of a long key kept in a location


def _union_tag(part: Any) -> bool:
    """Whether a pydantic error-location part names a union member (``literal[...]``), not a field.

    String operations only (no pattern): a location part can be a request's key of any length,
    and this runs on the event loop.
    """
    if not isinstance(part, str) or "\n" in part:
        return False
    if part in _SCALAR_TAGS:
        return True
    for prefix in ("constrained-", "function-"):
        rest = part[len(prefix) :] if part.startswith(prefix) else ""
        if rest and all(ch.isalnum() or ch == "_" for ch in rest):
            return True
    opening = part.find("[")
    return opening >= 0 and part.find("]", opening + 1) >= 0


def capped(part: str | int) -> str | int:
    """A location part short enough to echo: a long key keeps its start and says its length."""
    if isinstance(part, str) and len(part) > 2 * _SHOWN_KEY:
        return f"{part[:_SHOWN_KEY]}… ({len(part)} characters)"
    return part


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for problem details with these status codes."""
    content = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    return {c: {"model": Problem, "description": PHRASES[c], "content": content} for c in codes}


def problem_response(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Any:
    from fastapi.responses import Response

    return Response(dumps(body), status_code=body["status"], media_type=PROBLEM_JSON, headers=headers)


async def send_problem(
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answer with a problem detail from ASGI middleware (before FastAPI is reached)."""
    payload = dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": body["status"],
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(payload)).encode()),
                *(headers or ()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _unknown_field(request: Request, loc: Loc) -> str | None:
    """``unknown field 'fromat'. Did you mean 'format'? Valid fields: ...`` for a rejected extra field."""
    import typing

    from pydantic import BaseModel

    route = request.scope.get("route")
    params = getattr(getattr(route, "dependant", None), "body_params", None)
    if not params or len(loc) < 2 or loc[0] != "body":
        return None
    model: Any = params[0].field_info.annotation
    for part in loc[1:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return None
        annotation, model = fields[part].annotation, None
        stack = [annotation]
        while stack:  # the first model inside Optional[...], list[...], unions
            t = stack.pop(0)
            if isinstance(t, type) and issubclass(t, BaseModel):
                model = t
                break
            stack.extend(typing.get_args(t))
        if model is None:
            return None
    fields = getattr(model, "model_fields", None)
    if not fields:
        return None
    valid = sorted(f.alias or name for name, f in fields.items())
    name = str(loc[-1])
    return f"unknown field {name!r}.{did_you_mean(name, valid)} Valid fields: {', '.join(valid)}."


def add_handlers(app: FastAPI) -> None:
    """Translate every error FastAPI sees into a problem detail."""
    from fastapi.exceptions import RequestValidationError

    app.exception_handler(RequestValidationError)(on_validation)
    app.exception_handler(StarletteHTTPException)(on_http)
    app.exception_handler(Failure)(on_failure)
    app.exception_handler(AssemblyCancelled)(on_cancelled)
    app.exception_handler(Exception)(on_crash)


async def on_validation(request: Request, exc: RequestValidationError) -> Any:
    """422 for a request the schema refuses: every error, the most telling first."""
    errors = _significant(_validation_errors(request, exc))
    # A misspelled field first: its "did you mean" explains the "field required" that comes with it.
    errors.sort(key=lambda x: x["type"] != "extra_forbidden")
    first_loc: Loc = errors[0]["loc"] if errors else ["body"]
    first_msg = errors[0]["msg"] if errors else "invalid request"
    path = ".".join(str(p) for p in first_loc)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return problem_response(
        problem_body(422, "validation-error", f"{path}: {first_msg}{more}", loc=first_loc, errors=errors)
    )


def _validation_errors(request: Request, exc: RequestValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors with request-shaped locations (no union tags) and named unknown fields."""
    errors: list[dict[str, Any]] = []
    for e in exc.errors():
        raw = list(e.get("loc", ()))
        keep = raw[-1:] if e.get("type") == "extra_forbidden" else []  # the unknown key itself
        parts = [p for p in raw[: len(raw) - len(keep)] if not _union_tag(p)] + keep
        loc: Loc = [capped(p if isinstance(p, int) else str(p)) for p in parts]
        msg = str(e.get("msg", ""))
        if e.get("type") == "extra_forbidden":
            named = _unknown_field(request, loc)  # lists the valid fields itself
            msg = named or msg
            valid = VALID_KEYS.get(request.url.path)
            if named is None and len(loc) == 2 and valid:
                msg += f"; valid keys: {', '.join(valid)}"  # a typo or a misplaced option: say what fits
        elif _too_long(e, loc):
            msg += f" (the server's {_LIMIT_SETTINGS[str(loc[-1])]})"
        elif e.get("type") == "literal_error" and isinstance(e.get("input"), str):
            valid = re.findall(r"'([^']*)'", str((e.get("ctx") or {}).get("expected", "")))
            msg += f"; got {e['input']!r}.{did_you_mean(e['input'], valid)}"
        errors.append({"loc": loc, "msg": msg, "type": str(e.get("type", ""))})
    return errors


def _too_long(error: Mapping[str, Any], loc: Loc) -> bool:
    """Whether ``error`` is a length limit that a service setting sets (not a previous response's)."""
    too_long = error.get("type") in ("string_too_long", "too_long") and "previous" not in loc
    return too_long and bool(loc) and str(loc[-1]) in _LIMIT_SETTINGS


#: The service setting behind the length limit of a request field (by the field's name).
_LIMIT_SETTINGS = {
    "answer": "max_text_chars",
    "text": "max_text_chars",
    "system": "max_text_chars",
    "content": "max_text_chars",
    "query": "max_query_chars",
    "chunks": "max_chunks",
    "citations": "max_chunks",
    "tools": "max_chunks",
    "history": "max_chunks",
}


def _significant(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``errors`` without a union's noise.

    A union (chunks: a list or named lists) reports the alternative that did not apply as
    a type error at the field itself; when a deeper error explains the input, it is noise.
    """
    return [
        e
        for e in errors
        if not (
            e["type"] in ("list_type", "dict_type", "model_type")
            and any(
                (len(o["loc"]) > len(e["loc"]) and o["loc"][: len(e["loc"])] == e["loc"])
                # a name or a mapping ("format": "lean" or {...}): the name's error explains it
                or (o["loc"] == e["loc"] and o["type"] == "literal_error")
                for o in errors
            )
        )
    ]


async def on_http(request: Request, exc: StarletteHTTPException) -> Any:
    """Starlette's HTTP errors (404, 405, an unparseable body) and the body limits, as problems."""
    if isinstance(exc, BodyTooLarge):
        return problem_response(problem_body(413, "body-too-large", body_too_large(exc.limit), loc=["body"]))
    if isinstance(exc, BodyTimeout):
        detail = (
            f"the request body did not arrive within {exc.timeout_s:g} s (body_timeout_s); send it at once."
        )
        return problem_response(
            problem_body(408, "body-timeout", detail, loc=["body"]), headers={"connection": "close"}
        )
    code = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    if exc.status_code == 400 and request.method == "POST":
        code, detail = (
            "unparseable-body",
            f"{detail}: send a UTF-8 JSON object (Content-Type: application/json).",
        )
    status = exc.status_code if exc.status_code in PHRASES else 400
    return problem_response(problem_body(status, code, detail), headers=exc.headers)  # keeps Allow on 405


async def on_failure(request: Request, exc: Failure) -> Any:
    """A :class:`Failure` as its problem."""
    return problem_response(problem_body(exc.status, exc.code, exc.detail, loc=exc.loc))


async def on_cancelled(request: Request, exc: AssemblyCancelled) -> Any:
    """504 for library work stopped by its deadline (``DeadlineExceeded``) or cancelled, wherever it ran.

    Assemblies reach it as the runner's own 504; this covers library work a route runs itself.
    """
    detail = f"{exc} (timeout_s)" if "timeout_s" not in str(exc) else str(exc)
    return problem_response(problem_body(504, "timeout", detail))


async def on_crash(request: Request, exc: Exception) -> Any:  # a bug, not bad input
    """500 for anything else, logged with its traceback; the client learns nothing of it.

    The traceback logged is the last :data:`LOGGED_FRAMES` frames: a RecursionError's thousand
    frames made one 10 KB request write 177 KB of log.
    """
    logger.error(
        "unhandled error",
        exc_info=(type(exc), exc, _last_frames(exc.__traceback__)),
        extra={"path": request.url.path},
    )
    return problem_response(problem_body(500, "internal-error", "internal error; see the server log."))


#: How many frames of an unhandled error's traceback the log keeps (the innermost ones).
LOGGED_FRAMES = 40


def _last_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from its ``LOGGED_FRAMES``-th last frame on (the frames nearest the error)."""
    frames: list[TracebackType] = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    return frames[-LOGGED_FRAMES] if len(frames) > LOGGED_FRAMES else (frames[0] if frames else None)
