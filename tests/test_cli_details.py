"""CLI details a new user sees (issue 24): where output lines end, what is said once, flag names."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from contextwright.cli import app

from ._pty import on_a_terminal

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
runner = CliRunner()
SUMMARY = re.compile(r"\d+ → \d+ chunks? · [\d,]+ → [\d,]+ tokens \(budget [\d,]+(?:; [\d,]+ unused)?\)")


def test_the_summary_starts_its_own_line_after_the_context_on_a_terminal() -> None:
    shown = on_a_terminal(["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", "300"])
    lines = shown.splitlines()
    summary = [i for i, line in enumerate(lines) if SUMMARY.search(line)]
    assert len(summary) == 1, shown
    assert SUMMARY.fullmatch(lines[summary[0]].strip()), shown  # not glued onto the context's last line
    assert "Würzburg." in lines[summary[0] - 1]  # the context's last line, ending where it should


def test_the_context_on_stdout_ends_with_exactly_one_newline() -> None:
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", "300"])
    assert out.exit_code == 0, out.output
    assert out.stdout.endswith("Würzburg.\n") and not out.stdout.endswith("\n\n")
    assert SUMMARY.search(out.stderr) and not SUMMARY.search(out.stdout)


def test_report_says_the_summary_once() -> None:
    args = ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", "300", "--report"]
    out = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert len(SUMMARY.findall(out.stderr)) == 1, out.stderr
    assert "exact_dedup" in out.stderr  # the table is still there
    shown = on_a_terminal(args)
    assert len(SUMMARY.findall(shown)) == 1, shown
    as_json = runner.invoke(app, [*args, "--json"])
    assert len(SUMMARY.findall(as_json.stderr)) == 1, as_json.stderr
