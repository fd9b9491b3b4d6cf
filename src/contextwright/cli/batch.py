"""``contextwright batch`` and ``contextwright dedup-corpus``: jobs over whole files."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from contextwright.cli.base import (
    BudgetOpt,
    DbOpt,
    ExpandOpt,
    FormatOpt,
    MessagesOpt,
    ModelOpt,
    OrderOpt,
    PresetOpt,
    ReaderKeyEnvOpt,
    ReaderMaxTokensOpt,
    ReaderModelOpt,
    ReaderTimeoutOpt,
    ReaskOpt,
    StoreOpt,
    SystemOpt,
    TokenizerOpt,
    app,
    chat_options,
    check_budget_and_model,
    check_outputs,
    check_reader,
    err,
    fail,
    store_flag,
)
from contextwright.cli.output import progress_bar


@app.command("batch")
def batch_cmd(
    input: Annotated[
        str,
        typer.Argument(
            help="JSONL(.gz), JSON or Parquet of queries ({id, question, chunks} or {query, chunks}); "
            "with --engine ray also a directory or a URI Ray reads (s3://bucket/queries/)."
        ),
    ],
    output: Annotated[
        str,
        typer.Argument(
            help="Output .jsonl, .jsonl.gz or .parquet of {id, text, tokens, citations, report}, one "
            "ordered file written here; with --engine ray, a directory (ending in /) or a URI gets "
            "part files written by Ray in parallel."
        ),
    ],
    engine: Annotated[
        str, typer.Option(help="local (processes) or ray (Ray Data; RAY_ADDRESS picks a cluster).")
    ] = "local",
    workers: Annotated[
        int | None, typer.Option(help="Processes or Ray actors (default: one per CPU).")
    ] = None,
    preset: PresetOpt = "qa",
    model: ModelOpt = None,
    budget: BudgetOpt = None,
    format: FormatOpt = None,
    order: OrderOpt = None,
    tokenizer: TokenizerOpt = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    expand: ExpandOpt = None,
    errors: Annotated[
        str | None, typer.Option(help="Error rows file (default: OUTPUT.errors.jsonl).")
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Rows per task.")] = 16,
    out_format: Annotated[
        str | None,
        typer.Option(help="jsonl, jsonl.gz or parquet (default: from OUTPUT's name; a directory: jsonl)."),
    ] = None,
    rows_per_file: Annotated[
        int, typer.Option(min=1, help="Directory OUTPUT: the fewest rows per part file.")
    ] = 10_000,
    timings: Annotated[
        bool, typer.Option("--timings", help="Keep per-stage ms in the reports (output then varies).")
    ] = False,
    messages: MessagesOpt = False,
    reader: Annotated[
        str | None,
        typer.Option(
            help="Also ask this model each row's question over its context (an OpenAI-compatible API "
            "root, e.g. http://127.0.0.1:8080/v1), as contextwright ask does: each row gets answer "
            "{answer, cited, missing, bare, reasked, first}."
        ),
    ] = None,
    reader_model: ReaderModelOpt = None,
    reader_key_env: ReaderKeyEnvOpt = "OPENAI_API_KEY",
    reader_max_tokens: ReaderMaxTokensOpt = 256,
    reader_timeout: ReaderTimeoutOpt = 60.0,
    reader_concurrency: Annotated[
        int,
        typer.Option(
            min=1,
            max=256,
            help="Requests in flight per worker: each worker assembles a batch of rows, then asks their "
            "questions this many at a time (--workers × this in all; 1 for a local server with one slot).",
        ),
    ] = 4,
    reader_cache: Annotated[
        str | None,
        typer.Option(
            help="SQLite file of the reader's replies, shared by the workers: a re-run sends only the "
            "requests not in it (e.g. the rows that failed). Default: no cache."
        ),
    ] = None,
    system: SystemOpt = "default",
    reask_bare: ReaskOpt = "auto",
) -> None:
    """Assemble every query of a file (locally or on Ray); failed rows go to an errors file.

    With --reader, also ask a model each question and keep its answer with the context."""
    from contextwright.batch import BatchSettings

    if engine not in ("local", "ray"):
        fail(f"--engine must be local or ray; got {engine!r}.")
    store = store_flag(store, db)
    if expand is not None and store is None:
        fail("--expand needs --store URL (the chunk store to fetch neighbours from).")
    if out_format not in (None, "jsonl", "jsonl.gz", "parquet"):
        fail(f"--out-format must be jsonl, jsonl.gz or parquet; got {out_format!r}.")
    check_budget_and_model(budget, model)
    check_outputs(("OUTPUT", output), ("--errors", errors))
    check_reader(reader, reader_model)
    prompts = chat_options(messages, system, reask_bare, reader=reader is not None)
    if reader_cache is not None and reader is None:
        fail("--reader-cache keeps the replies of --reader: pass --reader URL --reader-model NAME too.")
    asked = _reader(
        reader,
        reader_model,
        reader_key_env,
        prompts,
        max_tokens=reader_max_tokens,
        timeout_s=reader_timeout,
        cache=reader_cache,
        concurrency=reader_concurrency,
    )
    settings = BatchSettings(
        preset=preset,
        model=model,
        budget=budget,
        tokenizer=tokenizer,
        format=format,
        order=order,
        store=store,
        expand=expand,
        timings=timings,
        messages=prompts if messages else None,  # each row's messages and reask_messages
        reader=asked,
    )
    stats = _run(
        input,
        output,
        engine=engine,
        workers=workers,
        errors=errors,
        batch_size=batch_size,
        out_format=out_format,
        rows_per_file=rows_per_file,
        settings=settings,
    )
    done = "assembled and asked" if asked is not None else "assembled"
    line = (
        f"{done} {stats.rows:,} rows into {output} with {engine} × {stats.workers} "
        f"in {stats.seconds:.2f} s ({stats.per_second:,.1f} rows/s)"
    )
    if stats.answers is not None:
        answered, reasked, bare = stats.answers
        line += f"; {answered:,} answered, {reasked:,} asked again after a bare citation, {bare:,} still bare"
    if stats.errors:
        line += f"; {stats.errors:,} error rows in {stats.errors_path}"
    Console(highlight=False, soft_wrap=True).print(line)


def _reader(
    url: str | None,
    model: str | None,
    key_env: str,
    prompts: tuple[str | None, str | None] | None,
    **settings: Any,
) -> Any:
    """The :class:`~contextwright.batch.BatchReader` of ``--reader`` (checked), or None;
    ``settings``: its other fields."""
    from contextwright.batch import BatchReader

    if url is None or model is None or prompts is None:
        return None
    return BatchReader(
        url=url, model=model, key_env=key_env or None, system=prompts[0], reask_bare=prompts[1], **settings
    )


def _run(input: str, output: str, *, engine: str, **options: Any) -> Any:
    """:func:`~contextwright.batch.run_batch` under a progress bar (on a terminal); a failure is the
    command's error."""
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    from contextwright.batch import run_batch
    from contextwright.core.errors import ContextwrightError

    try:
        with Progress(
            TextColumn(f"batch ({engine})"),
            TextColumn("{task.fields[done]:,} rows · {task.fields[errors]:,} errors"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not err.is_terminal,
        ) as bar:
            task = bar.add_task("batch", total=None, done=0, errors=0)
            return run_batch(
                input,
                output,
                engine=engine,  # type: ignore[arg-type]
                progress=lambda done, failed: bar.update(task, done=done, errors=failed),
                **options,
            )
    except ContextwrightError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {output!r}: {exc.strerror or exc}")


# -- dedup-corpus: near duplicates over a whole corpus (contextwright.batch.corpus_dedup) --


@app.command("dedup-corpus")
def dedup_corpus_cmd(
    corpus: Annotated[
        str,
        typer.Argument(help="Corpus of chunks with 'text' (and 'id'): JSONL or a JSON array, .gz too."),
    ],
    out: Annotated[
        str | None, typer.Option(help="Write the pairs here as JSONL {a, b, a_pos, b_pos, jaccard}.")
    ] = None,
    threshold: Annotated[float, typer.Option(help="Jaccard similarity of word shingles.")] = 0.9,
    shingle_size: Annotated[int, typer.Option(help="Words per shingle.")] = 3,
    num_perm: Annotated[int, typer.Option(help="MinHash hash functions.")] = 32,
    seed: Annotated[int, typer.Option(help="Seed of the hash functions.")] = 1,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Processes hashing (default: one per CPU; same result).")
    ] = None,
    stats: Annotated[
        bool, typer.Option("--stats", help="Print a JSON line of counts, seconds and peak memory.")
    ] = False,
) -> None:
    """Find near-duplicate chunks in a whole corpus (MinHash LSH, verified by exact Jaccard)."""
    import os

    from contextwright.batch.corpus_dedup import iter_texts, near_duplicate_pairs
    from contextwright.core.errors import ContextwrightError

    check_outputs(("--out", out))
    found: dict[int, tuple[str, str]] = {}

    def reread(positions: set[int]) -> dict[int, str]:
        from contextwright.inputs.readers import read_records

        for pos, record in enumerate(read_records(corpus, need="chunks", command="dedup-corpus")):
            if pos in positions:
                found[pos] = (str(record.data.get("id", pos)), record.data["text"])
        return {p: t for p, (_, t) in found.items()}

    try:
        with progress_bar("dedup-corpus", "chunks hashed") as update:
            result = near_duplicate_pairs(
                iter_texts(corpus),
                threshold=threshold,
                shingle_size=shingle_size,
                num_perm=num_perm,
                seed=seed,
                reread=reread,
                progress=update,
                workers=workers or os.cpu_count() or 1,
            )
    except ContextwrightError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read {corpus!r}: {exc.strerror or exc}")
    if out is not None:
        _write_pairs(out, result, found)
    bands, rows = result.bands
    err.print(
        f"{result.chunks:,} chunks · {result.candidates:,} candidates ({bands} bands × {rows} rows) · "
        f"{len(result.pairs):,} near-duplicate pairs ≥ {threshold} · {len(result.duplicates):,} chunks to drop "
        f"· {result.seconds:.1f} s" + (f" → {out}" if out else ""),
        highlight=False,
        markup=False,
    )
    if stats:
        _print_stats(result)


def _write_pairs(out: str, result: Any, found: dict[int, tuple[str, str]]) -> None:
    """The near-duplicate pairs as JSON Lines: both ids, both positions, their Jaccard."""
    import json

    with open(out, "w", encoding="utf-8") as f:
        for p in result.pairs:
            row = {
                "a": found[p.a][0],
                "b": found[p.b][0],
                "a_pos": p.a,
                "b_pos": p.b,
                "jaccard": p.jaccard,
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _print_stats(result: Any) -> None:
    """The run's figures as one JSON line on stdout: counts, time, peak memory, CPU time."""
    import json
    import resource

    # the largest process (this one, or a hashing worker), and the CPU time of all of them
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    peak = max(u.ru_maxrss for u in usage) / 1024
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)
    sys.stdout.write(
        json.dumps(
            {
                "chunks": result.chunks,
                "candidates": result.candidates,
                "pairs": len(result.pairs),
                "duplicates": len(result.duplicates),
                "seconds": round(result.seconds, 3),
                "timings": {k: round(v, 3) for k, v in result.timings.items()},
                "peak_rss_mb": round(peak, 1),
                "cpu_s": round(cpu, 2),
            }
        )
        + "\n"
    )
