"""Compatibility path: the code lives in ``contextwright.assembly.pipeline``, ``contextwright.assembly.loop``."""

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
from contextwright.assembly.pipeline import (
    _BUDGET_REASONS,
    _MAX_BODIES,
    ZERO_BUDGET_NOTE,
    Pipeline,
    Plan,
    _inputs,
    _report_empty,
    logger,
    zero_budget_notes,
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
