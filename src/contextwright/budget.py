"""Compatibility path: the code lives in ``contextwright.tokens.zones``."""

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
