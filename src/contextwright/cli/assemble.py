"""``contextwright assemble``: one query's context from a file of chunks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from contextwright.cli.base import (
    BudgetOpt,
    DbOpt,
    ExpandOpt,
    FileArg,
    FormatOpt,
    MessagesOpt,
    ModelOpt,
    OrderOpt,
    PresetOpt,
    QueryOpt,
    ReaskOpt,
    StoreOpt,
    SystemOpt,
    TokenizerOpt,
    app,
    build_assembler,
    chat_options,
    err,
    fail,
    note_stdin,
    store_flag,
)
from contextwright.cli.output import (
    QueryProgress,
    history_line,
    print_plan,
    print_report,
    read_history,
    read_json_file,
    summary_line,
    warn_no_query,
    warnings_once,
)


@app.command("assemble")
def assemble_cmd(
    file: FileArg = "-",
    query: QueryOpt = None,
    model: ModelOpt = None,
    budget: BudgetOpt = None,
    preset: PresetOpt = "qa",
    format: FormatOpt = None,
    order: OrderOpt = None,
    tokenizer: TokenizerOpt = None,
    output_tokens: Annotated[
        int | None, typer.Option(help="Output zone (default: the model's max output).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (JSONL for several queries).")] = False,
    report: Annotated[bool, typer.Option("--report", help="Print the per-stage report to stderr.")] = False,
    limit: Annotated[int | None, typer.Option(help="Assemble at most this many queries.")] = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    expand: ExpandOpt = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            help="sentence-transformers model (directory or name) for semantic_dedup, when the "
            "chunks carry no 'embedding'."
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the zone budget and what would be dropped or compressed; render nothing.",
        ),
    ] = False,
    history: Annotated[
        Path | None,
        typer.Option(
            help="JSON file with the conversation so far ([{role, content}, ...], oldest first), "
            "trimmed to --history-tokens; the kept turns and the dropped positions are in the "
            "report (--json, --dry-run).",
        ),
    ] = None,
    history_tokens: Annotated[
        int, typer.Option(min=0, help="The history zone in tokens (needed with --history).")
    ] = 0,
    fusion: Annotated[
        str | None,
        typer.Option(
            help='How named ranked lists ({"bm25": [...], "dense": [...]}) are fused: score (default) or rrf.'
        ),
    ] = None,
    tools: Annotated[
        Path | None,
        typer.Option(
            help="JSON file of tool outputs ([{name, content}, ...]) fitted to --tool-tokens and "
            "rendered in their own section (report: tools)."
        ),
    ] = None,
    tool_tokens: Annotated[
        int, typer.Option(min=0, help="The tool-output zone in tokens (needed with --tools).")
    ] = 0,
    previous: Annotated[
        Path | None,
        typer.Option(
            help="The previous turn's --json output: its surviving blocks stay first, in order "
            "(stable order for prompt caching); the report gives stable_prefix_tokens."
        ),
    ] = None,
    messages: MessagesOpt = False,
    system: SystemOpt = "default",
    reask_bare: ReaskOpt = "auto",
) -> None:
    """Assemble the context for chunks (or for each query of a query file)."""
    import logging

    from contextwright.core.errors import ContextwrightError
    from contextwright.inputs.readers import read_items

    out = Console(highlight=False, soft_wrap=True)
    _check_zones(history, history_tokens, tools, tool_tokens)
    chat = chat_options(messages, system, reask_bare)  # printed as JSON, in the --json line if any
    if chat is not None and dry_run:
        fail(
            "--dry-run assembles no context, so there is no chat to print: leave out --messages or --dry-run."
        )
    handler = warnings_once()  # the library's warnings (budget 0, ...) on stderr, once each
    try:
        extra: dict[str, Any] = {}
        if fusion is not None:
            extra["fusion"] = fusion
        if tool_tokens:
            extra["tool_tokens"] = tool_tokens
        if previous is not None:
            extra["stable_order"] = True
        assembler = build_assembler(
            preset,
            model=model,
            budget=budget,
            tokenizer=tokenizer,
            format=format,
            order=order,
            store=store_flag(store, db),
            expand=expand,
            embedder=embedder,
            output_tokens=output_tokens,
            history_tokens=history_tokens,
            **extra,
        )
        turns = read_history(history) if history is not None else None
        bar = QueryProgress(enabled=err.is_terminal and not sys.stdout.isatty())
        outputs = read_json_file(tools, "--tools", "a JSON list of {name, content}") if tools else None
        before = read_json_file(previous, "--previous", "the previous --json output") if previous else None
        note_stdin(file, "assemble")
        for n, item in enumerate(read_items(file, limit=limit)):
            if n == 0:
                _check_first(item, file, query, assembler)
            q = query if query is not None else item.query
            if dry_run:
                print_plan(assembler.plan(q, item.chunks, history=turns), item.id, q, as_json=as_json)
                bar.advance(n + 1)
                continue
            ctx = assembler.assemble(q, item.chunks, history=turns, tools=outputs, previous=before)
            _print_context(ctx, item.id, q, first=n == 0, out=out, as_json=as_json, report=report, chat=chat)
            if report:
                print_report(ctx, item.id)
            bar.advance(n + 1)
        bar.stop()
    except ContextwrightError as exc:
        fail(str(exc))
    finally:
        logging.getLogger("contextwright").removeHandler(handler)


def _check_zones(history: Any, history_tokens: int, tools: Any, tool_tokens: int) -> None:
    """A history or tool file needs the zone's tokens."""
    if history is not None and history_tokens <= 0:
        fail("--history needs --history-tokens N: the tokens the conversation may use (e.g. 1000).")
    if tools is not None and tool_tokens <= 0:
        fail("--tools needs --tool-tokens N: the tokens the tool outputs may use (e.g. 1000).")


