"""The tables the docs show are what the commands they name print now: a doc table that drifts fails here.

A table in docs/*.md that a command prints is preceded by ``<!-- printed by: COMMAND -->``; this test
runs COMMAND (``../shared/data`` is the shared data) and compares the printed table with the fenced
block under the marker, cell by cell. Latency columns (a header ending in ``ms``) vary from run to
run and are not compared. Regenerate a block by running its command (``COLUMNS=200``) and pasting
the table.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CONTEXTWRIGHT_SHARED_DATA", REPO.parent / "shared" / "data"))
MARKER = re.compile(
    r"<!-- printed by: (?P<command>contextwright [^>]+?) -->\n+```text\n(?P<table>.*?)\n```", re.S
)
BORDER = re.compile(r"^[┏┓┡┩├┤└┘━─┳╇┼┴┻┃│ ]*$")


def _blocks() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted((REPO / "docs").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        for m in MARKER.finditer(text):
            line = text[: m.start()].count("\n") + 1
            found.append((f"{path.relative_to(REPO)}:{line}", m["command"], m["table"]))
    return found


def _cells(table: str) -> list[list[str]]:
    """The rows as lists of stripped cells (latency columns blanked), borders left out, the footer kept."""
    rows = [line.rstrip() for line in table.splitlines() if line.strip() and not BORDER.fullmatch(line)]
    split = [
        [c.strip() for c in re.split(r"[┃│]", r)[1:-1]] if r.lstrip()[:1] in "┃│" else [r.strip()]
        for r in rows
    ]
    header = next((r for r in split if "strategy" in r), [])
    timing = {i for i, h in enumerate(header) if h.endswith("ms")}
    return [[("–" if i in timing and r is not header else c) for i, c in enumerate(r)] for r in split]


BLOCKS = _blocks()


def test_the_docs_name_their_tables_commands() -> None:
    assert any(where.startswith("docs/eval.md") for where, _, _ in BLOCKS)


@pytest.mark.parametrize(("where", "command", "table"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_a_doc_table_is_what_its_command_prints(where: str, command: str, table: str) -> None:
    if "../shared/data" in command and not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    args = command.replace("../shared/data", str(SHARED_DATA)).split()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
    cli = "from contextwright.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", cli, *args[1:]], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _cells(done.stdout) == _cells(table), f"{where} drifted; `{command}` prints now:\n{done.stdout}"
