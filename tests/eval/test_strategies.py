"""The strategies the evaluation compares: naive cut, greedy fit, presets, config files."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from contextwright.assembly.presets import list_presets
from contextwright.core.errors import ConfigError
from contextwright.eval.strategies import (
    GreedyStrategy,
    NaiveStrategy,
    PipelineStrategy,
    build_strategy,
    cut_to_budget,
    default_strategies,
)
from contextwright.tokens import get_tokenizer

TOK = get_tokenizer("cl100k_base")

CHUNKS: list[dict[str, Any]] = [
    {"id": "a", "text": "Alpha beta gamma delta. " * 10, "score": 1.0},
    {"id": "b", "text": "The answer is Wilhelm Conrad Röntgen, who won in 1901.", "score": 3.0},
    {"id": "c", "text": "Short one.", "score": 2.0},
]


@pytest.mark.parametrize("budget", [0, 1, 5, 37, 60, 1000])
def test_cut_to_budget_gives_a_prefix_within_the_budget(budget: int) -> None:
    text = "Röntgen — 日本語のテキスト, emoji 🎉🎉 and more words " * 5
    cut = cut_to_budget(text, budget, TOK)
    assert text.startswith(cut)
    assert TOK.base.count(cut) <= budget
    if TOK.base.count(text) > budget:
        # as long as a token-boundary cut allows: one more token would not fit or is a partial character
        assert TOK.base.count(cut) >= budget - 2


def test_cut_to_budget_never_ends_in_a_replacement_character() -> None:
    text = "🎉" * 50  # each emoji is several byte-level tokens
    for budget in range(1, 20):
        cut = cut_to_budget(text, budget, TOK)
        assert "\ufffd" not in cut
        assert text.startswith(cut)


def test_cut_to_budget_works_for_a_tokenizer_that_cannot_decode() -> None:
    chars = get_tokenizer("chars:4")
    text = "x" * 100
    assert cut_to_budget(text, 10, chars) == "x" * 40


def test_naive_keeps_retrieval_order_and_cuts_inside_a_chunk() -> None:
    budget = TOK.count(CHUNKS[0]["text"]) + 8  # chunk a, the separator and a few tokens of b
    out = NaiveStrategy().run("q", CHUNKS, budget=budget, tokenizer=TOK)
    assert TOK.base.count(out.text) <= budget
    assert out.member_ids == (("a",), ("b",))
    assert out.blocks[0] == CHUNKS[0]["text"]
    assert CHUNKS[1]["text"].startswith(out.blocks[1])
    assert out.blocks[1] != CHUNKS[1]["text"]
    assert out.text == "\n\n".join(out.blocks)


def test_naive_within_budget_is_the_plain_join() -> None:
    out = NaiveStrategy().run("q", CHUNKS, budget=10_000, tokenizer=TOK)
    assert out.text == "\n\n".join(c["text"] for c in CHUNKS)
    assert out.member_ids == (("a",), ("b",), ("c",))


def test_naive_at_budget_zero_is_empty() -> None:
    out = NaiveStrategy().run("q", CHUNKS, budget=0, tokenizer=TOK)
    assert (out.text, out.blocks, out.member_ids) == ("", (), ())


def test_greedy_takes_whole_chunks_by_score_and_joins_them_in_retrieval_order() -> None:
    budget = TOK.count(CHUNKS[1]["text"] + "\n\n" + CHUNKS[2]["text"])
    out = GreedyStrategy().run("q", CHUNKS, budget=budget, tokenizer=TOK)
    assert out.member_ids == (("b",), ("c",))
    assert out.blocks == (CHUNKS[1]["text"], CHUNKS[2]["text"])
    assert TOK.base.count(out.text) <= budget


def test_greedy_skips_a_misfit_and_continues_with_smaller_chunks() -> None:
    budget = TOK.count(CHUNKS[2]["text"]) + 2  # b (best) does not fit, c does
    out = GreedyStrategy().run("q", CHUNKS, budget=budget, tokenizer=TOK)
    assert out.member_ids == (("c",),)


def test_greedy_breaks_score_ties_by_retrieval_order() -> None:
    tied = [{"id": i, "text": f"Same length text {i}.", "score": 1.0} for i in ("x", "y", "z")]
    budget = TOK.count("\n\n".join(c["text"] for c in tied[:2]))
    out = GreedyStrategy().run("q", tied, budget=budget, tokenizer=TOK)
    assert out.member_ids == (("x",), ("y",))


@pytest.mark.parametrize("preset", sorted(list_presets()))
def test_every_preset_runs_as_a_strategy_within_budget(preset: str) -> None:
    strategy = build_strategy(preset)
    if strategy.missing({}):
        pytest.skip(f"{preset}: {strategy.missing({})}")
    out = strategy.run("who won in 1901?", CHUNKS, budget=120, tokenizer=TOK)
    assert TOK.base.count(out.text) <= 120
    assert len(out.blocks) == len(out.member_ids)
    assert {i for ids in out.member_ids for i in ids} <= {"a", "b", "c"}


def test_pipeline_strategy_reports_a_missing_required_resource(needy_stage: str) -> None:
    strategy = PipelineStrategy("needy", {"stages": [{"type": needy_stage}, {"type": "token_budget"}]})
    assert strategy.missing({}) == (
        f"stage {needy_stage!r} needs the resource 'oracle', which this evaluation does not have"
    )
    assert strategy.missing({"oracle": object()}) is None


def test_pipeline_strategy_notes_a_missing_optional_store_with_the_fix() -> None:
    strategy = PipelineStrategy(
        "expanding", {"stages": [{"type": "expand", "window": 1}, {"type": "token_budget"}]}
    )
    assert strategy.missing({}) is None
    note = strategy.degraded({})
    assert note is not None
    assert "optional resource 'store' of stage 'expand'" in note
    assert "--corpus" in note
    assert strategy.degraded({"store": object()}) is None


def test_pipeline_strategy_pickles_without_its_assembler() -> None:
    strategy = build_strategy("qa")
    strategy.run("q", CHUNKS, budget=100, tokenizer=TOK)
    clone = pickle.loads(pickle.dumps(strategy))
    assert clone.name == "qa"
    assert clone.run("q", CHUNKS, budget=100, tokenizer=TOK) == strategy.run(
        "q", CHUNKS, budget=100, tokenizer=TOK
    )


def test_config_file_strategy_is_named_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(
        json.dumps({"stages": [{"type": "token_budget", "policy": "greedy"}], "format": "minimal"})
    )
    strategy = build_strategy(str(path))
    assert strategy.name == "mine"
    assert strategy.describe()["config"]["format"] == "minimal"


def test_unknown_strategy_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown strategy 'nope'\. Valid: naive, greedy, .*qa"):
        build_strategy("nope")


def test_default_strategies_are_the_baselines_then_every_preset() -> None:
    assert default_strategies() == ["naive", "greedy", *list_presets()]
