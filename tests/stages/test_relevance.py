"""Similarity floor and rerank, with the real all-MiniLM-L6-v2 on real NQ chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextwright import Assembler
from contextwright.clients.rerank import CrossEncoderReranker, Reranker
from contextwright.core.errors import ConfigError, MissingDependencyError
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.relevance import Rerank, SimilarityFilter, query_similarities


def test_similarity_floor_drops_unrelated_chunks_with_the_value(
    hybrid_queries: list[dict[str, Any]], minilm_embedder: Any
) -> None:
    q = hybrid_queries[0]
    chunks = chunks_from_dicts(q["lists"]["bm25"])
    sims = query_similarities(q["question"], chunks, minilm_embedder)
    floor = sorted(sims)[len(sims) // 2]
    result = SimilarityFilter(min_similarity=floor)(chunks, query=q["question"], embedder=minilm_embedder)
    assert {c.id for c in result.chunks} == {c.id for c, s in zip(chunks, sims, strict=True) if s >= floor}
    assert result.report.dropped and all(d.reason == "below_similarity" for d in result.report.dropped)
    by_id = dict(zip((c.id for c in chunks), sims, strict=True))
    for d in result.report.dropped:
        assert d.detail == f"cosine {by_id[d.chunk_id]:.4f} < {floor:g}"
    # the data's dense scores are MiniLM cosines of "title text": the same model gives the same value
    top = q["lists"]["dense"][0]
    titled = chunks_from_dicts([{"text": f"{top['title']} {top['text']}"}])
    assert query_similarities(q["question"], titled, minilm_embedder)[0] == pytest.approx(
        top["score"], abs=2e-3
    )


def test_similarity_floor_in_a_config_accounts_for_every_chunk(
    hybrid_queries: list[dict[str, Any]], minilm_embedder: Any
) -> None:
    config = {"stages": [{"type": "min_similarity", "min_similarity": 0.3}, {"type": "token_budget"}]}
    asm = Assembler(config, budget=400, embedder=minilm_embedder)
    for q in hybrid_queries[:5]:
        ctx = asm.assemble(q["question"], q["lists"]["bm25"])
        ids = {c["id"] for c in q["lists"]["bm25"]}
        assert {i for c in ctx.chunks for i in c.member_ids} | {d.chunk_id for d in ctx.report.dropped} == ids
        assert ctx.tokens <= 400


class CosineReranker:
    """A reranker over the real MiniLM: cosine to the query (what a bi-encoder reranker does)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    def score(self, query: str, texts: Any) -> list[float]:
        vectors = self.embedder.embed([query, *texts])
        return [float(v @ vectors[0]) for v in vectors[1:]]


def test_rerank_resorts_and_records_old_and_new_ranks(
    hybrid_queries: list[dict[str, Any]], minilm_embedder: Any
) -> None:
    q = hybrid_queries[1]
    chunks = chunks_from_dicts(q["lists"]["bm25"])
    reranker = CosineReranker(minilm_embedder)
    assert isinstance(reranker, Reranker)
    result = Rerank(top_n=5)(chunks, query=q["question"], reranker=reranker)
    scores = reranker.score(q["question"], [c.text for c in chunks])
    expected = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))[:5]
    assert [c.id for c in result.chunks] == [chunks[i].id for i in expected]
    assert [c.rank for c in result.chunks] == list(range(5))
    first = next(ch for ch in result.report.changed if ch.chunk_id == chunks[expected[0]].id)
    assert first.action == "reranked"
    assert first.detail.startswith(f"rank {expected[0] + 1} -> 1, score {chunks[expected[0]].score:g} -> ")
    assert len(result.report.dropped) == len(chunks) - 5
    assert all(d.reason == "top_k" for d in result.report.dropped)


def test_rerank_rejects_a_reranker_that_miscounts() -> None:
    class Short:
        def score(self, query: str, texts: Any) -> list[float]:
            return [1.0]

    chunks = chunks_from_dicts([{"text": "a"}, {"text": "b"}])
    with pytest.raises(ConfigError, match="returned 1 scores for 2 texts"):
        Rerank()(chunks, query="q", reranker=Short())
    with pytest.raises(ConfigError, match="rerank top_n must be an integer from 1 to 10,000"):
        Rerank(top_n=0)
    with pytest.raises(ConfigError, match=r"min_similarity\.min_similarity is 2, beyond its bound of 1"):
        SimilarityFilter(min_similarity=2)
    with pytest.raises(ConfigError, match="requires 'reranker'"):
        Assembler({"stages": [{"type": "rerank"}]}, budget=100).assemble("q", [{"text": "a"}])


def test_cross_encoder_without_a_local_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MissingDependencyError, match=r"no cross-encoder model at .*never downloads"):
        CrossEncoderReranker(tmp_path / "absent")


def test_cross_encoder_reranker_scores_with_a_local_sentence_transformers_model(
    minilm_dir: Path, tmp_path: Path, hybrid_queries: list[dict[str, Any]]
) -> None:
    """A real CrossEncoder saved locally (MiniLM's encoder, an untrained head): loads offline, scores, reranks."""
    st = pytest.importorskip("sentence_transformers")
    import torch

    torch.manual_seed(0)
    st.CrossEncoder(str(minilm_dir), num_labels=1).save(str(tmp_path / "ce"))
    reranker = CrossEncoderReranker(tmp_path / "ce")
    q = hybrid_queries[2]
    texts = [c["text"] for c in q["lists"]["bm25"][:6]]
    scores = reranker.score(q["question"], texts)
    assert len(scores) == 6 and len(set(scores)) > 1
    assert scores == pytest.approx(reranker.score(q["question"], texts))
    asm = Assembler({"stages": [{"type": "rerank"}, {"type": "score_order"}]}, budget=2000, reranker=reranker)
    ctx = asm.assemble(q["question"], q["lists"]["bm25"][:6])
    assert [c.score for c in ctx.citations] == sorted(scores, reverse=True)
