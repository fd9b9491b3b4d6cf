"""OpenTelemetry spans, when ``opentelemetry-api`` is installed (extra ``otel``).

One span per :meth:`Assembler.assemble` call (``contextwright.assemble``) and
a child span per stage (``contextwright.stage.<name>``) with its counts,
tokens and milliseconds as attributes. Without the package every call here is
a no-op costing one cached lookup; with it but no tracer provider set (no
SDK configured), spans are skipped as well: the API's proxy would only hand
out no-op spans, at a cost of ~30 µs per stage per call, checked per call so
a provider set later is picked up.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

__all__ = ["span"]


@functools.lru_cache(maxsize=1)
def _trace() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A span named ``name`` under the current one, or ``None`` without OpenTelemetry."""
    trace = _trace()
    if trace is None:
        yield None
        return
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        yield None
        return
    tracer = provider.get_tracer("contextwright")
    with tracer.start_as_current_span(
        name, attributes={k: v for k, v in attributes.items() if v is not None}
    ) as current:
        yield current
