"""Which part of a block's text another place holds: span-honest ``also_sources``.

Dedup folds a copy into the chunk it duplicates, and the survivor's citation names the copy's
source too ("kb-v1/X, also in mirror/X"). A copy may hold only part of the survivor: containment
dedup drops a chunk whose words are mostly inside a kept one, so a kept chunk made of a trusted
paragraph plus an injected sentence absorbs the trusted source's copy of the paragraph alone,
and naming that source for the whole block would vouch for the injected sentence (issue 31,
item 6). So a citation names another source in ``also_sources`` only when the copy from it
holds *every word* of the block's text, and ``also_at`` gives, for each copy, the ranges of the
block's text it holds (``held``) and whether that is all of it (``whole``).

A copy holds the whole block when the block's words appear in it in order and unbroken (words
compared NFKC case-folded, so typographic quotes and dashes, whitespace and a boilerplate line
around the copy do not matter). For ``held``, a word of the block is held when a run of
:data:`SHINGLE_WORDS` consecutive words containing it appears in the copy (a block shorter than
that must appear whole); the first :data:`MAX_HELD_CHECKS` distinct copy texts of a block are
checked; later ones are listed in ``also_at`` with ``held`` None and never named. The check runs on the block's final
text, after compression and truncation, so a copy that holds all of what the model reads is
named even when it lacks text a later stage cut.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

from contextwright.model.spans import Span

__all__ = ["MAX_HELD_CHECKS", "SHINGLE_WORDS", "BlockWords", "held_spans"]

#: Words per run that a copy must hold for the words in it to count as held.
SHINGLE_WORDS = 8
#: Distinct copy texts per block that are checked (each costs a pass over both texts); a copy
#: past them gets ``held`` None and ``whole`` False: it is listed, never named.
MAX_HELD_CHECKS = 32
_WORD = re.compile(r"\w+")
_WORD_SPLIT = re.compile(r"(\w+)")


def _norm(text: str) -> str:
    return text.casefold() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()


class BlockWords:
    """A block's words and word runs, made once and checked against each of its copies."""

    __slots__ = ("_joined", "_k", "_norm", "_offsets")

    def __init__(self, text: str) -> None:
        # One split gives the words and the gaps between them; their running lengths are the
        # words' offsets (no match object per word). An ASCII word reads as itself lower-cased.
        pieces = _WORD_SPLIT.split(text)  # gap, word, gap, ..., word, gap
        at = list(itertools.accumulate(map(len, pieces), initial=0))  # piece j: at[j] to at[j + 1]
        words = pieces[1::2]
        self._offsets = list(zip(at[1:-1:2], at[2::2], strict=True))
        self._norm = list(map(str.lower, words)) if text.isascii() else list(map(_norm, words))
        self._joined = " " + " ".join(self._norm) + " "
        self._k = min(SHINGLE_WORDS, len(words))

    def whole(self, words: list[str]) -> bool:
        """Whether a copy of these (normalized) words holds the block's words, in order, unbroken."""
        return bool(self._norm) and self._joined in " " + " ".join(words) + " "

    def held(self, copy: str, *, spans: bool = True) -> tuple[tuple[Span, ...] | None, bool]:
        """``(ranges of the block's text whose words copy holds, whether it holds them all)``.

        The ranges are None when ``spans`` is false and the copy does not hold the whole block.
        """
        words = _WORD.findall(_norm(copy))
        if self.whole(words):
            return (((self._offsets[0][0], self._offsets[-1][1]),), True)
        if not spans:
            return None, False
        k = self._k
        if not self._norm or len(words) < k:
            return ((), False)
        grams = set(zip(*(words[i:] for i in range(k)), strict=False))
        runs: list[Span] = []
        for p, gram in enumerate(zip(*(self._norm[i:] for i in range(k)), strict=False)):
            if gram in grams:
                if runs and p <= runs[-1][1]:
                    runs[-1] = (runs[-1][0], p + k)
                else:
                    runs.append((p, p + k))
        return tuple((self._offsets[a][0], self._offsets[b - 1][1]) for a, b in runs), False


def held_spans(text: str, copy: str) -> tuple[tuple[Span, ...] | None, bool]:
    """``(ranges of text whose words copy holds, whether copy holds all of text's words, in order)``."""
    return BlockWords(text).held(copy)
