"""The reader table of ``contextwright eval --reader`` reads at 80 columns, on a terminal and in a file.

The reader is a scripted chat-completions server on 127.0.0.1 (real HTTP), as in test_reader.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

from contextwright.cli import app

from .._pty import on_a_terminal
from .test_reader import ChatServer, _queries, reading_model

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
HEADLINE = ("strategy", "budget", "n", "acc%", "95% CI", "Δ naive", "Δ 95% CI", "p")
WIDE_ONLY = ("EM%", "cite%", "cite prec%", "p50 ms")


@pytest.fixture(scope="module")
def reader_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A query file, a scripted reader and its filled cache: every later run reads from the cache."""
    tmp = tmp_path_factory.mktemp("reader_table")
    data = tmp / "q.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {"id": q.id, "question": q.question, "answers": list(q.answers), "chunks": list(q.chunks)}
            )
            + "\n"
            for q in _queries()
        ),
        encoding="utf-8",
    )
    server = ChatServer(reading_model)
    args = ["eval", str(data), "-s", "naive,qa,tight", "-b", "200,1000", "--reader", server.base_url]
    args += ["--reader-model", "m", "--reader-key-env", "", "--reader-cache", str(tmp / "c.sqlite")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    yield args
    server.close()


def _rows(text: str) -> list[str]:
    """The reader table's lines (from its title down)."""
    lines = ANSI.sub("", text).replace("\r\n", "\n").splitlines()
    start = next(i for i, line in enumerate(lines) if "Reader accuracy" in line)
    return lines[start:]


def _check_headline(text: str, *, wide: bool) -> None:
    table = _rows(text)
    assert max(len(line) for line in table) <= 80 or wide, "\n".join(table)
    body = "\n".join(table)
    # no cell cut to an ellipsis (an interval's "…" sits between two signed numbers)
    assert not re.search(r"…(?![+\-−]\d)", body), body
    header = next(line for line in table if "strategy" in line)
    for name in HEADLINE:
        assert name in body, (name, body)
    for name in WIDE_ONLY:
        assert (name in header) == wide, (name, header)
    for name in ("naive", "qa", "tight", "closed-book", "oracle"):
        assert any(line.replace("│", " ").split()[:1] == [name] for line in table), name
    # the cells are whole numbers: an accuracy with one decimal, an interval as low–high
    assert re.search(r"\d+\.\d–\d+\.\d", body), body


def test_reader_table_reads_at_80_columns_when_piped_to_a_file(reader_run: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "80"}
    code = "from contextwright.cli import main; main()"
    with out.open("w") as fh:
        proc = subprocess.run(
            [sys.executable, "-c", code, *reader_run], stdout=fh, stderr=subprocess.PIPE, env=env
        )
    assert proc.returncode == 0, proc.stderr
    _check_headline(out.read_text(encoding="utf-8"), wide=False)


def test_reader_table_reads_at_80_columns_on_a_terminal(reader_run: list[str]) -> None:
    text = on_a_terminal(reader_run, cwd=None, timeout=120)
    _check_headline(text, wide=False)


def test_wide_adds_every_reader_column(reader_run: list[str]) -> None:
    out = CliRunner().invoke(app, [*reader_run, "--wide"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    _check_headline(out.stdout, wide=True)


def test_the_widest_numbers_still_fit_80_columns() -> None:
    """Every built-in name and the widest cells (n 1,000, −100.0…+100.0, a budget of 10,000)."""
    from rich.console import Console

    from contextwright.assembly.presets import list_presets
    from contextwright.eval.reader import ReaderResult, ReaderSummary
    from contextwright.eval.report import render_reader_table

    def summary(name: str, budget: int) -> ReaderSummary:
        return ReaderSummary(
            strategy=name, budget=budget, queries=1000, answered=1000, failed=1000, accuracy=1.0,
            accuracy_low=0.999, accuracy_high=1.0, exact=1.0, delta=-1.0, delta_low=-1.0, delta_high=1.0,
            p_value=1.2e-19, paired=1000, cite_share=1.0, cite_precision=1.0, bare_share=1.0, tokens_mean=10_000.0,
            prompt_tokens_mean=None, latency_p50_ms=12_345.6, latency_p95_ms=None,
        )  # fmt: skip

    names = ["naive", "greedy", *list_presets(), "closed-book", "oracle"]
    reader = ReaderResult(answers=(), summaries=tuple(summary(n, 10_000) for n in names), meta={})
    console = Console(width=80, record=True, file=open(os.devnull, "w"), color_system=None)  # noqa: SIM115
    console.print(render_reader_table(reader, wide=False))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert "<0.001" in text and "-100.0…+100.0" in text and "10000" in text
    assert not re.search(r"…(?![+\-−]\d)", text), text
