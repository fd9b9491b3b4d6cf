"""``contextwright inspect``: the HTML page of one assembly."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from contextwright.cli.base import (
    BudgetOpt,
    DbOpt,
    FileArg,
    FormatOpt,
    ModelOpt,
    OrderOpt,
    PresetOpt,
    QueryOpt,
    StoreOpt,
    TokenizerOpt,
    app,
    build_assembler,
    chat_prompts,
    check_outputs,
    err,
    fail,
    store_flag,
)


@app.command("inspect")
def inspect_cmd(
    file: FileArg,
    html: Annotated[str, typer.Option("--html", help="Where to write the page.")] = "inspect.html",
    query: QueryOpt = None,
    model: ModelOpt = None,
    budget: BudgetOpt = None,
    preset: PresetOpt = "qa",
    format: FormatOpt = None,
    order: OrderOpt = None,
    tokenizer: TokenizerOpt = None,
    item: Annotated[
        int | None,
        typer.Option("--item", help="Which query of a query file (0-based; default: the first, said so)."),
    ] = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    system: Annotated[
        str,
        typer.Option(
            help="The system prompt of the chat the page shows (default, strict, soft, light, a text, or "
            "none); default is a profile's prompt where it has one."
        ),
    ] = "default",
    reask_bare: Annotated[
        str,
        typer.Option(
            "--reask-bare",
            help="The prompt of the chat the page shows as sent again after a bare citation (a name or a "
            "text; auto: a profile's reask, else light; none: not shown).",
        ),
    ] = "auto",
) -> None:
    """Write a self-contained HTML page showing how one context was assembled, and the chat sent."""
    from contextwright.assembly.inspector import inspection, render_page
    from contextwright.core.errors import ContextwrightError
    from contextwright.inputs.readers import read_items

    check_outputs(("--html", html))
    prompts = chat_prompts(system, reask_bare)
    try:
        assembler = build_assembler(
            preset,
            model=model,
            budget=budget,
            tokenizer=tokenizer,
            format=format,
            order=order,
            store=store_flag(store, db),
        )
        chosen = 0 if item is None else item
        items = list(read_items(file, limit=max(chosen + 1, 2)))
        if chosen < 0 or chosen >= len(items):
            fail(
                f"--item {chosen} is out of range: the input holds {len(items)} quer{'y' if len(items) == 1 else 'ies'}."
            )
        job = items[chosen]
        if item is None and len(items) > 1:
            name = "stdin" if file == "-" else file
            which = f"{job.id} · {job.query}" if job.id else job.query
            err.print(
                f"note: {escape(name)} holds several queries; inspecting the first "
                f"({escape(which[:80])}). Pick another with --item N (0-based).",
                highlight=False,
            )
        q = query if query is not None else job.query
        ctx = assembler.assemble(q, job.chunks)
        options = {"preset": preset, "model": model, "budget": budget, "format": format, "order": order}
        # named ranked lists: the inspector shows the fused list the pipeline started from
        inputs = assembler.pipeline._inputs(job.chunks)[0] if not isinstance(job.chunks, list) else job.chunks
        data = inspection(ctx, assembler, inputs, options=options, system=prompts[0], reask_bare=prompts[1])
        page = render_page(data)
    except ContextwrightError as exc:
        fail(str(exc))
    try:
        Path(html).write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {html!r}: {exc.strerror}")

    err.print(f"[dim]{escape(ctx.report.summary())}[/] → {escape(html)}", highlight=False)
