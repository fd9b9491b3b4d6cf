"""``batch --reader``: every row's question asked of a model over its context, as ``contextwright.ask``
asks, against a real llama.cpp server (SmolLM2-135M) and a scripted chat-completions server on
127.0.0.1 (a real HTTP server answering from a script: the way to make a model reply with a bare
"[1]", or fail, on cue)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import contextwright
from contextwright import Assembler
from contextwright.batch import BatchReader, BatchSettings, RowAssembler, run_batch
from contextwright.cli import app
from contextwright.clients.chat import ChatClient
from contextwright.core.errors import ConfigError

from .eval.test_reader import ChatServer, reply

runner = CliRunner()


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory, dev_queries: list[dict[str, Any]]) -> Path:
    """Four real dev queries as JSONL."""
    path = tmp_path_factory.mktemp("asked") / "queries.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in dev_queries[:4]), encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def scripted(dev_queries: list[dict[str, Any]]) -> Iterator[ChatServer]:
    """Replies "[1]" to the first query's first request, fails every request of the third query
    (HTTP 500), and answers "Answer <n> [1]." otherwise (n: the query's position)."""
    questions = [q["question"] for q in dev_queries[:4]]
    first_system: list[str] = []

    def script(body: dict[str, Any]) -> tuple[int, Any]:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        n = next(i for i, q in enumerate(questions) if q in user)
        if n == 2:
            return 500, {"error": {"message": "the model fell over"}}
        if n == 0 and (not first_system or first_system[0] == system):
            first_system.append(system)
            return reply("[1]")
        return reply(f"Answer {n} [1].")

    server = ChatServer(script)
    yield server
    server.close()


def test_each_row_holds_the_answer_to_its_chat_and_a_failed_request_is_its_error_row(
    four: Path, tmp_path: Path, scripted: ChatServer, dev_queries: list[dict[str, Any]]
) -> None:
    out = tmp_path / "out.jsonl"
    reader = BatchReader(url=scripted.base_url, model="m", retries=0)
    stats = run_batch(four, out, workers=1, budget=500, reader=reader)
    assert (stats.rows, stats.errors, stats.answers) == (3, 1, (3, 1, 0))  # one bare reply, asked again
    rows = _rows(out)
    assert [r["id"] for r in rows] == [dev_queries[i]["id"] for i in (0, 1, 3)]
    assembler = Assembler("qa", budget=500)
    for row, i in zip(rows, (0, 1, 3), strict=True):
        ctx = assembler.assemble(dev_queries[i]["question"], dev_queries[i]["chunks"])
        assert row["text"] == ctx.text  # the context is the one batch writes without a reader
        asked = [
            r["messages"]
            for r in scripted.asked()
            if dev_queries[i]["question"] in r["messages"][-1]["content"]
        ]
        assert asked[0] == ctx.messages()  # the chat contextwright.ask sends first
        answer = row["answer"]
        assert answer["answer"] == f"Answer {i} [1]." and answer["bare"] is False
        assert [c["index"] for c in answer["cited"]] == [1]
        assert answer["cited"][0]["chunk_ids"] == [ctx.citations[0].chunk_ids[0]]
        if i == 0:  # a bare "[1]" first: asked once more under the re-ask prompt
            assert answer["reasked"] is True and answer["first"] == "[1]"
            assert asked[1] == ctx.messages(system="light") and len(asked) == 2
        else:
            assert answer["reasked"] is False and answer["first"] == "" and len(asked) == 1
    errors = _rows(Path(f"{out}.errors.jsonl"))
    assert [e["id"] for e in errors] == [dev_queries[2]["id"]] and errors[0]["where"].endswith(":3")
    assert "the context was assembled (" in errors[0]["error"] and "asking 'm' failed" in errors[0]["error"]
    assert "500" in errors[0]["error"]


def test_cli_batch_reader_in_workers_writes_the_answers_to_jsonl_and_parquet(
    four: Path, tmp_path: Path, dev_queries: list[dict[str, Any]]
) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    server = ChatServer(lambda body: reply("Paris [2]."))
    try:
        args = ["--budget", "400", "--reader", server.base_url, "--reader-model", "m", "--system", "strict"]
        got = runner.invoke(app, ["batch", str(four), str(tmp_path / "a.jsonl"), "--workers", "2", *args])
        assert got.exit_code == 0, got.output
        assert "assembled and asked 4 rows" in got.stdout
        assert "; 4 answered, 0 asked again after a bare citation, 0 still bare" in got.stdout
        got = runner.invoke(app, ["batch", str(four), str(tmp_path / "a.parquet"), "--workers", "1", *args])
        assert got.exit_code == 0, got.output
        asked = server.asked()
    finally:
        server.close()
    rows = _rows(tmp_path / "a.jsonl")
    assert [r["answer"]["answer"] for r in rows] == ["Paris [2]."] * 4
    assert all([c["index"] for c in r["answer"]["cited"]] == [2] for r in rows)
    assert "messages" not in rows[0]  # the chat is sent, not written, without --messages
    table = pq.read_table(tmp_path / "a.parquet").to_pylist()
    assert [json.loads(r["answer"]) for r in table] == [r["answer"] for r in rows]
    assert len(asked) == 8  # each question once per run: no reply was bare
    ctx = Assembler("qa", budget=400).assemble(dev_queries[0]["question"], dev_queries[0]["chunks"])
    assert ctx.messages(system="strict") in [r["messages"] for r in asked]  # --system shapes the chat


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--reader-model", "m"), "pass --reader URL"),
        (("--reader", "http://127.0.0.1:9/v1"), "and --reader-model NAME"),
        (("--reader", "127.0.0.1:8080", "--reader-model", "m"), "--reader must be the http(s) URL"),
        (
            ("--reader", "http://127.0.0.1:9/v1", "--reader-model", "m", "--reask-bare", "lite"),
            "--reask-bare",
        ),
        (("--system", "strict"), "shape the chat of --messages or --reader: add one"),
    ],
)
def test_cli_batch_refuses_a_bad_reader_before_any_row(
    four: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    out = tmp_path / "out.jsonl"
    got = runner.invoke(app, ["batch", str(four), str(out), "--workers", "1", "--budget", "300", *args])
    assert got.exit_code == 2 and message in got.stderr
    assert not out.exists()


def test_bad_reader_settings_fail_before_any_row_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"reader.max_tokens must be a positive number of tokens; got 0"):
        BatchReader(url="http://127.0.0.1:9/v1", model="m", max_tokens=0)
    with pytest.raises(ConfigError, match=r"reader\.reask_bare"):
        BatchReader(url="http://127.0.0.1:9/v1", model="m", reask_bare="lite")
    with pytest.raises(ConfigError, match=r"reader.url must be the http\(s\) URL .*got 'localhost:8080'"):
        BatchReader(url="localhost:8080", model="m")
    with pytest.raises(ConfigError, match=r"reader\.model must be the model name"):
        BatchReader(url="http://127.0.0.1:9/v1", model=" ")
    with pytest.raises(ConfigError, match="timeout_s"):  # the client's own checks, at the start
        RowAssembler(
            BatchSettings(
                budget=300, reader=BatchReader(url="http://127.0.0.1:9/v1", model="m", timeout_s=-1)
            )
        )
    with pytest.raises(ConfigError, match="reader must be a BatchReader"):
        RowAssembler(BatchSettings(budget=300, reader={"url": "http://127.0.0.1:9/v1"}))  # type: ignore[arg-type]


