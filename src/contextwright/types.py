"""Compatibility path: the code lives in ``contextwright.model.chunk``, ``contextwright.model.fields``, ``contextwright.model.report``, ``contextwright.model.convert``, ``contextwright.model.zones``, ``contextwright.render.context``."""

# ruff: noqa: F401

from contextwright.model.chunk import (
    _CHUNK_FIELD_SET,
    _CHUNK_FIELDS,
    Chunk,
    Origin,
    _check_chunk,
    _chunk_values,
    _empty_text,
    _from_plain,
    _given_id,
    _set,
    content_id,
)
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.fields import (
    _EMPTY,
    _FIELD_OF,
    _INT_FIELDS,
    _KNOWN_KEYS,
    _MAX_DEPTH,
    _SCALARS,
    _SLOW_KEYS,
    _STR_FIELDS,
    _bad_path,
    _collect,
    _fast_plan,
    _FastPlan,
    _number,
    _opt_int,
    _opt_str,
    _plan,
    _provenance,
    _provenance_dicts,
    _short,
    _utf8_ok,
    _value_at,
    check_tree,
)
from contextwright.model.fields import FIELD_ALIASES as _ALIASES
from contextwright.model.report import Change, Drop, DropReason, Report, StageReport, StageResult
from contextwright.model.zones import HistoryResult, Message, ToolsResult
from contextwright.render.context import AssembledContext, Citation, _prefix_chars
