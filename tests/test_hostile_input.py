"""Hostile input to the library gets a clear error naming the field, or a reported drop (issue 11, items 6-7)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright import Assembler, Chunk, assemble
from contextwright.core.errors import ConfigError, InputError

SURROGATE = "\ud800"


@pytest.mark.parametrize(
    ("chunk", "field"),
    [
        ({"text": "abc" + SURROGATE}, "chunks[0].text"),
        ({"text": "a", "title": "t" + SURROGATE}, "chunks[0].title"),
        ({"text": "a", "source": SURROGATE}, "chunks[0].source"),
        ({"text": "a", "section": "\udfff"}, "chunks[0].section"),
        ({"text": "a", "doc_id": "d" + SURROGATE}, "chunks[0].doc_id"),
        ({"text": "a", "id": SURROGATE}, "chunks[0].id"),
        ({"text": "a", "metadata": {"page_summary": SURROGATE}}, "chunks[0].metadata.page_summary"),
        ({"text": "a", "metadata": {"k": [1, {"x": SURROGATE}]}}, "chunks[0].metadata.k[1].x"),
        ({"text": "a", "extra" + SURROGATE: 1}, "chunks[0]"),
        ({"text": "a", "origin": SURROGATE}, "chunks[0].origin"),
    ],
)
def test_lone_surrogates_are_an_input_error_naming_the_field(chunk: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError, match="surrogate") as info:
        assemble("q", [chunk], budget=100)
    assert field in str(info.value)


def test_lone_surrogates_in_query_chunk_objects_and_history() -> None:
    with pytest.raises(InputError, match=r"query.*surrogate"):
        assemble("q" + SURROGATE, [{"text": "a"}], budget=100)
    with pytest.raises(InputError, match=r"chunks\[0\]\.title.*surrogate"):
        assemble("q", [Chunk("a", title=SURROGATE)], budget=100)
    with pytest.raises(InputError, match=r"history\[0\]\.content.*surrogate"):
        assemble(
            "q",
            [{"text": "a"}],
            budget=100,
            history_tokens=100,
            history=[{"role": "user", "content": SURROGATE}],
        )


def test_surrogates_in_stage_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"separator.*surrogate"):
        Assembler({"stages": [{"type": "group_merge", "separator": SURROGATE}]}, budget=100)


@pytest.mark.parametrize("text", ["\u200b", "\u00a0\u3000", "\ufeff\u202e\u2066", "\u2800"])
def test_texts_without_a_visible_character_are_dropped_as_empty(text: str) -> None:
    # Invisible-only text carries nothing to cite: like whitespace-only text (issue 13) it is dropped
    # with reason `empty` and reported, never rendered (where it could forge a blank-line boundary).
    ctx = assemble(
        "q", [{"id": "blank", "text": text}, {"id": "real", "text": "Real.", "score": 1}], budget=100
    )
    assert [c.id for c in ctx.chunks] == ["real"]
    assert {d.chunk_id: d.reason for d in ctx.report.dropped} == {"blank": "empty"}


@pytest.mark.parametrize("text", ["x" * 1_000_001, "word " * 250_000, "a\n" * 300_000])
def test_a_million_character_chunk_is_an_over_budget_drop(text: str) -> None:
    chunks = [{"id": "big", "text": text, "score": 2}, {"id": "s", "text": "small", "score": 1}]
    # Whole-chunk selection: counted exactly (no tokenizer error), dropped like any misfit.
    ctx = assemble("q", chunks, budget=100, preset="citations")
    assert [c.id for c in ctx.chunks] == ["s"]
    assert {d.chunk_id: d.reason for d in ctx.report.dropped} == {"big": "over_budget"}
    # The default preset fills the budget in rank order: the misfit keeps a window that fits
    # (reported as truncated), or is dropped when it has no sentence or word boundary to cut at.
    ctx = assemble("q", chunks, budget=100)
    assert ctx.tokens <= 100
    if "big" in [c.id for c in ctx.chunks]:
        assert any(c.chunk_id == "big" and c.action == "truncated" for c in ctx.report.changed)
    else:
        assert {d.chunk_id: d.reason for d in ctx.report.dropped}.get("big") == "over_budget"


texts_with_surrogates = st.text(
    st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), min_size=1, max_size=8
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=texts_with_surrogates, field=st.sampled_from(["text", "title", "source", "section", "doc_id"]))
def test_any_string_with_a_surrogate_is_an_input_error_or_assembles(value: str, field: str) -> None:
    chunk = {"text": "visible", field: value} if field != "text" else {"text": "v " + value}
    has_surrogate = any(0xD800 <= ord(c) < 0xE000 for c in value)
    if has_surrogate:
        with pytest.raises(InputError, match="surrogate"):
            assemble("q", [chunk], budget=200)
    else:
        assemble("q", [chunk], budget=200).text.encode("utf-8")
