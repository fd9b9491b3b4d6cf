"""Tests of the pipeline: stage wiring, reports, the final fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from contextwright.assembly.pipeline import Pipeline
from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.model.report import StageResult
from contextwright.render.format import TemplateFormat
from contextwright.stages.budget import TokenBudget
from contextwright.stages.dedup import ExactDedup
from contextwright.stages.order import ScoreOrder
from contextwright.tokens import get_tokenizer

TOK = get_tokenizer("cl100k_base")


@dataclass(frozen=True, slots=True, kw_only=True)
class Spy:
    name: ClassVar[str] = "spy"
    requires: ClassVar[tuple[str, ...]] = ("query",)
    seen: list[Any]

    def __call__(self, chunks: Any, /, **needs: Any) -> StageResult:
        self.seen.append(needs)
        return StageResult.of(self.name, chunks, chunks)


def test_stages_receive_only_what_they_require() -> None:
    seen: list[Any] = []
    Pipeline((Spy(seen=seen),), "minimal").run("q?", [{"text": "a"}], tokenizer=TOK, budget=100)
    assert seen == [{"query": "q?"}]


def test_missing_resource_is_a_clear_error() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class NeedsStore:
        name: ClassVar[str] = "needs_store"
        requires: ClassVar[tuple[str, ...]] = ("store",)

        def __call__(self, chunks: Any, /, **needs: Any) -> StageResult:
            return StageResult.of(self.name, chunks, chunks)

    with pytest.raises(ConfigError, match=r"stage 'needs_store' requires 'store'.*Pass store="):
        Pipeline((NeedsStore(),), "minimal").run("q", [{"text": "a"}], tokenizer=TOK, budget=10)


def test_report_has_tokens_and_time_per_stage() -> None:
    chunks = [{"id": str(i), "text": f"chunk number {i} " * 20, "score": i} for i in range(6)] + [
        {"id": "dup", "text": "chunk number 5 " * 20}
    ]
    ctx = Pipeline((ExactDedup(), TokenBudget(), ScoreOrder()), "xml").run(
        "q", chunks, tokenizer=TOK, budget=150
    )
    stages = [s.stage for s in ctx.report.stages]
    assert stages == ["exact_dedup", "token_budget", "score_order", "render"]
    dedup, budget, _order, render = ctx.report.stages
    assert dedup.chunks_in == 7 and dedup.chunks_out == 6 and dedup.tokens_out < dedup.tokens_in
    assert budget.tokens_out <= 150 and all(s.ms >= 0 for s in ctx.report.stages)
    assert render.tokens_out == ctx.tokens
    assert ctx.report.input_tokens == dedup.tokens_in
    assert ctx.chunks and ctx.report.reasons() == {"duplicate_of": 1, "over_budget": 6 - len(ctx.chunks)}


def test_final_fit_drops_the_weakest_block_when_the_exact_count_is_over() -> None:
    # Without a budget stage nothing is selected up front: the final fit must do it.
    chunks = [{"id": str(i), "text": f"sentence {i} " * 10, "score": i / 10} for i in range(5)]
    ctx = Pipeline((ScoreOrder(),), "numbered").run("q", chunks, tokenizer=TOK, budget=60)
    assert ctx.tokens <= 60
    render = ctx.report.stages[-1]
    assert render.dropped and {d.reason for d in render.dropped} == {"over_budget"}
    kept = {c.id for c in ctx.chunks}
    assert all(float(d.chunk_id) < min(float(k) for k in kept) for d in render.dropped)


def test_verify_always_tokenizes_the_final_text() -> None:
    class CountingTok:
        name = "count"
        additive = True
        calls: ClassVar[list[str]] = []

        def count(self, text: str) -> int:
            self.calls.append(text)
            return len(text.split())

        def count_many(self, texts: Any) -> list[int]:
            return [self.count(t) for t in texts]

        def encode(self, text: str) -> list[int]:
            return list(range(self.count(text)))

        def decode(self, ids: Any) -> str:
            return ""

    base = CountingTok()
    ctx = Pipeline((TokenBudget(),), "minimal", verify="always").run(
        "q", [{"text": "a b c"}], tokenizer=get_tokenizer(base), budget=10
    )
    assert ctx.text in base.calls


def test_template_format_is_verified_by_tokenizing() -> None:
    fmt = TemplateFormat(template="{% for b in blocks %}{{ b.text }}|{% endfor %}")
    ctx = Pipeline((TokenBudget(),), fmt).run(
        "q", [{"text": "alpha beta"}, {"text": "gamma"}], tokenizer=TOK, budget=100
    )
    assert ctx.text == "alpha beta|gamma|" and ctx.tokens == TOK.base.count(ctx.text)


def test_input_is_never_mutated() -> None:
    chunk = Chunk("text " * 50, id="x", score=1.0)
    before = (chunk.text, chunk.ops, chunk.duplicates)
    Pipeline((ExactDedup(), TokenBudget(policy="truncate"), ScoreOrder()), "xml").run(
        "q", [chunk], tokenizer=TOK, budget=30
    )
    assert (chunk.text, chunk.ops, chunk.duplicates) == before


def test_not_a_stage_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"stages\[0\].*is not a stage"):
        Pipeline(("exact_dedup",), "xml")  # type: ignore[arg-type]


def test_a_replaced_pipeline_does_not_reuse_bodies_rendered_for_another_format() -> None:
    import dataclasses

    from contextwright.render.format import get_format

    chunks = [{"id": "a", "text": "</chunk> [1] hi"}]
    xml = Pipeline((TokenBudget(),), "xml")
    xml.run("q", chunks, tokenizer=TOK, budget=100)
    minimal = dataclasses.replace(xml, format=get_format("minimal"))
    ctx = minimal.run("q", chunks, tokenizer=TOK, budget=100)
    assert ctx.text == "</chunk> [1] hi"  # not the xml-escaped body
