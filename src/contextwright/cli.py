"""The ``contextwright`` command line (Typer + Rich): thin over the library.

Each command loads its input, builds what the library needs, calls one
library function and prints the result. Bad input exits with code 2 and a
readable message.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

try:
    import typer
    from rich.console import Console
    from rich.markup import escape
except ImportError:  # pragma: no cover - exercised only without the extra
    typer = None  # type: ignore[assignment]


def _missing() -> None:
    sys.stderr.write("The contextwright CLI needs the 'cli' extra: pip install 'contextwright[cli]'\n")
    raise SystemExit(1)


if typer is not None:
    from typer.core import TyperOption

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
    err = Console(stderr=True)

    def _version(value: bool) -> None:
        if value:
            from contextwright import __version__

            Console(highlight=False).print(f"contextwright {__version__}")
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

    def _csv(value: str | None) -> list[str]:
        return [v.strip() for v in value.split(",") if v.strip()] if value else []

    # Options shared by the commands that assemble (assemble, inspect).
    FileArg = Annotated[str, typer.Argument(help="JSON/JSONL(.gz) of chunks or of queries; '-' for stdin.")]
    QueryOpt = Annotated[
        str | None, typer.Option("--query", "-q", help="The query (default: from the input).")
    ]
    ModelOpt = Annotated[str | None, typer.Option(help="Model name: sets tokenizer and zone budget.")]
    BudgetOpt = Annotated[int | None, typer.Option(help="Documents budget in tokens.")]
    PresetOpt = Annotated[str, typer.Option(help="Preset name or path to a .toml/.json config.")]
    FormatOpt = Annotated[
        str | None,
        typer.Option("--format", "-f", help="minimal, numbered, xml, grouped, sources, markdown, lean."),
    ]
    OrderOpt = Annotated[
        str | None,
        typer.Option(help="relevance, chronological, lost_in_the_middle, bookend, document, auto."),
    ]
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
        import difflib

        from contextwright.budget import get_model, list_models
        from contextwright.errors import ConfigError

        try:
            get_model(model)
        except ConfigError:
            close = difflib.get_close_matches(model.lower(), [m.name for m in list_models()], n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            fail(
                f"--model {model!r} is not a known model.{hint} Pass --budget N (and --tokenizer) "
                "instead; the known models: contextwright models."
            )

    def cli_words(message: str) -> str:
        """A library message with its Python arguments named as this CLI's flags."""
        return message.replace("pass tokenizer='chars'", "pass --tokenizer chars")

    # The one store flag is --store; --db (index's old name) still works, with a hint.
    DbOpt = Annotated[str | None, typer.Option("--db", hidden=True, help="The old name of --store.")]

    def store_flag(store: str | None, db: str | None) -> str | None:
        """The store URL from --store, or from --db with a hint that the flag is --store."""
        if db is None:
            return store
        if store is not None and store != db:
            fail(f"--store {store!r} and --db {db!r} name two stores; pass one, as --store URL.")
        err.print(
            "[yellow]note:[/] the store flag is --store (as in assemble, index, batch); --db works too."
        )
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
        from contextwright.assembler import Assembler

        check_budget_and_model(budget, model)
        resources: dict[str, Any] = {}
        config: Any = preset
        if expand is not None:
            if store is None:
                fail("--expand needs --store URL (the chunk store to fetch neighbours from).")
            from contextwright.config import pipeline_from_config
            from contextwright.stages.expand import with_expansion

            config = with_expansion(pipeline_from_config(preset), window=expand)
        if store is not None:
            from contextwright.stores import open_store

            resources["store"] = open_store(store)
        if embedder is not None:
            from contextwright.embed import SentenceTransformerEmbedder

            resources["embedder"] = SentenceTransformerEmbedder(embedder)
        return Assembler(
            config,
            model=model,
            budget=budget,
            tokenizer=tokenizer,
            format=format,
            order=order,
            output_tokens=output_tokens,
            history_tokens=history_tokens,
            **options,
            **resources,
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
        as_json: Annotated[
            bool, typer.Option("--json", help="Print JSON (JSONL for several queries).")
        ] = False,
        report: Annotated[
            bool, typer.Option("--report", help="Print the per-stage report to stderr.")
        ] = False,
        limit: Annotated[int | None, typer.Option(help="Assemble at most this many queries.")] = None,
        store: StoreOpt = None,
        db: DbOpt = None,
        expand: Annotated[
            int | None, typer.Option(help="Add the neighbours index±N (0-3) of each chunk from --store.")
        ] = None,
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
                help='How named ranked lists ({"bm25": [...], "dense": [...]}) are fused: score '
                "(default) or rrf."
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
    ) -> None:
        """Assemble the context for chunks (or for each query of a query file)."""
        import json
        import logging

        from contextwright.errors import ContextwrightError
        from contextwright.io import read_items

        out = Console(highlight=False, soft_wrap=True)
        if history is not None and history_tokens <= 0:
            fail("--history needs --history-tokens N: the tokens the conversation may use (e.g. 1000).")
        if tools is not None and tool_tokens <= 0:
            fail("--tools needs --tool-tokens N: the tokens the tool outputs may use (e.g. 1000).")
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
            before = (
                read_json_file(previous, "--previous", "the previous --json output") if previous else None
            )
            for n, item in enumerate(read_items(file, limit=limit)):
                q = query if query is not None else item.query
                if not q and not item.id and n == 0:
                    warn_no_query(file, assembler)
                if dry_run:
                    print_plan(assembler.plan(q, item.chunks, history=turns), item.id, q, as_json=as_json)
                    bar.advance(n + 1)
                    continue
                ctx = assembler.assemble(q, item.chunks, history=turns, tools=outputs, previous=before)
                if as_json:
                    data = ctx.to_dict()
                    if item.id:
                        data = {"id": item.id, **data}
                    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
                else:
                    if item.id:
                        out.print(f"{'' if n == 0 else chr(10)}# {item.id} · {q}", markup=False)
                    # The context always ends its line, so the summary on stderr starts a line of its own.
                    sys.stdout.write(ctx.text if ctx.text.endswith("\n") else ctx.text + "\n")
                    sys.stdout.flush()
                    if not report:  # --report's table has the summary as its title: say it once
                        err.print(f"[dim]{escape(ctx.report.summary())}[/]")
                    if ctx.report.history is not None:
                        err.print(f"[dim]{escape(history_line(ctx.report.history))}[/]")
                if report:
                    print_report(ctx)
                bar.advance(n + 1)
            bar.stop()
        except ContextwrightError as exc:
            fail(str(exc))
        finally:
            logging.getLogger("contextwright").removeHandler(handler)

    class QueryProgress:
        """A bar over the queries of a query file, on a terminal only (stdout piped, stderr a TTY).

        ``advance(done)`` is called after each query; the bar appears from the second one, and
        ``stop()`` leaves one line with the full count and the time taken.
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
            if self.bar is None:
                return
            import time

            elapsed = time.perf_counter() - self.start
            self.bar.stop()
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

        from contextwright.errors import InputError

        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{option} {path}: cannot read {expected} ({exc}).") from None

    def read_history(path: Path) -> list[Any]:
        """The turns of a --history file: a JSON list of {role, content}."""
        import json

        from contextwright.errors import InputError

        try:
            turns = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"--history {path}: cannot read a JSON list of turns ({exc}).") from None
        if not isinstance(turns, list):
            raise InputError(
                f"--history {path}: expected a JSON list of {{role, content}} turns, got {type(turns).__name__}."
            )
        return turns

    def history_line(h: Any) -> str:
        dropped = f"dropped turns {', '.join(map(str, h.dropped))}" if h.dropped else "nothing dropped"
        summary = " · summarized" if h.summary else ""
        return f"history: {len(h.messages)} messages kept, {dropped} · {h.tokens:,} of {h.budget:,} tokens{summary}"

    def print_plan(plan: Any, item_id: str | None, q: str, *, as_json: bool) -> None:
        """A dry run's zones, drops and compressions (JSON, or readable lines on stdout)."""
        import json

        if as_json:
            data = plan.to_dict()
            sys.stdout.write(
                json.dumps({"id": item_id, **data} if item_id else data, ensure_ascii=False) + "\n"
            )
            return
        out = Console(highlight=False, soft_wrap=True)
        if item_id:
            out.print(f"# {item_id} · {q}", markup=False)
        zones = " · ".join(f"{k} {v:,}" for k, v in plan.zones.items() if v)
        out.print(f"zones: {zones or f'documents {plan.budget:,}'}", markup=False)
        out.print(
            f"{plan.input_chunks} → {len(plan.chunks)} chunks · {plan.input_tokens:,} → {plan.tokens:,} tokens "
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

    def print_report(ctx: Any) -> None:
        """The per-stage report as a Rich table on stderr."""
        from collections import Counter

        from rich.table import Table

        # Counts by reason fit 80 columns; every chunk id with its reason is in --json.
        table = Table(title=escape(ctx.report.summary()), title_justify="left")
        for col in ("stage", "chunks", "tokens", "ms", "dropped / changed"):
            table.add_column(
                col, justify="right" if col == "ms" else "left", no_wrap=col != "dropped / changed"
            )
        for s in ctx.report.stages:
            counts = Counter(d.reason for d in s.dropped) + Counter(c.action for c in s.changed)
            table.add_row(
                escape(s.stage),
                f"{s.chunks_in} → {s.chunks_out}",
                f"{s.tokens_in} → {s.tokens_out}" if s.tokens_in is not None else "",
                f"{s.ms:.2f}",
                escape(", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))),
            )
        err.print(table)
        for s in ctx.report.stages:
            for note in s.notes:
                err.print(f"{escape(s.stage)}: {escape(note)}")
        if ctx.report.dropped:
            err.print("[dim]every dropped chunk with its reason: --json (report.stages[].dropped)[/]")

    # -- presets / models: what is registered ---------------------------------

    @app.command("presets")
    def presets_cmd(
        as_json: Annotated[bool, typer.Option("--json", help="Print the presets' configs as JSON.")] = False,
    ) -> None:
        """List the presets: name, description, stages and format."""
        import json

        from rich.table import Table

        from contextwright.config import get_preset, list_presets

        if as_json:
            sys.stdout.write(json.dumps({n: get_preset(n) for n in list_presets()}, indent=2) + "\n")
            return
        table = Table(show_lines=False)
        for col in ("preset", "stages", "format", "description"):
            table.add_column(col, no_wrap=col in ("preset", "format"))
        for name, description in list_presets().items():
            config = get_preset(name)
            stages = " → ".join(str(s.get("type")) for s in config.get("stages", []))
            fmt = config.get("format", "xml")
            shown = fmt if isinstance(fmt, str) else str(fmt.get("type"))
            # Plain text: "[n]" in a description is a citation label, not Rich markup.
            table.add_row(escape(name), escape(stages), escape(shown), escape(description))
        Console(highlight=False).print(table)

    @app.command("models")
    def models_cmd(
        as_json: Annotated[bool, typer.Option("--json", help="Print the registry as JSON.")] = False,
    ) -> None:
        """List the model registry: context window, default output, tokenizer."""
        import dataclasses
        import json

        from rich import box
        from rich.table import Table

        from contextwright.budget import list_models

        models = list_models()
        if as_json:
            sys.stdout.write(json.dumps([dataclasses.asdict(m) for m in models], indent=2) + "\n")
            return
        # 80 columns: names and numbers never shrink to "…"; a long tokenizer name folds onto a
        # second line, and the one note (an approximated tokenizer) is a footnote, not a column.
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("model", no_wrap=True)
        table.add_column("window", justify="right", no_wrap=True)
        table.add_column("max output", justify="right", no_wrap=True)
        table.add_column("tokenizer", overflow="fold")
        notes: dict[str, str] = {}
        for m in models:
            mark = ""
            if m.tokenizer_note:
                mark = notes.setdefault(m.tokenizer_note, "*" * (len(notes) + 1))
            table.add_row(m.name, f"{m.context_window:,}", f"{m.max_output:,}", m.tokenizer + mark)
        console = Console(highlight=False)
        console.print(table)
        for note, mark in notes.items():
            console.print(f"{mark} {note}", markup=False)

    # -- serve / inspect (service.py, inspector.py) ---------------------------

    @app.command("serve")
    def serve_cmd(
        host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1).")] = None,
        port: Annotated[int | None, typer.Option(help="Port (default 8000).")] = None,
        workers: Annotated[int | None, typer.Option(help="uvicorn worker processes (default 1).")] = None,
        config: Annotated[
            str | None, typer.Option(help="Service TOML file (else $CONTEXTWRIGHT_CONFIG).")
        ] = None,
        log_level: Annotated[str | None, typer.Option(help="uvicorn log level.")] = None,
    ) -> None:
        """Run the HTTP service (POST /v1/assemble, /metrics, the inspector at /)."""
        import os

        from contextwright.errors import ContextwrightError
        from contextwright.service import ServiceConfig, create_app

        try:
            import uvicorn
        except ImportError:
            fail("the service needs the 'service' extra: pip install 'contextwright[service]'")
        try:
            cfg = ServiceConfig.load(config, host=host, port=port, workers=workers, log_level=log_level)
            if cfg.workers == 1:
                uvicorn.run(
                    create_app(cfg),
                    host=cfg.host,
                    port=cfg.port,
                    log_level=cfg.log_level,
                    access_log=not cfg.access_log,  # the service writes its own (JSON) access log
                )
                return
            create_app(cfg)  # fail here, once, rather than in every worker
        except ContextwrightError as exc:
            fail(str(exc))
        # Worker processes build their app from the import string; the settings travel as
        # CONTEXTWRIGHT_* variables, which ServiceConfig.load reads in each worker.
        os.environ.update(cfg.to_env())
        from contextwright.service.metrics import shared_metrics_dir

        with shared_metrics_dir():  # /metrics sums every worker's values (prometheus multiprocess mode)
            uvicorn.run(
                "contextwright.service:create_app",
                factory=True,
                host=cfg.host,
                port=cfg.port,
                workers=cfg.workers,
                log_level=cfg.log_level,
                access_log=not cfg.access_log,
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
            typer.Option(
                "--item", help="Which query of a query file (0-based; default: the first, said so)."
            ),
        ] = None,
        store: StoreOpt = None,
        db: DbOpt = None,
    ) -> None:
        """Write a self-contained HTML page showing how one context was assembled."""
        from contextwright.errors import ContextwrightError
        from contextwright.inspector import inspection, render_page
        from contextwright.io import read_items

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
            inputs = (
                assembler.pipeline._inputs(job.chunks)[0] if not isinstance(job.chunks, list) else job.chunks
            )
            page = render_page(inspection(ctx, assembler, inputs, options=options))
        except ContextwrightError as exc:
            fail(str(exc))
        try:
            Path(html).write_text(page, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {html!r}: {exc.strerror}")

        err.print(f"[dim]{escape(ctx.report.summary())}[/] → {escape(html)}", highlight=False)

    # -- index: load a corpus into a chunk store --------------------------------

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

        from contextwright.errors import ContextwrightError
        from contextwright.stores import open_store, redact_url

        url = store_flag(store, db) or "sqlite:///contextwright.db"
        if url.lower().startswith("memory://"):
            fail(
                "--store memory:// keeps nothing once the command exits; use sqlite:///path.db or "
                "postgresql://..."
            )
        new_file = new_sqlite_file(url)
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

    # -- batch: many queries, file to file (contextwright.batch) ---------------------

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
        expand: Annotated[
            int | None, typer.Option(help="Add the neighbours index±N (0-3) of each chunk from --store.")
        ] = None,
        errors: Annotated[
            str | None, typer.Option(help="Error rows file (default: OUTPUT.errors.jsonl).")
        ] = None,
        batch_size: Annotated[int, typer.Option(min=1, help="Rows per task.")] = 16,
        out_format: Annotated[
            str | None,
            typer.Option(
                help="jsonl, jsonl.gz or parquet (default: from OUTPUT's name; a directory: jsonl)."
            ),
        ] = None,
        rows_per_file: Annotated[
            int, typer.Option(min=1, help="Directory OUTPUT: the fewest rows per part file.")
        ] = 10_000,
        timings: Annotated[
            bool, typer.Option("--timings", help="Keep per-stage ms in the reports (output then varies).")
        ] = False,
    ) -> None:
        """Assemble every query of a file (locally or on Ray); failed rows go to an errors file."""
        from rich.progress import Progress, TextColumn, TimeElapsedColumn

        from contextwright.batch import BatchSettings, run_batch
        from contextwright.errors import ContextwrightError

        if engine not in ("local", "ray"):
            fail(f"--engine must be local or ray; got {engine!r}.")
        store = store_flag(store, db)
        if expand is not None and store is None:
            fail("--expand needs --store URL (the chunk store to fetch neighbours from).")
        if out_format not in (None, "jsonl", "jsonl.gz", "parquet"):
            fail(f"--out-format must be jsonl, jsonl.gz or parquet; got {out_format!r}.")
        check_budget_and_model(budget, model)
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
        )
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
                stats = run_batch(
                    input,
                    output,
                    engine=engine,  # type: ignore[arg-type]
                    workers=workers,
                    errors=errors,
                    batch_size=batch_size,
                    out_format=out_format,  # type: ignore[arg-type]
                    rows_per_file=rows_per_file,
                    settings=settings,
                    progress=lambda done, failed: bar.update(task, done=done, errors=failed),
                )
        except ContextwrightError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write {output!r}: {exc.strerror or exc}")
        line = (
            f"assembled {stats.rows:,} rows into {output} with {engine} × {stats.workers} "
            f"in {stats.seconds:.2f} s ({stats.per_second:,.1f} rows/s)"
        )
        if stats.errors:
            line += f"; {stats.errors:,} error rows in {stats.errors_path}"
        Console(highlight=False, soft_wrap=True).print(line)

    # -- dedup-corpus: near duplicates over a whole corpus (contextwright.corpus_dedup) --

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
        import json
        import os
        import resource

        from contextwright.corpus_dedup import iter_texts, near_duplicate_pairs
        from contextwright.errors import ContextwrightError

        found: dict[int, tuple[str, str]] = {}

        def reread(positions: set[int]) -> dict[int, str]:
            from contextwright.io import read_records

            for pos, record in enumerate(read_records(corpus, need="chunks", command="dedup-corpus")):
                if pos in positions:
                    found[pos] = (str(record.data.get("id", pos)), record.data["text"])
            return {p: t for p, (_, t) in found.items()}

        try:
            with _progress_bar("dedup-corpus", "chunks hashed") as update:
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
        bands, rows = result.bands
        err.print(
            f"{result.chunks:,} chunks · {result.candidates:,} candidates ({bands} bands × {rows} rows) · "
            f"{len(result.pairs):,} near-duplicate pairs ≥ {threshold} · {len(result.duplicates):,} chunks to drop "
            f"· {result.seconds:.1f} s" + (f" → {out}" if out else ""),
            highlight=False,
            markup=False,
        )
        if stats:
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

    def _progress_bar(label: str, unit: str) -> Any:
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

    def _run_reader(
        result: Any,
        queries: Any,
        strategies: list[str],
        budgets: list[int],
        *,
        url: str,
        model: str | None,
        key_env: str,
        cache: str | None,
        max_tokens: int,
        concurrency: int,
        timeout_s: float,
        tokenizer: str,
        corpus: str | None,
        positions: int | None,
        prior_out: str | None,
    ) -> Any:
        """The reader part of ``eval``: ask the model, attach the answers to the result, write the prior."""
        import dataclasses
        import json
        import os
        from pathlib import Path

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from contextwright.eval.reader import Reader, default_cache_path, evaluate_reader
        from contextwright.eval.runner import open_corpus_store

        if not model:
            fail("--reader needs --reader-model, the model name the endpoint expects (e.g. gpt-4o-mini).")
        if prior_out is not None and positions is None:
            fail("--prior-out writes the curve of the position sweep: pass --positions K too (e.g. 5).")
        key = os.environ.get(key_env) if key_env else None
        resources = {"store": open_corpus_store(corpus)} if corpus else {}
        with (
            Reader(
                url,
                model=model,
                api_key=key,
                cache=cache or default_cache_path(),
                max_tokens=max_tokens,
                max_concurrency=concurrency,
                timeout_s=timeout_s,
            ) as rd,
            Progress(
                TextColumn("reader"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("replies"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            ) as bar,
        ):
            task = bar.add_task("reader", total=None)
            try:
                measured = evaluate_reader(
                    queries,
                    strategies,
                    budgets,
                    reader=rd,
                    tokenizer=tokenizer,
                    resources=resources,
                    positions=positions,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
            except KeyboardInterrupt:
                err.print(
                    f"interrupted: the replies so far are cached in {rd.cache_path}; "
                    "run the same command again to resume.",
                    highlight=False,
                )
                raise typer.Exit(130) from None
        failed = measured.meta.get("failed", 0)
        if failed:
            err.print(
                f"[yellow]reader: {failed} request(s) failed; they are listed with their errors in the JSON "
                "and left out of the accuracies.[/]",
                highlight=False,
            )
        if prior_out is not None and measured.sweep is not None:
            if not any(measured.sweep.answered):
                fail("the position sweep got no replies, so there is no prior to write.")
            Path(prior_out).write_text(
                json.dumps(measured.sweep.prior_dict(), indent=1) + "\n", encoding="utf-8"
            )
            err.print(f"wrote {prior_out} (use it with --prior)", highlight=False)
        return dataclasses.replace(result, reader=measured)

    def warnings_once() -> Any:
        """A handler on the ``contextwright`` logger that prints each distinct warning once on stderr.

        A stage warns once per call; over hundreds of queries, each distinct warning is shown once.
        The caller removes it (``logging.getLogger("contextwright").removeHandler``).
        """
        import logging

        seen: set[tuple[str, str]] = set()

        class Once(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                key = (record.name, record.getMessage())
                if key not in seen:
                    seen.add(key)
                    err.print(f"[yellow]warning:[/] {escape(key[1])} [dim](shown once)[/]", highlight=False)

        handler = Once(logging.WARNING)
        logging.getLogger("contextwright").addHandler(handler)
        return handler

    def print_uncut(table: Any) -> None:
        """Print a table on stdout; wider than the terminal (or a pipe's 80 columns) rather than cut."""
        out = Console(highlight=False)
        needed = out.measure(table, options=out.options.update_width(1_000)).maximum
        if out.width < needed:  # a pipe or a narrow terminal: never cut numbers to "…"
            out = Console(highlight=False, width=needed)
        out.print(table)

    # -- eval (contextwright.eval) ---------------------------------------------

    @app.command("eval")
    def eval_cmd(
        data: Annotated[
            str, typer.Argument(help="JSONL(.gz) of queries with labelled chunks (has_answer) and answers.")
        ],
        budget: Annotated[
            str, typer.Option("--budget", "-b", help="Budgets in tokens, comma-separated.")
        ] = "300,500,1000,1500",
        strategy: Annotated[
            str | None,
            typer.Option(
                "--strategy", "-s", help="naive, greedy, preset names, comma-separated (default: all)."
            ),
        ] = None,
        config: Annotated[
            list[str] | None,
            typer.Option("--config", "-c", help="A .toml/.json config to evaluate too (repeatable)."),
        ] = None,
        limit: Annotated[int | None, typer.Option(help="Evaluate only the first N queries.")] = None,
        workers: Annotated[int, typer.Option(help="Worker processes (results are identical to 1).")] = 1,
        engine: Annotated[
            str, typer.Option(help="local (processes) or ray (Ray Data actors; RAY_ADDRESS picks a cluster).")
        ] = "local",
        tokenizer: Annotated[str, typer.Option(help="Tokenizer that defines the budget.")] = "cl100k_base",
        prior: Annotated[
            str | None,
            typer.Option(help="Positional prior .json/.toml (default: Liu et al. 2024, GPT-3.5, 20 docs)."),
        ] = None,
        corpus: Annotated[
            str | None,
            typer.Option(help="Chunk corpus JSONL(.gz): opens a SQLite store for strategies that expand."),
        ] = None,
        json_out: Annotated[
            str | None, typer.Option("--json", help="Write the full results as JSON here.")
        ] = None,
        html_out: Annotated[
            str | None, typer.Option("--html", help="Write a self-contained HTML report here.")
        ] = None,
        reader: Annotated[
            str | None,
            typer.Option(
                help="OpenAI-compatible API root of a reader model (e.g. http://127.0.0.1:8080/v1): "
                "the model answers each question from each strategy's context, plus closed-book and oracle."
            ),
        ] = None,
        reader_model: Annotated[
            str | None, typer.Option(help="The reader's model name (required with --reader).")
        ] = None,
        reader_key_env: Annotated[
            str,
            typer.Option(help="Environment variable holding the reader's API key (empty: send none)."),
        ] = "OPENAI_API_KEY",
        reader_cache: Annotated[
            str | None,
            typer.Option(
                help="SQLite file of cached replies (default: reader.sqlite in ~/.cache/contextwright)."
            ),
        ] = None,
        reader_max_tokens: Annotated[int, typer.Option(help="Most tokens per answer.")] = 32,
        reader_concurrency: Annotated[int, typer.Option(help="Reader requests in flight at once.")] = 4,
        reader_timeout: Annotated[float, typer.Option(help="Timeout of one reader request (s).")] = 120.0,
        positions: Annotated[
            int | None,
            typer.Option(
                help="With --reader: the position sweep with K chunks (answer chunk at each of K positions)."
            ),
        ] = None,
        prior_out: Annotated[
            str | None,
            typer.Option(help="With --positions: write the measured curve here as a prior file for --prior."),
        ] = None,
        wide: Annotated[
            bool,
            typer.Option(
                "--wide",
                help="Print every metric and reader column (default: the headline ones, 80 columns).",
            ),
        ] = False,
    ) -> None:
        """Measure the context assembly gap: answer retention, position, redundancy, budget use, latency.

        With --reader, a real model answers the questions: accuracy with 95 % intervals per strategy, the delta vs naive with a paired test, tokens sent and latency; replies are cached on disk, so an interrupted run resumes where it stopped.
        """  # one line per paragraph: the help reflows it to the terminal's width
        import logging

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from contextwright.errors import ContextwrightError
        from contextwright.eval import default_strategies, evaluate, load_queries
        from contextwright.eval.report import render_table, to_json, write_html

        try:
            budgets = [int(b) for b in _csv(budget)]
        except ValueError:
            fail(f"--budget must be comma-separated integers, e.g. 300,500,1000; got {budget!r}.")
        if engine not in ("local", "ray"):
            fail(f"--engine must be local or ray; got {engine!r}.")
        names: list[str] = _csv(strategy) if strategy else default_strategies()
        handler = warnings_once()
        try:
            queries = load_queries(data, limit=limit)
            with Progress(
                TextColumn("eval"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("queries"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
                disable=not err.is_terminal,  # a bar on a terminal; nothing extra when piped
            ) as bar:
                task = bar.add_task("eval", total=len(queries))
                result = evaluate(
                    queries,
                    [*names, *(config or [])],
                    budgets,
                    tokenizer=tokenizer,
                    prior=prior,
                    corpus=corpus,
                    workers=workers,
                    engine=engine,  # type: ignore[arg-type]
                    progress=lambda done, total: bar.update(task, completed=done),
                )
            if reader is not None:
                result = _run_reader(
                    result,
                    queries,
                    [*names, *(config or [])],
                    budgets,
                    url=reader,
                    model=reader_model,
                    key_env=reader_key_env,
                    cache=reader_cache,
                    max_tokens=reader_max_tokens,
                    concurrency=reader_concurrency,
                    timeout_s=reader_timeout,
                    tokenizer=tokenizer,
                    corpus=corpus,
                    positions=positions,
                    prior_out=prior_out,
                )
            elif positions is not None or prior_out is not None:
                fail(
                    "--positions and --prior-out need a reader model: pass --reader URL --reader-model NAME."
                )
            for name, reason in result.skipped.items():
                err.print(f"[yellow]skipped {escape(name)}:[/] {escape(reason)}", highlight=False)
            for name, note in result.notes.items():
                err.print(f"[yellow]note {escape(name)}:[/] {escape(note)}", highlight=False)
            print_uncut(render_table(result, wide=wide))
            if result.reader is not None:
                from contextwright.eval.report import render_reader_table

                print_uncut(render_reader_table(result.reader, wide=wide))
            meta = {"data": data}
            if json_out:
                to_json(result, json_out, meta=meta)
                err.print(f"wrote {json_out}", highlight=False)
            if html_out:
                write_html(result, html_out, meta=meta)
                err.print(f"wrote {html_out}", highlight=False)
        except ContextwrightError as exc:
            fail(str(exc))
        finally:
            logging.getLogger("contextwright").removeHandler(handler)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``contextwright`` script."""
    if typer is None:
        _missing()
    return app(args=argv)
