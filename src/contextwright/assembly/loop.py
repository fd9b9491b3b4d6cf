"""The stage loop's one step, shared by the sync and the async pipeline.

:meth:`Pipeline.run` calls a stage directly; :meth:`Pipeline.arun` awaits its
``acall`` or runs it in a worker thread. Everything around the call is here,
once: which stages run (a fused ``fuse`` stage is skipped), the cancellation
check before each, what each receives (its ``requires`` and the ``optional``
resources present), its span, and its report with the pipeline's token counts
and time. Before this module the two loops had drifted: only the sync one
opened a span per stage, and only it checked cancellation before the render.
Cancellation itself (:func:`cancel_on`, :func:`check_cancelled`, re-exported
here) is :mod:`contextwright.core.cancel`'s, so stages can check inside their
loops too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contextwright.core.cancel import cancel_on, check_cancelled
from contextwright.core.errors import ConfigError
from contextwright.core.telemetry import NO_SPAN, span, tracing
from contextwright.model.chunk import Chunk
from contextwright.model.report import StageReport, StageResult, Tally
from contextwright.stages.fusion import Fuse

__all__ = ["StageLoop", "cancel_on", "check_cancelled"]


def needs_of(stage: Any, env: Mapping[str, Any]) -> dict[str, Any]:
    """What ``stage`` receives: its ``requires`` (all present) and the ``optional`` ones that are."""
    needs = {}
    for key in getattr(stage, "requires", ()):
        if key not in env:
            raise ConfigError(
                f"stage {stage.name!r} requires {key!r}, which this assembler does not have. "
                f"Pass {key}= to Assembler (resources)."
            )
        needs[key] = env[key]
    # ``optional``: resources a stage uses when present and does without otherwise
    for key in getattr(stage, "optional", ()):
        if key in env:
            needs[key] = env[key]
    return needs


def measured(report: StageReport, tokens_in: int | Tally, tokens_out: int | Tally, ms: float) -> StageReport:
    """``report`` with the pipeline's figures (``dataclasses.replace``, without its per-field work
    for the common case of a plain StageReport); the token figures may be tallies, counted when read."""
    if type(report) is not StageReport:
        return replace(report, tokens_in=tokens_in, tokens_out=tokens_out, ms=ms)
    r = report
    return StageReport(
        r.stage, r.chunks_in, r.chunks_out, r.dropped, r.changed, r.added, r.notes, tokens_in, tokens_out, ms
    )


def attributes(report: StageReport) -> dict[str, Any]:
    """A stage report as span attributes (OpenTelemetry)."""
    return {
        "contextwright.chunks_in": report.chunks_in,
        "contextwright.chunks_out": report.chunks_out,
        "contextwright.tokens_in": report.tokens_in if report.tokens_in is not None else -1,
        "contextwright.tokens_out": report.tokens_out if report.tokens_out is not None else -1,
        "contextwright.dropped": len(report.dropped),
        "contextwright.ms": round(report.ms, 3),
    }


@dataclass
class StageLoop:
    """One run of the stage loop: the chunks so far, their tokens, and the reports.

    Example (the sync loop; the async one differs only in how it calls the stage)::

        loop = StageLoop.begin(stages, env, inputs, tokens, fused)
        for stage, needs in loop.steps():
            with loop.span(stage) as sp:
                start = time.perf_counter()
                result = stage(loop.current, **needs)
                loop.record(result, ms_since(start), meter.tally(result.chunks), sp)
    """

    stages: Sequence[Any]
    env: Mapping[str, Any]
    current: tuple[Chunk, ...]
    tokens_now: int | Tally
    fused: StageResult | None = None
    reports: list[StageReport] = field(default_factory=list)
    traced: bool = False

    @classmethod
    def begin(
        cls,
        stages: Sequence[Any],
        env: Mapping[str, Any],
        inputs: tuple[Chunk, ...],
        tokens: int | Tally,
        fused: StageResult | None,
    ) -> StageLoop:
        """The loop before its first stage; fusion, which ran before it, is its first report."""
        loop = cls(stages, env, inputs, tokens, fused, traced=tracing())  # asked once per call
        if fused is not None:
            loop.reports.append(replace(fused.report, tokens_in=tokens, tokens_out=tokens))
            trace(loop.reports[-1])
        return loop

    def steps(self) -> Iterator[tuple[Any, dict[str, Any]]]:
        """Each stage to run, with what it receives, after checking for cancellation."""
        for stage in self.stages:
            if self.fused is not None and isinstance(stage, Fuse):
                continue  # already fused, before every other stage
            check_cancelled(stage.name)
            yield stage, needs_of(stage, self.env)

    def span(self, stage: Any) -> contextlib.AbstractContextManager[Any]:
        """The stage's span when tracing is on (OpenTelemetry), else a no-op."""
        if not self.traced:
            return NO_SPAN
        return span(f"contextwright.stage.{stage.name}", **{"contextwright.stage": stage.name})

    def record(self, result: StageResult, ms: float, tokens_out: int | Tally, sp: Any) -> None:
        """Take the stage's result: its report with the pipeline's figures, its chunks onward."""
        self.reports.append(measured(result.report, self.tokens_now, tokens_out, ms))
        if sp is not None:
            sp.set_attributes(attributes(self.reports[-1]))
        self.current, self.tokens_now = result.chunks, tokens_out


def trace(report: StageReport) -> None:
    """A span for a step that ran outside the stage loop (fusion)."""
    with span(f"contextwright.stage.{report.stage}", **{"contextwright.stage": report.stage}) as sp:
        if sp is not None:
            sp.set_attributes(attributes(report))
