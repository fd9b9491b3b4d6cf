"""Compatibility path: the code lives in ``contextwright.assembly.presets`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.assembly.presets import get_preset as get_preset
from contextwright.assembly.presets import list_presets as list_presets
from contextwright.assembly.presets import pipeline_from_config as pipeline_from_config
from contextwright.assembly.presets import pipeline_to_config as pipeline_to_config
from contextwright.assembly.presets import register_preset as register_preset
