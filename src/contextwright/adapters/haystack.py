"""Haystack adapter: ``Document`` ↔ :class:`Chunk`, and a pipeline component.

A Haystack ``Document`` has ``id``, ``content``, ``meta``, ``score`` and
``embedding``. Besides the aliases of :meth:`Chunk.from_dict` (``page_number``,
``file_name``, ...), the names Haystack's own ``DocumentSplitter`` and
converters write are understood: ``source_id`` is the document id,
``split_id`` the chunk's index in it and ``file_path`` its source.

The component's settings are plain values, so ``Pipeline.to_dict()`` /
``Pipeline.dumps()`` serialize it. Haystack only loads classes from modules on
its deserialization allowlist; pass ``allowed_modules=["contextwright"]`` to
``Pipeline.from_dict`` / ``Pipeline.loads`` (or set
``HAYSTACK_DESERIALIZATION_ALLOWLIST=contextwright``).

Example:
    >>> from haystack import Pipeline
    >>> from haystack.components.builders import ChatPromptBuilder
    >>> pipe = Pipeline()
    >>> pipe.add_component("assembler", ContextwrightAssembler(budget=1_000))
    >>> pipe.add_component("prompt", ChatPromptBuilder(template=template))
    >>> pipe.connect("assembler.context", "prompt.context")
"""

# No "from __future__ import annotations" here: older Haystack 2.x (2.5 tested) reads the types of
# run()'s parameters from the raw annotations to build its sockets, and a string
# "list[Document]" does not match a retriever's List[Document] output.

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from contextwright.adapters._convert import (
    assembly_metadata,
    blocks_of,
    build_assembler,
    chunks_from_mappings,
    citations_as_dicts,
    metadata_for,
    originals_by_id,
    query_of,
)
from contextwright.assembly.assembler import Assembler
from contextwright.core.errors import InputError, missing_extra
from contextwright.inputs.frameworks import HAYSTACK_ALIASES, haystack_mapping
from contextwright.model.chunk import Chunk
from contextwright.render.context import AssembledContext

try:
    from haystack import Document, component, default_from_dict, default_to_dict
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("haystack", "haystack") from exc

__all__ = ["ContextwrightAssembler", "from_documents", "to_documents"]


def from_documents(documents: Iterable[Document | Chunk]) -> tuple[Chunk, ...]:
    """Convert Haystack documents into chunks, in order.

    ``rank`` is the input position; a document without a score gets 0.0.

    Raises:
        InputError: naming the position of a document without text content
            (binary-only documents cannot be assembled into a text context).
    """
    items: list[Mapping[str, Any] | Chunk] = []
    for position, doc in enumerate(documents):
        if isinstance(doc, Chunk):
            items.append(doc)
            continue
        if not isinstance(doc, Document):
            raise InputError(
                f"documents[{position}] must be a haystack Document or a Chunk; got {type(doc).__name__}."
            )
        if doc.content is None:
            raise InputError(
                f"documents[{position}] (id {doc.id!r}) has no text content; only text documents can be "
                "assembled. Convert binary documents to text first (e.g. with a converter component)."
            )
        items.append(haystack_mapping(doc))
    return chunks_from_mappings(items)


