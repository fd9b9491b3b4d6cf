"""The rules of a CI gate on a paired comparison with naive: ``fit --fail-if`` and ``eval --fail-if``.

Each rule reads one comparison (a strategy or a fitted profile minus naive, at one budget, on the
same queries): its point estimate and the ends of its 95 % paired interval. ``under-naive`` fails
on the point estimate below zero, ``worse`` on the whole interval below zero (a loss the queries
show), ``not-better`` on the interval reaching zero or below (no gain the queries show). On a few
hundred queries the interval is several points wide, so the three gates differ in practice.

A gate judges several comparisons at once (each strategy at each budget, each budget of a fit).
``worse`` fails when *any* of them shows a loss, so with k comparisons at 95 % each a change that
reads exactly as naive would fail it by chance up to k × 2.5 % of the time (18 comparisons: about
one run in three). It therefore reads simultaneous intervals (:func:`joint_intervals`, since stop
63): one bootstrap resamples the queries of all the comparisons together, and each interval is its
comparison's estimate ± c standard errors, with c the 95th percentile of the largest standardized
deviation over the comparisons (the max-T method). That keeps the chance of a false fail at about
2.5 % for the whole gate, as Bonferroni's ``1 − 0.05 / k`` per interval did from stop 59 to 62,
but where the comparisons move together (one strategy at two budgets, two presets that keep the
same chunks) c is smaller than Bonferroni's, so a loss the queries show is caught more often.
``not-better`` passes only when *every* comparison shows a gain, an intersection-union test: each at
95 % already keeps the chance of a false pass at 2.5 %, and a correction would only make it
stricter. ``under-naive`` reads point estimates, not intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextwright.core.errors import ConfigError

__all__ = [
    "FAIL_RULES",
    "check_rule",
    "fails",
    "gate_intervals",
    "joint_intervals",
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


def rule_test(rule: str, comparisons: int) -> str:
    """The test ``rule`` applies to each of ``comparisons``, in words (the ``worse`` gate's
    simultaneous intervals over several), e.g. "the whole 95 % interval below zero, simultaneous
    over 6 comparisons (max-T bootstrap)"."""
    test = FAIL_RULES[rule][1]
    if rule != "worse" or comparisons < 2:
        return test
    return test + f", simultaneous over {comparisons} comparisons (max-T bootstrap)"


def gate_intervals(
    rule: str,
    answers: Sequence[Any],
    judged: Sequence[tuple[str, int, float, float]],
    baseline: str = "naive",
) -> dict[tuple[str, int], tuple[float, float]]:
    """The interval each judged ``(strategy, budget, low, high)`` is gated on, by ``(strategy,
    budget)``: its own 95 % one, or for ``worse`` over several the simultaneous one
    (:func:`joint_intervals`) from the same paired replies (``answers``: the run's
    :class:`~contextwright.eval.reader_results.ReaderAnswer` list; ``baseline`` ran at every judged
    budget, as ``eval --fail-if`` requires)."""
    if rule != "worse" or len(judged) < 2:
        return {(s, b): (low, high) for s, b, low, high in judged}
    groups: dict[tuple[str, int], dict[str, bool]] = {}
    for a in answers:
        if a.ok:
            groups.setdefault((a.strategy, a.budget), {})[a.query_id] = bool(a.correct)
    outcomes = []
    for strategy, budget, _, _ in judged:
        mine, base = groups.get((strategy, budget), {}), groups.get((baseline, budget), {})
        outcomes.append({q: (base[q], right) for q, right in mine.items() if q in base})
    ends = joint_intervals(outcomes, own=[(low, high) for _, _, low, high in judged])
    return {
        (s, b): (low, high) if got is None else got
        for (s, b, low, high), got in zip(judged, ends, strict=True)
    }


