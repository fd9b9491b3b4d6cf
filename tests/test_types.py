"""Tests of the data model: Chunk.from_dict, ids, reports."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.core.errors import InputError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.report import Drop, Report, StageReport, StageResult


@pytest.mark.parametrize(
    ("data", "field", "expected"),
    [
        ({"content": "t"}, "text", "t"),
        ({"page_content": "t"}, "text", "t"),
        ({"text": "t", "rerank_score": 0.7}, "score", 0.7),
        ({"text": "t", "similarity": 0.6}, "score", 0.6),
        ({"text": "t", "relevance_score": "0.5"}, "score", 0.5),
        ({"text": "t", "document_id": "d1"}, "doc_id", "d1"),
        ({"text": "t", "chunk_index": 4}, "index", 4),
        ({"text": "t", "source_path": "a/b.pdf"}, "source", "a/b.pdf"),
        ({"text": "t", "file_name": "b.pdf"}, "source", "b.pdf"),
        ({"text": "t", "url": "https://x.org"}, "source", "https://x.org"),
        ({"text": "t", "page_number": 3}, "page", 3),
        ({"text": "t", "start_line": 12}, "line", 12),
        ({"text": "t", "row_number": 7}, "line", 7),
        ({"page_content": "t", "metadata": {"source": "m.pdf", "page": 2}}, "source", "m.pdf"),
        ({"page_content": "t", "metadata": {"source": "m.pdf", "page": 2}}, "page", 2),
    ],
)
def test_from_dict_accepts_the_field_names_users_already_have(
    data: dict, field: str, expected: object
) -> None:
    assert getattr(Chunk.from_dict(data), field) == expected


def test_from_dict_keeps_unknown_keys_in_metadata() -> None:
    chunk = Chunk.from_dict({"text": "t", "lang": "en", "metadata": {"author": "x"}})
    assert chunk.metadata == {"author": "x", "lang": "en"}


def test_missing_id_is_stable_and_derived_from_content() -> None:
    a, b = Chunk("Same text."), Chunk("Same text.")
    assert a.id == b.id and a.id.startswith("c")
    assert Chunk("Other text.").id != a.id


@pytest.mark.parametrize(
    ("data", "pattern"),
    [
        ({"score": 1.0}, r"chunks\[3\] has no text: expected one of the fields text, content"),
        ({"text": "   "}, r"chunks\[3\]\.text is empty or only whitespace"),
        ({"text": 5}, r"chunks\[3\]\.text must be a string; got int 5"),
        ({"text": "t", "score": float("nan")}, r"chunks\[3\]\.score must be a finite number; got nan"),
        ({"text": "t", "score": "high"}, r"chunks\[3\]\.score must be a number; got the string 'high'"),
        ({"text": "t", "rerank_score": [1]}, r"chunks\[3\]\.rerank_score must be a number; got list"),
        ({"text": "t", "page": "two"}, r"chunks\[3\]\.page must be an integer; got str 'two'"),
        ({"text": "t", "metadata": [1]}, r"chunks\[3\]\.metadata must be an object"),
        ({"text": "t", "embedding": ["a"]}, r"chunks\[3\]\.embedding must be a list of numbers"),
    ],
)
def test_invalid_input_names_position_field_value_and_fix(data: dict, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        Chunk.from_dict(data, position=3)


def test_non_mapping_item_is_a_clear_error() -> None:
    with pytest.raises(
        InputError, match=r"chunks\[0\] must be an object with at least a 'text' field; got str"
    ):
        chunks_from_dicts(["just a string"])  # type: ignore[list-item]


def test_input_error_is_also_a_value_error() -> None:
    with pytest.raises(ValueError, match="finite"):
        Chunk.from_dict({"text": "t", "score": math.inf})


def test_chunks_from_dicts_sets_rank_and_suffixes_repeated_content_ids() -> None:
    chunks = chunks_from_dicts([{"text": "dup"}, {"text": "dup"}, Chunk("c", id="x")])
    assert [c.rank for c in chunks] == [0, 1, 2]
    assert chunks[1].id == chunks[0].id + "-2"
    assert len({c.id for c in chunks}) == 3


def test_chunks_from_dicts_rejects_repeated_explicit_ids() -> None:
    with pytest.raises(InputError, match=r"chunks\[1\]\.id 'a' repeats chunks\[0\]\.id"):
        chunks_from_dicts([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}])


def test_to_dict_round_trips() -> None:
    chunk = Chunk.from_dict(
        {
            "id": "a",
            "text": "t",
            "score": 0.5,
            "doc_id": "d",
            "index": 2,
            "source": "s",
            "page": 1,
            "embedding": [0.1, 0.2],
            "extra": 1,
        },
        position=4,
    )
    again = Chunk.from_dict(chunk.to_dict())
    assert again == chunk
    assert again.metadata == chunk.metadata and again.embedding == chunk.embedding


def test_with_ops_appends_without_repeating() -> None:
    chunk = Chunk("t", id="a").with_ops("truncated").with_ops("truncated", "compressed", text="u")
    assert chunk.ops == ("truncated", "compressed") and chunk.text == "u"


def test_report_summary_and_reasons() -> None:
    stage = StageResult.of(
        "s",
        (Chunk("a", id="a"), Chunk("b", id="b")),
        (),
        dropped=[Drop("a", "over_budget"), Drop("b", "duplicate_of", "a")],
    )
    report = Report(
        stages=(stage.report,), input_chunks=20, input_tokens=1912, output_chunks=11, tokens=996, budget=1000
    )
    assert report.summary() == "20 → 11 chunks · 1,912 → 996 tokens (budget 1,000; 4 unused)"
    assert report.reasons() == {"over_budget": 1, "duplicate_of": 1}
    assert report.to_dict()["stages"][0]["dropped"][1] == {
        "chunk_id": "b",
        "reason": "duplicate_of",
        "related": "a",
    }


def test_stage_report_defaults_leave_tokens_and_time_to_the_pipeline() -> None:
    report = StageReport("s", 1, 1)
    assert report.tokens_in is None and report.ms == 0.0


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from(
    [
        "text",
        "content",
        "page_content",
        "score",
        "rerank_score",
        "doc_id",
        "index",
        "page",
        "line",
        "source",
        "url",
        "id",
        "title",
        "metadata",
        "embedding",
        "rank",
        "origin",
        "other",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_json, st.dictionaries(_keys, _json, max_size=6)), max_size=4))
def test_any_json_input_gives_chunks_or_an_input_error(items: list) -> None:
    try:
        chunks = chunks_from_dicts(items)
    except InputError as exc:
        message = str(exc)
        assert message.startswith("chunks[")  # names the item, never an empty error
        return
    assert len(chunks) == len(items) and len({c.id for c in chunks}) == len(chunks)
    assert all(c.text.strip() and math.isfinite(c.score) for c in chunks)


# Values a retriever sends, and the odd ones the general path rejects or converts.
_plain_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["a\ud800b", " ", "\u200b", "t\u00e9", "7"]),
    st.lists(st.integers(), max_size=2),
)
_plain_keys = st.sampled_from(
    [
        "text",
        "content",
        "score",
        "similarity",
        "doc_id",
        "id",
        "chunk_id",
        "index",
        "page",
        "line",
        "source",
        "title",
        "section",
        "rank",
        "has_answer",
        "other",
        "caf\u00e9",
        "origin",
    ]
)


def _outcome(items: list, **kwargs: object) -> object:
    empty: list[Drop] = []
    try:
        chunks = chunks_from_dicts(items, empty=empty, **kwargs)  # type: ignore[arg-type]
    except InputError as exc:
        return ("error", str(exc))
    return [(c.to_dict(), dict(c.metadata)) for c in chunks], empty


# Mostly a chunk with a valid text, so that the fast path runs and each odd value meets it.
_plain_dict = st.builds(
    lambda text, rest: {**text, **rest},
    st.fixed_dictionaries({"text": st.sampled_from(["Paris is in France.", "caf\u00e9 [1]", "x"])}),
    st.dictionaries(_plain_keys, _plain_value, max_size=4),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(_plain_dict, st.dictionaries(_plain_keys, _plain_value, max_size=6)), max_size=4))
def test_the_fast_path_for_plain_dicts_gives_what_the_general_path_gives(items: list) -> None:
    from types import MappingProxyType

    # A read-only view is a Mapping but not a dict, so it always takes the general path.
    general = [MappingProxyType(d) for d in items]
    assert _outcome(items) == _outcome(general)
    for d, g in zip(items, general, strict=True):
        try:
            expected: object = Chunk.from_dict(g, position=3).to_dict()
        except InputError as exc:
            expected = str(exc)
        try:
            got: object = Chunk.from_dict(d, position=3).to_dict()
        except InputError as exc:
            got = str(exc)
        assert got == expected


def test_the_fast_path_serves_the_dev_data(dev_queries: list) -> None:
    from contextwright.model.chunk import _from_plain

    items = [c for q in dev_queries[:20] for c in q["chunks"]]
    assert all(_from_plain(c, i) is not None for i, c in enumerate(items))


def test_the_fast_path_puts_every_field_in_its_place() -> None:
    from types import MappingProxyType

    full = {
        "text": "Paris is in France.",
        "id": "i",
        "score": 0.5,
        "doc_id": "d",
        "index": 2,
        "source": "s.md",
        "title": "T",
        "section": "S",
        "page": 3,
        "line": 4,
        "rank": 7,
        "extra": True,
    }
    for data in (full, {"content": "x", "chunk_id": "c", "url": "u", "heading": "h", "page_number": 9}):
        fast, general = Chunk.from_dict(data), Chunk.from_dict(MappingProxyType(data))
        assert fast.to_dict() == general.to_dict() and fast.metadata == general.metadata


def test_a_superscript_or_non_ascii_digit_index_is_an_input_error_not_a_crash() -> None:
    """``"²".isdigit()`` is true but ``int("²")`` raises; found by the fast-path property (issue 25 run)."""
    import pytest

    from contextwright.core.errors import InputError
    from contextwright.model.chunk import Chunk

    for bad in ("²", "٣", "-¹"):
        with pytest.raises(InputError, match="index must be an integer"):
            Chunk.from_dict({"text": "a passage", "index": bad})
    assert Chunk.from_dict({"text": "a passage", "index": " 12 "}).index == 12


def test_a_chunk_and_a_context_pickle_and_copy() -> None:
    """Metadata is a read-only view (``MappingProxyType``, which pickle refuses): a chunk travels by
    its field values, so a context can go to a worker pool or a pickle-backed cache."""
    import copy
    import pickle
    from types import MappingProxyType

    import contextwright

    items = [{"text": "Paris is in France.", "id": "a", "lang": "en"}, {"text": "Rome is in Italy."}]
    ctx = contextwright.assemble("Where is Paris?", items, budget=100)
    back = pickle.loads(pickle.dumps(ctx))
    assert back.text == ctx.text and back.chunks == ctx.chunks and back.report.tokens == ctx.report.tokens
    assert type(back.chunks[0].metadata) is MappingProxyType and back.chunks[0].metadata == {"lang": "en"}
    own = Chunk("t", id="c", metadata={"tags": ["x"]})  # a dict given directly stays a dict
    deep = copy.deepcopy(own)
    assert type(deep.metadata) is dict and deep.metadata == own.metadata
    assert deep.metadata["tags"] is not own.metadata["tags"] and copy.copy(own) == own
