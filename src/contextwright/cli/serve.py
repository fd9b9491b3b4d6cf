"""``contextwright serve``: the HTTP service."""

from __future__ import annotations

from typing import Annotated

import typer

from contextwright.cli.base import (
    app,
    fail,
)


def _check_port(host: str, port: int) -> None:
    """Fail with a hint (exit 2) when the port is taken, before uvicorn says only "Errno 98"."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return  # uvicorn reports other bind errors (a bad host) itself
            fail(
                f"port {port} on {host} is already in use (another contextwright serve?). "
                "Pick another with --port N or CONTEXTWRIGHT_PORT=N, or stop the process using it."
            )


@app.command("serve")
def serve_cmd(
    host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8000).")] = None,
    workers: Annotated[int | None, typer.Option(help="uvicorn worker processes (default 1).")] = None,
    config: Annotated[
        str | None, typer.Option(help="Service TOML file (else $CONTEXTWRIGHT_CONFIG).")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="uvicorn log level.")] = None,
) -> None:
    """Run the HTTP service (POST /v1/assemble, /metrics, the inspector at /)."""
    import os

    from contextwright.core.errors import ContextwrightError
    from contextwright.service import ServiceConfig, create_app

    try:
        import uvicorn
    except ImportError:
        fail("the service needs the 'service' extra: pip install 'contextwright[service]'")
    try:
        cfg = ServiceConfig.load(config, host=host, port=port, workers=workers, log_level=log_level)
        _check_port(cfg.host, cfg.port)
        if cfg.workers == 1:
            uvicorn.run(
                create_app(cfg),
                host=cfg.host,
                port=cfg.port,
                log_level=cfg.log_level,
                access_log=not cfg.access_log,  # the service writes its own (JSON) access log
                proxy_headers=False,  # the app trusts X-Forwarded-For from cfg.trusted_proxies only
            )
            return
        create_app(cfg)  # fail here, once, rather than in every worker
    except ContextwrightError as exc:
        fail(str(exc))
    # Worker processes build their app from the import string; the settings travel as
    # CONTEXTWRIGHT_* variables, which ServiceConfig.load reads in each worker.
    os.environ.update(cfg.to_env())
    from contextwright.service.metrics import shared_metrics_dir

    with shared_metrics_dir():  # /metrics sums every worker's values (prometheus multiprocess mode)
        uvicorn.run(
            "contextwright.service:create_app",
            factory=True,
            host=cfg.host,
            port=cfg.port,
            workers=cfg.workers,
            log_level=cfg.log_level,
            access_log=not cfg.access_log,
            proxy_headers=False,
        )
