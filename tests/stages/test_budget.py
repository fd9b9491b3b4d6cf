"""Tests of the selection policies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.core.errors import ConfigError
from contextwright.model.convert import chunks_from_dicts
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.budget import TokenBudget, sentence_ends
from contextwright.tokens import get_tokenizer


def meter(fmt: str = "minimal") -> Meter:
    return Meter(get_format(fmt), get_tokenizer("cl100k_base"))


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()


def text_of(n_words: int, seed: int = 0) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n_words)) + "."


def test_greedy_skips_a_misfit_and_continues() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "big", "text": text_of(200), "score": 0.9},
            {"id": "small1", "text": text_of(10), "score": 0.8},
            {"id": "small2", "text": text_of(10, 3), "score": 0.7},
        ]
    )
    m = meter()
    budget = m.tokens(chunks[1]) + m.tokens(chunks[2]) + 5
    result = TokenBudget()(chunks, meter=m, budget=budget)
    assert [c.id for c in result.chunks] == ["small1", "small2"]
    assert [(d.chunk_id, d.reason) for d in result.report.dropped] == [("big", "over_budget")]


def test_stop_policy_stops_at_the_first_misfit() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "big", "text": text_of(200), "score": 0.9},
            {"id": "small", "text": text_of(10), "score": 0.8},
        ]
    )
    result = TokenBudget(policy="stop")(chunks, meter=meter(), budget=50)
    assert result.chunks == ()
    assert {d.chunk_id for d in result.report.dropped} == {"big", "small"}


def test_truncate_cuts_the_best_misfit_at_a_sentence_end() -> None:
    long = " ".join(f"Sentence number {i} talks about {WORDS[i % 10]}." for i in range(40))
    chunks = chunks_from_dicts(
        [{"id": "a", "text": text_of(20), "score": 0.9}, {"id": "long", "text": long, "score": 0.5}]
    )
    m = meter()
    result = TokenBudget(policy="truncate")(chunks, meter=m, budget=150)
    assert [c.id for c in result.chunks] == ["a", "long"]
    cut = result.chunks[1]
    assert cut.text.endswith(".") and long.startswith(cut.text) and len(cut.text) < len(long)
    assert "truncated" in cut.ops and cut.spans == ((0, len(cut.text)),)
    (change,) = result.report.changed
    assert change.action == "truncated" and change.tokens_after < change.tokens_before
    assert m.tokens(chunks[0]) + m.tokens(cut) <= 150


def test_truncate_declines_when_the_remainder_is_not_useful() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunks_from_dicts([{"id": "long", "text": long, "score": 0.5}])
    result = TokenBudget(policy="truncate", min_truncated_tokens=50)(chunks, meter=meter(), budget=20)
    assert result.chunks == () and result.report.dropped[0].reason == "over_budget"


def test_blocks_policy_keeps_or_drops_whole_documents() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "a0", "text": text_of(30), "doc_id": "A", "index": 0, "score": 0.9},
            {"id": "b0", "text": text_of(30, 1), "doc_id": "B", "index": 0, "score": 0.8},
            {"id": "a1", "text": text_of(30, 2), "doc_id": "A", "index": 1, "score": 0.1},
        ]
    )
    m = meter("grouped")
    a_cost = m.doc_cost(chunks[0]) + m.block_cost(chunks[0], 3) + m.block_cost(chunks[2], 3)
    result = TokenBudget(policy="blocks")(chunks, meter=m, budget=a_cost + 5)
    assert [c.id for c in result.chunks] == ["a0", "a1"]
    assert [d.chunk_id for d in result.report.dropped] == ["b0"]


def test_budget_counts_the_rendered_block_not_just_the_text() -> None:
    chunks = chunks_from_dicts([{"id": "a", "text": text_of(20), "score": 1.0, "title": "A long title " * 5}])
    m = meter("xml")
    exact = m.frame_cost() + m.block_cost(chunks[0], 1)
    assert TokenBudget()(chunks, meter=m, budget=exact).chunks
    assert not TokenBudget()(chunks, meter=m, budget=exact - 1).chunks


@pytest.mark.parametrize(("setting", "value"), [("policy", "best"), ("min_truncated_tokens", 0)])
def test_settings_are_validated(setting: str, value: object) -> None:
    with pytest.raises(ConfigError, match=setting):
        TokenBudget(**{setting: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("One. Two! Three?", ["One.", "One. Two!", "One. Two! Three?"]),
        (
            "Dr. Smith paid $3.50 today. Then left.",
            ["Dr. Smith paid $3.50 today.", "Dr. Smith paid $3.50 today. Then left."],
        ),
        ('He said "stop." Then it stopped.', ['He said "stop."', 'He said "stop." Then it stopped.']),
        ("No end", ["No end"]),
    ],
)
def test_sentence_ends(text: str, ends: list[str]) -> None:
    assert [text[:e] for e in sentence_ends(text)] == ends


def test_truncate_cuts_the_first_misfit_before_lower_ranked_chunks_take_the_room() -> None:
    long = " ".join(f"Sentence number {i} talks about {WORDS[i % 10]}." for i in range(40))
    chunks = chunks_from_dicts(
        [
            {"id": "best", "text": text_of(20), "score": 0.9},
            {"id": "long", "text": long, "score": 0.8},
            {"id": "short", "text": text_of(25, 4), "score": 0.1},
        ]
    )
    m = meter()
    budget = m.tokens(chunks[0]) + m.tokens(chunks[2]) + 10
    greedy = TokenBudget()(chunks, meter=m, budget=budget)
    assert [c.id for c in greedy.chunks] == ["best", "short"]
    cut = TokenBudget(policy="truncate")(chunks, meter=m, budget=budget)
    assert [c.id for c in cut.chunks] == ["best", "long"]
    assert "truncated" in cut.chunks[1].ops
    assert [(d.chunk_id, d.reason) for d in cut.report.dropped] == [("short", "over_budget")]


def test_blocks_policy_drops_from_the_tail() -> None:
    # documents ranked A (best), B (too big), C (small): the tail rule drops B and everything after it
    chunks = chunks_from_dicts(
        [
            {"id": "a", "doc_id": "A", "text": "alpha " * 5, "score": 0.9},
            {"id": "b", "doc_id": "B", "text": "beta " * 200, "score": 0.8},
            {"id": "c", "doc_id": "C", "text": "gamma", "score": 0.7},
        ]
    )
    result = TokenBudget(policy="blocks")(chunks, meter=meter(), budget=60)
    assert [c.id for c in result.chunks] == ["a"]
    assert {d.chunk_id for d in result.report.dropped} == {"b", "c"}
    assert all(d.reason == "over_budget" for d in result.report.dropped)


# -- fill: the whole budget in rank order ---------------------------------------------------------

FACTS = (
    "The valley is quiet in winter. "
    "Farmers grow barley on the terraces. "
    "The first bridge over the river was built by Roman engineers in 120 AD. "
    "Its stone arches still carry traffic. "
    "Tourists come for the wine festival in autumn."
)


def test_fill_cuts_the_misfit_to_its_most_relevant_sentences_and_goes_on() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "top", "text": text_of(30), "score": 0.9},
            {"id": "facts", "text": FACTS, "score": 0.8},
            {"id": "tiny", "text": "Short.", "score": 0.1},
        ]
    )
    m = meter()
    four = FACTS[: FACTS.index(" Tourists")]  # all but the last sentence
    budget = m.tokens(chunks[0]) + m.tokens(chunks_from_dicts([{"text": four}])[0]) + m.tokens(chunks[2])
    result = TokenBudget(policy="fill")(chunks, meter=m, budget=budget, query="who built the first bridge?")
    assert [c.id for c in result.chunks] == ["top", "facts", "tiny"]  # the room left still takes "tiny"
    cut = result.chunks[1]
    assert cut.text == four  # every query term covered, and as much text as fits
    assert cut.text.endswith(".") and cut.text in FACTS and "truncated" in cut.ops
    start = FACTS.index(cut.text)
    assert cut.spans == ((start, start + len(cut.text)),)
    (change,) = result.report.changed
    assert change.chunk_id == "facts" and change.action == "truncated"
    assert change.tokens_before == m.tokens(chunks[1]) and change.tokens_after == m.tokens(cut)
    assert "most relevant to the query" in change.detail
    assert sum(m.block_cost(c, 3) for c in result.chunks) <= budget
    # With less room, the window moves to the sentences that hold the query terms.
    small = TokenBudget(policy="fill", min_truncated_tokens=5)(
        chunks[1:2], meter=m, budget=20, query="who built the first bridge?"
    )
    assert small.chunks[0].text == "The first bridge over the river was built by Roman engineers in 120 AD."


def test_fill_without_query_terms_keeps_the_window_with_the_most_text() -> None:
    chunks = chunks_from_dicts([{"id": "facts", "text": FACTS, "score": 0.8}])
    m = meter()
    result = TokenBudget(policy="fill")(chunks, meter=m, budget=m.tokens(chunks[0]) // 2)
    (cut,) = result.chunks
    assert (
        cut.text
        == "The first bridge over the river was built by Roman engineers in 120 AD. Its stone arches still carry traffic."
    )
    same = TokenBudget(policy="fill")(chunks, meter=m, budget=m.tokens(chunks[0]) // 2, query="zebra")
    assert same.chunks == result.chunks


def test_fill_cuts_at_words_only_when_no_sentence_fits() -> None:
    one = (
        "In the long and winding history of the town "
        + "the old mill and the market " * 6
        + ("the bridge was built by Roman engineers and it still stands today.")
    )
    chunks = chunks_from_dicts([{"id": "one", "text": one, "score": 1.0}])
    m = meter()
    result = TokenBudget(policy="fill", min_truncated_tokens=5)(
        chunks, meter=m, budget=30, query="who built the bridge"
    )
    (cut,) = result.chunks
    assert "bridge was built by Roman" in cut.text and cut.text in one
    assert m.block_cost(cut, 1) <= 30
    assert "no whole sentence fits" in result.report.changed[0].detail


def test_fill_drops_what_cannot_hold_a_useful_remainder() -> None:
    chunks = chunks_from_dicts([{"id": "facts", "text": FACTS, "score": 0.8}])
    result = TokenBudget(policy="fill", min_truncated_tokens=30)(
        chunks, meter=meter(), budget=20, query="bridge"
    )
    assert result.chunks == ()
    assert [(d.chunk_id, d.reason) for d in result.report.dropped] == [("facts", "over_budget")]


def test_fill_prefers_the_next_ranked_text_over_a_lower_ranked_chunk_that_fits() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "best", "text": text_of(20), "score": 0.9},
            {"id": "facts", "text": FACTS, "score": 0.8},
            {"id": "low", "text": text_of(25, 4), "score": 0.1},
        ]
    )
    m = meter()
    budget = m.tokens(chunks[0]) + m.tokens(chunks[2]) + 2
    greedy = TokenBudget()(chunks, meter=m, budget=budget)
    assert [c.id for c in greedy.chunks] == ["best", "low"]
    fill = TokenBudget(policy="fill")(chunks, meter=m, budget=budget, query="bridge engineers")
    assert [c.id for c in fill.chunks][:2] == ["best", "facts"]
    assert "truncated" in fill.chunks[1].ops


def test_fill_spans_compose_with_an_earlier_cut() -> None:
    from contextwright.model.spans import join_pieces

    original = chunks_from_dicts([{"id": "facts", "text": FACTS, "score": 1.0}])[0]
    # An earlier stage kept sentences 1, 3 and 5.
    ends = [0, *sentence_ends(FACTS)]
    kept = [(ends[0], ends[1]), (ends[2] + 1, ends[3]), (ends[4] + 1, ends[5])]
    from contextwright.model.spans import compose

    squeezed = original.with_ops("compressed", text=join_pieces(FACTS, kept), spans=compose(original, kept))
    m = meter()
    result = TokenBudget(policy="fill")(
        (squeezed,), meter=m, budget=m.tokens(squeezed) - 8, query="Roman bridge"
    )
    (cut,) = result.chunks
    assert "Roman engineers" in cut.text
    assert " ".join(FACTS[a:b] for a, b in cut.spans) == cut.text


def _direct_sizes(tokenizer, text):  # type: ignore[no-untyped-def]
    from contextwright.stages.words import lowered_sentences as _sentences

    spans = _sentences(text)[0]
    alone = tuple(tokenizer.base.count(text[s:e]) for s, e in spans)
    cum = [0]
    for k in range(1, len(spans)):
        cum.append(cum[-1] + tokenizer.base.count(text[spans[k - 1][1] : spans[k][1]]))
    return alone, tuple(cum)


_SENTENCE_PARTS = [
    "The", "cat", "McDonald's", "it's", "1990", "3.5", "U.S.", "(a)", '"Quoted"', "é", "naïve", "—", ",",
    "x", "Zoë", "'s", "and", "\u00a0", "/", "dogs'",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    sentences=st.lists(
        st.lists(st.sampled_from(_SENTENCE_PARTS), min_size=1, max_size=6).map(" ".join),
        min_size=1,
        max_size=4,
    ),
    glue=st.sampled_from([". ", ".  ", ".\n", "! ", "? \t", ".\n\n"]),
    enc=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_sentence_sizes_from_heads_equal_counting_each_sentence_with_its_lead_in(
    sentences: list[str], glue: str, enc: str
) -> None:
    from contextwright.stages.words import sentence_sizes as _sentence_sizes

    tokenizer = get_tokenizer(enc)
    text = glue.join(s[:1].upper() + s[1:] for s in sentences) + "."
    _sentence_sizes.cache_clear()
    assert _sentence_sizes(tokenizer, text) == _direct_sizes(tokenizer, text)


def test_sentence_sizes_on_the_dev_data(dev_queries: list) -> None:
    from contextwright.stages.words import sentence_sizes as _sentence_sizes

    tokenizer = get_tokenizer("cl100k_base")
    for q in dev_queries[:100]:
        for c in q["chunks"]:
            assert _sentence_sizes(tokenizer, c["text"]) == _direct_sizes(tokenizer, c["text"])


def test_query_term_idf_over_joined_chunks_equals_a_test_per_chunk_and_term(dev_queries: list) -> None:
    import math

    from contextwright.stages.budget import _Relevance
    from contextwright.stages.words import terms

    def starts_a_word(low: str, term: str) -> bool:
        at = low.find(term)
        while at >= 0:
            if at == 0 or not (low[at - 1].isalnum() or low[at - 1] == "_"):
                return True
            at = low.find(term, at + 1)
        return False

    for q in dev_queries:
        chunks = chunks_from_dicts(q["chunks"])
        wanted = list(dict.fromkeys(terms(q["question"])))
        df = {t: sum(starts_a_word(c.text.lower(), t) for c in chunks) for t in wanted}
        n = len(chunks)
        expected = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items() if f}
        assert _Relevance(q["question"], chunks).idf == expected
    # a term inside a word (not counted), then starting a word; at the very start of a later chunk
    chunks = chunks_from_dicts([{"text": "xprize and prize"}, {"text": "prizes here"}, {"text": "xprize"}])
    assert _Relevance("prize", chunks).idf == {"prize": math.log(1.0 + (3 - 2 + 0.5) / (2 + 0.5))}
