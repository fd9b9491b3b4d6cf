"""LangChain adapter: ``Document`` ↔ :class:`Chunk`, a transformer, a compressor and a Runnable.

A LangChain ``Document`` has ``page_content``, ``metadata`` and an optional
``id``. The score, source, page and document id live in ``metadata`` under
names such as ``relevance_score``, ``source`` and ``page``; :func:`from_documents`
reads them with the aliases of :meth:`Chunk.from_dict` and keeps the metadata
whole, so :func:`to_documents` gives it back unchanged.

Example:
    >>> from contextwright.adapters.langchain import ContextwrightRunnable
    >>> from langchain_core.prompts import ChatPromptTemplate
    >>> prompt = ChatPromptTemplate.from_messages(
    ...     [("system", "Answer from the context.\\n{context}"), ("human", "{query}")]
    ... )
    >>> chain = ContextwrightRunnable(budget=1_000) | prompt
    >>> chain.invoke({"query": "who discovered x-rays?", "documents": docs})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from contextwright.adapters._convert import (
    blocks_of,
    build_assembler,
    chunks_from_mappings,
    citations_as_dicts,
    metadata_for,
    query_of,
)
from contextwright.assembly.assembler import Assembler
from contextwright.assembly.pipeline import Pipeline
from contextwright.core.errors import InputError, missing_extra
from contextwright.inputs.frameworks import langchain_mapping
from contextwright.model.chunk import Chunk
from contextwright.render.context import AssembledContext

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, BaseDocumentTransformer, Document
    from langchain_core.runnables import Runnable, RunnableConfig
    from pydantic import ConfigDict
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("langchain_core", "langchain") from exc

__all__ = [
    "ContextwrightCompressor",
    "ContextwrightRunnable",
    "ContextwrightTransformer",
    "from_documents",
    "to_documents",
]

_QUERY_KEYS = ("query", "question", "input")
_DOCUMENT_KEYS = ("documents", "docs", "context")


def from_documents(documents: Iterable[Document | tuple[Document, float] | Chunk]) -> tuple[Chunk, ...]:
    """Convert LangChain documents into chunks, in order.

    Accepts ``Document`` objects, the ``(Document, score)`` pairs of
    ``similarity_search_with_score``, and chunks (passed through). ``rank`` is
    the input position and ids are unique: a document without ``id`` gets one
    derived from its text.

    Raises:
        InputError: naming the position of a malformed document (empty text,
            a non-numeric score, ...).
    """
    items: list[Mapping[str, Any] | Chunk] = []
    for position, item in enumerate(documents):
        score: Any = None
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Document):
            item, score = item
        if isinstance(item, Chunk):
            items.append(item)
            continue
        if not isinstance(item, Document):
            raise InputError(
                f"documents[{position}] must be a langchain_core Document, a (Document, score) pair "
                f"or a Chunk; got {type(item).__name__}."
            )
        items.append(langchain_mapping(item, score))
    return chunks_from_mappings(items)


def to_documents(source: AssembledContext | Iterable[Chunk]) -> list[Document]:
    """Convert chunks, or the blocks of an assembled context, into LangChain documents.

    Each document carries the chunk's metadata unchanged, plus the fields only
    the chunk has under their canonical names and the score under ``score``
    (or the score alias the metadata already used). Documents from an
    :class:`AssembledContext` come in the context's order and also carry
    ``citation`` (the block number ``n`` of ``[n]``) and ``citation_label``,
    and, when they apply, ``chunk_ids`` (merged passages), ``ops`` (e.g.
    ``truncated``) and ``origin`` (e.g. ``expanded``).
    """
    out = []
    for chunk, citation in blocks_of(source):
        meta = metadata_for(chunk, citation, score_key="score")
        if chunk.embedding is not None:
            # A LangChain document has no embedding field; from_documents read it from here.
            meta["embedding"] = list(chunk.embedding)
        out.append(Document(page_content=chunk.text, metadata=meta, id=chunk.id))
    return out


class ContextwrightTransformer(BaseDocumentTransformer):
    """A LangChain document transformer that dedups, fits the budget and orders.

    ``transform_documents`` converts the documents to chunks, runs the
    assembler's pipeline (by default the ``qa`` preset: exact dedup, greedy fit
    to the token budget, lost-in-the-middle-aware order) and returns the
    surviving documents in the assembled order, each with its ``citation``
    number in metadata. Use :meth:`assemble` for the text and the report.

    Args:
        assembler: A ready :class:`~contextwright.Assembler`; or give settings:
        preset: A preset name, config mapping, config file or :class:`Pipeline`.
        budget: The documents budget in tokens.
        model: A registered model name (tokenizer and budget from its window).
        tokenizer: A tokenizer spec, e.g. ``cl100k_base``.
        format: The output format (``xml``, ``numbered``, ...).
        order: The order (``relevance``, ``bookend``, ...).
        query: The default query; pass ``query=`` to ``transform_documents``
            to override it per call.

    Example:
        >>> transformer = ContextwrightTransformer(budget=800, order="relevance")
        >>> docs = transformer.transform_documents(retrieved, query="who discovered x-rays?")
        >>> docs[0].metadata["citation"]
        1
    """

    def __init__(
        self,
        *,
        assembler: Assembler | None = None,
        preset: str | Path | Mapping[str, Any] | Pipeline = "qa",
        budget: int | None = None,
        model: str | None = None,
        tokenizer: str | None = None,
        format: str | None = None,
        order: str | None = None,
        query: str = "",
    ) -> None:
        self.assembler = build_assembler(
            assembler,
            preset,
            budget=budget,
            model=model,
            tokenizer=tokenizer,
            format=format,
            order=order,
            owner=type(self).__name__,
        )
        self.query = query_of(query, owner=type(self).__name__)

    def assemble(
        self, documents: Sequence[Document | tuple[Document, float] | Chunk], query: str | None = None
    ) -> AssembledContext:
        """The assembled context of ``documents`` (text, citations, report)."""
        q = self.query if query is None else query_of(query, owner=type(self).__name__)
        return self.assembler.assemble(q, from_documents(documents))

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        """The documents that survive assembly, in the assembled order.

        Args:
            documents: The retrieved documents, best first.
            **kwargs: ``query`` overrides the default query; other keys are
                ignored, as LangChain passes transformer-specific options here.
        """
        return to_documents(self.assemble(documents, kwargs.get("query")))


class ContextwrightCompressor(BaseDocumentCompressor):
    """A LangChain document compressor, for ``ContextualCompressionRetriever``.

    LangChain's standard place to post-process retrieved documents is a
    ``ContextualCompressionRetriever``: it calls its base retriever, then its
    compressor with the documents and the query. This compressor runs the
    assembler on them (by default the ``qa`` preset: exact dedup, greedy fit
    to the token budget, lost-in-the-middle-aware order) and returns the
    surviving documents in the assembled order, each with its ``citation``
    number in metadata, exactly as :class:`ContextwrightTransformer` does.
    Dropped documents are not returned; :meth:`assemble` gives the text and
    the report (why each was dropped). ``acompress_documents`` runs the same
    assembly in a worker thread, so it does not block the event loop.

    Args:
        assembler: A ready :class:`~contextwright.Assembler`; or give settings
            (``preset``, ``budget``, ``model``, ``tokenizer``, ``format``,
            ``order``) as for :class:`ContextwrightTransformer`.

    Example:
        >>> from langchain_classic.retrievers import ContextualCompressionRetriever
        >>> retriever = ContextualCompressionRetriever(
        ...     base_compressor=ContextwrightCompressor(budget=1_000, order="bookend"),
        ...     base_retriever=store.as_retriever(search_kwargs={"k": 20}),
        ... )
        >>> docs = retriever.invoke("who discovered x-rays?")
        >>> docs[0].metadata["citation"]
        1
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    assembler: Assembler
    """The assembler every call delegates to."""

    def __init__(
        self,
        *,
        assembler: Assembler | None = None,
        preset: str | Path | Mapping[str, Any] | Pipeline = "qa",
        budget: int | None = None,
        model: str | None = None,
        tokenizer: str | None = None,
        format: str | None = None,
        order: str | None = None,
    ) -> None:
        # mypy sees the pydantic __init__ of the base class, which declares no fields.
        super().__init__(  # type: ignore[call-arg]
            assembler=build_assembler(
                assembler,
                preset,
                budget=budget,
                model=model,
                tokenizer=tokenizer,
                format=format,
                order=order,
                owner=type(self).__name__,
            )
        )

    def assemble(
        self, documents: Sequence[Document | tuple[Document, float] | Chunk], query: str = ""
    ) -> AssembledContext:
        """The assembled context of ``documents`` for ``query`` (text, citations, report)."""
        return self.assembler.assemble(query_of(query, owner=type(self).__name__), from_documents(documents))

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """The documents that survive assembly for ``query``, in the assembled order.

        Args:
            documents: The retrieved documents, best first.
            query: The query the documents were retrieved for.
            callbacks: Accepted for the interface; assembly calls no model, so
                there is nothing to report to them.
        """
        return to_documents(self.assemble(documents, query))


