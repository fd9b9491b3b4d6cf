"""Framework objects passed straight to ``assemble``: recognised by shape, read by attribute.

LangChain ``Document`` (and ``(Document, score)`` pairs), LlamaIndex
``NodeWithScore``/``TextNode`` and Haystack ``Document`` are recognised by
their attributes (duck typing) and read into the mappings
:meth:`Chunk.from_dict` knows, so this module imports no framework and no
adapter. The adapters (``contextwright.adapters.*``) check the framework's
types and then read an object with the same functions
(:func:`langchain_mapping`, :func:`llamaindex_mapping`,
:func:`haystack_mapping`), so an object passed straight to ``assemble`` and
one converted by its adapter give the same chunk. An object that looks like
none of them gets an error naming the converters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from contextwright.core.errors import ContextwrightError, InputError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.fields import FIELD_ALIASES

__all__ = [
    "HAYSTACK_ALIASES",
    "check_list",
    "from_any",
    "haystack_mapping",
    "langchain_mapping",
    "llamaindex_mapping",
    "read_item",
]

#: Haystack's own metadata names, read as chunk fields when no usual alias is there.
HAYSTACK_ALIASES: dict[str, tuple[str, ...]] = {
    "doc_id": ("source_id",),
    "index": ("split_id",),
    "source": ("file_path",),
}


def langchain_mapping(document: Any, score: Any = None) -> dict[str, Any]:
    """A LangChain ``Document`` (and the score of its pair) as a chunk mapping."""
    data: dict[str, Any] = {"page_content": document.page_content, "metadata": document.metadata}
    if getattr(document, "id", None) is not None:
        data["id"] = document.id
    if score is not None:
        data["score"] = score
    return data


def llamaindex_mapping(node: Any, score: Any = None) -> dict[str, Any]:
    """A LlamaIndex node (and its score) as a chunk mapping: the text without metadata.

    ``"none"`` is ``MetadataMode.NONE``'s value; the enum is a ``str`` enum, so
    the node compares it equal without this module importing LlamaIndex.
    """
    data: dict[str, Any] = {
        "text": str(node.get_content(metadata_mode="none")),
        "id": node.node_id,
        "metadata": node.metadata,
    }
    if score is not None:
        data["score"] = score
    if node.ref_doc_id is not None:
        data["doc_id"] = node.ref_doc_id
    if node.embedding:
        data["embedding"] = node.embedding
    return data


def haystack_mapping(document: Any) -> dict[str, Any]:
    """A Haystack ``Document`` with text content as a chunk mapping.

    Haystack's own metadata names (:data:`HAYSTACK_ALIASES`) are read as
    fields when the metadata has no usual alias for them.
    """
    meta = document.meta
    data: dict[str, Any] = {"content": document.content, "id": document.id, "metadata": meta}
    if document.score is not None:
        data["score"] = document.score
    if document.embedding:
        data["embedding"] = document.embedding
    for field, names in HAYSTACK_ALIASES.items():
        if field not in data:
            value = next((meta[n] for n in names if meta.get(n) is not None), None)
            if value is not None and not any(meta.get(k) is not None for k in FIELD_ALIASES[field]):
                data[field] = value
    return data


def _langchain(item: Any) -> dict[str, Any]:
    if isinstance(item, tuple):
        return langchain_mapping(item[0], item[1])
    return langchain_mapping(item)


def _llamaindex(item: Any) -> dict[str, Any]:
    if hasattr(item, "node") and hasattr(item, "score"):
        return llamaindex_mapping(item.node, item.score)
    return llamaindex_mapping(item)


#: Each framework's reader, and the adapter function a user would call to convert by hand.
_READERS: dict[str, tuple[Callable[[Any], dict[str, Any]], str]] = {
    "LangChain Document": (_langchain, "contextwright.adapters.langchain.from_documents"),
    "LlamaIndex node": (_llamaindex, "contextwright.adapters.llamaindex.from_nodes"),
    "Haystack Document": (haystack_mapping, "contextwright.adapters.haystack.from_documents"),
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


def check_list(chunks: Any) -> None:
    """Raise :class:`InputError` when ``chunks`` is not a list of chunks (a string, a mapping, a number)."""
    if isinstance(chunks, (str, bytes, Mapping)) or not isinstance(chunks, Iterable):
        raise InputError(f"chunks must be a list of chunks; got {type(chunks).__name__}. {_HINT}")


def read_item(item: Any, position: int) -> Chunk | Mapping[str, Any]:
    """A framework object as a chunk, read the way its adapter reads it; the pipeline's reader
    (``chunks_from_dicts(read=read_item)``), so each object is converted once.

    A framework object without text becomes a text-less mapping, which the
    pipeline drops with reason ``empty`` like any other empty chunk.

    Raises:
        InputError: for an object no adapter recognises, or one its adapter
            rejects, naming the adapter function to call.
    """
    found = _kind(item)
    if found is None:
        name = type(item).__name__
        article = "an" if name[:1].lower() in "aeiou" else "a"
        raise InputError(f"chunks[{position}] is {article} {name}, not a chunk. {_HINT}")
    kind, text = found
    if text is None or (isinstance(text, str) and not text.strip()):
        ident = _id(item)
        return {"text": text, **({"id": ident} if ident else {})}
    read, call = _READERS[kind]
    try:
        return chunks_from_dicts([read(item)])[0]
    except ContextwrightError as exc:
        raise InputError(
            f"chunks[{position}] looks like a {kind} but {call}() could not convert it: {exc}"
        ) from None


def from_any(chunks: Iterable[Any]) -> list[Chunk | Mapping[str, Any]]:
    """``chunks`` with framework objects converted to chunks (:func:`read_item`); chunks and
    mappings as they are.

    Raises:
        InputError: for something that is not a list of chunks, or an item :func:`read_item` refuses.
    """
    check_list(chunks)
    return [
        item if type(item) is dict or isinstance(item, (Chunk, Mapping)) else read_item(item, position)
        for position, item in enumerate(chunks)
    ]
