"""Tests of neighbour expansion from a chunk store."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.assembly.assembler import Assembler
from contextwright.assembly.presets import pipeline_from_config
from contextwright.core.errors import ConfigError, StoreError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.stages.base import stage_from_dict, stage_to_dict
from contextwright.stages.expand import ExpandNeighbors, with_expansion
from contextwright.stores import InMemoryStore, SQLiteStore


def _corpus(sizes: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {"id": f"{d}:{i}", "doc_id": d, "index": i, "title": d.upper(), "text": f"{d} sentence {i}."}
        for d, n in sizes.items()
        for i in range(n)
    ]


STORE = InMemoryStore(_corpus({"a": 6, "b": 1, "c": 3}))


def _hits(*specs: tuple[str, int, float]) -> tuple[Chunk, ...]:
    return chunks_from_dicts(
        [
            {"id": f"{d}:{i}", "doc_id": d, "index": i, "text": f"{d} sentence {i}.", "score": s}
            for d, i, s in specs
        ]
    )


def test_neighbours_are_added_after_the_inputs_at_half_their_parents_score() -> None:
    hits = _hits(("a", 2, 0.8), ("c", 0, 0.6))
    result = ExpandNeighbors()(hits, store=STORE)
    assert [c.id for c in result.chunks] == ["a:2", "c:0", "a:1", "a:3", "c:1"]
    added = result.chunks[2:]
    assert [c.score for c in added] == [0.4, 0.4, 0.3]
    assert {c.origin for c in added} == {"expanded"}
    assert [c.rank for c in added] == [2, 3, 4]
    assert added[0].title == "A"
    assert result.report.added == ("a:1", "a:3", "c:1")
    assert result.report.notes[0].startswith("added 3 neighbour(s) of 2 chunk(s) in 2 document(s) (window ±1")
    assert result.chunks[:2] == hits


def test_a_neighbour_of_two_parents_takes_the_better_score_and_ranks_with_it() -> None:
    hits = _hits(("a", 3, 0.2), ("a", 1, 0.9))
    result = ExpandNeighbors(factor=0.5)(hits, store=STORE)
    scores = {c.id: c.score for c in result.chunks[2:]}
    assert scores == {"a:0": 0.45, "a:2": 0.45, "a:4": 0.1}
    # Ordered by their best parent's input rank, then by position.
    assert [c.id for c in result.chunks[2:]] == ["a:4", "a:0", "a:2"]


def test_chunks_already_present_are_never_added_again() -> None:
    hits = _hits(("a", 1, 0.9), ("a", 2, 0.8))
    same_id_elsewhere = Chunk("a copy from another pipeline", id="a:3", score=0.1)
    result = ExpandNeighbors()((*hits, same_id_elsewhere), store=STORE)
    ids = [c.id for c in result.chunks]
    assert ids == ["a:1", "a:2", "a:3", "a:0"]
    assert len(ids) == len(set(ids))


def test_window_is_clipped_at_document_edges_and_missing_neighbours_are_fine() -> None:
    result = ExpandNeighbors(window=3)(_hits(("b", 0, 1.0), ("a", 5, 1.0), ("zz", 4, 1.0)), store=STORE)
    assert result.report.added == ("a:2", "a:3", "a:4")


def test_chunks_without_position_pass_through_and_are_counted() -> None:
    loose = chunks_from_dicts([{"id": "x", "text": "no doc"}, {"id": "y", "text": "doc only", "doc_id": "a"}])
    result = ExpandNeighbors()((*loose, *_hits(("c", 1, 1.0))), store=STORE)
    assert [c.id for c in result.chunks] == ["x", "y", "c:1", "c:0", "c:2"]
    assert "2 chunk(s) without doc_id/index passed through unexpanded" in result.report.notes


def test_window_zero_and_empty_input_make_no_store_call() -> None:
    closed = SQLiteStore(":memory:")
    closed.close()  # any call would fail, and the report would say so
    hits = _hits(("a", 1, 1.0))
    zero = ExpandNeighbors(window=0)(hits, store=closed)
    assert zero.chunks == hits
    assert zero.report.notes == ("window 0: expansion disabled",)
    empty = ExpandNeighbors()((), store=closed)
    assert empty.chunks == ()
    assert empty.report.chunks_in == empty.report.chunks_out == 0


def test_no_store_configured_passes_through_with_a_note() -> None:
    hits = _hits(("a", 1, 1.0))
    result = ExpandNeighbors()(hits, store=None)
    assert result.chunks == hits
    assert "no chunk store configured" in result.report.notes[0]


def test_a_failing_store_passes_chunks_through_and_the_report_says_why() -> None:
    broken = SQLiteStore(":memory:")
    broken.close()
    hits = _hits(("a", 1, 1.0), ("c", 0, 0.5))
    result = ExpandNeighbors()(hits, store=broken)
    assert result.chunks == hits
    assert result.report.added == ()
    assert result.report.dropped == ()
    [note] = result.report.notes
    assert note.startswith(
        "store failed, chunks passed through unexpanded: SQLite store ':memory:' is closed"
    )


def test_strict_expansion_raises_the_store_error() -> None:
    broken = SQLiteStore(":memory:")
    broken.close()
    with pytest.raises(StoreError, match=r"SQLite store ':memory:' is closed"):
        ExpandNeighbors(strict=True)(_hits(("a", 1, 1.0)), store=broken)


def test_a_store_timeout_passes_through_unless_strict(corpus_path: Path) -> None:
    store = SQLiteStore(":memory:")
    store.load_jsonl(corpus_path)
    with gzip.open(corpus_path, "rt", encoding="utf-8") as f:
        many = chunks_from_dicts([{**json.loads(line), "score": 1.0} for line in f])
    result = ExpandNeighbors(window=3, timeout_s=1e-6)(many, store=store)
    assert len(result.chunks) == len(many)
    assert "fetch timed out after 1e-06 s" in result.report.notes[0]
    with pytest.raises(StoreError, match=r"timed out"):
        ExpandNeighbors(window=3, timeout_s=1e-6, strict=True)(many, store=store)
    store.close()


class _ForeignStore:
    """A user's store that fails with its own exception type."""

    def fetch(self, ranges: Any, /, *, timeout_s: float | None = None) -> list[Chunk]:
        raise ConnectionResetError("peer went away")

    def __repr__(self) -> str:
        return "ForeignStore()"


