"""Compatibility path: the code lives in ``contextwright.tokens.zones``."""

# ruff: noqa: F401

from contextwright.tokens.zones import (
    ModelSpec,
    ZoneBudget,
    _APPROX,
    _BUILTIN,
    _LLAMA3,
    _LOCK,
    _MODELS,
    _SNAPSHOT,
    _canonical,
    _m,
    get_model,
    list_models,
    register_model,
)

__all__ = [
    "ModelSpec",
    "ZoneBudget",
    "_APPROX",
    "_BUILTIN",
    "_LLAMA3",
    "_LOCK",
    "_MODELS",
    "_SNAPSHOT",
    "_canonical",
    "_m",
    "get_model",
    "list_models",
    "register_model",
]
