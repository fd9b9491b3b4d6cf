"""OpenTelemetry: one span per assemble, a child span per stage, checked with the SDK's in-memory exporter."""

from __future__ import annotations

from typing import Any

import pytest

from contextwright import Assembler


def test_assemble_emits_one_span_and_a_child_per_stage(dev_queries: list[dict[str, Any]]) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    q = dev_queries[0]
    from unittest import mock

    from opentelemetry import trace

    with (
        mock.patch.object(trace, "get_tracer_provider", return_value=provider),
        tracer.start_as_current_span("request"),
    ):
        ctx = Assembler("qa", budget=400).assemble(
            q["question"], {"bm25": q["chunks"], "dup": q["chunks"][:5]}
        )
    spans = {s.name: s for s in exporter.get_finished_spans()}
    root = spans["contextwright.assemble"]
    assert root.parent is not None and root.parent.span_id == spans["request"].context.span_id
    assert root.attributes["contextwright.tokens"] == ctx.tokens
    assert root.attributes["contextwright.output_chunks"] == len(ctx.chunks)
    names = [f"contextwright.stage.{s.stage}" for s in ctx.report.stages]
    # fuse first, then the preset's stages (whatever qa holds), then render
    stages = [s.name for s in Assembler("qa", budget=400).pipeline.stages]
    assert names == [f"contextwright.stage.{n}" for n in ["fuse", *stages, "render"]]
    assert "contextwright.stage.token_budget" in names
    for report in ctx.report.stages:
        span = spans[f"contextwright.stage.{report.stage}"]
        assert span.parent.span_id == root.context.span_id
        assert span.attributes["contextwright.chunks_in"] == report.chunks_in
        assert span.attributes["contextwright.chunks_out"] == report.chunks_out
        assert span.attributes["contextwright.dropped"] == len(report.dropped)
        assert "contextwright.ms" in span.attributes or report.stage == "render"
    budget_span = spans["contextwright.stage.token_budget"]
    budget_report = next(r for r in ctx.report.stages if r.stage == "token_budget")
    assert budget_span.attributes["contextwright.tokens_out"] == budget_report.tokens_out


def test_without_a_tracer_provider_no_span_is_started(dev_queries: list[dict[str, Any]]) -> None:
    pytest.importorskip("opentelemetry")
    from opentelemetry import trace

    from contextwright.core import telemetry

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)  # nothing configured
    with telemetry.span("x", a=1) as sp:
        assert sp is None
    q = dev_queries[0]
    assert Assembler("qa", budget=300).assemble(q["question"], q["chunks"]).tokens <= 300


def test_without_opentelemetry_spans_are_no_ops(
    monkeypatch: pytest.MonkeyPatch, dev_queries: list[dict[str, Any]]
) -> None:
    from contextwright.core import telemetry

    telemetry._trace.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "opentelemetry", None)
    try:
        with telemetry.span("x", a=1) as sp:
            assert sp is None
        ctx = Assembler("qa", budget=300).assemble("q", dev_queries[0]["chunks"])
        assert ctx.tokens <= 300
    finally:
        telemetry._trace.cache_clear()


def test_the_async_loop_opens_the_same_spans_as_the_sync_loop(dev_queries: list[dict[str, Any]]) -> None:
    """Both loops call one step (assembly/loop.py); before it, aassemble opened no span per stage."""
    pytest.importorskip("opentelemetry.sdk")
    import asyncio
    from unittest import mock

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    q = dev_queries[1]
    names: dict[str, list[str]] = {}
    for kind in ("sync", "async"):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        assembler = Assembler("qa", budget=400)
        with mock.patch.object(trace, "get_tracer_provider", return_value=provider):
            if kind == "sync":
                ctx = assembler.assemble(q["question"], q["chunks"])
            else:
                ctx = asyncio.run(assembler.aassemble(q["question"], q["chunks"]))
        stage_spans = [s for s in exporter.get_finished_spans() if s.name.startswith("contextwright.stage.")]
        names[kind] = sorted(s.name for s in stage_spans)
        assert names[kind] == sorted(f"contextwright.stage.{r.stage}" for r in ctx.report.stages)
    assert names["sync"] == names["async"]
