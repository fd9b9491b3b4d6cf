"""The HTTP service: context assembly behind FastAPI, thin over :class:`Assembler`.

Endpoints:

* ``POST /v1/assemble``: query + chunks + options -> text, tokens, citations, report;
* ``POST /v1/citations/resolve``: answer + citations -> cited / missing / uncited;
* ``GET /healthz``, ``GET /metrics`` (Prometheus), ``GET /`` (the inspector page),
  ``GET /openapi.json``.

Bad input never gives a 500: every error is an RFC 7807 problem detail
(``application/problem+json``) whose ``loc`` names the field path, e.g.
``["body", "chunks", 3, "score"]``. Bodies over ``max_body_bytes`` get 413
(checked on ``Content-Length`` and on the bytes actually streamed), an
assembly that outlives ``timeout_s`` gets 504.

The package, one concern per module:

* ``settings``: :class:`ServiceConfig` (TOML file and ``CONTEXTWRIGHT_*`` variables);
* ``schemas``: request models (built per app from its limits) and response models;
* ``problems``: problem+json errors and their handlers;
* ``security``: what a request may not make the server do;
* ``assemblers``: the per-configuration :class:`Assembler` cache;
* ``runner``: the thread pool and the per-request timeout;
* ``middleware``: ASGI layers (body limit, request metrics);
* ``metrics``: the Prometheus registry of one app;
* ``routes``: the endpoints;
* ``app``: :func:`create_app`, which wires them together.

Only ``settings`` is imported with the package; the rest needs the ``service``
extra (FastAPI, pydantic, prometheus-client) and is imported by :func:`create_app`.

Example:
    >>> from contextwright.service import ServiceConfig, create_app
    >>> app = create_app(ServiceConfig(budget=1000))
    >>> # uvicorn.run(app, host="127.0.0.1", port=8000)
"""

from contextwright.service.app import create_app
from contextwright.service.settings import ServiceConfig

__all__ = ["ServiceConfig", "create_app"]
