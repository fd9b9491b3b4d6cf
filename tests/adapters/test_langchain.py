"""The LangChain adapter against the real langchain-core: conversion, transformer, Runnable in LCEL."""

from __future__ import annotations

import asyncio
import copy
from operator import itemgetter
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import BaseDocumentCompressor, BaseDocumentTransformer, Document
from langchain_core.embeddings import Embeddings
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.tracers.context import collect_runs
from langchain_core.vectorstores import InMemoryVectorStore

from contextwright import Assembler, ConfigError, InputError, resolve_citations
from contextwright.adapters.langchain import (
    ContextwrightCompressor,
    ContextwrightRunnable,
    ContextwrightTransformer,
    from_documents,
    to_documents,
)
from contextwright.model.chunk import Chunk

from .conftest import QUERY


def _doc(p: dict[str, Any]) -> Document:
    """A LangChain document as loaders and retrievers make them: everything in metadata."""
    meta = {"source": p["source"], "page": p["page"], "doc_id": p["doc_id"], "relevance_score": p["score"]}
    return Document(page_content=p["text"], metadata=meta, id=p["id"])


@pytest.fixture
def docs(passages: list[dict[str, Any]]) -> list[Document]:
    return [_doc(p) for p in passages]


PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer only from the context and cite it as [n].\n\n{context}"), ("human", "{query}")]
)


