"""The ``worse`` gate over several comparisons reads simultaneous intervals (``eval --fail-if``,
``fit --fail-if``; max-T bootstrap since stop 63, Bonferroni from stop 59): a change that reads as
naive no longer fails one comparison in forty by chance, times how many the gate checks, and
comparisons that move together are not corrected as if they were independent. The other rules are
unchanged."""

from __future__ import annotations

import random

import pytest

from contextwright.core.errors import ConfigError
from contextwright.eval.fit import Confirmation, FitResult
from contextwright.eval.fit_space import START, candidate_config
from contextwright.eval.gate import FAIL_RULES, fails, gate_intervals, joint_intervals, rule_test
from contextwright.eval.metrics import paired_bootstrap_delta
from contextwright.eval.reader_results import ReaderAnswer, summarize_reader

N = 30  # queries per cell


def _cell(strategy: str, budget: int, losses: int, first: int = 0) -> list[ReaderAnswer]:
    """``N`` answers of ``strategy`` at ``budget``: naive's right answers, ``losses`` of them missed
    (questions ``first``, ``first + 1``, ...)."""
    missed = {(first + k) % N for k in range(losses)}
    return [
        ReaderAnswer(f"q{i}", strategy, budget, ok=True, answer="x", correct=i not in missed)
        for i in range(N)
    ]


def _run(losses: dict[tuple[str, int], int], *, apart: bool = True) -> list[ReaderAnswer]:
    """Naive at each budget, and each ``(strategy, budget)`` missing its number of naive's right
    answers: each cell its own questions (``apart``), or all the same ones."""
    budgets = sorted({b for _, b in losses})
    return [a for b in budgets for a in _cell("naive", b, 0)] + [
        a for k, ((s, b), m) in enumerate(losses.items()) for a in _cell(s, b, m, 5 * k if apart else 0)
    ]


def _judged(answers: list[ReaderAnswer]) -> list[tuple[str, int, float, float]]:
    return [
        (s.strategy, s.budget, s.delta_low, s.delta_high)
        for s in summarize_reader(answers)
        if s.strategy != "naive" and s.delta_low is not None and s.delta_high is not None
    ]


def test_the_words_name_the_simultaneous_intervals() -> None:
    assert rule_test("worse", 1) == FAIL_RULES["worse"][1] == "the whole 95 % interval below zero"
    assert rule_test("worse", 6) == (
        "the whole 95 % interval below zero, simultaneous over 6 comparisons (max-T bootstrap)"
    )
    for rule in ("under-naive", "not-better"):  # one reads point estimates; the other needs no correction
        assert rule_test(rule, 6) == FAIL_RULES[rule][1]


def _coin(seed: int, n: int = 200) -> dict[str, tuple[bool, bool]]:
    """``n`` paired questions, each side right half the time, independently (seeded)."""
    rng = random.Random(seed)
    return {f"q{i}": (rng.random() < 0.5, rng.random() < 0.5) for i in range(n)}


def _width(ends: tuple[float, float] | None) -> float:
    assert ends is not None
    return ends[1] - ends[0]


def test_joint_intervals_widen_with_independent_comparisons_not_with_copies() -> None:
    one = _coin(3)
    (alone,) = joint_intervals([one])
    # six copies of one comparison give no more chances to fail: each reads as it alone
    assert all(e == pytest.approx(alone, abs=0.012) for e in joint_intervals([one] * 6))
    # six independent ones: about Bonferroni's width (z 2.64 at 99.17 % against 1.96 at 95 %)
    independent = [_coin(s) for s in range(10, 16)]
    for ends, o in zip(joint_intervals(independent), independent, strict=True):
        assert 1.2 < _width(ends) / _width(joint_intervals([o])[0]) < 1.5
    assert 0.1 < _width(alone) < 0.3
    assert joint_intervals([{}, one])[0] is None and joint_intervals([]) == []
    assert joint_intervals([one], own=[(-0.9, 0.9)]) == [(-0.9, 0.9)]  # never narrower than its own
    with pytest.raises(ConfigError, match=r"confidence must be in \(0, 1\), e.g. 0.95; got 95"):
        joint_intervals([one], confidence=95)
    with pytest.raises(ConfigError, match="iterations must be a positive integer"):
        joint_intervals([one], iterations=0)


def test_a_gate_over_comparisons_reading_as_naive_fails_by_chance_about_one_run_in_forty() -> None:
    """200 simulated runs of 4 comparisons that read exactly as naive (150 questions, 20 %
    discordant, half each way): the runs where some interval lies wholly below zero stay near 2.5 %
    (at 95 % each, with no correction, about 10 %)."""
    fails_ = 0
    for run in range(200):
        rng = random.Random(run)
        cells = []
        for _ in range(4):
            draws = [rng.random() for _ in range(150)]
            cells.append({f"q{i}": (u >= 0.1, u < 0.1 or u >= 0.2) for i, u in enumerate(draws)})
        ends = joint_intervals(cells, iterations=400, seed=run)
        fails_ += any(e is not None and e[1] < 0 for e in ends)
    assert fails_ <= 12  # 2.5 % is 5 of 200; 12 or more would be a real excess (p < 0.005)


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
    own = paired_bootstrap_delta(x, y)
    assert own is not None and gated[("qa", 500)][1] > own[2]  # wider than its own 95 % interval

    answers = _run({**cells, ("qa", 500): 12})  # 12 in 30: a loss the corrected interval shows too
    gated = gate_intervals("worse", answers, _judged(answers))
    assert [k for k, (low, high) in gated.items() if fails("worse", -0.1, low, high)] == [("qa", 500)]


def test_one_loss_seen_in_six_cells_is_judged_as_one_not_corrected_six_times() -> None:
    """The same 5 of 30 questions missed in six cells (one change, measured six ways): the
    simultaneous intervals are each cell's own 95 % one, as for a single comparison, and show the
    loss; Bonferroni (stop 59 to 62) read each at 99.17 %, as if the six were independent."""
    cells = {(s, b): 5 for s in ("qa", "tight", "frugal") for b in (500, 1000)}
    answers = _run(cells, apart=False)
    judged = _judged(answers)
    gated = gate_intervals("worse", answers, judged)
    for s, b, low, high in judged:
        assert gated[(s, b)] == pytest.approx((low, high), abs=0.02)
        assert fails("worse", -5 / N, *gated[(s, b)])


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
