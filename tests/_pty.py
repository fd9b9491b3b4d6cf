"""Run the real ``contextwright`` CLI under a pseudo-terminal: what a user at an 80-column terminal sees.

One helper for every test that needs a TTY (Rich shows bars and colours only on one):
``on_a_terminal`` puts stdout and stderr on the terminal; ``with_tty_stderr`` puts only
stderr there and pipes stdout, as in ``contextwright ... > out.jsonl``.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CLI = "from contextwright.cli import main; main()"


def _run(args: list[str], *, cwd: Path | None, stdout_on_tty: bool, timeout: float) -> tuple[bytes, bytes]:
    """Run the CLI with stderr (and stdout, if asked) on a pseudo-terminal; (piped stdout, TTY bytes)."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "80", "LINES": "50", "TERM": "xterm"}
    stdout: int | IO[bytes] = slave if stdout_on_tty else subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-c", CLI, *args], stdout=stdout, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    tty = b""
    while True:  # until the child closes the terminal (EOF, or EIO on Linux)
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        tty += chunk
    piped, _ = proc.communicate(timeout=timeout)
    os.close(master)
    assert proc.returncode == 0, tty.decode("utf-8", errors="replace")
    return piped or b"", tty


def on_a_terminal(args: list[str], *, cwd: Path | None = REPO, timeout: float = 60) -> str:
    """Stdout and stderr on one pseudo-terminal (80 columns): the text the user sees, colours removed."""
    _, tty = _run(args, cwd=cwd, stdout_on_tty=True, timeout=timeout)
    return ANSI.sub("", tty.decode("utf-8", errors="replace")).replace("\r\n", "\n")


def with_tty_stderr(args: list[str], cwd: Path) -> tuple[bytes, bytes]:
    """Stderr on a pseudo-terminal and stdout on a pipe; (stdout bytes, the raw bytes the terminal got)."""
    return _run(args, cwd=cwd, stdout_on_tty=False, timeout=60)
