"""The rules of a CI gate on a paired comparison with naive: ``fit --fail-if`` and ``eval --fail-if``.

Each rule reads one comparison (a strategy or a fitted profile minus naive, at one budget, on the
same queries): its point estimate and the ends of its 95 % paired interval. ``under-naive`` fails
on the point estimate below zero, ``worse`` on the whole interval below zero (a loss the queries
show), ``not-better`` on the interval reaching zero or below (no gain the queries show). On a few
hundred queries the interval is several points wide, so the three gates differ in practice.
"""

from __future__ import annotations

from collections.abc import Mapping

from contextwright.core.errors import ConfigError

__all__ = ["FAIL_RULES", "check_rule", "fails"]

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
