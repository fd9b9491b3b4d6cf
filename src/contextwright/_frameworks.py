"""Framework objects passed straight to ``assemble``: recognised by shape, converted by the adapters.

LangChain ``Document`` (and ``(Document, score)`` pairs), LlamaIndex
``NodeWithScore``/``TextNode`` and Haystack ``Document`` are recognised by
their attributes (duck typing), so this module imports no framework; the
matching adapter module is imported only when such an object is seen. An
object that looks like none of them gets an error naming the converters.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any

from contextwright.errors import ContextwrightError, InputError
from contextwright.types import Chunk

__all__ = ["from_any"]

_CONVERTERS = {
    "LangChain Document": ("contextwright.adapters.langchain", "from_documents", "langchain"),
    "LlamaIndex node": ("contextwright.adapters.llamaindex", "from_nodes", "llamaindex"),
    "Haystack Document": ("contextwright.adapters.haystack", "from_documents", "haystack"),
}

_HINT = (
    "Pass Chunk objects or mappings with a 'text' field, or convert framework objects with "
    "contextwright.adapters.langchain.from_documents(docs), "
    "contextwright.adapters.llamaindex.from_nodes(nodes) or "
    "contextwright.adapters.haystack.from_documents(docs)."
)


def _kind(item: Any) -> tuple[str, Any] | None:
    """Which framework ``item`` comes from (by shape), and its text (None when it has none)."""
    if isinstance(item, tuple) and len(item) == 2 and hasattr(item[0], "page_content"):
        return "LangChain Document", item[0].page_content
    if hasattr(item, "page_content") and hasattr(item, "metadata"):
        return "LangChain Document", item.page_content
    if hasattr(item, "node") and hasattr(item, "score") and hasattr(item.node, "node_id"):
        return "LlamaIndex node", _node_text(item.node)
    if hasattr(item, "node_id") and hasattr(item, "get_content"):
        return "LlamaIndex node", _node_text(item)
    if hasattr(item, "content") and hasattr(item, "meta"):
        return "Haystack Document", item.content
    return None


def _node_text(node: Any) -> Any:
    text = getattr(node, "text", None)
    return text if isinstance(text, str) else None


def _id(item: Any) -> str | None:
    for obj in (item[0] if isinstance(item, tuple) else item, getattr(item, "node", None)):
        for attr in ("id", "node_id"):
            value = getattr(obj, attr, None)
            if isinstance(value, str) and value:
                return value
    return None


def from_any(chunks: Iterable[Any]) -> list[Chunk | Mapping[str, Any]]:
    """``chunks`` with framework objects converted to chunks by their adapter.

    A framework object without text becomes a text-less mapping, which the
    pipeline drops with reason ``empty`` like any other empty chunk.

    Raises:
        InputError: for an object no adapter recognises, or one its adapter
            rejects, naming the adapter function to call.
    """
    if isinstance(chunks, (str, bytes, Mapping)) or not isinstance(chunks, Iterable):
        raise InputError(f"chunks must be a list of chunks; got {type(chunks).__name__}. {_HINT}")
    out: list[Chunk | Mapping[str, Any]] = []
    for position, item in enumerate(chunks):
        if type(item) is dict or isinstance(item, (Chunk, Mapping)):
            out.append(item)
            continue
        found = _kind(item)
        if found is None:
            raise InputError(f"chunks[{position}] is a {type(item).__name__}, not a chunk. {_HINT}")
        kind, text = found
        module, func, extra = _CONVERTERS[kind]
        if text is None or (isinstance(text, str) and not text.strip()):
            ident = _id(item)
            out.append({"text": text, **({"id": ident} if ident else {})})
            continue
        call = f"{module}.{func}"
        try:
            converter = getattr(importlib.import_module(module), func)
            out.append(converter([item])[0])
        except ImportError as exc:
            raise InputError(
                f"chunks[{position}] looks like a {kind} but its adapter cannot be loaded ({exc}); "
                f"install contextwright[{extra}] or convert it yourself with {call}(...)."
            ) from None
        except ContextwrightError as exc:
            raise InputError(
                f"chunks[{position}] looks like a {kind} but {call}() could not convert it: {exc}"
            ) from None
    return out
