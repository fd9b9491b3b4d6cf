"""Fusion of named ranked lists: hand-computed RRF and score fusion, provenance, errors, real lists."""

from __future__ import annotations

from typing import Any

import pytest

from contextwright import Assembler, assemble
from contextwright.core.errors import ConfigError, InputError
from contextwright.model.chunk import Chunk
from contextwright.stages.base import stage_from_dict, stage_to_dict
from contextwright.stages.fusion import Fuse, is_named_lists

A = [
    {"id": "x", "text": "x text", "score": 3.0},
    {"id": "y", "text": "y text", "score": 2.0},
    {"id": "z", "text": "z text", "score": 1.0},
]
B = [{"id": "y", "text": "y text", "score": 0.9}, {"id": "w", "text": "w text", "score": 0.5}]


def test_rrf_matches_hand_computed_values() -> None:
    result = Fuse(method="rrf").fuse({"a": A, "b": B})
    got = {c.id: c.score for c in result.chunks}
    assert got == pytest.approx({"y": 1 / 61 + 1 / 62, "x": 1 / 61, "w": 1 / 62, "z": 1 / 63})
    assert [c.id for c in result.chunks] == ["y", "x", "w", "z"]
    assert [c.rank for c in result.chunks] == [0, 1, 2, 3]


def test_rrf_k_and_weights_follow_the_formula() -> None:
    result = Fuse(method="rrf", k=1, weights={"b": 3.0}).fuse({"a": A, "b": B})
    got = {c.id: c.score for c in result.chunks}
    assert got == pytest.approx({"y": 1 / 3 + 3 / 2, "x": 1 / 2, "w": 3 / 3, "z": 1 / 4})


def test_score_fusion_sums_min_max_normalized_scores() -> None:
    result = Fuse().fuse({"a": A, "b": B})
    got = {c.id: c.score for c in result.chunks}
    assert got == pytest.approx({"y": 0.5 + 1.0, "x": 1.0, "z": 0.0, "w": 0.0})
    # ties (z, w at 0) go to the better rank in any list: w is #2 in b, z #3 in a
    assert [c.id for c in result.chunks] == ["y", "x", "w", "z"]
    weighted = {c.id: c.score for c in Fuse(weights={"b": 2}).fuse({"a": A, "b": B}).chunks}
    assert weighted == pytest.approx({"y": 2.5, "x": 1.0, "z": 0.0, "w": 0.0})


def test_a_list_without_score_spread_is_normalized_by_rank() -> None:
    flat = [{"id": i, "text": f"{i} t"} for i in ("p", "q", "r")]
    got = {c.id: c.score for c in Fuse().fuse({"plain": flat}).chunks}
    assert got == pytest.approx({"p": 1.0, "q": 0.5, "r": 0.0})


def test_a_chunk_in_several_lists_appears_once_with_its_provenance() -> None:
    result = Fuse().fuse({"a": A, "b": B})
    y = next(c for c in result.chunks if c.id == "y")
    assert y.provenance == (("b", 1, 0.9), ("a", 2, 2.0))
    assert result.report.chunks_in == 5 and result.report.chunks_out == 4
    assert [c.chunk_id for c in result.report.changed] == ["y"]
    ctx = assemble("q", {"a": A, "b": B}, budget=200)
    cite = next(c for c in ctx.citations if c.chunk_ids == ("y",))
    assert cite.provenance == (("b", 1, 0.9), ("a", 2, 2.0))
    assert cite.to_dict()["provenance"] == [
        {"list": "b", "rank": 1, "score": 0.9},
        {"list": "a", "rank": 2, "score": 2.0},
    ]
    assert ctx.report.stages[0].stage == "fuse"
    assert ctx.report.to_dict()["stages"][0]["changed"][0]["detail"] == "b #1 (0.9), a #2 (2)"


