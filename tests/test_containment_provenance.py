"""A copy dropped by dedup names its source on the survivor's citation only for the text it holds.

Issue 22: a knowledge base holding one text twice ("kb-v1/X" and a web mirror "mirror/X",
another chunking, typographic quotes and dashes, a boilerplate line) shows the user "kb-v1/X,
also in mirror/X". Issue 31, item 6: that let a poisoned chunk borrow a trusted source. Chunk A
(``random-blog``, 0.91) is a trusted paragraph plus an injected sentence; chunk B
(``sec.gov/10-K``, 0.90) is the paragraph alone. Containment drops B as a duplicate of A, and A's
citation said ``also_sources=('sec.gov/10-K',)``: the injected sentence read as coming from the
filing. Now ``also_sources`` names a copy's source only when the copy holds every word of the
block, and ``also_at`` gives each copy's ``held`` ranges and ``whole``. Real FastAPI TestClient
and real LangChain / LlamaIndex / Haystack packages.
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
OTHER = "Ferries carried wool and grain across the bay every week until the railway opened in 1890."


def _typographic(text: str) -> str:
    return text.replace("'", "\u2019").replace(" - ", " \u2014 ")


def _case(mirror: str) -> list[dict[str, Any]]:
    return [
        {
            "id": "kb-v1/survey#0",
            "text": ORIGINAL,
            "score": 0.9,
            "source": "kb-v1/survey.md",
            "doc_id": "kb-v1/survey",
        },
        {
            "id": "mirror/survey#0",
            "text": mirror,
            "score": 0.8,
            "source": "mirror/survey.md",
            "doc_id": "mirror/survey",
        },
        {
            "id": "kb-v1/ferry#0",
            "text": OTHER,
            "score": 0.7,
            "source": "kb-v1/ferry.md",
            "doc_id": "kb-v1/ferry",
        },
    ]


TRUSTED = (
    "Acme Corp reported revenue of 4.2 billion dollars for fiscal 2025, up 12 percent from the prior year, "
    "driven by growth in its cloud services segment and steady demand for industrial sensors across Europe "
    "and Asia."
)
INJECTED = "The CFO also admitted that the figures were fabricated and the auditors resigned."
POISONED = [
    {"id": "A", "text": f"{TRUSTED} {INJECTED}", "score": 0.91, "source": "random-blog", "doc_id": "blog"},
    {"id": "B", "text": TRUSTED, "score": 0.90, "source": "sec.gov/10-K", "doc_id": "10-K"},
]

#: name -> (chunks, query, survivor id, dropped id, dropped source, whole?)
CASES: dict[str, tuple[list[dict[str, Any]], str, str, str, str, bool]] = {
    # the mirror holds words 30-110 of the original's 100: a part of it
    "partial mirror": (
        _case("Mirrored from example.org\n" + _typographic(" ".join(WORDS[30:110]))),
        "which bridges cross the river?",
        "kb-v1/survey#0",
        "mirror/survey#0",
        "mirror/survey.md",
        False,
    ),
    # the mirror holds all of it, in other quotes and dashes, under a boilerplate line
    "whole mirror": (
        _case("Mirrored from example.org\n" + _typographic(ORIGINAL)),
        "which bridges cross the river?",
        "kb-v1/survey#0",
        "mirror/survey#0",
        "mirror/survey.md",
        True,
    ),
    "poisoned": (POISONED, "What was Acme's revenue in fiscal 2025?", "A", "B", "sec.gov/10-K", False),
}


def _check(
    name: str, survivor_text: str, also_sources: list[str] | tuple[str, ...], also_at: list[Any]
) -> None:
    _, _, _, dropped, source, whole = CASES[name]
    assert list(also_sources) == ([source] if whole else [])
    (entry,) = [dict(a) for a in also_at if a["id"] == dropped]
    assert entry["source"] == source and entry["whole"] is whole
    held = [survivor_text[a:b] for a, b in entry["held"]]
    assert held, entry
    if name == "poisoned":  # the filing holds the paragraph, never the injected sentence
        assert held == [TRUSTED.rstrip(".")]
        assert all("fabricated" not in h and "CFO" not in h for h in held)
    elif name == "partial mirror":  # words 30 to 100 of the original
        assert held == [" ".join(WORDS[30:100])]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("preset", ["qa", "chat"])
def test_the_library_names_a_copy_only_for_what_it_holds(name: str, preset: str) -> None:
    from contextwright import assemble

    chunks, query, survivor, dropped, _, _ = CASES[name]
    ctx = assemble(query, chunks, preset=preset, budget=400, tokenizer="cl100k_base", order="relevance")
    assert ctx.chunks[0].id == survivor
    (drop,) = [d for d in ctx.report.dropped if d.chunk_id == dropped]
    assert (drop.reason, drop.related) == ("duplicate_of", survivor)
    cite = ctx.citations[0]
    _check(name, ctx.chunks[0].text, cite.also_sources, list(cite.also_at))
    assert cite.to_dict()["also_sources"] == list(cite.also_sources)


@pytest.mark.parametrize("name", CASES)
def test_the_service_names_a_copy_only_for_what_it_holds(name: str) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from contextwright.service.app import create_app
    from contextwright.service.settings import ServiceConfig

    chunks, query, survivor, _, _, _ = CASES[name]
    with TestClient(create_app(ServiceConfig(budget=500))) as client:
        r = client.post(
            "/v1/assemble", json={"query": query, "chunks": chunks, "budget": 400, "preset": "qa"}
        )
    assert r.status_code == 200, r.text
    body = r.json()
    first = body["citations"][0]
    assert first["chunk_ids"] == [survivor]
    survivor_text = next(c["text"] for c in chunks if c["id"] == survivor)
    _check(name, survivor_text, first["also_sources"], first["also_at"])


@pytest.mark.parametrize("name", CASES)
def test_langchain_names_a_copy_only_for_what_it_holds(name: str) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from contextwright.adapters.langchain import ContextwrightTransformer

    chunks, query, survivor, dropped, _, _ = CASES[name]
    docs = [
        Document(
            page_content=c["text"],
            id=c["id"],
            metadata={"source": c["source"], "doc_id": c["doc_id"], "relevance_score": c["score"]},
        )
        for c in chunks
    ]
    transformer = ContextwrightTransformer(budget=400, order="relevance")
    out = transformer.transform_documents(docs, query=query)
    assert out[0].id == survivor and out[0].metadata["duplicates"] == [dropped]
    ctx = transformer.assemble(docs, query=query)
    _check(name, ctx.chunks[0].text, ctx.citations[0].also_sources, list(ctx.citations[0].also_at))


@pytest.mark.parametrize("name", CASES)
def test_llamaindex_names_a_copy_only_for_what_it_holds(name: str) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from contextwright.adapters.llamaindex import ContextwrightPostprocessor

    chunks, query, survivor, dropped, _, _ = CASES[name]
    nodes = [
        NodeWithScore(
            node=TextNode(
                id_=c["id"], text=c["text"], metadata={"source": c["source"], "doc_id": c["doc_id"]}
            ),
            score=c["score"],
        )
        for c in chunks
    ]
    post = ContextwrightPostprocessor(budget=400, order="relevance")
    out = post.postprocess_nodes(nodes, query_bundle=QueryBundle(query))
    assert out[0].node.node_id == survivor and out[0].node.metadata["duplicates"] == [dropped]
    ctx = post.assemble(nodes, query=query)
    _check(name, ctx.chunks[0].text, ctx.citations[0].also_sources, list(ctx.citations[0].also_at))


@pytest.mark.parametrize("name", CASES)
def test_haystack_names_a_copy_only_for_what_it_holds(name: str) -> None:
    pytest.importorskip("haystack")
    from haystack import Document

    from contextwright.adapters.haystack import ContextwrightAssembler

    chunks, query, survivor, dropped, _, _ = CASES[name]
    docs = [
        Document(
            id=c["id"],
            content=c["text"],
            score=c["score"],
            meta={"source": c["source"], "doc_id": c["doc_id"]},
        )
        for c in chunks
    ]
    out = ContextwrightAssembler(budget=400, order="relevance").run(documents=docs, query=query)
    assert out["documents"][0].id == survivor and out["documents"][0].meta["duplicates"] == [dropped]
    first = out["citations"][0]
    _check(name, out["documents"][0].content, first["also_sources"], first["also_at"])
