"""The Haystack adapter against the real haystack-ai: conversion, a component in a Pipeline, serialization."""

from __future__ import annotations

import copy
import importlib.util
from typing import Any

import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.core.errors import DeserializationError
from haystack.dataclasses import ByteStream, ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from contextwright import ConfigError, InputError
from contextwright.adapters.haystack import ContextwrightAssembler, from_documents, to_documents
from contextwright.model.chunk import Chunk

from .conftest import QUERY

# Haystack 3.x loads classes only from allowlisted modules; 2.x has no allowlist (and no keyword).
HAS_ALLOWLIST = importlib.util.find_spec("haystack.core.serialization_security") is not None
ALLOW = {"allowed_modules": ["contextwright"]} if HAS_ALLOWLIST else {}

TEMPLATE = [
    ChatMessage.from_system("Answer only from the context and cite it as [n].\n\n{{ context }}"),
    ChatMessage.from_user("{{ query }}"),
]
CITATIONS_PRESET = {
    "stages": [
        {"type": "exact_dedup"},
        {"type": "token_budget", "policy": "greedy"},
        {"type": "score_order"},
    ],
    "format": "sources",
}


def _doc(p: dict[str, Any]) -> Document:
    """A document as Haystack's converters and DocumentSplitter make it."""
    meta = {"file_path": p["source"], "page_number": p["page"], "source_id": p["doc_id"], "split_id": 0}
    return Document(content=p["text"], meta=meta, score=p["score"])


@pytest.fixture
def docs(passages: list[dict[str, Any]]) -> list[Document]:
    return [_doc(p) for p in passages]


def _pipeline(store: InMemoryDocumentStore, assembler: ContextwrightAssembler) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=8))
    pipe.add_component("assembler", assembler)
    pipe.add_component(
        "prompt_builder", ChatPromptBuilder(template=TEMPLATE, required_variables=["context", "query"])
    )
    pipe.connect("retriever.documents", "assembler.documents")
    pipe.connect("assembler.context", "prompt_builder.context")
    return pipe


def _run(pipe: Pipeline, query: str = QUERY) -> dict[str, Any]:
    return pipe.run(
        {"retriever": {"query": query}, "assembler": {"query": query}, "prompt_builder": {"query": query}},
        include_outputs_from={"retriever", "assembler"},
    )


def _comparable(data: dict[str, Any]) -> dict[str, Any]:
    """A pipeline dict with its connections sorted (Haystack lists them in graph order)."""
    return {**data, "connections": sorted(data["connections"], key=lambda c: (c["sender"], c["receiver"]))}


@pytest.fixture
def store(docs: list[Document]) -> InMemoryDocumentStore:
    s = InMemoryDocumentStore()
    s.write_documents([Document(content=d.content, meta=d.meta) for d in docs])
    return s


# -- conversion ---------------------------------------------------------------


def test_from_documents_reads_haystack_field_and_meta_names(docs: list[Document]) -> None:
    first = from_documents(docs)[0]
    assert first.id == docs[0].id
    assert (first.score, first.source, first.page, first.doc_id, first.index) == (
        0.93,
        "physics/xrays.md",
        1,
        "xrays",
        0,
    )
    assert first.metadata == docs[0].meta


def test_usual_aliases_win_over_haystack_names() -> None:
    (chunk,) = from_documents([Document(content="t", meta={"source": "s.md", "file_path": "/tmp/s.md"})])
    assert chunk.source == "s.md"


@pytest.mark.parametrize(
    "document",
    [
        Document(content="plain text"),
        Document(content="scored", score=0.25, meta={"file_path": "a.txt", "split_id": 3}),
        Document(content="with embedding", embedding=[0.5, -0.25], meta={"page_number": 2, "k": {"n": [1]}}),
        Document(content="with a doc id", meta={"source_id": "parent", "file_name": "x.pdf"}),
    ],
)
def test_round_trip_preserves_id_content_meta_score_and_embedding(document: Document) -> None:
    (back,) = to_documents(from_documents([document]))
    assert back.id == document.id
    assert back.content == document.content
    assert back.meta == document.meta
    assert back.score == document.score
    assert back.embedding == document.embedding


def test_binary_document_is_an_input_error_naming_it() -> None:
    blob = Document(blob=ByteStream(data=b"%PDF-1.7"))
    with pytest.raises(InputError, match=r"documents\[0\] .* has no text content"):
        from_documents([blob])


def test_to_documents_of_plain_chunks_builds_documents() -> None:
    (doc,) = to_documents([Chunk("plain", id="p", score=0.5, doc_id="d", source="s.md")])
    assert (doc.id, doc.content, doc.score, doc.meta) == (
        "p",
        "plain",
        0.5,
        {"doc_id": "d", "source": "s.md"},
    )


