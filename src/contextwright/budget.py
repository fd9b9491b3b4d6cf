"""Compatibility path: the code lives in ``contextwright.tokens.zones``."""

# ruff: noqa: F401

from contextwright.tokens.zones import (
    _APPROX,
    _BUILTIN,
    _LLAMA3,
    _LOCK,
    _MODELS,
    _SNAPSHOT,
    ModelSpec,
    ZoneBudget,
    _canonical,
    _m,
    get_model,
    list_models,
    register_model,
)
