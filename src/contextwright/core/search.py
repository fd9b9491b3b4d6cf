"""The boundary of a monotone test, found in O(log n) tries: how cuts are fitted to a budget.

A stage that cuts a text to fit (``compress`` keeping a chunk's best ``k``
sentences, ``token_budget`` shrinking a window) asks "does this much still
fit?", and the answer is yes up to some size and no after it. Trying every size
from the largest down costs one join and one count of the text per size:
quadratic in the text (issue 31). :func:`last_fitting` starts at an estimate,
gallops away from it and bisects, so a good estimate costs two or three tries
and a bad one ``O(log n)``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["last_fitting"]


def last_fitting(fits: Callable[[int], bool], guess: int, lo: int, hi: int) -> int:
    """The largest ``k`` in ``lo..hi`` with ``fits(k)``, or ``lo`` when none fits.

    ``fits`` must be true up to some ``k`` and false after it (costs grow with size);
    then the answer equals trying ``hi``, ``hi - 1``, ... ``lo`` in turn. The first try is
    ``guess`` (clamped into the range), so a caller whose first try is its most likely
    answer can count that one where it is kept.

    Example:
        >>> last_fitting(lambda k: k * k <= 50, 3, 1, 100)
        7
    """
    k = min(max(guess, lo), hi)
    if fits(k):
        good, step = k, 1  # good fits; look above it for one that does not
        while good + step <= hi and fits(good + step):
            good, step = good + step, step * 2
        bad = min(good + step, hi + 1)
    else:
        bad, step = k, 1  # bad does not fit; look below it for one that does
        while bad - step >= lo and not fits(bad - step):
            bad, step = bad - step, step * 2
        if bad - step < lo:  # lo .. bad - 1 not all tried yet
            if bad == lo or not fits(lo):
                return lo
            step = bad - lo
        good = bad - step
    while bad - good > 1:  # fits(good); not fits(bad), or bad is past hi
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good
