"""Tests of the relevance floor and top-k."""

from __future__ import annotations

import pytest

from contextwright.core.errors import ConfigError
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.filter import MinScoreFilter, TopKFilter

CHUNKS = chunks_from_dicts(
    [
        {"id": "a", "text": "a", "score": 0.1},
        {"id": "b", "text": "b", "score": 0.9},
        {"id": "c", "text": "c", "score": 0.5},
    ]
)


def test_min_score_drops_below_the_floor_with_reason() -> None:
    result = MinScoreFilter(min_score=0.5)(CHUNKS)
    assert [c.id for c in result.chunks] == ["b", "c"]
    assert [(d.chunk_id, d.reason) for d in result.report.dropped] == [("a", "below_min_score")]


def test_top_k_keeps_best_in_input_order() -> None:
    result = TopKFilter(k=2)(CHUNKS)
    assert [c.id for c in result.chunks] == ["b", "c"]
    assert result.report.dropped[0].reason == "top_k"


def test_top_k_ties_keep_retrieval_order() -> None:
    chunks = chunks_from_dicts([{"id": x, "text": x, "score": 1.0} for x in "wxyz"])
    assert [c.id for c in TopKFilter(k=2)(chunks).chunks] == ["w", "x"]


@pytest.mark.parametrize("k", [-1, 1.5, True])
def test_top_k_validates(k: object) -> None:
    with pytest.raises(ConfigError, match=r"k must be a non-negative integer; got"):
        TopKFilter(k=k)  # type: ignore[arg-type]


def test_min_score_validates() -> None:
    with pytest.raises(ConfigError, match="min_score must be a finite number; got nan"):
        MinScoreFilter(min_score=float("nan"))
