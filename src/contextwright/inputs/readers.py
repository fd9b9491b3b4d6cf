"""The one input reader of every command: JSON arrays, JSON Lines, gzip of either, stdin.

``assemble``, ``inspect``, ``index``, ``eval`` and ``batch`` read their input
through :func:`read_records`, so they accept the same files:

* a JSON array (of chunks, or of queries);
* a JSON object: one query ``{"query": ..., "chunks": [...]}``;
* JSON Lines (one chunk, or one query, per line);
* any of these gzip-compressed (detected from the content, not the name);
* Parquet (one record per row; needs ``pyarrow``, extra ``ray``);
* ``-`` for standard input.

A record with ``chunks`` (or ``question``) is a *query* (the shared evaluation schema:
``{"id", "question", "chunks": [...], ...}``); any other object is a *chunk*.
A command that needs one shape and finds the other says which it found and
which it needs.

``batch`` reads with ``bad="keep"``: a line that is not JSON, not an object,
or of the other shape becomes a :class:`Record` with ``error`` set (and the
line's start in ``raw``) instead of stopping the file, so one bad row is one
error row of the job.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from contextwright.core.errors import InputError, missing_extra

__all__ = ["QueryItem", "Record", "batched", "read_items", "read_records"]

Need = Literal["chunks", "queries", "any"]


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last may be shorter); ``itertools.batched`` before 3.12."""
    it = iter(items)
    while batch := list(itertools.islice(it, size)):
        yield batch


Bad = Literal["raise", "keep"]

_NEEDS = {
    "chunks": "chunks (a JSON array or JSON Lines of chunk objects, each with 'text')",
    "queries": "queries (JSON Lines or a JSON array of objects with 'question' and a 'chunks' list)",
}
_FOUND = {
    "chunks": "chunks (objects without a 'chunks' list)",
    "queries": "queries (objects with a 'chunks' list)",
}

_ONE = {"chunks": "chunk", "queries": "query"}


@dataclass(frozen=True, slots=True)
class Record:
    """One JSON object read from input, where it was (``file:line`` or ``file[i]``) and its shape.

    With ``read_records(..., bad="keep")`` a record that cannot be used has
    ``error`` set (the message, naming ``where``), ``raw`` the start of its
    text, and ``data`` whatever object could be read (``{}`` for a line that
    is not JSON).
    """

    data: Mapping[str, Any]
    where: str
    shape: Literal["chunks", "queries"]
    error: str | None = None
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class QueryItem:
    """One assembly job read from input: an optional id and query, and its chunks."""

    chunks: list[Mapping[str, Any]] | Mapping[str, list[Mapping[str, Any]]]
    query: str = ""
    id: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


def _label(path: str | Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _open(path: str | Path, source: IO[bytes] | None = None) -> tuple[IO[bytes], int]:
    """A binary stream over the (decompressed) input, and the size on disk (0 for stdin)."""
    if source is not None:
        raw: IO[bytes] = source
        size = 0
    elif str(path) == "-":
        raw = sys.stdin.buffer
        size = 0
    else:
        p = Path(path)
        if not p.exists():
            raise InputError(
                f"input file {str(p)!r} does not exist. Pass a JSON/JSONL file or '-' for stdin."
            )
        if p.is_dir():
            raise InputError(f"input {str(p)!r} is a directory; pass a JSON/JSONL file or '-' for stdin.")
        raw = p.open("rb")
        size = p.stat().st_size
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type,type-var]
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=buffered), size  # type: ignore[return-value]
    return buffered, size


#: The shape every input message shows: one JSON object per chunk.
CHUNK_SHAPE = '[{"text": "...", "id": "...", "score": 0.9}, ...]'


