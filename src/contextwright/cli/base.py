"""The Typer app, its version flag, and what every command shares: options, errors, building the assembler."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperOption

from contextwright.render.format import format_names
from contextwright.stages.order import order_names

_display_type = TyperOption.display_type_rich


def _flag_display_type(self: Any, ctx: Any) -> str | None:
    # A boolean flag takes no value: show "--json", not "--json <bool>" (click never shows one).
    return None if self.is_flag and not self.secondary_opts else _display_type(self, ctx)


if not getattr(TyperOption.display_type_rich, "_contextwright", False):
    _flag_display_type._contextwright = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = _flag_display_type  # type: ignore[method-assign]

app = typer.Typer(
    name="contextwright",
    help="Context assembly for RAG: budgets, dedup, ordering, citations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class _Stderr(Console):
    """The console for messages: on a terminal wrapped to its width; redirected, one message a line.

    A message in a log file stays whole (grep finds it); tables keep their own layout.
    """

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if all(isinstance(o, str) for o in objects) and not self.is_terminal:
            kwargs.setdefault("soft_wrap", True)
        super().print(*objects, **kwargs)


err = _Stderr(stderr=True)


def _version(value: bool) -> None:
    if value:
        from contextwright import __version__
        from contextwright.stages.profiles import implementation

        out = Console(highlight=False)
        out.print(f"contextwright {__version__}")
        if implementation() == "c":
            out.print("word profiles: C (contextwright._native)")
        else:  # the build hook found no C compiler, or CONTEXTWRIGHT_PURE=1 at install
            out.print("word profiles: Python (installed without the C module: the same results, slower)")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Context assembly for RAG: budgets, dedup, ordering, citations."""


# -- commands are added below, one section per command ------------------


def fail(message: str) -> NoReturn:
    """Print a readable error and exit with code 2 (bad input or options)."""
    # The message is plain text: "[offline]" in an install hint must print as written.
    err.print(f"[bold red]error:[/] {escape(cli_words(message))}", highlight=False, markup=True)
    raise typer.Exit(2)


def check_outputs(*outputs: tuple[str, str | Path | None]) -> None:
    """Fail at once (exit 2) for an output path that cannot be written: before any work starts.

    Each output is ``(option, path)``; ``None``, ``-`` and URLs (``s3://...``) are not checked
    here, nor a directory output (a path ending in ``/``) that a writer creates.
    """
    import os

    for option, value in outputs:
        text = "" if value is None else str(value)
        if not text or text == "-" or "://" in text or text.endswith(("/", os.sep)):
            continue
        path = Path(text)
        where = f"cannot write {text!r} ({option})"
        if path.is_dir():
            fail(f"{where}: it is a folder; name a file, e.g. {str(path / 'out')!r}.")
        parent = path.parent
        if not parent.is_dir():
            fail(f"{where}: the folder {str(parent)!r} does not exist; create it first (mkdir -p {parent}).")
        if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            fail(f"{where}: permission denied.")


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


# Options shared by the commands that assemble (assemble, inspect).
FileArg = Annotated[str, typer.Argument(help="JSON/JSONL(.gz) of chunks or of queries; '-' for stdin.")]
QueryOpt = Annotated[str | None, typer.Option("--query", "-q", help="The query (default: from the input).")]
ModelOpt = Annotated[str | None, typer.Option(help="Model name: sets tokenizer and zone budget.")]
BudgetOpt = Annotated[int | None, typer.Option(help="Documents budget in tokens.")]
PresetOpt = Annotated[str, typer.Option(help="Preset name or path to a .toml/.json config.")]
# The names come from the registries (render.format, stages.order): a new format or order stage
# shows up here without an edit.
FORMAT_HELP = ", ".join(format_names()) + "."
ORDER_HELP = ", ".join(order_names()) + "."
FormatOpt = Annotated[str | None, typer.Option("--format", "-f", help=FORMAT_HELP)]
OrderOpt = Annotated[str | None, typer.Option(help=ORDER_HELP)]
TokenizerOpt = Annotated[
    str | None,
    typer.Option(help="Tokenizer: cl100k_base, o200k_base, hf:NAME, path/tokenizer.json, chars."),
]
StoreOpt = Annotated[
    str | None,
    typer.Option(help="Chunk store URL for expansion: sqlite:///nq.db, postgresql://..., memory://."),
]


