"""Prometheus metrics of one app (each app has its own registry).

With several worker processes (``serve --workers N``) each worker counts in
its own memory, so ``/metrics`` would answer with whichever worker took the
scrape. :func:`shared_metrics_dir` (used by ``serve``) turns on
prometheus_client's multiprocess mode: every worker writes its values to
files in ``PROMETHEUS_MULTIPROC_DIR`` and ``/metrics`` sums them, so it
reports the whole server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import prometheus_client as prom

__all__ = ["MULTIPROC_ENV", "Metrics", "shared_metrics_dir"]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextlib.contextmanager
def shared_metrics_dir() -> Iterator[Path]:
    """Set up ``PROMETHEUS_MULTIPROC_DIR`` for worker processes started inside the block.

    A directory the user set is emptied first (values of a previous run would
    be counted again); otherwise a fresh temporary one is made and removed at
    the end. Workers must start after this (prometheus_client reads the
    variable when it is imported).
    """
    given = os.environ.get(MULTIPROC_ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for old in path.glob("*.db"):
            old.unlink()
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix="contextwright-metrics-"))
    os.environ[MULTIPROC_ENV] = str(path)
    try:
        yield path
    finally:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)


class Metrics:
    """The counters and histograms ``/metrics`` exposes."""

    def __init__(self) -> None:
        self.registry = prom.CollectorRegistry()
        self.requests = prom.Counter(
            "contextwright_http_requests",
            "HTTP requests by route and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = prom.Histogram(
            "contextwright_http_request_duration_seconds",
            "HTTP request latency by route.",
            ["route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=self.registry,
        )
        self.tokens_in = prom.Counter(
            "contextwright_tokens_in", "Tokens of the input chunks assembled.", registry=self.registry
        )
        self.tokens_out = prom.Counter(
            "contextwright_tokens_out", "Tokens of the assembled contexts returned.", registry=self.registry
        )
        self.drops = prom.Counter(
            "contextwright_chunks_dropped",
            "Input chunks left out, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.chunks = prom.Counter(
            "contextwright_chunks_in", "Input chunks received.", registry=self.registry
        )
        self.timeouts = prom.Counter(
            "contextwright_assembly_timeouts", "Assemblies answered 504 (timeout_s).", registry=self.registry
        )
        self.cancelled = prom.Counter(
            "contextwright_assemblies_cancelled",
            "Assemblies stopped at a stage boundary after their timeout.",
            registry=self.registry,
        )

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def observe_context(self, ctx: Any) -> None:
        """Count an assembled context's chunks, tokens and drops."""
        report = ctx.report
        self.chunks.inc(report.input_chunks)
        self.tokens_in.inc(report.input_tokens)
        self.tokens_out.inc(ctx.tokens)
        for reason, n in report.reasons().items():
            self.drops.labels(reason).inc(n)

    def exposition(self) -> tuple[bytes, str]:
        """The text ``/metrics`` answers with, and its content type (every worker's, summed, in multiprocess mode)."""
        if os.environ.get(MULTIPROC_ENV) and _multiprocess_values():
            from prometheus_client import multiprocess

            registry = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST
        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST


def _multiprocess_values() -> bool:
    """Whether prometheus_client was imported in multiprocess mode (the variable was set before import)."""
    from prometheus_client import values

    return getattr(values.ValueClass, "__name__", "") != "MutexValue"
