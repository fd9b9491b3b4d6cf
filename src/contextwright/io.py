"""Reading chunk inputs: JSON arrays, JSONL of chunks, JSONL of queries, gzip.

Three shapes are accepted, from a file (``.gz`` too) or standard input:

* a JSON array of chunks, or an object ``{"query": ..., "chunks": [...]}``;
* JSON Lines of chunks (one chunk object per line);
* JSON Lines of queries in the shared evaluation schema
  (``{"id", "question", "chunks": [...], ...}`` per line), assembled one by one.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from contextwright.errors import InputError

__all__ = ["QueryItem", "read_items"]


@dataclass(frozen=True, slots=True)
class QueryItem:
    """One assembly job read from input: an optional id and query, and its chunks."""

    chunks: list[Mapping[str, Any]] | Mapping[str, list[Mapping[str, Any]]]
    query: str = ""
    id: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


def _open(path: str | Path) -> BinaryIO:
    if str(path) == "-":
        return sys.stdin.buffer
    p = Path(path)
    if not p.exists():
        raise InputError(f"input file {str(p)!r} does not exist. Pass a JSON/JSONL file or '-' for stdin.")
    with p.open("rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return p.open("rb")


def _item(obj: Any, where: str) -> QueryItem:
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object; got {type(obj).__name__}.")
    chunks = obj.get("chunks")
    if not isinstance(chunks, list) and not (
        isinstance(chunks, Mapping) and chunks and all(isinstance(v, list) for v in chunks.values())
    ):
        raise InputError(
            f"{where}.chunks must be a list of chunk objects, or an object of named ranked lists "
            f'({{"bm25": [...], "dense": [...]}}); got {type(chunks).__name__}. '
            'Expected {"question": "...", "chunks": [{"text": "..."}]}.'
        )
    query = obj.get("query", obj.get("question", ""))
    if not isinstance(query, str):
        raise InputError(f"{where}.query must be a string; got {type(query).__name__}.")
    extra = {k: v for k, v in obj.items() if k not in ("chunks", "query", "question")}
    return QueryItem(chunks=chunks, query=query, id=str(obj.get("id", "")), extra=extra)


def read_items(path: str | Path, *, limit: int | None = None) -> Iterator[QueryItem]:
    """Yield the assembly jobs in a file (or ``-`` for stdin).

    Raises:
        InputError: for unreadable JSON (with the line number) or a wrong shape.
    """
    stream = _open(path)
    try:
        raw = stream.read()
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"input {str(path)!r} is not UTF-8 text: {exc}.") from None
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"input {str(path)!r} is empty; expected JSON or JSON Lines of chunks.")
    if stripped[0] == "[" or (stripped[0] == "{" and "\n" not in stripped.strip()):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"input {str(path)!r} is not valid JSON: {exc}.") from None
        if isinstance(data, list):
            yield QueryItem(chunks=data)
        elif (
            isinstance(data, Mapping)
            and "chunks" not in data
            and data
            and all(isinstance(v, list) for v in data.values())
        ):
            yield QueryItem(chunks=data)  # named ranked lists, fused by the assembler
        else:
            yield _item(data, "input")
        return
    count = 0
    chunks: list[Mapping[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"line {lineno} of {str(path)!r} is not valid JSON: {exc.msg} (column {exc.colno})."
            ) from None
        if isinstance(obj, Mapping) and "chunks" in obj:
            if chunks:
                raise InputError(
                    f"line {lineno} of {str(path)!r} is a query (has 'chunks') but earlier lines were "
                    "chunks; a JSONL file holds either chunks or queries, not both."
                )
            if limit is not None and count >= limit:
                return
            yield _item(obj, f"line {lineno}")
            count += 1
        else:
            if count:
                raise InputError(
                    f"line {lineno} of {str(path)!r} is a chunk but earlier lines were queries; "
                    "a JSONL file holds either chunks or queries, not both."
                )
            chunks.append(obj)
    if chunks:
        yield QueryItem(chunks=chunks)
