"""Compatibility path: the code lives in ``contextwright.stages.priors`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.stages.priors import LIU_2024 as LIU_2024
from contextwright.stages.priors import PositionalPrior as PositionalPrior
from contextwright.stages.priors import load_prior as load_prior
