"""Compatibility path: the code lives in ``contextwright.core.limits``."""

from contextwright.core.limits import (
    _KEY,
    DEFAULT_BOUND,
    MAX_BUDGET_TOKENS,
    Bound,
    _is_numeric_annotation,
    bound_of,
    bounded,
    bounds_table,
    check_number,
    check_settings,
    numeric_settings,
    stage_work,
)

__all__ = [
    "Bound",
    "DEFAULT_BOUND",
    "MAX_BUDGET_TOKENS",
    "_KEY",
    "_is_numeric_annotation",
    "bound_of",
    "bounded",
    "bounds_table",
    "check_number",
    "check_settings",
    "numeric_settings",
    "stage_work",
]
