"""Tests of the dedup stage family."""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.core.errors import ConfigError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.report import Drop, StageResult
from contextwright.stages.base import stage_from_dict, stage_to_dict
from contextwright.stages.dedup import ExactDedup, OverlapDedup, normalize_text, suffix_prefix_overlap
from contextwright.stages.group import GroupMerge
from contextwright.stages.near import NearDedup
from contextwright.stages.semantic import SemanticDedup
from contextwright.stages.shingles import jaccard, lsh_bands, shingles


def test_exact_dedup_keeps_the_higher_scored_copy_and_records_the_other() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "low", "text": "Paris is the capital of France.", "score": 0.2, "source": "a.md"},
            {"id": "high", "text": "paris  is the CAPITAL of France.", "score": 0.9, "source": "b.md"},
            {"id": "other", "text": "Berlin is the capital of Germany.", "score": 0.5},
        ]
    )
    result = ExactDedup()(chunks)
    assert [c.id for c in result.chunks] == ["high", "other"]
    survivor = result.chunks[0]
    assert survivor.duplicates == ("low",)
    assert survivor.also_sources == ("a.md",)
    (drop,) = result.report.dropped
    assert (drop.chunk_id, drop.reason, drop.related) == ("low", "duplicate_of", "high")


def test_exact_dedup_breaks_score_ties_by_retrieval_order() -> None:
    chunks = chunks_from_dicts([{"id": "first", "text": "same"}, {"id": "second", "text": "Same"}])
    result = ExactDedup()(chunks)
    assert [c.id for c in result.chunks] == ["first"]
    assert result.report.dropped[0].chunk_id == "second"


def test_exact_dedup_folds_three_copies_into_one_survivor() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a", "text": "x y z", "score": 0.1, "source": "1"},
            {"id": "b", "text": "x y z", "score": 0.3, "source": "2"},
            {"id": "c", "text": "x  y z", "score": 0.2, "source": "3"},
        ]
    )
    result = ExactDedup()(chunks)
    (survivor,) = result.chunks
    assert survivor.id == "b"
    assert set(survivor.duplicates) == {"a", "c"}
    assert set(survivor.also_sources) == {"1", "3"}
    assert {d.chunk_id for d in result.report.dropped} == {"a", "c"}


def test_normalize_text_folds_case_width_and_whitespace() -> None:
    assert normalize_text("  Ｈello\u00a0 WORLD\n") == "hello world"
    assert normalize_text("Straße") == normalize_text("STRASSE")


def test_exact_dedup_leaves_distinct_chunks_alone() -> None:
    chunks = (Chunk("one", id="1"), Chunk("two", id="2"))
    result = ExactDedup()(chunks)
    assert result.chunks == chunks
    assert result.report.dropped == ()


# -- overlap, near-duplicate and semantic dedup -------------------------------------