def _not_json_hint(label: str, line: bytes) -> str:
    """What a first line that is not JSON looks like (CSV, TSV), and the shape to write instead."""
    head = line.decode("utf-8", "replace")
    kind = next(
        (
            name
            for name, ext, sep in (("CSV", ".csv", ","), ("TSV", ".tsv", "\t"))
            if label.lower().endswith(ext)
        ),
        "CSV" if "," in head else "TSV" if "\t" in head else None,
    )
    what = f" It looks like {kind}; " if kind else " "
    return (
        f"{what}contextwright reads JSON or JSON Lines: one object per chunk, e.g. {CHUNK_SHAPE} "
        '(JSONL: one {"text": "..."} per line).'
    )


def _shape_of(obj: Any, where: str, command: str, need: Need) -> Literal["chunks", "queries"]:
    if not isinstance(obj, Mapping):
        needs = _NEEDS.get(need, "chunks or queries (JSON objects)")
        wrap = ' Wrap each string as {"text": "..."}.' if isinstance(obj, str) else ""
        raise InputError(
            f"{where} is a JSON {_json_type(obj)}, not an object; {command} needs {needs}, "
            f"e.g. {CHUNK_SHAPE}.{wrap}"
        )
    return "queries" if "chunks" in obj or "question" in obj else "chunks"


def _json_type(obj: Any) -> str:
    return {
        str: "string",
        int: "number",
        float: "number",
        bool: "boolean",
        list: "array",
        type(None): "null",
    }.get(type(obj), type(obj).__name__)


def read_records(
    path: str | Path,
    *,
    need: Need = "any",
    command: str = "this command",
    limit: int | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    bad: Bad = "raise",
    source: IO[bytes] | None = None,
    max_record_bytes: int | None = None,
    max_document_bytes: int | None = None,
) -> Iterator[Record]:
    """Yield the JSON objects of an input file (or ``-`` for stdin), checked against the shape ``need``.

    JSON Lines are streamed line by line; a JSON array or object is parsed
    whole; Parquet is read in row batches (its nulls dropped, as a missing
    field is absent in JSON).

    Args:
        path: A file (``.gz`` or not; the content decides) or ``-``.
        need: ``"chunks"`` (``index``), ``"queries"`` (``eval``, ``batch``) or
            ``"any"`` (``assemble``, ``inspect``).
        command: The command named in errors (``"eval"``, ``"batch"``, ...).
        limit: Stop after this many records.
        progress: ``progress(records, bytes_read, bytes_total)``, every 1,000
            records and at the end (bytes on disk; 0 for stdin).
        bad: ``"raise"`` stops at the first unusable record; ``"keep"`` yields
            it as a :class:`Record` with ``error`` set and goes on (a line that
            is not JSON or not an object, or a record of the other shape after
            the first). A file that is missing, empty, or whose first record has
            the wrong shape still raises: that is the wrong file, not a bad row.
        source: The file's bytes as a stream when something else opened it
            (a Ray read task); ``path`` then only names it in ``where``.
        max_record_bytes: The most bytes one JSON Lines record may have, decompressed
            (default 64 MiB, or ``CONTEXTWRIGHT_MAX_RECORD_BYTES``).
        max_document_bytes: The most bytes a whole JSON document (an array, or one
            object over several lines) may have, decompressed (default 1 GiB, or
            ``CONTEXTWRIGHT_MAX_DOCUMENT_BYTES``). Past either cap the reader stops with an
            ``InputError`` naming the file, the limit and the fix: a 1.5 MB gzip that expands
            to 1.5 GB is refused, not read into memory (issue 26).

    Raises:
        InputError: for a missing file, bytes that are not UTF-8 JSON (with the
            line number), a record that is not an object, a file that mixes
            chunks and queries, or the wrong shape for ``need`` (saying which
            shape was found and which the command needs).

    Example:
        >>> for record in read_records("queries.jsonl.gz", need="queries", command="batch"):
        ...     record.data["question"], record.where
    """
    label = _label(path)
    caps = _Caps(
        label,
        _cap(max_record_bytes, "CONTEXTWRIGHT_MAX_RECORD_BYTES", 64 << 20),
        _cap(max_document_bytes, "CONTEXTWRIGHT_MAX_DOCUMENT_BYTES", 1 << 30),
    )
    stream, size = _open(path, source)
    raw = stream
    keep = bad == "keep"
    try:
        records = _records_of(stream, path, label, source, caps, keep)
        shape: Literal["chunks", "queries"] | None = None
        count = 0
        for where, obj, text in records:
            if limit is not None and count >= limit:
                return
            try:
                found = _checked_shape(obj, where, command, need, shape, label)
                shape = shape or found
            except _WrongFile as exc:
                raise InputError(str(exc)) from None
            except InputError as exc:
                if not keep:
                    raise
                data = obj if isinstance(obj, Mapping) else {}
                if text is None:
                    text = obj.text if isinstance(obj, _Unreadable) else _preview(obj)
                fallback: Literal["chunks", "queries"] = "chunks" if need == "chunks" else "queries"
                yield Record(data, where, shape or fallback, error=str(exc), raw=text[:_RAW])
            else:
                yield Record(obj, where, found)
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(count, _tell(raw), size)
        if progress is not None:
            progress(count, size, size)
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read {label!r}: {exc}.") from None
    finally:
        if str(path) != "-" and source is None:
            stream.close()


