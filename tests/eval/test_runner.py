"""Scoring outputs, aggregating them, and running strategies over queries (in workers too)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from contextwright.core.errors import ConfigError
from contextwright.eval.data import EvalQuery, load_queries, query_from_dict
from contextwright.eval.runner import QueryResult, evaluate, score_output, summarize
from contextwright.eval.strategies import StrategyOutput
from contextwright.stages.priors import PositionalPrior
from contextwright.tokens import get_tokenizer

from ..conftest import CORPUS, DEV_QUERIES

TOK = get_tokenizer("cl100k_base")

QUERY = query_from_dict(
    {
        "id": "q",
        "question": "who won the first physics prize?",
        "answers": ["Wilhelm Röntgen"],
        "chunks": [
            {"id": "c0", "text": "Nothing here at all.", "has_answer": False},
            {"id": "c1", "text": "Wilhelm Röntgen won the prize.", "has_answer": True},
            {"id": "c2", "text": "It was Wilhelm Röntgen again.", "has_answer": True},
        ],
    }
)


def test_score_output_on_a_hand_computed_example() -> None:
    out = StrategyOutput(
        text="Nothing here at all.\n\nWilhelm Röntgen won the prize.",
        blocks=("Nothing here at all.", "Wilhelm Röntgen won the prize."),
        member_ids=(("c0",), ("c1",)),
    )
    r = score_output(QUERY, out, budget=100, tokenizer=TOK, strategy="s", latency_ms=1.5)
    assert r.tokens == TOK.base.count(out.text)
    assert not r.over_budget
    assert (r.answerable, r.hard, r.answer_kept) == (True, True, True)
    assert (r.answer_chunks_kept, r.answer_chunks) == (1, 2)
    assert (r.first_answer_block, r.position, r.middle) == (1, 1.0, False)
    assert r.expected_accuracy == pytest.approx(63.2)  # last of the blocks: Liu's 20th position
    assert (r.redundant_words, r.words) == (0, 8)  # "the" is dropped by the normalization
    assert (r.strategy, r.budget, r.latency_ms) == ("s", 100, 1.5)
    assert r.framing_tokens == r.tokens - sum(TOK.base.count(b) for b in out.blocks)


def test_framing_tokens_count_headers_and_tags() -> None:
    framed = StrategyOutput(
        text="[1] Physics\nWilhelm Röntgen won the prize.",
        blocks=("Wilhelm Röntgen won the prize.",),
        member_ids=(("c1",),),
    )
    r = score_output(QUERY, framed, budget=100, tokenizer=TOK)
    assert r.framing_tokens == TOK.base.count("[1] Physics\n") > 0


def test_an_answer_cut_mid_string_is_not_kept_though_its_chunk_id_is() -> None:
    out = StrategyOutput(text="Wilhelm Rö", blocks=("Wilhelm Rö",), member_ids=(("c1",),))
    r = score_output(QUERY, out, budget=3, tokenizer=TOK)
    assert r.answer_kept is False
    assert r.position is None
    assert r.middle is None
    assert r.answer_chunks_kept == 1
    assert r.expected_accuracy == 56.1  # closed book
    assert r.over_budget == (TOK.base.count("Wilhelm Rö") > 3)


def test_an_empty_output_keeps_nothing_and_scores_closed_book() -> None:
    r = score_output(QUERY, StrategyOutput("", (), ()), budget=0, tokenizer=TOK)
    assert (r.tokens, r.blocks, r.answer_kept, r.answer_chunks_kept, r.words) == (0, 0, False, 0, 0)
    assert r.expected_accuracy == 56.1
    assert not r.over_budget


def test_score_output_flags_a_budget_violation_by_recounting() -> None:
    text = "Wilhelm Röntgen won the prize."
    r = score_output(QUERY, StrategyOutput(text, (text,), (("c1",),)), budget=2, tokenizer=TOK)
    assert r.over_budget
    assert r.tokens == TOK.base.count(text)


def test_score_output_uses_the_prior_it_is_given() -> None:
    prior = PositionalPrior(name="flat", points=((0.0, 90.0),), closed_book=10.0)
    text = "Wilhelm Röntgen won the prize."
    r = score_output(QUERY, StrategyOutput(text, (text,), (("c1",),)), budget=100, tokenizer=TOK, prior=prior)
    assert r.expected_accuracy == 90.0


def _result(**kw: Any) -> QueryResult:
    base = QueryResult(
        query_id="q", strategy="s", budget=100, tokens=50, over_budget=False, blocks=3, answerable=True,
        hard=False, answer_kept=True, answer_chunks_kept=1, answer_chunks=1, first_answer_block=0,
        position=0.0, middle=False, expected_accuracy=75.8, redundant_words=0, words=10, latency_ms=1.0,
    )  # fmt: skip
    return replace(base, **kw)


def test_summarize_on_hand_computed_results() -> None:
    results = [
        _result(query_id="1"),
        _result(query_id="2", hard=True, position=0.5, middle=True, first_answer_block=1,
                expected_accuracy=54.0, tokens=100, redundant_words=5, answer_chunks=2, latency_ms=3.0),
        _result(query_id="3", hard=True, answer_kept=False, position=None, middle=None, first_answer_block=None,
                answer_chunks_kept=0, expected_accuracy=56.1, tokens=120, over_budget=True, latency_ms=2.0),
        _result(query_id="4", answerable=False, answer_kept=False, position=None, middle=None,
                first_answer_block=None, answer_chunks_kept=0, answer_chunks=0, expected_accuracy=56.1),
    ]  # fmt: skip
    (all_,) = summarize(results)
    assert (all_.queries, all_.answerable) == (4, 3)
    assert all_.answer_retention == pytest.approx(2 / 3)
    assert all_.chunk_retention == pytest.approx(2 / 4)  # pooled: 1 + 1 + 0 kept of 1 + 2 + 1
    assert all_.position_mean == pytest.approx(0.25)
    assert all_.middle_share == pytest.approx(0.5)
    assert all_.expected_accuracy == pytest.approx((75.8 + 54.0 + 56.1 + 56.1) / 4)
    assert all_.tokens_mean == pytest.approx((50 + 100 + 120 + 50) / 4)
    assert all_.utilisation == pytest.approx(0.8)
    assert all_.redundancy == pytest.approx(5 / 40)
    assert all_.violations == 1
    assert (all_.latency_p50_ms, all_.latency_p95_ms) == (1.5, 3.0)
    (hard,) = summarize(results, subset="hard")
    assert (hard.queries, hard.answer_retention, hard.position_mean, hard.middle_share) == (2, 0.5, 0.5, 1.0)


def test_summarize_of_nothing_is_empty_and_empty_shares_are_none() -> None:
    assert summarize([]) == []
    (s,) = summarize([_result(answerable=False, answer_chunks=0, answer_chunks_kept=0, position=None)])
    assert (s.answer_retention, s.chunk_retention, s.position_mean, s.middle_share) == (
        None,
        None,
        None,
        None,
    )


@pytest.fixture(scope="module")
def dev10() -> tuple[EvalQuery, ...]:
    if not DEV_QUERIES.exists():
        pytest.skip(f"shared data not found at {DEV_QUERIES}")
    return load_queries(DEV_QUERIES, limit=10)


def test_evaluate_runs_every_strategy_and_budget_and_never_violates_the_budget(
    dev10: tuple[EvalQuery, ...],
) -> None:
    result = evaluate(dev10, ["naive", "greedy", "qa"], [300, 1000])
    assert len(result.results) == 10 * 3 * 2
    assert [r.query_id for r in result.results] == sorted(r.query_id for r in result.results)
    assert all(not r.over_budget for r in result.results)
    assert result.summary("naive", 300).utilisation == pytest.approx(1.0, abs=0.01)  # naive fills the budget
    assert result.summary("naive", 1000).answer_retention >= result.summary("naive", 300).answer_retention
    assert [(s.strategy, s.budget, s.subset) for s in result.summaries[:2]] == [
        ("naive", 300, "all"),
        ("naive", 1000, "all"),
    ]
    assert result.meta["queries"] == 10


def test_evaluate_with_two_workers_equals_one_worker_but_for_latency(dev10: tuple[EvalQuery, ...]) -> None:
    one = evaluate(dev10, ["naive", "qa"], [300, 500], workers=1)
    two = evaluate(dev10, ["naive", "qa"], [300, 500], workers=2)
    assert [replace(r, latency_ms=0.0) for r in one.results] == [
        replace(r, latency_ms=0.0) for r in two.results
    ]
    strip = {"latency_p50_ms": None, "latency_p95_ms": None}
    assert [replace(s, **strip) for s in one.summaries] == [replace(s, **strip) for s in two.summaries]


def test_evaluate_skips_a_strategy_that_lacks_a_required_resource(
    dev10: tuple[EvalQuery, ...], tmp_path: Path, needy_stage: str
) -> None:
    config = tmp_path / "needy.json"
    config.write_text(json.dumps({"stages": [{"type": needy_stage}, {"type": "token_budget"}]}))
    without = evaluate(dev10[:2], ["naive", str(config)], [500])
    assert without.skipped == {
        "needy": f"stage {needy_stage!r} needs the resource 'oracle', which this evaluation does not have"
    }
    assert {r.strategy for r in without.results} == {"naive"}
    with_it = evaluate(dev10[:2], ["naive", str(config)], [500], resources={"oracle": object()})
    assert with_it.skipped == {}
    assert {r.strategy for r in with_it.results} == {"naive", "needy"}


def test_evaluate_opens_a_store_from_the_corpus_for_expansion(dev10: tuple[EvalQuery, ...]) -> None:
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    # The top 3 chunks of each list leave room for their neighbours at 1,000 tokens (with all
    # 20, neighbours, at half their parent's score, rank under the retrieved chunks the budget
    # already holds, so the contexts are the same with or without a store).
    short = [replace(q, chunks=q.chunks[:3]) for q in dev10]
    plain = evaluate(short, ["documents"], [1000])
    assert "documents" in plain.notes
    assert "'store'" in plain.notes["documents"]
    expanded = evaluate(short, ["documents"], [1000], corpus=CORPUS)
    assert expanded.notes == {}
    # neighbours come from the store: the contexts grow, and stay within budget
    grew = [e.tokens > p.tokens for e, p in zip(expanded.results, plain.results, strict=True)]
    assert sum(grew) >= len(short) // 2, grew
    assert all(e.tokens >= p.tokens for e, p in zip(expanded.results, plain.results, strict=True))
    assert all(not r.over_budget for r in expanded.results)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"budgets": [300, -1]}, "budgets must be non-negative integers"),
        ({"budgets": []}, "budgets must be non-negative integers"),
        ({"workers": 0}, "workers must be a positive integer"),
        ({"strategies": ["naive", "naive"]}, "naive appear more than once"),
        ({"strategies": []}, "no strategies to evaluate"),
    ],
)
def test_evaluate_rejects_bad_settings(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        evaluate([QUERY], **kwargs)
