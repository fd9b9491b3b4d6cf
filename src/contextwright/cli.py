"""The ``contextwright`` command line (Typer + Rich): thin over the library.

Each command loads its input, builds what the library needs, calls one
library function and prints the result. Bad input exits with code 2 and a
readable message.
"""

from __future__ import annotations

import sys
from typing import Any

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

    # -- commands are added below, one section per command ------------------


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``contextwright`` script."""
    if typer is None:
        _missing()
    return app(args=argv)
