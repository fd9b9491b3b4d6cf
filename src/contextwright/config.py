"""Compatibility path: the code lives in ``contextwright.assembly.presets``."""

from contextwright.assembly.presets import (
    _LOCK,
    _PRESETS,
    CONFIG_KEYS,
    _frugal,
    get_preset,
    list_presets,
    load_config_file,
    pipeline_from_config,
    pipeline_to_config,
    register_preset,
)

__all__ = [
    "CONFIG_KEYS",
    "_LOCK",
    "_PRESETS",
    "_frugal",
    "get_preset",
    "list_presets",
    "load_config_file",
    "pipeline_from_config",
    "pipeline_to_config",
    "register_preset",
]
