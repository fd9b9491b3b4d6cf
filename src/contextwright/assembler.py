"""Compatibility path: the code lives in ``contextwright.assembly.assembler``."""

# ruff: noqa: F401

from contextwright.assembly.assembler import (
    Assembler,
    DEFAULT_BUFFER,
    MAX_SESSIONS,
    _ASSEMBLER_ARGS,
    _ASSEMBLER_OPTIONS,
    _ASSEMBLE_ARGS,
    _annotate,
    _block_keys,
    _check_resources,
    _from_any,
    _override,
    _stable_prefix,
    _with_fusion,
    aassemble,
    assemble,
)

__all__ = [
    "Assembler",
    "DEFAULT_BUFFER",
    "MAX_SESSIONS",
    "_ASSEMBLER_ARGS",
    "_ASSEMBLER_OPTIONS",
    "_ASSEMBLE_ARGS",
    "_annotate",
    "_block_keys",
    "_check_resources",
    "_from_any",
    "_override",
    "_stable_prefix",
    "_with_fusion",
    "aassemble",
    "assemble",
]
