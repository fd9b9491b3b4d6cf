"""The chat client and LLM compression, against a scripted chat-completions server.

``ScriptedChatServer`` below is a real HTTP server on 127.0.0.1 that speaks the
OpenAI chat-completions protocol and answers from a script written in each
test (status codes, bodies, delays). It is a scripted test server standing in
for the remote model, not a mock of our code: the real ``ChatClient`` (httpx)
sends real requests to it. One more test runs against a real endpoint when
``CONTEXTWRIGHT_LLM_BASE_URL`` is set.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("httpx")

from contextwright import Assembler, Pipeline, get_tokenizer
from contextwright.clients.chat import ChatClient
from contextwright.core.errors import ConfigError, LLMError
from contextwright.model.chunk import Chunk
from contextwright.model.spans import compose
from contextwright.render.format import get_format
from contextwright.render.meter import Meter
from contextwright.stages.base import stage_from_dict, stage_to_dict
from contextwright.stages.budget import TokenBudget
from contextwright.stages.llm_compress import LLMCompress, verify_extract

# A reply: (status, body) where body is a dict (sent as JSON) or raw str; optional delay in seconds.
Reply = tuple[int, Any] | tuple[int, Any, float]
Script = Callable[[dict[str, Any], int], Reply]


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }


class ScriptedChatServer:
    """A scripted test server for ``POST /v1/chat/completions`` (see the module docstring)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    attempt = sum(1 for r in server.requests if r["messages"] == body["messages"])
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                done = False
                try:
                    reply = server.script(body, attempt)
                    if len(reply) == 3:
                        time.sleep(reply[2])
                    status, payload = reply[0], reply[1]
                    data = payload if isinstance(payload, str) else json.dumps(payload)
                    raw = data.encode()
                    # no longer in flight once the answer leaves: the client may send its next request
                    # as soon as it has read it, before this thread would get to a `finally`
                    with lock:
                        server.in_flight -= 1
                        done = True
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    if not done:
                        with lock:
                            server.in_flight -= 1

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Script], ScriptedChatServer]]:
    servers: list[ScriptedChatServer] = []

    def start(script: Script) -> ScriptedChatServer:
        s = ScriptedChatServer(script)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


def passage(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"]).split("Passage:\n", 1)[1]


# -- the client ---------------------------------------------------------------


def test_client_returns_the_reply_and_sends_model_and_key(serve: Any) -> None:
    server = serve(lambda body, attempt: (200, completion("hello")))
    with ChatClient(server.base_url, model="m1", api_key="sk-test") as client:
        assert client.complete([{"role": "user", "content": "hi"}]) == "hello"
    assert server.requests[0]["model"] == "m1"
    assert server.requests[0]["temperature"] == 0.0
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_client_retries_429_then_succeeds(serve: Any) -> None:
    server = serve(
        lambda body, attempt: (429, {"error": "slow down"}) if attempt == 1 else (200, completion("ok"))
    )
    with ChatClient(server.base_url, model="m", retries=2, backoff_s=0.01) as client:
        assert client.complete([{"role": "user", "content": "x"}]) == "ok"
    assert len(server.requests) == 2


def test_client_gives_up_on_repeated_500_with_the_status_in_the_error(serve: Any) -> None:
    server = serve(lambda body, attempt: (500, {"error": "boom"}))
    with (
        ChatClient(server.base_url, model="m", retries=2, backoff_s=0.01) as client,
        pytest.raises(LLMError, match=r"after 3 attempt\(s\): HTTP 500"),
    ):
        client.complete([{"role": "user", "content": "x"}])
    assert len(server.requests) == 3


def test_client_does_not_retry_a_400(serve: Any) -> None:
    server = serve(lambda body, attempt: (400, {"error": "bad request"}))
    with (
        ChatClient(server.base_url, model="m", retries=3, backoff_s=0.01) as client,
        pytest.raises(LLMError, match="HTTP 400"),
    ):
        client.complete([{"role": "user", "content": "x"}])
    assert len(server.requests) == 1


def test_client_times_out_and_retries(serve: Any) -> None:
    server = serve(
        lambda body, attempt: (200, completion("late"), 1.0) if attempt == 1 else (200, completion("on time"))
    )
    with ChatClient(server.base_url, model="m", timeout_s=0.2, retries=1, backoff_s=0.01) as client:
        assert client.complete([{"role": "user", "content": "x"}]) == "on time"
    with (
        ChatClient(server.base_url, model="m", timeout_s=0.2, retries=0) as client,
        pytest.raises(LLMError, match=r"timed out after 0\.2 s"),
    ):
        client.complete([{"role": "user", "content": "always slow"}])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "invalid JSON"),
        ({"choices": []}, "not a chat completion"),
        (completion(None), "not a string"),
    ],  # type: ignore[arg-type]
)
def test_client_rejects_malformed_replies(serve: Any, body: Any, message: str) -> None:
    server = serve(lambda b, attempt: (200, body))
    with (
        ChatClient(server.base_url, model="m", retries=0) as client,
        pytest.raises(LLMError, match=message),
    ):
        client.complete([{"role": "user", "content": "x"}])


