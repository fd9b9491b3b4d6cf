"""What several commands print or read: progress, the plan, the report, history and JSON files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from contextwright.cli.base import (
    err,
)


def print_table(table: Any, *, console: Console | None = None) -> None:
    """A table on stdout: fitted to a terminal; in a pipe or a file, one row per line, never wrapped.

    ``contextwright models | grep Qwen2.5-72B-Instruct`` must find the name whole.
    """
    from rich import box

    out = console or Console(highlight=False)
    if not out.is_terminal:
        table.box = box.SIMPLE_HEAD  # no side borders to grep around
        needed = out.measure(table, options=out.options.update_width(10_000)).maximum
        out = Console(highlight=False, width=max(needed, 1), file=out.file)
    out.print(table)


class QueryProgress:
    """A bar over the queries of a query file, on a terminal only (stdout piped, stderr a TTY).

    ``advance(done)`` is called after each query; the bar appears from the second one, and
    ``stop()`` leaves one line with the full count and the time taken, whenever there were
    two queries or more (on a terminal or not).
    """

    def __init__(self, *, enabled: bool) -> None:
        import time

        self.enabled = enabled
        self.bar: Any = None
        self.done = 0
        self.start = time.perf_counter()

    def advance(self, done: int) -> None:
        self.done = done
        if not self.enabled or done < 2:
            return  # one query needs no bar
        if self.bar is None:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                SpinnerColumn(),
                TextColumn("assembled {task.completed:,} queries"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
                redirect_stdout=False,  # the results go to stdout untouched, the bar to stderr
            )
            self.task = self.bar.add_task("assemble", total=None, completed=done)
            self.bar.start()
        self.bar.update(self.task, completed=done)

    def stop(self) -> None:
        import time

        if self.bar is not None:
            self.bar.stop()
        if self.done >= 2:
            elapsed = time.perf_counter() - self.start
            err.print(f"assembled {self.done:,} queries in {elapsed:.1f} s", highlight=False)


def warn_no_query(file: str, assembler: Any) -> None:
    """Say on stderr that a list of chunks is assembled without a query."""

    users = [s.name for s in assembler.pipeline.stages if "query" in getattr(s, "requires", ())]
    what = (
        f"relevance-aware stages ({', '.join(users)}) run without a query"
        if users
        else "the context is assembled without a query (relevance-aware stages, such as "
        "compression, would run without one)"
    )
    name = "stdin" if file == "-" else file
    err.print(
        f"[yellow]warning:[/] {escape(f'{name} is a list of chunks and --query was not given: {what}.')} "
        f'Pass --query "...".',
        highlight=False,
    )


def read_json_file(path: Path, option: str, expected: str) -> Any:
    """A JSON file given to ``option``, or a clear InputError."""
    import json

    from contextwright.core.errors import InputError

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{option} {path}: cannot read {expected} ({exc}).") from None
    except RecursionError:
        raise InputError(f"{option} {path}: cannot read {expected} (nested too deeply).") from None


def read_history(path: Path) -> list[Any]:
    """The turns of a --history file: a JSON list of {role, content}."""
    import json

    from contextwright.core.errors import InputError

    try:
        turns = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"--history {path}: cannot read a JSON list of turns ({exc}).") from None
    except RecursionError:
        raise InputError(f"--history {path}: cannot read a JSON list of turns (nested too deeply).") from None
    if not isinstance(turns, list):
        raise InputError(
            f"--history {path}: expected a JSON list of {{role, content}} turns, got {type(turns).__name__}."
        )
    return turns


def history_line(h: Any) -> str:
    dropped = f"dropped turns {', '.join(map(str, h.dropped))}" if h.dropped else "nothing dropped"
    summary = " · summarized" if h.summary else ""
    return (
        f"history: {len(h.messages)} messages kept, {dropped} · {h.tokens:,} of {h.budget:,} tokens{summary}"
    )


def print_plan(plan: Any, item_id: str | None, q: str, *, as_json: bool) -> None:
    """A dry run's zones, drops and compressions (JSON, or readable lines on stdout)."""
    import json

    if as_json:
        data = plan.to_dict()
        sys.stdout.write(json.dumps({"id": item_id, **data} if item_id else data, ensure_ascii=False) + "\n")
        return
    out = Console(highlight=False, soft_wrap=True)
    if item_id:
        out.print(f"# {item_id} · {q}", markup=False)
    zones = " · ".join(f"{k} {v:,}" for k, v in plan.zones.items() if v)
    out.print(f"zones: {zones or f'documents {plan.budget:,}'}", markup=False)
    out.print(
        f"{plan.input_chunks:,} → {len(plan.chunks):,} chunk{'' if len(plan.chunks) == 1 else 's'} · {plan.input_tokens:,} → {plan.tokens:,} tokens "
        f"(budget {plan.budget:,}) · {'fits whole' if plan.fits else 'does not fit whole'}",
        markup=False,
    )
    for c in plan.compressed:
        out.print(f"  {c.action} {c.chunk_id}: {c.tokens_before} → {c.tokens_after} tokens", markup=False)
    for d in plan.dropped:
        out.print(
            f"  dropped {d.chunk_id}: {d.reason}" + (f" → {d.related}" if d.related else ""), markup=False
        )
    if plan.history is not None:
        out.print(history_line(plan.history), markup=False)


