"""Span-honest provenance: which part of a block another place holds (issue 31, item 6)."""

from __future__ import annotations

import pytest

from contextwright import Chunk, assemble
from contextwright.model.provenance import MAX_HELD_CHECKS, BlockWords, held_spans

PARAGRAPH = (
    "Acme Corp reported revenue of 4.2 billion dollars for fiscal 2025, up 12 percent from the prior "
    "year, driven by growth in its cloud services segment."
)
INJECTED = "The CFO also admitted that the figures were fabricated and the auditors resigned."


def test_a_copy_of_the_whole_block_holds_it_whole_in_other_quotes_and_case() -> None:
    copy = "Mirrored from example.org\n" + PARAGRAPH.upper().replace(",", " \u2014")
    assert held_spans(PARAGRAPH, copy) == (((0, len(PARAGRAPH) - 1),), True)


def test_a_copy_of_part_of_the_block_holds_only_that_part() -> None:
    block = f"{PARAGRAPH} {INJECTED}"
    spans, whole = held_spans(block, PARAGRAPH)
    assert not whole and spans == ((0, len(PARAGRAPH) - 1),)
    spans, whole = held_spans(block, INJECTED)
    assert not whole and [block[a:b] for a, b in spans or ()] == [INJECTED.rstrip(".")]


@pytest.mark.parametrize(
    ("block", "copy", "whole"),
    [
        ("Paris is in France.", "They say Paris is in France, mostly.", True),
        ("Paris is in France.", "Paris is in Spain.", False),
        ("Paris is in France.", "France is in Paris.", False),  # the words, not in order
        ("???", "???", False),  # nothing a reader could check
    ],
)
def test_a_short_block_must_appear_in_the_copy_whole(block: str, copy: str, whole: bool) -> None:
    assert held_spans(block, copy)[1] is whole


def test_stitched_runs_do_not_make_a_copy_hold_the_whole_block() -> None:
    words = [f"w{i}" for i in range(40)]
    block = " ".join(words)
    copy = " ".join(words[:25]) + " unrelated filler here. " + " ".join(words[15:])
    spans, whole = held_spans(block, copy)
    assert spans == ((0, len(block)),) and not whole  # every word is in some run, not in one


def test_a_compressed_block_is_judged_on_what_the_model_reads() -> None:
    chunks = [
        {"id": "A", "text": f"{PARAGRAPH} {INJECTED}", "score": 0.91, "source": "random-blog"},
        {"id": "B", "text": PARAGRAPH, "score": 0.90, "source": "sec.gov/10-K"},
    ]
    ctx = assemble("revenue", chunks, preset="qa", budget=500)
    (entry,) = ctx.citations[0].also_at
    assert ctx.citations[0].also_sources == () and entry["whole"] is False
    cut = ctx.chunks[0].with_ops("compressed", text=PARAGRAPH, spans=((0, len(PARAGRAPH)),))
    from contextwright.render.cite import build_citations
    from contextwright.render.format import get_format

    (cite,) = build_citations([cut], get_format("numbered"))
    assert cite.also_sources == ("sec.gov/10-K",)  # the injected sentence is no longer read


def test_a_merged_passage_names_a_members_source_only_for_its_part() -> None:
    first = "The mill on the river was built in 1820 by the Harlow family of weavers and dyers."
    second = "It burned down in 1901 and was rebuilt in brick by the town council two years later."
    chunks = [
        {"id": "d#0", "text": first, "score": 0.9, "doc_id": "d", "index": 0, "source": "a.md"},
        {"id": "d#1", "text": second, "score": 0.8, "doc_id": "d", "index": 1, "source": "b.md"},
    ]
    ctx = assemble("mill", chunks, preset="documents", budget=400)
    (cite,) = ctx.citations
    assert cite.chunk_ids == ("d#0", "d#1") and "b.md" not in cite.also_sources
    (entry,) = [a for a in cite.also_at if a["id"] == "d#1"]
    text = ctx.chunks[0].text
    assert entry["whole"] is False and [text[a:b] for a, b in entry["held"]] == [second.rstrip(".")]


def test_past_the_check_limit_copies_are_listed_never_named() -> None:
    block = "A long enough block of words that many distinct copies fold into for this test."
    copies = tuple((f"c{i}", f"{block} copy {i}") for i in range(MAX_HELD_CHECKS + 5))
    chunk = Chunk(
        block,
        id="s",
        source="s.md",
        duplicates=tuple(i for i, _ in copies),
        also_sources=tuple(f"{i}.md" for i, _ in copies),
        also_at=tuple((i, f"{i}.md", None, None) for i, _ in copies),
        copies=copies,
    )
    from contextwright.render.cite import build_citations
    from contextwright.render.format import get_format

    (cite,) = build_citations([chunk], get_format("numbered"))
    assert len(cite.also_sources) == MAX_HELD_CHECKS
    assert all(a["held"] is None and a["whole"] is False for a in cite.also_at[MAX_HELD_CHECKS:])


def test_block_words_checks_many_copies_against_one_block() -> None:
    words = BlockWords(PARAGRAPH)
    assert words.held(PARAGRAPH)[1] and not words.held(INJECTED)[1]


@pytest.mark.parametrize(
    "text",
    [
        "Plain words, with_underscore 42.",
        "Caf\u00e9 \u2013 \ufb01ne \u0130stanbul \u03a3\u03c3 x\u00b2 \u2460",
        "",
        "... !",
    ],
)
def test_block_words_are_the_texts_words_and_places(text: str) -> None:
    """BlockWords splits once (words and gaps) instead of matching each word: the same words,
    normalized one by one, at the same places."""
    import re
    import unicodedata

    from contextwright.model.provenance import BlockWords

    block = BlockWords(text)
    found = list(re.finditer(r"\w+", text))
    assert block._offsets == [m.span() for m in found]
    assert block._norm == [unicodedata.normalize("NFKC", m.group()).casefold() for m in found]