class MiniLMEmbeddings(Embeddings):
    """LangChain's Embeddings interface over the real MiniLM model."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self.model.encode(texts, normalize_embeddings=True)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


# -- conversion ---------------------------------------------------------------


def test_from_documents_reads_score_source_page_and_ids_from_metadata(docs: list[Document]) -> None:
    chunks = from_documents(docs)
    assert [c.id for c in chunks] == [d.id for d in docs]
    first = chunks[0]
    assert (first.score, first.source, first.page, first.doc_id) == (0.93, "physics/xrays.md", 1, "xrays")
    assert [c.rank for c in chunks] == list(range(len(docs)))


def test_similarity_search_pairs_take_their_score() -> None:
    chunks = from_documents([(Document(page_content="a text"), 0.4), (Document(page_content="b text"), 0.7)])
    assert [c.score for c in chunks] == [0.4, 0.7]


def test_documents_without_id_get_distinct_ids_from_their_text() -> None:
    chunks = from_documents([Document(page_content="same"), Document(page_content="same")])
    assert chunks[0].id != chunks[1].id
    assert chunks[1].id == chunks[0].id + "-2"


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"source": "a.pdf", "page": 3},
        {"file_name": "a.pdf", "page_number": 12, "relevance_score": 0.25, "author": "K. Kim"},
        {"source": "https://example.org/x", "row": 7, "nested": {"k": [1, 2]}, "score": 0.5},
        {"title": "X-rays", "heading": "History", "doc_id": "d1", "index": 4, "start_index": 880},
        {"embedding": [0.25, -0.5, 1.0], "source": "v.md"},
    ],
)
def test_round_trip_preserves_page_content_and_metadata(metadata: dict[str, Any]) -> None:
    original = Document(page_content="Röntgen discovered X-rays.", metadata=copy.deepcopy(metadata), id="d-1")
    (back,) = to_documents(from_documents([original]))
    assert back.page_content == original.page_content
    assert back.metadata == metadata
    assert back.id == "d-1"


def test_to_documents_adds_fields_only_the_chunk_has_under_canonical_names() -> None:
    chunk = Chunk("text", id="c", score=0.6, source="s.md", page=2, doc_id="d")
    (doc,) = to_documents([chunk])
    assert doc.metadata == {"source": "s.md", "page": 2, "doc_id": "d", "score": 0.6}


def test_from_documents_rejects_other_objects_naming_the_position() -> None:
    with pytest.raises(InputError, match=r"documents\[1\] must be a langchain_core Document.*got dict"):
        from_documents([Document(page_content="ok"), {"text": "not a document"}])


def test_empty_document_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError, match=r"chunks\[0\]\.page_content is empty"):
        from_documents([Document(page_content="   ")])


# -- transformer --------------------------------------------------------------


def test_transformer_is_a_langchain_document_transformer() -> None:
    assert isinstance(ContextwrightTransformer(budget=100), BaseDocumentTransformer)


def test_transformer_drops_the_exact_duplicate_and_fits_the_budget(docs: list[Document], cl100k: Any) -> None:
    transformer = ContextwrightTransformer(budget=160, order="relevance")
    out = transformer.transform_documents(docs, query=QUERY)
    ids = [d.id for d in out]
    assert "roentgen-1" in ids
    assert "roentgen-copy" not in ids
    # relevance order, what fits 160 tokens (the last one cut to its best sentences); qa dedups
    # after its cut, so the copy's tokens are saved, not refilled with the next document (curie)
    assert ids == ["roentgen-1", "nobel-1901", "hand-photo"]
    ctx = transformer.assemble(docs, query=QUERY)
    assert len(cl100k.encode(ctx.text)) <= 160
    assert {d.chunk_id: d.reason for d in ctx.report.dropped}["roentgen-copy"] == "duplicate_of"
    assert [d.id for d in to_documents(ctx)] == ids


def test_transformer_returns_documents_in_the_assembled_order_with_citation_numbers(
    docs: list[Document],
) -> None:
    transformer = ContextwrightTransformer(budget=400, order="bookend")
    ctx = transformer.assemble(docs)
    out = transformer.transform_documents(docs)
    assert [d.id for d in out] == [c.id for c in ctx.chunks]
    assert [d.metadata["citation"] for d in out] == list(range(1, len(out) + 1))
    # bookend: the best first, the second best last
    assert out[0].id == "roentgen-1"
    assert out[-1].id == "nobel-1901"
    survivor = out[0].metadata
    assert survivor["duplicates"] == ["roentgen-copy"]
    assert survivor["relevance_score"] == 0.93
    assert ctx.citations[0].also_sources == ("mirror/xrays-copy.md",)


def test_transformer_does_not_change_the_callers_documents(docs: list[Document]) -> None:
    before = copy.deepcopy(docs)
    ContextwrightTransformer(budget=160).transform_documents(docs)
    assert docs == before


def test_transformer_atransform_gives_the_same_documents(docs: list[Document]) -> None:
    transformer = ContextwrightTransformer(budget=160)
    assert asyncio.run(transformer.atransform_documents(docs)) == transformer.transform_documents(docs)


def test_transformer_needs_a_budget_or_a_model() -> None:
    with pytest.raises(ConfigError, match=r"ContextwrightTransformer: pass budget= .* or model="):
        ContextwrightTransformer()


def test_transformer_refuses_an_assembler_and_settings_together() -> None:
    with pytest.raises(ConfigError, match=r"either assembler= or settings \(budget, order\)"):
        ContextwrightTransformer(assembler=Assembler("qa", budget=100), budget=100, order="relevance")


# -- runnable -----------------------------------------------------------------


def test_runnable_returns_context_citations_and_documents(docs: list[Document], cl100k: Any) -> None:
    runnable = ContextwrightRunnable(budget=160, format="numbered")
    assert isinstance(runnable, Runnable)
    out = runnable.invoke({"query": QUERY, "documents": docs})
    assert set(out) == {"context", "citations", "documents", "query"}
    assert len(cl100k.encode(out["context"])) <= 160
    assert [c["index"] for c in out["citations"]] == [d.metadata["citation"] for d in out["documents"]]
    # [n] in the text and citations[n-1] agree
    for cite, doc in zip(out["citations"], out["documents"], strict=True):
        assert f"{cite['label']} " in out["context"]
        assert cite["chunk_ids"] == [doc.id]
        assert cite["source"] == doc.metadata["source"]


def test_runnable_composes_with_a_chat_prompt_template_via_lcel(docs: list[Document]) -> None:
    chain = ContextwrightRunnable(budget=160) | PROMPT
    value = chain.invoke({"query": QUERY, "documents": docs})
    system, human = value.to_messages()
    assert "Wilhelm Conrad Röntgen discovered X-rays" in system.content
    assert "roentgen-1" not in system.content  # blocks are numbered, not labelled with input ids
    assert human.content == QUERY


def test_runnable_feeds_a_prompt_mapping_built_with_itemgetter(docs: list[Document]) -> None:
    assemble = ContextwrightRunnable(budget=160)
    prompt = ChatPromptTemplate.from_messages([("system", "{context}"), ("human", "{question}")])
    chain = assemble | {"context": itemgetter("context"), "question": itemgetter("query")} | prompt
    messages = chain.invoke({"question": QUERY, "documents": docs}).to_messages()
    assert messages[0].content == assemble.invoke({"query": QUERY, "documents": docs})["context"]
    assert messages[1].content == QUERY


def test_runnable_after_a_real_retriever_in_lcel(minilm: Any, passages: list[dict[str, Any]]) -> None:
    store = InMemoryVectorStore(MiniLMEmbeddings(minilm))
    store.add_documents([_doc(p) for p in passages], ids=[p["id"] for p in passages])
    retriever = store.as_retriever(search_kwargs={"k": 6})
    chain = (
        {"documents": retriever, "query": RunnablePassthrough()}
        | ContextwrightRunnable(budget=160, order="relevance", format="sources")
        | PROMPT
    )
    system = chain.invoke(QUERY).to_messages()[0].content
    assert "[SOURCE 1] physics/xrays.md" in system
    assert system.count("discovered X-rays on 8 November 1895") == 1  # the mirror copy was folded


def test_runnable_accepts_a_bare_retriever_output_with_the_default_query(docs: list[Document]) -> None:
    runnable = ContextwrightRunnable(budget=160, query="default question")
    out = runnable.invoke(docs)
    assert out["query"] == "default question"
    assert out["documents"][0].id == "roentgen-1"


def test_runnable_batch_and_ainvoke_match_invoke(docs: list[Document]) -> None:
    runnable = ContextwrightRunnable(budget=160)
    one = runnable.invoke({"query": QUERY, "documents": docs})
    assert runnable.batch([{"query": QUERY, "documents": docs}] * 2) == [one, one]
    assert asyncio.run(runnable.ainvoke({"query": QUERY, "documents": docs})) == one


def test_runnable_is_traced_as_one_named_run(docs: list[Document]) -> None:
    with collect_runs() as collector:
        ContextwrightRunnable(budget=160).invoke({"query": QUERY, "documents": docs})
    (run,) = collector.traced_runs
    assert run.name == "contextwright"
    assert run.outputs is not None
    assert run.outputs["query"] == QUERY


def test_runnable_rejects_input_without_documents() -> None:
    with pytest.raises(InputError, match=r"input has no documents: expected one of the keys documents, docs"):
        ContextwrightRunnable(budget=160).invoke({"query": QUERY, "hits": []})


def test_runnable_rejects_a_string_as_documents() -> None:
    with pytest.raises(InputError, match=r"documents must be a list of Document .*got str"):
        ContextwrightRunnable(budget=160).invoke({"query": QUERY, "documents": "text"})


def test_answer_citations_resolve_against_the_runnables_context(docs: list[Document]) -> None:
    transformer = ContextwrightTransformer(budget=160, order="relevance")
    ctx = transformer.assemble(docs, query=QUERY)
    resolution = resolve_citations("Röntgen found them in 1895 [1] and won the Nobel prize [2].", ctx)
    assert [c.chunk_ids for c in resolution.cited] == [("roentgen-1",), ("nobel-1901",)]


# -- compressor inside ContextualCompressionRetriever --------------------------


def _compression_retriever_class() -> Any:
    """LangChain's ContextualCompressionRetriever: langchain-classic (1.x) or langchain (0.3)."""
    try:
        from langchain_classic.retrievers import ContextualCompressionRetriever
    except ImportError:
        retrievers = pytest.importorskip(
            "langchain.retrievers", reason="needs langchain-classic or langchain"
        )
        ContextualCompressionRetriever = retrievers.ContextualCompressionRetriever
    return ContextualCompressionRetriever