def print_report(ctx: Any, item_id: str | None = None) -> None:
    """The per-stage report as a Rich table on stderr, after its summary line (naming the query)."""
    from collections import Counter

    from rich.table import Table

    # The summary is a line of its own (a table title is padded to the table's width).
    err.print(escape(summary_line(ctx, item_id)), highlight=False)
    # Counts by reason fit 80 columns; every chunk id with its reason is in --json.
    table = Table()
    for col in ("stage", "chunks", "tokens", "ms", "dropped, changed"):
        table.add_column(col, justify="right" if col == "ms" else "left", no_wrap=col != "dropped, changed")
    for s in ctx.report.stages:
        counts = Counter(d.reason for d in s.dropped) + Counter(c.action for c in s.changed)
        table.add_row(
            escape(s.stage),
            f"{s.chunks_in:,} → {s.chunks_out:,}",
            f"{s.tokens_in:,} → {s.tokens_out:,}" if s.tokens_in is not None else "",
            f"{s.ms:.2f}",
            escape(", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))),
        )
    err.print(table)
    for s in ctx.report.stages:
        for note in s.notes:
            err.print(f"{escape(s.stage)}: {escape(note)}")
    if ctx.report.dropped:
        err.print("[dim]every dropped chunk with its reason: --json (report.stages[].dropped)[/]")


def summary_line(ctx: Any, item_id: str | None = None) -> str:
    """The report's one-line summary, after the query's id when it has one (a query file)."""
    summary = str(ctx.report.summary())
    return f"{item_id} · {summary}" if item_id else summary


def progress_bar(label: str, unit: str) -> Any:
    """A transient counter on stderr (only on a terminal); yields ``update(done)``."""
    import contextlib

    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    @contextlib.contextmanager
    def bar() -> Any:
        with Progress(
            TextColumn(label),
            TextColumn("{task.fields[done]:,} " + unit),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not err.is_terminal,
        ) as p:
            task = p.add_task(label, total=None, done=0)
            yield lambda done: p.update(task, done=done)

    return bar()


def warnings_once() -> Any:
    """A handler on the ``contextwright`` logger that prints each distinct warning once on stderr.

    A stage warns once per call; over hundreds of queries, each distinct warning is shown once
    (a warning logged from a template with arguments, once per template).
    The caller removes it (``logging.getLogger("contextwright").removeHandler``).
    """
    import logging

    seen: set[tuple[str, str]] = set()

    class Once(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            key = (record.name, str(record.msg))
            if key not in seen:
                seen.add(key)
                # "(shown once)" says it; the library's own "(logged once per process)" would repeat it
                text = record.getMessage().replace(" (logged once per process)", "")
                err.print(f"[yellow]warning:[/] {escape(text)} [dim](shown once)[/]", highlight=False)

    handler = Once(logging.WARNING)
    logging.getLogger("contextwright").addHandler(handler)
    return handler
