"""The Ray Data engine: read tasks through the one input reader, one assembler per actor, ordered or parallel output."""

from __future__ import annotations

import io
import logging
import os
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from contextwright.batch.files import (
    extra_columns,
    json_line,
    out_schema,
    parquet_row,
)
from contextwright.batch.local import (
    check_workers,
)
from contextwright.batch.rows import (
    BatchRow,
    BatchSettings,
    OutFormat,
    Progress,
    RowAssembler,
)
from contextwright.core.errors import ContextwrightError, missing_extra
from contextwright.inputs.readers import read_records


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
        out = self.worker.many([("", r) for r in records])  # a reader's requests: concurrently
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
            extra = extra_columns(self.worker.settings)
            return pa.Table.from_pylist(
                [parquet_row(r.record, extra) for r in ok if r.record], schema=out_schema(pa, extra)
            )
        return pa.table({"line": pa.array([json_line(r) for r in ok], type=pa.string())})


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


def ray_rows(src: str, settings: BatchSettings, workers: int, batch_size: int) -> Iterator[BatchRow]:
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


def ray_write(
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
    n = check_workers(workers)
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
