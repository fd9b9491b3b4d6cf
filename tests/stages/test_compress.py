"""Extractive compression: only when over budget, never the top chunk, sentences kept verbatim with spans."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextwright import Assembler, get_tokenizer
from contextwright.core.errors import ConfigError
from contextwright.core.sentences import split_sentences
from contextwright.model.chunk import Chunk
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.base import stage_from_dict, stage_to_dict
from contextwright.stages.compress import BM25, ExtractiveCompress, overflow_plan
from contextwright.stages.words import terms

QUERY = "When was the Eiffel Tower completed?"


def filler(tag: str) -> str:
    return " ".join(f"Filler sentence {tag}{i} says nothing about anything." for i in range(8))


FILLER = filler("x")


def meter() -> Meter:
    return Meter(get_format("xml"), get_tokenizer("cl100k_base"))


def chunks() -> list[Chunk]:
    return [
        Chunk("The Eiffel Tower is a landmark in Paris. " + filler("t"), id="top", score=9.0),
        Chunk(
            filler("a") + " The Eiffel Tower was completed in 1889. " + filler("b"), id="answer", score=5.0
        ),
        Chunk("Bananas grow in warm climates. " + filler("c"), id="bananas", score=4.0),
        Chunk("The tower was completed by Gustave Eiffel's company. " + filler("d"), id="company", score=3.0),
    ]


def run(stage: ExtractiveCompress, items: list[Chunk], budget: int, **res: Any) -> Any:
    return stage(items, query=QUERY, meter=meter(), budget=budget, **res)


def test_passes_through_untouched_when_everything_fits() -> None:
    items = chunks()
    result = run(ExtractiveCompress(), items, budget=10_000)
    assert result.chunks == tuple(items)
    assert result.report.changed == () and result.report.dropped == ()
    assert "nothing compressed" in result.report.notes[0]


def test_compresses_what_does_not_fit_to_verbatim_sentences_with_spans() -> None:
    items = chunks()
    result = run(ExtractiveCompress(whole_share=0.3), items, budget=250)
    out = {c.id: c for c in result.chunks}
    assert out["top"] == items[0]  # the top chunk is never compressed
    answer = out["answer"]
    assert "compressed" in answer.ops
    assert "The Eiffel Tower was completed in 1889." in answer.text
    source = items[1].text
    pieces = [source[s:e] for s, e in answer.spans]
    assert all(p in answer.text for p in pieces)
    assert set(pieces) <= {source[s:e] for s, e in split_sentences(source)}  # a subsequence of sentences
    change = next(c for c in result.report.changed if c.chunk_id == "answer")
    assert change.action == "compressed" and change.tokens_after < change.tokens_before


def test_chunk_without_any_query_term_is_dropped_as_irrelevant() -> None:
    result = run(ExtractiveCompress(whole_share=0.3), chunks(), budget=250)
    assert [(d.chunk_id, d.reason) for d in result.report.dropped] == [("bananas", "irrelevant")]


def test_min_score_floor_leaves_low_chunks_uncompressed() -> None:
    items = chunks()
    result = run(ExtractiveCompress(whole_share=0.3, min_score=4.5), items, budget=250)
    out = {c.id: c for c in result.chunks}
    assert out["company"] == items[3] and out["bananas"] == items[2]
    assert "compressed" in out["answer"].ops


def test_top_chunk_is_cut_only_when_it_alone_overflows() -> None:
    big = Chunk(FILLER + " The Eiffel Tower was completed in 1889. " + FILLER + FILLER, id="big", score=9.0)
    m = meter()
    budget = 120
    assert overflow_plan([big], m, budget)[1] == [big]
    result = ExtractiveCompress()([big], query=QUERY, meter=m, budget=budget)
    (out,) = result.chunks
    assert "compressed" in out.ops and "completed in 1889" in out.text
    assert m.block_cost(out, 1) + m.frame_cost() <= budget


def test_repeated_sentences_of_overlapping_chunks_are_removed_first() -> None:
    shared = "The Eiffel Tower was completed in 1889."
    a = Chunk("Paris is the capital. " + shared, id="a", score=2.0)
    b = Chunk(shared + " The tower is 330 metres tall. " + FILLER, id="b", score=1.0)
    result = run(ExtractiveCompress(whole_share=1.0), [a, b], budget=60)
    out = {c.id: c for c in result.chunks}
    assert shared not in out["b"].text
    assert out["b"].text.startswith("The tower is 330 metres tall.")
    assert out["b"].spans[0] == (len(shared) + 1, len(shared) + 1 + len("The tower is 330 metres tall."))


def test_tight_preset_keeps_budget_and_accounts_for_every_chunk(cl100k: Any) -> None:
    items = chunks()
    ctx = Assembler("tight", budget=250).assemble(QUERY, items)
    assert len(cl100k.encode_ordinary(ctx.text)) <= 250
    assert "completed in 1889" in ctx.text
    seen = {i for c in ctx.chunks for i in c.member_ids} | {d.chunk_id for d in ctx.report.dropped}
    assert seen == {c.id for c in items}


def test_embedder_scores_sentences_when_configured() -> None:
    np = pytest.importorskip("numpy")
    from contextwright.clients.embed import CallableEmbedder

    def fake_vectors(texts: list[str]) -> Any:  # a real CallableEmbedder over a deterministic function
        return np.array([[1.0, 0.1] if ("1889" in t or "When" in t) else [0.0, 1.0] for t in texts])

    result = run(
        ExtractiveCompress(whole_share=0.3, max_sentences=1),
        chunks(),
        budget=250,
        embedder=CallableEmbedder(fake_vectors),
    )
    out = {c.id: c for c in result.chunks}
    assert out["answer"].text == "The Eiffel Tower was completed in 1889."
    assert any("cosine" in n for n in result.report.notes)


def test_long_sentence_is_cut_to_a_verbatim_word_window_around_the_query_terms() -> None:
    words = " ".join(f"w{i}" for i in range(30))
    long = f"Then {words} and the Eiffel Tower was completed in 1889 {words}."
    items = [
        Chunk("The Eiffel Tower is a landmark in Paris. " + filler("t"), id="top", score=9.0),
        Chunk(filler("a") + " " + long + " " + filler("b"), id="long", score=5.0),
    ]
    result = run(ExtractiveCompress(whole_share=0.3, max_words=12), items, budget=200)
    out = {c.id: c for c in result.chunks}["long"]
    ((start, end),) = out.spans
    piece = items[1].text[start:end]
    assert piece == out.text and piece in long
    assert len(piece.split()) == 12 and "Eiffel Tower was completed" in piece


def test_whole_sentences_are_kept_when_max_words_is_none() -> None:
    words = " ".join(f"w{i}" for i in range(30))
    long = f"Then {words} and the Eiffel Tower was completed in 1889 {words}."
    items = [
        Chunk("The Eiffel Tower is a landmark in Paris. " + filler("t"), id="top", score=9.0),
        Chunk(filler("a") + " " + long + " " + filler("b"), id="long", score=5.0),
    ]
    result = run(ExtractiveCompress(whole_share=0.3, max_words=None), items, budget=400)
    assert {c.id: c for c in result.chunks}["long"].text == long


def test_bm25_ranks_the_matching_sentence_first() -> None:
    bm = BM25([terms("Paris is in France."), terms("Rome is in Italy."), terms("France.")])
    scores = bm.scores(terms("capital of France"))
    assert scores[0] > 0 and scores[1] == 0 and scores[2] > scores[0]  # shorter sentence, same term count


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ratio": 1.5}, "ratio must be a number between 0 and 1"),
        ({"max_sentences": 0}, "max_sentences must be a positive integer or None; got 0"),
        ({"whole_share": -0.1}, "whole_share must be a number from 0 to 1"),
        ({"scoring": "tfidf"}, "scoring must be 'auto', 'bm25' or 'embedding'"),
        ({"min_score": float("nan")}, "min_score must be a finite number or None"),
        ({"length_norm": 1.5}, "length_norm must be a number from 0 to 1"),
        ({"max_words": 0}, "max_words must be a positive integer or None; got 0"),
    ],
)
def test_settings_are_validated(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ExtractiveCompress(**settings)


def test_settings_round_trip() -> None:
    stage = ExtractiveCompress(
        ratio=0.4,
        max_sentences=3,
        whole_share=0.7,
        min_score=1.0,
        scoring="bm25",
        length_norm=0.5,
        max_words=25,
    )
    assert stage_from_dict(stage_to_dict(stage)) == stage


def test_embedding_scoring_without_embedder_says_how_to_fix() -> None:
    with pytest.raises(ConfigError, match="pass embedder= to Assembler"):
        run(ExtractiveCompress(scoring="embedding"), chunks(), budget=250)


@pytest.mark.parametrize("budget", [300, 500])
def test_tight_on_shared_data_keeps_budget_ids_and_verbatim_spans(
    dev_queries: list[dict[str, Any]], cl100k: Any, budget: int
) -> None:
    asm = Assembler("tight", budget=budget)
    compressed = 0
    for q in dev_queries[:15]:
        source = {c["id"]: c["text"] for c in q["chunks"]}
        ctx = asm.assemble(q["question"], q["chunks"])
        assert len(cl100k.encode_ordinary(ctx.text)) <= budget
        seen = {i for c in ctx.chunks for i in c.member_ids} | {d.chunk_id for d in ctx.report.dropped}
        assert seen == set(source)
        for c in ctx.chunks:
            if "compressed" not in c.ops:
                continue
            compressed += 1
            pieces = [source[c.id][s:e] for s, e in c.spans]
            sentences = [source[c.id][s:e] for s, e in split_sentences(source[c.id])]
            for p in pieces:  # a whole sentence, or a window of at most max_words words inside one
                assert p in sentences or (len(p.split()) <= 40 and any(p in s for s in sentences))
            assert " ".join(" ".join(p.split()) for p in pieces) == " ".join(c.text.split())
    assert compressed > 0


_WORDS_FOR_TERMS = st.sampled_from(
    [
        "prize",
        "prizes",
        "prize's",
        "city",
        "cities",
        "churches",
        "church",
        "its",
        "was",
        "wa",
        "bus",
        "Ünïcode",
        "naïve",
        "x_y",
        "1901",
        "Röntgen",
        "cat",
        "catalogue",
        "(cats,",
        "co-prize",
        "—",
        ".",
        "y",
        "Y",
        "gen-y",
        "ties",
        "tie",
        "flies",
        "fly's",
        "ys",
    ]
)


@given(
    st.lists(_WORDS_FOR_TERMS, min_size=1, max_size=12), st.lists(_WORDS_FOR_TERMS, min_size=1, max_size=4)
)
def test_has_term_agrees_with_terms(words: list[str], query: list[str]) -> None:
    from contextwright.stages.words import has_term, terms

    text = " ".join(words)
    have = set(terms(text))
    for t in set(terms(" ".join(query))) | have:
        assert has_term(text.lower(), t) == (t in have), (text, t)


def test_tight_pays_once_for_the_words_consecutive_windows_share(cl100k: Any) -> None:
    # Two overlapping windows of one document cut mid-sentence (as word-window chunkers do, so no
    # whole sentence repeats), then the answer chunk. Paid twice, the overlap would push the answer
    # chunk out of its whole block; `tight` strips it from the less relevant window, and the answer
    # chunk stays whole.
    shared = (
        "designed by the engineer Gustave Eiffel, whose company spent two years building it on the "
        "Champ de Mars for the centennial of the French Revolution, and critics at first called it"
    )
    first = Chunk(
        "The Eiffel Tower is a landmark in Paris. It was " + shared,
        id="paris:0",
        doc_id="paris",
        index=0,
        score=9.0,
    )
    second = Chunk(shared + " an eyesore. " + filler("s"), id="paris:1", doc_id="paris", index=1, score=6.0)
    answer = Chunk("The Eiffel Tower was completed in 1889 for the World's Fair.", id="answer", score=5.0)
    tok = get_tokenizer("cl100k_base")
    lean = Meter(get_format("lean"), tok)
    whole = sum(lean.block_cost(c, 3) for c in (first, second, answer)) + lean.frame_cost()
    budget = whole - len(tok.encode(shared)) // 2  # fits with the overlap paid once, not twice
    ctx = Assembler("tight", budget=budget).assemble(QUERY, [first, second, answer])
    assert len(cl100k.encode_ordinary(ctx.text)) <= budget
    out = {c.id: c for c in ctx.chunks}
    assert out["answer"].text == answer.text  # whole, not cut
    assert out["paris:0"].text == first.text
    assert ctx.text.count("Champ de Mars") == 1
    assert [c.chunk_id for c in ctx.report.changed if c.action == "overlap_stripped"] == ["paris:1"]
    cited = next(c for c in ctx.citations if c.chunk_ids == ("paris:1",))
    assert [second.text[s:e] for s, e in cited.spans] == [out["paris:1"].text.strip()]
    assert out["paris:1"].text.strip().startswith("an eyesore.")
