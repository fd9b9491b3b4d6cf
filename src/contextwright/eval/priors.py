"""Compatibility path: the code lives in ``contextwright.stages.priors``."""

from contextwright.stages.priors import (
    LIU_2024,
    PositionalPrior,
    _from_positions,
    load_prior,
    prior_from_mapping,
)

__all__ = ["LIU_2024", "PositionalPrior", "_from_positions", "load_prior", "prior_from_mapping"]
