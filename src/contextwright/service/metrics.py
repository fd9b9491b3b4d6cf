"""Prometheus metrics of one app (each app has its own registry)."""

from __future__ import annotations

from typing import Any

import prometheus_client as prom

__all__ = ["Metrics"]


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
        """The text ``/metrics`` answers with, and its content type."""
        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST
