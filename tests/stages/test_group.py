"""Tests of grouping and merging contiguous chunks into passages."""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright import Assembler, get_preset
from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.render.context import AssembledContext
from contextwright.stages.base import stage_from_dict, stage_to_dict
from contextwright.stages.dedup import OverlapDedup
from contextwright.stages.group import GroupMerge


def _corpus(path: Path) -> dict[str, list[dict[str, Any]]]:
    docs: dict[str, list[dict[str, Any]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            docs.setdefault(row["doc_id"], []).append(row)
    return docs


def _span(rows: list[dict[str, Any]]) -> str:
    start, end = rows[0]["char_start"], rows[-1]["char_end"]
    buf = [" "] * (end - start)
    for r in rows:
        buf[r["char_start"] - start : r["char_end"] - start] = list(r["text"])
    return "".join(buf)


def _chunks(rows: list[dict[str, Any]], scores: list[float]) -> tuple[Chunk, ...]:
    return chunks_from_dicts(
        [
            {
                "id": r["id"],
                "text": r["text"],
                "doc_id": r["doc_id"],
                "index": r["index"],
                "title": r["title"],
                "score": s,
            }
            for r, s in zip(rows, scores, strict=True)
        ]
    )


def _documents_without_expand() -> dict[str, Any]:
    config = get_preset("documents")
    config["stages"] = [s for s in config["stages"] if s["type"] != "expand"]
    return config


def _assert_nothing_lost(inputs: list[dict[str, Any]], ctx: AssembledContext) -> None:
    accounted = {i for c in ctx.chunks for i in (*c.member_ids, *c.duplicates)}
    accounted |= {d.chunk_id for d in ctx.report.dropped}
    assert {c["id"] for c in inputs} <= accounted


def test_overlapping_windows_merge_into_the_document_text(corpus_path: Path) -> None:
    rows = next(d for d in _corpus(corpus_path).values() if len(d) >= 4)[:4]
    chunks = _chunks(rows[::-1], [0.1, 0.9, 0.3, 0.2])  # arrival order does not matter
    result = GroupMerge()(OverlapDedup()(chunks).chunks)
    (passage,) = result.chunks
    assert passage.text == _span(rows)
    assert passage.chunk_ids == tuple(r["id"] for r in rows)
    assert passage.metadata["index_span"] == (0, 3)
    assert (passage.index, passage.score, passage.origin) == (0, 0.9, "merged")
    assert passage.id == f"{rows[0]['doc_id']}:0-3"
    assert {(d.chunk_id, d.reason, d.related) for d in result.report.dropped} == {
        (r["id"], "merged_into", passage.id) for r in rows
    }
    assert result.report.added == (passage.id,)


def test_non_contiguous_runs_stay_separate_and_groups_rank_by_their_best_chunk() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a0", "text": "A zero.", "doc_id": "A", "index": 0, "score": 0.2},
            {"id": "b5", "text": "B five.", "doc_id": "B", "index": 5, "score": 0.5},
            {"id": "a1", "text": "A one.", "doc_id": "A", "index": 1, "score": 0.3},
            {"id": "a3", "text": "A three.", "doc_id": "A", "index": 3, "score": 0.9},
            {"id": "loose", "text": "No document.", "score": 0.4},
        ]
    )
    result = GroupMerge()(chunks)
    assert [c.id for c in result.chunks] == ["A:0-1", "a3", "b5", "loose"]
    assert result.chunks[0].text == "A zero.\nA one."  # no overlap was stripped: joined by the separator


def test_merged_citation_carries_every_chunk_id_and_the_index_span(corpus_path: Path) -> None:
    rows = next(d for d in _corpus(corpus_path).values() if len(d) >= 3)[:3]
    chunks = [c.to_dict() for c in _chunks(rows, [0.5, 0.9, 0.4])]
    ctx = Assembler(_documents_without_expand(), budget=2000).assemble("q", chunks)
    (citation,) = ctx.citations
    assert citation.chunk_ids == tuple(r["id"] for r in rows)
    assert citation.index_span == (0, 2)
    assert len(re.findall(r"^\[\d+\]", ctx.text, re.MULTILINE)) == 1  # one lean block header


def test_group_merge_rejects_a_visible_separator() -> None:
    with pytest.raises(ConfigError, match=r"separator must be non-empty whitespace .*; got ' \| '"):
        GroupMerge(separator=" | ")


def test_group_merge_round_trips_through_config() -> None:
    stage = GroupMerge(separator=" ")
    assert stage_from_dict(stage_to_dict(stage)) == stage


