"""The rules of a CI gate on a paired comparison with naive: ``fit --fail-if`` and ``eval --fail-if``.

Each rule reads one comparison (a strategy or a fitted profile minus naive, at one budget, on the
same queries): its point estimate and the ends of its 95 % paired interval. ``under-naive`` fails
on the point estimate below zero, ``worse`` on the whole interval below zero (a loss the queries
show), ``not-better`` on the interval reaching zero or below (no gain the queries show). On a few
hundred queries the interval is several points wide, so the three gates differ in practice.

A gate judges several comparisons at once (each strategy at each budget, each budget of a fit).
``worse`` fails when *any* of them shows a loss, so with k comparisons at 95 % each a change that
reads exactly as naive would fail it by chance up to k × 2.5 % of the time (18 comparisons: about
one run in three). It therefore reads each interval at :func:`family_confidence` (Bonferroni,
``1 − 0.05 / k``), which keeps that chance at 2.5 % for the whole gate. ``not-better`` passes only
when *every* comparison shows a gain, an intersection-union test: each at 95 % already keeps the
chance of a false pass at 2.5 %, and a correction would only make it stricter. ``under-naive``
reads point estimates, not intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextwright.core.errors import ConfigError

__all__ = [
    "FAIL_RULES",
    "check_rule",
    "fails",
    "family_confidence",
    "family_interval",
    "gate_intervals",
    "rule_test",
]

#: Each rule's words: what a failing comparison does, and the test that says so.
FAIL_RULES: Mapping[str, tuple[str, str]] = {
    "under-naive": ("reads under naive", "its point estimate below zero"),
    "worse": ("reads worse than naive", "the whole 95 % interval below zero"),
    "not-better": ("is not confirmed better than naive", "the 95 % interval reaching zero or below"),
}


def check_rule(rule: str) -> None:
    """Refuse a rule that is not one of :data:`FAIL_RULES`, naming the ones there are."""
    if rule not in FAIL_RULES:
        raise ConfigError(
            f"fail rule must be one of {', '.join(FAIL_RULES)}; got {rule!r}.", loc=("fail_if",)
        )


def fails(rule: str, delta: float, low: float, high: float) -> bool:
    """Whether a comparison with naive (``delta`` and its interval ``low``…``high``) fails ``rule``.

    Example:
        >>> fails("under-naive", -0.01, -0.06, 0.04), fails("worse", -0.01, -0.06, 0.04)
        (True, False)
    """
    check_rule(rule)
    if rule == "under-naive":
        return delta < 0
    if rule == "worse":
        return high < 0
    return low <= 0


def family_confidence(comparisons: int, confidence: float = 0.95) -> float:
    """The confidence of each interval a ``worse`` gate over ``comparisons`` reads: Bonferroni,
    ``1 − (1 − confidence) / comparisons``, so the chance that a change reading as naive fails any
    of them by chance stays at ``(1 − confidence) / 2`` (2.5 %) for the whole gate.

    Example:
        >>> round(family_confidence(1), 4), round(family_confidence(6), 4)
        (0.95, 0.9917)
    """
    return 1 - (1 - confidence) / max(1, comparisons)


def rule_test(rule: str, comparisons: int) -> str:
    """The test ``rule`` applies to each of ``comparisons``, in words (the ``worse`` gate's level
    when it is corrected), e.g. "the whole 99.17 % interval below zero (Bonferroni over 6 comparisons)"."""
    test = FAIL_RULES[rule][1]
    if rule != "worse" or comparisons < 2:
        return test
    level = f"{100 * family_confidence(comparisons):.2f} %"
    return test.replace("95 %", level) + f" (Bonferroni over {comparisons} comparisons)"


def gate_intervals(
    rule: str,
    answers: Sequence[Any],
    judged: Sequence[tuple[str, int, float, float]],
    baseline: str = "naive",
) -> dict[tuple[str, int], tuple[float, float]]:
    """The interval each judged ``(strategy, budget, low, high)`` is gated on, by ``(strategy,
    budget)``: its own 95 % one, or for ``worse`` over several the one at :func:`family_confidence`,
    from the same paired replies (``answers``: the run's :class:`~contextwright.eval.reader_results.ReaderAnswer`
    list; ``baseline`` ran at every judged budget, as ``eval --fail-if`` requires)."""
    if rule != "worse" or len(judged) < 2:
        return {(s, b): (low, high) for s, b, low, high in judged}
    from contextwright.eval.reader_results import paired_outcomes

    groups: dict[tuple[str, int], list[Any]] = {}
    for a in answers:
        groups.setdefault((a.strategy, a.budget), []).append(a)
    out = {}
    for strategy, budget, low, high in judged:
        pairs = paired_outcomes(groups.get((strategy, budget), []), groups.get((baseline, budget), []))
        ends = family_interval([x for x, _ in pairs], [y for _, y in pairs], len(judged))
        out[(strategy, budget)] = (low, high) if ends is None else ends
    return out


def family_interval(x: Sequence[bool], y: Sequence[bool], comparisons: int) -> tuple[float, float] | None:
    """The paired interval of ``y − x`` at :func:`family_confidence` over ``comparisons`` (the
    bootstrap of :func:`~contextwright.eval.metrics.paired_bootstrap_delta`); ``None`` without pairs,
    or for one comparison (no family to correct for: its 95 % interval is the one)."""
    from contextwright.eval.metrics import paired_bootstrap_delta

    if comparisons < 2:
        return None
    boot = paired_bootstrap_delta(x, y, confidence=family_confidence(comparisons))
    return None if boot is None else (boot[1], boot[2])
