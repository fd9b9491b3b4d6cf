"""``contextwright presets`` and ``contextwright models``: what the library knows."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from contextwright.cli.base import (
    app,
)
from contextwright.cli.output import print_table


@app.command("presets")
def presets_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print the presets' configs as JSON.")] = False,
) -> None:
    """List the presets: name, description, stages and format."""
    import json

    from rich.table import Table

    from contextwright.assembly.presets import get_preset, list_presets

    if as_json:
        sys.stdout.write(json.dumps({n: get_preset(n) for n in list_presets()}, indent=2) + "\n")
        return
    table = Table(show_lines=False)
    for col in ("preset", "stages", "format", "description"):
        # a long word (exact/overlap/containment) folds onto the next line rather than end in "…"
        table.add_column(col, no_wrap=col in ("preset", "format"), overflow="fold")
    for name, description in list_presets().items():
        config = get_preset(name)
        stages = " → ".join(str(s.get("type")) for s in config.get("stages", []))
        fmt = config.get("format", "xml")
        shown = fmt if isinstance(fmt, str) else str(fmt.get("type"))
        # Plain text: "[n]" in a description is a citation label, not Rich markup.
        table.add_row(escape(name), escape(stages), escape(shown), escape(description))
    print_table(table)


@app.command("models")
def models_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print the registry as JSON.")] = False,
) -> None:
    """List the model registry: context window, default output, tokenizer."""
    import dataclasses
    import json

    from rich import box
    from rich.table import Table

    from contextwright.tokens.zones import list_models

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
    print_table(table, console=console)
    for note, mark in notes.items():
        console.print(f"{mark} {note}", markup=False)