@pytest.fixture
def minilm_retriever(minilm: Any, passages: list[dict[str, Any]]) -> Any:
    """A real InMemoryVectorStore over the real MiniLM returning all eight passages, copy included."""
    store = InMemoryVectorStore(MiniLMEmbeddings(minilm))
    store.add_documents([_doc(p) for p in passages], ids=[p["id"] for p in passages])
    return store.as_retriever(search_kwargs={"k": len(passages)})


def test_compressor_is_a_langchain_document_compressor() -> None:
    assert isinstance(ContextwrightCompressor(budget=100), BaseDocumentCompressor)


def test_compressor_in_a_contextual_compression_retriever_returns_the_assembled_blocks_in_order(
    minilm_retriever: Any, cl100k: Any
) -> None:
    compressor = ContextwrightCompressor(budget=160, order="relevance")
    retriever = _compression_retriever_class()(base_compressor=compressor, base_retriever=minilm_retriever)
    out = retriever.invoke(QUERY)

    retrieved = minilm_retriever.invoke(QUERY)
    assert {"roentgen-1", "roentgen-copy"} <= {
        d.id for d in retrieved
    }  # the duplicate reached the compressor
    ctx = compressor.assemble(retrieved, QUERY)
    assert ctx.tokens <= ctx.budget == 160
    assert len(cl100k.encode(ctx.text)) <= 160
    assert [d.id for d in out] == [c.id for c in ctx.chunks]
    assert [d.page_content for d in out] == [c.text for c in ctx.chunks]
    assert [d.metadata["citation"] for d in out] == list(range(1, len(out) + 1))
    assert 0 < len(out) < len(retrieved) - 1  # the budget dropped more than the duplicate


