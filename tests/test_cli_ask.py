"""``contextwright ask``: one question's context sent to a model, its answer printed with the sources
it cites, and a bare citation asked again, against a real llama.cpp server (SmolLM2-135M) and a
scripted chat-completions server on 127.0.0.1 (a real HTTP server answering from a script: the only
way to make a model reply with a bare "[1]" on cue)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import contextwright
from contextwright.cli import app
from contextwright.clients.chat import ChatClient

from .eval.test_reader import ChatServer, reply

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "chunks.json"
QUESTION = "Who discovered X-rays?"
runner = CliRunner()


@pytest.fixture
def bare_then_answer() -> Iterator[ChatServer]:
    """Replies "[1]" to the first prompt it sees and "Röntgen [1][7]." to any other."""
    seen: list[str] = []

    def script(body: dict[str, Any]) -> tuple[int, Any]:
        system = body["messages"][0]["content"]
        if not seen:
            seen.append(system)
        return reply("[1]" if system == seen[0] else "Wilhelm Röntgen [1][7].")

    server = ChatServer(script)
    yield server
    server.close()


def _ask(
    server: str,
    *extra: str,
    file: Path = EXAMPLE,
    query: str | None = QUESTION,
    budget: int | None = 300,
    model: str = "m",
) -> Any:
    """``contextwright ask FILE [-q QUERY] [--budget N] --reader SERVER --reader-model MODEL EXTRA...``."""
    args = ["ask", str(file), *(["-q", query] if query is not None else [])]
    args += [*(["--budget", str(budget)] if budget is not None else []), "--reader", server]
    return runner.invoke(app, [*args, "--reader-model", model, *extra])


@contextmanager
def replying(text: str) -> Iterator[ChatServer]:
    """A scripted chat server that answers every request with ``text``."""
    server = ChatServer(lambda body: reply(text))
    try:
        yield server
    finally:
        server.close()


def test_a_bare_citation_is_asked_again_and_the_answer_printed_with_its_sources(
    bare_then_answer: ChatServer,
) -> None:
    got = _ask(bare_then_answer.base_url)
    assert got.exit_code == 0, got.output
    lines = got.stdout.splitlines()
    assert lines[0] == "Wilhelm Röntgen [1][7]."
    assert lines[2] == "Sources:" and lines[3].startswith("[1] physics/xrays.md · History of X-rays")
    assert "the first reply was a bare citation ('[1]'): asked again" in got.stderr
    assert "cites [7], which no block of the context has" in got.stderr
    asked = bare_then_answer.asked()
    assert len(asked) == 2 and asked[0]["messages"][1:] == asked[1]["messages"][1:]  # the same question
    ctx = contextwright.assemble(QUESTION, json.loads(EXAMPLE.read_text()), budget=300)
    assert asked[0]["messages"] == ctx.messages()  # the chat contextwright.ask sends first
    assert asked[1]["messages"] == ctx.messages(system="light")  # then under the re-ask prompt
    assert (
        QUESTION in asked[0]["messages"][-1]["content"] and "Würzburg" in asked[0]["messages"][-1]["content"]
    )


def test_reask_none_keeps_the_bare_reply_and_says_so(bare_then_answer: ChatServer) -> None:
    got = _ask(bare_then_answer.base_url, "--reask-bare", "none", "--json")
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)
    assert data["answer"] == "[1]" and data["bare"] is True and data["reasked"] is False
    assert [c["source"] for c in data["cited"]] == ["physics/xrays.md"]
    assert data["context"]["tokens"] <= 300 and len(bare_then_answer.asked()) == 1


def test_json_gives_the_first_reply_the_cited_blocks_and_the_context(bare_then_answer: ChatServer) -> None:
    got = _ask(bare_then_answer.base_url, "--json", "--system", "strict")
    data = json.loads(got.stdout)
    assert data["reasked"] is True and data["first"] == "[1]" and data["missing"] == [7]
    assert data["cited"][0]["index"] == 1 and data["cited"][0]["chunk_ids"] == ["xr-1"]
    assert data["context"]["text"] in bare_then_answer.asked()[0]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "pass --reader URL"),
        (("--reader", "http://127.0.0.1:9/v1"), "pass --reader URL"),
        (("--reader", "127.0.0.1:8080", "--reader-model", "m"), "--reader must be the http(s) URL"),
        (
            ("--reader", "http://127.0.0.1:9/v1", "--reader-model", "m", "--reask-bare", "lite"),
            "--reask-bare",
        ),
    ],
)
def test_ask_refuses_before_sending_anything(args: tuple[str, ...], message: str) -> None:
    got = runner.invoke(app, ["ask", str(EXAMPLE), "-q", QUESTION, *args])
    assert got.exit_code == 2 and message in got.stderr


def test_ask_needs_one_question_and_some_chunks(tmp_path: Path, bare_then_answer: ChatServer) -> None:
    url = bare_then_answer.base_url
    two = tmp_path / "two.jsonl"
    two.write_text(
        "\n".join(json.dumps({"id": i, "query": QUESTION, "chunks": [{"text": "x"}]}) for i in ("a", "b"))
        + "\n"
    )
    got = _ask(url, file=two, query=None, budget=None)
    assert got.exit_code == 2 and "ask answers one question" in got.stderr
    got = _ask(url, query=None, budget=None)
    assert got.exit_code == 2 and "ask needs a question" in got.stderr
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    got = _ask(url, file=empty, budget=None)
    assert got.exit_code == 2 and "holds no chunks" in got.stderr
    assert bare_then_answer.asked() == []


def test_ask_a_real_model_over_a_query_file(llama_server: Any, tmp_path: Path) -> None:
    """SmolLM2-135M under llama.cpp: the command sends what ``contextwright.ask`` sends for the same
    context and prints the same answer (greedy decoding: the reply is the reply to that chat)."""
    chunks = json.loads(EXAMPLE.read_text())
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"query": QUESTION, "chunks": chunks}))
    url, model = llama_server.base_url, llama_server.model
    got = _ask(url, "--json", file=one, query=None, budget=400, model=model)
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)
    ctx = contextwright.assemble(QUESTION, chunks, budget=400)
    assert data["context"]["text"] == ctx.text and data["context"]["tokens"] <= 400
    with ChatClient(url, model=model) as client:
        lib = contextwright.ask(ctx, lambda m: client.complete(m, max_tokens=256))  # type: ignore[arg-type]
    assert data["answer"] == lib.text and data["answer"].strip()
    assert data["reasked"] == lib.reasked and data["bare"] == lib.citations.bare
    assert [c["index"] for c in data["cited"]] == [c.index for c in lib.citations.cited]


def test_a_cited_block_without_a_source_is_named_by_its_chunk(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"id": "a", "text": "Paris is the capital of France."}]))
    with replying("Paris [1].") as server:
        got = _ask(server.base_url, file=plain, query="Capital of France?", budget=100)
    assert got.exit_code == 0, got.output
    assert got.stdout.splitlines() == ["Paris [1].", "", "Sources:", "[1] chunk a"]


def test_control_characters_of_a_reply_or_a_source_are_shown_escaped(tmp_path: Path) -> None:
    """A reply (or a chunk's source) with an escape sequence would clear or recolour the terminal."""
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps([{"id": "a", "text": "Paris is the capital.", "source": "x\u001b[2J.md"}]))
    with replying("Paris\u001b[31m [1]\r\nok\tdone") as server:
        got = _ask(server.base_url, file=hostile, query="Capital?", budget=100)
        as_json = _ask(server.base_url, "--json", file=hostile, query="Capital?", budget=100)
    assert "\u001b" not in got.stdout and "\r" not in got.stdout
    assert got.stdout.splitlines() == [
        "Paris\\x1b[31m [1]\\x0d",
        "ok\tdone",
        "",
        "Sources:",
        "[1] x\\x1b[2J.md (chunk a)",
    ]
    assert (
        json.loads(as_json.stdout)["answer"] == "Paris\u001b[31m [1]\r\nok\tdone"
    )  # JSON keeps the reply as sent


