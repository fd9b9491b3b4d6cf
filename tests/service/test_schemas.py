"""The service's response models describe what it sends: each model's fields equal the keys of the
matching ``to_dict()`` (so the published OpenAPI schema lists every field of a response)."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from pydantic import BaseModel

from contextwright import Assembler
from contextwright.service import ServiceConfig, create_app
from contextwright.service.schemas import (
    AssembleResponse,
    ChangeOut,
    CitationOut,
    DropOut,
    HistoryOut,
    ProvenanceOut,
    ReportOut,
    ResolveResponse,
    StageReportOut,
    ToolsOut,
)

QUERY = "who discovered x-rays?"
# Two named ranked lists (fused, so citations carry provenance), a duplicate (a drop), a long chunk
# that the budget cuts (a change).
LISTS = {
    "bm25": [
        {"id": "a", "text": "Wilhelm Röntgen discovered X-rays in 1895 in Würzburg.", "score": 9.0},
        {"id": "b", "text": "X-rays are electromagnetic radiation of short wavelength.", "score": 7.0},
        {"id": "c", "text": "Wilhelm Röntgen discovered X-rays in 1895 in Würzburg.", "score": 6.0},
    ],
    "dense": [
        {"id": "b", "text": "X-rays are electromagnetic radiation of short wavelength.", "score": 0.9},
        {
            "id": "d",
            "text": " ".join(f"Sentence {i} about radiology and the history of imaging." for i in range(40)),
            "score": 0.8,
        },
    ],
}
EXTRAS: dict[str, Any] = {
    "history": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi, ask away"}],
    "history_tokens": 200,
    "tools": [{"name": "search", "content": "result: Röntgen, 1895"}],
    "tool_tokens": 100,
}


def _fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The BaseModel classes an annotation names (through list[...], X | None, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def _check(model: type[BaseModel], data: Any, where: str, seen: dict[type[BaseModel], set[str]]) -> None:
    """Every key of ``data`` is a field of ``model``, recursively; record the keys seen per model."""
    if isinstance(data, list):
        for i, item in enumerate(data):
            _check(model, item, f"{where}[{i}]", seen)
        return
    assert isinstance(data, dict), where
    assert set(data) <= _fields(model), (
        f"{where}: sent but not in {model.__name__}: {set(data) - _fields(model)}"
    )
    seen.setdefault(model, set()).update(data)
    for key, value in data.items():
        nested = _models_in(model.model_fields[key].annotation)
        if nested and value is not None:
            _check(nested[0], value, f"{where}.{key}", seen)


@pytest.fixture(scope="module")
def full() -> tuple[Any, dict[str, Any]]:
    """One assembly with every optional part (the library's context, and the service's body)."""
    first = Assembler("qa", budget=120, history_tokens=200, tool_tokens=100, stable_order=True)
    before = first.assemble(QUERY, LISTS, history=EXTRAS["history"], tools=EXTRAS["tools"])
    ctx = first.assemble(QUERY, LISTS, history=EXTRAS["history"], tools=EXTRAS["tools"], previous=before)
    with TestClient(create_app(ServiceConfig(budget=500, max_chunks=50, max_text_chars=5_000))) as client:
        r = client.post(
            "/v1/assemble",
            json={
                "query": QUERY,
                "chunks": LISTS,
                "budget": 120,
                "stable_order": True,
                "previous": before.to_dict(),
                "inspect": True,
                "messages": True,
                **EXTRAS,
            },
        )
    assert r.status_code == 200, r.text
    return ctx, r.json()


def test_the_example_exercises_every_optional_part(full: tuple[Any, dict[str, Any]]) -> None:
    ctx, _ = full
    assert any(c.provenance for c in ctx.citations)
    assert ctx.report.history is not None and ctx.report.tools is not None
    assert ctx.report.stable_prefix_tokens is not None
    assert ctx.report.dropped and ctx.report.changed


def test_each_response_model_has_exactly_the_keys_of_its_to_dict(full: tuple[Any, dict[str, Any]]) -> None:
    ctx, _ = full
    report = ctx.report
    citation = next(c for c in ctx.citations if c.provenance)
    pairs: list[tuple[type[BaseModel], dict[str, Any]]] = [
        (CitationOut, citation.to_dict()),
        (ProvenanceOut, citation.to_dict()["provenance"][0]),
        (ReportOut, report.to_dict()),
        (StageReportOut, report.stages[0].to_dict()),
        (DropOut, report.dropped[0].to_dict()),
        (ChangeOut, report.changed[0].to_dict()),
        (HistoryOut, report.history.to_dict()),
        (ToolsOut, report.tools.to_dict()),
    ]
    for model, data in pairs:
        assert _fields(model) >= set(data), (model.__name__, set(data) - _fields(model))
    # Drop and Change leave out empty optional keys; a model may list those, nothing more.
    optional = {"related", "detail", "tokens_before", "tokens_after"}
    for model, data in pairs:
        assert _fields(model) - set(data) <= optional, (model.__name__, _fields(model) - set(data))
    # the service's own keys: blocks, and what a request asks for (inspect, messages)
    assert _fields(AssembleResponse) == set(ctx.to_dict()) | {
        "blocks",
        "inputs",
        "messages",
        "reask_messages",
    }


def test_the_service_sends_only_fields_its_schema_lists(full: tuple[Any, dict[str, Any]]) -> None:
    _, body = full
    seen: dict[type[BaseModel], set[str]] = {}
    _check(AssembleResponse, body, "response", seen)
    # and every field the schema lists for the models with no optional key was sent
    for model in (CitationOut, ProvenanceOut, ReportOut, HistoryOut, ToolsOut, StageReportOut):
        assert seen[model] == _fields(model), (model.__name__, _fields(model) - seen[model])


def test_the_openapi_schema_lists_provenance_tools_and_stable_prefix() -> None:
    with TestClient(create_app(ServiceConfig())) as client:
        schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert "provenance" in schemas["CitationOut"]["properties"]
    assert {"tools", "stable_prefix_tokens"} <= set(schemas["ReportOut"]["properties"])
    assert set(schemas["ToolsOut"]["properties"]) == _fields(ToolsOut)


def test_resolve_response_citations_use_the_same_model(full: tuple[Any, dict[str, Any]]) -> None:
    ctx, _ = full
    with TestClient(create_app(ServiceConfig())) as client:
        body = client.post(
            "/v1/citations/resolve", json={"answer": "Röntgen [1].", "context": ctx.to_dict()}
        ).json()
    seen: dict[type[BaseModel], set[str]] = {}
    _check(ResolveResponse, body, "resolve", seen)
    assert set(body) == _fields(ResolveResponse)


def test_the_text_aliases_the_schema_bounds_are_the_ones_the_library_reads() -> None:
    """``ChunkIn`` holds ``content``/``page_content``/... to max_text_chars; a text alias the
    library learns must be bounded here too."""
    from contextwright.model.fields import FIELD_ALIASES
    from contextwright.service.schemas import TEXT_ALIASES

    assert FIELD_ALIASES["text"] is TEXT_ALIASES


def test_two_apps_validate_with_their_own_limits() -> None:
    from contextwright.service.schemas import request_models

    small, large = request_models(ServiceConfig(max_chunks=2)), request_models(ServiceConfig(max_chunks=5))
    chunks = [{"text": "x"}] * 3
    assert large.AssembleRequest.model_validate({"chunks": chunks}).chunks
    with pytest.raises(ValueError, match="at most 2 items"):
        small.AssembleRequest.model_validate({"chunks": chunks})
    assert list(small.AssembleRequest.model_fields)[:3] == ["query", "chunks", "fusion"]
    assert list(small.AssembleRequest.model_fields)[-1] == "inspect"
