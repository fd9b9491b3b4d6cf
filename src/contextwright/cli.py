"""The ``contextwright`` command line (Typer + Rich): thin over the library.

Each command loads its input, builds what the library needs, calls one
library function and prints the result. Bad input exits with code 2 and a
readable message.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, NoReturn

try:
    import typer
    from rich.console import Console
except ImportError:  # pragma: no cover - exercised only without the extra
    typer = None  # type: ignore[assignment]


def _missing() -> None:
    sys.stderr.write("The contextwright CLI needs the 'cli' extra: pip install 'contextwright[cli]'\n")
    raise SystemExit(1)


if typer is not None:
    app = typer.Typer(
        name="contextwright",
        help="Context assembly for RAG: budgets, dedup, ordering, citations.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    err = Console(stderr=True)

    @app.callback()
    def _root() -> None:
        """Context assembly for RAG: budgets, dedup, ordering, citations."""

    # -- commands are added below, one section per command ------------------

    def fail(message: str) -> NoReturn:
        """Print a readable error and exit with code 2 (bad input or options)."""
        err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
        raise typer.Exit(2)

    def _csv(value: str | None) -> list[str]:
        return [v.strip() for v in value.split(",") if v.strip()] if value else []

    @app.command("assemble")
    def assemble_cmd(
        file: Annotated[str, typer.Argument(help="JSON/JSONL(.gz) of chunks or of queries; '-' for stdin.")] = "-",
        query: Annotated[str | None, typer.Option("--query", "-q", help="The query (default: from the input).")] = None,
        model: Annotated[str | None, typer.Option(help="Model name: sets tokenizer and zone budget.")] = None,
        budget: Annotated[int | None, typer.Option(help="Documents budget in tokens.")] = None,
        preset: Annotated[str, typer.Option(help="Preset name or path to a .toml/.json config.")] = "qa",
        format: Annotated[str | None, typer.Option("--format", "-f", help="minimal, numbered, xml, grouped, sources, markdown.")] = None,
        order: Annotated[str | None, typer.Option(help="relevance, chronological, lost_in_the_middle, bookend, document, auto.")] = None,
        tokenizer: Annotated[str | None, typer.Option(help="Tokenizer: cl100k_base, o200k_base, hf:NAME, path/tokenizer.json, chars.")] = None,
        output_tokens: Annotated[int | None, typer.Option(help="Output zone (default: the model's max output).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON (JSONL for several queries).")] = False,
        report: Annotated[bool, typer.Option("--report", help="Print the per-stage report to stderr.")] = False,
        limit: Annotated[int | None, typer.Option(help="Assemble at most this many queries.")] = None,
    ) -> None:
        """Assemble the context for chunks (or for each query of a query file)."""
        import json

        from contextwright.assembler import Assembler
        from contextwright.errors import ContextwrightError
        from contextwright.io import read_items

        out = Console(highlight=False, soft_wrap=True)
        try:
            assembler = Assembler(
                preset,
                model=model,
                budget=budget,
                tokenizer=tokenizer,
                format=format,
                order=order,
                output_tokens=output_tokens,
            )
            for n, item in enumerate(read_items(file, limit=limit)):
                q = query if query is not None else item.query
                ctx = assembler.assemble(q, item.chunks)
                if as_json:
                    data = ctx.to_dict()
                    if item.id:
                        data = {"id": item.id, **data}
                    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
                else:
                    if item.id:
                        out.print(f"{'' if n == 0 else chr(10)}# {item.id} · {q}", markup=False)
                    sys.stdout.write(ctx.text + "\n")
                    sys.stdout.flush()
                    err.print(f"[dim]{ctx.report.summary()}[/]")
                if report:
                    print_report(ctx)
        except ContextwrightError as exc:
            fail(str(exc))

    def print_report(ctx: Any) -> None:
        """The per-stage report as a Rich table on stderr."""
        from rich.table import Table

        table = Table(title=ctx.report.summary(), title_justify="left")
        for col in ("stage", "chunks", "tokens", "ms", "dropped / changed"):
            table.add_column(col, justify="right" if col in ("ms",) else "left")
        for s in ctx.report.stages:
            drops = ", ".join(f"{d.chunk_id}: {d.reason}" + (f" → {d.related}" if d.related else "") for d in s.dropped)
            changes = ", ".join(f"{c.chunk_id}: {c.action}" for c in s.changed)
            table.add_row(
                s.stage,
                f"{s.chunks_in} → {s.chunks_out}",
                f"{s.tokens_in} → {s.tokens_out}",
                f"{s.ms:.2f}",
                "; ".join(x for x in (drops, changes) if x),
            )
        err.print(table)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``contextwright`` script."""
    if typer is None:
        _missing()
    return app(args=argv)