def test_compressor_folds_the_duplicate_and_reports_every_drop(minilm_retriever: Any) -> None:
    compressor = ContextwrightCompressor(budget=160, order="relevance")
    retriever = _compression_retriever_class()(base_compressor=compressor, base_retriever=minilm_retriever)
    out = retriever.invoke(QUERY)
    ids = [d.id for d in out]
    assert "roentgen-copy" not in ids
    (survivor,) = [d for d in out if d.id == "roentgen-1"]
    assert survivor.metadata["duplicates"] == ["roentgen-copy"]
    assert sum("discovered X-rays on 8 November 1895" in d.page_content for d in out) == 1

    retrieved = minilm_retriever.invoke(QUERY)
    report = compressor.assemble(retrieved, QUERY).report
    reasons = {d.chunk_id: d.reason for d in report.dropped}
    assert reasons["roentgen-copy"] == "duplicate_of"
    assert set(reasons) | set(ids) == {d.id for d in retrieved}  # nothing vanished silently


def test_compressor_async_path_gives_the_same_documents(minilm_retriever: Any, docs: list[Document]) -> None:
    compressor = ContextwrightCompressor(budget=160)
    retriever = _compression_retriever_class()(base_compressor=compressor, base_retriever=minilm_retriever)
    sync_out = retriever.invoke(QUERY)
    assert asyncio.run(retriever.ainvoke(QUERY)) == sync_out
    direct = asyncio.run(compressor.acompress_documents(docs, QUERY))
    assert direct == compressor.compress_documents(docs, QUERY)
    assert "roentgen-copy" not in [d.id for d in direct]


def test_compressor_uses_the_given_assembler_and_matches_the_transformer(docs: list[Document]) -> None:
    assembler = Assembler("qa", budget=160, order="bookend")
    compressor = ContextwrightCompressor(assembler=assembler)
    assert compressor.assembler is assembler
    expected = ContextwrightTransformer(assembler=assembler).transform_documents(docs, query=QUERY)
    assert compressor.compress_documents(docs, QUERY) == expected


def test_compressor_does_not_change_the_callers_documents(docs: list[Document]) -> None:
    before = copy.deepcopy(docs)
    ContextwrightCompressor(budget=160).compress_documents(docs, QUERY)
    assert docs == before


def test_compressor_needs_a_budget_or_a_model() -> None:
    with pytest.raises(ConfigError, match=r"ContextwrightCompressor: pass budget= .* or model="):
        ContextwrightCompressor()


def test_compressor_refuses_an_assembler_and_settings_together() -> None:
    with pytest.raises(
        ConfigError, match=r"ContextwrightCompressor: pass either assembler= or settings \(budget\)"
    ):
        ContextwrightCompressor(assembler=Assembler("qa", budget=100), budget=100)


def test_compressor_rejects_a_non_string_query(docs: list[Document]) -> None:
    with pytest.raises(InputError, match=r"ContextwrightCompressor: query must be a string; got int"):
        ContextwrightCompressor(budget=160).compress_documents(docs, 42)  # type: ignore[arg-type]
