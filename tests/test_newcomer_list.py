"""What a new user trips on (issue 24, item 7), each fixed and held by a test."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright import Assembler
from contextwright.cli import app
from contextwright.pipeline import ZERO_BUDGET_NOTE

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
CHUNKS = json.loads(EXAMPLE.read_text(encoding="utf-8"))
runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


# -- budget 0 ------------------------------------------------------------------------------------


def test_budget_zero_warns_in_the_report_and_the_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="contextwright"):
        ctx = Assembler("qa", budget=0).assemble("x-rays?", CHUNKS)
    assert ctx.text == "" and ctx.tokens == 0
    assert ZERO_BUDGET_NOTE in ctx.report.stages[-1].notes
    assert ZERO_BUDGET_NOTE in ctx.report.to_dict()["stages"][-1]["notes"]
    assert any(ZERO_BUDGET_NOTE in r.getMessage() for r in caplog.records)
    assert "nothing fits a zero budget" in ZERO_BUDGET_NOTE and "budget > 0" in ZERO_BUDGET_NOTE


def test_budget_zero_without_chunks_or_a_positive_budget_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="contextwright"):
        empty = Assembler("qa", budget=0).assemble("x-rays?", [])
        some = Assembler("qa", budget=300).assemble("x-rays?", CHUNKS)
    for ctx in (empty, some):
        assert not any(ZERO_BUDGET_NOTE in n for s in ctx.report.stages for n in s.notes)
    assert not caplog.records


def test_budget_zero_warns_on_stderr_in_the_cli() -> None:
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", "0"])
    assert out.exit_code == 0, out.output
    assert "warning:" in out.stderr and "nothing fits a zero budget" in flat(out.stderr)
    assert out.stdout == "\n"
    fine = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x-rays?", "--budget", "300"])
    assert "warning" not in fine.stderr


def test_budget_zero_warns_in_the_service_response() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from contextwright.service import ServiceConfig, create_app

    with TestClient(create_app(ServiceConfig(budget=500))) as client:
        body = client.post("/v1/assemble", json={"query": "x-rays?", "chunks": CHUNKS, "budget": 0}).json()
    assert body["text"] == ""
    assert ZERO_BUDGET_NOTE in body["report"]["stages"][-1]["notes"]