def test_batch_reader_with_a_real_model_answers_as_ask_does(
    llama_server: Any, tmp_path: Path, dev_queries: list[dict[str, Any]]
) -> None:
    """SmolLM2-135M under llama.cpp: each row's answer is ``contextwright.ask``'s for the same
    context (greedy decoding: the reply is the reply to that chat)."""
    url, model = llama_server.base_url, llama_server.model
    src = tmp_path / "two.jsonl"
    src.write_text("".join(json.dumps(q) + "\n" for q in dev_queries[:2]), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    stats = run_batch(
        src, out, workers=1, budget=300, reader=BatchReader(url=url, model=model, max_tokens=32)
    )
    assert (stats.rows, stats.errors) == (2, 0)
    assembler = Assembler("qa", budget=300)
    with ChatClient(url, model=model) as client:
        for row, q in zip(_rows(out), dev_queries[:2], strict=True):
            ctx = assembler.assemble(q["question"], q["chunks"])
            lib = contextwright.ask(ctx, lambda m: client.complete(m, max_tokens=32))  # type: ignore[arg-type]
            assert row["answer"]["answer"] == lib.text and lib.text.strip()
            assert row["answer"] == lib.to_dict()


def test_a_rerun_with_the_reply_cache_asks_only_the_rows_that_failed(
    four: Path, tmp_path: Path, dev_queries: list[dict[str, Any]]
) -> None:
    """``--reader-cache``: the first run's third row fails (HTTP 500); run again against a model
    that now answers, only that row's request is sent, and every other row reads as before."""
    failing = {dev_queries[2]["question"]}

    def script(body: dict[str, Any]) -> tuple[int, Any]:
        user = body["messages"][-1]["content"]
        if any(q in user for q in failing):
            return 500, {"error": {"message": "overloaded"}}
        return reply("Paris [1].")

    server = ChatServer(script)
    cache = tmp_path / "replies.sqlite"
    try:
        args = ["--budget", "400", "--reader", server.base_url, "--reader-model", "m", "--workers", "2"]
        first = runner.invoke(
            app, ["batch", str(four), str(tmp_path / "1.jsonl"), *args, "--reader-cache", str(cache)]
        )
        assert first.exit_code == 0, first.output
        assert "3 rows" in first.stdout and "1 error rows" in first.stdout
        sent = len(server.asked())
        failing.clear()
        again = runner.invoke(
            app, ["batch", str(four), str(tmp_path / "2.jsonl"), *args, "--reader-cache", str(cache)]
        )
        assert again.exit_code == 0, again.output
        resent = server.asked()[sent:]
    finally:
        server.close()
    assert sent == 3 + 2  # three rows answered; the failing one tried twice (one retry)
    assert len(resent) == 1 and dev_queries[2]["question"] in resent[0]["messages"][-1]["content"]
    before, after = _rows(tmp_path / "1.jsonl"), _rows(tmp_path / "2.jsonl")
    assert [r["id"] for r in after] == [q["id"] for q in dev_queries[:4]]
    assert [r for r in after if r["id"] != dev_queries[2]["id"]] == before
    assert (
        runner.invoke(
            app,
            ["batch", str(four), str(tmp_path / "3.jsonl"), "--budget", "400", "--reader-cache", str(cache)],
        ).exit_code
        == 2
    )


def test_a_worker_asks_its_rows_concurrency_at_a_time_and_keeps_their_order(
    tmp_path: Path, dev_queries: list[dict[str, Any]]
) -> None:
    """``BatchReader(concurrency=3)``: a worker assembles its batch, then has 3 requests in flight at
    once (never more), against a server that takes 0.3 s a reply; the rows keep the input order."""
    import threading
    import time

    lock, live, most = threading.Lock(), [0], [0]
    questions = [q["question"] for q in dev_queries[:8]]

    def script(body: dict[str, Any]) -> tuple[int, Any]:
        with lock:
            live[0] += 1
            most[0] = max(most[0], live[0])
        time.sleep(0.3)
        with lock:
            live[0] -= 1
        n = next(i for i, q in enumerate(questions) if q in body["messages"][-1]["content"])
        return reply(f"Answer {n} [1].")

    server = ChatServer(script)
    src = tmp_path / "eight.jsonl"
    src.write_text("".join(json.dumps(q) + "\n" for q in dev_queries[:8]), encoding="utf-8")
    try:
        reader = BatchReader(url=server.base_url, model="m", concurrency=3)
        stats = run_batch(src, tmp_path / "out.jsonl", workers=1, budget=300, batch_size=8, reader=reader)
    finally:
        server.close()
    assert (stats.rows, stats.errors) == (8, 0) and most[0] == 3
    rows = _rows(tmp_path / "out.jsonl")
    assert [r["answer"]["answer"] for r in rows] == [f"Answer {n} [1]." for n in range(8)]
    assert [r["id"] for r in rows] == [q["id"] for q in dev_queries[:8]]
    with pytest.raises(ConfigError, match=r"reader\.concurrency must be .* got 0"):
        BatchReader(url=server.base_url, model="m", concurrency=0)
