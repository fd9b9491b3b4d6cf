"""A list of mappings or chunks in, chunks with unique ids out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from contextwright.core.errors import InputError

if TYPE_CHECKING:
    pass

from contextwright.model.chunk import Chunk, _check_chunk, _empty_text, _from_plain, _given_id
from contextwright.model.fields import FIELD_ALIASES
from contextwright.model.report import Drop


def chunks_from_dicts(
    items: Iterable[Mapping[str, Any] | Chunk],
    *,
    empty: list[Drop] | None = None,
    read: Callable[[Any, int], Chunk | Mapping[str, Any]] | None = None,
) -> tuple[Chunk, ...]:
    """Normalize a list of mappings or chunks into chunks with unique ids.

    ``rank`` is set to the input position. Chunks without an id get one from
    their content; two id-less chunks with the same text get ``-2``, ``-3``
    suffixes so that the report can still tell them apart.

    Args:
        items: Chunks or mappings.
        empty: When given, an item whose text is empty, whitespace only or
            null is not an error: it is left out and recorded here as a
            :class:`Drop` with reason ``empty`` (retrievers do return them).
        read: Reads an item that is neither a chunk nor a mapping (a framework's
            document, :func:`contextwright.inputs.frameworks.read_item`) given its
            position: a chunk it returns is taken as read and checked (only its
            ``rank`` is set), so a foreign object is converted once.

    Raises:
        InputError: for a malformed item, or two items that give the same id.
    """
    out: list[Chunk] = []
    seen: dict[str, int] = {}
    for position, item in enumerate(items):
        if read is not None and type(item) is not dict and not isinstance(item, (Chunk, Mapping)):
            item = read(item, position)
            if isinstance(item, Chunk):
                item = _Read(item)
        fast = _from_plain(item, position) if type(item) is dict else None
        if fast is not None:
            chunk, explicit = fast
        elif isinstance(item, _Read):  # read and checked by ``read``
            chunk, explicit = replace(item.chunk, rank=position), True
        elif empty is not None and (why := _empty_text(item)) is not None:
            empty.append(Drop(_given_id(item, position), "empty", detail=why))
            continue
        elif isinstance(item, Chunk):
            _check_chunk(item, f"chunks[{position}]")
            chunk = replace(item, rank=position)
            explicit = True
        else:
            chunk = Chunk.from_dict(item, position=position)
            explicit = isinstance(item, Mapping) and any(item.get(k) is not None for k in FIELD_ALIASES["id"])
        if chunk.id in seen:
            if explicit:
                raise InputError(
                    f"chunks[{position}].id {chunk.id!r} repeats chunks[{seen[chunk.id]}].id; "
                    "ids must be unique within one call. Give each chunk its own id, "
                    "or leave ids out to have them derived from the text."
                )
            n = 2
            while f"{chunk.id}-{n}" in seen:
                n += 1
            chunk = replace(chunk, id=f"{chunk.id}-{n}")
        seen[chunk.id] = position
        out.append(chunk)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Read:
    """A chunk that ``read=`` made (and checked) from a foreign object."""

    chunk: Chunk
