"""The ``worse`` gate over several comparisons reads Bonferroni intervals (``eval --fail-if``, ``fit
--fail-if``): a change that reads as naive no longer fails one comparison in forty by chance, times
how many the gate checks. The other rules are unchanged."""

from __future__ import annotations

import pytest

from contextwright.eval.fit import Confirmation, FitResult
from contextwright.eval.fit_space import START, candidate_config
from contextwright.eval.gate import FAIL_RULES, fails, family_confidence, gate_intervals, rule_test
from contextwright.eval.metrics import paired_bootstrap_delta
from contextwright.eval.reader_results import ReaderAnswer, summarize_reader

N = 30  # queries per cell


def _cell(strategy: str, budget: int, losses: int) -> list[ReaderAnswer]:
    """``N`` answers of ``strategy`` at ``budget``: naive's right answers, ``losses`` of them missed."""
    return [
        ReaderAnswer(f"q{i}", strategy, budget, ok=True, answer="x", correct=i >= losses) for i in range(N)
    ]


def _run(losses: dict[tuple[str, int], int]) -> list[ReaderAnswer]:
    budgets = sorted({b for _, b in losses})
    return [a for b in budgets for a in _cell("naive", b, 0)] + [
        a for (s, b), m in losses.items() for a in _cell(s, b, m)
    ]


def _judged(answers: list[ReaderAnswer]) -> list[tuple[str, int, float, float]]:
    return [
        (s.strategy, s.budget, s.delta_low, s.delta_high)
        for s in summarize_reader(answers)
        if s.strategy != "naive" and s.delta_low is not None and s.delta_high is not None
    ]


def test_the_family_level_is_bonferroni_and_the_words_say_so() -> None:
    assert family_confidence(1) == pytest.approx(0.95)
    assert family_confidence(6) == pytest.approx(1 - 0.05 / 6)
    assert rule_test("worse", 1) == FAIL_RULES["worse"][1] == "the whole 95 % interval below zero"
    assert rule_test("worse", 6) == "the whole 99.17 % interval below zero (Bonferroni over 6 comparisons)"
    for rule in ("under-naive", "not-better"):  # one reads point estimates; the other needs no correction
        assert rule_test(rule, 6) == FAIL_RULES[rule][1]


def test_six_small_losses_that_each_fail_alone_pass_the_gate_over_six_and_a_real_loss_still_fails() -> None:
    cells = {(s, b): 4 for s in ("qa", "tight", "frugal") for b in (500, 1000)}
    answers = _run(cells)
    judged = _judged(answers)
    assert len(judged) == 6
    # each alone, at 95 %: 4 misses in 30 is a loss the interval shows
    assert all(fails("worse", -4 / N, low, high) for _, _, low, high in judged)
    gated = gate_intervals("worse", answers, judged)
    assert not any(fails("worse", -4 / N, *gated[(s, b)]) for s, b, _, _ in judged)
    x, y = [True] * N, [i >= 4 for i in range(N)]
    assert gated[("qa", 500)] == paired_bootstrap_delta(x, y, confidence=family_confidence(6))[1:]  # type: ignore[index]

    answers = _run({**cells, ("qa", 500): 12})  # 12 in 30: a loss the corrected interval shows too
    gated = gate_intervals("worse", answers, _judged(answers))
    assert [k for k, (low, high) in gated.items() if fails("worse", -0.1, low, high)] == [("qa", 500)]


@pytest.mark.parametrize("rule", ["under-naive", "not-better"])
def test_the_other_rules_and_a_single_comparison_read_the_95_interval(rule: str) -> None:
    answers = _run({("qa", 500): 4, ("qa", 1000): 4})
    judged = _judged(answers)
    assert gate_intervals(rule, answers, judged) == {(s, b): (lo, hi) for s, b, lo, hi in judged}
    one = _run({("qa", 500): 4})
    assert gate_intervals("worse", one, _judged(one)) == {(s, b): (lo, hi) for s, b, lo, hi in _judged(one)}


def _confirmation(budget: int, low: float, high: float, family: tuple[float, float] | None) -> Confirmation:
    return Confirmation(
        budget=budget,
        queries=145,
        accuracy=0.25,
        naive_accuracy=0.28,
        delta=-0.03,
        delta_low=low,
        delta_high=high,
        p_value=0.2,
        tokens_mean=300.0,
        naive_tokens_mean=float(budget),
        retention=0.9,
        naive_retention=0.9,
        bare_share=0.0,
        naive_bare_share=0.0,
        family_low=None if family is None else family[0],
        family_high=None if family is None else family[1],
    )


def test_a_fit_gates_worse_on_the_interval_corrected_for_its_budgets() -> None:
    setting = {**START, "amount": "cap:400"}
    meta = {"model": "m", "confirm_queries": 145, "fit_queries": 155}
    two = FitResult(
        setting,
        candidate_config(setting),
        (),
        (
            _confirmation(500, -0.07, -0.005, (-0.08, 0.004)),  # shown at 95 %, not over two budgets
            _confirmation(1000, -0.12, -0.03, (-0.13, -0.02)),  # shown either way
        ),
        meta,
    )
    assert two.failing("worse") == (1000,)
    assert two.failing("not-better") == (500, 1000) and two.failing("under-naive") == (500, 1000)
    one = FitResult(setting, candidate_config(setting), (), (_confirmation(500, -0.07, -0.005, None),), meta)
    assert one.failing("worse") == (500,)  # one budget: its 95 % interval
