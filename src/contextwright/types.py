"""Compatibility path: the code lives in ``contextwright.model.chunk``, ``contextwright.model.convert``, ``contextwright.model.report``, ``contextwright.render.context`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.model.chunk import Chunk as Chunk
from contextwright.model.convert import chunks_from_dicts as chunks_from_dicts
from contextwright.model.report import Change as Change
from contextwright.model.report import Drop as Drop
from contextwright.model.report import DropReason as DropReason
from contextwright.model.report import Report as Report
from contextwright.model.report import StageReport as StageReport
from contextwright.model.report import StageResult as StageResult
from contextwright.render.context import AssembledContext as AssembledContext
from contextwright.render.context import Citation as Citation