@settings(max_examples=80, deadline=None)
@given(st.integers(40, 200), st.integers(5, 40), st.data())
def test_merged_passage_equals_its_pieces_minus_the_stripped_overlaps(
    n_words: int, size: int, data: st.DataObject
) -> None:
    stride = data.draw(st.integers(1, size))
    words = [f"w{i}" for i in range(n_words)]  # distinct words: the only overlap is the true one
    starts = list(range(0, max(1, n_words - size + 1), stride))
    picked = sorted(data.draw(st.lists(st.sampled_from(range(len(starts))), unique=True, min_size=1)))
    chunks = tuple(
        Chunk(
            " ".join(words[starts[i] : starts[i] + size]),
            id=f"c{i}",
            doc_id="d",
            index=i,
            score=data.draw(st.floats(0, 1)),
        )
        for i in picked
    )
    stripped = OverlapDedup(min_overlap_chars=2)(chunks)
    result = GroupMerge()(stripped.chunks)
    for passage in result.chunks:
        first, last = passage.metadata.get("index_span", (passage.index, passage.index))
        expected = " ".join(words[starts[first] : starts[last] + size])
        if first != last:
            # pieces joined in index order: as they are where either side lost the overlap
            pieces = sorted(
                (c for c in stripped.chunks if c.id in passage.chunk_ids), key=lambda c: c.index or 0
            )
            assert passage.text == pieces[0].text + "".join(
                b.text if "overlap_stripped" in b.ops or "overlap_stripped_tail" in a.ops else "\n" + b.text
                for a, b in itertools.pairwise(pieces)
            )
        if all(starts[i + 1] - starts[i] < size for i in range(first, last)):
            assert passage.text == expected  # overlapping windows rebuild the document exactly
    accounted = {i for c in result.chunks for i in c.member_ids} | {
        d.chunk_id for d in stripped.report.dropped
    }
    assert accounted == {c.id for c in chunks}


@settings(max_examples=25, deadline=None)
@given(st.integers(60, 1500), st.randoms(use_true_random=False))
def test_budget_is_exact_after_merging_and_whole_documents_are_dropped(
    corpus_path: Path, cl100k: Any, budget: int, rnd: random.Random
) -> None:
    docs = [d for d in _corpus_cached(corpus_path) if len(d) >= 2]
    picked = rnd.sample(docs, 4)
    rows = [r for d in picked for r in d[: rnd.randint(1, 4)]]
    inputs = [c.to_dict() for c in _chunks(rows, [rnd.random() for _ in rows])]
    # The preset (fill, then merge the selected chunks): exact budget, nothing lost.
    ctx = Assembler(_documents_without_expand(), budget=budget).assemble("q", inputs)
    assert ctx.tokens == len(cl100k.encode(ctx.text)) <= budget
    _assert_nothing_lost(inputs, ctx)
    # Whole-document selection: a document is kept whole or not at all.
    config = _documents_without_expand()
    for stage in config["stages"]:
        if stage["type"] == "token_budget":
            stage["policy"] = "blocks"
    ctx = Assembler(config, budget=budget).assemble("q", inputs)
    assert ctx.tokens == len(cl100k.encode(ctx.text)) <= budget
    _assert_nothing_lost(inputs, ctx)
    budget_report = next(s for s in ctx.report.stages if s.stage == "token_budget")
    over = {d.chunk_id.rsplit(":", 1)[0] for d in budget_report.dropped}
    assert not over & {c.doc_id for c in ctx.chunks}  # a document is kept whole or not at all


_CACHE: dict[str, list[list[dict[str, Any]]]] = {}


def _corpus_cached(path: Path) -> list[list[dict[str, Any]]]:
    if "docs" not in _CACHE:
        _CACHE["docs"] = list(_corpus(path).values())
    return _CACHE["docs"]


def test_documents_preset_with_a_sqlite_store_on_dev_queries(
    dev_queries: list[dict[str, Any]], corpus_path: Path, cl100k: Any
) -> None:
    from contextwright.stores import SQLiteStore

    store = SQLiteStore(":memory:")
    store.load_jsonl(corpus_path)
    asm = Assembler("documents", budget=1000, store=store)
    for q in dev_queries[:15]:
        ctx = asm.assemble(q["question"], q["chunks"])
        assert ctx.tokens == len(cl100k.encode(ctx.text)) <= 1000
        _assert_nothing_lost(q["chunks"], ctx)
        stages = [s.stage for s in ctx.report.stages]
        assert stages[:8] == [
            "expand",
            "doc_summaries",
            "token_budget",
            # dedup of what the budget kept: what a copy took is saved, not refilled (issue 32)
            "exact_dedup",
            "overlap_dedup",
            "containment_dedup",  # copies across chunk boundaries (issue 22)
            "near_dedup",
            "group_merge",  # after selection: the selected neighbours become one passage
        ]
        for c in ctx.citations:  # merged passages cite their span
            if len(c.chunk_ids) > 1:
                assert c.index_span is not None and c.index_span[1] > c.index_span[0]


def test_a_merged_passage_followed_by_the_next_chunk_merges_again_with_the_whole_span() -> None:
    first = GroupMerge()(
        chunks_from_dicts([{"id": f"c{i}", "text": f"t{i}", "doc_id": "d", "index": i} for i in (0, 1)])
    )
    (passage,) = first.chunks
    result = GroupMerge()((passage, Chunk("t2", id="c2", doc_id="d", index=2)))
    (merged,) = result.chunks
    assert merged.chunk_ids == ("c0", "c1", "c2")
    assert merged.metadata["index_span"] == (0, 2)
    assert merged.text == "t0\nt1\nt2"
