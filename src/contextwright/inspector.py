"""Compatibility path: the code lives in ``contextwright.assembly.inspector`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.assembly.inspector import block_rows as block_rows
from contextwright.assembly.inspector import input_rows as input_rows
from contextwright.assembly.inspector import inspection as inspection
from contextwright.assembly.inspector import render_page as render_page
