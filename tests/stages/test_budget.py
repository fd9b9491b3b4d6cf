"""Tests of the selection policies."""

from __future__ import annotations

import pytest

from contextwright.errors import ConfigError
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.budget import TokenBudget, sentence_ends
from contextwright.tokens import get_tokenizer
from contextwright.types import chunks_from_dicts


def meter(fmt: str = "minimal") -> Meter:
    return Meter(get_format(fmt), get_tokenizer("cl100k_base"))


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()


def text_of(n_words: int, seed: int = 0) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n_words)) + "."


def test_greedy_skips_a_misfit_and_continues() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "big", "text": text_of(200), "score": 0.9},
            {"id": "small1", "text": text_of(10), "score": 0.8},
            {"id": "small2", "text": text_of(10, 3), "score": 0.7},
        ]
    )
    m = meter()
    budget = m.tokens(chunks[1]) + m.tokens(chunks[2]) + 5
    result = TokenBudget()(chunks, meter=m, budget=budget)
    assert [c.id for c in result.chunks] == ["small1", "small2"]
    assert [(d.chunk_id, d.reason) for d in result.report.dropped] == [("big", "over_budget")]


def test_stop_policy_stops_at_the_first_misfit() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "big", "text": text_of(200), "score": 0.9},
            {"id": "small", "text": text_of(10), "score": 0.8},
        ]
    )
    result = TokenBudget(policy="stop")(chunks, meter=meter(), budget=50)
    assert result.chunks == ()
    assert {d.chunk_id for d in result.report.dropped} == {"big", "small"}


def test_truncate_cuts_the_best_misfit_at_a_sentence_end() -> None:
    long = " ".join(f"Sentence number {i} talks about {WORDS[i % 10]}." for i in range(40))
    chunks = chunks_from_dicts(
        [{"id": "a", "text": text_of(20), "score": 0.9}, {"id": "long", "text": long, "score": 0.5}]
    )
    m = meter()
    result = TokenBudget(policy="truncate")(chunks, meter=m, budget=150)
    assert [c.id for c in result.chunks] == ["a", "long"]
    cut = result.chunks[1]
    assert cut.text.endswith(".") and long.startswith(cut.text) and len(cut.text) < len(long)
    assert "truncated" in cut.ops and cut.spans == ((0, len(cut.text)),)
    (change,) = result.report.changed
    assert change.action == "truncated" and change.tokens_after < change.tokens_before
    assert m.tokens(chunks[0]) + m.tokens(cut) <= 150


def test_truncate_declines_when_the_remainder_is_not_useful() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunks_from_dicts([{"id": "long", "text": long, "score": 0.5}])
    result = TokenBudget(policy="truncate", min_truncated_tokens=50)(chunks, meter=meter(), budget=20)
    assert result.chunks == () and result.report.dropped[0].reason == "over_budget"


def test_blocks_policy_keeps_or_drops_whole_documents() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a0", "text": text_of(30), "doc_id": "A", "index": 0, "score": 0.9},
            {"id": "b0", "text": text_of(30, 1), "doc_id": "B", "index": 0, "score": 0.8},
            {"id": "a1", "text": text_of(30, 2), "doc_id": "A", "index": 1, "score": 0.1},
        ]
    )
    m = meter("grouped")
    a_cost = m.doc_cost(chunks[0]) + m.block_cost(chunks[0], 3) + m.block_cost(chunks[2], 3)
    result = TokenBudget(policy="blocks")(chunks, meter=m, budget=a_cost + 5)
    assert [c.id for c in result.chunks] == ["a0", "a1"]
    assert [d.chunk_id for d in result.report.dropped] == ["b0"]


def test_budget_counts_the_rendered_block_not_just_the_text() -> None:
    chunks = chunks_from_dicts([{"id": "a", "text": text_of(20), "score": 1.0, "title": "A long title " * 5}])
    m = meter("xml")
    exact = m.frame_cost() + m.block_cost(chunks[0], 1)
    assert TokenBudget()(chunks, meter=m, budget=exact).chunks
    assert not TokenBudget()(chunks, meter=m, budget=exact - 1).chunks


@pytest.mark.parametrize(("setting", "value"), [("policy", "best"), ("min_truncated_tokens", 0)])
def test_settings_are_validated(setting: str, value: object) -> None:
    with pytest.raises(ConfigError, match=setting):
        TokenBudget(**{setting: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("One. Two! Three?", ["One.", "One. Two!", "One. Two! Three?"]),
        (
            "Dr. Smith paid $3.50 today. Then left.",
            ["Dr. Smith paid $3.50 today.", "Dr. Smith paid $3.50 today. Then left."],
        ),
        ('He said "stop." Then it stopped.', ['He said "stop."', 'He said "stop." Then it stopped.']),
        ("No end", ["No end"]),
    ],
)
def test_sentence_ends(text: str, ends: list[str]) -> None:
    assert [text[:e] for e in sentence_ends(text)] == ends


def test_truncate_cuts_the_first_misfit_before_lower_ranked_chunks_take_the_room() -> None:
    long = " ".join(f"Sentence number {i} talks about {WORDS[i % 10]}." for i in range(40))
    chunks = chunks_from_dicts(
        [
            {"id": "best", "text": text_of(20), "score": 0.9},
            {"id": "long", "text": long, "score": 0.8},
            {"id": "short", "text": text_of(25, 4), "score": 0.1},
        ]
    )
    m = meter()
    budget = m.tokens(chunks[0]) + m.tokens(chunks[2]) + 10
    greedy = TokenBudget()(chunks, meter=m, budget=budget)
    assert [c.id for c in greedy.chunks] == ["best", "short"]
    cut = TokenBudget(policy="truncate")(chunks, meter=m, budget=budget)
    assert [c.id for c in cut.chunks] == ["best", "long"]
    assert "truncated" in cut.chunks[1].ops
    assert [(d.chunk_id, d.reason) for d in cut.report.dropped] == [("short", "over_budget")]


def test_blocks_policy_drops_from_the_tail() -> None:
    # documents ranked A (best), B (too big), C (small): the tail rule drops B and everything after it
    chunks = chunks_from_dicts(
        [
            {"id": "a", "doc_id": "A", "text": "alpha " * 5, "score": 0.9},
            {"id": "b", "doc_id": "B", "text": "beta " * 200, "score": 0.8},
            {"id": "c", "doc_id": "C", "text": "gamma", "score": 0.7},
        ]
    )
    result = TokenBudget(policy="blocks")(chunks, meter=meter(), budget=60)
    assert [c.id for c in result.chunks] == ["a"]
    assert {d.chunk_id for d in result.report.dropped} == {"b", "c"}
    assert all(d.reason == "over_budget" for d in result.report.dropped)
