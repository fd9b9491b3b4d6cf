"""Compatibility path: the code lives in ``contextwright.core.errors``."""

# ruff: noqa: F401

from contextwright.core.errors import (
    AssemblyCancelled,
    BudgetError,
    CompressionError,
    ConfigError,
    ContextwrightError,
    HistoryBudgetError,
    InputError,
    LLMError,
    MissingDependencyError,
    StoreError,
    TokenizerError,
    did_you_mean,
    missing_extra,
)

__all__ = [
    "AssemblyCancelled",
    "BudgetError",
    "CompressionError",
    "ConfigError",
    "ContextwrightError",
    "HistoryBudgetError",
    "InputError",
    "LLMError",
    "MissingDependencyError",
    "StoreError",
    "TokenizerError",
    "did_you_mean",
    "missing_extra",
]
