"""The LlamaIndex adapter against the real llama-index-core: conversion and a postprocessor in a query engine."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers.no_text import NoText
from llama_index.core.schema import (
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from contextwright import ConfigError, InputError
from contextwright.adapters.llamaindex import ContextwrightPostprocessor, from_nodes, to_nodes
from contextwright.model.chunk import Chunk

from .conftest import QUERY

TRUNCATE = {
    "stages": [
        {"type": "exact_dedup"},
        {"type": "token_budget", "policy": "truncate"},
        {"type": "score_order"},
    ],
    "format": "xml",
}


class MiniLMEmbedding(BaseEmbedding):
    """LlamaIndex's embedding interface over the real MiniLM model."""

    _model: Any = PrivateAttr()

    def __init__(self, model: Any) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2", embed_batch_size=16)
        self._model = model

    def _vectors(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._model.encode(texts, normalize_embeddings=True)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vectors([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vectors([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._vectors(texts)


def _node(p: dict[str, Any]) -> TextNode:
    """A node as a LlamaIndex reader and splitter make it: file metadata, source relationship."""
    return TextNode(
        id_=p["id"],
        text=p["text"],
        metadata={"file_name": p["source"], "page_label": str(p["page"])},
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=p["doc_id"])},
    )


@pytest.fixture
def scored(passages: list[dict[str, Any]]) -> list[NodeWithScore]:
    return [NodeWithScore(node=_node(p), score=p["score"]) for p in passages]


@pytest.fixture(scope="module")
def index(minilm: Any, passages: list[dict[str, Any]]) -> VectorStoreIndex:
    return VectorStoreIndex([_node(p) for p in passages], embed_model=MiniLMEmbedding(minilm))


# -- conversion ---------------------------------------------------------------


def test_from_nodes_reads_id_document_score_and_file_name(scored: list[NodeWithScore]) -> None:
    chunks = from_nodes(scored)
    first = chunks[0]
    assert (first.id, first.doc_id, first.score, first.source) == (
        "roentgen-1",
        "xrays",
        0.93,
        "physics/xrays.md",
    )
    assert first.metadata == {"file_name": "physics/xrays.md", "page_label": "1"}
    assert [c.rank for c in chunks] == list(range(len(scored)))


def test_from_nodes_keeps_the_embedding_for_semantic_stages() -> None:
    node = TextNode(text="vector text", id_="v", embedding=[0.5, 0.25])
    (chunk,) = from_nodes([node])
    assert chunk.embedding == (0.5, 0.25)
    assert chunk.score == 0.0


def test_round_trip_without_originals_keeps_text_metadata_id_document_and_score(
    scored: list[NodeWithScore],
) -> None:
    back = to_nodes(from_nodes(scored))
    for before, after in zip(scored, back, strict=True):
        assert after.node.node_id == before.node.node_id
        assert after.node.get_content() == before.node.get_content()
        assert after.node.metadata == before.node.metadata
        assert after.node.ref_doc_id == before.node.ref_doc_id
        assert after.score == before.score


def test_to_nodes_of_plain_chunks_builds_text_nodes() -> None:
    (out,) = to_nodes([Chunk("plain", id="p", score=0.3, page=2, doc_id="d")])
    assert isinstance(out.node, TextNode)
    assert out.node.metadata == {"page": 2}
    assert out.node.ref_doc_id == "d"


def test_from_nodes_rejects_other_objects_naming_the_position() -> None:
    with pytest.raises(InputError, match=r"nodes\[0\] must be a llama_index NodeWithScore.*got str"):
        from_nodes(["text"])  # type: ignore[list-item]


# -- postprocessor ------------------------------------------------------------


def test_postprocessor_is_a_llamaindex_node_postprocessor() -> None:
    assert isinstance(ContextwrightPostprocessor(budget=100), BaseNodePostprocessor)


def test_postprocessor_returns_nodes_in_the_assembled_order(scored: list[NodeWithScore], cl100k: Any) -> None:
    pp = ContextwrightPostprocessor(budget=400, order="bookend")
    ctx = pp.assemble(scored, QUERY)
    out = pp.postprocess_nodes(scored, query_str=QUERY)
    assert [n.node.node_id for n in out] == [c.id for c in ctx.chunks]
    assert out[0].node.node_id == "roentgen-1"
    assert out[-1].node.node_id == "nobel-1901"  # bookend: second best last
    assert "roentgen-copy" not in {n.node.node_id for n in out}
    assert [n.node.metadata["citation"] for n in out] == list(range(1, len(out) + 1))
    assert len(cl100k.encode(ctx.text)) <= 400


def test_postprocessor_fits_the_budget(scored: list[NodeWithScore]) -> None:
    out = ContextwrightPostprocessor(budget=160, order="relevance").postprocess_nodes(scored)
    # The default preset (qa) fills the budget in rank order: the three best whole, and the
    # room left goes to the next one, cut to its best sentences.
    assert [n.node.node_id for n in out][:3] == ["roentgen-1", "nobel-1901", "hand-photo"]
    assert [n.score for n in out][:3] == [0.93, 0.81, 0.77]
    assert all("truncated" in n.node.metadata.get("ops", []) for n in out[3:])


def test_citation_metadata_is_hidden_from_the_llm_and_the_embedder(scored: list[NodeWithScore]) -> None:
    (first, *_) = ContextwrightPostprocessor(budget=160).postprocess_nodes(scored)
    assert first.node.metadata["citation"] == 1
    llm_view = first.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "file_name: physics/xrays.md" in llm_view
    assert "citation" not in llm_view
    assert "citation" not in first.node.get_content(metadata_mode=MetadataMode.EMBED)


def test_postprocessor_copies_nodes_and_leaves_the_callers_nodes_unchanged(
    scored: list[NodeWithScore],
) -> None:
    nodes = [scored[0], scored[4]]  # the Röntgen passage and the three-sentence Curie passage
    before = copy.deepcopy(nodes)
    out = ContextwrightPostprocessor(preset=TRUNCATE, budget=120).postprocess_nodes(nodes)
    truncated = [n for n in out if "truncated" in n.node.metadata.get("ops", [])]
    assert truncated, "the truncate policy should have shortened the last block"
    original = next(n for n in nodes if n.node.node_id == truncated[0].node.node_id)
    assert len(truncated[0].node.get_content()) < len(original.node.get_content())
    assert [(n.node.get_content(), n.node.metadata, n.score) for n in nodes] == [
        (n.node.get_content(), n.node.metadata, n.score) for n in before
    ]
    assert truncated[0].node.relationships == original.node.relationships


def test_postprocessor_in_a_real_retriever_query_engine(index: VectorStoreIndex) -> None:
    pp = ContextwrightPostprocessor(budget=160, order="relevance")
    retriever = index.as_retriever(similarity_top_k=8)
    # NoText never calls its LLM; MockLLM only keeps it from resolving the default (OpenAI) one.
    engine = RetrieverQueryEngine(
        retriever=retriever, response_synthesizer=NoText(llm=MockLLM()), node_postprocessors=[pp]
    )
    response = engine.query(QUERY)
    ids = [n.node.node_id for n in response.source_nodes]
    retrieved = retriever.retrieve(QUERY)
    assert ids == [c.id for c in pp.assemble(retrieved, QUERY).chunks]
    assert len(ids) < len(retrieved)
    assert not {"roentgen-1", "roentgen-copy"} <= set(ids)  # one copy of the duplicate at most
    assert response.source_nodes[0].node.metadata["citation"] == 1


def test_postprocessor_uses_the_query_bundle(scored: list[NodeWithScore]) -> None:
    pp = ContextwrightPostprocessor(budget=160)
    with_bundle = pp.postprocess_nodes(scored, query_bundle=QueryBundle(QUERY))
    assert [n.node.node_id for n in with_bundle] == [n.node.node_id for n in pp.postprocess_nodes(scored)]


def test_postprocessor_settings_round_trip_through_to_dict_and_from_dict() -> None:
    pp = ContextwrightPostprocessor(budget=321, order="relevance", format="numbered")
    data = pp.to_dict()
    assert data["class_name"] == "ContextwrightPostprocessor"
    again = ContextwrightPostprocessor.from_dict(data)
    assert (again.budget, again.order, again.format) == (321, "relevance", "numbered")
    assert again.assembler.pipeline == pp.assembler.pipeline


def test_postprocessor_needs_a_budget_or_a_model() -> None:
    with pytest.raises(ConfigError, match=r"ContextwrightPostprocessor: pass budget= .* or model="):
        ContextwrightPostprocessor()
