"""Input readers cap what a file may expand to (issue 26, finding 6).

A 1.5 MB gzip expanding to 1.5 GB gave a MemoryError traceback. A record (a JSON Lines line) and
a whole JSON document are capped; past a cap the reader names the file, the limit and the fix,
and the CLI exits 2. The caps are lowered here so the bombs stay small and fast.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.core.errors import InputError
from contextwright.inputs.readers import read_records

runner = CliRunner()


def _bomb(path: Path, *, megabytes: int, newline_every: int | None = None) -> Path:
    """A gzip of ``megabytes`` MB of one byte (streamed: never all in memory)."""
    block = b"0" * (1 << 20)
    if newline_every:
        block = (b"0" * (newline_every - 1) + b"\n") * ((1 << 20) // newline_every)
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(b'{"text": "')
        for _ in range(megabytes):
            fh.write(block)
    return path


def test_a_line_over_the_record_cap_is_refused(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.jsonl.gz", megabytes=8)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(InputError, match=r"bomb\.jsonl\.gz.*1,048,576.*CONTEXTWRIGHT_MAX_RECORD_BYTES"):
        list(read_records(bomb, max_record_bytes=1 << 20))


def test_a_whole_document_over_the_document_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "array.json.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"[" + b'{"text": "x"},\n' * 200_000 + b'{"text": "y"}]')
    with pytest.raises(InputError, match=r"array\.json\.gz.*CONTEXTWRIGHT_MAX_DOCUMENT_BYTES"):
        list(read_records(path, max_document_bytes=1 << 20))
    assert len(list(read_records(path))) == 200_001  # the default cap takes it


def test_the_cli_exits_2_with_the_fix_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = _bomb(tmp_path / "bomb.jsonl.gz", megabytes=8)
    monkeypatch.setenv("CONTEXTWRIGHT_MAX_RECORD_BYTES", str(1 << 20))
    result = runner.invoke(app, ["assemble", str(bomb), "--budget", "100"])
    assert result.exit_code == 2, result.output
    assert "CONTEXTWRIGHT_MAX_RECORD_BYTES" in result.output and "Traceback" not in result.output


def test_many_short_lines_stream_under_the_caps(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(5000):
            fh.write(f'{{"id": "c{i}", "text": "chunk {i}"}}\n')
    assert len(list(read_records(path, max_record_bytes=100, max_document_bytes=1000))) == 5000
