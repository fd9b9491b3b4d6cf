"""relevance_stop and the frugal preset: the budget as a ceiling (issue 23)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright import Assembler, ConfigError, assemble, get_preset, list_presets
from contextwright.stages.stop import RelevanceStop


def _text(i: int) -> str:
    """About 40 tokens, no words shared with another chunk's (so no dedup stage drops it)."""
    return " ".join(f"w{i}x{j}" for j in range(20)) + "."


def _chunks(scores: list[float]) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "text": _text(i), "score": s} for i, s in enumerate(scores)]


def _stop_config(**settings_: Any) -> dict[str, Any]:
    return {
        "stages": [{"type": "relevance_stop", **settings_}, {"type": "token_budget", "policy": "greedy"}],
        "format": "numbered",
    }


SCALES = {
    "bm25": [24.0, 21.5, 19.0, 9.0, 8.5, 8.0, 7.9, 7.5],
    "cosine": [0.81, 0.78, 0.74, 0.41, 0.39, 0.37, 0.35, 0.33],
    "reranker logits": [6.2, 5.1, 4.8, -3.0, -3.5, -4.1, -5.0, -6.0],
    "rrf": [0.0328, 0.0320, 0.0315, 0.0169, 0.0167, 0.0164, 0.0161, 0.0159],
}


@pytest.mark.parametrize("scale", SCALES)
def test_the_rule_stops_at_the_same_knee_on_every_score_scale(scale: str) -> None:
    ctx = assemble(
        "q", _chunks(SCALES[scale]), budget=2000, preset=_stop_config(min_relative=0.5, min_tokens=50)
    )
    assert [c.member_ids[0] for c in ctx.chunks] == ["c0", "c1", "c2"]
    below = [d for d in ctx.report.dropped if d.reason == "below_relevance"]
    assert [d.chunk_id for d in below] == [f"c{i}" for i in range(3, 8)]
    top = max(SCALES[scale])
    assert all(
        f"top {top:.4g}" in d.detail and "threshold" in d.detail and "score" in d.detail for d in below
    )
    assert ctx.tokens < 400  # the budget is a ceiling, not a target


def test_the_floor_keeps_weak_chunks_until_it_is_reached() -> None:
    scores = [10.0, 1.0, 1.0, 1.0, 1.0, 0.5]
    floor = assemble("q", _chunks(scores), budget=2000, preset=_stop_config(min_tokens=250))
    none = assemble("q", _chunks(scores), budget=2000, preset=_stop_config(min_tokens=0))
    assert len(none.chunks) == 1
    assert 3 <= len(floor.chunks) < 6  # kept past the knee until ~250 body tokens


@pytest.mark.parametrize(
    ("scores", "why"),
    [
        ([1.0] * 5, "same score"),
        ([0.0] * 5, "same score"),
    ],
)
def test_lists_without_usable_scores_keep_todays_behaviour(scores: list[float], why: str) -> None:
    chunks = _chunks(scores)
    ctx = assemble("q", chunks, budget=2000, preset=_stop_config())
    stop = next(s for s in ctx.report.stages if s.stage == "relevance_stop")
    assert stop.dropped == () and any(why in n for n in stop.notes)
    assert len(ctx.chunks) == len(scores)


def test_nan_scores_are_refused_before_any_stage() -> None:
    from contextwright import InputError

    with pytest.raises(InputError, match="finite"):
        assemble("q", _chunks([1.0, math.nan]), budget=500, preset="frugal")


def test_ranks_only_lists_keep_everything() -> None:
    chunks = [{"id": f"c{i}", "text": _text(i)} for i in range(6)]  # no scores at all
    ctx = assemble("q", chunks, budget=2000, preset="frugal")
    assert len(ctx.chunks) == 6
    assert not [d for d in ctx.report.dropped if d.reason == "below_relevance"]


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("min_relative", -0.1),
        ("min_relative", 1.5),
        ("min_relative", "half"),
        ("min_tokens", -1),
        ("min_tokens", 2.5),
    ],
)
def test_settings_are_validated_with_the_setting_named(setting: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"relevance_stop.{setting}|{setting}"):
        Assembler(_stop_config(**{setting: value}), budget=500)


def test_bounds_refuse_a_huge_floor() -> None:
    with pytest.raises(ConfigError, match="min_tokens"):
        RelevanceStop(min_tokens=10**9)