def joint_intervals(
    outcomes: Sequence[Mapping[str, tuple[bool, bool]]],
    *,
    own: Sequence[tuple[float, float] | None] | None = None,
    confidence: float = 0.95,
    iterations: int = 2000,
    seed: int = 0,
) -> list[tuple[float, float] | None]:
    """Simultaneous ``confidence`` intervals of several paired comparisons (max-T bootstrap).

    ``outcomes[j]`` maps each query of comparison ``j`` to ``(baseline right, other right)``; the
    comparisons may share queries (they usually do: one run's questions). Each of ``iterations``
    resamples draws the queries once, with replacement, for all of them, so the resampled deltas
    keep the comparisons' correlation. With ``se_j`` the spread of comparison ``j``'s resampled
    delta and ``c`` the ``confidence`` quantile over the resamples of ``max_j |resampled_j − d_j| /
    se_j``, comparison ``j``'s interval is ``d_j ± c · se_j``: all of them hold their true deltas
    together in about ``confidence`` of runs (Westfall and Young's max-T). Never narrower than
    ``own[j]``, the comparison's own interval where given. ``None`` for a comparison without pairs.
    Deterministic for a given ``seed``.

    Example:
        >>> same = {f"q{i}": (True, i % 5 != 0) for i in range(100)}
        >>> first, second = joint_intervals([same, same])  # one comparison twice: as it alone
        >>> tuple(round(e, 3) for e in first)
        (-0.28, -0.12)
    """
    import statistics

    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ConfigError(
            f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}.", loc=("confidence",)
        )
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ConfigError(
            f"iterations must be a positive integer, e.g. 2000; got {iterations!r}.", loc=("iterations",)
        )
    ids = list(dict.fromkeys(q for o in outcomes for q in o))
    diffs = [[float(o[q][1]) - float(o[q][0]) if q in o else 0.0 for q in ids] for o in outcomes]
    held = [[1 if q in o else 0 for q in ids] for o in outcomes]
    point = [sum(d) / len(o) if o else None for d, o in zip(diffs, outcomes, strict=True)]
    draws = _resampled(diffs, held, iterations, seed)
    spread = [statistics.pstdev([m for m in ms if m is not None] or [0.0]) for ms in draws]
    c = _max_t(point, draws, spread, confidence)
    out: list[tuple[float, float] | None] = []
    for j, d in enumerate(point):
        if d is None:
            out.append(None)
            continue
        low, high = max(-1.0, d - c * spread[j]), min(1.0, d + c * spread[j])
        given = own[j] if own is not None else None
        out.append((low, high) if given is None else (min(low, given[0]), max(high, given[1])))
    return out


def _resampled(
    diffs: Sequence[Sequence[float]], held: Sequence[Sequence[int]], iterations: int, seed: int
) -> list[list[float | None]]:
    """Each comparison's mean delta in each resample of the shared queries (None where a resample
    drew none of its queries)."""
    import random

    n = len(diffs[0]) if diffs else 0
    rng = random.Random(seed)
    draws: list[list[float | None]] = [[] for _ in diffs]
    for _ in range(iterations if n else 0):
        idx = [rng.randrange(n) for _ in range(n)]  # one draw of the queries for every comparison
        for j, (d, h) in enumerate(zip(diffs, held, strict=True)):
            k = sum(map(h.__getitem__, idx))
            draws[j].append(sum(map(d.__getitem__, idx)) / k if k else None)
    return draws


def _max_t(
    point: Sequence[float | None],
    draws: Sequence[Sequence[float | None]],
    spread: Sequence[float],
    confidence: float,
) -> float:
    """The ``confidence`` quantile, over the resamples, of the largest standardized deviation of a
    comparison from its estimate (0 when no comparison varies)."""
    live = [(j, p) for j, p in enumerate(point) if p is not None and spread[j] > 0]
    resamples = len(draws[0]) if draws else 0
    worst = sorted(
        max((abs(m - p) / spread[j] for j, p in live if (m := draws[j][b]) is not None), default=0.0)
        for b in range(resamples)
    )
    return worst[min(len(worst) - 1, int(confidence * len(worst)))] if worst else 0.0
