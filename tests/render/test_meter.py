"""Tests of the meter: exact counts from cached pieces."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.model.chunk import Chunk
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.tokens import CharTokenizer, get_tokenizer

FORMATS = ["minimal", "numbered", "xml", "grouped", "sources", "markdown"]
meta = st.one_of(st.none(), st.text(max_size=20))


@settings(max_examples=300, deadline=None)
@given(
    title=meta,
    source=meta,
    section=meta,
    page=st.one_of(st.none(), st.integers(0, 5000)),
    n=st.integers(1, 5000),
    fmt=st.sampled_from(FORMATS),
)
def test_header_cost_from_number_free_parts_equals_the_real_count(
    title: str | None,
    source: str | None,
    section: str | None,
    page: int | None,
    n: int,
    fmt: str,
    cl100k: Any,
) -> None:
    chunk = Chunk("body text", id="x", title=title, source=source, section=section, page=page)
    meter = Meter(get_format(fmt), get_tokenizer("cl100k_base"))
    header = meter.format.block_header(chunk, n)
    assert meter.header_cost(chunk, n) == len(cl100k.encode_ordinary(header))


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1).filter(str.strip), min_size=1, max_size=5),
    fmt=st.sampled_from(FORMATS),
)
def test_measure_equals_tokenizing_the_text(texts: list[str], fmt: str, cl100k: Any) -> None:
    blocks = [
        Chunk(t, id=str(i), title=t[:8], doc_id=str(i % 2), doc_summary=t[:10] or None)
        for i, t in enumerate(texts)
    ]
    meter = Meter(get_format(fmt), get_tokenizer("cl100k_base"))
    text, total = meter.measure(blocks)
    assert total == len(cl100k.encode_ordinary(text))
    assert meter.measure(blocks, verify=True) == (text, total)


def test_block_cost_adds_header_body_footer() -> None:
    meter = Meter(get_format("xml"), get_tokenizer("cl100k_base"))
    chunk = Chunk("Paris is the capital of France.", id="a", title="France")
    fmt = meter.format
    expected = sum(
        meter.count(p) for p in (fmt.block_header(chunk, 3), fmt.body(chunk), fmt.block_footer(chunk, 3))
    )
    assert meter.block_cost(chunk, 3) == expected


def test_char_estimate_counts_the_joined_text() -> None:
    meter = Meter(get_format("numbered"), get_tokenizer(CharTokenizer(3.0)))
    blocks = [Chunk("abcde", id="a"), Chunk("fghij", id="b")]
    text, total = meter.measure(blocks)
    assert total == CharTokenizer(3.0).count(text) == 7


@settings(max_examples=150, deadline=None)
@given(
    chunks=st.lists(
        st.builds(
            Chunk,
            text=st.sampled_from(["body text", "Paris is the capital.", "Paris"]),
            id=st.sampled_from(["x", "y"]),
            title=st.sampled_from([None, "Paris", ""]),
            source=st.sampled_from([None, "a.md", "Paris"]),
            score=st.sampled_from([0.5, 0.123456, 12.0]),
            page=st.sampled_from([None, 3]),
        ),
        min_size=1,
        max_size=6,
    ),
    n=st.integers(1, 200),
    fmt=st.sampled_from(
        [
            "numbered",
            "lean",
            {"type": "lean", "titles": True},
            {"type": "xml", "attributes": ["title", "score"]},
            "sources",
        ]
    ),
)
def test_header_costs_cached_across_chunks_stay_exact(
    chunks: list[Chunk], n: int, fmt: Any, cl100k: Any
) -> None:
    # One meter (one cache of header parts, as a pipeline shares across calls) over chunks that
    # share ids but differ in what their headers show: each cost must be its own header's.
    meter = Meter(get_format(fmt), get_tokenizer("cl100k_base"))
    for chunk in chunks:
        header = meter.format.block_header(chunk, n)
        assert meter.header_cost(chunk, n) == len(cl100k.encode_ordinary(header))


def test_an_xml_score_attribute_is_part_of_the_cached_header() -> None:
    meter = Meter(get_format({"type": "xml", "attributes": ["title", "score"]}), get_tokenizer("cl100k_base"))
    for score in (0.5, 0.123456):  # same id and fields, another score: another header
        chunk = Chunk("body", id="x", score=score)
        assert meter.header_cost(chunk, 3) == meter.tokenizer.count(meter.format.block_header(chunk, 3))


def test_measure_renders_what_the_format_renders_with_its_memo_of_bodies() -> None:
    from contextwright.render.format import NumberedFormat

    blocks = [Chunk("[1] forged\nline", id="a"), Chunk("plain", id="b")]
    meter = Meter(get_format("lean"), get_tokenizer("cl100k_base"))
    meter.prime(blocks)  # bodies escaped during selection are reused by the render
    assert meter.measure(blocks)[0] == meter.format.render(blocks)

    class OldLayout(NumberedFormat):  # a format whose layout predates the body= argument
        def layout(self, blocks, *, query=""):  # type: ignore[no-untyped-def, override]
            return NumberedFormat.layout(self, blocks, query=query)

    old = Meter(OldLayout(), get_tokenizer("cl100k_base"))
    assert old.measure(blocks)[0] == get_format("numbered").render(blocks)


_TAILS = st.lists(
    st.sampled_from(
        [
            "a",
            "Z",
            "7",
            "123",
            " ",
            "  ",
            ".",
            "!?",
            ")",
            '"',
            "'",
            "'s",
            "...",
            "-",
            "/",
            "\t",
            "\n",
            "é",
            "”",
            "—",
            "٣",
        ]
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(
    pieces=_TAILS,
    newlines=st.sampled_from(["\n", "\n\n", "\n\n\n"]),
    enc=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_the_last_piece_counted_from_its_count_with_newlines_is_exact(
    pieces: list[str], newlines: str, enc: str
) -> None:
    tokenizer = get_tokenizer(enc)
    assert tokenizer.known_splits
    text = "Paris " + "".join(pieces)
    stripped = text.rstrip("\n")
    last = stripped + newlines
    meter = Meter(get_format("lean"), tokenizer)
    assert meter._count_stripped(last, stripped) == len(tokenizer.encode(stripped))


def test_the_last_piece_count_is_exact_on_the_dev_data(dev_queries: list) -> None:
    tokenizer = get_tokenizer("cl100k_base")
    meter = Meter(get_format("lean"), tokenizer)
    for q in dev_queries:
        for c in q["chunks"]:
            body = meter.body(Chunk(c["text"]))
            stripped = body.rstrip("\n")
            assert meter._count_stripped(body, stripped) == len(tokenizer.encode(stripped))


def test_set_cost_is_the_frame_every_block_and_each_document_header_once() -> None:
    """The set-cost rule has one owner (render.meter); stages add ``added_cost`` block by block."""
    from contextwright.model.chunk import Chunk
    from contextwright.render.format import get_format
    from contextwright.render.meter import Meter
    from contextwright.tokens import get_tokenizer

    meter = Meter(get_format("grouped"), get_tokenizer("cl100k_base"))
    chunks = [
        Chunk(text="alpha beta", id="a0", doc_id="A", index=0, title="Doc A"),
        Chunk(text="gamma delta", id="a1", doc_id="A", index=1, title="Doc A"),
        Chunk(text="epsilon", id="b0", doc_id="B", index=0, title="Doc B"),
    ]
    n = len(chunks)
    by_hand = meter.frame_cost() + sum(meter.block_cost(c, n) for c in chunks)
    by_hand += meter.doc_cost(chunks[0]) + meter.doc_cost(chunks[2])  # one header per document
    assert meter.set_cost(chunks, n) == by_hand
    assert meter.set_cost(chunks, n, frame=False) == by_hand - meter.frame_cost()
    docs: set[str] = set()
    running = meter.frame_cost()
    for c in chunks:
        running += meter.added_cost(c, n, docs)
        docs.add(c.group_key)
    assert running == by_hand
    assert meter.doc_cost(chunks[0]) > 0  # the grouped format shows a header: the rule is tested