def test_frugal_is_qa_with_the_stop_right_before_the_budget() -> None:
    """frugal is qa with the relevance stop just before the budget, its dedup after the cut as in qa
    (since stop 43; until then it deduped first, bench/plans/frugal-stop42.toml)."""
    assert "frugal" in list_presets()
    qa = [s["type"] for s in get_preset("qa")["stages"]]
    frugal = [s["type"] for s in get_preset("frugal")["stages"]]
    dedup = ["exact_dedup", "containment_dedup"]
    assert qa == ["token_budget", *dedup, "lost_in_the_middle_order"]
    assert frugal == ["relevance_stop", *qa]
    assert get_preset("frugal")["format"] == get_preset("qa")["format"]
    qa_stages = get_preset("qa")["stages"]
    assert [s for s in get_preset("frugal")["stages"] if s["type"] != "relevance_stop"] == qa_stages


def test_frugal_sends_fewer_tokens_than_qa_on_real_lists(
    dev_queries: list[dict[str, Any]], cl100k: Any
) -> None:
    frugal, qa = Assembler("frugal", budget=1000), Assembler("qa", budget=1000)
    sent = full = 0
    for q in dev_queries[:20]:
        a = frugal.assemble(q["question"], q["chunks"])
        b = qa.assemble(q["question"], q["chunks"])
        assert len(cl100k.encode(a.text)) == a.tokens <= 1000
        ids = {i for c in a.chunks for i in (*c.member_ids, *c.duplicates)} | {
            d.chunk_id for d in a.report.dropped
        }
        assert ids >= {c["id"] for c in q["chunks"]}  # nothing lost
        sent, full = sent + a.tokens, full + b.tokens
    assert sent < 0.8 * full


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=15),
    budget=st.sampled_from([0, 20, 100, 300, 1000]),
    rel=st.floats(0, 1),
    floor=st.integers(0, 400),
)
def test_budget_and_nothing_lost_for_any_scores(
    scores: list[float], budget: int, rel: float, floor: int
) -> None:
    chunks = _chunks(scores)
    ctx = assemble("q", chunks, budget=budget, preset=_stop_config(min_relative=rel, min_tokens=floor))
    assert ctx.tokens <= budget
    ids = {i for c in ctx.chunks for i in c.member_ids} | {d.chunk_id for d in ctx.report.dropped}
    assert ids == {c["id"] for c in chunks}


@pytest.mark.parametrize("min_relative", [0.0, 0.2, 0.5, 1.0])
@pytest.mark.parametrize(
    "scores",
    [
        [1e308, -1e308, 1e308, 0.0, 1e308],
        [1.7976931348623157e308, -1.7976931348623157e308, 5.0],
        [-1e308, 1e308, -1e308],
        [1e-308, -1e-308, 0.0, 5e-324],
    ],
)
def test_a_chunk_holding_the_top_score_is_never_below_relevance(
    scores: list[float], min_relative: float
) -> None:
    """Issue 31 item 7: top - low overflowed to inf, so the threshold was inf (NaN at 0)."""
    result = RelevanceStop(min_relative=min_relative, min_tokens=0)(
        _chunk_objects(scores), meter=_meter(), budget=10_000
    )
    top = max(scores)
    kept = {c.id for c in result.chunks}
    assert {f"c{i}" for i, s in enumerate(scores) if s == top} <= kept
    for d in result.report.dropped:
        assert "inf" not in d.detail and "nan" not in d.detail
    if min_relative == 0.0:  # the threshold is the lowest score: nothing is under it
        assert len(kept) == len(scores)


def test_the_frugal_preset_keeps_the_top_chunks_on_extreme_scores() -> None:
    scores = [1e308, -1e308, 1e308, 0.0, 1e308]
    ctx = assemble("q", _chunks(scores), budget=150, preset="frugal")
    kept = {i for c in ctx.chunks for i in c.member_ids}
    assert "c0" in kept  # rank order: c0 is first among the top scores; the budget takes the rest
    assert not [
        d for d in ctx.report.dropped if d.reason == "below_relevance" and d.chunk_id in {"c0", "c2", "c4"}
    ]


def _chunk_objects(scores: list[float]) -> list[Any]:
    from contextwright import Chunk

    return [Chunk(_text(i), id=f"c{i}", score=s, rank=i) for i, s in enumerate(scores)]


def _meter() -> Any:
    from contextwright.render.format import get_format
    from contextwright.render.meter import Meter
    from contextwright.tokens import get_tokenizer

    return Meter(get_format("lean"), get_tokenizer("cl100k_base"))
