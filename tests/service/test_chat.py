"""``/v1/assemble`` with ``messages: true``: the chat to send the model, and the chat to send again
after a bare citation, so a client in any language can do what :func:`contextwright.ask` does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

import contextwright
from contextwright.render.format import get_format
from contextwright.render.messages import system_prompt
from contextwright.service import ServiceConfig, create_app

from ..eval.test_reader import ChatServer, reply

CHUNKS = [
    {"id": "a", "text": "Paris is the capital of France.", "score": 0.9, "source": "fr.md"},
    {"id": "b", "text": "Lyon is a city on the Rhône.", "score": 0.5, "source": "lyon.md"},
]
QUERY = "What is the capital of France?"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(ServiceConfig(budget=400))) as c:
        yield c


def _assemble(client: TestClient, **options: Any) -> dict[str, Any]:
    r = client.post("/v1/assemble", json={"query": QUERY, "chunks": CHUNKS, **options})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_the_chat_is_returned_only_when_asked_and_is_what_python_sends(client: TestClient) -> None:
    plain = _assemble(client)
    assert "messages" not in plain and "reask_messages" not in plain
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    got = _assemble(client, messages=True, history=history, history_tokens=200)
    ctx = contextwright.assemble(QUERY, CHUNKS, budget=400, history=history, history_tokens=200)
    assert got["text"] == ctx.text
    assert got["messages"] == ctx.messages()  # the default prompt, the kept history, the context, the query
    assert got["messages"][1:3] == history
    assert got["reask_messages"] == ctx.messages(system="light")
    assert got["reask_messages"][1:] == got["messages"][1:]  # only the prompt differs


def test_no_reask_where_a_bare_citation_is_not_asked_again(client: TestClient) -> None:
    # a context without labels: its prompt asks for no numbers, so "[1]" would not be re-asked
    minimal = _assemble(client, messages=True, format="minimal")
    assert minimal["messages"] and "reask_messages" not in minimal
    assert "[1]" not in minimal["messages"][-1]["content"]
    # no re-ask prompt, or the first prompt already the re-ask prompt (the same request)
    assert "reask_messages" not in _assemble(client, messages=True, reask_bare=None)
    same = _assemble(client, messages=True, system="light")
    assert "reask_messages" not in same and same["messages"][0]["content"].startswith("Use the numbered")
    # a prompt of one's own is sent as it is
    own = _assemble(client, messages=True, system="Answer in French.", reask_bare="Answer, then cite [n].")
    assert own["messages"][0]["content"] == "Answer in French."
    assert own["reask_messages"][0]["content"] == "Answer, then cite [n]."
    assert _assemble(client, messages=True, system=None)["messages"][0]["role"] == "user"


@pytest.mark.parametrize("field", ["system", "reask_bare"])
def test_a_one_word_prompt_that_names_none_is_refused_with_the_fix(client: TestClient, field: str) -> None:
    r = client.post("/v1/assemble", json={"query": QUERY, "chunks": CHUNKS, "messages": True, field: "lite"})
    assert r.status_code == 422
    problem = r.json()
    assert problem["code"] == "invalid-prompt" and problem["loc"] == ["body", field]
    assert "'lite'" in problem["detail"] and "Did you mean 'light'?" in problem["detail"]


def test_a_client_reasks_a_bare_citation_as_contextwright_ask_does(client: TestClient) -> None:
    """The whole loop over HTTP: the service's chat to a chat server that points at a block under any
    prompt but ``light``; /v1/citations/resolve says bare; the re-ask chat gets the answer, the same
    answer ``contextwright.ask`` gets from the same server."""

    def pointing(body: dict[str, Any]) -> tuple[int, Any]:
        light = body["messages"][0]["content"].startswith("Use the numbered sources")
        return reply("Paris [1]" if light else "[1]")

    server = ChatServer(pointing)
    try:

        def llm(messages: list[dict[str, Any]]) -> str:
            r = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": messages})
            return str(r.json()["choices"][0]["message"]["content"])

        got = _assemble(client, messages=True)
        first = llm(got["messages"])
        check = client.post("/v1/citations/resolve", json={"answer": first, "context": got}).json()
        assert first == "[1]" and check["bare"]
        answer = llm(got["reask_messages"])
        final = client.post("/v1/citations/resolve", json={"answer": answer, "context": got}).json()
        assert answer == "Paris [1]" and final["ok"] and not final["bare"]
        assert [c["source"] for c in final["cited"]] == ["fr.md"]

        ctx = contextwright.assemble(QUERY, CHUNKS, budget=400)
        python = contextwright.ask(ctx, llm)
        assert python.reasked and python.first == first and python.text == answer
        assert server.asked()[-2:] == server.asked()[:2]  # the same two requests, in the same order
    finally:
        server.close()


def test_a_profiles_reask_is_the_reask_chat_unless_the_request_names_one(tmp_path: Path) -> None:
    """A profile fitted with ``fit --reask-bare`` keeps its re-ask prompt (``reask``): ``reask_bare``
    left out (``auto``) sends it, ``false`` there sends none, and a prompt the request names wins."""
    from contextwright.assembly.presets import _PRESETS

    stages = '[[stages]]\ntype = "token_budget"\npolicy = "fill"\n'
    (tmp_path / "strict.toml").write_text(f'format = "lean"\nreask = "strict"\n\n{stages}')
    (tmp_path / "never.toml").write_text(f'format = "lean"\nreask = false\n\n{stages}')
    profiles = {"strict": str(tmp_path / "strict.toml"), "never": str(tmp_path / "never.toml")}
    before = set(_PRESETS)
    try:
        with TestClient(create_app(ServiceConfig(budget=400, profiles=profiles))) as c:
            got = _assemble(c, messages=True, preset="strict")
            ctx = contextwright.assemble(QUERY, CHUNKS, budget=400, preset=str(tmp_path / "strict.toml"))
            assert got["messages"] == ctx.messages() and got["text"] == ctx.text
            assert got["reask_messages"] == ctx.messages(system="strict")
            auto = _assemble(c, messages=True, preset="strict", reask_bare="auto")
            assert (auto["messages"], auto["reask_messages"]) == (got["messages"], got["reask_messages"])
            named = _assemble(c, messages=True, preset="strict", reask_bare="light")
            assert named["reask_messages"] == ctx.messages(system="light")
            assert "reask_messages" not in _assemble(c, messages=True, preset="never")
            assert _assemble(c, messages=True, preset="never", reask_bare="soft")["reask_messages"][0] == {
                "role": "system",
                "content": system_prompt("soft", format=get_format("lean")),
            }
    finally:
        for name in set(_PRESETS) - before:
            del _PRESETS[name]
