"""Batch assembly: many queries at once, in local processes or on Ray Data.

Offline jobs (evaluation runs, RAG fine-tuning data, nightly re-assembly
after re-indexing) assemble a context for every query of a file.
:func:`assemble_many` takes an iterable of queries and yields one
:class:`BatchRow` per query, **in input order**, using worker processes that
each build one :class:`~contextwright.assembler.Assembler` (so token caches
and store connections live as long as the worker). :func:`run_batch` goes
file to file, locally or as a Ray Data pipeline (``read_text`` /
``read_parquet`` → ``map_batches`` with a callable class holding one
assembler per actor → the rows streamed back in order and written).

Output does not depend on the engine or the number of workers: each row is
assembled by the same function from the same input, rows keep their input
order, and per-stage timings (the only thing that varies between runs) are
left out unless ``timings=True``.

A row that fails (malformed JSON, a chunk without text, a store timeout)
becomes an error row ``{"id", "error", "input"}``; the job goes on.

Example:
    >>> from contextwright.batch import assemble_many
    >>> for row in assemble_many(queries, preset="qa", budget=500, workers=2):
    ...     print(row.id, row.record["tokens"] if row.ok else row.error)

Ray is optional (extra ``ray``) and imported only when ``engine="ray"``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from contextwright.errors import ConfigError, InputError, missing_extra
from contextwright.io import QueryItem, _item

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
    """

    id: str
    record: dict[str, Any] | None = None
    error: str | None = None
    input: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def error_dict(self) -> dict[str, Any]:
        """The error file's line: ``{id, error, input}``."""
        return {"id": self.id, "error": self.error, "input": self.input}


def _strip_none(chunk: Any) -> Any:
    # Parquet (Arrow) gives every row every struct field, absent ones as null;
    # Chunk.from_dict would keep unknown ones as metadata, so drop the nulls.
    if isinstance(chunk, dict):
        return {k: v for k, v in chunk.items() if v is not None}
    return chunk


def _parse(row: Any) -> QueryItem:
    """A row (a JSON line, a mapping, or a QueryItem) as a QueryItem; raises InputError."""
    # Helper 13's shared input reader (io.py) should take over the per-row parsing here once it
    # lands; a batch needs it per row (one bad row is an error row, not a failed file).
    if isinstance(row, QueryItem):
        return row
    if isinstance(row, (str, bytes)):
        try:
            row = json.loads(row)
        except json.JSONDecodeError as exc:
            raise InputError(f"row is not valid JSON: {exc.msg} (column {exc.colno}).") from None
    if isinstance(row, Mapping) and isinstance(row.get("chunks"), list):
        row = {**row, "chunks": [_strip_none(c) for c in row["chunks"]]}
    return _item(row, "row")


def _row_id(row: Any) -> str:
    if isinstance(row, QueryItem):
        return row.id
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

    def __call__(self, row: Any) -> BatchRow:
        try:
            item = _parse(row)
            ctx = self.assembler.assemble(item.query, item.chunks)
        except Exception as exc:  # a row's failure is its error row, never the job's
            return BatchRow(id=_row_id(row), error=f"{type(exc).__name__}: {exc}", input=_preview(row))
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
        return BatchRow(id=item.id, record=record)

    def many(self, rows: Sequence[Any]) -> list[BatchRow]:
        return [self(r) for r in rows]


# -- local processes ------------------------------------------------------------------------------

_LOCAL: dict[str, RowAssembler] = {}


def _init_local(settings: BatchSettings) -> None:
    _LOCAL["worker"] = RowAssembler(settings)


def _local_many(rows: list[Any]) -> list[BatchRow]:
    return _LOCAL["worker"].many(rows)


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


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
            or :class:`~contextwright.io.QueryItem`. Consumed lazily: at most
            ``4 × workers`` batches are in flight.
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
    if n == 1:
        for row in queries:
            yield local(row)
        return
    try:
        pickle.dumps(s)
    except Exception as exc:
        raise ConfigError(f"workers={n} needs picklable settings ({exc}); use workers=1.") from None
    import multiprocessing

    pending: deque[Future[list[BatchRow]]] = deque()
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_init_local,
                             initargs=(s,)) as pool:  # fmt: skip
        for batch in _batched(queries, batch_size):
            pending.append(pool.submit(_local_many, batch))
            while len(pending) >= 4 * n:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


# -- reading and writing files --------------------------------------------------------------------


def _is_parquet(path: str) -> bool:
    if path.endswith((".parquet", ".pq")):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise missing_extra("pyarrow", "ray") from None
    return pyarrow