def test_complete_many_respects_the_concurrency_limit(serve: Any) -> None:
    server = serve(lambda body, attempt: (200, completion("ok"), 0.1))
    with ChatClient(server.base_url, model="m", max_concurrency=2) as client:
        replies = client.complete_many([[{"role": "user", "content": str(i)}] for i in range(6)])
    assert replies == ["ok"] * 6
    assert server.max_in_flight == 2


def test_client_validates_its_settings() -> None:
    with pytest.raises(ConfigError, match="base_url must be an http"):
        ChatClient("localhost:8000", model="m")
    with pytest.raises(ConfigError, match="max_concurrency must be a positive integer; got 0"):
        ChatClient("http://127.0.0.1:1/v1", model="m", max_concurrency=0)


# -- verification -------------------------------------------------------------

SOURCE = (
    "The Eiffel Tower is in Paris. It was completed in 1889 for the World’s Fair. "
    "Gustave Eiffel’s company built it. Millions visit it every year."
)


def test_verify_accepts_copied_sentences_after_normalization() -> None:
    reply = "it was completed in 1889 for the world's fair.\n- Gustave   Eiffel's company built it."
    spans = verify_extract(SOURCE, reply)
    assert spans is not None
    assert [SOURCE[s:e] for s, e in spans] == [
        "It was completed in 1889 for the World’s Fair.",
        "Gustave Eiffel’s company built it.",
    ]


@pytest.mark.parametrize(
    "reply",
    [
        "It was finished in 1889.",  # paraphrase
        "The Eiffel Tower is in Paris. It is very tall.",  # one invented sentence
        "",  # nothing
    ],
)
def test_verify_rejects_anything_not_in_the_source(reply: str) -> None:
    assert verify_extract(SOURCE, reply) is None


# -- the stage ------------------------------------------------------------------


def _chunks() -> list[Chunk]:
    filler = " ".join(f"Filler sentence number {i} says nothing at all." for i in range(12))
    return [
        Chunk("TOP " + filler, id="top", score=10.0),
        Chunk(SOURCE + " " + filler, id="eiffel", score=5.0),
        Chunk("MARKER-IRRELEVANT " + filler, id="irr", score=4.0),
        Chunk("MARKER-FAIL " + filler, id="fail", score=3.0),
        Chunk("MARKER-INVENT " + filler, id="invent", score=2.0),
    ]


def _script(body: dict[str, Any], attempt: int) -> Reply:
    text = passage(body)
    if text.startswith("MARKER-IRRELEVANT"):
        return 200, completion("IRRELEVANT")
    if text.startswith("MARKER-FAIL"):
        return 500, {"error": "down"}
    if text.startswith("MARKER-INVENT"):
        return 200, completion("The marker proves the moon is made of cheese.")
    if "Eiffel" in text:
        return 200, completion("It was completed in 1889 for the World's Fair.")
    return 200, completion(text.split(". ")[0] + ".")


def _run(stage: LLMCompress, chunks: list[Chunk], budget: int, **res: Any) -> Any:
    meter = Meter(get_format("xml"), get_tokenizer("cl100k_base"))
    return stage(
        chunks, query="When was the Eiffel Tower completed?", meter=meter, budget=budget, **res
    ), meter


