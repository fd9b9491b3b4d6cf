"""Metric functions of the context assembly gap, usable one at a time from a notebook.

Each function takes plain values (strings, id sets, block lists) and returns a
number or a small tuple, so it can be checked on a hand-made example and reused
outside :func:`contextwright.eval.evaluate`.

Answer matching follows the labels of the shared NQ data: an answer matches a
text when, after normalization, the answer's words occur in the text's words as
a contiguous whole-word sequence, under either of two normalizations:

* SQuAD (:func:`normalize_answer`): lowercase, delete ASCII punctuation, drop
  the articles a/an/the, collapse whitespace;
* Unicode (:func:`normalize_answer_unicode`): the same, except that every
  Unicode punctuation or symbol character becomes a space, so ``"Idaho"``
  matches ``"Idaho's"`` and ``"gas"`` matches ``"noble-gas"``.

Whole words rather than substrings, because a plain substring match counts
``"0"`` in ``"100"``; and whole words is also what makes a context that was cut
in the middle of an answer (``"Wilhelm Conrad Rö"``) not count as retaining it.

Example:
    >>> answer_in_text("The prize went to Wilhelm Conrad Röntgen.", ["Wilhelm Conrad Röntgen"])
    True
    >>> answer_in_text("The prize went to Wilhelm Conrad Rö", ["Wilhelm Conrad Röntgen"])
    False
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Collection, Iterable, Sequence

__all__ = [
    "REDUNDANCY_SHINGLE",
    "answer_in_text",
    "chunk_retention",
    "first_answer_block",
    "in_middle_third",
    "mcnemar_exact",
    "median",
    "normalize_answer",
    "normalize_answer_unicode",
    "normalized_position",
    "paired_bootstrap_delta",
    "percentile",
    "redundancy",
    "wilson_interval",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCT = str.maketrans("", "", string.punctuation)

#: Word shingle size of :func:`redundancy`. Eight words: long enough that two
#: different passages on one topic rarely share a shingle by chance ("one of
#: the first"), short enough to catch the 20-word overlap of adjacent chunks.
REDUNDANCY_SHINGLE = 8


def normalize_answer(text: str) -> str:
    """SQuAD normalization: lowercase, no ASCII punctuation, no articles, single spaces.

    Text is first put in Unicode NFC, so a decomposed ``"Ro\\u0308ntgen"``
    equals ``"Röntgen"``.

    Example:
        >>> normalize_answer("The  Beatles' album!")
        'beatles album'
    """
    text = unicodedata.normalize("NFC", text).lower().translate(_ASCII_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_answer_unicode(text: str) -> str:
    """Like :func:`normalize_answer`, but every Unicode punctuation or symbol character becomes a space.

    This is variant (b) of the shared data's labels: it splits ``"Idaho's"``
    into ``"idaho s"`` and ``"narrator—Orwell"`` into ``"narrator orwell"``.

    Example:
        >>> normalize_answer_unicode("Idaho's noble-gas")
        'idaho s noble gas'
    """
    text = unicodedata.normalize("NFC", text).lower()
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


_NORMALIZERS = (normalize_answer, normalize_answer_unicode)


def answer_in_text(text: str, answers: Iterable[str]) -> bool:
    """Whether some answer occurs in ``text`` as a whole-word sequence after normalization.

    Either normalization may give the match (see the module docstring). An
    answer that normalizes to nothing (``"the"``, ``"?"``) never matches.

    Args:
        text: The text to search (a block of the context, or a whole context).
        answers: The accepted answer strings.

    Example:
        >>> answer_in_text("Born in Idaho's capital", ["Idaho"])
        True
        >>> answer_in_text("It cost 100 dollars", ["0"])
        False
    """
    answers = list(answers)
    if not answers or not text:
        return False
    for norm in _NORMALIZERS:
        hay = f" {norm(text)} "
        for answer in answers:
            needle = norm(answer)
            if needle and f" {needle} " in hay:
                return True
    return False


def chunk_retention(answer_ids: Collection[str], output_ids: Collection[str]) -> tuple[int, int]:
    """How many answer-bearing input chunks are among the output's member ids.

    Args:
        answer_ids: Ids of the input chunks labelled ``has_answer``.
        output_ids: Every input id the output's blocks stand for (a merged block
            stands for several: its ``chunk_ids``; :attr:`Citation.chunk_ids`).

    Returns:
        ``(kept, total)``; the share is ``kept / total`` when ``total > 0``.
        A chunk folded away as a duplicate of another is not kept: its id is
        not among the member ids, even when its text survives in the other.

    Example:
        >>> chunk_retention({"a", "b"}, ["b", "c"])
        (1, 2)
    """
    out = set(output_ids)
    wanted = set(answer_ids)
    return len(wanted & out), len(wanted)


def first_answer_block(blocks: Sequence[str], answers: Iterable[str]) -> int | None:
    """The 0-based index of the first block whose text contains an answer, or ``None``.

    A block counts by its text, so a block whose answer was cut off or
    compressed away is not answer-bearing.

    Example:
        >>> first_answer_block(["Paris is big.", "Rome was founded in 753 BC."], ["753 BC"])
        1
    """
    answers = list(answers)
    for i, block in enumerate(blocks):
        if answer_in_text(block, answers):
            return i
    return None


def normalized_position(index: int, n_blocks: int) -> float:
    """Block ``index`` of ``n_blocks`` on a 0-1 scale: 0 is the first block, 1 the last.

    One block is at position 0 (it is first, and the model reads it first).

    Raises:
        ValueError: when ``index`` is not in ``range(n_blocks)``.

    Example:
        >>> normalized_position(2, 5)
        0.5
    """
    if not 0 <= index < n_blocks:
        raise ValueError(f"index must be in range(n_blocks={n_blocks}); got {index}.")
    return 0.0 if n_blocks == 1 else index / (n_blocks - 1)


def in_middle_third(index: int, n_blocks: int) -> bool:
    """Whether block ``index`` of ``n_blocks`` lies in the middle third, 1/3 <= position <= 2/3.

    Computed on integers (``3·i`` against ``n-1`` and ``2(n-1)``), so the
    boundaries are exact: of 4 blocks, the two inner ones are in the middle
    third; of 2 blocks, none is.

    Example:
        >>> [in_middle_third(i, 4) for i in range(4)]
        [False, True, True, False]
    """
    normalized_position(index, n_blocks)
    span = n_blocks - 1
    return span > 0 and span <= 3 * index <= 2 * span


def _shingles(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def redundancy(blocks: Sequence[str], *, n: int = REDUNDANCY_SHINGLE) -> tuple[int, int]:
    """Words of the context that repeat text shown in an earlier block.

    Each block is normalized (:func:`normalize_answer_unicode`) and split into
    words. A word is *redundant* when it lies inside a word ``n``-shingle that
    already occurred in an earlier block. This counts an exact duplicate block
    as wholly redundant, the 20 words two overlapping chunks share, and near
    duplicates (edited copies) up to their edits; repeats inside one block
    are not counted. A block shorter than ``n`` words has no shingles and is
    never redundant.

    Args:
        blocks: The texts of the context's blocks, in order.
        n: The shingle size in words (default :data:`REDUNDANCY_SHINGLE`).

    Returns:
        ``(redundant_words, total_words)``.

    Example:
        >>> redundancy(["b c d e f g h i j k", "f g h i j k l m n o"], n=3)
        (6, 20)
    """
    if n < 1:
        raise ValueError(f"n must be >= 1; got {n}.")
    seen: set[tuple[str, ...]] = set()
    redundant = total = 0
    for block in blocks:
        words = normalize_answer_unicode(block).split()
        total += len(words)
        grams = _shingles(words, n)
        covered = [False] * len(words)
        for i, gram in enumerate(grams):
            if gram in seen:
                for j in range(i, i + n):
                    covered[j] = True
        redundant += sum(covered)
        seen.update(grams)
    return redundant, total


def median(values: Sequence[float]) -> float | None:
    """The median (mean of the two middle values for an even count), ``None`` when empty."""
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (``q`` in 0-100), ``None`` when empty.

    Nearest rank returns an observed value: the smallest value with at least
    ``q`` % of the values at or below it.

    Example:
        >>> percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)
        10
    """
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100]; got {q}.")
    if not values:
        return None
    s = sorted(values)
    k = max(1, math.ceil(q / 100 * len(s)))
    return s[k - 1]


