"""Compatibility path: the code lives in ``contextwright.core.text``."""

from contextwright.core.text import (
    _CLASS_BODY,
    ASCII_IGNORABLE,
    IGNORABLE,
    IGNORABLE_RANGES,
    IGNORABLE_SET,
    SPACES,
    check_text,
    visible,
)

__all__ = [
    "ASCII_IGNORABLE",
    "IGNORABLE",
    "IGNORABLE_RANGES",
    "IGNORABLE_SET",
    "SPACES",
    "_CLASS_BODY",
    "check_text",
    "visible",
]