def test_any_store_exception_is_caught_and_wrapped_when_strict() -> None:
    hits = _hits(("a", 1, 1.0))
    passed = ExpandNeighbors()(hits, store=_ForeignStore())
    assert passed.chunks == hits
    assert passed.report.notes == (
        "store failed, chunks passed through unexpanded: ConnectionResetError: peer went away",
    )
    with pytest.raises(
        StoreError, match=r"chunk store ForeignStore\(\) failed during expansion: ConnectionResetError"
    ):
        ExpandNeighbors(strict=True)(hits, store=_ForeignStore())


class _GenerousStore:
    """A store that returns every chunk of a document, whatever the range."""

    def fetch(self, ranges: Any, /, *, timeout_s: float | None = None) -> list[Chunk]:
        return STORE.fetch({d: [(0, 100)] for d in ranges})


def test_chunks_a_store_returns_beyond_the_window_are_ignored() -> None:
    result = ExpandNeighbors()(_hits(("a", 0, 1.0)), store=_GenerousStore())
    assert result.report.added == ("a:1",)
    assert "ignored 4 chunk(s) the store returned outside the requested ranges" in result.report.notes


@pytest.mark.parametrize(
    ("settings_", "message"),
    [
        ({"window": 4}, r"window must be an integer from 0 to 3 .*got 4"),
        ({"window": -1}, r"window must be an integer from 0 to 3 .*got -1"),
        ({"window": True}, r"window must be an integer .*got True"),
        ({"factor": 1.5}, r"factor must be a number from 0 to 1 .*got 1.5"),
        ({"factor": float("nan")}, r"factor must be a number from 0 to 1 .*got nan"),
        ({"strict": "yes"}, r"strict must be true or false; got 'yes'"),
        ({"timeout_s": 0}, r"timeout_s must be a positive number of seconds or null; got 0"),
    ],
)
def test_settings_are_validated_with_the_value_and_the_fix(settings_: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ExpandNeighbors(**settings_)


def test_settings_round_trip_through_dicts() -> None:
    stage = ExpandNeighbors(window=2, factor=0.25, strict=True, timeout_s=None)
    data = stage_to_dict(stage)
    assert data == {"type": "expand", "window": 2, "factor": 0.25, "strict": True, "timeout_s": None}
    assert stage_from_dict(data) == stage


def test_the_assembler_passes_its_store_to_the_stage() -> None:
    config = {
        "stages": [{"type": "expand"}, {"type": "token_budget"}, {"type": "score_order"}],
        "format": "xml",
    }
    ctx = Assembler(config, budget=1000, store=STORE).assemble("q", _hits(("c", 1, 1.0)))
    assert [c.id for c in ctx.chunks] == ["c:1", "c:0", "c:2"]
    assert "c sentence 0." in ctx.text
    [expand] = [s for s in ctx.report.stages if s.stage == "expand"]
    assert expand.added == ("c:0", "c:2")


def test_an_assembler_without_a_store_runs_and_reports_that_nothing_was_expanded() -> None:
    config = {"stages": [{"type": "expand"}], "format": "xml"}
    ctx = Assembler(config, budget=100).assemble("q", _hits(("c", 1, 1.0)))
    (expand, _render) = ctx.report.stages
    assert expand.added == ()
    assert any("no chunk store configured" in note for note in expand.notes)
    assert [c.id for c in ctx.chunks] == ["c:1"]


def test_with_expansion_inserts_after_filters_or_retunes_an_existing_stage() -> None:
    base = pipeline_from_config(
        {"stages": [{"type": "top_k", "k": 5}, {"type": "exact_dedup"}], "format": "xml"}
    )
    widened = with_expansion(base, window=2)
    assert [s.name for s in widened.stages] == ["top_k", "expand", "exact_dedup"]
    assert widened.stages[1] == ExpandNeighbors(window=2)
    again = with_expansion(pipeline_from_config({"stages": [{"type": "expand", "factor": 0.3}]}), window=3)
    assert again.stages == (ExpandNeighbors(window=3, factor=0.3),)


def test_sqlite_and_in_memory_expansion_agree_on_the_dev_queries(
    corpus_path: Path, dev_queries: list[dict[str, Any]]
) -> None:
    memory = InMemoryStore()
    memory.load_jsonl(corpus_path)
    with SQLiteStore(":memory:") as sqlite:
        sqlite.load_jsonl(corpus_path)
        stage = ExpandNeighbors()
        total_added = 0
        for q in dev_queries[:40]:
            chunks = chunks_from_dicts(q["chunks"])
            a, b = stage(chunks, store=memory), stage(chunks, store=sqlite)
            assert a.chunks == b.chunks
            assert a.report.added == b.report.added
            total_added += len(a.report.added)
    assert total_added > 40  # the lists do contain multi-chunk documents


# -- properties --------------------------------------------------------------

_DOC_SIZES = st.dictionaries(st.sampled_from("pqrs"), st.integers(1, 8), min_size=1)


@st.composite
def _case(draw: st.DrawFn) -> tuple[dict[str, int], list[dict[str, Any]], int, float]:
    sizes = draw(_DOC_SIZES)
    positions = [(d, i) for d, n in sizes.items() for i in range(n + 2)]  # some beyond the store
    picked = draw(st.lists(st.sampled_from(positions), unique=True, max_size=10))
    scores = st.floats(0, 10, allow_nan=False)
    hits = [
        {"id": f"{d}:{i}", "doc_id": d, "index": i, "text": f"hit {d} {i}", "score": draw(scores)}
        for d, i in picked
    ]
    loose = draw(st.integers(0, 2))
    hits += [{"id": f"loose{k}", "text": f"loose {k}", "score": draw(scores)} for k in range(loose)]
    order = draw(st.permutations(hits))
    return sizes, order, draw(st.integers(0, 3)), draw(st.sampled_from([0.0, 0.5, 1.0]))


@given(_case())
@settings(max_examples=150, deadline=None)
def test_expansion_properties(case: tuple[dict[str, int], list[dict[str, Any]], int, float]) -> None:
    sizes, hits, window, factor = case
    store = InMemoryStore(_corpus(sizes))
    chunks = chunks_from_dicts(hits)
    result = ExpandNeighbors(window=window, factor=factor)(chunks, store=store)
    out = result.chunks

    # Nothing lost: the inputs come first, unchanged and in order.
    assert out[: len(chunks)] == chunks
    added = out[len(chunks) :]
    assert result.report.added == tuple(c.id for c in added)

    # No duplicates, by id or by position.
    assert len({c.id for c in out}) == len(out)
    keys = [(c.doc_id, c.index) for c in out if c.doc_id is not None]
    assert len(set(keys)) == len(keys)

    parents = [c for c in chunks if c.doc_id is not None and c.index is not None]
    for c in added:
        near = [p for p in parents if p.doc_id == c.doc_id and abs(p.index - c.index) <= window]  # type: ignore[operator]
        # Never beyond the window, scored from the best parent.
        assert near
        assert c.score == max(p.score for p in near) * factor
        assert c.origin == "expanded"
        assert c.rank > max(x.rank for x in chunks)

    # Exactly the stored chunks inside some window that were not already there.
    expected = {
        (p.doc_id, j)
        for p in parents
        for j in range(p.index - window, p.index + window + 1)  # type: ignore[operator]
        if p.doc_id in sizes and 0 <= j < sizes[p.doc_id]
    } - {(p.doc_id, p.index) for p in parents}
    assert {(c.doc_id, c.index) for c in added} == expected

    # Deterministic.
    assert ExpandNeighbors(window=window, factor=factor)(chunks, store=store) == result


def test_no_store_warning_is_logged_once_per_process(caplog: pytest.LogCaptureFixture) -> None:
    import contextwright.stages.expand as expand

    expand._warned_no_store = False
    chunks = [{"id": "a", "doc_id": "d", "index": 1, "text": "x", "score": 1}]
    with caplog.at_level("WARNING", logger="contextwright.stages.expand"):
        for _ in range(3):
            ctx = Assembler("documents", budget=200).assemble("q", chunks)
            assert any(
                "no chunk store" in n for s in ctx.report.stages for n in s.notes
            )  # still in every report
    assert sum("no chunk store" in r.getMessage() for r in caplog.records) == 1
