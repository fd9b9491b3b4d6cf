"""Metric functions on small hand-computed fixtures, and the labels of the shared data."""

from __future__ import annotations

from typing import Any

import pytest

from contextwright.eval.metrics import (
    answer_in_text,
    chunk_retention,
    first_answer_block,
    in_middle_third,
    median,
    normalize_answer,
    normalize_answer_unicode,
    normalized_position,
    percentile,
    redundancy,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Beatles", "beatles"),
        ("  An  apple,  a day!! ", "apple day"),
        ("Idaho's", "idahos"),
        ("noble-gas", "noblegas"),
        ("Röntgen", "röntgen"),
        ("Ro\u0308ntgen", "röntgen"),  # decomposed ö equals the composed one
        ("theater", "theater"),  # only whole-word articles go
        ("", ""),
    ],
)
def test_normalize_answer_follows_squad(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Idaho's", "idaho s"),
        ("noble-gas", "noble gas"),
        ("narrator—Orwell", "narrator orwell"),
        ("“Quoted” « text »", "quoted text"),
        ("£5 + €3", "5 3"),  # symbols (Sc, Sm) become spaces too
        ("The end.", "end"),
    ],
)
def test_normalize_answer_unicode_turns_punctuation_and_symbols_into_spaces(text: str, expected: str) -> None:
    assert normalize_answer_unicode(text) == expected


@pytest.mark.parametrize(
    ("text", "answers", "expected"),
    [
        ("The first prize went to Wilhelm Conrad Röntgen in 1901.", ["Wilhelm Conrad Röntgen"], True),
        ("the first prize went to WILHELM CONRAD RÖNTGEN", ["Wilhelm Conrad Röntgen"], True),
        # cut in the middle of the answer: not retained
        ("The first prize went to Wilhelm Conrad Rö", ["Wilhelm Conrad Röntgen"], False),
        ("The first prize went to Wilhelm Conrad", ["Wilhelm Conrad Röntgen"], False),
        # whole tokens only: no "0" inside "100", no "Ed" inside "directed"
        ("It cost 100 dollars", ["0"], False),
        ("It was directed by him", ["Ed"], False),
        ("In 1901", ["190"], False),
        # the Unicode variant finds answers glued to punctuation
        ("Boise is Idaho's capital", ["Idaho"], True),
        ("a noble-gas element", ["gas"], True),
        ("the narrator—Orwell himself", ["Orwell"], True),
        # the SQuAD variant finds answers whose punctuation the text lacks
        ("Shes a star", ["She's"], True),
        # any of several answers
        ("Canberra it is", ["Sydney", "Canberra"], True),
        # an answer that normalizes to nothing never matches
        ("the cat", ["the"], False),
        ("anything", ["?!"], False),
        ("", ["x"], False),
        ("some text", [], False),
    ],
)
def test_answer_in_text_matches_whole_word_sequences(text: str, answers: list[str], expected: bool) -> None:
    assert answer_in_text(text, answers) is expected


def test_answer_in_text_reproduces_every_has_answer_label_of_the_dev_data(
    dev_queries: list[dict[str, Any]],
) -> None:
    mismatches = [
        (q["id"], c["id"])
        for q in dev_queries
        for c in q["chunks"]
        if answer_in_text(c["text"], q["answers"]) != c["has_answer"]
    ]
    assert mismatches == []


def test_chunk_retention_counts_answer_ids_among_output_ids() -> None:
    assert chunk_retention({"a", "b", "c"}, ["c", "x", "a", "a"]) == (2, 3)
    assert chunk_retention(set(), ["x"]) == (0, 0)
    assert chunk_retention({"a"}, []) == (0, 1)


def test_first_answer_block_is_by_text_and_takes_the_first_of_ties() -> None:
    blocks = ["Paris is big.", "Founded 753 BC.", "Rome: 753 BC again."]
    assert first_answer_block(blocks, ["753 BC"]) == 1
    assert first_answer_block(["nothing here"], ["753 BC"]) is None
    assert first_answer_block([], ["753 BC"]) is None
    # a block cut before the end of the answer does not bear it
    assert first_answer_block(["Founded 753", "Later: 753 BC"], ["753 BC"]) == 1


