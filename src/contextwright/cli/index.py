"""``contextwright index``: a chunk store from a corpus file."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from contextwright.cli.base import (
    DbOpt,
    app,
    check_outputs,
    err,
    fail,
    new_sqlite_file,
    remove_sqlite_file,
    store_flag,
)


@app.command("index")
def index_cmd(
    corpus: Annotated[
        str, typer.Argument(help="JSONL(.gz) corpus, one chunk per line with doc_id and index.")
    ],
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URL: sqlite:///nq.db, sqlite:////abs/path.db, postgresql://... "
            "(default sqlite:///contextwright.db).",
        ),
    ] = None,
    db: DbOpt = None,
    table: Annotated[str, typer.Option(help="Table name in the store.")] = "chunks",
) -> None:
    """Load a chunk corpus into a store (for neighbour expansion), in one transaction."""
    import time

    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    from contextwright.core.errors import ContextwrightError
    from contextwright.stores import open_store, redact_url

    url = store_flag(store, db) or "sqlite:///contextwright.db"
    if url.lower().startswith("memory://"):
        fail(
            "--store memory:// keeps nothing once the command exits; use sqlite:///path.db or "
            "postgresql://..."
        )
    new_file = new_sqlite_file(url)
    check_outputs(("--store", new_file))
    start = time.perf_counter()
    try:
        with (
            open_store(url, mode="create", table=table) as chunk_store,
            Progress(
                TextColumn("indexing"),
                BarColumn(),
                DownloadColumn(),
                TextColumn("{task.fields[chunks]:,} chunks"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
                disable=not err.is_terminal,
            ) as bar,
        ):
            task = bar.add_task("index", total=None, chunks=0)

            def progress(chunks: int, done: int, total: int) -> None:
                if total:
                    bar.update(task, completed=done, total=total, chunks=chunks)
                else:
                    bar.update(task, chunks=chunks)

            count = chunk_store.load_jsonl(corpus, progress=progress)
            stored = chunk_store.count()
    except ContextwrightError as exc:
        remove_sqlite_file(new_file)  # a refused index leaves no empty database behind
        fail(str(exc))
    except BaseException:
        remove_sqlite_file(new_file)
        raise
    elapsed = time.perf_counter() - start
    Console(highlight=False, soft_wrap=True).print(
        f"indexed {count:,} chunks into {redact_url(url)} (table {table}, {stored:,} in total) "
        f"in {elapsed:.2f} s"
    )
