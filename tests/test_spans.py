"""Spans compose across cuts: a citation points at the input text the model read."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextwright import Assembler, Chunk, Pipeline
from contextwright.model.spans import compose, join_pieces, pieces_of
from contextwright.stages.budget import TokenBudget
from contextwright.stages.compress import ExtractiveCompress
from contextwright.stages.dedup import ExactDedup, OverlapDedup


def assert_spans_hold(original: str, chunk: Chunk) -> None:
    """``chunk.text`` is its spans' pieces of ``original``, in order, separated by whitespace only."""
    spans = chunk.spans
    assert all(0 <= a < b <= len(original) for a, b in spans)
    assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(spans)), spans
    for a, b in spans:
        piece = original[a:b]
        assert piece == piece.strip(), f"untrimmed piece {piece!r}"
    pos = 0
    for start, end, origin in pieces_of(chunk):
        assert not chunk.text[pos:start].strip(), "non-whitespace between pieces"
        assert chunk.text[start:end] == original[origin : origin + end - start]
        pos = end
    assert not chunk.text[pos:].strip(), "non-whitespace after the last piece"


def test_join_and_compose_example() -> None:
    c = Chunk("One. Two. Three.", id="c")
    kept = [(0, 4), (10, 16)]
    c2 = c.with_ops("compressed", text=join_pieces(c.text, kept), spans=compose(c, kept))
    assert (c2.text, c2.spans) == ("One. Three.", ((0, 4), (10, 16)))
    assert compose(c2, [(5, 11)]) == ((10, 16),)
    # a piece of the cut text that crosses two earlier pieces maps to both
    assert compose(c2, [(2, 8)]) == ((2, 4), (10, 13))


def test_join_keeps_whitespace_gaps_and_replaces_skipped_text() -> None:
    text = "Alpha one.\n\nBeta two. Gamma three.\nDelta four."
    assert join_pieces(text, [(0, 10), (12, 21)]) == "Alpha one.\n\nBeta two."
    assert join_pieces(text, [(0, 10), (35, 46)]) == "Alpha one.\nDelta four."
    assert join_pieces(text, [(12, 21), (35, 46)]) == "Beta two.\nDelta four."
    assert join_pieces(text, [(22, 34), (35, 46)]) == "Gamma three.\nDelta four."
    assert join_pieces(text, [(0, 5), (11, 12), (17, 21)]) == "Alpha\ntwo."  # blank pieces vanish


_words = st.lists(
    st.tuples(
        st.sampled_from(["alpha", "Beta.", "g4mma", "δέλτα", "x", "end!", "(q)"]),
        st.sampled_from([" ", "\n", "  ", "\n\n", ""]),
    ),
    min_size=1,
    max_size=40,
)


@st.composite
def _cuts(draw: Any, length: int) -> list[tuple[int, int]]:
    points = sorted(set(draw(st.lists(st.integers(0, length), min_size=2, max_size=8))))
    pairs = list(zip(points[::2], points[1::2], strict=False))
    return [(a, b) for a, b in pairs if a < b]


@given(words=_words, data=st.data())
def test_spans_compose_over_any_sequence_of_cuts(words: list[tuple[str, str]], data: Any) -> None:
    original = "".join(w + s for w, s in words)
    chunk = Chunk(original, id="c")
    for _ in range(data.draw(st.integers(1, 4))):
        if not chunk.text.strip():
            break
        kind = data.draw(st.sampled_from(["select", "prefix", "suffix"]))
        if kind == "select":
            pieces = data.draw(_cuts(len(chunk.text)))
            text = join_pieces(chunk.text, pieces)
        elif kind == "prefix":
            end = data.draw(st.integers(1, len(chunk.text)))
            pieces, text = [(0, end)], chunk.text[:end]
        else:
            start = data.draw(st.integers(0, len(chunk.text) - 1))
            pieces, text = [(start, len(chunk.text))], chunk.text[start:]
        if not text.strip():
            break
        chunk = chunk.with_ops("cut", text=text, spans=compose(chunk, pieces))
        assert_spans_hold(original, chunk)


def _inputs(query: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["text"] for c in query["chunks"]}


def _assert_citations_point_into_inputs(ctx: Any, texts: dict[str, str]) -> int:
    """Every cut block's citation spans are pieces of its input chunk; returns how many were checked."""
    checked = 0
    for block, cite in zip(ctx.chunks, ctx.citations, strict=True):
        assert cite.spans == block.spans
        if not cite.spans:
            continue
        (cid,) = cite.chunk_ids
        assert_spans_hold(texts[cid], block)
        assert cite.to_dict()["spans"] == [list(s) for s in cite.spans]
        checked += 1
    return checked


def test_tight_citations_point_at_the_compressed_text(dev_queries: list[dict[str, Any]]) -> None:
    asm = Assembler("tight", budget=400)
    checked = 0
    for q in dev_queries[:40]:
        ctx = asm.assemble(q["question"], q["chunks"])
        checked += _assert_citations_point_into_inputs(ctx, _inputs(q))
    assert checked >= 40  # about two cut blocks per context at this budget


def test_spans_compose_through_overlap_strip_compression_and_truncation(corpus_path: Any) -> None:
    """Adjacent corpus chunks (20 shared words) are overlap-stripped, then compressed or truncated."""
    import gzip
    import json

    with gzip.open(corpus_path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(400), f, strict=False)]
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], []).append(r)
    runs = [v[:3] for v in by_doc.values() if len(v) >= 3][:6]
    assert len(runs) == 6
    setups = [
        # the top chunk whole, its stripped neighbours compressed
        (
            Pipeline((ExactDedup(), OverlapDedup(), ExtractiveCompress(whole_share=0.2), TokenBudget())),
            300,
            [10, 9, 8],
        ),
        # the stripped middle chunk ranks first and is truncated to fit
        (Pipeline((ExactDedup(), OverlapDedup(), TokenBudget(policy="truncate"))), 80, [5, 10, 1]),
    ]
    seen: set[tuple[str, ...]] = set()
    for run in runs:
        for pipe, budget, scores in setups:
            chunks = [
                {**r, "score": float(s), "text": ("  " + r["text"]) if i == 2 else r["text"]}
                for i, (r, s) in enumerate(zip(run, scores, strict=True))
            ]
            ctx = Assembler(pipe, budget=budget).assemble(run[0]["title"] + " " + run[1]["text"][:60], chunks)
            _assert_citations_point_into_inputs(ctx, {c["id"]: c["text"] for c in chunks})
            seen.update(c.ops for c in ctx.chunks)
    # both compositions ran
    assert {("overlap_stripped", "compressed"), ("overlap_stripped", "truncated")} <= seen


@pytest.mark.parametrize("lead", ["", "  \n"])
def test_truncation_spans_count_leading_whitespace(lead: str) -> None:
    text = lead + " ".join(f"Sentence number {i} of the chunk says a little more." for i in range(12))
    chunks = [Chunk(text, id="a", score=1.0)]
    ctx = Assembler(Pipeline((TokenBudget(policy="truncate", min_truncated_tokens=1),)), budget=40).assemble(
        "q", chunks
    )
    (block,) = ctx.chunks
    assert "truncated" in block.ops
    ((a, b),) = ctx.citations[0].spans
    assert text[a:b] == block.text
