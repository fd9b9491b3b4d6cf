"""The app factory: :func:`create_app` wires settings, schemas, middleware, routes and metrics."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from contextwright.core.errors import missing_extra
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

    from contextwright.service import docs, middleware, problems, routes, schemas
    from contextwright.service.assemblers import Assemblers, open_resources
    from contextwright.service.lifecycle import Lifecycle
    from contextwright.service.metrics import Metrics
    from contextwright.service.runner import Runner
    from contextwright.service.security import ApiKeys

    cfg = config if config is not None else ServiceConfig.load()
    keys = ApiKeys.from_file(cfg.api_keys_file) if cfg.api_keys_file else None
    assemblers = Assemblers(cfg, open_resources(cfg))
    models = schemas.request_models(cfg)
    metrics = Metrics()
    runner = Runner(cfg, metrics)
    lifecycle = Lifecycle(cfg.drain_grace_s)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        lifecycle.install()  # SIGTERM drains (under uvicorn)
        yield
        runner.shutdown()

    app = FastAPI(
        title="contextwright",
        version=package_version(),  # /healthz reports it too
        description="Context assembly for RAG: exact token budgets, dedup, ordering, citations.",
        responses=problems.responses(*_answers(cfg)),
        lifespan=lifespan,
        docs_url=None,  # served by docs.add_docs with local assets: the CDN ones stay blank offline
        redoc_url=None,
    )
    app.state.config, app.state.assemblers, app.state.registry = cfg, assemblers, metrics.registry
    middleware.add_middleware(app, cfg, metrics, lifecycle, keys)
    problems.add_handlers(app)
    routes.build_default_assembler(cfg, models, assemblers)
    routes.add_routes(app, cfg, models, assemblers, metrics, runner, lifecycle)
    middleware.setup_access_log(cfg)
    docs.add_docs(app, title=app.title)
    return app


def package_version() -> str:
    """contextwright's version (``contextwright.__version__``, from ``core.version``: the service
    sits below the package root and does not import it)."""
    from contextwright.core.version import __version__

    return __version__


def _answers(cfg: ServiceConfig) -> tuple[int, ...]:
    """The problem statuses any route may answer with these settings."""
    keys = (401,) if cfg.api_keys_file else ()
    rate = (429,) if cfg.rate_limit_per_s > 0 or (cfg.api_keys_file and cfg.auth_fail_limit > 0) else ()
    return (400, *keys, 408, 413, 422, *rate, 500, 503)


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
