"""Compatibility path: the code lives in ``contextwright.inputs.frameworks``."""

# ruff: noqa: F401

from contextwright.inputs.frameworks import _CONVERTERS, _HINT, _id, _kind, _node_text, from_any
