"""Compatibility path: the code lives in ``contextwright.assembly.assembler`` (docs/architecture.md)."""

from __future__ import annotations

from contextwright.assembly.assembler import Assembler as Assembler
from contextwright.assembly.assembler import aassemble as aassemble
from contextwright.assembly.assembler import assemble as assemble