def read_rows(path: str | os.PathLike[str]) -> Iterator[Any]:
    """The rows of a JSONL(.gz) or Parquet query file, lazily: JSON lines (str) or mappings.

    Rows are not parsed here: a malformed row becomes an error row later, not a
    failed file.

    Raises:
        InputError: when the file cannot be opened.
    """
    p = str(path)
    if not Path(p).is_file():
        raise InputError(f"input file {p!r} does not exist; pass a JSONL(.gz) or Parquet file of queries.")
    if _is_parquet(p):
        pq = _pyarrow().parquet
        for batch in pq.ParquetFile(p).iter_batches(batch_size=256):
            yield from batch.to_pylist()
        return
    with open(p, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    stream: Any = gzip.open(p, "rb") if gz else open(p, "rb")  # noqa: SIM115 - closed below
    with stream, io.TextIOWrapper(stream, encoding="utf-8-sig") as text:
        for line in text:
            if line.strip():
                yield line.rstrip("\r\n")


class _Writer:
    """Writes output records (JSONL, ``.gz`` too, or Parquet) and error rows (JSONL)."""

    def __init__(self, out: str, errors: str | None) -> None:
        self.out = out
        self.errors_path = errors
        self.parquet = out.endswith((".parquet", ".pq"))
        self._buffer: list[dict[str, Any]] = []
        self._pq_writer: Any = None
        self._err: Any = None
        if self.parquet:
            pa = _pyarrow()
            self._schema = pa.schema(
                [
                    ("id", pa.string()),
                    ("text", pa.string()),
                    ("tokens", pa.int64()),
                    ("citations", pa.string()),
                    ("report", pa.string()),
                ]
            )
            self._pq_writer = pa.parquet.ParquetWriter(out, self._schema)
            self._file: Any = None
        else:
            gz = out.endswith(".gz")
            self._file = gzip.open(out, "wt", encoding="utf-8") if gz else open(out, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, row: BatchRow) -> None:
        if row.record is None:
            if self.errors_path is not None:
                if self._err is None:
                    self._err = open(self.errors_path, "w", encoding="utf-8")  # noqa: SIM115
                self._err.write(json.dumps(row.error_dict(), ensure_ascii=False) + "\n")
            return
        if self.parquet:
            r = row.record
            self._buffer.append(
                {
                    "id": r["id"],
                    "text": r["text"],
                    "tokens": r["tokens"],
                    "citations": json.dumps(r["citations"], ensure_ascii=False),
                    "report": json.dumps(r["report"], ensure_ascii=False),
                }
            )
            if len(self._buffer) >= 1024:
                self._flush()
        else:
            self._file.write(json.dumps(row.record, ensure_ascii=False) + "\n")

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
        if self._err is not None:
            self._err.close()


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


def run_batch(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    engine: Engine = "local",
    workers: int | None = None,
    errors: str | os.PathLike[str] | None = None,
    batch_size: int = 16,
    progress: Progress | None = None,
    settings: BatchSettings | None = None,
    **kwargs: Any,
) -> BatchStats:
    """Assemble every query of ``input`` into ``output``, with ``engine`` local or ``ray``.

    Args:
        input: JSONL(.gz) or Parquet of queries (``{"id", "question", "chunks"}``
            as in the shared data, or ``{"query", "chunks"}``).
        output: ``.jsonl`` / ``.jsonl.gz`` / ``.parquet`` of
            ``{id, text, tokens, citations, report}`` (in Parquet, ``citations``
            and ``report`` are JSON strings), one row per successful query, in
            input order.
        engine: ``local`` (processes) or ``ray`` (Ray Data; ``RAY_ADDRESS``
            selects an existing cluster, else a local Ray starts).
        workers: Processes or Ray actors (default: one per CPU).
        errors: Where error rows go (default ``<output>.errors.jsonl``); the
            file is written only when some row failed.
        batch_size: Rows per task.
        progress: ``progress(rows_done, errors)`` after each batch.
        settings: A :class:`BatchSettings`, or its fields as keywords.

    Returns:
        Rows written, error rows, engine, workers and seconds.

    Raises:
        ConfigError: for bad settings or an unknown engine.
        InputError: when the input file cannot be read.
    """
    import time

    s = _settings(settings, kwargs)
    n = _check_workers(workers)
    if engine not in ("local", "ray"):
        raise ConfigError(f"engine must be 'local' or 'ray'; got {engine!r}.")
    src, dst = str(input), str(output)
    errors_path = str(errors) if errors is not None else dst + ".errors.jsonl"
    if Path(errors_path).exists():
        Path(errors_path).unlink()  # a stale file from an earlier run would read as this run's errors
    start = time.perf_counter()
    rows: Iterator[BatchRow]
    if engine == "local":
        rows = assemble_many(read_rows(src), workers=n, batch_size=batch_size, settings=s)
    else:
        if not Path(src).is_file():
            raise InputError(
                f"input file {src!r} does not exist; pass a JSONL(.gz) or Parquet file of queries."
            )
        RowAssembler(s)  # fail on bad settings here, not inside every actor
        rows = _ray_rows(src, s, n, batch_size)
    writer = _Writer(dst, errors_path)
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
        if os.environ.get("RAY_ADDRESS"):
            ray.init(log_to_driver=False)
        else:
            ray.init(num_cpus=max(workers, os.cpu_count() or 1), include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True  # rows come back in input order
    ctx.enable_progress_bars = False
    return ray


class _RayAssemble:
    """The map_batches callable class: one :class:`RowAssembler` per actor, for the actor's life."""

    def __init__(self, settings: BatchSettings) -> None:
        self.worker = RowAssembler(settings)

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        column = "text" if "text" in batch.column_names else None
        rows: list[Any] = batch.column("text").to_pylist() if column else batch.to_pylist()
        out = [self.worker(r) for r in rows]
        return {"row": [pickle.dumps(r) for r in out]}


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


def _ray_rows(src: str, settings: BatchSettings, workers: int, batch_size: int) -> Iterator[BatchRow]:
    ray = _ray_start(workers)
    # One small file is one block, which only one actor would see: ask for a few blocks per actor.
    blocks = max(4 * workers, os.path.getsize(src) // (64 << 20))
    if _is_parquet(src):
        ds = ray.data.read_parquet(src, override_num_blocks=blocks)
    else:
        # read_text, not read_json: Arrow's JSON reader unifies the rows' schemas (absent nested
        # fields become nulls, int/float widen, one type conflict fails the whole file), which
        # would change rows; lines are parsed by the same code as the local engine.
        ds = ray.data.read_text(src, override_num_blocks=blocks)
    ds = ds.map_batches(
        _RayAssemble,
        fn_constructor_args=(settings,),
        batch_size=batch_size,
        batch_format="pyarrow",
        **_actors(ray, workers),
    )
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        for b in batch.column("row").to_pylist():
            yield pickle.loads(b)


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
