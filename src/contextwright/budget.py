"""Compatibility path: the code lives in ``contextwright.tokens.zones`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.tokens.zones import ModelSpec as ModelSpec
from contextwright.tokens.zones import ZoneBudget as ZoneBudget
from contextwright.tokens.zones import get_model as get_model
from contextwright.tokens.zones import list_models as list_models
from contextwright.tokens.zones import register_model as register_model
