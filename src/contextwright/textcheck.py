"""Compatibility path: the code lives in ``contextwright.core.text``."""

# ruff: noqa: F401

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