def _corpus_docs(path: Path, min_chunks: int) -> list[list[dict[str, Any]]]:
    docs: dict[str, list[dict[str, Any]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            docs.setdefault(row["doc_id"], []).append(row)
    return [d for d in docs.values() if len(d) >= min_chunks]


def _document_span(rows: list[dict[str, Any]]) -> str:
    """The document text from the first row's start to the last row's end, rebuilt from offsets."""
    start, end = rows[0]["char_start"], rows[-1]["char_end"]
    buf = [""] * (end - start)
    for r in rows:
        for i, ch in enumerate(r["text"]):
            buf[r["char_start"] - start + i] = ch
    return "".join(ch if ch else " " for ch in buf)


def _as_chunks(rows: list[dict[str, Any]], scores: list[float] | None = None) -> tuple[Chunk, ...]:
    return chunks_from_dicts(
        [
            {
                "id": r["id"],
                "text": r["text"],
                "doc_id": r["doc_id"],
                "index": r["index"],
                "score": (scores[i] if scores else 1.0 - i / 100),
            }
            for i, r in enumerate(rows)
        ]
    )


def _nothing_lost(inputs: tuple[Chunk, ...], result: StageResult) -> None:
    accounted = {i for c in result.chunks for i in (*c.member_ids, *c.duplicates)}
    accounted |= {d.chunk_id for d in result.report.dropped}
    assert {c.id for c in inputs} <= accounted


def test_overlap_dedup_strips_the_20_word_overlap_of_the_shared_corpus_windows(corpus_path: Path) -> None:
    rows = _corpus_docs(corpus_path, 4)[0][:4]
    result = OverlapDedup()(_as_chunks(rows))
    assert [c.action for c in result.report.changed] == ["overlap_stripped"] * 3
    first, *rest = result.chunks
    assert first.text == rows[0]["text"]
    for chunk, row in zip(rest, rows[1:], strict=True):
        assert "overlap_stripped" in chunk.ops
        assert len(row["text"].split()) - len(chunk.text.split()) == 20  # exactly the shared words
    # the pieces join back into the document text, with its original spacing
    assert "".join(c.text for c in result.chunks) == _document_span(rows)


def test_overlap_dedup_cuts_the_copy_from_the_less_relevant_chunk() -> None:
    # an expanded neighbour (scored below its hit) that precedes the hit: the neighbour loses its
    # tail, so a budget that drops it leaves the hit whole (the answer was in the shared words)
    doc = "Beds came from Egypt. Raised beds were common by the 12th century in Europe, then spread."
    neighbour = Chunk(doc[:60], id="n", doc_id="d", index=0, score=0.45)
    hit = Chunk(doc[22:], id="h", doc_id="d", index=1, score=0.9)
    result = OverlapDedup()((hit, neighbour))
    by_id = {c.id: c for c in result.chunks}
    assert by_id["h"] == hit  # untouched
    assert by_id["n"].text == doc[:22] and "overlap_stripped_tail" in by_id["n"].ops
    assert by_id["n"].spans == ((0, 21),)  # the kept piece, without its trailing space
    assert by_id["n"].text + by_id["h"].text == doc
    (change,) = result.report.changed
    assert (change.chunk_id, change.action) == ("n", "overlap_stripped")
    assert change.detail == "last 38 of 60 characters shared with h, which ranks higher"
    # the merged passage is the document text either way
    (passage,) = GroupMerge()(result.chunks).chunks
    assert passage.text == doc
    # on a tie the later chunk loses its head, as before
    tied = OverlapDedup()((replace(neighbour, score=0.9), hit))
    assert [c.text for c in tied.chunks] == [doc[:60], doc[60:]]


def test_overlap_dedup_matches_across_whitespace_but_cuts_the_original_text() -> None:
    a = Chunk("Intro words here. The shared   part spans\nseveral words", id="a", doc_id="d", index=0)
    b = Chunk("The shared part spans several\twords and then new text.", id="b", doc_id="d", index=1)
    result = OverlapDedup()((a, b))
    assert result.chunks[1].text == " and then new text."
    assert result.chunks[1].spans == ((36, len(b.text)),)  # the kept piece, without its leading space
    assert result.report.changed[0].detail.startswith("35 of")


def test_overlap_dedup_reports_tokens_when_given_a_meter() -> None:
    from contextwright.render.format import get_format
    from contextwright.render.meter import Meter
    from contextwright.tokens import get_tokenizer

    meter = Meter(get_format("xml"), get_tokenizer("cl100k_base"))
    a = Chunk("alpha beta gamma delta epsilon zeta eta theta", id="a", doc_id="d", index=0)
    b = Chunk("epsilon zeta eta theta iota kappa", id="b", doc_id="d", index=1)
    (change,) = OverlapDedup()((a, b), meter=meter).report.changed
    assert change.tokens_before is not None and change.tokens_after is not None
    assert change.tokens_after < change.tokens_before


@pytest.mark.parametrize(
    ("a", "b", "indices"),
    [
        ("one two three four five six seven", "five six seven eight nine", (0, 2)),  # not consecutive
        ("one two three four five six seven", "six seven eight nine ten", (0, 1)),  # 9 chars < 20
    ],
)
def test_overlap_dedup_leaves_non_consecutive_or_short_overlaps_alone(
    a: str, b: str, indices: tuple[int, int]
) -> None:
    chunks = (Chunk(a, id="a", doc_id="d", index=indices[0]), Chunk(b, id="b", doc_id="d", index=indices[1]))
    result = OverlapDedup()(chunks)
    assert result.chunks == chunks
    assert not result.report.changed


def test_overlap_dedup_ignores_overlaps_between_documents() -> None:
    a = Chunk("the same closing sentence of twenty chars", id="a", doc_id="d1", index=0)
    b = Chunk("the same closing sentence of twenty chars and more", id="b", doc_id="d2", index=1)
    assert OverlapDedup()((a, b)).chunks == (a, b)


def test_overlap_dedup_drops_a_chunk_contained_in_another_of_its_document() -> None:
    big = Chunk(
        "A long passage. It contains a short sentence.  And more.",
        id="big",
        doc_id="d",
        index=0,
        score=0.2,
        source="s1",
    )
    small = Chunk("It contains a short\nsentence.", id="small", doc_id="d", index=3, score=0.9, source="s2")
    other = Chunk("It contains a short sentence.", id="other", doc_id="e", index=0, score=0.1)
    result = OverlapDedup()((big, small, other))
    assert [c.id for c in result.chunks] == ["big", "other"]
    (drop,) = result.report.dropped
    assert (drop.chunk_id, drop.reason, drop.related, drop.detail) == (
        "small",
        "merged_into",
        "big",
        "contained",
    )
    container = result.chunks[0]
    assert container.duplicates == ("small",)
    assert container.also_sources == ("s2",)
    assert container.score == 0.9  # it holds the text that scored


def test_overlap_dedup_cuts_chains_of_windows_that_overlap_by_more_than_half() -> None:
    words = [f"w{i}" for i in range(160)]
    doc = " ".join(words)
    windows = [" ".join(words[s : s + 100]) for s in (0, 30, 60)]
    chunks = tuple(Chunk(t, id=f"c{i}", doc_id="d", index=i) for i, t in enumerate(windows))
    result = OverlapDedup()(chunks)
    assert "".join(c.text for c in result.chunks) == doc


def test_overlap_dedup_rejects_a_bad_min_overlap() -> None:
    with pytest.raises(ConfigError, match=r"min_overlap_chars must be a positive integer; got 0"):
        OverlapDedup(min_overlap_chars=0)


def test_suffix_prefix_overlap_finds_the_longest() -> None:
    assert suffix_prefix_overlap("xx abcabcabc", "abcabcabc yy", 3) == 9
    assert suffix_prefix_overlap("abc", "xyz", 1) == 0


# near duplicates


def _edit(text: str, n: int, rng: random.Random) -> str:
    words = text.split()
    for _ in range(n):
        words[rng.randrange(len(words))] = rng.choice(["alpha", "beta", "gamma"])
    return " ".join(words)


def test_near_dedup_drops_a_copy_with_one_word_changed_and_keeps_the_higher_score() -> None:
    base = " ".join(f"word{i}" for i in range(100))
    edited = base.replace("word50", "changed")
    chunks = chunks_from_dicts(
        [
            {"id": "copy", "text": edited, "score": 0.4, "source": "mirror.html"},
            {"id": "orig", "text": base, "score": 0.8, "source": "origin.html"},
            {"id": "other", "text": " ".join(f"other{i}" for i in range(100)), "score": 0.5},
        ]
    )
    assert jaccard(shingles(base, 3), shingles(edited, 3)) == pytest.approx(95 / 101)
    result = NearDedup()(chunks)
    assert [c.id for c in result.chunks] == ["orig", "other"]
    (drop,) = result.report.dropped
    assert (drop.chunk_id, drop.reason, drop.related) == ("copy", "near_duplicate_of", "orig")
    assert result.chunks[0].duplicates == ("copy",)
    assert result.chunks[0].also_sources == ("mirror.html",)


def test_near_dedup_keeps_texts_that_only_share_phrases() -> None:
    a = "the quick brown fox jumps over the lazy dog near the river bank today"
    b = "the quick brown fox sleeps under the old tree far from the river bank"
    assert NearDedup()(chunks_from_dicts([{"text": a}, {"text": b}])).report.dropped == ()


def test_near_dedup_exact_and_minhash_agree_on_the_corpus(corpus_path: Path) -> None:
    rng = random.Random(7)
    rows = [r for d in _corpus_docs(corpus_path, 1)[:300] for r in d][:300]
    items = [{"id": r["id"], "text": r["text"], "score": rng.random()} for r in rows]
    # 60 copies of full-length windows: 30 clear near duplicates (1 word changed, J ~ 0.94)
    # and 30 clearly different ones (45 words changed)
    full = [r for r in rows if len(r["text"].split()) >= 90][:60]
    for i, r in enumerate(full):
        n = 1 if i < 30 else 45
        items.append({"id": f"copy{i}", "text": _edit(r["text"], n, rng), "score": rng.random()})
    chunks = chunks_from_dicts(items)
    exact = NearDedup(method="exact")(chunks)
    minhash = NearDedup(method="minhash")(chunks)
    assert "exact" in exact.report.notes[0] and "minhash" in minhash.report.notes[0]
    assert exact.report.dropped == minhash.report.dropped
    dropped_pairs = {frozenset((d.chunk_id, d.related)) for d in exact.report.dropped}
    for i, r in enumerate(full):
        assert (frozenset((r["id"], f"copy{i}")) in dropped_pairs) == (i < 30)


def test_near_dedup_switches_to_minhash_above_the_documented_size() -> None:
    chunks = chunks_from_dicts([{"text": f"text number {i} with words"} for i in range(12)])
    assert NearDedup(minhash_above=11)(chunks).report.notes[0].startswith("minhash")
    assert NearDedup(minhash_above=12)(chunks).report.notes[0].startswith("exact")


def test_lsh_bands_propose_a_pair_at_the_threshold_with_high_probability() -> None:
    bands, rows = lsh_bands(0.9, 64)
    assert (bands, rows) == (10, 6)
    assert 1 - (1 - 0.9**rows) ** bands >= 0.999
    assert 1 - (1 - 0.3**rows) ** bands < 0.01  # dissimilar pairs are rarely even candidates


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ({"threshold": 0}, r"threshold must be a Jaccard similarity in \(0, 1\]; got 0"),
        ({"threshold": 1.5}, r"got 1.5"),
        ({"shingle_size": 0}, r"shingle_size must be an integer >= 1; got 0"),
        ({"method": "lsh"}, r"method must be one of auto, exact, minhash; got 'lsh'"),
        ({"num_perm": 4}, r"num_perm must be an integer >= 8; got 4"),
    ],
)
def test_near_dedup_rejects_bad_settings(setting: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        NearDedup(**setting)


# semantic duplicates


def test_semantic_dedup_uses_carried_vectors_without_an_embedder() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a", "text": "one", "score": 0.1, "embedding": [1.0, 0.0, 0.0]},
            {"id": "b", "text": "two", "score": 0.9, "embedding": [0.99, 0.05, 0.0]},
            {"id": "c", "text": "three", "score": 0.5, "embedding": [0.0, 1.0, 0.0]},
        ]
    )
    result = SemanticDedup()(chunks)
    assert [c.id for c in result.chunks] == ["b", "c"]
    (drop,) = result.report.dropped
    assert (drop.chunk_id, drop.reason, drop.related) == ("a", "semantic_duplicate_of", "b")
    assert result.report.notes == ("vectors from chunk embeddings",)


