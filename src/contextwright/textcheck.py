"""Compatibility path: the code lives in ``contextwright.core.text``."""

# ruff: noqa: F401

from contextwright.core.text import (
    ASCII_IGNORABLE,
    IGNORABLE,
    IGNORABLE_RANGES,
    IGNORABLE_SET,
    SPACES,
    _CLASS_BODY,
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