# -- intervals and paired tests (reader accuracy) -------------------------------------------------------


def wilson_interval(successes: int, n: int, *, z: float = 1.959964) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (95 % by default), ``None`` when ``n == 0``.

    Unlike the normal approximation it stays inside 0-1 and is sensible at
    0 or ``n`` successes, which a weak reader produces often.

    Example:
        >>> tuple(round(x, 3) for x in wilson_interval(5, 30))
        (0.073, 0.336)
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n; got successes={successes}, n={n}.")
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs.

    ``b``: pairs right under A and wrong under B; ``c``: the reverse. Under
    the null hypothesis each discordant pair goes either way with probability
    1/2, so the p-value is a two-sided binomial test of ``b`` in ``b + c``
    (1.0 when there are no discordant pairs).

    Example:
        >>> round(mcnemar_exact(1, 9), 4)
        0.0215
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0; got b={b}, c={c}.")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


def paired_bootstrap_delta(
    a: Sequence[bool | float],
    b: Sequence[bool | float],
    *,
    iterations: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float] | None:
    """Mean of ``b - a`` over paired items and its percentile bootstrap interval.

    Items are resampled in pairs (the same query under both strategies), so
    the interval reflects the per-query correlation a two-sample test ignores.
    Deterministic for a given ``seed``. ``None`` when there are no pairs.

    Example:
        >>> paired_bootstrap_delta([0, 0, 1, 0], [1, 0, 1, 1])[0]
        0.5
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples must have the same length; got {len(a)} and {len(b)}.")
    n = len(a)
    if n == 0:
        return None
    import random

    diffs = [float(y) - float(x) for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(iterations))
    lo_k = int((1 - confidence) / 2 * iterations)
    hi_k = min(iterations - 1, int((1 + confidence) / 2 * iterations))
    return sum(diffs) / n, means[lo_k], means[hi_k]
