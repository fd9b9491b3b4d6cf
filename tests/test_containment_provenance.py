"""A copy dropped by containment dedup reaches the survivor's citation in the service and the adapters.

Issue 22: a knowledge base holding one text twice ("kb-v1/X" and a web mirror
"mirror/X", another chunking, typographic quotes and dashes, a boilerplate
line) shows the user "kb-v1/X, also in mirror/X". Real FastAPI TestClient and
real LangChain / LlamaIndex / Haystack packages.
"""

from __future__ import annotations

from typing import Any

import pytest

SENTENCES = [
    f"The survey's part {n} notes that stone{n} bridges cross river{n} near mill{n} - built in 18{n:02d}."
    for n in range(20)
]
WORDS = " ".join(SENTENCES).split()
ORIGINAL = " ".join(WORDS[:100])
MIRROR = "Mirrored from example.org\n" + " ".join(WORDS[30:110]).replace("'", "\u2019").replace(
    " - ", " \u2014 "
)
OTHER = "Ferries carried wool and grain across the bay every week until the railway opened in 1890."
CHUNKS: list[dict[str, Any]] = [
    {
        "id": "kb-v1/survey#0",
        "text": ORIGINAL,
        "score": 0.9,
        "source": "kb-v1/survey.md",
        "doc_id": "kb-v1/survey",
    },
    {
        "id": "mirror/survey#0",
        "text": MIRROR,
        "score": 0.8,
        "source": "mirror/survey.md",
        "doc_id": "mirror/survey",
    },
    {"id": "kb-v1/ferry#0", "text": OTHER, "score": 0.7, "source": "kb-v1/ferry.md", "doc_id": "kb-v1/ferry"},
]
QUERY = "which bridges cross the river?"


def test_the_library_folds_the_mirror_copy_onto_the_original_citation() -> None:
    from contextwright import assemble

    ctx = assemble(QUERY, CHUNKS, preset="qa", budget=400, tokenizer="cl100k_base", order="relevance")
    assert [c.id for c in ctx.chunks] == ["kb-v1/survey#0", "kb-v1/ferry#0"]
    assert ctx.citations[0].source == "kb-v1/survey.md"
    assert ctx.citations[0].also_sources == ("mirror/survey.md",)
    (drop,) = [d for d in ctx.report.dropped if d.chunk_id == "mirror/survey#0"]
    assert (drop.reason, drop.related) == ("duplicate_of", "kb-v1/survey#0")


def test_the_service_carries_the_copy_on_the_citation() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from contextwright.service.app import create_app
    from contextwright.service.settings import ServiceConfig

    with TestClient(create_app(ServiceConfig(budget=500))) as client:
        r = client.post(
            "/v1/assemble", json={"query": QUERY, "chunks": CHUNKS, "budget": 400, "preset": "qa"}
        )
    assert r.status_code == 200, r.text
    body = r.json()
    first = next(c for c in body["citations"] if c["source"] == "kb-v1/survey.md")
    assert first["also_sources"] == ["mirror/survey.md"]
    dropped = [d for s in body["report"]["stages"] for d in s["dropped"]]
    assert {"chunk_id": "mirror/survey#0", "reason": "duplicate_of"}.items() <= next(
        d for d in dropped if d["chunk_id"] == "mirror/survey#0"
    ).items()


def test_langchain_documents_carry_the_copy() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from contextwright.adapters.langchain import ContextwrightTransformer

    docs = [
        Document(
            page_content=c["text"],
            id=c["id"],
            metadata={"source": c["source"], "doc_id": c["doc_id"], "relevance_score": c["score"]},
        )
        for c in CHUNKS
    ]
    transformer = ContextwrightTransformer(budget=400, order="relevance")
    out = transformer.transform_documents(docs, query=QUERY)
    assert [d.id for d in out] == ["kb-v1/survey#0", "kb-v1/ferry#0"]
    assert out[0].metadata["duplicates"] == ["mirror/survey#0"]
    assert transformer.assemble(docs, query=QUERY).citations[0].also_sources == ("mirror/survey.md",)


def test_llamaindex_nodes_carry_the_copy() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from contextwright.adapters.llamaindex import ContextwrightPostprocessor

    nodes = [
        NodeWithScore(
            node=TextNode(
                id_=c["id"], text=c["text"], metadata={"source": c["source"], "doc_id": c["doc_id"]}
            ),
            score=c["score"],
        )
        for c in CHUNKS
    ]
    post = ContextwrightPostprocessor(budget=400, order="relevance")
    out = post.postprocess_nodes(nodes, query_bundle=QueryBundle(QUERY))
    assert [n.node.node_id for n in out] == ["kb-v1/survey#0", "kb-v1/ferry#0"]
    assert out[0].node.metadata["duplicates"] == ["mirror/survey#0"]
    assert post.assemble(nodes, query=QUERY).citations[0].also_sources == ("mirror/survey.md",)


def test_haystack_citations_carry_the_copy() -> None:
    pytest.importorskip("haystack")
    from haystack import Document

    from contextwright.adapters.haystack import ContextwrightAssembler

    docs = [
        Document(
            id=c["id"],
            content=c["text"],
            score=c["score"],
            meta={"source": c["source"], "doc_id": c["doc_id"]},
        )
        for c in CHUNKS
    ]
    out = ContextwrightAssembler(budget=400, order="relevance").run(documents=docs, query=QUERY)
    assert [d.id for d in out["documents"]] == ["kb-v1/survey#0", "kb-v1/ferry#0"]
    assert out["citations"][0]["also_sources"] == ["mirror/survey.md"]
    assert out["documents"][0].meta["duplicates"] == ["mirror/survey#0"]
