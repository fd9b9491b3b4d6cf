"""Adapters for LangChain, LlamaIndex and Haystack, each an optional extra.

Importing this package imports no framework: each name below is loaded from
its module on first access (``contextwright.adapters.ContextwrightRunnable``
imports ``langchain_core`` then, not before). A missing framework raises
:class:`~contextwright.MissingDependencyError` naming the extra to install.

=============================  ===========================  =====================
name                           module                       extra
=============================  ===========================  =====================
``ContextwrightTransformer``   ``adapters.langchain``       ``langchain``
``ContextwrightCompressor``    ``adapters.langchain``       ``langchain``
``ContextwrightRunnable``      ``adapters.langchain``       ``langchain``
``ContextwrightPostprocessor`` ``adapters.llamaindex``      ``llamaindex``
``ContextwrightAssembler``     ``adapters.haystack``        ``haystack``
=============================  ===========================  =====================

The converters (``from_documents``/``to_documents``, ``from_nodes``/
``to_nodes``) have the same names in more than one module; import them from
their module.

Example:
    >>> from contextwright.adapters import ContextwrightRunnable   # imports langchain_core now
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextwright.adapters.haystack import ContextwrightAssembler
    from contextwright.adapters.langchain import (
        ContextwrightCompressor,
        ContextwrightRunnable,
        ContextwrightTransformer,
    )
    from contextwright.adapters.llamaindex import ContextwrightPostprocessor

__all__ = [
    "ContextwrightAssembler",
    "ContextwrightCompressor",
    "ContextwrightPostprocessor",
    "ContextwrightRunnable",
    "ContextwrightTransformer",
]

_LAZY = {
    "ContextwrightAssembler": "contextwright.adapters.haystack",
    "ContextwrightCompressor": "contextwright.adapters.langchain",
    "ContextwrightPostprocessor": "contextwright.adapters.llamaindex",
    "ContextwrightRunnable": "contextwright.adapters.langchain",
    "ContextwrightTransformer": "contextwright.adapters.langchain",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
