"""Compatibility path: the code lives in ``contextwright.inputs.readers`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.inputs.readers import QueryItem as QueryItem
from contextwright.inputs.readers import Record as Record
from contextwright.inputs.readers import batched as batched
from contextwright.inputs.readers import read_items as read_items
from contextwright.inputs.readers import read_records as read_records