def check_budget_and_model(budget: int | None, model: str | None) -> None:
    """The library's budget/model errors in the CLI's words (flags, not Python arguments)."""
    if budget is None and model is None:
        fail(
            "pass --budget N (the documents budget in tokens) or --model NAME (derives it from the "
            "model's context window), e.g. --budget 1000 or --model gpt-4o-mini."
        )
    if model is None:
        return
    from contextwright.core.errors import ConfigError, did_you_mean
    from contextwright.tokens.zones import get_model, list_models

    try:
        get_model(model)
    except ConfigError:
        hint = did_you_mean(model, [m.name for m in list_models()], n=3, cutoff=0.5)
        fail(
            f"--model {model!r} is not a known model.{hint} Pass --budget N (and --tokenizer) "
            "instead; the known models: contextwright models."
        )


def cli_words(message: str) -> str:
    """A library message with its Python arguments named as this CLI's flags."""
    return message.replace("pass tokenizer='chars'", "pass --tokenizer chars").replace(
        "expand needs store= (", "--expand needs --store URL ("
    )


# The one store flag is --store; --db (index's old name) still works, with a hint.
DbOpt = Annotated[str | None, typer.Option("--db", hidden=True, help="The old name of --store.")]
ExpandOpt = Annotated[
    int | None, typer.Option(help="Add the neighbours index±N (0-3) of each chunk from --store.")
]


def note_stdin(file: str, command: str) -> None:
    """Say on stderr that ``command`` reads chunks from a terminal's stdin: a blank screen would
    look like a hang."""
    if file == "-" and sys.stdin.isatty():
        err.print(
            "reading chunks from stdin (a JSON array or JSON Lines); end with Ctrl-D, or pass a file: "
            f"contextwright {command} chunks.json -q ...",
            highlight=False,
        )


def store_flag(store: str | None, db: str | None) -> str | None:
    """The store URL from --store, or from --db with a hint that the flag is --store."""
    if db is None:
        return store
    if store is not None and store != db:
        fail(f"--store {store!r} and --db {db!r} name two stores; pass one, as --store URL.")
    err.print("[yellow]note:[/] the store flag is --store (as in assemble, index, batch); --db works too.")
    return db


