"""Compatibility path: the code lives in ``contextwright.core.errors`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.core.errors import AssemblyCancelled as AssemblyCancelled
from contextwright.core.errors import BudgetError as BudgetError
from contextwright.core.errors import CompressionError as CompressionError
from contextwright.core.errors import ConfigError as ConfigError
from contextwright.core.errors import ContextwrightError as ContextwrightError
from contextwright.core.errors import DeadlineExceeded as DeadlineExceeded
from contextwright.core.errors import HistoryBudgetError as HistoryBudgetError
from contextwright.core.errors import InputError as InputError
from contextwright.core.errors import LLMError as LLMError
from contextwright.core.errors import MissingDependencyError as MissingDependencyError
from contextwright.core.errors import StoreError as StoreError
from contextwright.core.errors import TokenizerError as TokenizerError
from contextwright.core.errors import did_you_mean as did_you_mean
from contextwright.core.errors import missing_extra as missing_extra