@pytest.mark.parametrize(
    ("index", "n", "expected"),
    [(0, 1, 0.0), (0, 2, 0.0), (1, 2, 1.0), (2, 5, 0.5), (1, 4, 1 / 3), (19, 20, 1.0)],
)
def test_normalized_position_maps_first_to_0_and_last_to_1(index: int, n: int, expected: float) -> None:
    assert normalized_position(index, n) == pytest.approx(expected)


def test_normalized_position_rejects_an_index_outside_the_blocks() -> None:
    with pytest.raises(ValueError, match=r"index must be in range\(n_blocks=3\); got 3"):
        normalized_position(3, 3)


@pytest.mark.parametrize(
    ("n", "middle"),
    [
        (1, []),
        (2, []),
        (3, [1]),
        (4, [1, 2]),  # positions 1/3 and 2/3: the boundaries belong to the middle third
        (7, [2, 3, 4]),
        (20, [7, 8, 9, 10, 11, 12]),
    ],
)
def test_in_middle_third_has_exact_boundaries(n: int, middle: list[int]) -> None:
    assert [i for i in range(n) if in_middle_third(i, n)] == middle


def test_redundancy_counts_the_overlap_of_two_chunks() -> None:
    assert redundancy(["b c d e f g h i j k", "f g h i j k l m n o"], n=3) == (6, 20)


def test_redundancy_counts_an_exact_duplicate_block_wholly() -> None:
    block = "one two three four five six seven eight nine ten"
    assert redundancy([block, "alpha beta gamma", block]) == (10, 23)


def test_redundancy_ignores_chance_short_repeats_and_repeats_inside_one_block() -> None:
    first = "one of the first people to land on moon was armstrong"
    second = "one of the first cars to cross the desert was a jeep"
    assert redundancy([first, second]) == (0, 19)  # 10 + 9 words once articles are dropped
    assert redundancy(["x y z x y z x y z"], n=3) == (0, 9)


def test_redundancy_of_an_empty_or_tiny_output_is_zero() -> None:
    assert redundancy([]) == (0, 0)
    assert redundancy(["short", "short"]) == (0, 2)


def test_redundancy_rejects_a_shingle_size_below_one() -> None:
    with pytest.raises(ValueError, match="n must be >= 1; got 0"):
        redundancy(["a"], n=0)


def test_median_and_percentile_on_hand_computed_values() -> None:
    assert median([]) is None
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 95) == 19.0
    assert percentile(values, 100) == 20.0
    assert percentile(values, 0) == 1.0
    assert percentile([], 95) is None
    with pytest.raises(ValueError, match="q must be in"):
        percentile(values, 101)


# -- intervals and paired tests ----------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 30), (4, 30), (15, 30), (30, 30), (97, 300)])
def test_wilson_interval_matches_scipy(k: int, n: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    from contextwright.eval.metrics import wilson_interval

    ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson_interval(k, n) or (None, None)
    assert lo == pytest.approx(ref.low, abs=1e-6) and hi == pytest.approx(ref.high, abs=1e-6)


def test_wilson_interval_of_nothing_is_none_and_bad_counts_raise() -> None:
    from contextwright.eval.metrics import wilson_interval

    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="successes <= n"):
        wilson_interval(5, 3)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 9), (9, 1), (5, 5), (0, 12), (20, 31)])
def test_mcnemar_exact_is_a_two_sided_binomial_test_of_the_discordant_pairs(b: int, c: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    from contextwright.eval.metrics import mcnemar_exact

    expected = 1.0 if b + c == 0 else stats.binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9)


def test_paired_bootstrap_delta_is_deterministic_and_brackets_the_mean() -> None:
    from contextwright.eval.metrics import paired_bootstrap_delta

    a = [True] * 10 + [False] * 30
    b = [True] * 10 + [True] * 12 + [False] * 18
    delta, lo, hi = paired_bootstrap_delta(a, b) or (0, 0, 0)
    assert delta == pytest.approx(12 / 40) and lo < delta < hi and lo > 0
    assert paired_bootstrap_delta(a, b) == paired_bootstrap_delta(a, b)
    assert paired_bootstrap_delta(a, a) == (0.0, 0.0, 0.0)
    assert paired_bootstrap_delta([], []) is None
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap_delta([True], [])