def new_sqlite_file(url: str) -> Path | None:
    """The file a sqlite:/// URL would create, when it does not exist yet."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() != "sqlite" or not rest.startswith("/") or rest in ("/", "/:memory:"):
        return None
    path = Path(rest[1:])
    return None if path.exists() else path


def remove_sqlite_file(path: Path | None) -> None:
    """Remove a database file this command created (and SQLite's side files), if any."""
    if path is None:
        return
    for p in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        p.unlink(missing_ok=True)


def build_assembler(
    preset: str,
    *,
    model: str | None,
    budget: int | None,
    tokenizer: str | None,
    format: str | None,
    order: str | None,
    store: str | None = None,
    expand: int | None = None,
    embedder: str | None = None,
    output_tokens: int | None = None,
    history_tokens: int = 0,
    **options: Any,
) -> Any:
    """An Assembler from command-line options, with the resources they name."""
    from contextwright.assembly.assembler import Assembler
    from contextwright.assembly.spec import AssemblerSpec, open_resources

    check_budget_and_model(budget, model)
    config, resources = open_resources(preset, store=store, expand=expand, embedder=embedder)
    # A flag left out (None) keeps the assembler's default.
    spec = AssemblerSpec.from_options(
        dict(
            config=config,
            model=model,
            budget=budget,
            tokenizer=tokenizer,
            format=format,
            order=order,
            output_tokens=output_tokens,
            history_tokens=history_tokens,
            **options,
        )
    )
    return Assembler.from_spec(spec, **resources)


MessagesOpt = Annotated[
    bool,
    typer.Option(
        "--messages",
        help="Also give the chat to send the model (OpenAI format: the prompt, the history, the context, "
        "the query) as messages, and reask_messages: the same under --reask-bare, to send once when the "
        "reply is a bare citation, as contextwright.ask does.",
    ),
]
SystemOpt = Annotated[
    str,
    typer.Option(
        help="With --messages (batch: or --reader): the system prompt (default, strict, soft, light, "
        "a text, or none); default is a profile's prompt where it has one."
    ),
]
ReaskOpt = Annotated[
    str,
    typer.Option(
        "--reask-bare",
        help="With --messages (batch: or --reader): the prompt of the re-ask after a bare citation, "
        "reask_messages (a name or a text; auto: a profile's reask, else light; none: never).",
    ),
]


def chat_options(
    messages: bool, system: str, reask_bare: str, *, reader: bool | None = None
) -> tuple[str | None, str | None] | None:
    """``(system, reask_bare)`` for ``--messages`` or ``--reader`` (:func:`chat_prompts`); None
    without either. A prompt flag without them is refused. ``reader``: whether ``--reader`` was
    given; None for a command that has no ``--reader``."""
    if not messages and not reader:
        if (system, reask_bare) != ("default", "auto"):
            wanted = "--messages or --reader: add one" if reader is not None else "--messages: add --messages"
            fail(f"--system and --reask-bare shape the chat of {wanted}.")
        return None
    return chat_prompts(system, reask_bare)


# -- the model a command sends the context to (ask; batch --reader) --

ReaderOpt = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible API root of the model that answers (e.g. http://127.0.0.1:8080/v1): "
        "the same flag as eval and fit."
    ),
]
ReaderModelOpt = Annotated[
    str | None, typer.Option(help="The model name the endpoint expects (required with --reader).")
]
ReaderKeyEnvOpt = Annotated[
    str, typer.Option(help="Environment variable holding the API key (empty: send none).")
]
ReaderMaxTokensOpt = Annotated[int, typer.Option(min=1, help="Most tokens of an answer.")]
ReaderTimeoutOpt = Annotated[float, typer.Option(help="Timeout of one request (s).")]


def check_reader(reader: str | None, reader_model: str | None, *, needed: str | None = None) -> None:
    """Refuse, before any work, a ``--reader`` that is not an http(s) URL or has no
    ``--reader-model``; ``needed``: the command needs one (its purpose, for the message)."""
    if reader is None and reader_model is None and needed is None:
        return
    if not reader or not reader_model:
        what = needed or "--reader sends each context to a model"
        fail(
            f"{what}: pass --reader URL (an OpenAI-compatible API root, e.g. http://127.0.0.1:8080/v1) "
            "and --reader-model NAME."
        )
    if not reader.startswith(("http://", "https://")):
        fail(
            f"--reader must be the http(s) URL of an OpenAI-compatible API root; got {reader!r}, "
            "e.g. http://127.0.0.1:8080/v1."
        )


def chat_prompts(system: str, reask_bare: str) -> tuple[str | None, str | None]:
    """``(system, reask_bare)`` of a chat from ``--system`` and ``--reask-bare`` (``none`` is no
    prompt / no re-ask), checked before any work."""
    from contextwright.core.errors import ContextwrightError
    from contextwright.render.messages import check_chat

    try:
        return check_chat(
            None if system == "none" else system,
            None if reask_bare == "none" else reask_bare,
            fields=("--system", "--reask-bare"),
        )
    except ContextwrightError as exc:
        flag = exc.loc[0] if exc.loc else "--reask-bare"
        fail(f"{exc} Use e.g. {flag} {'strict' if flag == '--system' else 'light'}, or none.")
