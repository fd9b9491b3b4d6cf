"""Whether this program can start spawned worker processes: the check behind ``workers > 1``.

A spawned worker imports the main module again. Code read from stdin (``python - <<EOF``) cannot
be imported again, and a script without an ``if __name__ == "__main__":`` guard runs its whole
body again in every worker, which starts workers of its own: the pool then restarts its workers
forever. :func:`spawn_blocker` says why, before any worker starts, so the caller can run in its
own process instead.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

__all__ = ["spawn_blocker"]

_GUARD = re.compile(r"""__name__\s*==\s*['"]__main__['"]|['"]__main__['"]\s*==\s*__name__""")


def spawn_blocker() -> str | None:
    """Why spawned workers cannot start from this program's main module, or ``None`` when they can.

    ``None`` for an interactive session or ``python -c`` (no main file: workers do not import
    one), for ``python -m package`` (a ``__main__`` module is never run again), and for a script
    with a main guard.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None:
        return None
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", "") or ""
    if name == "__main__" or name.endswith(".__main__"):
        return None
    file = Path(str(getattr(spec, "origin", None) or path))
    if str(path).startswith("<") or not file.is_file():
        return f"the main program was read from {path} and cannot be imported again by worker processes"
    try:
        source = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if _GUARD.search(source) is None:
        return (
            f'{file.name} has no `if __name__ == "__main__":` guard, so every worker process '
            "would run it again"
        )
    return None