def test_llm_compress_compresses_drops_and_keeps_originals_on_failure(serve: Any) -> None:
    server = serve(_script)
    stage = LLMCompress(base_url=server.base_url, model="m", api_key_env="", retries=0, whole_share=0.3)
    chunks = _chunks()
    result, _meter = _run(stage, chunks, budget=200)
    out = {c.id: c for c in result.chunks}
    assert "top" in out and out["top"].text == chunks[0].text  # never the top chunk
    assert out["eiffel"].text == "It was completed in 1889 for the World’s Fair."
    assert out["eiffel"].ops == ("compressed",)
    ((s, e),) = out["eiffel"].spans
    assert chunks[1].text[s:e] == out["eiffel"].text
    assert [(d.chunk_id, d.reason) for d in result.report.dropped] == [("irr", "irrelevant")]
    assert out["fail"].text == chunks[3].text and out["invent"].text == chunks[4].text
    notes = " ".join(result.report.notes)
    assert "kept original fail: chat completion failed" in notes and "HTTP 500" in notes
    assert "kept original invent: rejected a reply that is not copied" in notes
    (change,) = result.report.changed
    assert change.chunk_id == "eiffel" and change.tokens_before > change.tokens_after
    assert {r["model"] for r in server.requests} == {"m"}


def test_llm_compress_sends_nothing_when_the_chunks_fit(serve: Any) -> None:
    server = serve(_script)
    stage = LLMCompress(base_url=server.base_url, model="m", api_key_env="")
    result, _ = _run(stage, _chunks(), budget=10_000)
    assert result.chunks == tuple(_chunks())
    assert server.requests == []