def test_semantic_dedup_without_vectors_or_embedder_says_what_to_pass() -> None:
    chunks = chunks_from_dicts([{"text": "one", "embedding": [1.0, 0.0]}, {"text": "two"}])
    with pytest.raises(ConfigError, match=r"1 of 2 chunks carry no embedding and no embedder was passed"):
        SemanticDedup()(chunks)


def test_semantic_dedup_rejects_a_bad_threshold() -> None:
    with pytest.raises(ConfigError, match=r"threshold must be a cosine similarity in \(0, 1\]; got -0.5"):
        SemanticDedup(threshold=-0.5)


def test_semantic_dedup_with_minilm_drops_a_paraphrase_and_keeps_an_unrelated_text(
    minilm_embedder: Any,
) -> None:
    chunks = chunks_from_dicts(
        [
            {
                "id": "orig",
                "text": "The Eiffel Tower is located in Paris, the capital of France.",
                "score": 0.7,
            },
            {
                "id": "para",
                "text": "The Eiffel Tower is situated in Paris, which is the capital of France.",
                "score": 0.9,
            },
            {
                "id": "other",
                "text": "Photosynthesis converts light energy into chemical energy in plants.",
                "score": 0.5,
            },
        ]
    )
    result = SemanticDedup()(chunks, embedder=minilm_embedder)
    assert [c.id for c in result.chunks] == ["para", "other"]
    (drop,) = result.report.dropped
    assert (drop.chunk_id, drop.related) == ("orig", "para")  # the higher-scored copy survives
    assert result.report.notes == ("vectors from embedder",)


