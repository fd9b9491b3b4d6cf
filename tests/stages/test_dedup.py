"""Tests of the dedup stage family."""

from __future__ import annotations

from contextwright.stages.dedup import ExactDedup, normalize_text
from contextwright.types import Chunk, chunks_from_dicts


def test_exact_dedup_keeps_the_higher_scored_copy_and_records_the_other() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "low", "text": "Paris is the capital of France.", "score": 0.2, "source": "a.md"},
            {"id": "high", "text": "paris  is the CAPITAL of France.", "score": 0.9, "source": "b.md"},
            {"id": "other", "text": "Berlin is the capital of Germany.", "score": 0.5},
        ]
    )
    result = ExactDedup()(chunks)
    assert [c.id for c in result.chunks] == ["high", "other"]
    survivor = result.chunks[0]
    assert survivor.duplicates == ("low",)
    assert survivor.also_sources == ("a.md",)
    (drop,) = result.report.dropped
    assert (drop.chunk_id, drop.reason, drop.related) == ("low", "duplicate_of", "high")


def test_exact_dedup_breaks_score_ties_by_retrieval_order() -> None:
    chunks = chunks_from_dicts([{"id": "first", "text": "same"}, {"id": "second", "text": "Same"}])
    result = ExactDedup()(chunks)
    assert [c.id for c in result.chunks] == ["first"]
    assert result.report.dropped[0].chunk_id == "second"


def test_exact_dedup_folds_three_copies_into_one_survivor() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a", "text": "x y z", "score": 0.1, "source": "1"},
            {"id": "b", "text": "x y z", "score": 0.3, "source": "2"},
            {"id": "c", "text": "x  y z", "score": 0.2, "source": "3"},
        ]
    )
    result = ExactDedup()(chunks)
    (survivor,) = result.chunks
    assert survivor.id == "b"
    assert set(survivor.duplicates) == {"a", "c"}
    assert set(survivor.also_sources) == {"1", "3"}
    assert {d.chunk_id for d in result.report.dropped} == {"a", "c"}


def test_normalize_text_folds_case_width_and_whitespace() -> None:
    assert normalize_text("  Ｈello\u00a0 WORLD\n") == "hello world"
    assert normalize_text("Straße") == normalize_text("STRASSE")


def test_exact_dedup_leaves_distinct_chunks_alone() -> None:
    chunks = (Chunk("one", id="1"), Chunk("two", id="2"))
    result = ExactDedup()(chunks)
    assert result.chunks == chunks
    assert result.report.dropped == ()
