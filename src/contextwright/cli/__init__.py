"""The ``contextwright`` command line (Typer + Rich): thin over the library.

Each command loads its input, builds what the library needs, calls one
library function and prints the result. Bad input exits with code 2 and a
readable message.

One module per command family: ``base`` (the app, shared options and
errors, building the assembler), ``output`` (what several commands print),
``assemble``, ``info`` (``presets``, ``models``), ``serve``, ``inspector``
(``inspect``), ``index``, ``batch`` (``batch``, ``dedup-corpus``) and ``eval``.
Importing them registers their commands, in the order ``--help`` lists them.
"""

from __future__ import annotations

import sys
from typing import Any

try:
    import typer
except ImportError:  # pragma: no cover - exercised only without the extra
    typer = None  # type: ignore[assignment]

__all__ = ["app", "main"]


def _missing() -> None:
    sys.stderr.write("The contextwright CLI needs the 'cli' extra: pip install 'contextwright[cli]'\n")
    raise SystemExit(1)


if typer is not None:
    import importlib

    # Each module registers its commands when imported: this order is the order of --help.
    _FAMILIES = ("assemble", "ask", "info", "serve", "inspector", "index", "batch", "eval", "fit")
    for _family in _FAMILIES:
        importlib.import_module(f"contextwright.cli.{_family}")
    from contextwright.cli.base import app


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``contextwright`` script."""
    if typer is None:
        _missing()
    return app(args=argv)