def test_semantic_dedup_runs_in_a_pipeline_with_an_embedder_resource(minilm_embedder: Any) -> None:
    from contextwright import Assembler

    asm = Assembler({"stages": [{"type": "semantic_dedup"}]}, budget=500, embedder=minilm_embedder)
    chunks = [
        {"id": "a", "text": "Water boils at 100 degrees Celsius at sea level.", "score": 0.9},
        {"id": "b", "text": "At sea level, water boils at 100 degrees Celsius.", "score": 0.8},
    ]
    ctx = asm.assemble("when does water boil", chunks)
    assert [c.chunk_ids for c in ctx.citations] == [("a",)]
    assert ctx.report.reasons() == {"semantic_duplicate_of": 1}


@pytest.mark.parametrize(
    "stage",
    [
        OverlapDedup(min_overlap_chars=30),
        NearDedup(threshold=0.8, method="exact"),
        SemanticDedup(threshold=0.95, use_chunk_embeddings=False),
    ],
)
def test_document_dedup_stages_round_trip_through_config(stage: Any) -> None:
    assert stage_from_dict(json.loads(json.dumps(stage_to_dict(stage)))) == stage


# properties

_docs = st.lists(
    st.lists(
        st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"]), min_size=1, max_size=30
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(
    _docs,
    st.lists(st.floats(0, 1), min_size=12, max_size=12),
    st.sampled_from(["exact", "minhash"]),
    st.floats(0.3, 1.0),
)
def test_near_dedup_loses_nothing_and_never_drops_the_higher_scored_copy(
    texts: list[list[str]], scores: list[float], method: str, threshold: float
) -> None:
    chunks = chunks_from_dicts(
        [
            {"id": f"c{i}", "text": " ".join(t), "score": scores[i], "source": f"s{i}"}
            for i, t in enumerate(texts)
        ]
    )
    result = NearDedup(method=method, threshold=threshold)(chunks)  # type: ignore[arg-type]
    _nothing_lost(chunks, result)
    by_id = {c.id: c for c in chunks}
    kept = {c.id for c in result.chunks}
    for d in result.report.dropped:
        assert d.related in kept
        loser, winner = by_id[d.chunk_id], by_id[d.related or ""]
        assert (winner.score, -winner.rank) > (loser.score, -loser.rank)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(0.1, 1)), min_size=1, max_size=15),
    st.lists(st.floats(0, 1), min_size=15, max_size=15),
)
def test_semantic_dedup_loses_nothing_and_never_drops_the_higher_scored_copy(
    vectors: list[tuple[float, float, float]], scores: list[float]
) -> None:
    chunks = chunks_from_dicts(
        [
            {"id": f"c{i}", "text": f"t{i}", "score": scores[i], "embedding": list(v)}
            for i, v in enumerate(vectors)
        ]
    )
    result = SemanticDedup(threshold=0.9)(chunks)
    _nothing_lost(chunks, result)
    by_id = {c.id: c for c in chunks}
    for d in result.report.dropped:
        assert isinstance(d, Drop) and d.reason == "semantic_duplicate_of"
        loser, winner = by_id[d.chunk_id], by_id[d.related or ""]
        assert (winner.score, -winner.rank) > (loser.score, -loser.rank)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=30, max_size=120), st.data())