def test_ask_expands_from_a_store_as_assemble_does(tmp_path: Path) -> None:
    """A profile that expands needs its chunk store: ``--store`` and ``--expand`` as in ``assemble``."""
    url = f"sqlite:///{tmp_path / 'small.db'}"
    assert (
        runner.invoke(
            app, ["index", str(REPO / "tests" / "fixtures" / "small_corpus.jsonl"), "--store", url]
        ).exit_code
        == 0
    )
    hits = tmp_path / "hits.json"
    hit = {
        "id": "rontgen:1",
        "doc_id": "rontgen",
        "index": 1,
        "score": 1.0,
        "text": "He detected X-rays in 1895.",
    }
    hits.write_text(json.dumps({"query": "who discovered x-rays?", "chunks": [hit]}))
    with replying("Röntgen [1].") as server:
        got = _ask(
            server.base_url, "--store", url, "--expand", "1", "--json", file=hits, query=None, budget=500
        )
        refused = _ask(server.base_url, "--expand", "1", file=hits, query=None, budget=500)
        sent = server.asked()
    assert got.exit_code == 0, got.output
    [expand] = [s for s in json.loads(got.stdout)["context"]["report"]["stages"] if s["stage"] == "expand"]
    assert expand["added"] == ["rontgen:0", "rontgen:2"]
    assert len(sent) == 1 and "first Nobel Prize in Physics" in sent[0]["messages"][-1]["content"]
    assert refused.exit_code == 2 and "--expand needs --store URL" in refused.stderr
