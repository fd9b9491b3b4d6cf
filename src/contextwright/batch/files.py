"""Reading query files and writing result files (JSON Lines, gzip or not, or Parquet), and the error file."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextwright.batch.rows import (
    BatchRow,
    BatchSettings,
    OutFormat,
)
from contextwright.core.errors import ConfigError, missing_extra
from contextwright.inputs.readers import Record, read_records


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise missing_extra("pyarrow", "ray") from None
    return pyarrow


def read_rows(path: str | os.PathLike[str]) -> Iterator[Record]:
    """The query records of a JSONL(.gz), JSON or Parquet file, lazily, through the one input reader.

    :func:`contextwright.inputs.readers.read_records` with ``need="queries"`` and
    ``bad="keep"``: a line that is not JSON, or not a query, comes back as a
    record with ``error`` set (and becomes an error row), not a failed file.

    Raises:
        InputError: at once when the file is missing, empty, or holds chunks
            rather than queries (the wrong file, not a bad row).
    """
    records = read_records(str(path), need="queries", command="batch", bad="keep")
    first = next(records, None)  # open the file and check its shape now, not at the first row
    return iter(()) if first is None else itertools.chain([first], records)


#: The chat columns of a batch run with ``messages`` (:class:`BatchSettings`).
CHAT_COLUMNS = ("messages", "reask_messages")
#: The column of a batch run with a ``reader``: the model's answer (:meth:`contextwright.Answer.to_dict`).
ANSWER_COLUMNS = ("answer",)


def extra_columns(settings: BatchSettings) -> tuple[str, ...]:
    """The output columns beyond ``id, text, tokens, citations, report`` these settings add."""
    return (CHAT_COLUMNS if settings.messages is not None else ()) + (
        ANSWER_COLUMNS if settings.reader is not None else ()
    )


def out_schema(pa: Any, extra: tuple[str, ...] = ()) -> Any:
    """The Parquet output schema: ``citations`` and ``report`` as JSON strings (their keys vary by row);
    the ``extra`` columns (:func:`extra_columns`) as JSON too (null where a row has none, as
    ``reask_messages`` where there is no re-ask)."""
    columns = [
        ("id", pa.string()),
        ("text", pa.string()),
        ("tokens", pa.int64()),
        ("citations", pa.string()),
        ("report", pa.string()),
    ]
    return pa.schema(columns + [(c, pa.string()) for c in extra])


def parquet_row(record: Mapping[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    row = {
        "id": record["id"],
        "text": record["text"],
        "tokens": record["tokens"],
        "citations": json.dumps(record["citations"], ensure_ascii=False),
        "report": json.dumps(record["report"], ensure_ascii=False),
    }
    for c in extra:
        row[c] = json.dumps(record[c], ensure_ascii=False) if c in record else None
    return row


def json_line(row: BatchRow) -> str:
    return json.dumps(row.record if row.ok else row.error_dict(), ensure_ascii=False)


def _open_text_out(path: str) -> Any:
    """A text file for writing: local, or any URI ``pyarrow.fs`` can open (``s3://...``)."""
    if is_uri(path):
        _pyarrow()
        import pyarrow.fs

        fs, inner = pyarrow.fs.FileSystem.from_uri(path)
        return io.TextIOWrapper(fs.open_output_stream(inner), encoding="utf-8")
    return open(path, "w", encoding="utf-8")


class ErrorFile:
    """The error rows' JSON Lines file, created at the first error row (no errors, no file)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._file: Any = None

    def write(self, line: Mapping[str, Any]) -> None:
        if self.path is not None:
            if self._file is None:
                self._file = _open_text_out(self.path)
            self._file.write(json.dumps(line, ensure_ascii=False) + "\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Writer:
    """Writes output records (JSONL, ``.gz`` too, or Parquet) and error rows (JSONL) from this process."""

    def __init__(
        self, out: str, errors: str | None, out_format: OutFormat, extra: tuple[str, ...] = ()
    ) -> None:
        self.out = out
        self.extra = extra  # Parquet: these columns too (extra_columns)
        self.errors = ErrorFile(errors)
        self.answers = [0, 0, 0]  # answered, re-asked, still bare (rows with a reader's answer)
        self.parquet = out_format == "parquet"
        self._buffer: list[dict[str, Any]] = []
        self._pq_writer: Any = None
        if self.parquet:
            pa = _pyarrow()
            self._schema = out_schema(pa, extra)
            self._pq_writer = pa.parquet.ParquetWriter(out, self._schema)
            self._file: Any = None
        else:
            gz = out_format == "jsonl.gz"
            self._file = gzip.open(out, "wt", encoding="utf-8") if gz else open(out, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, row: BatchRow) -> None:
        if row.record is None:
            self.errors.write(row.error_dict())
            return
        answer = row.record.get("answer")
        if answer is not None:
            self.answers[0] += 1
            self.answers[1] += bool(answer["reasked"])
            self.answers[2] += bool(answer["bare"])
        if self.parquet:
            self._buffer.append(parquet_row(row.record, self.extra))
            if len(self._buffer) >= 1024:
                self._flush()
        else:
            self._file.write(json_line(row) + "\n")

    def _flush(self) -> None:
        if self._buffer:
            pa = _pyarrow()
            self._pq_writer.write_table(pa.Table.from_pylist(self._buffer, schema=self._schema))
            self._buffer = []

    def close(self) -> None:
        if self.parquet:
            self._flush()
            self._pq_writer.close()
        else:
            self._file.close()
        self.errors.close()


@dataclass(frozen=True, slots=True)
class BatchStats:
    """What a :func:`run_batch` did: rows written, error rows, the engine and workers."""

    rows: int
    errors: int
    engine: str
    workers: int
    seconds: float
    errors_path: str | None
    #: With a reader, into one file: ``(answered, asked again after a bare citation, still bare)``
    #: over the rows written (None without a reader, or for part files Ray wrote).
    answers: tuple[int, int, int] | None = None

    @property
    def per_second(self) -> float:
        return (self.rows + self.errors) / self.seconds if self.seconds > 0 else 0.0


def is_uri(path: str) -> bool:
    """``s3://bucket/x``, ``gs://...``, ``file:///...``: a location for Ray / pyarrow.fs, not a local path."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isidentifier() and len(scheme) > 1


def is_directory_out(path: str) -> bool:
    return path.endswith(("/", os.sep)) or Path(path).is_dir() or is_uri(path)


def output_format(path: str, out_format: str | None) -> OutFormat:
    if out_format is not None:
        if out_format not in ("jsonl", "jsonl.gz", "parquet"):
            raise ConfigError(f"out_format must be 'jsonl', 'jsonl.gz' or 'parquet'; got {out_format!r}.")
        return out_format  # type: ignore[return-value]
    name = path.rstrip("/" + os.sep)
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    return "jsonl.gz" if name.endswith(".gz") else "jsonl"
