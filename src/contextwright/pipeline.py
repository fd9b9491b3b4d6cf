"""Compatibility path: the code lives in ``contextwright.assembly.pipeline``."""

# ruff: noqa: F401

from contextwright.assembly.pipeline import (
    Pipeline,
    Plan,
    ZERO_BUDGET_NOTE,
    _BUDGET_REASONS,
    _MAX_BODIES,
    _attributes,
    _cancel,
    _check_cancelled,
    _inputs,
    _measured,
    _needs,
    _report_empty,
    cancel_on,
    logger,
    zero_budget_notes,
)

__all__ = [
    "Pipeline",
    "Plan",
    "ZERO_BUDGET_NOTE",
    "_BUDGET_REASONS",
    "_MAX_BODIES",
    "_attributes",
    "_cancel",
    "_check_cancelled",
    "_inputs",
    "_measured",
    "_needs",
    "_report_empty",
    "cancel_on",
    "logger",
    "zero_budget_notes",
]
