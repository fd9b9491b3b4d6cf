"""Compatibility path: the code lives in ``contextwright.core.errors``."""

from contextwright.core.errors import (
    AssemblyCancelled,
    BudgetError,
    CompressionError,
    ConfigError,
    ContextwrightError,
    HistoryBudgetError,
    InputError,
    LLMError,
    Loc,
    MissingDependencyError,
    StoreError,
    TokenizerError,
    did_you_mean,
    located,
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
    "Loc",
    "MissingDependencyError",
    "StoreError",
    "TokenizerError",
    "did_you_mean",
    "located",
    "missing_extra",
]
