"""Compatibility path: the code lives in ``contextwright.core.sentences``."""

from contextwright.core.sentences import (
    _ACRONYM,
    _BEFORE_NUMBER,
    _BREAK,
    _CANDIDATE,
    _MAYBE_END,
    _NAME,
    _NEVER_END,
    _OPENERS,
    _TOKEN_BEFORE,
    _is_end,
    _starts_name,
    _words,
    sentences,
    split_sentences,
)

__all__ = [
    "_ACRONYM",
    "_BEFORE_NUMBER",
    "_BREAK",
    "_CANDIDATE",
    "_MAYBE_END",
    "_NAME",
    "_NEVER_END",
    "_OPENERS",
    "_TOKEN_BEFORE",
    "_is_end",
    "_starts_name",
    "_words",
    "sentences",
    "split_sentences",
]
