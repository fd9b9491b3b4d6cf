"""MMR under the exact budget, with the real MiniLM on real NQ lists."""

from __future__ import annotations

from typing import Any

import pytest

from contextwright import Assembler
from contextwright.core.errors import ConfigError
from contextwright.eval.metrics import redundancy
from contextwright.model.convert import chunks_from_dicts
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.diversity import MMRBudget
from contextwright.tokens import get_tokenizer


def _meter() -> Meter:
    return Meter(get_format("xml"), get_tokenizer("cl100k_base"))


def test_mmr_skips_a_near_copy_that_greedy_keeps() -> None:
    items = [
        {"id": "a", "text": "Paris is the capital of France.", "score": 1.0, "embedding": [1.0, 0.0]},
        {"id": "b", "text": "Paris is the French capital city.", "score": 0.95, "embedding": [0.99, 0.05]},
        {"id": "c", "text": "Lyon is a city in France.", "score": 0.6, "embedding": [0.2, 1.0]},
    ]
    chunks = chunks_from_dicts(items)
    meter = _meter()
    two = meter.frame_cost() + meter.block_cost(chunks[0], 2) + meter.block_cost(chunks[2], 2)
    result = MMRBudget(lambda_mult=0.5, cost_exponent=0)(chunks, meter=meter, budget=two)
    assert [c.id for c in result.chunks] == ["a", "c"]
    assert [(d.chunk_id, d.reason) for d in result.report.dropped] == [("b", "over_budget")]
    only_relevance = MMRBudget(lambda_mult=1.0, cost_exponent=0)(chunks, meter=_meter(), budget=two + 40)
    assert [c.id for c in only_relevance.chunks][:2] == ["a", "b"]


def test_mmr_needs_vectors_and_valid_settings() -> None:
    chunks = chunks_from_dicts([{"text": "a"}, {"text": "b"}])
    with pytest.raises(ConfigError, match="the mmr stage needs vectors"):
        MMRBudget()(chunks, meter=_meter(), budget=100)
    with pytest.raises(ConfigError, match=r"mmr\.lambda_mult is 1\.5, beyond its bound of 1"):
        MMRBudget(lambda_mult=1.5)
    with pytest.raises(ConfigError, match="cost_exponent must be a number from 0"):
        MMRBudget(cost_exponent=-1)


def test_mmr_on_real_lists_is_exact_and_less_redundant_than_greedy(
    dev_queries: list[dict[str, Any]], minilm_embedder: Any, cl100k: Any
) -> None:
    def run(stage: dict[str, Any]) -> tuple[int, int]:
        config = {"stages": [{"type": "exact_dedup"}, stage, {"type": "auto_order"}]}
        asm = Assembler(config, budget=500, embedder=minilm_embedder)
        red = words = 0
        for q in dev_queries[:8]:
            ctx = asm.assemble(q["question"], q["chunks"])
            assert len(cl100k.encode_ordinary(ctx.text)) == ctx.tokens <= 500
            ids = {c["id"] for c in q["chunks"]}
            assert {i for c in ctx.chunks for i in (*c.member_ids, *c.duplicates)} | {
                d.chunk_id for d in ctx.report.dropped
            } == ids
            r, w = redundancy([c.text for c in ctx.chunks])
            red, words = red + r, words + w
        return red, words

    greedy = run({"type": "token_budget"})
    mmr = run({"type": "mmr", "lambda_mult": 0.5})
    assert mmr[0] / mmr[1] < greedy[0] / greedy[1]