def to_documents(
    source: AssembledContext | Iterable[Chunk],
    *,
    originals: Mapping[str, Document] | None = None,
) -> list[Document]:
    """Convert chunks, or the blocks of an assembled context, into Haystack documents.

    With ``originals`` (input chunk id → the document it came from), each
    block is a copy of its original document with the block's text (changed
    when the assembly truncated, compressed or merged it) and score. Otherwise
    a new document is built from the chunk; its ``meta`` is the chunk's
    metadata plus the fields only the chunk has. A 0.0 score is written as
    ``None`` (a chunk cannot tell "no score" from 0.0).

    Documents from an :class:`AssembledContext` come in the context's order and
    carry ``citation`` (the ``n`` of ``[n]``) and ``citation_label`` in ``meta``.
    """
    out = []
    for chunk, citation in blocks_of(source):
        original = None
        if originals:
            original = next((originals[m] for m in (chunk.id, *chunk.member_ids) if m in originals), None)
        score = chunk.score if chunk.score != 0.0 else None
        if original is not None:
            meta = dict(original.meta)
            if citation is not None:
                meta.update(assembly_metadata(chunk, citation))
            out.append(
                dataclasses.replace(original, id=original.id, content=chunk.text, meta=meta, score=score)
            )
            continue
        out.append(
            Document(
                id=chunk.id,
                content=chunk.text,
                meta=metadata_for(chunk, citation, aliases=HAYSTACK_ALIASES),
                score=score,
                embedding=list(chunk.embedding) if chunk.embedding is not None else None,
            )
        )
    return out


@component
class ContextwrightAssembler:
    """A Haystack component that assembles retrieved documents into the context an LLM reads.

    Put it between a retriever (or ranker) and a ``ChatPromptBuilder``: it
    runs the pipeline of its preset (by default ``qa``: exact dedup, greedy
    fit to the token budget, lost-in-the-middle-aware order), and returns the
    rendered ``context`` (never over budget, with ``[n]`` labels), the
    surviving ``documents`` in context order (each with ``meta["citation"]``)
    and the ``citations`` (``citations[n-1]`` describes ``[n]``).

    Args:
        preset: A preset name (``qa``, ``citations``, ...) or a config mapping.
        budget: The documents budget in tokens.
        model: A registered model name (tokenizer and budget from its window).
        format: The output format (``xml``, ``numbered``, ``sources``, ...).
        order: The order (``relevance``, ``bookend``, ...).
        tokenizer: A tokenizer spec, e.g. ``cl100k_base``.

    Example:
        >>> assembler = ContextwrightAssembler(budget=1_000, format="numbered")
        >>> out = assembler.run(documents=retrieved, query="who discovered x-rays?")
        >>> out["context"], out["citations"][0]["source"]
    """

    def __init__(
        self,
        *,
        preset: str | dict[str, Any] = "qa",
        budget: int | None = None,
        model: str | None = None,
        format: str | None = None,
        order: str | None = None,
        tokenizer: str | None = None,
    ) -> None:
        self.preset = preset
        self.budget = budget
        self.model = model
        self.format = format
        self.order = order
        self.tokenizer = tokenizer
        self.assembler: Assembler = build_assembler(
            None,
            preset,
            budget=budget,
            model=model,
            tokenizer=tokenizer,
            format=format,
            order=order,
            owner=type(self).__name__,
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialize the settings (Haystack's ``default_to_dict``)."""
        result: dict[str, Any] = default_to_dict(
            self,
            preset=self.preset,
            budget=self.budget,
            model=self.model,
            format=self.format,
            order=self.order,
            tokenizer=self.tokenizer,
        )
        return result

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ContextwrightAssembler":
        """Rebuild from :meth:`to_dict` (Haystack's ``default_from_dict``)."""
        result: ContextwrightAssembler = default_from_dict(cls, data)
        return result

    @component.output_types(context=str, documents=list[Document], citations=list[dict[str, Any]])
    def run(self, documents: list[Document], query: str = "") -> dict[str, Any]:
        """Assemble ``documents`` for ``query``.

        Args:
            documents: The retrieved documents, best first.
            query: The user's query (used by query-aware stages).

        Returns:
            ``context`` (str), ``documents`` (the blocks in context order) and
            ``citations`` (JSON-ready dicts).
        """
        q = query_of(query, owner=type(self).__name__)
        chunks = from_documents(documents)
        ctx = self.assembler.assemble(q, chunks)
        return {
            "context": ctx.text,
            "documents": to_documents(ctx, originals=originals_by_id(documents, chunks)),
            "citations": citations_as_dicts(ctx),
        }
