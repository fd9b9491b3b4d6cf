"""Compatibility path: the code lives in ``contextwright.assembly.assembler``."""

from contextwright.assembly.assembler import (
    _ASSEMBLE_ARGS,
    _ASSEMBLER_ARGS,
    _ASSEMBLER_OPTIONS,
    DEFAULT_BUFFER,
    MAX_SESSIONS,
    Assembler,
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
