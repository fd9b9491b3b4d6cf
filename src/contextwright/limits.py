"""Compatibility path: the code lives in ``contextwright.core.limits`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.core.limits import DEFAULT_BOUND as DEFAULT_BOUND
from contextwright.core.limits import MAX_BUDGET_TOKENS as MAX_BUDGET_TOKENS
from contextwright.core.limits import Bound as Bound
from contextwright.core.limits import bound_of as bound_of
from contextwright.core.limits import bounded as bounded
from contextwright.core.limits import bounds_table as bounds_table
from contextwright.core.limits import check_number as check_number
from contextwright.core.limits import check_settings as check_settings
from contextwright.core.limits import numeric_settings as numeric_settings
from contextwright.core.limits import stage_work as stage_work
