"""Tests of citation building and resolution."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.model.chunk import Chunk
from contextwright.render.cite import build_citations, parse_citation_numbers, resolve_citations
from contextwright.render.format import get_format


@pytest.mark.parametrize(
    ("answer", "numbers"),
    [
        ("Paris [1].", [1]),
        ("Both [1, 3] agree.", [1, 3]),
        ("See [1-3].", [1, 2, 3]),
        ("See [2–4]", [2, 3, 4]),
        ("Per [SOURCE 2] and [source 5].", [2, 5]),
        ("[2][1] and again [2]", [2, 1]),
        ("The war [1914-1918] ended.", []),
        ("In [1914] it began.", []),
        ("no citations here (1)", []),
        ("[1; 4 and 6]", [1, 4, 6]),
    ],
)
def test_parse_citation_numbers(answer: str, numbers: list[int]) -> None:
    assert parse_citation_numbers(answer) == numbers


def test_parse_ignores_huge_ranges() -> None:
    assert parse_citation_numbers("[1-99999]") == []


def test_resolve_maps_numbers_to_sources_and_flags_missing() -> None:
    blocks = [
        Chunk("a", id="a", source="a.md"),
        Chunk("b", id="b", source="b.md"),
        Chunk("c", id="c", source="c.md"),
    ]
    cites = build_citations(blocks, get_format("sources"))
    assert [c.label for c in cites] == ["[SOURCE 1]", "[SOURCE 2]", "[SOURCE 3]"]
    result = resolve_citations("Yes [SOURCE 2], also [7] and [1-2].", cites)
    assert [c.source for c in result.cited] == ["b.md", "a.md"]
    assert result.missing == (7,) and not result.ok
    assert [c.source for c in result.uncited] == ["c.md"]


def test_resolve_flags_an_answer_that_is_only_a_citation() -> None:
    """``bare``: the model pointed at a block instead of answering (what ``eval --reader`` counts
    as ``bare%``); a year in brackets is an answer, not a citation, so not bare."""
    cites = build_citations(
        [Chunk("a", id="a", source="a.md"), Chunk("b", id="b", source="b.md")], get_format("numbered")
    )
    for answer in ("[1]", " [1, 2]. ", "The answer is [2].", "See [1-2]", "Source: [1]"):
        result = resolve_citations(answer, cites)
        assert result.bare and result.numbers, answer
    for answer in ("Paris [1]", "Paris", "[1914]", "in 1912 [2]", "", "I don't know."):
        assert not resolve_citations(answer, cites).bare, answer
    # a citation the context lacks is still no answer: bare, and missing
    missing = resolve_citations("[7]", cites)
    assert missing.bare and missing.missing == (7,) and not missing.ok


def test_citation_carries_snippet_span_and_merged_sources() -> None:
    chunk = Chunk(
        "word " * 100,
        id="m",
        doc_id="d",
        index=4,
        also_sources=("mirror.md",),
        chunk_ids=("m1", "m2"),
        metadata={"index_span": (4, 5)},
    )
    (cite,) = build_citations([chunk], get_format("xml"))
    assert len(cite.snippet) == 200 and cite.snippet.endswith("…")
    assert cite.chunk_ids == ("m1", "m2") and cite.also_sources == ("mirror.md",)
    assert cite.index_span == (4, 5)


def _cites(n: int) -> tuple:  # type: ignore[type-arg]
    return build_citations(
        [Chunk(f"t{i}", id=f"c{i}", source=f"{i}.md") for i in range(n)], get_format("numbered")
    )


@pytest.mark.parametrize(
    ("answer", "numbers", "missing"),
    [
        ("the war of [1914-1918]", (), ()),  # a year range
        ("founded in [1889] and rebuilt [1901, 1902]", (), ()),  # years
        ("see pages [112-118] of the report", (), ()),  # a page range far beyond 3 blocks
        ("footnotes[^2] and [^note]", (), ()),  # footnote markers
        ("as shown [2-3], not [7]", (2, 3, 7), (7,)),  # a plausible range, and a hallucinated number
        ("both [1, 1914]", (1,), ()),  # the year inside a list is not a citation
        ("range [3-5]", (3, 4, 5), (4, 5)),  # just beyond: flagged, not ignored
    ],
)
def test_implausible_block_numbers_are_not_citations(
    answer: str, numbers: tuple[int, ...], missing: tuple[int, ...]
) -> None:
    result = resolve_citations(answer, _cites(3))
    assert result.numbers == numbers
    assert result.missing == missing
    assert result.ok is (not missing)


def test_a_context_with_many_blocks_cites_four_digit_numbers() -> None:
    assert parse_citation_numbers("[1200]", blocks=1500) == [1200]


def test_a_dropped_duplicates_ids_page_and_line_reach_the_survivors_citation() -> None:
    from contextwright import assemble

    chunks = [
        {"id": "a", "text": "Same text here.", "score": 0.9, "source": "a.pdf", "page": 3, "line": 10},
        {"id": "b", "text": "Same text here.", "score": 0.5, "source": "b.pdf", "page": 7, "line": 42},
    ]
    ctx = assemble("q", chunks, budget=300, format="numbered")
    (cite,) = ctx.citations
    assert cite.duplicates == ("b",)
    entry = {"id": "b", "source": "b.pdf", "page": 7, "line": 42, "held": ((0, 14),), "whole": True}
    assert cite.also_at == (entry,) and cite.also_sources == ("b.pdf",)
    assert cite.to_dict()["also_at"] == [entry]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["a", "b", " ", "  ", "\n", "\t", "é", "\u00a0", "\u2003", "\u3000", "\x85", "x" * 50]
        ),
        max_size=40,
    ),
    st.integers(0, 3),
)
def test_snippet_fast_path_equals_collapsing_the_first_600_characters(pieces: list[str], extra: int) -> None:
    from contextwright.render.cite import SNIPPET_CHARS, _snippet

    text = "".join(pieces) * (extra + 1)
    expected = " ".join(text[: SNIPPET_CHARS * 3].split())
    if len(expected) > SNIPPET_CHARS:
        expected = expected[: SNIPPET_CHARS - 1] + "…"
    assert _snippet(text) == expected


def test_the_only_printable_whitespace_is_the_space() -> None:
    # What the snippet fast path relies on: a printable head has no whitespace to collapse but " ".
    assert [c for c in map(chr, range(0x110000)) if c.isspace() and c.isprintable()] == [" "]


def test_every_citation_field_comes_from_its_chunk_field() -> None:
    c = Chunk(
        "text",
        id="i",
        score=0.5,
        doc_id="d",
        index=2,
        source="s.md",
        title="T",
        section="S",
        page=3,
        line=4,
        also_sources=("o.md",),
        spans=((0, 4),),
        duplicates=("dup",),
        also_at=(("dup", "o.md", 5, 6),),
        provenance=(("bm25", 1, 0.5),),
    )
    (cite,) = build_citations([c], get_format("lean"))
    assert (cite.index, cite.label, cite.chunk_ids, cite.doc_id, cite.source, cite.title) == (
        1, "[1]", ("i",), "d", "s.md", "T",
    )  # fmt: skip
    assert (cite.section, cite.page, cite.line, cite.score, cite.snippet) == ("S", 3, 4, 0.5, "text")
    assert (cite.also_sources, cite.index_span, cite.spans, cite.duplicates) == (
        ("o.md",),
        (2, 2),
        ((0, 4),),
        ("dup",),
    )
    assert [dict(a) for a in cite.also_at] == [{"id": "dup", "source": "o.md", "page": 5, "line": 6}]
    assert cite.provenance == (("bm25", 1, 0.5),)


def _naive_numbers(answer: str, blocks: int | None) -> list[int]:
    """The rule of parse_citation_numbers, every range walked in full (the code before issue 31)."""
    from contextwright.render.cite import _BRACKET, _ITEM, _number

    seen: dict[int, None] = {}
    year = max(1000, (blocks or 0) + 1)
    limit = max(blocks + 5, 2 * blocks) if blocks is not None else None
    for m in _BRACKET.finditer(answer):
        for item in _ITEM.finditer(m.group(1)):
            if item.group(3) is not None:
                if (k := _number(item.group(3))) < year:
                    seen.setdefault(k, None)
                continue
            lo, hi = _number(item.group(1)), _number(item.group(2))
            if not 1 <= lo <= hi or hi >= year:
                continue
            if (limit is not None and hi > limit) or (limit is None and hi - lo > 1000):
                continue
            for k in range(lo, hi + 1):
                seen.setdefault(k, None)
    return list(seen)


@settings(max_examples=400, deadline=None)
@given(
    items=st.lists(
        st.lists(
            st.one_of(
                st.integers(0, 60).map(str),
                st.tuples(st.integers(0, 60), st.integers(0, 60)).map(lambda t: f"{t[0]}-{t[1]}"),
            ),
            min_size=1,
            max_size=5,
        ),
        min_size=1,
        max_size=8,
    ),
    blocks=st.sampled_from([None, 1, 3, 10, 30]),
)
def test_ranges_walk_only_unseen_numbers_with_the_same_result(
    items: list[list[str]], blocks: int | None
) -> None:
    answer = " and ".join("[" + ", ".join(group) + "]" for group in items)
    assert parse_citation_numbers(answer, blocks=blocks) == _naive_numbers(answer, blocks)


@pytest.mark.parametrize(
    "answer",
    [
        "[" + "1-1000," * 14000 + "1]",  # the shape: 0.42 s of CPU per request before
        "[" + ", ".join(f"{i}-999" for i in range(1, 1000)) * 12 + "]",
        " ".join(f"[{i}-{1000 - i}]" for i in range(1, 500)) * 20,
    ],
    ids=["repeated range", "nested starts", "shrinking ranges"],
)
def test_resolving_a_100k_answer_of_ranges_is_linear(answer: str) -> None:
    import time

    start = time.perf_counter()
    numbers = parse_citation_numbers(answer[:100_000], blocks=1000)
    assert time.perf_counter() - start < 0.5
    assert len(numbers) <= 1000
