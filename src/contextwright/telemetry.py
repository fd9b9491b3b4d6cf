"""Compatibility path: the code lives in ``contextwright.core.telemetry``."""

# ruff: noqa: F401

from contextwright.core.telemetry import NO_SPAN, _provider, _started, _trace, span, tracing

__all__ = ["NO_SPAN", "_provider", "_started", "_trace", "span", "tracing"]