class ContextwrightRunnable(Runnable[Any, dict[str, Any]]):
    """A LangChain Runnable: query and documents in, context, citations and documents out.

    The input is a mapping with the query under ``query`` (or ``question`` /
    ``input``) and the retrieved documents under ``documents`` (or ``docs`` /
    ``context``), or just the list a retriever returns (then the query is the
    default one). The output is::

        {"context": str,              # the text the model reads, within budget
         "citations": list[dict],     # citations[n-1] describes [n]
         "documents": list[Document], # the blocks, in context order
         "query": str}                # passed on for the prompt template

    so it composes with a prompt template through LCEL: ``runnable | prompt``
    fills ``{context}`` and ``{query}``.

    Args:
        assembler: A ready :class:`~contextwright.Assembler`; or give settings
            (``preset``, ``budget``, ``model``, ``tokenizer``, ``format``,
            ``order``) as for :class:`ContextwrightTransformer`.
        query: The query used when the input has none.

    Example:
        >>> from operator import itemgetter
        >>> from langchain_core.runnables import RunnablePassthrough
        >>> chain = (
        ...     {"documents": retriever, "query": RunnablePassthrough()}
        ...     | ContextwrightRunnable(budget=1_000, format="numbered")
        ...     | prompt
        ... )
        >>> chain.invoke("who discovered x-rays?")
    """

    def __init__(
        self,
        *,
        assembler: Assembler | None = None,
        preset: str | Path | Mapping[str, Any] | Pipeline = "qa",
        budget: int | None = None,
        model: str | None = None,
        tokenizer: str | None = None,
        format: str | None = None,
        order: str | None = None,
        query: str = "",
        name: str | None = None,
    ) -> None:
        self.assembler = build_assembler(
            assembler,
            preset,
            budget=budget,
            model=model,
            tokenizer=tokenizer,
            format=format,
            order=order,
            owner=type(self).__name__,
        )
        self.query = query_of(query, owner=type(self).__name__)
        self.name = name or "contextwright"

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> dict[str, Any]:
        """Assemble the context for one input (traced as one run named ``contextwright``)."""
        return self._call_with_config(self._assemble, input, config, run_type="chain")

    def _assemble(self, input: Any) -> dict[str, Any]:
        query, documents = self._split(input)
        ctx = self.assembler.assemble(query, from_documents(documents))
        return {
            "context": ctx.text,
            "citations": citations_as_dicts(ctx),
            "documents": to_documents(ctx),
            "query": query,
        }

    def _split(self, input: Any) -> tuple[str, Sequence[Any]]:
        owner = type(self).__name__
        if isinstance(input, Mapping):
            query_key = next((k for k in _QUERY_KEYS if k in input), None)
            docs_key = next((k for k in _DOCUMENT_KEYS if k in input), None)
            if docs_key is None:
                raise InputError(
                    f"{owner} input has no documents: expected one of the keys "
                    f"{', '.join(_DOCUMENT_KEYS)}; got keys {sorted(map(str, input))}. "
                    'Pass {"query": ..., "documents": retriever_output}.'
                )
            query = self.query if query_key is None else query_of(input[query_key], owner=owner)
            documents = input[docs_key]
        else:
            query, documents = self.query, input
        if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
            raise InputError(
                f"{owner}: documents must be a list of Document (a retriever's output); "
                f"got {type(documents).__name__}."
            )
        return query, documents
