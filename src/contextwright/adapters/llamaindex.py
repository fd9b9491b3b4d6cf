"""LlamaIndex adapter: ``NodeWithScore`` ↔ :class:`Chunk`, and a node postprocessor.

A node's ``node_id`` becomes the chunk id, its ``ref_doc_id`` (the source
document) the ``doc_id``, ``score`` the score and ``embedding`` the embedding;
its metadata (``file_name``, ``page_label``, ...) is kept whole. Nodes that come
back from an assembly are copies of the nodes that went in (relationships,
templates and excluded keys intact), never the caller's nodes changed in place.

Example:
    >>> from contextwright.adapters.llamaindex import ContextwrightPostprocessor
    >>> engine = index.as_query_engine(
    ...     similarity_top_k=20, node_postprocessors=[ContextwrightPostprocessor(budget=1_500)]
    ... )
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contextwright.adapters._convert import (
    ASSEMBLY_KEYS,
    assembly_metadata,
    blocks_of,
    build_assembler,
    chunks_from_mappings,
    metadata_for,
    originals_by_id,
)
from contextwright.assembly.assembler import Assembler
from contextwright.core.errors import InputError, missing_extra
from contextwright.inputs.frameworks import llamaindex_mapping
from contextwright.model.chunk import Chunk
from contextwright.render.context import AssembledContext, Citation

try:
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import (
        BaseNode,
        MetadataMode,
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("llama_index.core", "llamaindex") from exc

__all__ = ["ContextwrightPostprocessor", "from_nodes", "to_nodes"]


def _text_of(node: BaseNode) -> str:
    return str(node.get_content(metadata_mode=MetadataMode.NONE))


def from_nodes(nodes: Iterable[NodeWithScore | BaseNode | Chunk]) -> tuple[Chunk, ...]:
    """Convert LlamaIndex nodes (with or without scores) into chunks, in order.

    ``rank`` is the input position. The chunk text is the node's content
    without metadata (what ``MetadataMode.NONE`` gives); a node without a
    score gets 0.0.

    Raises:
        InputError: naming the position of a node with no text.
    """
    items: list[Mapping[str, Any] | Chunk] = []
    for position, item in enumerate(nodes):
        if isinstance(item, Chunk):
            items.append(item)
            continue
        if isinstance(item, NodeWithScore):
            node, score = item.node, item.score
        elif isinstance(item, BaseNode):
            node, score = item, None
        else:
            raise InputError(
                f"nodes[{position}] must be a llama_index NodeWithScore, a node or a Chunk; "
                f"got {type(item).__name__}."
            )
        items.append(llamaindex_mapping(node, score))
    return chunks_from_mappings(items)


def to_nodes(
    source: AssembledContext | Iterable[Chunk],
    *,
    originals: Mapping[str, NodeWithScore | BaseNode] | None = None,
) -> list[NodeWithScore]:
    """Convert chunks, or the blocks of an assembled context, into scored nodes.

    With ``originals`` (input chunk id → the node it came from), each block is
    a copy of its original node, with the block's text when the assembly
    changed it (truncated, compressed, merged) and the block's score. Without
    it, or for a chunk that has no original (an expanded neighbour), a new
    ``TextNode`` is built, its document id in the ``SOURCE`` relationship.

    Nodes from an :class:`AssembledContext` come in the context's order and
    carry ``citation`` (the ``n`` of ``[n]``) and ``citation_label`` in their
    metadata; these keys are excluded from what the LLM and the embedder see.
    """
    out = []
    for chunk, citation in blocks_of(source):
        original = _original(chunk, originals)
        node = _copy_node(original, chunk, citation) if original is not None else _new_node(chunk, citation)
        out.append(NodeWithScore(node=node, score=chunk.score))
    return out


def _original(chunk: Chunk, originals: Mapping[str, NodeWithScore | BaseNode] | None) -> BaseNode | None:
    if not originals:
        return None
    for member in (chunk.id, *chunk.member_ids):
        found = originals.get(member)
        if found is not None:
            return found.node if isinstance(found, NodeWithScore) else found
    return None


def _hide(keys: Iterable[str], hidden: Sequence[str]) -> list[str]:
    return list(hidden) + [k for k in keys if k not in hidden]


def _copy_node(original: BaseNode, chunk: Chunk, citation: Citation | None) -> BaseNode:
    update: dict[str, Any] = {}
    if citation is not None:
        added = assembly_metadata(chunk, citation)
        update["metadata"] = {**original.metadata, **added}
        update["excluded_llm_metadata_keys"] = _hide(added, original.excluded_llm_metadata_keys)
        update["excluded_embed_metadata_keys"] = _hide(added, original.excluded_embed_metadata_keys)
    node = original.model_copy(update=update)
    if chunk.text != _text_of(original):
        node.set_content(chunk.text)  # on the copy: the caller's node is never changed
    return node


def _new_node(chunk: Chunk, citation: Citation | None) -> TextNode:
    relationships = {}
    if chunk.doc_id is not None:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=chunk.doc_id)
    added = list(ASSEMBLY_KEYS) if citation is not None else []
    return TextNode(
        id_=chunk.id,
        text=chunk.text,
        metadata=metadata_for(chunk, citation, skip=("doc_id",)),
        embedding=list(chunk.embedding) if chunk.embedding is not None else None,
        relationships=relationships,
        excluded_llm_metadata_keys=added,
        excluded_embed_metadata_keys=added,
    )


class ContextwrightPostprocessor(BaseNodePostprocessor):
    """A LlamaIndex node postprocessor that assembles the retrieved nodes.

    It runs the assembler's pipeline on the retrieved nodes (by default the
    ``qa`` preset: exact dedup, greedy fit to the token budget,
    lost-in-the-middle-aware order) and returns the surviving nodes in the
    assembled order, so the response synthesizer reads them within budget and
    in the order contextwright chose. Each node's metadata has its
    ``citation`` number (hidden from the LLM and embedder). Use it in a query
    engine's ``node_postprocessors``; use :meth:`assemble` for the context
    text and the report.

    Args:
        assembler: A ready :class:`~contextwright.Assembler`; or give settings:
        preset: A preset name or config mapping.
        budget: The documents budget in tokens.
        model: A registered model name (tokenizer and budget from its window).
        tokenizer: A tokenizer spec, e.g. ``cl100k_base``.
        format: The output format (``xml``, ``numbered``, ...).
        order: The order (``relevance``, ``bookend``, ...).

    Example:
        >>> from llama_index.core.query_engine import RetrieverQueryEngine
        >>> engine = RetrieverQueryEngine.from_args(
        ...     index.as_retriever(similarity_top_k=20),
        ...     node_postprocessors=[ContextwrightPostprocessor(budget=1_500, order="bookend")],
        ... )
    """

    preset: str | dict[str, Any] = "qa"
    budget: int | None = None
    model: str | None = None
    tokenizer: str | None = None
    format: str | None = None
    order: str | None = None

    _assembler: Assembler = PrivateAttr()

    def __init__(self, *, assembler: Assembler | None = None, **settings: Any) -> None:
        super().__init__(**settings)
        self._assembler = build_assembler(
            assembler,
            self.preset,
            budget=self.budget,
            model=self.model,
            tokenizer=self.tokenizer,
            format=self.format,
            order=self.order,
            owner=type(self).__name__,
        )

    @classmethod
    def class_name(cls) -> str:
        return "ContextwrightPostprocessor"

    @property
    def assembler(self) -> Assembler:
        """The assembler this postprocessor delegates to."""
        return self._assembler

    def assemble(self, nodes: Sequence[NodeWithScore], query: str = "") -> AssembledContext:
        """The assembled context of ``nodes`` (text, citations, report)."""
        return self._assembler.assemble(query, from_nodes(nodes))

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        chunks = from_nodes(nodes)
        query = query_bundle.query_str if query_bundle is not None else ""
        ctx = self._assembler.assemble(query, chunks)
        return to_nodes(ctx, originals=originals_by_id(nodes, chunks))
