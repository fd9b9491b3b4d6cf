"""Tests of per-document summaries."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright import Assembler
from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.base import stage_from_dict, stage_to_dict
from contextwright.stages.contextualize import DocSummaries

SUMMARY = "The Nobel Prize in Physics has been awarded since 1901 by the Royal Swedish Academy of Sciences."


def _chunks() -> tuple[Chunk, ...]:
    return chunks_from_dicts(
        [
            {
                "id": "p0",
                "text": "Röntgen received the first prize.",
                "doc_id": "physics",
                "index": 0,
                "score": 0.9,
                "title": "Nobel Prize in Physics",
            },
            {
                "id": "p1",
                "text": "Bardeen won it twice.",
                "doc_id": "physics",
                "index": 1,
                "score": 0.4,
                "metadata": {"page_summary": "Page summary of physics."},
            },
            {
                "id": "l0",
                "text": "The literature prize goes to an author.",
                "doc_id": "lit",
                "index": 0,
                "score": 0.6,
                "metadata": {"doc_summary": "About the literature prize."},
            },
            {"id": "x", "text": "No summary anywhere.", "doc_id": "other", "score": 0.1},
        ]
    )


def test_mapping_wins_and_every_chunk_of_a_document_gets_the_same_summary() -> None:
    result = DocSummaries(summaries={"physics": SUMMARY})(_chunks())
    by_id = {c.id: c for c in result.chunks}
    assert by_id["p0"].doc_summary == by_id["p1"].doc_summary == SUMMARY
    assert by_id["l0"].doc_summary == "About the literature prize."
    assert by_id["x"].doc_summary is None
    assert [(c.chunk_id, c.action) for c in result.report.changed] == [
        ("p0", "doc_summary"),
        ("l0", "doc_summary"),
    ]


def test_metadata_summary_of_the_best_ranked_chunk_decides_for_its_document() -> None:
    result = DocSummaries()(_chunks())
    by_id = {c.id: c for c in result.chunks}
    # p0 (best) has none, p1 has a page_summary: it applies to the whole document
    assert by_id["p0"].doc_summary == by_id["p1"].doc_summary == "Page summary of physics."


def test_summary_is_rendered_once_per_document_and_counted_in_the_budget(cl100k: Any) -> None:
    config = {
        "stages": [
            {"type": "doc_summaries", "summaries": {"physics": SUMMARY}},
            {"type": "token_budget", "policy": "blocks"},
            {"type": "document_order"},
        ],
        "format": "xml",
    }
    chunks = [c.to_dict() for c in _chunks()]
    ctx = Assembler(config, budget=1000).assemble("who won", chunks)
    assert ctx.text.count(SUMMARY) == 1
    assert ctx.text.index(SUMMARY) < ctx.text.index("Röntgen") < ctx.text.index("Bardeen")
    assert ctx.tokens == len(cl100k.encode(ctx.text)) <= 1000
    # with exactly the room the text needs, the summaries still fit; one token less and a document goes
    tight = Assembler(config, budget=ctx.tokens).assemble("who won", chunks)
    assert tight.text == ctx.text
    tighter = Assembler(config, budget=ctx.tokens - 1).assemble("who won", chunks)
    assert len(tighter.chunks) < len(ctx.chunks)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 400), st.text(min_size=1, max_size=300).filter(str.strip))
def test_budget_stays_exact_with_summaries(cl100k: Any, budget: int, summary: str) -> None:
    config = {
        "stages": [
            {"type": "doc_summaries", "summaries": [["physics", summary], ["lit", summary[::-1]]]},
            {"type": "token_budget", "policy": "blocks"},
            {"type": "document_order"},
        ]
    }
    ctx = Assembler(config, budget=budget).assemble("q", [c.to_dict() for c in _chunks()])
    assert ctx.tokens == len(cl100k.encode(ctx.text)) <= budget


def test_a_dict_is_stored_as_pairs_and_round_trips_through_config() -> None:
    stage = DocSummaries(summaries={"a": "A.", "b": "B."})
    assert stage.summaries == (("a", "A."), ("b", "B."))
    assert stage_from_dict(json.loads(json.dumps(stage_to_dict(stage)))) == stage


@pytest.mark.parametrize(
    ("settings_", "match"),
    [
        (
            {"summaries": [("a", 1)]},
            r"summaries entries must be \[doc_id, summary\] string pairs; got \('a', 1\)",
        ),
        ({"summaries": "abc"}, r"summaries must be a mapping doc_id -> summary .*; got str"),
        ({"metadata_keys": "doc_summary"}, r"metadata_keys must be a list of strings; got 'doc_summary'"),
    ],
)
def test_bad_settings_are_rejected(settings_: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        DocSummaries(**settings_)