def test_llm_compress_reads_the_key_from_the_named_env_var(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_TEST_LLM_KEY", "sk-from-env")
    server = serve(_script)
    stage = LLMCompress(
        base_url=server.base_url, model="m", api_key_env="CW_TEST_LLM_KEY", retries=0, whole_share=0.3
    )
    _run(stage, _chunks(), budget=200)
    assert {h["Authorization"] for h in server.headers} == {"Bearer sk-from-env"}
    assert "sk-from-env" not in json.dumps(stage_to_dict(stage))


def test_llm_compress_in_a_pipeline_stays_within_budget(serve: Any) -> None:
    server = serve(_script)
    pipe = Pipeline(
        (
            LLMCompress(base_url=server.base_url, model="m", api_key_env="", retries=0, whole_share=0.3),
            TokenBudget(),
        )
    )
    ctx = Assembler(pipe, budget=200).assemble("When was the Eiffel Tower completed?", _chunks())
    assert ctx.tokens <= 200
    assert "completed in 1889" in ctx.text
    ids = {i for c in ctx.chunks for i in c.member_ids} | {d.chunk_id for d in ctx.report.dropped}
    assert ids == {c.id for c in _chunks()}


def test_llm_compress_settings_round_trip_and_are_validated() -> None:
    stage = LLMCompress(base_url="http://127.0.0.1:1/v1", model="m", max_concurrency=3, timeout_s=5.0)
    assert stage_from_dict(stage_to_dict(stage)) == stage
    with pytest.raises(ConfigError, match="api_key_env must name an environment variable"):
        LLMCompress(base_url="http://x/v1", model="m", api_key_env="sk-123 secret")
    with pytest.raises(ConfigError, match="timeout_s must be a positive number"):
        LLMCompress(base_url="http://x/v1", model="m", timeout_s=0)


@pytest.mark.skipif(
    not os.environ.get("CONTEXTWRIGHT_LLM_BASE_URL"),
    reason="set CONTEXTWRIGHT_LLM_BASE_URL (and _MODEL, _API_KEY) to test a real endpoint",
)
def test_llm_compress_against_a_real_endpoint() -> None:
    stage = LLMCompress(
        base_url=os.environ["CONTEXTWRIGHT_LLM_BASE_URL"],
        model=os.environ.get("CONTEXTWRIGHT_LLM_MODEL", "gpt-4o-mini"),
        api_key_env="CONTEXTWRIGHT_LLM_API_KEY",
        timeout_s=60.0,
        whole_share=0.3,
    )
    chunks = _chunks()
    result, _ = _run(stage, chunks, budget=200)
    by_id = {c.id: c for c in chunks}
    for c in result.chunks:  # whatever the model did, the output is the chunk's own sentences
        for s, e in c.spans:
            assert by_id[c.id].text[s:e] in c.text
    eiffel = next((c for c in result.chunks if c.id == "eiffel"), None)
    assert eiffel is not None and "1889" in eiffel.text


def test_llm_compress_spans_point_into_the_input_text_after_an_earlier_cut(serve: Any) -> None:
    """A chunk already cut (here: its first sentence stripped) is compressed again: spans compose."""
    server = serve(_script)
    stage = LLMCompress(base_url=server.base_url, model="m", api_key_env="", retries=0, whole_share=0.3)
    chunks = _chunks()
    original = "Preamble that an earlier stage removed. " + chunks[1].text
    cut = len("Preamble that an earlier stage removed. ")
    pre = Chunk(original, id="eiffel", score=5.0)
    pre = pre.with_ops("overlap_stripped", text=original[cut:], spans=compose(pre, [(cut, len(original))]))
    result, _ = _run(stage, [chunks[0], pre, *chunks[2:]], budget=200)
    out = {c.id: c for c in result.chunks}
    assert out["eiffel"].ops == ("overlap_stripped", "compressed")
    ((s, e),) = out["eiffel"].spans
    assert original[s:e] == out["eiffel"].text == "It was completed in 1889 for the World’s Fair."


# -- a real model: SmolLM2-135M-Instruct on llama.cpp (the session fixture in conftest.py) ----------


class RecordingClient(ChatClient):
    """The real client; it also keeps each reply, so the test can check what the stage did with it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replies: list[str | LLMError] = []

    def complete_many(self, requests: Any, **options: Any) -> list[str | LLMError]:
        out = super().complete_many(requests, **options)
        self.replies.extend(out)
        return out


def test_llm_compress_with_a_real_model_keeps_only_verified_copies(llama_server: Any) -> None:
    filler = " ".join(f"Filler sentence number {i} says nothing at all." for i in range(12))
    chunks = [
        Chunk("TOP " + filler, id="top", score=10.0),
        Chunk(SOURCE + " " + filler, id="eiffel", score=5.0),
        Chunk("Paris is a city in France. " + filler, id="paris", score=4.0),
    ]
    stage = LLMCompress(
        base_url=llama_server.base_url, model=llama_server.model, api_key_env="", max_tokens=48
    )
    with RecordingClient(llama_server.base_url, model=llama_server.model, timeout_s=120) as client:
        result, _ = _run(stage, chunks, budget=200, llm=client)
    assert len(client.replies) == 2  # the top chunk is never sent
    by_id = {c.id: c for c in result.chunks}
    notes = " ".join(result.report.notes)
    rejected = 0
    for chunk, reply in zip(chunks[1:], client.replies, strict=True):
        assert isinstance(reply, str) and reply.strip(), f"no reply for {chunk.id}: {reply!r}"
        out = by_id.get(chunk.id)
        if reply.strip().strip(".").upper() == "IRRELEVANT":
            assert out is None
            continue
        assert out is not None
        if verify_extract(chunk.text, reply) is None:
            # the model wrote something that is not in the chunk: rejected, original kept
            rejected += 1
            assert out.text == chunk.text and out.ops == ()
            assert f"kept original {chunk.id}: rejected a reply that is not copied" in notes
        else:
            # whatever it copied, what we keep is the chunk's own sentences, located by spans
            assert out.spans and all(chunk.text[s:e] in out.text for s, e in out.spans)
            assert len(out.text) <= len(chunk.text)
    # SmolLM2-135M rewrites the Paris chunk into "The Eiffel Tower was completed on ..." at temperature 0
    assert rejected >= 1, f"the small model invented nothing this time: {client.replies!r}"


def test_chat_messages_are_accepted_by_a_real_chat_template(llama_server: Any) -> None:
    chunks = [
        {"id": "a", "text": "Paris is the capital of France.", "score": 0.9},
        {"id": "b", "text": "Lyon is known for its food.", "score": 0.5},
    ]
    ctx = Assembler(Pipeline(()), budget=300).assemble("What is the capital of France?", chunks)
    history = [
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": "Hello! Ask me about the documents."},
    ]
    with ChatClient(llama_server.base_url, model=llama_server.model, timeout_s=120) as client:
        for context_in in ("user", "system"):
            messages = ctx.messages(system="default", history=history, context_in=context_in)
            assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
            reply = client.chat(messages, max_tokens=16)
            assert reply.content.strip()
            # the template rendered every message: the server counted at least their tokens
            assert reply.prompt_tokens is not None
            assert reply.prompt_tokens >= sum(len(m["content"].split()) for m in messages)
