"""What a new user trips on (issue 34): each mistake through the real CLI, and the message it gets.

docs/cli.md "Common mistakes" shows these messages.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
runner = CliRunner()
WIDE = {"COLUMNS": "200"}


def one_line(text: str) -> str:
    return " ".join(text.split())


def query_file(tmp_path: Path, n: int = 3) -> Path:
    """A small query file with labelled chunks, the shape eval and assemble read."""
    chunks = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    rows = [
        {
            "id": f"q-{i}",
            "question": "who discovered x-rays?",
            "answers": ["Röntgen"],
            "chunks": [{**c, "has_answer": "Röntgen" in c["text"]} for c in chunks],
        }
        for i in range(n)
    ]
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# -- 1. an output path that cannot be written fails before any work -----------------------


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "{queries}", "-s", "naive", "-b", "300", "--json", "{missing}/eval.json"],
        ["eval", "{queries}", "-s", "naive", "-b", "300", "--html", "{missing}/eval.html"],
        ["inspect", "{example}", "-q", "x", "--budget", "300", "--html", "{missing}/page.html"],
        ["batch", "{queries}", "{missing}/out.jsonl", "--budget", "300", "--workers", "1"],
        ["dedup-corpus", "{example}", "--out", "{missing}/pairs.jsonl"],
        ["index", "{corpus}", "--store", "sqlite:///{missing}/c.db"],
    ],
    ids=["eval --json", "eval --html", "inspect --html", "batch", "dedup-corpus --out", "index --store"],
)
def test_an_unwritable_output_fails_before_any_work(tmp_path: Path, args: list[str]) -> None:
    names = {
        "queries": str(query_file(tmp_path)),
        "example": str(EXAMPLE),
        "corpus": str(REPO / "tests" / "fixtures" / "small_corpus.jsonl"),
        "missing": str(tmp_path / "nodir"),
    }
    start = time.perf_counter()
    out = runner.invoke(app, [a.format(**names) for a in args], env=WIDE)
    assert out.exit_code == 2, out.output
    assert out.stdout == ""  # no table printed, nothing assembled
    message = one_line(out.stderr)
    assert message.startswith(f"error: cannot write '{names['missing']}/"), message
    assert "does not exist; create it first (mkdir -p" in message
    assert time.perf_counter() - start < 10
    assert not (tmp_path / "nodir").exists()


def test_an_output_that_is_a_folder_is_named(tmp_path: Path) -> None:
    out = runner.invoke(
        app,
        ["eval", str(query_file(tmp_path)), "-s", "naive", "-b", "300", "--json", str(tmp_path)],
        env=WIDE,
    )
    assert out.exit_code == 2
    assert f"cannot write '{tmp_path}' (--json): it is a folder" in one_line(out.stderr)
