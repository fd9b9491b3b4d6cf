"""Batch assembly: many queries at once, in local processes or on Ray Data.

Offline jobs (evaluation runs, RAG fine-tuning data, nightly re-assembly
after re-indexing) assemble a context for every query of a file.
:func:`assemble_many` takes an iterable of queries and yields one
:class:`BatchRow` per query, **in input order**, using worker processes that
each build one :class:`~contextwright.assembler.Assembler` (so token caches
and store connections live as long as the worker). :func:`run_batch` goes
file to file, locally or as a Ray Data pipeline (``read_binary_files`` →
the one input reader, :func:`contextwright.io.read_records` → ``map_batches``
with a callable class holding one assembler per actor → either the rows
streamed back in order into one file, or, for a directory ``OUT``, part
files written by Ray in parallel with ``write_parquet`` or a JSON Lines sink).

Output does not depend on the engine or the number of workers: each row is
assembled by the same function from the same input, rows keep their input
order, and per-stage timings (the only thing that varies between runs) are
left out unless ``timings=True``.

A row that fails (malformed JSON, a chunk without text, a store timeout)
becomes an error row ``{"id", "where", "error", "input"}`` (``where`` is
``file:line`` or ``file[row]``, as every command names input); the job goes on.

Example:
    >>> from contextwright.batch import assemble_many
    >>> for row in assemble_many(queries, preset="qa", budget=500, workers=2):
    ...     print(row.id, row.record["tokens"] if row.ok else row.error)

Ray is optional (extra ``ray``) and imported only when ``engine="ray"``.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import logging
import os
import pickle
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from contextwright.errors import ConfigError, ContextwrightError, InputError, missing_extra
from contextwright.io import QueryItem, Record, _item, batched, read_records

__all__ = [
    "BatchRow",
    "BatchSettings",
    "BatchStats",
    "RowAssembler",
    "assemble_many",
    "ray_map",
    "read_rows",
    "run_batch",
]

Engine = Literal["local", "ray"]
OutFormat = Literal["jsonl", "jsonl.gz", "parquet"]
#: ``progress(rows_done, errors)``, called after each batch of rows.
Progress = Callable[[int, int], None]

_INPUT_PREVIEW = 200


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """How every row is assembled; picklable, so each worker builds the same assembler.

    Attributes:
        preset: A preset name, a config mapping or a path to a config file.
        model: A registered model name (tokenizer and zones).
        budget: The documents budget in tokens.
        tokenizer: A tokenizer spec (a name; workers load it themselves).
        format: Override the preset's format.
        order: Override the preset's order.
        store: A chunk store URL (``sqlite:///nq.db``, ``postgresql://...``);
            each worker opens its own connection.
        expand: Add the neighbours index±N from ``store``.
        timings: Keep per-stage ``ms`` in the report (then output differs run to run).
        options: Further :class:`~contextwright.assembler.Assembler` keywords
            (``output_tokens``, ``system``, ...).
    """

    preset: str | Mapping[str, Any] = "qa"
    model: str | None = None
    budget: int | None = None
    tokenizer: str | None = None
    format: str | None = None
    order: str | None = None
    store: str | None = None
    expand: int | None = None
    timings: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        """The assembler these settings describe (opens the store, if any)."""
        from contextwright.assembler import Assembler

        resources: dict[str, Any] = dict(self.options)
        config: Any = dict(self.preset) if isinstance(self.preset, Mapping) else self.preset
        if self.expand is not None:
            if self.store is None:
                raise ConfigError("expand needs store= (a chunk store URL to fetch neighbours from).")
            from contextwright.config import pipeline_from_config
            from contextwright.stages.expand import with_expansion

            config = with_expansion(pipeline_from_config(config), window=self.expand)
        if self.store is not None:
            from contextwright.stores import open_store

            resources["store"] = open_store(self.store)
        return Assembler(
            config,
            model=self.model,
            budget=self.budget,
            tokenizer=self.tokenizer,
            format=self.format,
            order=self.order,
            **resources,
        )


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One query's outcome: a record ``{id, text, tokens, citations, report}``, or an error.

    Attributes:
        id: The query's id (``""`` when the input had none).
        record: The output record, or ``None`` for an error row.
        error: ``"ErrorType: message"`` for an error row, else ``None``.
        input: The start of the offending input (error rows only), to find it.
        where: Where the row was read: ``file:line``, ``file[row]`` (Parquet,
            JSON arrays) or ``queries[i]`` (rows passed to :func:`assemble_many`).
    """

    id: str
    record: dict[str, Any] | None = None
    error: str | None = None
    input: str | None = None
    where: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    def error_dict(self) -> dict[str, Any]:
        """The error file's line: ``{id, where, error, input}``."""
        return {"id": self.id, "where": self.where, "error": self.error, "input": self.input}


def _parse(row: Any, where: str) -> QueryItem:
    """A row (a :class:`Record`, a JSON line, a mapping, or a QueryItem) as a QueryItem; raises InputError."""
    if isinstance(row, QueryItem):
        return row
    if isinstance(row, Record):
        return _item(row.data, row.where)
    if isinstance(row, (str, bytes)):
        try:
            row = json.loads(row)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
    if not isinstance(row, Mapping):
        raise InputError(
            f"{where} is a {type(row).__name__}, not a query object; pass {{'question', 'chunks'}}."
        )
    return _item(row, where)


def _row_id(row: Any) -> str:
    if isinstance(row, QueryItem):
        return row.id
    if isinstance(row, Record):
        row = row.data
    if isinstance(row, (str, bytes)):
        try:
            row = json.loads(row)
        except json.JSONDecodeError:
            return ""
    if isinstance(row, Mapping) and row.get("id") is not None:
        return str(row["id"])
    return ""


def _preview(row: Any) -> str:
    text: str
    if isinstance(row, Record):
        if row.raw is not None:
            return row.raw
        row = dict(row.data)
    if isinstance(row, bytes):
        text = row.decode("utf-8", "replace")
    elif isinstance(row, str):
        text = row
    else:
        try:
            text = json.dumps(row if not isinstance(row, QueryItem) else asdict(row), ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(row)
    return text[:_INPUT_PREVIEW]


class RowAssembler:
    """Assembles rows with one assembler: what each worker process and each Ray actor holds.

    Example:
        >>> worker = RowAssembler(BatchSettings(budget=500))
        >>> worker('{"id": "q1", "question": "who?", "chunks": [{"text": "..."}]}').record["tokens"]
    """

    def __init__(self, settings: BatchSettings) -> None:
        self.settings = settings
        self.assembler = settings.build()

    def __call__(self, row: Any, where: str = "") -> BatchRow:
        if isinstance(row, Record):
            where = row.where
            if row.error is not None:  # unreadable where it was read: already an error row
                return BatchRow(
                    id=_row_id(row), error=f"InputError: {row.error}", input=_preview(row), where=where
                )
        try:
            item = _parse(row, where or "row")
            ctx = self.assembler.assemble(item.query, item.chunks)
        except Exception as exc:  # a row's failure is its error row, never the job's
            return BatchRow(
                id=_row_id(row), error=f"{type(exc).__name__}: {exc}", input=_preview(row), where=where
            )
        report = ctx.report.to_dict()
        if not self.settings.timings:
            for stage in report["stages"]:
                stage.pop("ms", None)
        record = {
            "id": item.id,
            "text": ctx.text,
            "tokens": ctx.tokens,
            "citations": [c.to_dict() for c in ctx.citations],
            "report": report,
        }
        return BatchRow(id=item.id, record=record, where=where)

    def many(self, rows: Sequence[tuple[str, Any]]) -> list[BatchRow]:
        """``self(row, where)`` for each ``(where, row)``."""
        return [self(r, w) for w, r in rows]


# -- local processes ------------------------------------------------------------------------------

_LOCAL: dict[str, RowAssembler] = {}


def _init_local(settings: BatchSettings) -> None:
    _LOCAL["worker"] = RowAssembler(settings)


def _local_many(rows: list[tuple[str, Any]]) -> list[BatchRow]:
    return _LOCAL["worker"].many(rows)


def _check_workers(workers: int | None) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer; got {workers!r}.")
    return workers


def _settings(settings: BatchSettings | None, kwargs: Mapping[str, Any]) -> BatchSettings:
    if settings is not None:
        if kwargs:
            raise ConfigError(f"pass settings= or keyword settings, not both; got {sorted(kwargs)}.")
        return settings
    known = set(BatchSettings.__dataclass_fields__) - {"options"}
    options = {k: v for k, v in kwargs.items() if k not in known}
    return BatchSettings(**{k: v for k, v in kwargs.items() if k in known}, options=options)


def assemble_many(
    queries: Iterable[Any],
    *,
    workers: int | None = None,
    batch_size: int = 16,
    settings: BatchSettings | None = None,
    **kwargs: Any,
) -> Iterator[BatchRow]:
    """Assemble a context for every query, in worker processes, yielding rows in input order.

    Args:
        queries: Query rows: JSON lines (``str``), mappings in the shared data
            schema (``{"id", "question", "chunks"}``) or ``{"query", "chunks"}``,
            :class:`~contextwright.io.QueryItem`, or the
            :class:`~contextwright.io.Record` s of :func:`read_rows`. Consumed
            lazily: at most ``4 × workers`` batches are in flight.
        workers: Processes (default: one per CPU); ``1`` runs in this process.
        batch_size: Rows per task sent to a worker.
        settings: A :class:`BatchSettings`; or pass its fields as keywords
            (``preset=``, ``budget=``, ``model=``, ``store=``, ...; other
            keywords go to the :class:`~contextwright.assembler.Assembler`).

    Yields:
        One :class:`BatchRow` per query, in input order; a failed row is an
        error row and the others go on.

    Raises:
        ConfigError: for bad settings (checked once, before any worker starts).

    Example:
        >>> rows = list(assemble_many(lines, preset="qa", budget=500, workers=2))
    """
    s = _settings(settings, kwargs)
    n = _check_workers(workers)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer; got {batch_size!r}.")
    local = RowAssembler(s)  # validates the settings here, with a readable error
    numbered = ((f"queries[{i}]", row) for i, row in enumerate(queries))
    if n == 1:
        for where, row in numbered:
            yield local(row, where)
        return
    try:
        pickle.dumps(s)
    except Exception as exc:
        raise ConfigError(f"workers={n} needs picklable settings ({exc}); use workers=1.") from None
    import multiprocessing

    pending: deque[Future[list[BatchRow]]] = deque()
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_init_local,
                             initargs=(s,)) as pool:  # fmt: skip
        for batch in batched(numbered, batch_size):
            pending.append(pool.submit(_local_many, batch))
            while len(pending) >= 4 * n:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


# -- reading and writing files --------------------------------------------------------------------


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise missing_extra("pyarrow", "ray") from None
    return pyarrow


def read_rows(path: str | os.PathLike[str]) -> Iterator[Record]:
    """The query records of a JSONL(.gz), JSON or Parquet file, lazily, through the one input reader.

    :func:`contextwright.io.read_records` with ``need="queries"`` and
    ``bad="keep"``: a line that is not JSON, or not a query, comes back as a
    record with ``error`` set (and becomes an error row), not a failed file.

    Raises:
        InputError: at once when the file is missing, empty, or holds chunks
            rather than queries (the wrong file, not a bad row).
    """
    records = read_records(str(path), need="queries", command="batch", bad="keep")
    first = next(records, None)  # open the file and check its shape now, not at the first row
    return iter(()) if first is None else itertools.chain([first], records)


def _out_schema(pa: Any) -> Any:
    """The Parquet output schema: ``citations`` and ``report`` as JSON strings (their keys vary by row)."""
    return pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("tokens", pa.int64()),
            ("citations", pa.string()),
            ("report", pa.string()),
        ]
    )