# -- component ----------------------------------------------------------------


def test_component_returns_context_documents_and_citations(docs: list[Document], cl100k: Any) -> None:
    out = ContextwrightAssembler(budget=160, order="relevance", format="numbered").run(
        documents=docs, query=QUERY
    )
    assert len(cl100k.encode(out["context"])) <= 160
    assert [d.meta["citation"] for d in out["documents"]] == [c["index"] for c in out["citations"]]
    # the copy (docs[1]) is dropped after the budget's cut: its tokens are saved, not refilled
    assert [d.id for d in out["documents"]] == [docs[0].id, docs[2].id]
    assert out["citations"][0]["also_sources"] == ["mirror/xrays-copy.md"]
    assert out["context"].startswith("[1] physics/xrays.md")


def test_component_leaves_the_callers_documents_unchanged(docs: list[Document]) -> None:
    before = copy.deepcopy(docs)
    ContextwrightAssembler(budget=160).run(documents=docs, query=QUERY)
    assert docs == before


def test_component_before_chat_prompt_builder_in_a_real_pipeline(
    store: InMemoryDocumentStore, cl100k: Any
) -> None:
    pipe = _pipeline(store, ContextwrightAssembler(budget=160, order="relevance", format="sources"))
    result = _run(pipe)
    system, user = (getattr(m, "text", None) or m.content for m in result["prompt_builder"]["prompt"])
    context = result["assembler"]["context"]
    assert context in system
    assert user == QUERY
    assert len(cl100k.encode(context)) <= 160
    retrieved = result["retriever"]["documents"]
    best = max(retrieved, key=lambda d: d.score)
    assert context.startswith(f"[SOURCE 1] {best.meta['file_path']}")  # relevance order
    assert sum("8 November 1895" in d.content for d in retrieved) == 2
    assert context.count("discovered X-rays on 8 November 1895") == 1  # the mirror copy was folded
    out_docs = result["assembler"]["documents"]
    assert len(out_docs) < len(retrieved)
    assert [d.meta["citation"] for d in out_docs] == list(range(1, len(out_docs) + 1))
    assert all(d.score is not None for d in out_docs)  # BM25 scores carried through


def test_pipeline_round_trips_through_to_dict_and_from_dict(store: InMemoryDocumentStore) -> None:
    pipe = _pipeline(
        store, ContextwrightAssembler(preset=CITATIONS_PRESET, budget=200, tokenizer="cl100k_base")
    )
    data = pipe.to_dict()
    assert data["components"]["assembler"] == {
        "type": "contextwright.adapters.haystack.ContextwrightAssembler",
        "init_parameters": {
            "preset": CITATIONS_PRESET,
            "budget": 200,
            "model": None,
            "format": None,
            "order": None,
            "tokenizer": "cl100k_base",
        },
    }
    again = Pipeline.from_dict(data, **ALLOW)
    assert _comparable(again.to_dict()) == _comparable(data)
    assert _run(again)["assembler"]["context"] == _run(pipe)["assembler"]["context"]


def test_pipeline_round_trips_through_yaml(store: InMemoryDocumentStore) -> None:
    pipe = _pipeline(store, ContextwrightAssembler(budget=300, order="bookend", format="xml"))
    text = pipe.dumps()
    assert "contextwright.adapters.haystack.ContextwrightAssembler" in text
    again = Pipeline.loads(text, **ALLOW)
    assert _comparable(again.to_dict()) == _comparable(pipe.to_dict())
    assert _run(again)["assembler"]["context"] == _run(pipe)["assembler"]["context"]


@pytest.mark.skipif(not HAS_ALLOWLIST, reason="Haystack 2.x has no deserialization allowlist")
def test_loading_without_allowing_contextwright_is_refused_by_haystack(store: InMemoryDocumentStore) -> None:
    text = _pipeline(store, ContextwrightAssembler(budget=300)).dumps()
    with pytest.raises(DeserializationError, match=r"contextwright\.adapters\.haystack.*allowlist"):
        Pipeline.loads(text)


def test_component_to_dict_and_from_dict() -> None:
    component = ContextwrightAssembler(budget=123, model="gpt-4", order="relevance")
    again = ContextwrightAssembler.from_dict(component.to_dict())
    assert again.to_dict() == component.to_dict()
    assert again.assembler.budget == 123


def test_component_needs_a_budget_or_a_model() -> None:
    with pytest.raises(ConfigError, match=r"ContextwrightAssembler: pass budget= .* or model="):
        ContextwrightAssembler()


def test_component_reports_a_bad_setting_when_built() -> None:
    with pytest.raises(ConfigError, match=r"unknown preset 'nope'"):
        ContextwrightAssembler(preset="nope", budget=100)
