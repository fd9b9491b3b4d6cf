"""What a new user trips on (issue 24, item 7), each fixed and held by a test."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright import Assembler
from contextwright.assembly.pipeline import ZERO_BUDGET_NOTE
from contextwright.cli import app

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
    from contextwright.core.errors import TokenizerError
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


# -- one input reader, markup, progress, inspect ---------------------------------------------------


def test_dedup_corpus_reads_the_json_array_the_other_commands_accept(tmp_path: Path) -> None:
    corpus = REPO / "tests" / "fixtures" / "small_corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows += [{**rows[0], "id": "copy-of-first"}]
    array = tmp_path / "corpus.json"
    array.write_text(json.dumps(rows), encoding="utf-8")
    pairs = tmp_path / "pairs.jsonl"
    out = runner.invoke(app, ["dedup-corpus", str(array), "--workers", "1", "--out", str(pairs)])
    assert out.exit_code == 0, out.output
    found = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    assert {"a": str(rows[0]["id"]), "b": "copy-of-first"}.items() <= found[0].items()
    # and the JSON Lines form gives the same pairs
    lines = tmp_path / "corpus.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    again = tmp_path / "again.jsonl"
    assert (
        runner.invoke(app, ["dedup-corpus", str(lines), "--workers", "1", "--out", str(again)]).exit_code == 0
    )
    assert again.read_text(encoding="utf-8") == pairs.read_text(encoding="utf-8")


def test_the_non_utf8_error_says_how_to_fix_it(tmp_path: Path) -> None:
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"text": "café au lait"}\n'.encode("latin-1"))
    out = runner.invoke(app, ["assemble", str(latin), "-q", "x", "--budget", "100"])
    assert out.exit_code == 2
    message = flat(out.stderr)
    assert "is not UTF-8 text" in message and "iconv -f latin1 -t utf-8" in message


def test_presets_keeps_citation_labels_in_descriptions() -> None:
    from contextwright.assembly.presets import list_presets

    out = runner.invoke(app, ["presets"], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    written = sum(d.count("[n]") for d in list_presets().values())
    assert written >= 1 and out.stdout.count("[n]") == written


def test_inspect_on_a_query_file_says_which_query_it_took(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"who {i}?", "chunks": CHUNKS}) + "\n" for i in range(3)
        ),
        encoding="utf-8",
    )
    page = str(tmp_path / "p.html")
    out = runner.invoke(app, ["inspect", str(queries), "--budget", "200", "--html", page])
    assert out.exit_code == 0, out.output
    message = flat(out.stderr)
    assert "holds several queries; inspecting the first (q0 · who 0?)" in message and "--item N" in message
    picked = runner.invoke(app, ["inspect", str(queries), "--budget", "200", "--html", page, "--item", "2"])
    assert picked.exit_code == 0 and "several queries" not in picked.stderr
    one = runner.invoke(app, ["inspect", str(EXAMPLE), "-q", "x", "--budget", "200", "--html", page])
    assert one.exit_code == 0 and "several queries" not in one.stderr


def test_progress_ends_with_the_full_count_and_a_total(tmp_path: Path) -> None:
    from ._pty import with_tty_stderr

    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(json.dumps({"id": f"q{i}", "question": "who?", "chunks": CHUNKS}) + "\n" for i in range(7)),
        encoding="utf-8",
    )
    stdout, tty = with_tty_stderr(["assemble", str(queries), "--budget", "200", "--json"], tmp_path)
    assert len(stdout.decode().splitlines()) == 7
    shown = tty.decode(errors="replace")
    assert "assembled 7 queries in " in shown and " s" in shown.split("assembled 7 queries in ")[-1]
    assert "assembled 6 queries in" not in shown


# -- eval: help at 80 columns, did you mean ----------------------------------------------------------


def test_eval_help_at_80_columns_keeps_its_description_and_the_cache_default_whole() -> None:
    out = runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "80", "LINES": "50"})
    assert out.exit_code == 0
    text = flat(out.stdout.replace("│", " "))
    assert "tokens sent and latency; replies are cached on disk, so an interrupted run resumes" in text
    assert "(default: reader.sqlite in ~/.cache/contextwright)." in text
    assert "…" not in out.stdout


def test_eval_strategy_typo_gets_a_did_you_mean() -> None:
    from .conftest import DEV_QUERIES

    if not DEV_QUERIES.exists():
        pytest.skip("shared data not found")
    out = runner.invoke(app, ["eval", str(DEV_QUERIES), "--strategy", "naiv", "--limit", "1", "-b", "300"])
    assert out.exit_code == 2
    assert "unknown strategy 'naiv'. Did you mean 'naive'?" in flat(out.stderr)


# -- the service ----------------------------------------------------------------------------------


def test_the_service_lists_the_valid_fields_once() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from contextwright.service import ServiceConfig, create_app

    with TestClient(create_app(ServiceConfig(budget=500))) as client:
        for body in (
            {"query": "q", "chunks": CHUNKS, "fromat": "xml"},
            {"query": "q", "chunks": CHUNKS, "x": 1},
        ):
            detail = client.post("/v1/assemble", json=body).json()["detail"]
            assert detail.lower().count("valid") == 1 and detail.count("tool_policy") == 1, detail
