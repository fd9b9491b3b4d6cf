"""``contextwright ask``: assemble one question's context, ask a model, print its answer and sources.

The command-line face of :func:`contextwright.ask`: the same chat (``--system``), the same re-ask
after a bare citation (``--reask-bare``; a profile's ``reask`` by default), and every ``[n]`` of
the answer resolved to the block it cites, so what a profile fitted with ``contextwright fit``
does on your model can be seen on one question before it is wired into an application.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from contextwright.cli.base import (
    BudgetOpt,
    DbOpt,
    ExpandOpt,
    FileArg,
    FormatOpt,
    ModelOpt,
    OrderOpt,
    PresetOpt,
    QueryOpt,
    ReaderKeyEnvOpt,
    ReaderMaxTokensOpt,
    ReaderModelOpt,
    ReaderOpt,
    ReaderTimeoutOpt,
    StoreOpt,
    TokenizerOpt,
    app,
    build_assembler,
    chat_prompts,
    check_reader,
    err,
    fail,
    note_stdin,
    store_flag,
)
from contextwright.cli.output import summary_line, warnings_once


@app.command("ask")
def ask_cmd(
    file: FileArg = "-",
    query: QueryOpt = None,
    reader: ReaderOpt = None,
    reader_model: ReaderModelOpt = None,
    reader_key_env: ReaderKeyEnvOpt = "OPENAI_API_KEY",
    reader_max_tokens: ReaderMaxTokensOpt = 256,
    reader_timeout: ReaderTimeoutOpt = 60.0,
    model: ModelOpt = None,
    budget: BudgetOpt = None,
    preset: PresetOpt = "qa",
    format: FormatOpt = None,
    order: OrderOpt = None,
    tokenizer: TokenizerOpt = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    expand: ExpandOpt = None,
    system: Annotated[
        str,
        typer.Option(
            help="The system prompt (default, strict, soft, light, a text, or none); default is a "
            "profile's prompt where it has one."
        ),
    ] = "default",
    reask_bare: Annotated[
        str,
        typer.Option(
            "--reask-bare",
            help="When the answer is a bare citation ('[1]' and nothing else), ask once more under this "
            "prompt (a name or a text; auto: a profile's reask, else light; none: never).",
        ),
    ] = "auto",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON object: the answer, the sources it cites, the re-ask, the context's "
            "tokens and its report.",
        ),
    ] = False,
) -> None:
    """Ask a model one question over the assembled context; print its answer and the sources it cites."""
    from contextwright.core.errors import ContextwrightError

    check_reader(reader, reader_model, needed="ask sends the context to a model")
    assert reader is not None and reader_model is not None  # checked just above
    prompts = chat_prompts(system, reask_bare)  # refused before any work, as assemble --messages
    handler = warnings_once()
    try:
        item = _one_item(file)
        q = query if query is not None else item.query
        if not q:
            fail("ask needs a question: pass --query '...' or an input with a 'query' field.")
        assembler = build_assembler(
            preset,
            model=model,
            budget=budget,
            tokenizer=tokenizer,
            format=format,
            order=order,
            store=store_flag(store, db),  # a profile that expands needs its store, as assemble does
            expand=expand,
        )
        ctx = assembler.assemble(q, item.chunks)
        answer = _ask(
            ctx, q, prompts, reader, reader_model, reader_key_env, reader_max_tokens, reader_timeout
        )
    except ContextwrightError as exc:
        fail(str(exc))
    finally:
        import logging

        logging.getLogger("contextwright").removeHandler(handler)
    _print(answer, ctx, as_json=as_json)


def _one_item(file: str) -> Any:
    """The one input of ``ask``: a list of chunks, or a query file holding exactly one query."""
    from contextwright.inputs.readers import read_items

    note_stdin(file, "ask")
    items = list(read_items(file, limit=2, command="ask"))
    name = "stdin" if file == "-" else file
    if not items or not items[0].chunks:
        fail(f"{name} holds no chunks: ask answers from the context they make, so it needs some.")
    if len(items) > 1:
        fail(
            f"{name} holds several queries; ask answers one question. Use eval --reader to ask a model "
            "every question of a file, or pass a file with one query."
        )
    return items[0]


def _ask(
    ctx: Any,
    query: str,
    prompts: tuple[str | None, str | None],
    url: str,
    model: str,
    key_env: str,
    max_tokens: int,
    timeout_s: float,
) -> Any:
    """:func:`contextwright.ask` through a :class:`~contextwright.clients.chat.ChatClient`, as
    ``batch --reader`` asks each row (:meth:`~contextwright.batch.BatchReader.ask`, one retry)."""
    from contextwright.batch import BatchReader

    reader = BatchReader(
        url=url,
        model=model,
        key_env=key_env or None,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
        system=prompts[0],
        reask_bare=prompts[1],
    )
    with reader.client() as client:
        return reader.ask(ctx, query, client)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(text: str) -> str:
    """``text`` for a terminal: control characters (an escape sequence in a reply or a chunk's
    source could move the cursor or recolour the screen) written as ``\\x1b``; newlines and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _print(answer: Any, ctx: Any, *, as_json: bool) -> None:
    """The answer and its sources on stdout (or one JSON object); the context's summary on stderr."""
    resolved = answer.citations
    if as_json:
        data = {**answer.to_dict(), "context": ctx.to_dict()}
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        return
    sys.stdout.write(_shown(answer.text.strip()) + "\n")
    if resolved.cited:
        sys.stdout.write("\nSources:\n")
        for c in resolved.cited:
            where = _shown(
                " · ".join(str(x) for x in (c.source, c.title, c.section, c.page) if x not in (None, ""))
            )
            chunk = _shown(f"chunk {', '.join(c.chunk_ids)}")
            sys.stdout.write(f"{c.label} {where} ({chunk})\n" if where else f"{c.label} {chunk}\n")
    sys.stdout.flush()
    notes = [summary_line(ctx, None)]
    if answer.reasked:
        notes.append(f"the first reply was a bare citation ({answer.first.strip()!r}): asked again")
    if resolved.bare:
        notes.append("the answer is still a bare citation")
    if resolved.missing:
        notes.append(
            "cites " + ", ".join(f"[{n}]" for n in resolved.missing) + ", which no block of the context has"
        )
    for note in notes:
        err.print(f"[dim]{escape(note)}[/]", highlight=False)