_RAW = 200  # characters of an unusable record kept in Record.raw


def _records_of(
    stream: IO[bytes], path: str | Path, label: str, source: IO[bytes] | None, caps: _Caps, keep: bool
) -> Iterator[tuple[str, Any, str | None]]:
    """``(where, object, raw text)`` of each record: Parquet, a whole JSON document, or JSON Lines."""
    if stream.peek(4)[:4] == b"PAR1":  # type: ignore[attr-defined]
        return _parquet(stream, path, label, source)
    first = _first_char(stream, label)
    if first is None:
        raise InputError(f"input {label!r} is empty; expected JSON or JSON Lines of chunks or queries.")
    return _whole(stream, caps) if first == "[" else _lines(stream, caps, first, keep)


def _checked_shape(
    obj: Any, where: str, command: str, need: Need, shape: Literal["chunks", "queries"] | None, label: str
) -> Literal["chunks", "queries"]:
    """The record's shape, checked against what the command needs and the file's first record.

    Raises:
        _WrongFile: when the first record has the shape the command does not take.
        InputError: for an unreadable record or one whose shape differs from the first's.
    """
    if isinstance(obj, _Unreadable):
        raise InputError(obj.message)
    found = _shape_of(obj, where, command, need)
    if shape is None:
        if need != "any" and found != need:
            raise _WrongFile(
                f"{command} needs {_NEEDS[need]}, but {label!r} holds {_FOUND[found]}: "
                f"{where} is a {_ONE[found]}."
                + (
                    " For an index, pass the chunk corpus, not a query file."
                    if need == "chunks"
                    else ' Wrap the chunks as {"question": "...", "chunks": [...]}.'
                )
            )
    elif found != shape:
        raise InputError(
            f"{where} is a {_ONE[found]} ({'has' if found == 'queries' else 'no'} 'chunks') but "
            f"earlier records were {shape}; a file holds either chunks or queries, not both."
        )
    return found


class _WrongFile(InputError):
    """The first record has the other shape: the wrong file, raised even with ``bad="keep"``."""


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """A line that is not UTF-8 JSON: the message, and the start of the line."""

    message: str
    text: str


def _preview(obj: Any) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False)[:_RAW]
    except (TypeError, ValueError):
        return repr(obj)[:_RAW]


