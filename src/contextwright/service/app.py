"""The app factory: :func:`create_app` wires settings, schemas, middleware, routes and metrics."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from contextwright.errors import missing_extra
from contextwright.service.settings import ServiceConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["create_app"]


def create_app(config: ServiceConfig | None = None) -> FastAPI:
    """Build the FastAPI app.

    Args:
        config: The service settings; ``None`` reads them with
            :meth:`ServiceConfig.load` (TOML file from ``CONTEXTWRIGHT_CONFIG``,
            then ``CONTEXTWRIGHT_*`` variables). This is what worker processes
            started from the import string ``contextwright.service:create_app``
            (``factory=True``) do.

    Raises:
        MissingDependencyError: without the ``service`` extra.
        ConfigError: for invalid settings or an unreachable store URL scheme.
    """
    _require_extra()
    from fastapi import FastAPI

    import contextwright
    from contextwright.service import middleware, problems, routes, schemas
    from contextwright.service.assemblers import Assemblers, open_resources
    from contextwright.service.metrics import Metrics
    from contextwright.service.runner import Runner

    cfg = config if config is not None else ServiceConfig.load()
    assemblers = Assemblers(cfg, open_resources(cfg))
    models = schemas.request_models(cfg)
    runner = Runner(cfg)
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        yield
        runner.shutdown()

    app = FastAPI(
        title="contextwright",
        version=contextwright.__version__,
        description="Context assembly for RAG: exact token budgets, dedup, ordering, citations.",
        responses=problems.responses(400, 413, 422, 500),
        lifespan=lifespan,
    )
    app.state.config, app.state.assemblers, app.state.registry = cfg, assemblers, metrics.registry
    middleware.add_middleware(app, cfg, metrics)
    problems.add_handlers(app)
    routes.build_default_assembler(cfg, models, assemblers)
    routes.add_routes(app, cfg, models, assemblers, metrics, runner)
    return app


def _require_extra() -> None:
    """Raise :class:`MissingDependencyError` naming the ``service`` extra when it is not installed."""
    try:
        import fastapi  # noqa: F401
        import pydantic  # noqa: F401
    except ImportError as exc:
        raise missing_extra(exc.name or "fastapi", "service") from None
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise missing_extra("prometheus_client", "service") from None
