"""Stages: one module per family (filter, dedup, budget, order, ...)."""

from contextwright.stages.base import (
    Stage,
    get_stage_class,
    register_stage,
    registered_stages,
    stage_from_dict,
    stage_to_dict,
)

__all__ = [
    "Stage",
    "get_stage_class",
    "register_stage",
    "registered_stages",
    "stage_from_dict",
    "stage_to_dict",
]
