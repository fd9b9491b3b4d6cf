"""What the three framework adapters share: field mapping and building an assembler.

Nothing here imports a framework. The adapters turn a foreign object into a
plain mapping, call :func:`chunks_from_mappings`, hand the chunks to an
:class:`~contextwright.Assembler`, and turn the final blocks back with
:func:`metadata_for` and :func:`blocks_of`. No stage logic lives here or in
the adapters (STYLE.md §8).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from contextwright.assembly.assembler import Assembler
from contextwright.assembly.pipeline import Pipeline
from contextwright.assembly.spec import AssemblerSpec
from contextwright.core.errors import ConfigError, InputError
from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.fields import FIELD_ALIASES
from contextwright.render.context import AssembledContext, Citation

__all__ = [
    "ASSEMBLY_KEYS",
    "assembly_metadata",
    "blocks_of",
    "build_assembler",
    "chunks_from_mappings",
    "citations_as_dicts",
    "metadata_for",
    "originals_by_id",
    "query_of",
]

#: Metadata keys the adapters add to documents that come out of an assembly.
#: ``citation`` is the block number ``n`` (``[n]`` in the text,
#: ``citations[n-1]``); the other keys appear only when they say something.
ASSEMBLY_KEYS = ("citation", "citation_label", "chunk_ids", "duplicates", "ops", "origin")

_FIELDS = ("doc_id", "index", "source", "title", "section", "page", "line")


def chunks_from_mappings(items: Iterable[Mapping[str, Any] | Chunk]) -> tuple[Chunk, ...]:
    """Chunks with unique ids and ``rank`` set to the input position.

    The mappings use the field names :meth:`Chunk.from_dict` knows; a
    framework's metadata goes under ``metadata``, where the same aliases are
    looked up, and is kept whole in :attr:`Chunk.metadata` so that converting
    back gives the same metadata.
    """
    return chunks_from_dicts(items)


def metadata_for(
    chunk: Chunk,
    citation: Citation | None = None,
    *,
    score_key: str | None = None,
    skip: tuple[str, ...] = (),
    aliases: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """The foreign metadata for ``chunk``: its own metadata, plus what only the chunk knows.

    The chunk's metadata comes back unchanged. A field the chunk has
    (``doc_id``, ``source``, ``page``, ...) is added under its canonical name
    only when no alias of it is already in the metadata, so a document that
    said ``page_number`` keeps saying ``page_number`` and a round trip
    ``from_documents`` → ``to_documents`` returns the metadata it was given.

    Args:
        chunk: The chunk.
        citation: The citation of the block the chunk became, for chunks that
            come out of an assembly; adds :func:`assembly_metadata`.
        score_key: Also write the score into the metadata under this key (for
            frameworks whose documents have no score field). A score alias
            already present is updated; a 0.0 score with no alias present is
            left out, as it only means "no score".
        skip: Fields the framework keeps elsewhere (LlamaIndex keeps the
            document id in a relationship), not to be added.
        aliases: More names per field that the framework uses (Haystack's
            ``source_id`` for ``doc_id``), counted as already present.
    """
    meta = dict(chunk.metadata)
    for name in _FIELDS:
        value = getattr(chunk, name)
        names = FIELD_ALIASES[name] + (aliases or {}).get(name, ())
        if name not in skip and value is not None and not any(key in meta for key in names):
            meta[name] = value
    if score_key is not None:
        present = next((key for key in FIELD_ALIASES["score"] if key in meta), None)
        if present is not None:
            meta[present] = chunk.score
        elif chunk.score != 0.0:
            meta[score_key] = chunk.score
    if citation is not None:
        meta.update(assembly_metadata(chunk, citation))
    return meta


def assembly_metadata(chunk: Chunk, citation: Citation) -> dict[str, Any]:
    """What the assembly did to ``chunk``, as metadata (keys from :data:`ASSEMBLY_KEYS`)."""
    meta: dict[str, Any] = {"citation": citation.index, "citation_label": citation.label}
    if len(chunk.member_ids) > 1:
        meta["chunk_ids"] = list(chunk.member_ids)
    if chunk.duplicates:
        meta["duplicates"] = list(chunk.duplicates)
    if chunk.ops:
        meta["ops"] = list(chunk.ops)
    if chunk.origin != "retrieved":
        meta["origin"] = chunk.origin
    return meta


def blocks_of(
    source: AssembledContext | Iterable[Chunk],
) -> list[tuple[Chunk, Citation | None]]:
    """Pair each chunk with its citation (assembled contexts) or ``None`` (plain chunks)."""
    if isinstance(source, AssembledContext):
        return list(zip(source.chunks, source.citations, strict=True))
    out: list[tuple[Chunk, Citation | None]] = []
    for position, item in enumerate(source):
        if not isinstance(item, Chunk):
            raise InputError(
                f"chunks[{position}] must be a Chunk or the whole AssembledContext; got "
                f"{type(item).__name__}. Pass assembler.assemble(...) or from_documents(...)."
            )
        out.append((item, None))
    return out


def build_assembler(
    assembler: Assembler | None,
    preset: str | Path | Mapping[str, Any] | Pipeline,
    *,
    budget: int | None,
    model: str | None,
    tokenizer: str | None,
    format: str | None,
    order: str | None,
    owner: str,
) -> Assembler:
    """The assembler an adapter delegates to: the one given, or one built from settings.

    Raises:
        ConfigError: when both an assembler and settings are given, or when
            neither ``budget`` nor ``model`` says how large the context may be.
    """
    settings = {"budget": budget, "model": model, "tokenizer": tokenizer, "format": format, "order": order}
    if assembler is not None:
        given = sorted(k for k, v in settings.items() if v is not None)
        if given:
            raise ConfigError(
                f"{owner}: pass either assembler= or settings ({', '.join(given)}), not both; "
                "an Assembler already fixes its budget, model, tokenizer, format and order."
            )
        if not isinstance(assembler, Assembler):
            raise ConfigError(
                f"{owner}: assembler must be a contextwright.Assembler; got {type(assembler).__name__}."
            )
        return assembler
    if budget is None and model is None:
        raise ConfigError(
            f"{owner}: pass budget= (documents tokens) or model= (to derive the budget from the "
            f"model's context window), e.g. {owner}(budget=1000) or {owner}(model='gpt-4o-mini')."
        )
    spec = AssemblerSpec(preset, budget=budget, model=model, tokenizer=tokenizer, format=format, order=order)
    return Assembler.from_spec(spec)


def query_of(value: Any, *, owner: str) -> str:
    """The query as a string (``None`` is no query)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{owner}: query must be a string; got {type(value).__name__} {value!r:.60}.")
    return value


def citations_as_dicts(ctx: AssembledContext) -> list[dict[str, Any]]:
    """JSON-ready citations, ``[n-1]`` describing block ``[n]``."""
    return [c.to_dict() for c in ctx.citations]


def originals_by_id(items: Sequence[Any], chunks: Sequence[Chunk]) -> dict[str, Any]:
    """Map each input chunk id to the foreign object it was converted from (same order)."""
    return {chunk.id: item for chunk, item in zip(chunks, items, strict=True)}
