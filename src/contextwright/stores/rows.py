"""The stored row of a chunk: reading a corpus file into rows (through the one input reader) and back."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from contextwright.core.errors import InputError
from contextwright.inputs.readers import read_records
from contextwright.model.chunk import Chunk
from contextwright.stores.base import (
    EMPTY,
    Progress,
)


def as_chunk(item: Chunk | Mapping[str, Any], position: int, where: str) -> Chunk:
    chunk = item if isinstance(item, Chunk) else Chunk.from_dict(item, position=position)
    if chunk.doc_id is None or chunk.index is None:
        raise InputError(
            f"{where}: chunk {chunk.id!r} has no doc_id/index; a store keys chunks by (doc_id, index). "
            "Add 'doc_id' and 'index' (the chunk's 0-based position in its document)."
        )
    return chunk


def read_jsonl(path: str | os.PathLike[str], *, progress: Progress | None = None) -> Iterator[Chunk]:
    """Read chunks from JSON Lines or a JSON array (gzip or not; ``-`` for stdin).

    The one input reader (:func:`contextwright.inputs.readers.read_records`) reads the
    file: every record is one chunk mapping (see :meth:`Chunk.from_dict`);
    blank lines are skipped. ``progress`` is called every 1,000 chunks and at
    the end with the bytes read from disk (compressed, for ``.gz``) and the
    file size. A query file (records with ``chunks``) is refused, naming both
    shapes.

    Raises:
        InputError: naming the file and line of malformed JSON or a bad chunk.
    """
    records = read_records(Path(path), need="chunks", command="index", progress=progress)
    for count, record in enumerate(records):
        yield as_chunk(record.data, count, record.where)


PLAIN_STR = ("id", "doc_id", "text", "title", "source", "section")
PLAIN_INT = ("index", "page", "line")
PLAIN_KEYS = frozenset((*PLAIN_STR, *PLAIN_INT, "score", "rank"))


def plain_row(data: Any) -> tuple[Any, ...] | None:
    """The store row of a chunk mapping in canonical form, or None when it needs ``Chunk.from_dict``.

    Loading a million chunks spends most of its time building ``Chunk`` objects
    only to flatten them again. A mapping that uses only the canonical field
    names with plain values (``id``/``doc_id``/``text``/``title``/``source``/
    ``section`` strings, ``index``/``page``/``line`` integers, and ``score``/
    ``rank``, which a store does not keep) gives the same row directly;
    anything else (aliases, metadata, embeddings, odd types) takes the full
    path, with its checks and messages.
    """
    if type(data) is not dict or not data.keys() <= PLAIN_KEYS:
        return None
    get = data.get
    for name in PLAIN_STR:
        v = get(name)
        if v is not None and (type(v) is not str or not v):
            return None
    for name in PLAIN_INT:
        v = get(name)
        if v is not None and type(v) is not int:
            return None
    text, cid, doc_id, idx = get("text"), get("id"), get("doc_id"), get("index")
    if text is None or not text.strip() or cid is None or doc_id is None or idx is None:
        return None
    return (
        doc_id,
        idx,
        cid,
        text,
        get("title"),
        get("source"),
        get("section"),
        get("page"),
        get("line"),
        None,
        None,
    )


def read_rows(path: str | os.PathLike[str], *, progress: Progress | None = None) -> Iterator[tuple[Any, ...]]:
    """Store rows of a corpus file, read by the one input reader (:func:`read_records`).

    A chunk mapping in canonical form becomes its row directly
    (:func:`plain_row`); anything else takes :meth:`Chunk.from_dict`, with
    its checks and messages. Gzip is recognised by its content, not the name.
    """
    records = read_records(Path(path), need="chunks", command="index", progress=progress)
    for count, record in enumerate(records):
        row = plain_row(record.data)
        if row is None:
            try:
                row = chunk_row(as_chunk(record.data, count, record.where))
            except InputError as exc:
                msg = str(exc)
                raise InputError(msg if msg.startswith(record.where) else f"{record.where}: {msg}") from None
        yield row


def json_or_none(value: Mapping[str, Any] | Sequence[float] | None) -> str | None:
    if not value:
        return None
    return json.dumps(dict(value) if isinstance(value, Mapping) else list(value), ensure_ascii=False)


def stored_chunk(chunk: Chunk) -> Chunk:
    """The chunk as a store returns it: retrieval-only fields reset."""
    return Chunk(
        text=chunk.text,
        id=chunk.id,
        doc_id=chunk.doc_id,
        index=chunk.index,
        source=chunk.source,
        title=chunk.title,
        section=chunk.section,
        page=chunk.page,
        line=chunk.line,
        metadata=chunk.metadata,
        embedding=chunk.embedding,
    )


COLUMNS = (
    "doc_id",
    "idx",
    "id",
    "text",
    "title",
    "source",
    "section",
    "page",
    "line",
    "metadata",
    "embedding",
)


def chunk_row(chunk: Chunk) -> tuple[Any, ...]:
    return (
        chunk.doc_id,
        chunk.index,
        chunk.id,
        chunk.text,
        chunk.title,
        chunk.source,
        chunk.section,
        chunk.page,
        chunk.line,
        json_or_none(chunk.metadata),
        json_or_none(chunk.embedding),
    )


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    doc_id, idx, cid, text, title, source, section, page, line, metadata, embedding = row
    if isinstance(metadata, str):
        metadata = json.loads(metadata)
    if isinstance(embedding, str):
        embedding = json.loads(embedding)
    return Chunk(
        text=text,
        id=cid,
        doc_id=doc_id,
        index=idx,
        source=source,
        title=title,
        section=section,
        page=page,
        line=line,
        metadata=MappingProxyType(dict(metadata)) if metadata else EMPTY,
        embedding=tuple(float(x) for x in embedding) if embedding else None,
    )