def _check_first(item: Any, file: str, query: str | None, assembler: Any) -> None:
    """Refuse --query on a query file; warn about an empty list, or chunks without a query."""
    name = "stdin" if file == "-" else file
    if query is not None and (item.id or item.query):
        fail(
            f"--query would replace the question of every query in {name}: a query file carries "
            "its own questions. Leave --query out, or pass a list of chunks with --query."
        )
    if not item.id and not item.chunks:
        err.print(
            f"[yellow]warning:[/] {escape(name)} holds no chunks (an empty list), so the context is empty.",
            highlight=False,
        )
    elif not (query or item.query) and not item.id:
        warn_no_query(file, assembler)


def _print_context(
    ctx: Any,
    item_id: str | None,
    q: str,
    *,
    first: bool,
    out: Console,
    as_json: bool,
    report: bool,
    chat: tuple[str | None, str | None] | None = None,
) -> None:
    """One context on stdout (text, or a JSON line; with ``chat``, its messages as a JSON line),
    and its summary on stderr."""
    import json

    from contextwright.render.cite import chat_messages

    said = chat_messages(ctx, *chat) if chat is not None else {}
    if as_json or chat is not None:
        data = ctx.to_dict() if as_json else {}
        if item_id:
            data = {"id": item_id, **data}
        sys.stdout.write(json.dumps({**data, **said}, ensure_ascii=False) + "\n")
        if not as_json and not report:
            err.print(f"[dim]{escape(summary_line(ctx, item_id))}[/]", highlight=False)
    else:
        if item_id:
            out.print(f"{'' if first else chr(10)}# {item_id} · {q}", markup=False)
        # The context always ends its line, so the summary on stderr starts a line of its own.
        sys.stdout.write(ctx.text if ctx.text.endswith("\n") else ctx.text + "\n")
        sys.stdout.flush()
        if not report:  # --report prints the summary above its table: say it once
            err.print(f"[dim]{escape(summary_line(ctx, item_id))}[/]", highlight=False)
        if ctx.report.history is not None:
            err.print(f"[dim]{escape(history_line(ctx.report.history))}[/]")