def _strip_nulls(value: Any) -> Any:
    # Parquet gives every row every column and struct field, absent ones as null;
    # JSON would not have them, and Chunk.from_dict would keep unknown ones as metadata.
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def _parquet(
    stream: IO[bytes], path: str | Path, label: str, source: IO[bytes] | None
) -> Iterator[tuple[str, Any, str | None]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise missing_extra("pyarrow", "ray") from None
    if source is None and str(path) != "-":
        target: Any = str(path)  # pyarrow reads the footer and row groups natively
    elif stream.seekable():
        target = stream
    else:
        target = io.BytesIO(stream.read())  # stdin: Parquet needs its footer first
    try:
        parquet = pq.ParquetFile(target)
    except Exception as exc:  # pyarrow raises ArrowInvalid (a ValueError) and others
        raise InputError(f"{label!r} is not a readable Parquet file: {exc}.") from None
    i = 0
    for batch in parquet.iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            yield f"{label}[{i}]", _strip_nulls(row), None
            i += 1


def _tell(stream: IO[bytes]) -> int:
    inner = getattr(stream, "fileobj", None)  # a GzipFile: bytes read from disk, compressed
    try:
        return int((inner or stream).tell())
    except (OSError, ValueError):
        return 0


def _first_char(stream: Any, label: str) -> str | None:
    head = stream.peek(4096) if hasattr(stream, "peek") else b""
    try:
        text = head.decode("utf-8-sig", errors="ignore").lstrip()
    except UnicodeDecodeError:  # pragma: no cover - errors="ignore"
        text = ""
    if text:
        return text[0]
    # peek may return little; read the rest to decide (rare: a file of blank lines, or stdin)
    rest = stream.peek(1 << 20)
    text = rest.decode("utf-8-sig", errors="ignore").lstrip()
    return text[0] if text else None


def _decode(raw: bytes, label: str, where: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} of {label!r} is not UTF-8 text: {exc}. Convert the file to UTF-8, e.g. "
            "iconv -f latin1 -t utf-8 FILE > FILE.utf8 (name its real encoding after -f)."
        ) from None


@dataclass(frozen=True)
class _Caps:
    """How much a record and a whole document may expand to, for one input."""

    label: str
    record: int
    document: int

    def read_document(self, stream: Any, head: bytes = b"") -> bytes:
        data = head + stream.read(self.document + 1 - len(head))
        if len(data) > self.document:
            raise self._over("a whole JSON document", self.document, "CONTEXTWRIGHT_MAX_DOCUMENT_BYTES")
        return bytes(data)

    def lines(self, stream: Any) -> Iterator[bytes]:
        while True:
            line = stream.readline(self.record + 1)
            if not line:
                return
            if len(line) > self.record and not line.endswith(b"\n"):
                raise self._over("one record (a line)", self.record, "CONTEXTWRIGHT_MAX_RECORD_BYTES")
            yield line

    def _over(self, what: str, limit: int, variable: str) -> InputError:
        return InputError(
            f"input {self.label!r}: {what} expands to more than {limit:,} bytes (a compressed file "
            f"that expands without bound is refused, not read into memory). If the input is "
            f"genuine, raise the limit: set {variable} to a larger number of bytes."
        )


def _cap(value: int | None, variable: str, default: int) -> int:
    if value is None:
        raw = os.environ.get(variable, "")
        try:
            value = int(raw) if raw.strip() else default
        except ValueError:
            raise InputError(
                f"{variable}={raw!r} is not a number of bytes; e.g. {variable}={default}."
            ) from None
    if value < 1:
        raise InputError(f"the input size limit must be at least 1 byte; got {value} (set {variable}).")
    return value


def _too_deep(where: str) -> str:
    """The message for JSON nested past what the parser recurses into (~1,000 levels)."""
    return (
        f"input {where!r} is JSON nested too deeply to read (arrays/objects more than about 1,000 "
        "levels deep); a chunk list is at most a few levels deep. Check the file."
    )


def _whole(stream: Any, caps: _Caps) -> Iterator[tuple[str, Any, str | None]]:
    label = caps.label
    text = _decode(caps.read_document(stream), label, "input")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"input {label!r} is not valid JSON: {exc}.") from None
    except RecursionError:
        raise InputError(_too_deep(label)) from None
    for i, obj in enumerate(data):
        yield f"{label}[{i}]", obj, None


