"""Compatibility path: the code lives in ``contextwright.assembly.pipeline``, ``contextwright.assembly.loop``."""

# ruff: noqa: F401

from contextwright.assembly.pipeline import (
    Pipeline,
    Plan,
    ZERO_BUDGET_NOTE,
    _BUDGET_REASONS,
    _MAX_BODIES,
    _inputs,
    _report_empty,
    logger,
    zero_budget_notes,
)
from contextwright.assembly.loop import (
    StageLoop,
    _cancel,
    attributes,
    cancel_on,
    check_cancelled,
    measured,
    needs_of,
    trace,
)

__all__ = [
    "Pipeline",
    "Plan",
    "StageLoop",
    "ZERO_BUDGET_NOTE",
    "_BUDGET_REASONS",
    "_MAX_BODIES",
    "_cancel",
    "_inputs",
    "_report_empty",
    "attributes",
    "cancel_on",
    "check_cancelled",
    "logger",
    "measured",
    "needs_of",
    "trace",
    "zero_budget_notes",
]
