"""The preset ``frugal`` is accepted everywhere a preset name is (issue 23).

The library, the CLI (assemble with --report, presets, eval --strategy, batch), the service
(with its stop settings validated), a framework adapter and a TOML config file.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextwright import Assembler, pipeline_from_config
from contextwright.cli import app

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "nq_bm25_dev300.jsonl.gz"
runner = CliRunner()


@pytest.fixture(scope="module")
def queries() -> list[dict[str, Any]]:
    if not DEV.exists():
        pytest.skip("shared data not found")
    with gzip.open(DEV, "rt", encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(3)]


def test_library(queries: list[dict[str, Any]]) -> None:
    q = queries[0]
    ctx = Assembler("frugal", budget=1000).assemble(q["question"], q["chunks"])
    assert ctx.tokens < 1000
    assert any(d.reason == "below_relevance" for d in ctx.report.dropped)
    assert "relevance_stop" in [s.stage for s in ctx.report.stages]


def test_cli_assemble_report_names_the_stop_and_the_tokens_left(
    queries: list[dict[str, Any]], tmp_path: Path
) -> None:
    src = tmp_path / "q.json"
    src.write_text(json.dumps(queries[0]), encoding="utf-8")
    result = runner.invoke(app, ["assemble", str(src), "--preset", "frugal", "--budget", "1000", "--report"])
    assert result.exit_code == 0, result.output
    assert "relevance_stop" in result.output and "below_relevance" in result.output
    assert "stopped after" in result.output and "unused)" in result.output


def test_cli_presets_lists_frugal() -> None:
    result = runner.invoke(app, ["presets"])
    assert result.exit_code == 0 and "frugal" in result.stdout


def test_cli_eval_strategy_frugal(queries: list[dict[str, Any]], tmp_path: Path) -> None:
    src = tmp_path / "q.jsonl"
    src.write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    result = runner.invoke(app, ["eval", str(src), "--budget", "1000", "--strategy", "naive,frugal"])
    assert result.exit_code == 0, result.output
    assert "frugal" in result.stdout


def test_cli_batch_with_frugal(queries: list[dict[str, Any]], tmp_path: Path) -> None:
    src = tmp_path / "q.jsonl"
    src.write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["batch", str(src), str(out), "--workers", "1", "--budget", "1000", "--preset", "frugal"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3 and all(r["tokens"] < 1000 for r in rows)


def test_service_preset_and_validated_stop_settings(queries: list[dict[str, Any]]) -> None:
    from fastapi.testclient import TestClient

    from contextwright.service import create_app

    client = TestClient(create_app())
    q = queries[0]
    ok = client.post(
        "/v1/assemble",
        json={"query": q["question"], "chunks": q["chunks"], "budget": 1000, "preset": "frugal"},
    )
    assert ok.status_code == 200, ok.text
    assert ok.json()["tokens"] < 1000
    bad = client.post(
        "/v1/assemble",
        json={
            "query": "q",
            "chunks": [{"text": "a"}],
            "budget": 100,
            "config": {"stages": [{"type": "relevance_stop", "min_relative": 7}, {"type": "token_budget"}]},
        },
    )
    assert bad.status_code == 422
    assert "min_relative" in bad.text


def test_langchain_adapter_takes_frugal(queries: list[dict[str, Any]]) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from contextwright.adapters.langchain import ContextwrightCompressor

    q = queries[0]
    docs = [
        Document(page_content=c["text"], metadata={"relevance_score": c["score"]}, id=c["id"])
        for c in q["chunks"]
    ]
    out = ContextwrightCompressor(preset="frugal", budget=1000).compress_documents(docs, q["question"])
    full = ContextwrightCompressor(preset="qa", budget=1000).compress_documents(docs, q["question"])
    assert 0 < len(out) < len(full)


def test_toml_config_names_frugal(tmp_path: Path) -> None:
    toml = tmp_path / "mine.toml"
    toml.write_text('preset = "frugal"\nformat = "numbered"\n', encoding="utf-8")
    pipeline = pipeline_from_config(toml)
    assert "relevance_stop" in [s.name for s in pipeline.stages] and pipeline.format.name == "numbered"
