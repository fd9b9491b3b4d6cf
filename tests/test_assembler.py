"""Tests of assemble() and Assembler: zones, budgets, messages."""

from __future__ import annotations

from typing import Any

import pytest

from contextwright import Assembler, assemble
from contextwright.core.errors import BudgetError, ConfigError, TokenizerError

CHUNKS = [
    {"id": "a", "text": "Röntgen discovered X-rays in 1895.", "score": 0.9, "source": "a.md"},
    {"id": "b", "text": "He won the first Nobel Prize in Physics.", "score": 0.7, "source": "b.md"},
]


def test_assemble_with_an_explicit_budget() -> None:
    ctx = assemble("who?", CHUNKS, budget=100)
    assert ctx.tokens <= 100 and ctx.budget == 100 and [c.source for c in ctx.citations] == ["a.md", "b.md"]
    assert ctx.report.summary().startswith("2 → 2 chunks")


def test_model_zones_derive_the_documents_budget() -> None:
    asm = Assembler(
        "qa", model="claude-3-5-haiku", output_tokens=1_000, history_tokens=500, buffer_tokens=100
    )
    zones = asm.zones("who discovered x-rays?")
    assert (
        zones.window == 200_000
        and zones.output == 1_000
        and zones.query == asm.tokenizer.count("who discovered x-rays?")
    )
    assert zones.documents == 200_000 - zones.system - 500 - zones.query - 1_000 - 100
    ctx = asm.assemble("who discovered x-rays?", CHUNKS)
    assert ctx.budget == zones.documents and ctx.report.zones["documents"] == zones.documents


def test_gpt5_uses_its_input_limit() -> None:
    pytest.importorskip("tiktoken")
    try:
        asm = Assembler("qa", model="gpt-5", output_tokens=10_000, tokenizer="cl100k_base")
    except TokenizerError:  # pragma: no cover
        pytest.skip("o200k not available")
    assert asm.zones("").window == 272_000 + 10_000


def test_neither_budget_nor_model_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"pass budget= \(documents tokens\) or model="):
        Assembler("qa")


def test_zones_that_leave_nothing_fail_at_construction() -> None:
    with pytest.raises(BudgetError, match=r"no room for documents: window 8,192 .* output 8,000"):
        Assembler("qa", model="gpt-4", output_tokens=8_000, tokenizer="cl100k_base")


def test_per_call_budget_override() -> None:
    asm = Assembler("chat", budget=1_000)
    assert asm.assemble("q", CHUNKS, budget=12).tokens <= 12


def test_messages_embed_the_context() -> None:
    ctx = assemble("who discovered x-rays?", CHUNKS, budget=200, preset="citations")
    msgs = ctx.messages(system="strict")
    assert msgs[0]["role"] == "system" and "[1]" in msgs[-1]["content"]
    assert msgs[-1]["content"].endswith("Question: who discovered x-rays?")


def test_to_dict_is_json_ready() -> None:
    import json

    data: dict[str, Any] = json.loads(json.dumps(assemble("q", CHUNKS, budget=100).to_dict()))
    assert data["tokens"] <= 100 and data["citations"][0]["label"] == "[1]" and data["report"]["stages"]


def test_assembler_reuses_the_token_cache_across_calls() -> None:
    asm = Assembler("qa", budget=500)
    asm.assemble("q", CHUNKS)
    misses = asm.tokenizer.misses
    asm.assemble("q", CHUNKS)
    assert asm.tokenizer.misses == misses