def _parquet_row(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": record["id"],
        "text": record["text"],
        "tokens": record["tokens"],
        "citations": json.dumps(record["citations"], ensure_ascii=False),
        "report": json.dumps(record["report"], ensure_ascii=False),
    }


def _json_line(row: BatchRow) -> str:
    return json.dumps(row.record if row.ok else row.error_dict(), ensure_ascii=False)


def _open_text_out(path: str) -> Any:
    """A text file for writing: local, or any URI ``pyarrow.fs`` can open (``s3://...``)."""
    if _is_uri(path):
        _pyarrow()
        import pyarrow.fs

        fs, inner = pyarrow.fs.FileSystem.from_uri(path)
        return io.TextIOWrapper(fs.open_output_stream(inner), encoding="utf-8")
    return open(path, "w", encoding="utf-8")


class _ErrorFile:
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


class _Writer:
    """Writes output records (JSONL, ``.gz`` too, or Parquet) and error rows (JSONL) from this process."""

    def __init__(self, out: str, errors: str | None, out_format: OutFormat) -> None:
        self.out = out
        self.errors = _ErrorFile(errors)
        self.parquet = out_format == "parquet"
        self._buffer: list[dict[str, Any]] = []
        self._pq_writer: Any = None
        if self.parquet:
            pa = _pyarrow()
            self._schema = _out_schema(pa)
            self._pq_writer = pa.parquet.ParquetWriter(out, self._schema)
            self._file: Any = None
        else:
            gz = out_format == "jsonl.gz"
            self._file = gzip.open(out, "wt", encoding="utf-8") if gz else open(out, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, row: BatchRow) -> None:
        if row.record is None:
            self.errors.write(row.error_dict())
            return
        if self.parquet:
            self._buffer.append(_parquet_row(row.record))
            if len(self._buffer) >= 1024:
                self._flush()
        else:
            self._file.write(_json_line(row) + "\n")

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

    @property
    def per_second(self) -> float:
        return (self.rows + self.errors) / self.seconds if self.seconds > 0 else 0.0


