"""File to file: :func:`run_batch` on the local engine or on Ray Data."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextwright.batch.files import (
    BatchStats,
    ErrorFile,
    Writer,
    extra_columns,
    is_directory_out,
    is_uri,
    output_format,
    read_rows,
)
from contextwright.batch.local import (
    assemble_many,
    check_workers,
    settings_of,
)
from contextwright.batch.ray import (
    ray_rows,
    ray_write,
)
from contextwright.batch.rows import (
    BatchRow,
    BatchSettings,
    Engine,
    OutFormat,
    Progress,
    RowAssembler,
)
from contextwright.core.errors import ConfigError, InputError


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
            by :func:`contextwright.inputs.readers.read_records`. With ``engine="ray"`` also
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
    s = settings_of(settings, kwargs)
    n = check_workers(workers)
    src, dst = str(input), str(output)
    fmt = output_format(dst, out_format)
    directory = _check_plan(src, dst, engine, rows_per_file)
    errors_path = str(errors) if errors is not None else dst.rstrip("/" + os.sep) + ".errors.jsonl"
    if not is_uri(errors_path) and Path(errors_path).exists():
        Path(errors_path).unlink()  # a stale file from an earlier run would read as this run's errors
    start = time.perf_counter()
    rows: Iterator[BatchRow]
    if engine == "local":
        rows = assemble_many(read_rows(src), workers=n, batch_size=batch_size, settings=s)
    else:
        _check_ray_input(src, s)
        if directory:
            done, failed_rows = ray_write(src, dst, fmt, s, n, batch_size, rows_per_file, progress)
            _write_errors(errors_path, failed_rows)
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
        rows = ray_rows(src, s, n, batch_size)
    writer = Writer(dst, errors_path, fmt, extra=extra_columns(s))
    done, failed = _write_rows(rows, writer, batch_size, progress)
    return BatchStats(
        rows=done - failed,
        errors=failed,
        engine=engine,
        workers=n,
        seconds=time.perf_counter() - start,
        errors_path=errors_path if failed else None,
        answers=(writer.answers[0], writer.answers[1], writer.answers[2]) if s.reader is not None else None,
    )


def _check_plan(src: str, dst: str, engine: str, rows_per_file: int) -> bool:
    """Whether the output is a directory of part files, after checking the engine can do the job.

    Raises:
        ConfigError: for an unknown engine, a bad ``rows_per_file``, or a directory or URI
            output or a URI input with the local engine.
    """
    if engine not in ("local", "ray"):
        raise ConfigError(f"engine must be 'local' or 'ray'; got {engine!r}.")
    if isinstance(rows_per_file, bool) or not isinstance(rows_per_file, int) or rows_per_file < 1:
        raise ConfigError(f"rows_per_file must be a positive integer; got {rows_per_file!r}.")
    directory = is_directory_out(dst)
    if directory and engine != "ray":
        what = "a URI" if is_uri(dst) else "a directory"
        raise ConfigError(
            f"output {dst!r} is {what}: part files written in parallel need engine='ray' "
            "(--engine ray); pass a local file such as out.jsonl for the local engine."
        )
    if is_uri(src) and engine != "ray":
        raise ConfigError(f"input {src!r} is a URI; the local engine reads local files: use --engine ray.")
    return directory


def _check_ray_input(src: str, settings: BatchSettings) -> None:
    """Fail on bad settings or a missing or wrong input file here, before Ray starts."""
    RowAssembler(settings)  # fail on bad settings here, not inside every actor
    if not is_uri(src) and not any(c in src for c in "*?["):
        if not Path(src).exists():
            raise InputError(
                f"input {src!r} does not exist; pass a JSONL(.gz) or Parquet file of queries "
                "(with --engine ray also a directory or a URI such as s3://bucket/queries/)."
            )
        if Path(src).is_file():
            read_rows(src)  # the wrong file (chunks, empty) fails here, before Ray starts


def _write_errors(errors_path: str, failed_rows: list[dict[str, Any]]) -> None:
    """The error rows of a parallel write (the rows themselves are in the part files)."""
    error_file = ErrorFile(errors_path)
    try:
        for line in failed_rows:
            error_file.write(line)
    finally:
        error_file.close()


def _write_rows(
    rows: Iterator[BatchRow], writer: Writer, batch_size: int, progress: Progress | None
) -> tuple[int, int]:
    """Write ``rows`` in order (results to the output, failures to the error file): ``(rows, failed)``."""
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
    return done, failed
