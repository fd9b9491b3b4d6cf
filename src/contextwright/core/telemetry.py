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

__all__ = ["NO_SPAN", "span", "tracing"]


@functools.lru_cache(maxsize=1)
def _trace() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


# Entered as ``None`` and reusable: what ``span`` returns when no span is started, so the common
# case costs no generator (a pipeline call opens one span per stage).
NO_SPAN: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


def _provider() -> Any:
    """The tracer provider that starts real spans, or None."""
    trace = _trace()
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


def tracing() -> bool:
    """Whether :func:`span` would start spans now (a caller opening many may ask once per call)."""
    return _provider() is not None


def span(name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """A span named ``name`` under the current one, or ``None`` without OpenTelemetry."""
    provider = _provider()
    if provider is None:
        return NO_SPAN
    return _started(provider, name, attributes)


@contextlib.contextmanager
def _started(provider: Any, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    tracer = provider.get_tracer("contextwright")
    with tracer.start_as_current_span(
        name, attributes={k: v for k, v in attributes.items() if v is not None}
    ) as current:
        yield current