def _is_uri(path: str) -> bool:
    """``s3://bucket/x``, ``gs://...``, ``file:///...``: a location for Ray / pyarrow.fs, not a local path."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isidentifier() and len(scheme) > 1


def _is_directory_out(path: str) -> bool:
    return path.endswith(("/", os.sep)) or Path(path).is_dir() or _is_uri(path)


def _out_format(path: str, out_format: str | None) -> OutFormat:
    if out_format is not None:
        if out_format not in ("jsonl", "jsonl.gz", "parquet"):
            raise ConfigError(f"out_format must be 'jsonl', 'jsonl.gz' or 'parquet'; got {out_format!r}.")
        return out_format  # type: ignore[return-value]
    name = path.rstrip("/" + os.sep)
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    return "jsonl.gz" if name.endswith(".gz") else "jsonl"


def run_batch(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    engine: Engine = "local",
    workers: int | None = None,
    errors: str | os.PathLike[str] | None = None,
    batch_size: int = 16,
    progress: Progress | None = None,
    out_format: OutFormat | None = None,
    rows_per_file: int = 10_000,
    settings: BatchSettings | None = None,
    **kwargs: Any,
) -> BatchStats:
    """Assemble every query of ``input`` into ``output``, with ``engine`` local or ``ray``.

    Two output modes:

    * **One file** (``out.jsonl``, ``out.jsonl.gz``, ``out.parquet``; the
      default): rows come back to this process in input order and are written
      here, so the file is byte-identical whatever the engine and workers.
    * **A directory of part files** (``engine="ray"`` only; ``output`` ends
      with ``/``, is an existing directory, or is a URI such as
      ``s3://bucket/out/``): the actors' output is written by Ray's write
      tasks in parallel, nothing goes through this process but the error rows.
      Parquet uses ``Dataset.write_parquet``; JSON Lines uses a Ray file sink
      that writes the same lines as the one-file mode (``write_json`` goes
      through pandas, which rounds floats to 10 digits and escapes ``/`` and
      non-ASCII). Part files are named ``<write uuid>_<task index>.<format>``;
      execution preserves order, so the part files sorted by name hold the rows
      in input order. The format is ``out_format``, else taken from the name
      (``out.parquet/`` is Parquet), else JSON Lines.

    Args:
        input: JSONL(.gz), JSON or Parquet of queries (``{"id", "question",
            "chunks"}`` as in the shared data, or ``{"query", "chunks"}``), read
            by :func:`contextwright.io.read_records`. With ``engine="ray"`` also
            a directory, a glob, or a URI Ray can read (``s3://...``).
        output: ``.jsonl`` / ``.jsonl.gz`` / ``.parquet`` of
            ``{id, text, tokens, citations, report}`` (in Parquet, ``citations``
            and ``report`` are JSON strings), one row per successful query, in
            input order; or a directory (see above).
        engine: ``local`` (processes) or ``ray`` (Ray Data; ``RAY_ADDRESS``
            selects an existing cluster, else a local Ray starts).
        workers: Processes or Ray actors (default: one per CPU).
        errors: Where error rows go (default ``<output>.errors.jsonl``); the
            file is written only when some row failed.
        batch_size: Rows per task.
        progress: ``progress(rows_done, errors)`` after each batch (for a
            directory output, whose rows never reach this process, every half
            second from the actors' counts).
        out_format: ``jsonl``, ``jsonl.gz`` or ``parquet``; default from ``output``'s name.
        rows_per_file: For a directory output, the fewest rows a part file
            holds (Ray's ``min_rows_per_file``: consecutive blocks are written
            together, so a million queries make ~100 files, not one per block);
            the last part may hold fewer.
        settings: A :class:`BatchSettings`, or its fields as keywords.

    Returns:
        Rows written, error rows, engine, workers and seconds.

    Raises:
        ConfigError: for bad settings, an unknown engine, or a directory or URI
            output without ``engine="ray"``.
        InputError: when the input cannot be read, or holds chunks, not queries.
    """
    import time

    s = _settings(settings, kwargs)
    n = _check_workers(workers)
    if engine not in ("local", "ray"):
        raise ConfigError(f"engine must be 'local' or 'ray'; got {engine!r}.")
    if isinstance(rows_per_file, bool) or not isinstance(rows_per_file, int) or rows_per_file < 1:
        raise ConfigError(f"rows_per_file must be a positive integer; got {rows_per_file!r}.")
    src, dst = str(input), str(output)
    fmt = _out_format(dst, out_format)
    directory = _is_directory_out(dst)
    if directory and engine != "ray":
        what = "a URI" if _is_uri(dst) else "a directory"
        raise ConfigError(
            f"output {dst!r} is {what}: part files written in parallel need engine='ray' "
            "(--engine ray); pass a local file such as out.jsonl for the local engine."
        )
    if _is_uri(src) and engine != "ray":
        raise ConfigError(f"input {src!r} is a URI; the local engine reads local files: use --engine ray.")
    errors_path = str(errors) if errors is not None else dst.rstrip("/" + os.sep) + ".errors.jsonl"
    if not _is_uri(errors_path) and Path(errors_path).exists():
        Path(errors_path).unlink()  # a stale file from an earlier run would read as this run's errors
    start = time.perf_counter()
    rows: Iterator[BatchRow]
    if engine == "local":
        rows = assemble_many(read_rows(src), workers=n, batch_size=batch_size, settings=s)
    else:
        RowAssembler(s)  # fail on bad settings here, not inside every actor
        if not _is_uri(src) and not any(c in src for c in "*?["):
            if not Path(src).exists():
                raise InputError(
                    f"input {src!r} does not exist; pass a JSONL(.gz) or Parquet file of queries "
                    "(with --engine ray also a directory or a URI such as s3://bucket/queries/)."
                )
            if Path(src).is_file():
                read_rows(src)  # the wrong file (chunks, empty) fails here, before Ray starts
        if directory:
            done, failed_rows = _ray_write(src, dst, fmt, s, n, batch_size, rows_per_file, progress)
            error_file = _ErrorFile(errors_path)  # the rows themselves are in the part files
            try:
                for line in failed_rows:
                    error_file.write(line)
            finally:
                error_file.close()
            if progress is not None:
                progress(done + len(failed_rows), len(failed_rows))
            return BatchStats(
                rows=done,
                errors=len(failed_rows),
                engine=engine,
                workers=n,
                seconds=time.perf_counter() - start,
                errors_path=errors_path if failed_rows else None,
            )
        rows = _ray_rows(src, s, n, batch_size)
    writer = _Writer(dst, errors_path, fmt)
    done = failed = 0
    try:
        for row in rows:
            writer.write(row)
            done += 1
            failed += not row.ok
            if progress is not None and done % batch_size == 0:
                progress(done, failed)
    finally:
        writer.close()
    if progress is not None:
        progress(done, failed)
    return BatchStats(
        rows=done - failed,
        errors=failed,
        engine=engine,
        workers=n,
        seconds=time.perf_counter() - start,
        errors_path=errors_path if failed else None,
    )


# -- Ray Data -------------------------------------------------------------------------------------


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError:
        raise missing_extra("ray", "ray") from None
    return ray


def _ray_start(workers: int) -> Any:
    """Connect to ``RAY_ADDRESS`` or start a local Ray; ordered, quiet execution."""
    ray = _ray()
    if not ray.is_initialized():
        quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
        if os.environ.get("RAY_ADDRESS"):
            ray.init(**quiet)
        else:
            ray.init(num_cpus=max(workers, os.cpu_count() or 1), include_dashboard=False, **quiet)
    _quiet_ray_data_console()
    ctx = ray.data.DataContext.get_current()
    # Blocks keep their order through every operator: rows stream back in input order, and
    # write tasks are numbered in input order (part files sorted by name = input order).
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    return ray


class _HideProgressNotice(logging.Filter):
    """Drop Ray Data's notice that progress bars are off (we turn them off on purpose)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Progress bars disabled")


def _quiet_ray_data_console() -> None:
    """Ray Data's console handler shows warnings and errors only; its INFO lines (execution plans,
    "Starting execution of Dataset ...") still go to the session's ``logs/ray-data`` file."""
    for handler in logging.getLogger("ray.data").handlers:
        # the console handler streams to stderr; the session log file is a plain Handler
        if not isinstance(handler, logging.StreamHandler) or isinstance(handler, logging.FileHandler):
            continue
        handler.setLevel(max(handler.level, logging.WARNING))
        if not any(isinstance(f, _HideProgressNotice) for f in handler.filters):
            handler.addFilter(_HideProgressNotice())


def _file_records(file: dict[str, Any], *, src: str, src_abs: str) -> Iterator[dict[str, Any]]:
    """A Ray ``flat_map``: one input file's bytes → its query records, through the one input reader."""
    path = str(file["path"])
    # name the file as the user did (relative, or with its s3:// scheme) when it is the input itself;
    # src_abs comes from the driver (a worker's working directory may be elsewhere)
    same = path in (src_abs, src.partition("://")[2])
    label = src if same else path
    records = read_records(
        label, need="queries", command="batch", bad="keep", source=io.BytesIO(file["bytes"])
    )
    for pos, record in enumerate(records):
        yield {"record": pickle.dumps(record), "path": label, "pos": pos}


class _RayAssemble:
    """The map_batches callable class: one :class:`RowAssembler` per actor, for the actor's life.

    ``mode="rows"`` returns the pickled rows (the driver writes them);
    ``"jsonl"`` / ``"parquet"`` return only the good rows' columns for Ray's
    writers, and send error rows (with their input position) to ``collector``.
    """

    def __init__(self, settings: BatchSettings, mode: str = "rows", collector: Any = None) -> None:
        self.worker = RowAssembler(settings)
        self.mode = mode
        self.collector = collector

    def __call__(self, batch: Any) -> Any:
        records = [pickle.loads(b) for b in batch.column("record").to_pylist()]
        out = [self.worker(r) for r in records]
        if self.mode == "rows":
            return {"row": [pickle.dumps(r) for r in out]}
        import pyarrow as pa
        import ray

        keys = zip(batch.column("path").to_pylist(), batch.column("pos").to_pylist(), strict=True)
        failed = [(path, pos, r.error_dict()) for (path, pos), r in zip(keys, out, strict=True) if not r.ok]
        ok = [r for r in out if r.ok]
        # synchronous: every count and error row is in before the write finishes
        ray.get(self.collector.add.remote(len(ok), failed))
        if self.mode == "parquet":
            return pa.Table.from_pylist(
                [_parquet_row(r.record) for r in ok if r.record], schema=_out_schema(pa)
            )
        return pa.table({"line": pa.array([_json_line(r) for r in ok], type=pa.string())})


class _RayCall:
    """A map_batches callable class running ``factory(*args)`` on pickled items (see :func:`ray_map`)."""

    def __init__(self, factory: Callable[..., Callable[[Any], Any]], args: tuple[Any, ...]) -> None:
        self.fn = factory(*args)

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        return {"out": [pickle.dumps(self.fn(pickle.loads(b))) for b in batch.column("item").to_pylist()]}


def _actors(ray: Any, workers: int) -> dict[str, Any]:
    # Actors must leave one whole CPU to the read tasks (listing files, reading blocks): N actors
    # of one CPU each on an N-CPU Ray starve the reader and the pipeline hangs. So each actor
    # asks for (CPUs - 1) / N, at most 1 (a bookkeeping share; the actor still runs flat out).
    total = float(ray.cluster_resources().get("CPU", 1.0))
    share = max(0.05, min(1.0, (total - 1.0) / workers))
    return {"compute": ray.data.ActorPoolStrategy(size=workers), "num_cpus": round(share, 3)}


def _ray_dataset(
    src: str, settings: BatchSettings, workers: int, batch_size: int, mode: str, collector: Any
) -> Any:
    """read_binary_files → the one input reader per file → blocks of a few batches → the actors."""
    ray = _ray_start(workers)
    ds = ray.data.read_binary_files(src, include_paths=True)
    ds = ds.flat_map(_file_records, fn_kwargs={"src": src, "src_abs": os.path.abspath(src)})
    # One file is one read task and would be one block, which one actor would get whole: cut the
    # records into blocks of 4 batches (streaming, order kept), so every actor has work.
    ds = ds.repartition(target_num_rows_per_block=4 * batch_size)
    return ds.map_batches(
        _RayAssemble,
        fn_constructor_args=(settings, mode, collector),
        batch_size=batch_size,
        batch_format="pyarrow",
        **_actors(ray, workers),
    )


def _unwrap(exc: BaseException) -> BaseException:
    """The library error a Ray task raised, without Ray's wrapping (its message is the remote traceback)."""
    seen: BaseException | None = exc
    for _ in range(10):  # a chain, not a cycle; a few levels at most
        if seen is None:
            break
        cause = getattr(seen, "cause", None)  # RayTaskError: what the task itself raised
        if isinstance(cause, BaseException) and cause is not seen:
            seen = cause
            continue
        if isinstance(seen, ContextwrightError):
            return seen
        seen = seen.__cause__
    return exc


def _ray_rows(src: str, settings: BatchSettings, workers: int, batch_size: int) -> Iterator[BatchRow]:
    ds = _ray_dataset(src, settings, workers, batch_size, "rows", None)
    try:
        for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            for b in batch.column("row").to_pylist():
                yield pickle.loads(b)
    except Exception as exc:
        inner = _unwrap(exc)
        if inner is exc:
            raise
        raise inner from None


def _ray_write(
    src: str,
    dst: str,
    fmt: OutFormat,
    settings: BatchSettings,
    workers: int,
    batch_size: int,
    rows_per_file: int,
    progress: Progress | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """Part files written by Ray's write tasks; returns (rows written, error rows in input order)."""
    ray = _ray_start(workers)

    @ray.remote(num_cpus=0)
    class _Collector:  # error rows are few and small: one actor gathers them for the driver
        def __init__(self) -> None:
            self.ok = 0
            self.failed: list[tuple[str, int, dict[str, Any]]] = []

        def add(self, ok: int, failed: list[tuple[str, int, dict[str, Any]]]) -> None:
            self.ok += ok
            self.failed.extend(failed)

        def counts(self) -> tuple[int, int]:
            return self.ok, len(self.failed)

        def result(self) -> tuple[int, list[tuple[str, int, dict[str, Any]]]]:
            return self.ok, self.failed

    collector = _Collector.remote()  # type: ignore[attr-defined]
    mode = "parquet" if fmt == "parquet" else "jsonl"
    ds = _ray_dataset(src, settings, workers, batch_size, mode, collector)
    failure: list[BaseException] = []

    def write() -> None:
        try:
            if fmt == "parquet":
                ds.write_parquet(dst, min_rows_per_file=rows_per_file)
            else:
                ds.write_datasink(_jsonl_sink(dst, gz=fmt == "jsonl.gz", rows_per_file=rows_per_file))
        except BaseException as exc:  # re-raised below, in the caller's thread
            failure.append(exc)

    # The write blocks until Ray is done; meanwhile this thread reports the actors' counts.
    writer = threading.Thread(target=write, name="contextwright-ray-write", daemon=True)
    writer.start()
    while writer.is_alive():
        writer.join(0.5)
        if progress is not None and writer.is_alive():
            ok, n_failed = ray.get(collector.counts.remote())
            progress(ok + n_failed, n_failed)
    if failure:
        inner = _unwrap(failure[0])
        if inner is failure[0]:
            raise inner
        raise inner from None
    ok, failed = ray.get(collector.result.remote())
    ray.kill(collector)
    failed.sort(key=lambda f: (f[0], f[1]))
    return ok, [f[2] for f in failed]


def _jsonl_sink(path: str, *, gz: bool, rows_per_file: int) -> Any:
    """A Ray file sink writing the ``line`` column as JSON Lines (one part file per write task)."""
    from ray.data.datasource import BlockBasedFileDatasink

    class JsonLinesSink(BlockBasedFileDatasink):  # type: ignore[misc]
        def write_block_to_file(self, block: Any, file: Any) -> None:
            lines = block.to_arrow().column("line").to_pylist()
            if lines:
                file.write(("\n".join(lines) + "\n").encode("utf-8"))

    return JsonLinesSink(
        path,
        min_rows_per_file=rows_per_file,
        file_format="jsonl.gz" if gz else "jsonl",
        open_stream_args={"compression": "gzip"} if gz else {},
    )


def ray_map(
    items: Iterable[Any],
    factory: Callable[..., Callable[[Any], Any]],
    args: tuple[Any, ...] = (),
    *,
    workers: int | None = None,
    batch_size: int = 8,
) -> Iterator[Any]:
    """``factory(*args)(item)`` for every item on Ray Data actors (one callable per actor), in order.

    Items and results travel pickled; used by ``evaluate(engine="ray")``.
    """
    n = _check_workers(workers)
    ray = _ray_start(n)
    ds = ray.data.from_items([{"item": pickle.dumps(i)} for i in items], override_num_blocks=4 * n)
    ds = ds.map_batches(
        _RayCall,
        fn_constructor_args=(factory, args),
        batch_size=batch_size,
        batch_format="pyarrow",
        **_actors(ray, n),
    )
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        for b in batch.column("out").to_pylist():
            yield pickle.loads(b)