def test_overlap_dedup_loses_nothing_on_random_windows(words: list[str], data: st.DataObject) -> None:
    size = data.draw(st.integers(5, 30))
    stride = data.draw(st.integers(1, size))
    windows = [" ".join(words[s : s + size]) for s in range(0, max(1, len(words) - size + 1), stride)]
    picked = data.draw(st.lists(st.sampled_from(range(len(windows))), unique=True, min_size=1))
    chunks = tuple(
        Chunk(windows[i], id=f"w{i}", doc_id="d", index=i, score=data.draw(st.floats(0, 1))) for i in picked
    )
    result = OverlapDedup(min_overlap_chars=5)(chunks)
    _nothing_lost(chunks, result)
    assert all(c.text.strip() for c in result.chunks)


def test_normalize_text_fast_paths_agree_with_the_full_normalization() -> None:
    import unicodedata

    samples = [f"a{chr(i)}b  C" for i in range(128)] + ["  Mixed\tCase\n text ", "x\x1fy"]
    samples += [f"é{chr(i)}b C" for i in range(0x3100)] + ["ＡＢ  ß", " é\u3000x ", "Ω\u2009ω"]
    for text in samples:
        assert normalize_text(text) == " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def test_normalize_text_collapses_whitespace_as_the_regex_rule_did() -> None:
    """The non-ASCII path decides "anything to collapse" by ``isprintable()`` and ``"  "`` (the
    ASCII space is the only printable whitespace): the same keys as the regex ``[^\\S ]|  `` rule,
    on random texts of every whitespace character, invisible ones and compatibility forms."""
    import random
    import re
    import unicodedata

    from contextwright.stages.dedup import normalize_text

    def by_regex(text: str) -> str:
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
        text = text.casefold()
        return " ".join(text.split()) if re.search(r"[^\S ]|  ", text) else text.strip()

    spaces = [chr(c) for c in range(0x3001) if chr(c).isspace()]
    assert [c for c in spaces if c.isprintable()] == [" "]
    rng = random.Random(4)
    alphabet = [*"aB ", *spaces, "\u00e9", "\u00ad", "\u200b", "\ufeff", "\x07", "\ufb01", "\u0301", "\u0130"]
    for _ in range(20_000):
        text = "\u00e9" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 16)))
        assert normalize_text(text) == by_regex(text), repr(text)