def test_provenance_round_trips_through_chunk_dicts() -> None:
    c = Fuse().fuse({"a": A, "b": B}).chunks[0]
    assert Chunk.from_dict(c.to_dict()).provenance == c.provenance
    with pytest.raises(InputError, match=r"provenance\[0\]\.rank must be a positive integer"):
        Chunk.from_dict({"text": "t", "provenance": [{"list": "a", "rank": 0}]})


def test_the_config_fuse_stage_chooses_the_method_and_round_trips() -> None:
    config = {"stages": [{"type": "fuse", "method": "rrf", "k": 10}, {"type": "token_budget"}]}
    ctx = Assembler(config, budget=200).assemble("q", {"a": A, "b": B})
    assert ctx.citations[0].score == pytest.approx(1 / 11 + 1 / 12)
    stage = Fuse(method="rrf", k=10, weights={"b": 2})
    assert stage_from_dict(stage_to_dict(stage)) == stage
    # one list: the fuse stage passes it through
    single = Assembler(config, budget=200).assemble("q", A)
    assert [c.chunk_ids[0] for c in single.citations] == ["x", "y", "z"]


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"method": "comb"}, "fuse method must be one of score, rrf; got 'comb'"),
        ({"k": 0}, "fuse k must be an integer from 1 to 10,000; got 0"),
        ({"weights": {"a": -1}}, r"fuse weights\['a'\] must be a number from 0 to 1000; got -1"),
        ({"weights": [1, 2]}, "fuse weights must be an object"),
    ],
)
def test_bad_settings_name_the_setting_and_value(settings: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Fuse(**settings)


def test_bad_lists_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="fuse weights name 'sparse', but the lists are 'a', 'b'"):
        Fuse(weights={"sparse": 1}).fuse({"a": A, "b": B})
    clash = [{"id": "x", "text": "another text", "score": 1.0}]
    with pytest.raises(InputError, match=r"lists\['b'\]\[0\]\.id 'x' is also lists\['a'\]\[0\]\.id"):
        Fuse().fuse({"a": A, "b": clash})
    with pytest.raises(InputError, match=r"lists\['b'\]: chunks\[0\] has no text"):
        Fuse().fuse({"a": A, "b": [{"score": 1}]})
    with pytest.raises(ConfigError, match="fusion must be 'score', 'rrf' or a mapping"):
        Assembler("qa", budget=100, fusion=3)  # type: ignore[arg-type]
    assert not is_named_lists(A) and not is_named_lists({"text": "t"}) and is_named_lists({"a": []})


def test_default_fusion_on_real_hybrid_lists_keeps_the_dense_answers(
    hybrid_queries: list[dict[str, Any]],
) -> None:
    """On 60 real dev queries at 500 tokens, score fusion keeps at least the answers of the better list."""
    from contextwright.eval.metrics import answer_in_text

    fused = Assembler("qa", budget=500)
    rrf = Assembler("qa", budget=500, fusion="rrf")
    counts = {"bm25": 0, "dense": 0, "rrf": 0, "score": 0}
    for q in hybrid_queries:
        runs = {
            "bm25": fused.assemble(q["question"], q["lists"]["bm25"]),
            "dense": fused.assemble(q["question"], q["lists"]["dense"]),
            "rrf": rrf.assemble(q["question"], q["lists"]),
            "score": fused.assemble(q["question"], q["lists"]),
        }
        for name, ctx in runs.items():
            counts[name] += any(answer_in_text(c.text, q["answers"]) for c in ctx.chunks)
        ctx = runs["score"]
        ids = {c["id"] for items in q["lists"].values() for c in items}
        assert ctx.report.input_chunks == len(ids)
        accounted = {i for c in ctx.chunks for i in (*c.member_ids, *c.duplicates)}
        accounted |= {d.chunk_id for d in ctx.report.dropped}
        assert accounted == ids and ctx.tokens <= 500
        assert all(c.provenance for c in ctx.citations)
    assert counts["score"] >= max(counts["bm25"], counts["dense"])
    assert counts["score"] > counts["bm25"]
