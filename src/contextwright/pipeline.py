"""Compatibility path: the code lives in ``contextwright.assembly.loop``, ``contextwright.assembly.pipeline`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.assembly.loop import cancel_on as cancel_on
from contextwright.assembly.pipeline import Pipeline as Pipeline
from contextwright.assembly.pipeline import Plan as Plan
