"""Tests of the order stages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.order import (
    AutoOrder,
    BookendOrder,
    ChronologicalOrder,
    DocumentOrder,
    LostInTheMiddleOrder,
    ScoreOrder,
    order_stage,
)


def scored(*scores: float) -> tuple[Chunk, ...]:
    return chunks_from_dicts([{"id": f"s{s:g}", "text": f"t{s}", "score": s} for s in scores])


def ids(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.id for c in result.chunks]


def test_score_order_highest_first() -> None:
    assert ids(ScoreOrder()(scored(1, 3, 2))) == ["s3", "s2", "s1"]


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ((5, 4, 3, 2, 1), ["s5", "s3", "s1", "s2", "s4"]),
        ((6, 5, 4, 3, 2, 1), ["s6", "s4", "s2", "s1", "s3", "s5"]),
        ((2, 1), ["s2", "s1"]),
        ((1,), ["s1"]),
    ],
)
def test_lost_in_the_middle_puts_best_first_for_odd_and_even_counts(scores: tuple, expected: list) -> None:
    assert ids(LostInTheMiddleOrder()(scored(*scores))) == expected


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ((5, 4, 3, 2, 1), ["s5", "s3", "s2", "s1", "s4"]),
        ((4, 3, 2, 1), ["s4", "s2", "s1", "s3"]),
        ((2, 1), ["s2", "s1"]),
    ],
)
def test_bookend_best_first_second_best_last(scores: tuple, expected: list) -> None:
    assert ids(BookendOrder()(scored(*scores))) == expected


def test_auto_is_relevance_up_to_three_then_bookend() -> None:
    assert ids(AutoOrder()(scored(1, 2, 3))) == ["s3", "s2", "s1"]
    assert ids(AutoOrder()(scored(1, 2, 3, 4))) == ["s4", "s2", "s1", "s3"]


def test_chronological_orders_by_document_page_index() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "d10-1", "text": "a", "doc_id": "doc10", "index": 1},
            {"id": "d2-5", "text": "b", "doc_id": "doc2", "index": 5, "page": 2},
            {"id": "d2-9", "text": "c", "doc_id": "doc2", "index": 9, "page": 1},
            {"id": "d10-0", "text": "d", "doc_id": "doc10", "index": 0},
        ]
    )
    assert ids(ChronologicalOrder()(chunks)) == ["d2-9", "d2-5", "d10-0", "d10-1"]


def test_document_first_ranks_documents_by_best_chunk() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a1", "text": "a", "doc_id": "A", "index": 1, "score": 0.5},
            {"id": "b0", "text": "b", "doc_id": "B", "index": 0, "score": 0.9},
            {"id": "a0", "text": "c", "doc_id": "A", "index": 0, "score": 0.1},
            {"id": "b3", "text": "d", "doc_id": "B", "index": 3, "score": 0.2},
        ]
    )
    assert ids(DocumentOrder()(chunks)) == ["b0", "b3", "a0", "a1"]


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=30))
def test_every_relevance_order_is_a_permutation_with_the_best_first(scores: list[float]) -> None:
    chunks = chunks_from_dicts([{"id": str(i), "text": str(i), "score": s} for i, s in enumerate(scores)])
    best = ScoreOrder()(chunks).chunks[0].id
    for stage in (ScoreOrder(), LostInTheMiddleOrder(), BookendOrder(), AutoOrder()):
        out = stage(chunks).chunks
        assert sorted(c.id for c in out) == sorted(c.id for c in chunks)
        assert out[0].id == best


def test_order_stage_by_name_and_error() -> None:
    assert isinstance(order_stage("lost-in-the-middle"), LostInTheMiddleOrder)
    assert isinstance(order_stage("relevance"), ScoreOrder)
    with pytest.raises(ConfigError, match=r"unknown order 'random'. Valid: auto, bookend"):
        order_stage("random")


# -- prior_order: ordering calibrated to a measured positional prior ----------------------------


def _ranked(n: int) -> list[Chunk]:
    return list(
        chunks_from_dicts([{"id": f"r{i}", "text": f"t{i}", "score": 1.0 - i / 10} for i in range(n)])
    )


def _write_prior(tmp_path: object, accuracy: list[float]) -> str:
    import json
    from pathlib import Path

    path = Path(str(tmp_path)) / "prior.json"
    path.write_text(
        json.dumps(
            {
                "positions": list(range(1, len(accuracy) + 1)),
                "num_documents": len(accuracy),
                "accuracy": accuracy,
                "closed_book": 10.0,
            }
        )
    )
    return str(path)


def test_prior_order_follows_a_falling_prior_as_relevance_order(tmp_path: object) -> None:
    from contextwright.stages.order import PriorOrder

    stage = PriorOrder(prior=_write_prior(tmp_path, [90.0, 70.0, 50.0, 30.0]))
    out = stage(_ranked(4)).chunks
    assert [c.id for c in out] == ["r0", "r1", "r2", "r3"]


def test_prior_order_puts_the_best_chunks_at_the_ends_of_a_u_curve(tmp_path: object) -> None:
    from contextwright.stages.order import PriorOrder

    # measured: start best, end second, middle worst (Liu et al.'s U)
    stage = PriorOrder(prior=_write_prior(tmp_path, [80.0, 50.0, 40.0, 45.0, 70.0]))
    out = stage(list(reversed(_ranked(5)))).chunks
    assert [c.id for c in out] == ["r0", "r2", "r4", "r3", "r1"]
    assert stage.positions(5) == [0, 4, 1, 3, 2]
    assert PriorOrder().positions(5) == [0, 4, 1, 3, 2]  # Liu et al. 2024, the default


def test_prior_order_rejects_a_missing_prior_file_naming_it(tmp_path: object) -> None:
    from contextwright.stages.order import PriorOrder

    with pytest.raises(ConfigError, match=r"cannot read prior file .*nope\.json"):
        PriorOrder(prior=f"{tmp_path}/nope.json")
    with pytest.raises(ConfigError, match="prior must be 'liu2024' or the path"):
        PriorOrder(prior="")


@pytest.mark.parametrize("stage", [ChronologicalOrder(), DocumentOrder()])
def test_source_is_the_document_key_when_doc_id_is_missing(stage: object) -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a2", "source": "a.md", "index": 2, "text": "a2", "score": 0.9},
            {"id": "b1", "source": "b.md", "index": 1, "text": "b1", "score": 0.8},
            {"id": "a1", "source": "a.md", "index": 1, "text": "a1", "score": 0.7},
        ]
    )
    out = [c.id for c in stage(chunks).chunks]  # type: ignore[operator]
    assert out.index("a1") + 1 == out.index("a2")  # one file's chunks together, in document order


def test_grouped_format_shows_one_header_per_source() -> None:
    from contextwright import assemble

    chunks = [
        {"id": "a2", "source": "a.md", "index": 2, "text": "a2", "score": 0.9},
        {"id": "b1", "source": "b.md", "index": 1, "text": "b1", "score": 0.8},
        {"id": "a1", "source": "a.md", "index": 1, "text": "a1", "score": 0.7},
    ]
    ctx = assemble("q", chunks, budget=300, preset="summarize")
    assert ctx.text.count("## Document: a.md") == 1


def _old_natural(value: str) -> tuple[object, ...]:
    """The sort key before issue 26 (int() of every digit run)."""
    import re

    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", value) if p)


@given(st.lists(st.text(alphabet="ab-_0123456789٣", max_size=8), min_size=2, max_size=8))
def test_natural_key_orders_as_integers_do(values: list[str]) -> None:
    from contextwright.stages.order import _natural

    assert sorted(values, key=_natural) == sorted(values, key=_old_natural)


def test_chronological_takes_huge_and_superscript_numbers_in_doc_ids() -> None:
    # Issue 26: int() refuses digit runs over 4,300 digits, and '²'.isdigit() is true
    # although int('²') fails: both ended the assembly with a ValueError.
    huge = "9" * 5000
    chunks = chunks_from_dicts(
        [
            {"id": "h", "text": "a", "doc_id": f"doc{huge}"},
            {"id": "s", "text": "b", "doc_id": "doc1²"},
            {"id": "t", "text": "c", "doc_id": "doc10"},
            {"id": "u", "text": "d", "doc_id": "doc2"},
            {"id": "z", "text": "e", "doc_id": f"doc1{huge}"},
        ]
    )
    assert ids(ChronologicalOrder()(chunks)) == ["s", "u", "t", "h", "z"]