def _lines(stream: Any, caps: _Caps, first: str, keep: bool = False) -> Iterator[tuple[str, Any, str | None]]:
    label = caps.label
    lines: Iterator[bytes] = caps.lines(stream)
    if first == "{":
        # One JSON object over several lines (a pretty-printed query) is a whole document.
        line1 = next(lines, b"")
        try:
            json.loads(_decode(line1, label, "line 1"))
        except (json.JSONDecodeError, InputError, RecursionError):
            text = caps.read_document(stream, line1)
            try:
                yield label, json.loads(_decode(text, label, "input")), None
                return
            except RecursionError:
                raise InputError(_too_deep(label)) from None
            except (json.JSONDecodeError, InputError):
                lines = iter(text.splitlines(keepends=True))  # name the bad line below
        else:
            lines = itertools.chain([line1], lines)
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{label}:{lineno}"
        try:
            obj = json.loads(_decode(line, label, f"line {lineno}"))
        except json.JSONDecodeError as exc:
            message = f"{where}: not valid JSON ({exc.msg}, column {exc.colno})."
            if lineno == 1 and first != "{":  # the whole file is not JSON: say what it looks like
                message += _not_json_hint(label, line)
            if not keep:
                raise InputError(message) from None
            obj = _Unreadable(message, line.decode("utf-8", "replace").rstrip("\r\n"))
        except RecursionError:
            if not keep:
                raise InputError(_too_deep(where)) from None
            obj = _Unreadable(_too_deep(where), line.decode("utf-8", "replace").rstrip("\r\n"))
        except InputError as exc:
            if not keep:
                raise
            obj = _Unreadable(f"{where}: {exc}", line.decode("utf-8", "replace").rstrip("\r\n"))
        yield where, obj, None


def _item(obj: Mapping[str, Any], where: str) -> QueryItem:
    chunks = obj.get("chunks")
    if not isinstance(chunks, list) and not (
        isinstance(chunks, Mapping) and chunks and all(isinstance(v, list) for v in chunks.values())
    ):
        raise InputError(
            f"{where}: 'chunks' must be a list of chunk objects; got {type(chunks).__name__}. "
            'Expected {"question": "...", "chunks": [{"text": "..."}]}, '
            'or named ranked lists {"question": "...", "chunks": {"bm25": [...], "dense": [...]}}.'
        )
    query = obj.get("query", obj.get("question", ""))
    if not isinstance(query, str):
        raise InputError(f"{where}: 'query' must be a string; got {type(query).__name__}.")
    extra = {k: v for k, v in obj.items() if k not in ("chunks", "query", "question")}
    return QueryItem(chunks=chunks, query=query, id=str(obj.get("id", "")), extra=extra)


def _named_lists(data: Mapping[str, Any]) -> bool:
    """An object of list name -> ranked list (``{"bm25": [...], "dense": [...]}``), not one chunk."""
    return bool(data) and all(isinstance(v, list) for v in data.values())


def read_items(
    path: str | Path, *, limit: int | None = None, command: str = "assemble"
) -> Iterator[QueryItem]:
    """Yield the assembly jobs in a file (or ``-`` for stdin): one per query, or one for a list of chunks.

    An empty JSON array is one job with no chunks (the caller says so: the context is empty).

    Raises:
        InputError: for unreadable JSON (with the line number) or a wrong shape.
    """
    chunks: list[Mapping[str, Any]] = []
    named: Mapping[str, Any] | None = None
    records = 0
    for record in read_records(path, need="any", command=command, limit=None):
        records += 1
        if record.shape == "queries":
            if limit is not None and limit <= 0:
                return
            yield _item(record.data, record.where)
            limit = None if limit is None else limit - 1
        elif not chunks and named is None and _named_lists(record.data):
            named = record.data  # named ranked lists, fused by the assembler
        elif named is not None:
            raise InputError(
                f"{record.where} follows an object of named ranked lists; a file holds one such object, "
                "or a list of chunks, or queries."
            )
        else:
            chunks.append(record.data)
    if named is not None:
        yield QueryItem(chunks=named)
    if chunks or not records:  # an empty list ([]) is one job with no chunks: an empty context
        yield QueryItem(chunks=chunks)
