"""Compatibility path: the code lives in ``contextwright.core.telemetry``."""

from contextwright.core.telemetry import NO_SPAN, _provider, _started, _trace, span, tracing

__all__ = ["NO_SPAN", "_provider", "_started", "_trace", "span", "tracing"]