def test_import_does_not_load_frameworks_or_servers() -> None:
    import subprocess
    import sys

    code = (
        "import sys, contextwright; "
        "bad = [m for m in ('fastapi','uvicorn','langchain_core','llama_index','haystack','torch','sentence_transformers','psycopg','typer','rich') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


# -- dry run (plan) -------------------------------------------------------------


def _long_chunks() -> list[dict[str, Any]]:
    filler = " ".join(f"Sentence {i} of chunk {{k}} mentions nothing useful." for i in range(10))
    return [
        {
            "id": f"c{k}",
            "text": f"X-rays were discovered by Röntgen, note {k}. " + filler.format(k=k),
            "score": 1.0 - k / 10,
        }
        for k in range(6)
    ]


def test_plan_reports_zones_and_drops_without_rendering() -> None:
    asm = Assembler("qa", model="gpt-4", output_tokens=1_000, history_tokens=500)
    plan = asm.plan("who discovered x-rays?", _long_chunks(), budget=300)
    assert plan.zones["documents"] == 300 and plan.zones["output"] == 1_000 and plan.budget == 300
    assert plan.tokens <= 300 and not plan.fits
    assert {d.reason for d in plan.dropped} == {"over_budget"}
    kept = {c.id for c in plan.chunks}
    assert kept | {d.chunk_id for d in plan.dropped} == {f"c{k}" for k in range(6)}
    ctx = asm.assemble("who discovered x-rays?", _long_chunks(), budget=300)
    assert [c.id for c in ctx.chunks] == [c.id for c in plan.chunks]  # the plan is what assembly does
    assert plan.to_dict()["fits"] is False


def test_plan_shows_what_tight_would_compress_and_fits_when_it_all_fits() -> None:
    asm = Assembler("tight", budget=300)
    plan = asm.plan("who discovered x-rays?", _long_chunks())
    assert plan.compressed and all(c.tokens_after < c.tokens_before for c in plan.compressed)
    assert asm.fits("who discovered x-rays?", _long_chunks(), budget=10_000)
    assert not asm.fits("who discovered x-rays?", _long_chunks())


def test_the_design_example_runs_offline_with_a_gpt_4o_model() -> None:
    pytest.importorskip("bpe_openai")
    ctx = assemble("who discovered x-rays?", CHUNKS, model="gpt-4o-mini", preset="qa")
    assert ctx.tokenizer == "o200k_base" and ctx.budget > 100_000
    assert ctx.report.zones["window"] == 128_000 and len(ctx.citations) == 2


# --- work done once per call (issue 34) ---


def test_a_pipeline_given_with_order_keeps_its_own_stage_objects_and_is_not_rebuilt() -> None:
    """order=/format= on a Pipeline replace the order stage and the format only: nothing goes back
    through config, so a stage with no config form (unregistered) survives, as the same object."""
    from dataclasses import dataclass

    from contextwright import Pipeline, StageResult
    from contextwright.model.report import StageReport
    from contextwright.stages.filter import TopKFilter
    from contextwright.stages.order import ScoreOrder

    @dataclass(frozen=True)
    class Mine:  # not registered: it has no config form
        name = "mine"

        def __call__(self, chunks: Any) -> StageResult:
            return StageResult(
                tuple(chunks), StageReport(stage=self.name, chunks_in=len(chunks), chunks_out=len(chunks))
            )

    mine, top = Mine(), TopKFilter(k=3)
    pipeline = Pipeline((mine, top, ScoreOrder()), "minimal", name="own")
    asm = Assembler(pipeline, budget=200, order="bookend", format="numbered")
    assert asm.pipeline.stages[0] is mine and asm.pipeline.stages[1] is top
    assert asm.pipeline.stages[2].name == "bookend_order"
    assert (asm.pipeline.format.name, asm.pipeline.name) == ("numbered", "own")
    chunks = [{"text": f"passage {i} about tides", "score": 1 - i / 10} for i in range(5)]
    by_config = Assembler(
        {"stages": [{"type": "top_k", "k": 3}, {"type": "score_order"}], "format": "minimal"},
        budget=200,
        order="bookend",
        format="numbered",
    )
    assert asm.assemble("tides?", chunks).text == by_config.assemble("tides?", chunks).text


def test_a_framework_document_is_converted_once_per_call() -> None:
    """Its text checks run once: the reader converts it, and the pipeline takes the chunk as read."""
    documents = pytest.importorskip("langchain_core.documents")
    checks: list[str] = []

    class Counted(str):  # a metadata value whose every Unicode check is counted
        def isascii(self) -> bool:
            checks.append(str(self))
            return str.isascii(self)

    docs = [
        documents.Document(page_content=f"tides and the moon {i}", metadata={"note": Counted(f"n{i}")})
        for i in range(3)
    ]
    ctx = assemble("tides?", docs, budget=200)
    assert ctx.report.output_chunks == 3
    assert sorted(checks) == ["n0", "n1", "n2"]  # was 6: inputs.frameworks, then the pipeline again
    checks.clear()
    named = assemble("tides?", {"bm25": docs[:2], "dense": docs[1:]}, budget=200)
    assert named.report.output_chunks == 3
    assert sorted(checks) == ["n0", "n1", "n1", "n2"]  # once per list entry, not twice
