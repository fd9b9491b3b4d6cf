"""``count_words``: ``len(text.split(None, maxsplit))`` without the pieces, in C where built (issue 33).

The budget rules out most chunks of a full list by a lower bound of their tokens, one per
whitespace-separated word (``Meter.at_least``), so this count must be ``str.split``'s exactly:
the same whitespace (``\\x1c``-``\\x1f``, ``\\x85``, NBSP, the Unicode spaces) and the same cap.
"""

from __future__ import annotations

import shutil
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.core import text as text_module
from contextwright.core.text import _python_count_words

try:
    from contextwright import _native
except ImportError:  # pragma: no cover - the pure-Python install
    _native = None  # type: ignore[assignment]

HAS_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None
SPACES = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_SPACES = "ab\u200b\u180e\ufeff\x00é日😀_"  # zero-width and odd characters str.split keeps


def test_the_c_count_is_the_one_in_use_where_it_is_built() -> None:
    if _native is None:
        assert not HAS_CC, "a C compiler is here but the module was not built"
        assert text_module.count_words is _python_count_words
    else:
        assert text_module.count_words is _native.count_words


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=SPACES + NOT_SPACES, max_size=30), st.integers(-3, 12))
def test_it_counts_what_str_split_gives(text: str, maxsplit: int) -> None:
    expected = len(text.split(None, maxsplit))
    assert _python_count_words(text, maxsplit) == expected
    if _native is not None:
        assert _native.count_words(text, maxsplit) == expected


@pytest.mark.skipif(_native is None, reason="no C module")
def test_the_c_count_on_long_texts_and_bad_arguments() -> None:
    assert _native is not None
    words = "Paris is the capital of France. " * 500
    for maxsplit in (0, 1, 5, 2999, 3000, 4000, -1, sys.maxsize):
        assert _native.count_words(words, maxsplit) == len(words.split(None, maxsplit))
    with pytest.raises(TypeError):
        _native.count_words(b"bytes", 3)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        _native.count_words("a", 2**80)
