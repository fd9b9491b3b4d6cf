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


def test_budget_zero_without_chunks_or_a_positive_budget_says_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
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


# -- flag names, not Python arguments --------------------------------------------------------------


def test_cli_errors_name_flags_not_python_arguments(tmp_path: Path) -> None:
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x"])
    assert out.exit_code == 2
    message = flat(out.stderr)
    assert "--budget N" in message and "--model NAME" in message
    assert "budget=" not in message and "Assembler(" not in message
    out = runner.invoke(app, ["assemble", str(EXAMPLE), "-q", "x", "--model", "gpt4o"])
    message = flat(out.stderr)
    assert out.exit_code == 2 and "--model 'gpt4o'" in message and "'gpt-4o'" in message
    assert "register_model" not in message and "--budget N (and --tokenizer)" in message
    out = runner.invoke(
        app,
        ["assemble", str(EXAMPLE), "-q", "x", "--budget", "100", "--tokenizer", "p50k_base"],
        env={"TIKTOKEN_CACHE_DIR": str(tmp_path)},
    )
    message = flat(out.stderr)
    assert out.exit_code == 2 and "--tokenizer chars" in message and "tokenizer='chars'" not in message
    out = runner.invoke(app, ["batch", str(EXAMPLE), str(tmp_path / "o.jsonl")])
    assert out.exit_code == 2 and "--budget N" in flat(out.stderr)


def test_the_hugging_face_tokenizer_message_has_no_double_full_stop() -> None:
    from contextwright.errors import TokenizerError
    from contextwright.tokens import get_tokenizer

    with pytest.raises(TokenizerError) as info:
        get_tokenizer("hf:contextwright-no-such-org/no-such-model").count("x")
    assert ".." not in str(info.value) and "huggingface-cli download" in str(info.value)


# -- one store flag ----------------------------------------------------------------------------------


def test_index_and_assemble_take_store_and_index_accepts_db_with_a_hint(tmp_path: Path) -> None:
    corpus = REPO / "tests" / "fixtures" / "small_corpus.jsonl"
    url = f"sqlite:///{tmp_path / 'a.db'}"
    out = runner.invoke(app, ["index", str(corpus), "--store", url])
    assert out.exit_code == 0 and out.stderr == "", out.output
    old = runner.invoke(app, ["index", str(corpus), "--db", f"sqlite:///{tmp_path / 'b.db'}"])
    assert old.exit_code == 0 and (tmp_path / "b.db").exists()
    assert "the store flag is --store" in flat(old.stderr)
    both = runner.invoke(app, ["index", str(corpus), "--store", url, "--db", "sqlite:///other.db"])
    assert both.exit_code == 2 and "name two stores" in flat(both.stderr)
    for command in ("assemble", "inspect", "batch", "index"):
        shown = runner.invoke(app, [command, "--help"], env={"COLUMNS": "120"}).stdout
        assert "--store" in shown and "--db" not in shown, command
    # assemble accepts the other name too
    expand = runner.invoke(
        app, ["assemble", str(EXAMPLE), "-q", "x", "--budget", "200", "--db", url, "--expand", "1"]
    )
    assert expand.exit_code == 0, expand.output
    assert "the store flag is --store" in flat(expand.stderr)


def test_a_refused_index_leaves_no_database_file(tmp_path: Path) -> None:
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps([{"question": "q", "chunks": [{"text": "a"}]}]), encoding="utf-8")
    out = runner.invoke(app, ["index", str(queries), "--store", f"sqlite:///{tmp_path / 'new.db'}"])
    assert out.exit_code == 2 and "index needs chunks" in flat(out.stderr)
    assert not (tmp_path / "new.db").exists() and list(tmp_path.iterdir()) == [queries]
    # a database that was there before is left alone
    corpus = REPO / "tests" / "fixtures" / "small_corpus.jsonl"
    keep = f"sqlite:///{tmp_path / 'keep.db'}"
    assert runner.invoke(app, ["index", str(corpus), "--store", keep]).exit_code == 0
    assert runner.invoke(app, ["index", str(queries), "--store", keep]).exit_code == 2
    assert (tmp_path / "keep.db").exists()
