"""Words and sentences of a text, and their caches: what compression and the budget's windows read.

One owner for the term rules (lower-cased, light stemming, no stopwords:
:func:`terms`, :func:`has_term`) and for the sentence spans of a text
(:func:`sentence_spans`, cached once by text). :mod:`~contextwright.stages.compress`
scores sentences by their terms (:func:`analyze`); the ``fill`` policy of
:mod:`~contextwright.stages.budget` looks for query terms in lower-cased sentences
(:func:`lowered_sentences`) and counts windows of them (:func:`sentence_sizes`).
Every cache here is in the registry of :mod:`contextwright.core.caches`, bounded by bytes.
"""

from __future__ import annotations

import functools
import re
import sys

from contextwright.core.caches import register, text_cache
from contextwright.core.sentences import split_sentences
from contextwright.tokens import CachedTokenizer

__all__ = [
    "analyze",
    "has_term",
    "lowered_sentences",
    "sentence_sizes",
    "sentence_spans",
    "terms",
]


_PAIR = sys.getsizeof((0, 0)) + 2 * sys.getsizeof(1 << 40)  # a span and its two offsets, at most


def _spans_bytes(spans: tuple[tuple[int, int], ...]) -> int:
    return sys.getsizeof(spans) + len(spans) * _PAIR


def _strings_bytes(strings: tuple[str, ...]) -> int:
    return sys.getsizeof(strings) + sum(map(sys.getsizeof, strings))


def _analysis_bytes(value: tuple[tuple[tuple[int, int], ...], tuple[tuple[str, ...], ...]]) -> int:
    spans, terms = value
    return 64 + _spans_bytes(spans) + sys.getsizeof(terms) + sum(map(_strings_bytes, terms))


def _lowered_bytes(value: tuple[tuple[tuple[int, int], ...], tuple[str, ...], str]) -> int:
    return 64 + _spans_bytes(value[0]) + _strings_bytes(value[1]) + sys.getsizeof(value[2])


def _sizes_bytes(value: tuple[tuple[int, ...], tuple[int, ...]]) -> int:
    return 64 + sum(sys.getsizeof(v) + len(v) * _INT for v in value)


_INT = sys.getsizeof(1 << 40)


@text_cache(max_bytes=4 * 2**20, maxsize=16_384, size=_spans_bytes)
def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The sentence spans of ``text`` (:func:`~contextwright.core.sentences.split_sentences`), cached by text."""
    return tuple(split_sentences(text))


_WORD = re.compile(r"\w+")
# A short English stopword list: question words and function words carry no
# evidence for which sentence answers a question.
_STOP = frozenset(
    (
        "a an and are as at be been but by can could did do does for from had has have he her his how i if in "
        "into is it its of on or she so than that the their them then there these they this to was were what "
        "when where which who whom whose why will with would you your"
    ).split()
)


#: Words longer than this are stemmed without the cache, so its bytes are bounded by its entries.
_STEM_CACHED_CHARS = 64


def _stem(word: str) -> str:
    """A light suffix strip (plural ``-s``, ``-es``, ``-ies``, possessive) so ``prizes`` meets ``prize``;
    cached for words of at most 64 characters."""
    return _stem_short(word) if len(word) <= _STEM_CACHED_CHARS else _stem_raw(word)


# 32,768 words of at most 64 characters, and their stems: at most 32,768 x 420 bytes (13 MiB).
@register(entry_bytes=420)
@functools.lru_cache(maxsize=32_768)
def _stem_short(word: str) -> str:
    return _stem_raw(word)


def _stem_raw(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Lowercased, stemmed word terms of ``text`` without stopwords."""
    stem, short = _stem_short, _STEM_CACHED_CHARS  # inline _stem: one call a word, not two
    return [
        stem(w) if len(w) <= short else _stem_raw(w) for w in _WORD.findall(text.lower()) if w not in _STOP
    ]


def has_term(low: str, term: str) -> bool:
    """Whether ``term in terms(text)`` for ``low = text.lower()``, without analysing every word.

    A stem is a prefix of the words it comes from ("prize" of "prizes"), except ``-ies`` ("city"
    of "cities"); so only the words starting where ``str.find`` hits are stemmed. For a handful
    of query terms over a few sentences this is several times faster than :func:`terms`.
    """
    # "-ies" stems ("city" of "cities") are at least two letters long; a lone "y" is itself.
    probe = term[:-1] if len(term) > 1 and term.endswith("y") else term
    if not probe:
        return False
    at = low.find(probe)
    while at >= 0:
        if at == 0 or not (low[at - 1].isalnum() or low[at - 1] == "_"):
            word = _WORD.match(low, at)
            if word is not None and word.group() not in _STOP and _stem(word.group()) == term:
                return True
        at = low.find(probe, at + 1)
    return False


@text_cache(max_bytes=8 * 2**20, maxsize=16_384, size=_analysis_bytes)
def analyze(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[str, ...], ...]]:
    """Sentence spans of ``text`` and each sentence's terms, cached by text.

    The same chunks come back query after query (popular passages, a
    conversation's follow-ups), so, like token counts, the analysis of a text
    is done once.
    """
    spans = sentence_spans(text)
    return spans, tuple(tuple(terms(text[s:e])) for s, e in spans)


@text_cache(max_bytes=8 * 2**20, maxsize=16_384, size=_lowered_bytes)
def lowered_sentences(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[str, ...], str]:
    """Sentence spans of ``text``, each sentence lower-cased, and those joined (to rule out
    query terms for all sentences at once), cached by text."""
    spans = sentence_spans(text)
    lowered = tuple(text[s:e].lower() for s, e in spans)
    return spans, lowered, "\n".join(lowered)


@text_cache(max_bytes=4 * 2**20, maxsize=4_096, size=_sizes_bytes)
def sentence_sizes(tokenizer: CachedTokenizer, text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Tokens of each sentence of ``text`` alone, and the running sum of each with its lead-in.

    ``alone[k]`` counts sentence ``k`` as a window's first sentence; ``cum[k]`` sums sentences
    ``1..k`` each with the whitespace that leads into it (as a later one). The sentences are
    counted with the tokenizer itself, not through its cache (the pieces of one misfit seldom
    recur; the whole result is cached here by text). A sentence with its lead-in differs from
    the sentence only up to its first word boundary where the pre-tokenizer is known
    (:attr:`TiktokenTokenizer.known_splits`: a space then a letter, after a non-space, starts
    a pre-token), so that count is the sentence's, less its head, plus the head with the
    lead-in: two short, mostly cached counts instead of the sentence again.
    """
    spans = lowered_sentences(text)[0]
    sentences = [text[s:e] for s, e in spans]
    alone = tuple(tokenizer.base.count_many(sentences))
    known = tokenizer.known_splits
    cum = [0]
    for k in range(1, len(spans)):
        lead = text[spans[k - 1][1] : spans[k][0]]
        head = _head(sentences[k]) if known else ""
        if head:
            n = alone[k] - tokenizer.count(head) + tokenizer.count(lead + head)
        else:
            n = tokenizer.base.count(lead + sentences[k])
        cum.append(cum[-1] + n)
    return alone, tuple(cum)


def _head(sentence: str) -> str:
    """``sentence`` up to its first space that is followed by an ASCII letter and follows a
    non-space (a pre-token boundary for cl100k and o200k), or "" when it has none."""
    at = sentence.find(" ", 1)
    while at > 0:
        nxt = sentence[at + 1 : at + 2]
        if nxt.isascii() and nxt.isalpha() and not sentence[at - 1].isspace():
            return sentence[:at]
        at = sentence.find(" ", at + 1)
    return ""
